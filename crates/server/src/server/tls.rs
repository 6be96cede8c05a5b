//! Serving certificates: PEM files → `CertifiedKey`, a resolver the handshake reads through an
//! `ArcSwap`, and a poller that swaps in a rotated pair without a restart.
//!
//! Files are polled rather than watched: a Secret volume updates by swapping the `..data`
//! symlink, which a watch on `tls.crt` sees as one delete and then nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;

use super::metrics::Metrics;

/// Where the serving certificate chain and its key live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CertFiles {
    /// `tls.crt` and `tls.key` in `dir`, the layout of a `kubernetes.io/tls` Secret volume.
    pub fn in_dir(dir: &Path) -> CertFiles {
        CertFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }
    }
}

/// Why a certificate/key pair was refused.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate found", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: bad PEM: {detail}", path.display())]
    Pem { path: PathBuf, detail: String },
    #[error("{}: no PEM private key found (PKCS#1, PKCS#8 or SEC1)", path.display())]
    NoKey { path: PathBuf },
    #[error("{}: cannot read the certificate: {detail}", path.display())]
    Certificate { path: PathBuf, detail: String },
    #[error("{} and {} do not form a usable pair: {source}", cert.display(), key.display())]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
}

/// A pair that parsed and matched.
#[derive(Debug, Clone)]
pub(crate) struct LoadedPair {
    pub key: Arc<CertifiedKey>,
    /// notAfter of the leaf certificate, seconds since the Unix epoch.
    pub not_after: i64,
}

/// The provider every TLS object of the server is built from, independent of the process default.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses a PEM chain (leaf first) and a PEM key, and checks that the key belongs to the leaf.
pub(crate) fn parse_pair(
    cert_pem: &[u8],
    key_pem: &[u8],
    files: &CertFiles,
) -> Result<LoadedPair, CertError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Pem {
            path: files.cert.clone(),
            detail: e.to_string(),
        })?;
    let Some(leaf) = chain.first() else {
        return Err(CertError::NoCertificate {
            path: files.cert.clone(),
        });
    };
    let not_after = not_after(leaf).map_err(|detail| CertError::Certificate {
        path: files.cert.clone(),
        detail,
    })?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => CertError::NoKey {
            path: files.key.clone(),
        },
        e => CertError::Pem {
            path: files.key.clone(),
            detail: e.to_string(),
        },
    })?;
    let certified =
        CertifiedKey::from_der(chain, key, &provider()).map_err(|source| CertError::Pair {
            cert: files.cert.clone(),
            key: files.key.clone(),
            source,
        })?;
    Ok(LoadedPair {
        key: Arc::new(certified),
        not_after,
    })
}

/// notAfter of a DER certificate, in seconds since the Unix epoch.
pub fn not_after(cert: &CertificateDer<'_>) -> Result<i64, String> {
    let (_, parsed) =
        x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|e| e.to_string())?;
    Ok(parsed.validity().not_after.timestamp())
}

