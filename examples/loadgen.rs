//! Load generator for the webhook: real AdmissionReview bodies over HTTPS, latency percentiles,
//! throughput and wrong answers, against the state `examples/gen-state.rs` generates.
//!
//! ```text
//! # the real server in-process (its own 2-thread runtime), 10k pools + 100k addresses:
//! cargo run --release --example loadgen -- --connections 1 --requests 20000
//! cargo run --release --example loadgen -- --connections 16 --requests 100000
//! cargo run --release --example loadgen -- --new-connection-per-request --requests 5000
//! # the same client against a bare hyper + rustls server answering a constant body:
//! cargo run --release --example loadgen -- --baseline --connections 16 --requests 100000
//! # an external `ipam-guard serve` (loopback only) loaded with the same state:
//! cargo run --release --example loadgen -- --write-state /tmp/lg-state
//! ipam-guard serve --dev --state-from /tmp/lg-state --listen 127.0.0.1:9443 &
//! cargo run --release --example loadgen -- --url https://localhost:9443 \
//!     --cacert certs/dev/ca.crt --server-pid $!
//! ```
//!
//! Each connection sends one request at a time (the API server does not pipeline), so N
//! connections are N requests in flight. Requests follow a fixed weighted mix of `Case`s (see
//! `benches/support`), the same sequence on every run. An answer counts as an error when the
//! status is not 200, the uid is not echoed, or the decision is not the expected one. The API
//! server does not resume TLS sessions, so `--new-connection-per-request` pays a full handshake.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Parser;
use http::header::{CONTENT_TYPE, HOST};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use ipam_guard::admission::Admission;
use ipam_guard::cluster::{ClusterView, Ledger};
use ipam_guard::rules::Options;
use ipam_guard::server::{dev, CertFiles, Config, Server};
use prometheus_client::registry::Registry;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::{TcpListener, TcpStream};

#[path = "../benches/support/mod.rs"]
mod support;

use support::{Body, Case, State, UID_PLACEHOLDER};

