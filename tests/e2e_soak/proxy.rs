//! Two TCP relays on loopback that the soak controls; TLS passes through them untouched.
//!
//! - `Front` stands where a Service would, between the API server and the replicas' webhook
//!   listeners: each connection goes to the next replica in turn (one that refuses is skipped).
//!   The API server keeps one HTTP/2 connection per webhook and sends every review down it, so
//!   a connection is closed once it has lived its lifetime (drawn per connection) and carries
//!   nothing: the next review opens a new one, and reviews spread over the replicas as a
//!   Service's connection balancing spreads them.
//! - `Tap` stands between the replicas and the API server (their kubeconfig names it) and can
//!   cut every connection through it at once: watches, the Lease renewals and lists break as a
//!   network fault breaks them, while the API server itself runs on.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

use super::rng::Rng;

/// Copies one direction until EOF or an error, stamping `last` (ms since `epoch`) on each read.
async fn copy_stamped(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    epoch: Instant,
    last: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        last.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Relays `a` and `b` both ways until both directions end or, with a lifetime, until the pair
/// has lived that long and been idle for `IDLE`.
async fn relay(a: TcpStream, b: TcpStream, lifetime: Option<Duration>) {
    const IDLE: Duration = Duration::from_millis(150);
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let both = async {
        tokio::join!(
            copy_stamped(ar, bw, epoch, last.clone()),
            copy_stamped(br, aw, epoch, last.clone())
        )
    };
    let rotate = async {
        let Some(lifetime) = lifetime else {
            return std::future::pending::<()>().await;
        };
        tokio::time::sleep(lifetime).await;
        loop {
            let idle = epoch.elapsed().as_millis() as u64 - last.load(Ordering::Relaxed);
            if idle >= IDLE.as_millis() as u64 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    };
    tokio::select! {
        _ = both => {}
        () = rotate => {}
    }
}

#[derive(Default)]
pub struct FrontStats {
    pub connections: AtomicUsize,
    /// Connections dropped because no replica accepted one.
    pub no_backend: AtomicUsize,
}

pub struct Front {
    pub addr: SocketAddr,
    backends: Arc<Mutex<Vec<SocketAddr>>>,
    pub stats: Arc<FrontStats>,
    task: JoinHandle<()>,
}

impl Front {
    /// Serves on `listener` (bound before the API server starts: its admission configuration
    /// names this address).
    pub fn start(listener: TcpListener, backends: Vec<SocketAddr>, seed: u64) -> Front {
        let addr = listener.local_addr().unwrap();
        let backends = Arc::new(Mutex::new(backends));
        let stats = Arc::new(FrontStats::default());
        let next = Arc::new(AtomicUsize::new(0));
        let rng = Arc::new(Mutex::new(Rng::new(seed)));
        let task = {
            let (backends, stats) = (backends.clone(), stats.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((incoming, _)) = listener.accept().await else {
                        continue;
                    };
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    let list = backends.lock().unwrap().clone();
                    let first = next.fetch_add(1, Ordering::Relaxed);
                    let lifetime = rng.lock().unwrap().millis(300, 2500);
                    let stats = stats.clone();
                    tokio::spawn(async move {
                        for k in 0..list.len() {
                            let to = list[(first + k) % list.len()];
                            let dial = TcpStream::connect(to);
                            if let Ok(Ok(out)) =
                                tokio::time::timeout(Duration::from_millis(500), dial).await
                            {
                                relay(incoming, out, Some(lifetime)).await;
                                return;
                            }
                        }
                        stats.no_backend.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
        };
        Front {
            addr,
            backends,
            stats,
            task,
        }
    }

    pub fn set_backends(&self, list: Vec<SocketAddr>) {
        *self.backends.lock().unwrap() = list;
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub struct Tap {
    pub addr: SocketAddr,
    live: Arc<Mutex<Vec<AbortHandle>>>,
    task: JoinHandle<()>,
}

impl Tap {
    pub async fn start(upstream: SocketAddr) -> Tap {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let live: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let task = {
            let live = live.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((incoming, _)) = listener.accept().await else {
                        continue;
                    };
                    let relayed = tokio::spawn(async move {
                        if let Ok(out) = TcpStream::connect(upstream).await {
                            relay(incoming, out, None).await;
                        }
                    });
                    let mut live = live.lock().unwrap();
                    live.retain(|h| !h.is_finished());
                    live.push(relayed.abort_handle());
                }
            })
        };
        Tap { addr, live, task }
    }

    /// Drops every connection through the tap; returns how many were open.
    pub fn cut(&self) -> usize {
        let mut live = self.live.lock().unwrap();
        live.retain(|h| !h.is_finished());
        let n = live.len();
        for h in live.drain(..) {
            h.abort();
        }
        n
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}