/// Reads both files and parses them.
pub(crate) fn load_pair(files: &CertFiles) -> Result<LoadedPair, CertError> {
    let (cert, key) = read_pair(files)?;
    parse_pair(&cert, &key, files)
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads cert, key, then the cert again: a `..data` swap between the two reads would pair an
/// old cert with a new key, so retry while the cert moved under us.
pub(crate) fn read_pair(files: &CertFiles) -> Result<(Vec<u8>, Vec<u8>), CertError> {
    let mut cert = read(&files.cert)?;
    for _ in 0..3 {
        let key = read(&files.key)?;
        let again = read(&files.cert)?;
        if again == cert {
            return Ok((cert, key));
        }
        cert = again;
    }
    let key = read(&files.key)?;
    Ok((cert, key))
}

// === impl Resolver ===

/// Hands every handshake the current pair; the poller swaps it.
#[derive(Debug)]
pub(crate) struct Resolver {
    current: ArcSwap<CertifiedKey>,
}

impl Resolver {
    pub(crate) fn new(key: Arc<CertifiedKey>) -> Self {
        Resolver {
            current: ArcSwap::new(key),
        }
    }

    fn store(&self, key: Arc<CertifiedKey>) {
        self.current.store(key);
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// TLS 1.2 and 1.3, ALPN h2 then http/1.1 (older API servers speak h2, recent ones HTTP/1.1).
/// With a client verifier, a handshake without an acceptable client certificate fails. The
/// verifier is any rustls one, so this file need not know `client_auth`, which builds on it.
pub(crate) fn server_config(
    resolver: Arc<Resolver>,
    clients: Option<Arc<dyn ClientCertVerifier>>,
) -> Arc<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .expect("ring supports TLS 1.2 and 1.3");
    let builder = match clients {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

// === impl Reloader ===

/// What one poll saw: the bytes of both files, or why they could not be read.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Bytes(Vec<u8>, Vec<u8>),
    Unreadable(String),
}

/// When a reload problem is worth a warning (and a count in `ipam_guard_tls_reload_errors_total`):
/// once the same bad state is seen twice in a row. Between the writes of a rotation a half-written
/// file or a cert without its key is normal and heals by itself. Shared by the serving pair and the
/// client CA.
#[derive(Debug)]
pub(crate) struct Refusals<S> {
    previous: Option<S>,
    reported: bool,
}

impl<S: PartialEq> Refusals<S> {
    pub(crate) fn new() -> Self {
        Refusals {
            previous: None,
            reported: false,
        }
    }

    /// Records what one poll `seen` and its `problem` (None: in force or installed). True when
    /// the problem is to be reported now: stable, and not reported yet.
    pub(crate) fn observe(&mut self, seen: S, problem: Option<&str>) -> bool {
        if problem.is_none() {
            self.previous = None;
            self.reported = false;
            return false;
        }
        let stable = self.previous.as_ref() == Some(&seen);
        let report = stable && !self.reported;
        if report {
            self.reported = true;
        } else if !stable {
            self.reported = false;
        }
        self.previous = Some(seen);
        report
    }
}

/// Polls the files and swaps in a new pair when their bytes change and the new pair is usable.
pub(crate) struct Reloader {
    pub(crate) files: CertFiles,
    pub(crate) resolver: Arc<Resolver>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) interval: Duration,
}

impl Reloader {
    /// Runs until `stop` turns true. `loaded` is the (cert, key) bytes the resolver serves now.
    pub(crate) async fn run(self, loaded: (Vec<u8>, Vec<u8>), mut stop: watch::Receiver<bool>) {
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
            let files = self.files.clone();
            let seen = match tokio::task::spawn_blocking(move || read_pair(&files)).await {
                Ok(Ok((cert, key))) => Seen::Bytes(cert, key),
                Ok(Err(e)) => Seen::Unreadable(e.to_string()),
                Err(e) => Seen::Unreadable(e.to_string()),
            };
            let problem = match &seen {
                Seen::Bytes(cert, key) if (cert, key) == (&serving.0, &serving.1) => None,
                Seen::Bytes(cert, key) => match parse_pair(cert, key, &self.files) {
                    Ok(pair) => {
                        self.resolver.store(pair.key);
                        self.metrics.tls_not_after.set(pair.not_after);
                        tracing::info!(
                            cert = %self.files.cert.display(),
                            not_after = pair.not_after,
                            "serving certificate reloaded"
                        );
                        serving = (cert.clone(), key.clone());
                        None
                    }
                    Err(e) => Some(e.to_string()),
                },
                Seen::Unreadable(e) => Some(e.clone()),
            };
            if let Some(problem) = &problem {
                tracing::debug!(error = %problem, "serving certificate files not usable");
            }
            if refusals.observe(seen, problem.as_deref()) {
                tracing::warn!(error = %problem.unwrap_or_default(), "new serving certificate refused; still serving the previous one");
                self.metrics.tls_reload_errors.inc();
            }
        }
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::Refusals;

    #[test]
    fn a_refusal_is_reported_once_when_the_same_bad_state_is_seen_twice() {
        let mut r = Refusals::new();
        assert!(
            !r.observe("half-written", Some("bad")),
            "first sight: may heal"
        );
        assert!(!r.observe("other", Some("bad")), "changed: still settling");
        assert!(r.observe("other", Some("bad")), "seen twice: report");
        assert!(!r.observe("other", Some("bad")), "reported once");
        assert!(!r.observe("good", None));
        assert!(!r.observe("other", Some("bad")));
        assert!(
            r.observe("other", Some("bad")),
            "a new episode is reported again"
        );
    }
}
