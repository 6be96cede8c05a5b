//! A do-nothing admission webhook: the machine's limit for TLS + HTTP, measured beside
//! `ipam-guard serve` by the same client (docs/performance.md, "Hot path").
//!
//! ```text
//! cargo build --release --example echo
//! target/release/examples/echo --cert-dir /tmp/c --listen 127.0.0.1:52000
//! ```
//!
//! The transport is the server's (ring, TLS 1.3 and 1.2, ALPN h2 then http/1.1, one worker per
//! core, no-delay sockets, the handshake in the connection's task, hyper-util's auto builders
//! with the same timers); the answer is an allowed review echoing the request's uid, found
//! with a byte search, so no JSON is parsed. It answers any path, so it can stand in for both
//! `/validate` and `/mutate` in a webhook configuration (`benches/apiserver_latency.rs`).
//! `--cert-dir` holds `tls.crt` and `tls.key`; missing, a dev CA and pair are written there.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http::header::CONTENT_TYPE;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(about = "Bare hyper + rustls admission webhook that allows everything")]
struct Args {
    /// Directory with tls.crt and tls.key (written with a dev CA when missing).
    #[arg(long)]
    cert_dir: PathBuf,
    #[arg(long, default_value = "127.0.0.1:52000")]
    listen: SocketAddr,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let files = ipam_guard::server::dev::ensure(&args.cert_dir)?.files;
    let chain = CertificateDer::pem_file_iter(&files.cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(&files.key)?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
    .with_no_client_auth()
    .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(args.listen).await?;
        eprintln!("echo webhook on https://{}", listener.local_addr()?);
        let header_read_timeout = Duration::from_secs(10);
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout);
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(header_read_timeout)
            .keep_alive_timeout(header_read_timeout);
        let h1 = Arc::new(builder.clone().http1_only());
        let h2 = Arc::new(builder.http2_only());
        loop {
            let (tcp, _) = listener.accept().await?;
            let (acceptor, h1, h2) = (acceptor.clone(), h1.clone(), h2.clone());
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let builder = match tls.get_ref().1.alpn_protocol() {
                    Some(b"h2") => h2,
                    _ => h1,
                };
                let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    let body = req.into_body().collect().await?.to_bytes();
                    Ok::<_, anyhow::Error>(
                        Response::builder()
                            .header(CONTENT_TYPE, "application/json")
                            .body(Full::new(answer(&body)))?,
                    )
                });
                let _ = builder.serve_connection(TokioIo::new(tls), service).await;
            });
        }
    })
}

/// An allowed review for the request's uid: the first `"uid"` of a review body is the request's
/// (the API server writes `request.uid` before the object).
fn answer(body: &[u8]) -> Bytes {
    const KEY: &[u8] = b"\"uid\":\"";
    let uid = body
        .windows(KEY.len())
        .position(|w| w == KEY)
        .map(|at| &body[at + KEY.len()..])
        .and_then(|rest| rest.iter().position(|&b| b == b'"').map(|end| &rest[..end]))
        .unwrap_or_default();
    let mut out = Vec::with_capacity(128 + uid.len());
    out.extend_from_slice(
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":""#,
    );
    out.extend_from_slice(uid);
    out.extend_from_slice(br#"","allowed":true}}"#);
    Bytes::from(out)
}
