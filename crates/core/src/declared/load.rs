//! Reading an `AddressKinds` file: YAML → checked, compiled declarations, or errors naming the
//! file, the entry (index and kind) and the problem.

use std::fmt;

use serde::Deserialize;

use super::expr::{Addresses, CelObject, EvalError, Expr, LIMITS};
use crate::address::Entry;
use crate::kinds::Kind;

const API_VERSION: &str = "ipam-guard.io/v1alpha1";
const KIND: &str = "AddressKinds";

/// What a declared kind is to the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Hands addresses out: a pool, judged by the pool rules (P10 and the rest).
    Pool,
}

/// One declared kind, its expressions compiled.
#[derive(Debug)]
pub struct Declaration {
    pub group: String,
    pub kind: String,
    /// Served versions as written.
    pub versions: Vec<String>,
    pub plural: String,
    pub namespaced: bool,
    pub role: Role,
    pub addresses: Expr,
    pub excluded: Option<Expr>,
    /// Refuse the pool's delete while addresses reference it (P9).
    pub protect_delete: bool,
}

/// A declaration that cannot be used: which file, which entry, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclError {
    pub file: String,
    /// The entry's index in `kinds` and its `kind` when it names one; None for the file as a whole.
    pub entry: Option<(usize, Option<String>)>,
    pub problem: String,
}

impl fmt::Display for DeclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file)?;
        match &self.entry {
            Some((i, Some(kind))) => write!(f, "kinds[{i}] ({kind}): ")?,
            Some((i, None)) => write!(f, "kinds[{i}]: ")?,
            None => {}
        }
        f.write_str(&self.problem)
    }
}

impl std::error::Error for DeclError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileDoc {
    api_version: String,
    kind: String,
    #[serde(default)]
    kinds: Vec<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EntryDoc {
    group: String,
    kind: String,
    versions: Vec<String>,
    plural: Option<String>,
    namespaced: Option<bool>,
    role: String,
    addresses: Option<String>,
    excluded: Option<String>,
    protect_delete: Option<bool>,
}

/// Reads one `AddressKinds` file (`file` names it in errors). Every entry is checked; the errors
/// of all entries come back together, so one run shows everything to fix.
pub fn parse(file: &str, text: &str) -> Result<Vec<Declaration>, Vec<DeclError>> {
    let error = |entry: Option<(usize, Option<String>)>, problem: String| DeclError {
        file: file.to_owned(),
        entry,
        problem,
    };
    let doc: FileDoc =
        serde_yaml_ng::from_str(text).map_err(|e| vec![error(None, e.to_string())])?;
    if doc.api_version != API_VERSION || doc.kind != KIND {
        return Err(vec![error(
            None,
            format!(
                "expected apiVersion {API_VERSION} and kind {KIND}, found {} {}",
                doc.api_version, doc.kind
            ),
        )]);
    }
    let mut out: Vec<Declaration> = Vec::new();
    let mut errors = Vec::new();
    for (i, value) in doc.kinds.into_iter().enumerate() {
        let name = value
            .get("kind")
            .and_then(|k| k.as_str())
            .map(str::to_owned);
        match entry(value) {
            Ok(d) if out.iter().any(|o| o.group == d.group && o.kind == d.kind) => {
                errors.push(error(
                    Some((i, name)),
                    format!("{} of group {} is declared twice", d.kind, d.group),
                ));
            }
            Ok(d) => out.push(d),
            Err(problem) => errors.push(error(Some((i, name)), problem)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// One entry of `kinds`, checked and compiled; the error is the problem alone.
fn entry(value: serde_yaml_ng::Value) -> Result<Declaration, String> {
    let doc: EntryDoc = serde_yaml_ng::from_value(value).map_err(|e| e.to_string())?;
    if doc.group.is_empty() || doc.kind.is_empty() {
        return Err("group and kind must not be empty".to_owned());
    }
    if doc.versions.is_empty() || doc.versions.iter().any(String::is_empty) {
        return Err("versions must name at least one version".to_owned());
    }
    // A second reading of a kind ipam-guard was compiled with would judge its objects twice, the
    // two readings disagreeing.
    if let Some(k) = Kind::built_in(&doc.group, &doc.kind) {
        return Err(format!(
            "{} of group {} is a kind ipam-guard judges itself ({k}); it cannot be declared",
            doc.kind, doc.group
        ));
    }
    let role = match doc.role.as_str() {
        "pool" => Role::Pool,
        "holder" | "reserved" => {
            return Err(format!(
                "role {}: not supported yet (this release reads role pool only)",
                doc.role
            ))
        }
        other => return Err(format!("unknown role {other:?}, expected pool")),
    };
    let addresses = doc
        .addresses
        .ok_or_else(|| "missing addresses: a CEL expression over `object`".to_owned())?;
    let addresses = Expr::compile(&addresses).map_err(|e| format!("addresses: {e}"))?;
    let excluded = doc
        .excluded
        .map(|src| Expr::compile(&src).map_err(|e| format!("excluded: {e}")))
        .transpose()?;
    Ok(Declaration {
        plural: doc.plural.unwrap_or_else(|| default_plural(&doc.kind)),
        group: doc.group,
        kind: doc.kind,
        versions: doc.versions,
        namespaced: doc.namespaced.unwrap_or(true),
        role,
        addresses,
        excluded,
        protect_delete: doc.protect_delete.unwrap_or(false),
    })
}

/// The plural kubebuilder derives from a kind when a CRD does not say: lower case, `y` →
/// `ies` after a consonant, `s`, `x`, `ch`, `sh` → `+es`, else `+s`.
pub fn default_plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    if lower.ends_with(['s', 'x']) || lower.ends_with("ch") || lower.ends_with("sh") {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

impl Declaration {
    /// What a pool of this kind hands out: `addresses` − `excluded`, evaluated over `object`.
    #[cfg(test)]
    pub(crate) fn pool_addresses(
        &self,
        object: &serde_json::Value,
    ) -> Result<Addresses, EvalError> {
        let (entries, excluded) = self.pool_entries(object)?;
        Ok(Addresses::of(&entries).difference(&excluded))
    }

    /// The entries `addresses` returns over `object`, each with its text, and the addresses
    /// `excluded` takes out of them (empty without `excluded`).
    pub(crate) fn pool_entries(
        &self,
        object: &serde_json::Value,
    ) -> Result<(Vec<(String, Entry)>, Addresses), EvalError> {
        let cel = CelObject::new(object, &LIMITS).map_err(|problem| EvalError {
            field: "addresses",
            expression: self.addresses.source().to_owned(),
            problem,
        })?;
        let entries = self.addresses.eval_entries("addresses", &cel, &LIMITS)?;
        let excluded = match &self.excluded {
            Some(excluded) => excluded.eval("excluded", &cel, &LIMITS)?,
            None => Addresses::empty(),
        };
        Ok((entries, excluded))
    }
}
