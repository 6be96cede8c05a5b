//! TCP relays on loopback that the soak controls; TLS passes through them untouched.
//!
//! - `Front` stands where a Service would, between the API server and the replicas' webhook
//!   listeners: each connection goes to the next replica in turn (one that refuses is skipped).
//!   The API server keeps one HTTP/2 connection per webhook and sends every review down it, so
//!   a connection is closed once it has lived its lifetime (drawn per connection) and carries
//!   nothing: the next review opens a new one, and reviews spread over the replicas as a
//!   Service's connection balancing spreads them. Switched slow (`slow_for`), it holds the
//!   replicas' answers past the webhook's timeout.
//! - `Tap` stands between the replicas and the API server (their kubeconfig names it) and can
//!   cut every connection through it at once: watches, the Lease renewals and lists break as a
//!   network fault breaks them, while the API server itself runs on. A second `Tap` stands
//!   between the API server and etcd: cut, the API server's own watches of etcd break.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

use super::rng::Rng;

/// Finds the first TLS application-data record (content type 23) in a byte stream read in
/// chunks. A client sends one only once its side of the handshake is done (TLS 1.3: its
/// Finished; TLS 1.2: after the server's Finished), so what the server sends after it is what
/// the session carries: the answers, never the handshake.
#[derive(Default)]
struct FirstAppData {
    header: Vec<u8>,
    skip: usize,
    found: bool,
}

impl FirstAppData {
    fn feed(&mut self, mut buf: &[u8]) -> bool {
        while !self.found && !buf.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(buf.len());
                self.skip -= n;
                buf = &buf[n..];
                continue;
            }
            let n = (5 - self.header.len()).min(buf.len());
            self.header.extend_from_slice(&buf[..n]);
            buf = &buf[n..];
            if self.header.len() == 5 {
                self.found = self.header[0] == 23;
                self.skip = u16::from_be_bytes([self.header[3], self.header[4]]) as usize;
                self.header.clear();
            }
        }
        self.found
    }
}

/// The front's switch for slow answers: while it is on, whatever a replica sends on a session
/// that is up is held that long before it is passed on (and what follows on that connection
/// waits behind it), as a replica too slow for the webhook's timeout is seen from outside.
#[derive(Default)]
pub struct Slow {
    on: Mutex<Option<(Instant, Duration)>>,
    /// Chunks of answers held.
    pub held: AtomicUsize,
}

impl Slow {
    fn hold_now(&self) -> Option<Duration> {
        let on = self.on.lock().unwrap();
        on.filter(|(until, _)| Instant::now() < *until)
            .map(|(_, hold)| hold)
    }
}

/// Which direction of the front's connections a copy is (the tap's are `Plain`).
enum Side {
    Plain,
    /// The caller's: marks the session up once its first application data passed.
    Caller(Arc<AtomicBool>),
    /// The replica's: holds what it reads while the front is slow and the session up, stamping
    /// until when (ms since the connection's epoch) it holds something.
    Replica(Arc<AtomicBool>, Arc<Slow>, Arc<AtomicU64>),
}

