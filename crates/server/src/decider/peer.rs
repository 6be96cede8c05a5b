//! Follower → decider traffic: HTTP/2 over mutual TLS on a listener of its own (`--peer-listen`).
//!
//! Both sides use the serving certificate and key (cert-manager gives it `client auth` usage too)
//! and check the other against one CA (`--peer-ca-file`). The decider requires a client
//! certificate chaining to that CA before it reads a byte of a request, so nothing else can make
//! it record a pending entry. The follower checks the decider's certificate against the first
//! name of its own certificate: every replica holds the same one, and the decider is reached by
//! pod IP, which the Service's certificate does not name.
//!
//! Kept apart from the webhook listener: that one answers the API server (and its client-cert
//! policy is its own); this one answers only replicas, with one route.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::SingleCertAndKey;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::handover::{Handover, Log, PENDING_PATH};
use crate::admission::{forwarded, Admission, DecisionAnswer, DecisionRequest, Forwarded};
use crate::server::tls::{self, CertFiles};

/// The one route of the peer listener.
pub const DECIDE_PATH: &str = "/decide";
/// A decision request carries one object (and its old version): the webhook's own limit.
const BODY_LIMIT: usize = 8 * 1024 * 1024;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the certificate, key and CA files are compared with what is loaded.
const RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// The files both sides of the peer connection use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerFiles {
    pub pair: CertFiles,
    pub ca: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PeerTlsError {
    #[error(transparent)]
    Cert(#[from] tls::CertError),
    #[error("cannot read the peer CA {}: {source}", path.display())]
    CaRead {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the peer CA {} holds no usable certificate: {detail}", path.display())]
    Ca { path: PathBuf, detail: String },
    #[error("{}: the serving certificate names no DNS name or IP address, which the peer check needs", path.display())]
    NoName { path: PathBuf },
    #[error("peer TLS: {0}")]
    Tls(String),
}

/// Server and client TLS settings, rebuilt when the files change.
pub(crate) struct PeerTls {
    files: PeerFiles,
    server: ArcSwap<ServerConfig>,
    client: ArcSwap<(ClientConfig, ServerName<'static>)>,
    loaded: Mutex<Vec<u8>>,
}

impl PeerTls {
    pub(crate) fn load(files: PeerFiles) -> Result<PeerTls, PeerTlsError> {
        let (bytes, server, client) = build(&files)?;
        Ok(PeerTls {
            files,
            server: ArcSwap::from_pointee(server),
            client: ArcSwap::from_pointee(client),
            loaded: Mutex::new(bytes),
        })
    }

    /// Polls the files (a Secret volume swaps them atomically; see server::tls) and keeps the old
    /// settings when the new files do not form a usable set yet.
    pub(crate) async fn reload_forever(self: Arc<Self>) {
        let mut ticker = tokio::time::interval(RELOAD_INTERVAL);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            let me = self.clone();
            let _ = tokio::task::spawn_blocking(move || me.reload()).await;
        }
    }

    fn reload(&self) {
        let files = &self.files;
        let Ok(now) = read_all(files) else { return };
        if *self.loaded.lock().unwrap_or_else(|p| p.into_inner()) == now {
            return;
        }
        match build(files) {
            Ok((bytes, server, client)) => {
                self.server.store(Arc::new(server));
                self.client.store(Arc::new(client));
                *self.loaded.lock().unwrap_or_else(|p| p.into_inner()) = bytes;
                tracing::info!(ca = %files.ca.display(), "peer certificates reloaded");
            }
            Err(e) => {
                tracing::warn!(error = %e, "peer certificates not reloaded; keeping the old ones")
            }
        }
    }
}

fn read_all(files: &PeerFiles) -> Result<Vec<u8>, PeerTlsError> {
    let (mut cert, key) = tls::read_pair(&files.pair)?;
    let ca = std::fs::read(&files.ca).map_err(|source| PeerTlsError::CaRead {
        path: files.ca.clone(),
        source,
    })?;
    cert.extend_from_slice(&key);
    cert.extend_from_slice(&ca);
    Ok(cert)
}

type Built = (Vec<u8>, ServerConfig, (ClientConfig, ServerName<'static>));

fn build(files: &PeerFiles) -> Result<Built, PeerTlsError> {
    let bytes = read_all(files)?;
    let (cert, key) = tls::read_pair(&files.pair)?;
    let pair = tls::parse_pair(&cert, &key, &files.pair)?;
    let ca_pem = std::fs::read(&files.ca).map_err(|source| PeerTlsError::CaRead {
        path: files.ca.clone(),
        source,
    })?;
    let ca_err = |detail: String| PeerTlsError::Ca {
        path: files.ca.clone(),
        detail,
    };
    let mut roots = RootCertStore::empty();
    let cas = CertificateDer::pem_slice_iter(&ca_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ca_err(e.to_string()))?;
    if cas.is_empty() {
        return Err(ca_err("no PEM certificate found".into()));
    }
    for ca in cas {
        roots.add(ca).map_err(|e| ca_err(e.to_string()))?;
    }
    let roots = Arc::new(roots);
    let provider = tls::provider();
    let tls_err = |e: &dyn std::fmt::Display| PeerTlsError::Tls(e.to_string());

    let client_verifier =
        WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| tls_err(&e))?;
    let mut server = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_err(&e))?
        .with_client_cert_verifier(client_verifier)
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(pair.key.clone())));
    server.alpn_protocols = vec![b"h2".to_vec()];

    let server_verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| tls_err(&e))?;
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_err(&e))?
        .with_webpki_verifier(server_verifier)
        .with_client_cert_resolver(Arc::new(SingleCertAndKey::from(pair.key.clone())));
    client.alpn_protocols = vec![b"h2".to_vec()];
    let leaf = pair.key.cert.first().ok_or_else(|| PeerTlsError::NoName {
        path: files.pair.cert.clone(),
    })?;
    let name = first_name(leaf).ok_or_else(|| PeerTlsError::NoName {
        path: files.pair.cert.clone(),
    })?;
    Ok((bytes, server, (client, name)))
}

