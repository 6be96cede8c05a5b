//! The Kubernetes release whose API server `check` speaks for. API servers differ in what they
//! refuse before any webhook runs and in how they word it; `check` follows the target: the
//! cluster's own version with `--kubeconfig`, else `--kube-version`, else the newest release the
//! e2e suites test against.
//!
//! What differs, and where each boundary comes from:
//! - unknown fields under strict field validation (what kubectl asks for by default): refused
//!   from v1.25, where server-side field validation went beta and on by default (KEP-2885) and
//!   covers `metadata` of custom resources too; before, the API server prunes them and says
//!   nothing. Tested: refused on v1.36.2, pruned on v1.20.2.
//! - label messages: a key with more than one `/` is "a valid label key …" and a key's name part
//!   or a value over 63 long "must be no more than 63 bytes" on v1.36.2; "a qualified name …" and
//!   "… 63 characters" on v1.20.2 and v1.24 (the project's earlier server). The release that
//!   changed them lies between v1.25 and v1.36 and is not pinned by a test: releases before v1.36
//!   are given the older words.

use std::fmt;

/// A Kubernetes minor release (`1.20`); patch releases do not change what `check` models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    pub major: u32,
    pub minor: u32,
}

const fn v(major: u32, minor: u32) -> KubeVersion {
    KubeVersion { major, minor }
}

impl KubeVersion {
    /// The releases the e2e suites run against a real API server (README, "Kubernetes versions").
    pub(crate) const TESTED: [KubeVersion; 2] = [v(1, 20), v(1, 36)];
    /// What `check` follows without `--kubeconfig` or `--kube-version`.
    pub(crate) const NEWEST_TESTED: KubeVersion = v(1, 36);

    /// `1.28`, `v1.28`, `v1.28.3`, `v1.28.3-eks-1234`.
    pub fn parse(text: &str) -> Result<KubeVersion, String> {
        let bad = || format!("{text:?} is not a Kubernetes version (e.g. 1.30 or v1.30.2)");
        let core = text.trim().trim_start_matches('v');
        let core = core.split(['-', '+']).next().unwrap_or_default();
        let mut parts = core.split('.');
        let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        if let Some(patch) = parts.next() {
            patch.parse::<u32>().map_err(|_| bad())?;
        }
        if parts.next().is_some() || major != 1 {
            return Err(bad());
        }
        Ok(v(major, minor))
    }

    /// From the `major` and `minor` of the API server's `/version` (`"1"`, `"28+"` on some
    /// managed clusters).
    pub fn from_version_info(major: &str, minor: &str) -> Result<KubeVersion, String> {
        let digits = |s: &str| -> Option<u32> {
            s.trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok()
        };
        match (digits(major), digits(minor)) {
            (Some(major), Some(minor)) => Ok(v(major, minor)),
            _ => Err(format!(
                "the API server's /version says major {major:?}, minor {minor:?}: not a version"
            )),
        }
    }

    /// Whether strict field validation refuses unknown fields (else the server prunes them).
    pub(crate) fn refuses_unknown_fields(self) -> bool {
        self >= v(1, 25)
    }

    /// Whether label messages read "a valid label key" and "… bytes" (else "a qualified name" and
    /// "… characters").
    pub(crate) fn newer_label_words(self) -> bool {
        self >= v(1, 36)
    }

    /// Whether the e2e suites run against this release.
    pub fn tested(self) -> bool {
        Self::TESTED.contains(&self)
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        Self::NEWEST_TESTED
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_people_and_servers_write_them() {
        for text in [
            "1.20",
            "v1.20",
            "v1.20.2",
            "1.20.2-eks-1234",
            "v1.20.2+k3s1",
        ] {
            assert_eq!(KubeVersion::parse(text), Ok(v(1, 20)), "{text}");
        }
        for text in ["", "1", "v2.0", "1.x", "1.20.x", "1.2.3.4", "latest"] {
            assert!(KubeVersion::parse(text).is_err(), "{text}");
        }
        assert_eq!(KubeVersion::from_version_info("1", "28+"), Ok(v(1, 28)));
        assert!(KubeVersion::from_version_info("", "").is_err());
    }

    #[test]
    fn behaviour_follows_the_boundaries() {
        assert!(!v(1, 20).refuses_unknown_fields());
        assert!(!v(1, 24).refuses_unknown_fields());
        assert!(v(1, 25).refuses_unknown_fields());
        assert!(v(1, 36).refuses_unknown_fields());
        assert!(!v(1, 35).newer_label_words());
        assert!(v(1, 36).newer_label_words());
        assert_eq!(KubeVersion::default(), KubeVersion::NEWEST_TESTED);
        assert_eq!(v(1, 36).to_string(), "v1.36");
    }
}
