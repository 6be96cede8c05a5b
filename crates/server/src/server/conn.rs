//! Listening sockets and the accept loop shared by the HTTPS webhook and the plain-HTTP listeners.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::metrics::ListenerMetrics;
use super::Listen;
use crate::cluster::Caller;

/// Binds with SO_REUSEADDR (a restarted pod must not wait out TIME_WAIT). `:PORT` binds `[::]`
/// with IPV6_V6ONLY off (one socket for IPv4-only, IPv6-only and dual-stack clusters) and falls
/// back to `0.0.0.0` only where the kernel has no IPv6 at all (`ipv6.disable=1`).
pub(crate) fn bind(listen: Listen) -> std::io::Result<TcpListener> {
    match listen {
        Listen::Addr(addr) => bind_addr(addr),
        Listen::AnyFamily(port) => {
            match bind_addr(SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port))) {
                Err(e) if no_ipv6(&e) => {
                    tracing::info!(port, "no IPv6 in this kernel; listening on IPv4 only");
                    bind_addr(SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)))
                }
                other => other,
            }
        }
    }
}

/// EAFNOSUPPORT (no IPv6 socket at all) or EADDRNOTAVAIL (no IPv6 address to bind).
fn no_ipv6(e: &std::io::Error) -> bool {
    const EAFNOSUPPORT: i32 = 97;
    e.kind() == std::io::ErrorKind::AddrNotAvailable || e.raw_os_error() == Some(EAFNOSUPPORT)
}

fn bind_addr(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        socket.set_only_v6(false)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    TcpListener::from_std(socket.into())
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) handshake_timeout: Duration,
    pub(crate) header_read_timeout: Duration,
    pub(crate) max_connections: usize,
    /// Connections one peer address may hold at once (0: no limit).
    pub(crate) max_per_source: usize,
    pub(crate) drain_timeout: Duration,
}

/// Open connections per peer address, so one source cannot hold every slot (docs/robustness.md, O2).
#[derive(Debug, Default)]
struct PerSource {
    open: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

impl PerSource {
    /// Counts a new connection from `ip`, or refuses it when `ip` already holds `max`.
    fn enter(self: &Arc<Self>, ip: std::net::IpAddr, max: usize) -> Option<SourceSlot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if max > 0 && *n >= max {
            return None;
        }
        *n += 1;
        Some(SourceSlot {
            table: self.clone(),
            ip,
        })
    }
}

/// One connection counted in `ipam_guard_connections` while it is open.
struct Counted(prometheus_client::metrics::gauge::Gauge);