/// The first DNS name (else IP address) the certificate is issued for.
fn first_name(cert: &CertificateDer<'_>) -> Option<ServerName<'static>> {
    use x509_parser::extensions::GeneralName;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let san = parsed.subject_alternative_name().ok()??;
    let names = &san.value.general_names;
    let dns = names.iter().find_map(|n| match n {
        GeneralName::DNSName(d) => ServerName::try_from(d.to_string()).ok(),
        _ => None,
    });
    dns.or_else(|| {
        names.iter().find_map(|n| match n {
            GeneralName::IPAddress(b) => match b.len() {
                4 => Some(ServerName::from(std::net::IpAddr::from(
                    <[u8; 4]>::try_from(*b).ok()?,
                ))),
                16 => Some(ServerName::from(std::net::IpAddr::from(
                    <[u8; 16]>::try_from(*b).ok()?,
                ))),
                _ => None,
            },
            _ => None,
        })
    })
}

// === the decider's side ===

/// Accepts peers until the task is aborted. Each connection runs in its own task, handshake
/// included, so a stalled peer never holds up the others.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Arc<PeerTls>,
    admission: Admission,
    log: Arc<Log>,
) {
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "peer listener: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = TlsAcceptor::from(tls.server.load_full());
        let admission = admission.clone();
        let log = log.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    // Refused before any request: no certificate, another CA, not TLS.
                    tracing::warn!(peer = %remote, error = %e, "peer refused: TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let service = hyper::service::service_fn(move |req| {
                let admission = admission.clone();
                let log = log.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(&admission, &log, req).await) }
            });
            let builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            if let Err(e) = builder
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(peer = %remote, error = %e, "peer connection ended");
            }
        });
    }
}

async fn handle(admission: &Admission, log: &Log, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() == Method::GET && req.uri().path() == PENDING_PATH {
        return match log.handover(std::time::Instant::now()) {
            Ok(mut list) => {
                list.entries.retain(|r| admission.still_holds(r));
                reply(
                    StatusCode::OK,
                    serde_json::to_vec(&list).unwrap_or_default(),
                )
            }
            Err(why) => reply(
                StatusCode::CONFLICT,
                serde_json::json!({ "message": why })
                    .to_string()
                    .into_bytes(),
            ),
        };
    }
    if req.method() != Method::POST || req.uri().path() != DECIDE_PATH {
        return reply(
            StatusCode::NOT_FOUND,
            b"{\"message\":\"not found: POST /decide, GET /pending\"}".to_vec(),
        );
    }
    let body = match Limited::new(req.into_body(), BODY_LIMIT).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let msg = serde_json::json!({ "message": format!("cannot read the body: {e}") });
            return reply(StatusCode::BAD_REQUEST, msg.to_string().into_bytes());
        }
    };
    let answer = match forwarded(&body) {
        Ok(Forwarded::Request(request)) => admission.answer_forwarded(&request),
        Ok(Forwarded::NotOurs(why)) => DecisionAnswer::unavailable(why),
        Err(e) => {
            let msg = serde_json::json!({ "message": format!("not a decision request: {e}") });
            return reply(StatusCode::BAD_REQUEST, msg.to_string().into_bytes());
        }
    };
    reply(
        StatusCode::OK,
        serde_json::to_vec(&answer).unwrap_or_default(),
    )
}

fn reply(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

// === the follower's side ===

/// Why a forward got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ForwardError {
    #[error("cannot connect to the decider at {addr}: {detail}")]
    Connect { addr: String, detail: String },
    #[error("the decider at {addr} failed the request: {detail}")]
    Request { addr: String, detail: String },
}

/// One HTTP/2 connection to the decider, shared by every forward (h2 multiplexes them), opened
/// again when the decider moves or the connection drops.
pub(crate) struct PeerClient {
    tls: Arc<PeerTls>,
    conn: tokio::sync::Mutex<Option<Conn>>,
}

