//! `serve --dev`: a local CA and a serving certificate for `localhost`, `127.0.0.1` and `::1`,
//! made once and reused, so the CA a developer trusted keeps working across runs.

use std::io::Write;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use super::tls::{self, CertFiles};

/// Names the serving certificate is valid for.
pub(crate) const DEV_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const CA_COMMON_NAME: &str = "ipam-guard dev CA";
/// A certificate that expires within this many seconds is made anew.
const MIN_LIFETIME_LEFT: i64 = 24 * 3600;

/// The files of a development certificate directory.
#[derive(Debug, Clone)]
pub struct DevCerts {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub files: CertFiles,
    /// What this call wrote: nothing when everything was reused.
    pub made: Made,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    Nothing,
    ServingCert,
    CaAndServingCert,
}

#[derive(Debug, thiserror::Error)]
pub enum DevCertError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot generate a development certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// Reuses `ca.crt`/`ca.key` and `tls.crt`/`tls.key` in `dir` when they are readable, match and
/// are valid for at least another day; otherwise makes what is missing (a new CA means a new
/// serving certificate too).
pub fn ensure(dir: &Path) -> Result<DevCerts, DevCertError> {
    let certs = DevCerts {
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        files: CertFiles::in_dir(dir),
        made: Made::Nothing,
    };
    std::fs::create_dir_all(dir).map_err(|source| DevCertError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let deadline = unix_now() + MIN_LIFETIME_LEFT;
    let (ca_key, ca_der, made) = match usable_ca(&certs, deadline) {
        Some((key, der)) => (key, der, Made::ServingCert),
        None => {
            let key = KeyPair::generate()?;
            let cert = ca_params(365 * 10).self_signed(&key)?;
            write_private(&certs.ca_key, key.serialize_pem().as_bytes())?;
            write_public(&certs.ca_cert, cert.pem().as_bytes())?;
            (key, cert.der().clone(), Made::CaAndServingCert)
        }
    };
    if made == Made::ServingCert && serving_usable(&certs.files, &ca_der, deadline) {
        return Ok(DevCerts {
            made: Made::Nothing,
            ..certs
        });
    }
    let issuer = Issuer::new(ca_params(0), ca_key);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(DEV_NAMES.map(String::from).to_vec())?;
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, 365);
    let cert = params.signed_by(&key, &issuer)?;
    write_private(&certs.files.key, key.serialize_pem().as_bytes())?;
    write_public(&certs.files.cert, cert.pem().as_bytes())?;
    Ok(DevCerts { made, ..certs })
}

/// The CA's parameters. Re-signing with a reloaded CA key relies on the subject being rebuilt
/// identically here.
fn ca_params(days: i64) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name
        .push(DnType::CommonName, CA_COMMON_NAME);
    p.distinguished_name
        .push(DnType::OrganizationName, "ipam-guard development only");
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    if days > 0 {
        set_validity(&mut p, days);
    }
    p
}

fn set_validity(p: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // An hour of slack for clocks that disagree a little (a VM, a container).
    p.not_before = now - time::Duration::hours(1);
    p.not_after = now + time::Duration::days(days);
}

fn usable_ca(certs: &DevCerts, deadline: i64) -> Option<(KeyPair, CertificateDer<'static>)> {
    let der = CertificateDer::from_pem_file(&certs.ca_cert).ok()?;
    let key = KeyPair::from_pem(&std::fs::read_to_string(&certs.ca_key).ok()?).ok()?;
    let (_, parsed) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let fits = parsed.public_key().raw == key.subject_public_key_info().as_slice()
        && parsed.validity().not_after.timestamp() > deadline
        && parsed
            .subject()
            .iter_common_name()
            .any(|cn| cn.as_str() == Ok(CA_COMMON_NAME));
    fits.then_some((key, der))
}

fn serving_usable(files: &CertFiles, ca: &CertificateDer<'_>, deadline: i64) -> bool {
    let Ok(pair) = tls::load_pair(files) else {
        return false;
    };
    let Ok(leaf) = pair.key.end_entity_cert() else {
        return false;
    };
    let (Ok((_, leaf)), Ok((_, ca))) = (
        x509_parser::parse_x509_certificate(leaf.as_ref()),
        x509_parser::parse_x509_certificate(ca.as_ref()),
    ) else {
        return false;
    };
    pair.not_after > deadline && leaf.issuer().as_raw() == ca.subject().as_raw()
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn write_public(path: &Path, bytes: &[u8]) -> Result<(), DevCertError> {
    write_atomic(path, bytes, 0o644)
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), DevCertError> {
    write_atomic(path, bytes, 0o600)
}

/// Write then rename, so a server polling the directory never reads half a file.
fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), DevCertError> {
    use std::os::unix::fs::OpenOptionsExt;
    let err = |source| DevCertError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path()).unwrap();
        assert_eq!(first.made, Made::CaAndServingCert);
        let pair = tls::load_pair(&first.files).unwrap();
        assert!(pair.not_after > unix_now() + 300 * 24 * 3600);
        let crt = std::fs::read(&first.files.cert).unwrap();
        assert_eq!(ensure(dir.path()).unwrap().made, Made::Nothing);
        assert_eq!(std::fs::read(&first.files.cert).unwrap(), crt);

        // A lost serving key is made again under the same CA.
        let ca = std::fs::read(&first.ca_cert).unwrap();
        std::fs::remove_file(&first.files.key).unwrap();
        assert_eq!(ensure(dir.path()).unwrap().made, Made::ServingCert);
        assert_eq!(std::fs::read(&first.ca_cert).unwrap(), ca);

        // An unreadable CA means a new CA and a new serving certificate.
        std::fs::write(&first.ca_key, b"garbage").unwrap();
        assert_eq!(ensure(dir.path()).unwrap().made, Made::CaAndServingCert);
        assert_ne!(std::fs::read(&first.ca_cert).unwrap(), ca);
    }

    #[test]
    fn keys_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let certs = ensure(dir.path()).unwrap();
        for key in [&certs.ca_key, &certs.files.key] {
            let mode = std::fs::metadata(key).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{} is readable by others", key.display());
        }
    }
}
