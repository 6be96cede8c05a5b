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

/// A client certificate the API server presents to every webhook that asks for one, as an
/// install with `--client-ca-file` configures it: an AdmissionConfiguration whose webhook
/// kubeconfig has one `*` user (the default match, whatever the webhook's host:port, so it can be
/// written before the webhooks' ports are known).
pub struct ApiserverIdentity {
    /// The CA the certificate chains to: the webhook's `--client-ca-file`.
    pub ca_file: std::path::PathBuf,
    /// The kube-apiserver flag that loads it (`ControlPlane::start_with`).
    pub flag: String,
}

impl ApiserverIdentity {
    /// Writes `pki`'s CA, its leaf (which must allow client auth) and the configuration into
    /// `dir`, which must outlive the API server.
    pub fn write(pki: &Pki, dir: &std::path::Path) -> ApiserverIdentity {
        std::fs::create_dir_all(dir).unwrap();
        let ca_file = dir.join("client-ca.crt");
        let cert = dir.join("apiserver-client.crt");
        let key = dir.join("apiserver-client.key");
        std::fs::write(&ca_file, &pki.ca_pem).unwrap();
        std::fs::write(&cert, &pki.leaf_pem).unwrap();
        std::fs::write(&key, &pki.key_pem).unwrap();
        let kubeconfig = dir.join("webhook-kubeconfig.yaml");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nusers:\n- name: \"*\"\n  user:\n    client-certificate: {}\n    client-key: {}\n",
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
        let plugin = |name: &str| {
            format!(
                "- name: {name}\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: {}\n",
                kubeconfig.display()
            )
        };
        let config = dir.join("admission.yaml");
        std::fs::write(
            &config,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n{}{}",
                plugin("ValidatingAdmissionWebhook"),
                plugin("MutatingAdmissionWebhook")
            ),
        )
        .unwrap();
        ApiserverIdentity {
            ca_file,
            flag: format!("--admission-control-config-file={}", config.display()),
        }
    }
}