#[derive(Debug, Parser)]
#[command(about = "HTTPS load against ipam-guard (or a bare TLS baseline) with real review bodies")]
struct Args {
    /// Pools in the generated state.
    #[arg(long, default_value_t = 10_000)]
    pools: usize,
    /// IPAddresses (each with its claim) in the generated state.
    #[arg(long, default_value_t = 100_000)]
    addresses: usize,
    #[arg(long, default_value_t = 50)]
    namespaces: usize,
    /// Distinct bodies per case (different pools, names and addresses).
    #[arg(long, default_value_t = 32)]
    variants: usize,
    /// Connections, each with one request in flight.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Requests measured, after the warm-up.
    #[arg(long, default_value_t = 20_000)]
    requests: usize,
    /// Requests sent first and not measured.
    #[arg(long, default_value_t = 2_000)]
    warmup: usize,
    /// A new TCP + TLS connection for every request, closed after the answer.
    #[arg(long)]
    new_connection_per_request: bool,
    /// Serve a constant answer from a bare hyper + rustls server instead of ipam-guard.
    #[arg(long)]
    baseline: bool,
    /// Speak HTTP/2 (older API servers) instead of HTTP/1.1.
    #[arg(long)]
    http2: bool,
    /// Only these cases (`claim_create`, `pool_create,pool_create_overlap`, …), comma-separated,
    /// in the mix's proportions to each other, instead of the whole mix.
    #[arg(long)]
    only: Option<String>,
    /// Target an external server (loopback only), e.g. https://localhost:9443.
    #[arg(long, requires = "cacert")]
    url: Option<String>,
    /// CA certificate that signed the external server's certificate.
    #[arg(long)]
    cacert: Option<PathBuf>,
    /// Report the peak VmRSS of this process (the external server) during the run.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Write the state (for `serve --state-from`) to this directory and exit.
    #[arg(long)]
    write_state: Option<PathBuf>,
    /// Write the first body of each case to `DIR/CASE.json` and exit: for `wrk`
    /// (`benches/hot-path-wrk.sh`), on the state `--write-state` writes with the same sizes.
    #[arg(long)]
    write_bodies: Option<PathBuf>,
    /// Worker threads of the in-process server's runtime (`serve` has one per core).
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// Worker threads of the client's runtime.
    #[arg(long, default_value_t = 2)]
    client_threads: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.connections > 0, "--connections must be at least 1");
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");

    let t = Instant::now();
    let mut state = State::generate(args.pools, args.addresses, args.namespaces, args.variants);
    if let Some(dir) = &args.write_state {
        state.write(dir)?;
        eprintln!(
            "wrote the state ({} objects) to {}: serve it with `ipam-guard serve --dev --state-from {}`",
            state.object_count(),
            dir.display(),
            dir.display()
        );
        return Ok(());
    }
    let bodies = state.bodies(args.variants);
    if let Some(dir) = &args.write_bodies {
        std::fs::create_dir_all(dir)?;
        for case in Case::ALL {
            let body = bodies
                .iter()
                .find(|b| b.case == case)
                .context("a case without a body")?;
            std::fs::write(dir.join(format!("{}.json", case.name())), &body.bytes)?;
        }
        eprintln!("wrote one body per case to {}", dir.display());
        return Ok(());
    }
    let objects = state.object_count();
    let index = std::mem::take(&mut state.index);
    drop(state);
    eprintln!(
        "state: {} pools, {} addresses, {objects} objects indexed in {:.1} s",
        args.pools,
        args.addresses,
        t.elapsed().as_secs_f64()
    );
    let schedule = schedule(&bodies, &args)?;

    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.server_threads)
        .thread_name("server")
        .enable_all()
        .build()?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads)
        .thread_name("client")
        .enable_all()
        .build()?;

    // Kept alive until the end: the certificates live in it.
    let certs_dir = tempfile::tempdir()?;
    let (target, ca, mode) = match &args.url {
        Some(url) => {
            drop(index);
            let (addr, name) = parse_url(url)?;
            let ca = std::fs::read(args.cacert.as_ref().unwrap())
                .with_context(|| format!("--cacert {:?}", args.cacert))?;
            (Target { addr, name }, ca, format!("external server {url}"))
        }
        None => {
            let certs = dev::ensure(certs_dir.path())?;
            let ca = std::fs::read(&certs.ca_cert)?;
            let name = "localhost".to_string();
            if args.baseline {
                drop(index);
                let addr = server_rt.block_on(start_baseline(&certs.files))?;
                (
                    Target { addr, name },
                    ca,
                    "bare hyper + rustls baseline".into(),
                )
            } else {
                let view: Arc<dyn ClusterView> = Arc::new(Ledger::new(index));
                let admission = Admission::new(view, Options::default());
                // Logs as `serve` writes them (info and up), formatted but thrown away.
                let _ = tracing_subscriber::fmt()
                    .with_env_filter("info")
                    .with_writer(std::io::sink)
                    .try_init();
                support::check(&bodies, &admission);
                let addr = server_rt.block_on(start_server(&certs.files, admission))?;
                (Target { addr, name }, ca, "ipam-guard in-process".into())
            }
        }
    };
    let tls = client_tls(&ca, args.http2, args.new_connection_per_request)?;
    let rss_loaded = rss(None);

    let run = Run {
        target,
        tls,
        http2: args.http2,
        new_connection: args.new_connection_per_request,
        baseline: args.baseline,
        bodies,
        schedule,
        warmup: args.warmup,
        next: AtomicUsize::new(0),
        base: Instant::now(),
    };
    let run = Arc::new(run);
    let sampler = args.server_pid.map(|pid| {
        let run = run.clone();
        client_rt.spawn(sample_rss(pid, run))
    });
    let cpu_before = cpu(args.server_pid);
    let results = client_rt.block_on(drive(run.clone(), args.connections))?;
    let cpu_used = cpu_before
        .zip(cpu(args.server_pid))
        .map(|(a, b)| b.since(&a));
    let server_peak = match sampler {
        Some(task) => Some(client_rt.block_on(task)??),
        None => None,
    };

    report(&args, &mode, &run, results, rss_loaded, server_peak);
    if let Some(c) = cpu_used {
        // The machine is shared: what other processes took during the run is part of each figure.
        let others = c.busy.saturating_sub(c.own + c.server.unwrap_or(0));
        println!(
            "CPU during the run (of {} cores): machine busy {:.2}, this process {:.2}{}, other processes {:.2}",
            c.cores,
            c.share(c.busy),
            c.share(c.own),
            c.server
                .map(|t| format!(", server pid {:.2}", c.share(t)))
                .unwrap_or_default(),
            c.share(others),
        );
    }
    server_rt.shutdown_background();
    client_rt.shutdown_background();
    Ok(())
}