struct Conn {
    addr: String,
    send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
}

impl PeerClient {
    pub(crate) fn new(tls: Arc<PeerTls>) -> Self {
        PeerClient {
            tls,
            conn: tokio::sync::Mutex::new(None),
        }
    }

    /// Sends one decision to `addr`. The caller bounds the time.
    pub(crate) async fn send(
        &self,
        addr: &str,
        request: &DecisionRequest,
    ) -> Result<DecisionAnswer, ForwardError> {
        let body = Bytes::from(serde_json::to_vec(request).unwrap_or_default());
        let bytes = self.call(addr, Method::POST, DECIDE_PATH, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| ForwardError::Request {
            addr: addr.to_string(),
            detail: format!("not a decision answer: {e}"),
        })
    }

    /// Fetches the admissions a decider that stepped down hands over. The caller bounds the time.
    pub(crate) async fn pending(&self, addr: &str) -> Result<Handover, ForwardError> {
        let bytes = self
            .call(addr, Method::GET, PENDING_PATH, Bytes::new())
            .await?;
        serde_json::from_slice(&bytes).map_err(|e| ForwardError::Request {
            addr: addr.to_string(),
            detail: format!("not a handover: {e}"),
        })
    }

    async fn call(
        &self,
        addr: &str,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> Result<Bytes, ForwardError> {
        let fail = |detail: String| ForwardError::Request {
            addr: addr.to_string(),
            detail,
        };
        // A cached connection may have died since its last use: one retry on a fresh one.
        for attempt in 0..2 {
            let mut send = self.sender(addr, attempt > 0).await?;
            let req = Request::builder()
                .method(method.clone())
                .uri(format!("https://{addr}{path}"))
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(body.clone()))
                .map_err(|e| fail(e.to_string()))?;
            let response = match send.send_request(req).await {
                Ok(r) => r,
                Err(e) if attempt == 0 => {
                    tracing::debug!(peer = addr, error = %e, "peer connection lost; reconnecting");
                    continue;
                }
                Err(e) => return Err(fail(e.to_string())),
            };
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| fail(e.to_string()))?
                .to_bytes();
            if status != StatusCode::OK {
                return Err(fail(format!(
                    "HTTP {status}: {}",
                    String::from_utf8_lossy(&bytes)
                )));
            }
            return Ok(bytes);
        }
        unreachable!("the loop returns on its second attempt")
    }

    async fn sender(
        &self,
        addr: &str,
        fresh: bool,
    ) -> Result<hyper::client::conn::http2::SendRequest<Full<Bytes>>, ForwardError> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_ref() {
            if !fresh && c.addr == addr && !c.send.is_closed() {
                return Ok(c.send.clone());
            }
        }
        *conn = None;
        let err = |detail: String| ForwardError::Connect {
            addr: addr.to_string(),
            detail,
        };
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| err(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let settings = self.tls.client.load_full();
        let (config, name) = &*settings;
        let connector = TlsConnector::from(Arc::new(config.clone()));
        let stream = connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| err(format!("TLS: {e}")))?;
        let (send, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| err(e.to_string()))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        *conn = Some(Conn {
            addr: addr.to_string(),
            send: send.clone(),
        });
        Ok(send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

    /// Writes a CA and a leaf for `names` into `dir`; returns the files.
    fn write(dir: &std::path::Path, names: &[&str]) -> PeerFiles {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join("tls.crt"), leaf.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        std::fs::write(dir.join("ca.crt"), ca_cert.pem()).unwrap();
        PeerFiles {
            pair: CertFiles::in_dir(dir),
            ca: dir.join("ca.crt"),
        }
    }

    #[test]
    fn the_decider_is_checked_against_the_first_name_of_our_own_certificate() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let files = write(dir.path(), &["ipam-guard-webhook.ns.svc", "10.0.0.1"]);
        let tls = PeerTls::load(files).unwrap();
        let client = tls.client.load();
        assert_eq!(
            client.1,
            ServerName::try_from("ipam-guard-webhook.ns.svc").unwrap()
        );
        let dir = tempfile::tempdir().unwrap();
        let files = write(dir.path(), &["127.0.0.1"]);
        let tls = PeerTls::load(files).unwrap();
        assert_eq!(
            tls.client.load().1,
            ServerName::try_from("127.0.0.1").unwrap()
        );
    }

    #[test]
    fn unusable_peer_files_are_named_in_the_error() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let mut files = write(dir.path(), &["localhost"]);
        files.ca = dir.path().join("missing-ca.crt");
        let e = PeerTls::load(files.clone()).err().unwrap().to_string();
        assert!(e.contains("missing-ca.crt"), "{e}");
        std::fs::write(&files.ca, "not a certificate").unwrap();
        let e = PeerTls::load(files).err().unwrap().to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
    }
}
