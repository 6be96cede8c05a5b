//! An HTTPS server of a test's own on a loopback port, under a CA of its own: the webhooks the
//! e2e suites register beside ipam-guard (`recorder`, `refuser`) answer through it.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::pki::{Pki, Usage};

/// Serves `answer` over HTTP/1.1 and HTTP/2 with a serving certificate for 127.0.0.1 issued by a
/// CA named after `name`; returns the address, the CA's PEM (for a `caBundle`) and the accept
/// loop, which the caller aborts when done.
pub async fn serve<F, Fut>(name: &str, answer: F) -> (SocketAddr, String, JoinHandle<()>)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<Full<Bytes>>, hyper::Error>> + Send + 'static,
{
    let pki = Pki::issue(
        &format!("{name} CA"),
        Some(name),
        &["127.0.0.1", "localhost"],
        Usage::Serving,
    );
    let chain = CertificateDer::pem_slice_iter(pki.leaf_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(pki.key_pem.as_bytes()).unwrap();
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            let answer = answer.clone();
            conns.spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(answer);
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
            while conns.try_join_next().is_some() {}
        }
    });
    (addr, pki.ca_pem, task)
}