// === the mix ===

/// Body indices for every request (warm-up first), drawn by weight with a fixed seed.
fn schedule(bodies: &[Body], args: &Args) -> anyhow::Result<Vec<usize>> {
    let cases: Vec<Case> = match &args.only {
        Some(names) => names
            .split(',')
            .map(|name| match Case::ALL.iter().find(|c| c.name() == name) {
                Some(c) => Ok(*c),
                None => bail!(
                    "--only {name}: expected one or more of {}, comma-separated",
                    Case::ALL.map(Case::name).join(", ")
                ),
            })
            .collect::<anyhow::Result<_>>()?,
        None => Case::ALL.to_vec(),
    };
    let by_case: Vec<Vec<usize>> = cases
        .iter()
        .map(|c| {
            (0..bodies.len())
                .filter(|&i| bodies[i].case == *c)
                .collect()
        })
        .collect();
    let total_weight: u32 = cases.iter().map(|c| c.weight()).sum();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        // xorshift64*: enough to shuffle a mix, and no dependency.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    Ok((0..args.warmup + args.requests)
        .map(|_| {
            let mut w = (next() % u64::from(total_weight)) as u32;
            let slot = cases
                .iter()
                .position(|c| {
                    let hit = w < c.weight();
                    w = w.saturating_sub(c.weight());
                    hit
                })
                .unwrap_or(0);
            let list = &by_case[slot];
            list[(next() % list.len() as u64) as usize]
        })
        .collect())
}

// === servers ===

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// The real server, as `serve` builds it, on loopback ports chosen by the kernel.
async fn start_server(files: &CertFiles, admission: Admission) -> anyhow::Result<SocketAddr> {
    let mut config = Config::new(files.clone());
    config.listen = loopback().into();
    config.probe_listen = loopback().into();
    config.metrics_listen = loopback().into();
    config.shutdown_delay = Duration::ZERO;
    let server = Server::bind(config, admission, Registry::default()).await?;
    let addr = server.addrs().webhook;
    tokio::spawn(server.run(std::future::pending()));
    Ok(addr)
}

/// What the baseline answers every request with: an allowed review of the usual size.
const BASELINE_ANSWER: &[u8] = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":true,"uid":"00000000-0000-4000-8000-000000000000"}}"#;

/// The server's transport without the server: the same rustls settings (ring, TLS 1.3 and 1.2,
/// ALPN h2 and http/1.1), the same hyper builders and timers, a handshake in the connection's
/// task, the body read in full, and a constant answer in place of routing and `review`.
async fn start_baseline(files: &CertFiles) -> anyhow::Result<SocketAddr> {
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
    let listener = TcpListener::bind(loopback()).await?;
    let addr = listener.local_addr()?;

    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    builder.http2().timer(TokioTimer::new());
    let h1 = Arc::new(builder.clone().http1_only());
    let h2 = Arc::new(builder.http2_only());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
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
                    let _ = req.into_body().collect().await;
                    Response::builder()
                        .header(CONTENT_TYPE, "application/json")
                        .body(Full::new(Bytes::from_static(BASELINE_ANSWER)))
                });
                let _ = builder.serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    Ok(addr)
}

// === client ===

struct Target {
    addr: SocketAddr,
    /// TLS server name and `Host`.
    name: String,
}

fn parse_url(url: &str) -> anyhow::Result<(SocketAddr, String)> {
    let Some(rest) = url.strip_prefix("https://") else {
        bail!("--url {url}: expected https://HOST:PORT");
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']'),
        None => bail!("--url {url}: give the port"),
    };
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("--url {url}"))?
        .next()
        .with_context(|| format!("--url {url}: no address"))?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "--url {url}: loopback only ({addr} is not)"
    );
    Ok((addr, host.to_string()))
}