impl Counted {
    fn new(gauge: &prometheus_client::metrics::gauge::Gauge) -> Counted {
        gauge.inc();
        Counted(gauge.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// What an open connection holds, given back in this order when its task ends: it leaves the
/// gauge before its permit lets the next connection in.
type Slots = (Counted, OwnedSemaphorePermit, SourceSlot);

/// One connection's place in `PerSource`, given back on drop.
struct SourceSlot {
    table: Arc<PerSource>,
    ip: std::net::IpAddr,
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Accepts until `stop` turns true, then closes the listener, asks every connection to finish
/// (idle keep-alive connections close at once, requests in progress complete) and waits up to
/// `drain_timeout` before dropping what is left.
pub(crate) async fn serve(
    name: &'static str,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: Limits,
    metrics: ListenerMetrics,
    mut stop: watch::Receiver<bool>,
) {
    let builders = Arc::new(Builders::new(limits.header_read_timeout));

    let graceful = GracefulShutdown::new();
    // Each connection holds a permit, so a flood of idle connections queues in the kernel
    // backlog instead of growing memory here.
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let per_source = Arc::new(PerSource::default());
    let mut permit: Option<OwnedSemaphorePermit> = None;
    let mut tasks = JoinSet::new();
    loop {
        let Some(held) = permit.take() else {
            tokio::select! {
                p = permits.clone().acquire_owned() => permit = p.ok(),
                _ = stopped(&mut stop) => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
            continue;
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let Some(slot) = per_source.enter(peer.ip().to_canonical(), limits.max_per_source) else {
                        // Closed at once rather than queued: the slot it would wait for is held
                        // by the same source.
                        tracing::debug!(listener = name, peer = %peer, max = limits.max_per_source, "too many connections from this address; closed");
                        metrics.per_source_refused.inc();
                        drop(tcp);
                        permit = Some(held);
                        continue;
                    };
                    let watcher = graceful.watcher();
                    let conn = Conn {
                        name,
                        tcp,
                        peer,
                        tls: tls.clone(),
                        router: router.clone(),
                        builders: builders.clone(),
                        handshake_timeout: limits.handshake_timeout,
                    };
                    tasks.spawn(conn.run(watcher, (Counted::new(&metrics.open), held, slot)));
                }
                Err(e) => {
                    permit = Some(held);
                    // EMFILE and friends: back off instead of spinning on the error.
                    tracing::warn!(listener = name, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stopped(&mut stop) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => permit = Some(held),
        }
    }
    drop(listener);
    let open = graceful.count();
    tracing::debug!(
        listener = name,
        open,
        "stopped accepting; draining connections"
    );
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            listener = name,
            timeout = ?limits.drain_timeout,
            "connections still open after the drain timeout; closing them"
        );
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
}

/// Resolves once `stop` is true or its sender is gone (the `Ref` guard is not `Send`).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// One builder per protocol, chosen by ALPN. Sniffing the h2 preface instead (the auto
/// default) would leave a silent connection waiting with no timer at all: hyper's header read
/// timeout only starts once the HTTP/1 connection exists. h2 over TLS without ALPN is not a
/// thing (RFC 9113 §3.2), so no ALPN means HTTP/1.1.
///
/// hyper's h2 server has no such timer either: it waits for the client preface unbounded, so an
/// h2 connection's first bytes get the header read timeout here (`FirstRead`), and keep-alive
/// pings close one whose peer stops answering later (tests/hostile_connections.rs).
struct Builders {
    h1: auto::Builder<TokioExecutor>,
    h2: auto::Builder<TokioExecutor>,
    header_read_timeout: Duration,
}

impl Builders {
    fn new(header_read_timeout: Duration) -> Builders {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout);
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(header_read_timeout)
            .keep_alive_timeout(header_read_timeout);
        Builders {
            h1: builder.clone().http1_only(),
            h2: builder.http2_only(),
            header_read_timeout,
        }
    }
}

/// Notes whether any byte has been read, so a silent h2 connection can be told from a busy one.
struct FirstRead<I> {
    io: I,
    seen: Arc<AtomicBool>,
}

impl<I: AsyncRead + Unpin> AsyncRead for FirstRead<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.seen.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for FirstRead<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

struct Conn {
    name: &'static str,
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    router: Router,
    builders: Arc<Builders>,
    handshake_timeout: Duration,
}

impl Conn {
    /// The handshake runs here, in the connection's own task: a slow client never stalls accepts.
    async fn run(self, watcher: Watcher, _slots: Slots) {
        let _ = self.tcp.set_nodelay(true);
        let Some(acceptor) = &self.tls else {
            http(
                &self.builders.h1,
                self.tcp,
                self.router,
                watcher,
                self.name,
                None,
            )
            .await;
            return;
        };
        let accepted =
            tokio::time::timeout(self.handshake_timeout, acceptor.accept(self.tcp)).await;
        // A certificate here passed the client verifier (`--client-ca-file`): the API server.
        let caller = match &accepted {
            Ok(Ok(stream)) if stream.get_ref().1.peer_certificates().is_some() => Caller::Trusted,
            _ => Caller::Stranger(self.peer.ip().to_canonical()),
        };
        match accepted {
            Ok(Ok(stream)) if stream.get_ref().1.alpn_protocol() == Some(b"h2") => {
                let seen = Arc::new(AtomicBool::new(false));
                let io = FirstRead {
                    io: stream,
                    seen: seen.clone(),
                };
                let silent = async {
                    tokio::time::sleep(self.builders.header_read_timeout).await;
                    if seen.load(Ordering::Relaxed) {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    _ = http(&self.builders.h2, io, self.router, watcher, self.name, Some(caller)) => {}
                    _ = silent => {
                        tracing::debug!(listener = self.name, peer = %self.peer, "h2 connection silent past the header read timeout");
                    }
                }
            }
            Ok(Ok(stream)) => {
                http(
                    &self.builders.h1,
                    stream,
                    self.router,
                    watcher,
                    self.name,
                    Some(caller),
                )
                .await
            }
            Ok(Err(e)) => {
                // An alert from the client usually means it does not trust our certificate
                // (a stale caBundle): worth seeing without debug logs.
                let alert = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                    .is_some_and(|r| matches!(r, rustls::Error::AlertReceived(_)));
                let inner = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>());
                let unauthenticated = inner.is_some_and(|r| {
                    matches!(
                        r,
                        rustls::Error::NoCertificatesPresented
                            | rustls::Error::InvalidCertificate(_)
                    )
                });
                if alert {
                    tracing::info!(listener = self.name, peer = %self.peer, error = %e, "TLS handshake refused by the client");
                } else if unauthenticated {
                    // --client-ca-file refused the caller: worth seeing when the API server's
                    // kubeconfig for this webhook is wrong.
                    tracing::info!(listener = self.name, peer = %self.peer, error = %e, "client not authenticated; connection refused");
                } else {
                    tracing::debug!(listener = self.name, peer = %self.peer, error = %e, "TLS handshake failed");
                }
            }
            Err(_) => {
                tracing::debug!(listener = self.name, peer = %self.peer, "TLS handshake timed out")
            }
        }
    }
}

async fn http<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    router: Router,
    watcher: Watcher,
    name: &'static str,
    caller: Option<Caller>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Every request of a TLS connection carries who connected, for the pending-entry bound.
    let service = TowerToHyperService::new(tower::ServiceExt::map_request(
        router,
        move |mut req: http::Request<hyper::body::Incoming>| {
            if let Some(caller) = caller {
                req.extensions_mut().insert(caller);
            }
            req
        },
    ));
    let conn = builder.serve_connection(TokioIo::new(io), service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(listener = name, error = %e, "connection ended with an error");
    }
}
