//! Client certificate authentication on the webhook listener (`--client-ca-file`, `--client-cn`,
//! `--client-san`): only a caller holding a certificate from the configured CA, and named in the
//! allow-lists when they are given, completes the TLS handshake. Nothing else reaches a route, so
//! nothing else reaches the rules or makes a pending entry (X2).
//!
//! The CA file is polled like the serving pair: a rotated CA Secret takes effect without a restart,
//! and a CA file that stops parsing keeps the previous CA.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::UnixTime;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use tokio::sync::watch;

use super::metrics::Metrics;
use super::tls::{provider, CertError, Refusals};

/// Who may call the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    /// PEM bundle of the CA(s) a client certificate must chain to.
    pub ca_file: PathBuf,
    /// Subject common names accepted (`--client-cn`). With both lists empty, any certificate from
    /// the CA is accepted.
    pub allowed_cns: Vec<String>,
    /// Subject alternative names accepted (`--client-san`): DNS names, IP addresses, URIs, emails.
    pub allowed_sans: Vec<String>,
}

impl ClientAuth {
    /// Any certificate from the CA in `ca_file`.
    pub fn new(ca_file: impl Into<PathBuf>) -> ClientAuth {
        ClientAuth {
            ca_file: ca_file.into(),
            allowed_cns: Vec::new(),
            allowed_sans: Vec::new(),
        }
    }
}

/// Builds the chain verifier for one CA bundle.
fn parse_ca(pem: &[u8], path: &Path) -> Result<Arc<dyn ClientCertVerifier>, CertError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Pem {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(CertError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| CertError::Certificate {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| CertError::Certificate {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
}

pub(crate) fn read_ca(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })
}

// === impl ClientVerifier ===

/// The CA verifier in force (swapped by the poller); `ArcSwap` needs a sized value.
struct Current(Arc<dyn ClientCertVerifier>);

/// Requires a client certificate chaining to the current CA, then checks the allow-lists.
pub(crate) struct ClientVerifier {
    current: ArcSwap<Current>,
    allowed_cns: Vec<String>,
    allowed_sans: Vec<String>,
}

impl std::fmt::Debug for ClientVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientVerifier")
            .field("allowed_cns", &self.allowed_cns)
            .field("allowed_sans", &self.allowed_sans)
            .finish_non_exhaustive()
    }
}

impl ClientVerifier {
    /// Reads and parses the CA file; the bytes are returned for the poller to compare against.
    pub(crate) fn load(auth: &ClientAuth) -> Result<(ClientVerifier, Vec<u8>), CertError> {
        let pem = read_ca(&auth.ca_file)?;
        let verifier = parse_ca(&pem, &auth.ca_file)?;
        Ok((
            ClientVerifier {
                current: ArcSwap::from_pointee(Current(verifier)),
                allowed_cns: auth.allowed_cns.clone(),
                allowed_sans: auth.allowed_sans.clone(),
            },
            pem,
        ))
    }

    fn inner(&self) -> Arc<dyn ClientCertVerifier> {
        self.current.load().0.clone()
    }

    /// Whether the leaf is named in the allow-lists (always, when both are empty).
    fn allowed(&self, leaf: &CertificateDer<'_>) -> Result<(), String> {
        if self.allowed_cns.is_empty() && self.allowed_sans.is_empty() {
            return Ok(());
        }
        let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| format!("cannot read the client certificate: {e}"))?;
        let cns: Vec<String> = cert
            .subject()
            .iter_common_name()
            .filter_map(|cn| cn.as_str().ok().map(str::to_string))
            .collect();
        if cns.iter().any(|cn| self.allowed_cns.contains(cn)) {
            return Ok(());
        }
        let sans = subject_alt_names(&cert);
        let named = |want: &String| {
            sans.iter()
                .any(|san| san == want || san.eq_ignore_ascii_case(want))
        };
        if self.allowed_sans.iter().any(named) {
            return Ok(());
        }
        Err(format!(
            "client certificate CN {cns:?} SAN {sans:?} is not in --client-cn {:?} / --client-san {:?}",
            self.allowed_cns, self.allowed_sans
        ))
    }
}

/// DNS names, IP addresses, URIs and emails of a certificate, as text.
fn subject_alt_names(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    ext.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(s) | GeneralName::URI(s) | GeneralName::RFC822Name(s) => {
                Some(s.to_string())
            }
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|b| std::net::IpAddr::from(b).to_string()),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|b| std::net::IpAddr::from(b).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

impl ClientCertVerifier for ClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No hints: the CA can change under us and hints are borrowed from `self`. An empty list
    /// tells clients to send whatever certificate they hold (RFC 8446 §4.2.4); the API server
    /// holds exactly one per webhook.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner()
            .verify_client_cert(end_entity, intermediates, now)?;
        match self.allowed(end_entity) {
            Ok(()) => Ok(verified),
            Err(why) => {
                tracing::info!(reason = %why, "client certificate refused");
                Err(rustls::Error::InvalidCertificate(
                    CertificateError::ApplicationVerificationFailure,
                ))
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner().supported_verify_schemes()
    }
}

// === impl CaReloader ===

/// Polls the CA file and swaps in a new CA when its bytes change and parse.
pub(crate) struct CaReloader {
    pub(crate) path: PathBuf,
    pub(crate) verifier: Arc<ClientVerifier>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) interval: Duration,
}

impl CaReloader {
    /// Runs until `stop` turns true; `loaded` is the bytes of the CA in force.
    pub(crate) async fn run(self, loaded: Vec<u8>, mut stop: watch::Receiver<bool>) {
        let mut serving = loaded;
        let mut refusals = Refusals::new();
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = super::conn::stopped(&mut stop) => return,
            }
            let path = self.path.clone();
            let seen = match tokio::task::spawn_blocking(move || read_ca(&path)).await {
                Ok(Ok(bytes)) => Ok(bytes),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            let problem = match &seen {
                Ok(bytes) if *bytes == serving => None,
                Ok(bytes) => match parse_ca(bytes, &self.path) {
                    Ok(verifier) => {
                        self.verifier.current.store(Arc::new(Current(verifier)));
                        tracing::info!(ca = %self.path.display(), "client CA reloaded");
                        serving = bytes.clone();
                        None
                    }
                    Err(e) => Some(e.to_string()),
                },
                Err(e) => Some(e.clone()),
            };
            if refusals.observe(seen, problem.as_deref()) {
                tracing::warn!(error = %problem.unwrap_or_default(), "new client CA refused; still using the previous one");
                self.metrics.tls_reload_errors.inc();
            }
        }
    }
}