fn client_tls(
    ca_pem: &[u8],
    http2: bool,
    no_resumption: bool,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![if http2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    if no_resumption {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Arc::new(config))
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

struct Run {
    target: Target,
    tls: Arc<rustls::ClientConfig>,
    http2: bool,
    new_connection: bool,
    baseline: bool,
    bodies: Vec<Body>,
    schedule: Vec<usize>,
    warmup: usize,
    next: AtomicUsize,
    base: Instant,
}

/// One measured request.
struct Sample {
    case: Case,
    start: Duration,
    end: Duration,
    ok: bool,
}

impl Run {
    async fn connect(&self) -> anyhow::Result<Sender> {
        let tcp = TcpStream::connect(self.target.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::try_from(self.target.name.clone())?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await?;
        let io = TokioIo::new(tls);
        Ok(if self.http2 {
            let (sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
            tokio::spawn(conn);
            Sender::H2(sender)
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(conn);
            Sender::H1(sender)
        })
    }

    fn request(&self, i: usize, body: &Body) -> (Request<Full<Bytes>>, String) {
        let uid = format!("{}{i:012x}", &UID_PLACEHOLDER[..24]);
        let mut bytes = body.bytes.clone();
        bytes[body.uid_at..body.uid_at + uid.len()].copy_from_slice(uid.as_bytes());
        let uri = if self.http2 {
            format!(
                "https://{}:{}/validate",
                self.target.name,
                self.target.addr.port()
            )
        } else {
            "/validate".to_string()
        };
        let req = Request::post(uri)
            .header(
                HOST,
                format!("{}:{}", self.target.name, self.target.addr.port()),
            )
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(bytes)))
            .unwrap();
        (req, uid)
    }

    async fn send(
        sender: &mut Sender,
        req: Request<Full<Bytes>>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let resp = match sender {
            Sender::H1(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
            Sender::H2(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
        };
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// One connection's loop: take the next request number, send, check, record.
    async fn connection(self: Arc<Self>) -> Vec<Sample> {
        let mut samples = Vec::new();
        let mut sender: Option<Sender> = None;
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&b) = self.schedule.get(i) else {
                break;
            };
            let body = &self.bodies[b];
            let (req, uid) = self.request(i, body);
            let start = self.base.elapsed();
            let result = async {
                let s = match sender.as_mut() {
                    Some(s) => s,
                    None => sender.insert(self.connect().await?),
                };
                Self::send(s, req).await
            }
            .await;
            let end = self.base.elapsed();
            let ok = match &result {
                Ok((status, answer)) => {
                    *status == StatusCode::OK
                        && (self.baseline
                            || (support::find(answer, uid.as_bytes()).is_some()
                                && body.case.expect().matches(answer)))
                }
                Err(_) => false,
            };
            if result.is_err() || self.new_connection {
                sender = None;
            }
            if let (false, Err(e)) = (ok, &result) {
                if i < self.warmup + 3 || i.is_multiple_of(1000) {
                    eprintln!("request {i}: {e:#}");
                }
            }
            if i >= self.warmup {
                samples.push(Sample {
                    case: body.case,
                    start,
                    end,
                    ok,
                });
            }
        }
        samples
    }

    fn finished(&self) -> bool {
        self.next.load(Ordering::Relaxed) >= self.schedule.len()
    }
}

async fn drive(run: Arc<Run>, connections: usize) -> anyhow::Result<Vec<Sample>> {
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(run.clone().connection()))
        .collect();
    let mut all = Vec::with_capacity(run.schedule.len());
    for t in tasks {
        all.extend(t.await?);
    }
    Ok(all)
}

// === CPU ===

/// Clock ticks from /proc: the machine's busy and total time over all cores, this process's and
/// (when given) the server's user + system time.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    cores: usize,
    busy: u64,
    total: u64,
    own: u64,
    server: Option<u64>,
}

impl Cpu {
    fn since(&self, before: &Cpu) -> Cpu {
        Cpu {
            cores: self.cores,
            busy: self.busy - before.busy,
            total: self.total - before.total,
            own: self.own - before.own,
            server: self.server.zip(before.server).map(|(a, b)| a - b),
        }
    }

    /// Ticks as cores busy on average.
    fn share(&self, ticks: u64) -> f64 {
        ticks as f64 / self.total.max(1) as f64 * self.cores as f64
    }
}

fn cpu(server_pid: Option<u32>) -> Option<Cpu> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let mut lines = stat.lines();
    // cpu  user nice system idle iowait irq softirq steal …
    let all: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = all.iter().sum();
    let idle = all.get(3)? + all.get(4)?;
    let cores = lines.filter(|l| l.starts_with("cpu")).count();
    let ticks = |pid: &str| -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name: state is the first, utime and stime the 12th and 13th.
        let rest: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
        Some(rest.get(11)?.parse::<u64>().ok()? + rest.get(12)?.parse::<u64>().ok()?)
    };
    Some(Cpu {
        cores,
        busy: total - idle,
        total,
        own: ticks("self")?,
        server: server_pid.and_then(|p| ticks(&p.to_string())),
    })
}