/// Copies one direction until EOF or an error, stamping `last` (ms since `epoch`) on each read.
async fn copy_stamped(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    epoch: Instant,
    last: Arc<AtomicU64>,
    side: Side,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut records = FirstAppData::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        last.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        match &side {
            Side::Plain => {}
            Side::Caller(up) => {
                if !up.load(Ordering::Relaxed) && records.feed(&buf[..n]) {
                    up.store(true, Ordering::Relaxed);
                }
            }
            Side::Replica(up, slow, busy_until) => {
                if let Some(hold) = up
                    .load(Ordering::Relaxed)
                    .then(|| slow.hold_now())
                    .flatten()
                {
                    slow.held.fetch_add(1, Ordering::Relaxed);
                    // The front closes no connection that carries a held answer: the caller would
                    // see it end (and the API server retry the call elsewhere), not time out.
                    busy_until.store(
                        (epoch.elapsed() + hold).as_millis() as u64,
                        Ordering::Relaxed,
                    );
                    tokio::time::sleep(hold).await;
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Relays `a` (the caller) and `b` both ways until both directions end or, with a lifetime,
/// until the pair has lived that long and been idle for `IDLE`; with `slow`, what `b` answers
/// may be held (`Slow`).
async fn relay(a: TcpStream, b: TcpStream, lifetime: Option<Duration>, slow: Option<Arc<Slow>>) {
    const IDLE: Duration = Duration::from_millis(150);
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let epoch = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let busy_until = Arc::new(AtomicU64::new(0));
    let (ar, aw) = a.into_split();
    let (br, bw) = b.into_split();
    let (caller, replica) = match slow {
        Some(slow) => {
            let up = Arc::new(AtomicBool::new(false));
            (
                Side::Caller(up.clone()),
                Side::Replica(up, slow, busy_until.clone()),
            )
        }
        None => (Side::Plain, Side::Plain),
    };
    let both = async {
        tokio::join!(
            copy_stamped(ar, bw, epoch, last.clone(), caller),
            copy_stamped(br, aw, epoch, last.clone(), replica)
        )
    };
    let rotate = async {
        let Some(lifetime) = lifetime else {
            return std::future::pending::<()>().await;
        };
        tokio::time::sleep(lifetime).await;
        loop {
            let now = epoch.elapsed().as_millis() as u64;
            let idle = now.saturating_sub(last.load(Ordering::Relaxed));
            if idle >= IDLE.as_millis() as u64 && now >= busy_until.load(Ordering::Relaxed) {
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
    pub slow: Arc<Slow>,
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
        let slow = Arc::new(Slow::default());
        let task = {
            let (backends, stats, slow) = (backends.clone(), stats.clone(), slow.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((incoming, _)) = listener.accept().await else {
                        continue;
                    };
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    let list = backends.lock().unwrap().clone();
                    let first = next.fetch_add(1, Ordering::Relaxed);
                    let lifetime = rng.lock().unwrap().millis(300, 2500);
                    let slow = slow.clone();
                    let stats = stats.clone();
                    tokio::spawn(async move {
                        for k in 0..list.len() {
                            let to = list[(first + k) % list.len()];
                            let dial = TcpStream::connect(to);
                            if let Ok(Ok(out)) =
                                tokio::time::timeout(Duration::from_millis(500), dial).await
                            {
                                relay(incoming, out, Some(lifetime), Some(slow)).await;
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
            slow,
            stats,
            task,
        }
    }

    pub fn set_backends(&self, list: Vec<SocketAddr>) {
        *self.backends.lock().unwrap() = list;
    }

    /// Holds what the replicas answer in the next `window` for `hold` each.
    pub fn slow_for(&self, window: Duration, hold: Duration) {
        *self.slow.on.lock().unwrap() = Some((Instant::now() + window, hold));
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
                            relay(incoming, out, None, None).await;
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

#[cfg(test)]
mod tests {
    use super::FirstAppData;

    #[test]
    fn the_first_application_data_record_is_found_across_chunks() {
        // A handshake record of 3 bytes, a change-cipher-spec of 1, then application data.
        let stream = [
            22, 3, 1, 0, 3, 1, 2, 3, 20, 3, 3, 0, 1, 1, 23, 3, 3, 0, 2, 9, 9,
        ];
        for cut in 0..stream.len() {
            let mut f = FirstAppData::default();
            let first = f.feed(&stream[..cut]);
            let second = f.feed(&stream[cut..]);
            assert_eq!(first, cut >= 19, "cut at {cut}");
            assert!(second, "cut at {cut}");
        }
        // A body byte equal to 23 is not a record's type.
        let mut f = FirstAppData::default();
        assert!(!f.feed(&[22, 3, 1, 0, 2, 23, 23]));
    }
}
