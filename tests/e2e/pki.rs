//! Certificates for the e2e suites: a CA and one leaf it signed, as cert-manager issues them for
//! the install in manifests/ (the serving certificate) or as an API server presents its client
//! certificate. One issuer for every suite, so they all test against certificates of one shape.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::CertificateDer;

/// What a leaf is for.
#[derive(Clone, Copy)]
pub enum Usage {
    /// Server and client auth: the webhook's serving certificate, which the decider's peer channel
    /// uses both ways.
    Serving,
    /// Client auth only: the API server calling the webhook.
    Client,
}

/// A CA and one leaf signed by it, as PEM (and the CA as DER, for a client's roots).
pub struct Pki {
    pub ca_pem: String,
    pub ca_der: CertificateDer<'static>,
    pub leaf_pem: String,
    pub key_pem: String,
}

impl Pki {
    /// A CA named `ca_name` and a leaf for `names` (DNS names and IP addresses), with common name
    /// `leaf_name` when given.
    pub fn issue(ca_name: &str, leaf_name: Option<&str>, names: &[&str], usage: Usage) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(ToString::to_string).collect();
        let mut leaf = CertificateParams::new(names).unwrap();
        if let Some(cn) = leaf_name {
            leaf.distinguished_name.push(DnType::CommonName, cn);
        }
        leaf.extended_key_usages = match usage {
            Usage::Serving => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        leaf.use_authority_key_identifier_extension = true;
        let leaf = leaf.signed_by(&key, &issuer).unwrap();
        Pki {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            leaf_pem: leaf.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// The files of a cert-manager Secret: tls.crt, tls.key, ca.crt.
    pub fn secret_files(&self) -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("tls.crt", self.leaf_pem.clone().into_bytes()),
            ("tls.key", self.key_pem.clone().into_bytes()),
            ("ca.crt", self.ca_pem.clone().into_bytes()),
        ]
    }

    /// Writes [`Pki::secret_files`] into `dir`, as the Secret's volume holds them.
    pub fn write_secret(&self, dir: &std::path::Path) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, bytes) in self.secret_files() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}