// === memory ===

/// VmRSS and VmHWM (peak) in KiB of `pid`, or of this process.
fn rss(pid: Option<u32>) -> Option<(u64, u64)> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// (VmRSS before the run, peak VmRSS sampled during it, VmRSS after) of an external server.
async fn sample_rss(pid: u32, run: Arc<Run>) -> anyhow::Result<(u64, u64, u64)> {
    let (before, _) = rss(Some(pid)).with_context(|| format!("/proc/{pid}/status"))?;
    let mut peak = before;
    while !run.finished() {
        if let Some((now, _)) = rss(Some(pid)) {
            peak = peak.max(now);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (after, _) = rss(Some(pid)).unwrap_or((0, 0));
    Ok((before, peak.max(after), after))
}

// === report ===

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

fn line(label: &str, samples: &[&Sample]) -> String {
    let mut lat: Vec<u64> = samples
        .iter()
        .map(|s| (s.end - s.start).as_nanos() as u64)
        .collect();
    lat.sort_unstable();
    let errors = samples.iter().filter(|s| !s.ok).count();
    format!(
        "{label:<26} {:>7} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        samples.len(),
        errors,
        percentile(&lat, 50.0),
        percentile(&lat, 90.0),
        percentile(&lat, 99.0),
        percentile(&lat, 99.9),
        lat.last().copied().unwrap_or(0) as f64 / 1000.0,
    )
}

fn report(
    args: &Args,
    mode: &str,
    run: &Run,
    samples: Vec<Sample>,
    rss_loaded: Option<(u64, u64)>,
    server: Option<(u64, u64, u64)>,
) {
    let first = samples.iter().map(|s| s.start).min().unwrap_or_default();
    let last = samples.iter().map(|s| s.end).max().unwrap_or_default();
    let wall = (last - first).as_secs_f64();
    let errors = samples.iter().filter(|s| !s.ok).count();
    println!(
        "loadgen: {mode}; {} connection(s), {}, {}{}; {} pools, {} addresses; {} requests after {} warm-up",
        args.connections,
        if args.http2 { "h2" } else { "http/1.1" },
        if args.new_connection_per_request {
            "new connection per request"
        } else {
            "keep-alive"
        },
        args.only
            .as_deref()
            .map(|o| format!(", only {o}"))
            .unwrap_or_else(|| ", mixed cases".into()),
        args.pools,
        args.addresses,
        samples.len(),
        run.warmup,
    );
    println!(
        "throughput {:.0} reviews/s over {wall:.2} s; errors {errors}",
        samples.len() as f64 / wall
    );
    println!(
        "{:<26} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "latency (µs)", "n", "errors", "p50", "p90", "p99", "p99.9", "max"
    );
    println!("{}", line("all", &samples.iter().collect::<Vec<_>>()));
    if !args.baseline && args.only.is_none() {
        for case in Case::ALL {
            let of: Vec<&Sample> = samples.iter().filter(|s| s.case == case).collect();
            println!("{}", line(&format!("  {}", case.name()), &of));
        }
    }
    if let Some((loaded, hwm)) = rss_loaded {
        let (now, peak) = rss(None).unwrap_or((0, 0));
        println!(
            "this process (client + {}): VmRSS {:.1} MiB before the run (peak {:.1}), {:.1} MiB after (peak {:.1})",
            if args.url.is_some() { "no server" } else { "server" },
            loaded as f64 / 1024.0,
            hwm as f64 / 1024.0,
            now as f64 / 1024.0,
            peak as f64 / 1024.0,
        );
    }
    if let Some((before, peak, after)) = server {
        println!(
            "server pid {}: VmRSS {:.1} MiB before, {:.1} MiB peak during, {:.1} MiB after",
            args.server_pid.unwrap_or_default(),
            before as f64 / 1024.0,
            peak as f64 / 1024.0,
            after as f64 / 1024.0,
        );
    }
}
