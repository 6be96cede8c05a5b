//! An HTTPS client that speaks h1 or h2 on a connection it controls, and a plain GET for probes
//! and metrics. A file of its own because the e2e suites (crates/e2e) talk to the binary they
//! start through it too; they include this one file by path, without the CA and the in-process
//! server of `server_support`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::ClientConfig;
use tokio::net::TcpStream;

/// Every wait in these tests is bounded by this: a hang guard, not a speed bound. The largest
/// hostile bodies (a Metal3 IPPool among 100k pools) take about 9 s through a debug build on two
/// loaded cores, so the guard leaves room for that.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn client_config(ca: &CertificateDer<'static>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// One HTTPS connection, kept open across requests.
pub struct Conn {
    sender: Sender,
    pub proto: Proto,
    /// The leaf certificate the server presented.
    pub peer_cert: CertificateDer<'static>,
    pub alpn: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Conn {
    /// TCP connect and TLS handshake; h2 is offered (ALPN) only for `Proto::H2`.
    pub async fn open(
        addr: SocketAddr,
        ca: &CertificateDer<'static>,
        proto: Proto,
    ) -> std::io::Result<Conn> {
        let alpn: &[&[u8]] = match proto {
            Proto::H1 => &[b"http/1.1"],
            Proto::H2 => &[b"h2"],
        };
        Conn::open_with(addr, client_config(ca, alpn), proto).await
    }

    pub async fn open_with(
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        proto: Proto,
    ) -> std::io::Result<Conn> {
        Conn::open_from(addr, None, config, proto).await
    }

    /// As `open_with`, from the local address `source` when given (another loopback address
    /// stands for another caller).
    pub async fn open_from(
        addr: SocketAddr,
        source: Option<std::net::IpAddr>,
        config: Arc<ClientConfig>,
        proto: Proto,
    ) -> std::io::Result<Conn> {
        let connect = async {
            let tcp = match source {
                None => TcpStream::connect(addr).await?,
                Some(ip) => {
                    let socket = tokio::net::TcpSocket::new_v4()?;
                    socket.bind(SocketAddr::new(ip, 0))?;
                    socket.connect(addr).await?
                }
            };
            tcp.set_nodelay(true)?;
            let name = ServerName::try_from("localhost").unwrap();
            tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
        };
        let tls = tokio::time::timeout(WAIT, connect).await.map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
        })??;
        let (_, session) = tls.get_ref();
        let peer_cert = session
            .peer_certificates()
            .expect("server sent a certificate")[0]
            .clone();
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        let io = TokioIo::new(tls);
        let sender = match proto {
            Proto::H1 => {
                let (sender, conn) = hyper::client::conn::http1::handshake(io)
                    .await
                    .map_err(std::io::Error::other)?;
                tokio::spawn(conn);
                Sender::H1(sender)
            }
            Proto::H2 => {
                let (sender, conn) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                        .await
                        .map_err(std::io::Error::other)?;
                tokio::spawn(conn);
                Sender::H2(sender)
            }
        };
        Ok(Conn {
            sender,
            proto,
            peer_cert,
            alpn,
        })
    }

    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> Result<Reply, hyper::Error> {
        let work = async {
            let response = match &mut self.sender {
                Sender::H1(s) => {
                    s.ready().await?;
                    s.send_request(for_h1(req)).await?
                }
                Sender::H2(s) => {
                    s.ready().await?;
                    s.send_request(req).await?
                }
            };
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Reply {
                status: parts.status.as_u16(),
                version: parts.version,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(WAIT, work)
            .await
            .expect("request timed out")
    }

    /// Whether the server has closed this connection (or it failed).
    pub fn is_closed(&self) -> bool {
        match &self.sender {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

/// HTTP/1.1 wants the origin form and a Host header; h2 takes the absolute URI.
fn for_h1(req: Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let (mut parts, body) = req.into_parts();
    let authority = parts
        .uri
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_else(|| "localhost".into());
    parts.uri = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse()
        .unwrap();
    parts
        .headers
        .insert(http::header::HOST, authority.parse().unwrap());
    Request::from_parts(parts, body)
}

/// A POST with an optional Content-Type.
pub fn post(
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    request("POST", path, content_type, body)
}

pub fn request(
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"));
    if let Some(ct) = content_type {
        builder = builder.header(http::header::CONTENT_TYPE, ct);
    }
    builder.body(Full::new(body.into())).unwrap()
}

/// A one-off HTTP/1.1 GET over plain TCP (probes, metrics).
pub async fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let work = async {
        let tcp = TcpStream::connect(addr).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        let req = Request::get(path)
            .header(http::header::HOST, addr.to_string())
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = sender
            .send_request(req)
            .await
            .map_err(std::io::Error::other)?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(std::io::Error::other)?
            .to_bytes();
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(WAIT, work)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "GET timed out"))?
}
