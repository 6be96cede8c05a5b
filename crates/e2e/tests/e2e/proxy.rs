//! A round-robin TCP proxy in front of webhook replicas, standing in for the Service an install
//! puts there: a webhook registration names one URL. TLS passes through untouched, so the API
//! server's client certificate reaches the replica and the replica's serving certificate (for
//! 127.0.0.1, the proxy's address too) reaches the API server. Each connection goes to the next
//! replica in turn that accepts one; a replica that is gone (shut down, killed) is skipped, as a
//! Service drops a pod that is no longer ready.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Proxy {
    pub addr: SocketAddr,
    /// Connections handed to each backend, in the order given.
    handed: Arc<Vec<AtomicUsize>>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a loopback port of its own; the first connection goes to `backends[0]`.
    pub async fn start(backends: Vec<SocketAddr>) -> Proxy {
        assert!(!backends.is_empty(), "a proxy needs a backend");
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let handed: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = handed.clone();
        let task = tokio::spawn(async move {
            // Held here so that aborting the proxy ends every connection it carries.
            let mut conns = tokio::task::JoinSet::new();
            let mut next = 0usize;
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    continue;
                };
                let first = next % backends.len();
                next = next.wrapping_add(1);
                let backends = backends.clone();
                let counts = counts.clone();
                conns.spawn(async move {
                    let Some((i, outbound)) = connect_from(&backends, first).await else {
                        return;
                    };
                    counts[i].fetch_add(1, Ordering::Relaxed);
                    let (mut a, mut b) = (inbound, outbound);
                    let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                });
                while conns.try_join_next().is_some() {}
            }
        });
        Proxy { addr, handed, task }
    }

    /// How many connections each backend was handed so far, in the order given to `start`.
    pub fn handed(&self) -> Vec<usize> {
        self.handed
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }
}

/// The first backend from `first` on (wrapping) that accepts a connection.
async fn connect_from(backends: &[SocketAddr], first: usize) -> Option<(usize, TcpStream)> {
    for k in 0..backends.len() {
        let i = (first + k) % backends.len();
        let attempt = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(backends[i]));
        if let Ok(Ok(stream)) = attempt.await {
            let _ = stream.set_nodelay(true);
            return Some((i, stream));
        }
    }
    None
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
