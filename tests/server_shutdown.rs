//! Graceful shutdown, proven on the real binary with a real SIGTERM, plus `serve --dev` as a
//! developer runs it from a fresh clone.

mod server_support;

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::StaticView;
use ipam_guard::server::CertFiles;
use rustls::pki_types::CertificateDer;
use server_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NOT_A_REVIEW: &[u8] = br#"{"kind":"NotAReview"}"#;

fn expected_status(body: &[u8]) -> u16 {
    Admission::new(Arc::new(StaticView::empty()), Default::default())
        .review_now(Endpoint::Validate, body)
        .http_status
}

/// The payloads are read through `Debug` in failure messages.
#[allow(dead_code)]
#[derive(Debug)]
enum Outcome {
    Answered,
    ConnectFailed(String),
    RequestFailed(String),
    WrongStatus(u16),
}

#[derive(Debug)]
struct Record {
    /// When the request (or the connection opened for it) started, from the test's start.
    at: Duration,
    new_connection: bool,
    outcome: Outcome,
}

/// Posts until `stop`, reconnecting when the server says `Connection: close` or a connection
/// fails, as any HTTP client would.
async fn worker(
    addr: SocketAddr,
    ca: CertificateDer<'static>,
    proto: Proto,
    fresh: bool,
    origin: Instant,
    stop: Arc<std::sync::atomic::AtomicBool>,
    answered: Arc<std::sync::atomic::AtomicUsize>,
) -> Vec<Record> {
    let expected = expected_status(NOT_A_REVIEW);
    let mut records = Vec::new();
    let mut conn: Option<Conn> = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && origin.elapsed() < WAIT * 2 {
        let at = origin.elapsed();
        let new_connection = fresh || conn.is_none();
        if new_connection {
            match Conn::open(addr, &ca, proto).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    records.push(Record {
                        at,
                        new_connection,
                        outcome: Outcome::ConnectFailed(e.to_string()),
                    });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        }
        let c = conn.as_mut().unwrap();
        let outcome = match c
            .send(post("/validate", Some("application/json"), NOT_A_REVIEW))
            .await
        {
            Ok(reply) if reply.status == expected => {
                if reply
                    .headers
                    .get("connection")
                    .is_some_and(|v| v == "close")
                {
                    conn = None;
                }
                answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Outcome::Answered
            }
            Ok(reply) => Outcome::WrongStatus(reply.status),
            Err(e) => {
                conn = None;
                Outcome::RequestFailed(e.to_string())
            }
        };
        records.push(Record {
            at,
            new_connection,
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_loses_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(1500);
    let mut served = serve_dev(dir.path(), &["--shutdown-delay", "1500ms"]).await;
    served.wait_ready().await;

    let origin = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kinds = [
        (Proto::H1, false),
        (Proto::H2, false),
        (Proto::H1, true),
        (Proto::H2, true),
    ];
    let answered: Vec<_> = kinds
        .iter()
        .map(|_| Arc::new(std::sync::atomic::AtomicUsize::new(0)))
        .collect();
    let workers: Vec<_> = kinds
        .into_iter()
        .zip(&answered)
        .map(|((proto, fresh), answered)| {
            tokio::spawn(worker(
                served.webhook,
                served.ca.clone(),
                proto,
                fresh,
                origin,
                stop.clone(),
                answered.clone(),
            ))
        })
        .collect();
    // The signal comes once every kind of connection has been answered a few times: load is
    // under way, seen rather than assumed after some time.
    let count =
        |a: &Arc<std::sync::atomic::AtomicUsize>| a.load(std::sync::atomic::Ordering::Relaxed);
    while !answered.iter().all(|a| count(a) >= 5) {
        assert!(
            origin.elapsed() < WAIT,
            "load never got going: {:?} answered",
            answered.iter().map(count).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let term_at = origin.elapsed();
    served.signal("TERM");
    // /readyz turns false at once, while the webhook keeps answering.
    let flipped = loop {
        let (status, _) = http_get(served.probe, "/readyz").await.unwrap();
        if status == 503 {
            break origin.elapsed() - term_at;
        }
        // It must fail while the webhook still accepts (the delay), so the API server's endpoint
        // goes first.
        assert!(
            origin.elapsed() - term_at < delay,
            "/readyz still passes at the end of the {delay:?} delay"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let status = served.exit(delay + WAIT).await;
    let exited = origin.elapsed() - term_at;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut records = Vec::new();
    for w in workers {
        records.extend(tokio::time::timeout(WAIT * 3, w).await.unwrap().unwrap());
    }

    assert!(
        status.success(),
        "exit {status:?}; logs:\n{}",
        served.logs()
    );
    assert!(
        exited >= delay,
        "exited {exited:?} after SIGTERM, before the {delay:?} delay"
    );
    let stop_at = term_at + delay;
    // Requests that started before accepting stopped (less a margin for a connection that
    // was accepted but whose request had not been read when draining began) all succeed.
    let margin = Duration::from_millis(200);
    let must_succeed: Vec<_> = records.iter().filter(|r| r.at + margin < stop_at).collect();
    let lost: Vec<_> = must_succeed
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Answered))
        .collect();
    assert!(lost.is_empty(), "lost before the delay ended: {lost:#?}");
    let before = must_succeed.iter().filter(|r| r.at < term_at).count();
    let during = must_succeed.len() - before;
    assert!(
        before > 10 && during > 10,
        "too little load: {before} before SIGTERM, {during} during the delay"
    );
    // Whatever got an answer got the right one.
    let wrong: Vec<_> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::WrongStatus(_)))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    // After the delay no new connection is accepted.
    let late: Vec<_> = records
        .iter()
        .filter(|r| {
            r.new_connection && r.at > stop_at + margin && matches!(r.outcome, Outcome::Answered)
        })
        .collect();
    assert!(
        late.is_empty(),
        "new connections served after the delay: {late:#?}"
    );
    eprintln!(
        "shutdown: {before} answered before SIGTERM, {during} during the delay; /readyz false after {flipped:?}; exit after {exited:?}; {} requests after the delay failed as expected",
        records.iter().filter(|r| r.at + margin >= stop_at && !matches!(r.outcome, Outcome::Answered)).count()
    );
    let logs = served.logs();
    assert!(logs.contains("shutdown signal received"), "{logs}");
    assert!(logs.contains("stopped"), "{logs}");
}

#[tokio::test]
async fn a_request_in_progress_when_draining_starts_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(500);
    let mut served = serve_dev(dir.path(), &["--shutdown-delay", "500ms"]).await;
    served.wait_ready().await;

    let body = format!(
        r#"{{"kind":"NotAReview","padding":"{}"}}"#,
        "x".repeat(2000)
    );
    let (first, rest) = body.as_bytes().split_at(1000);
    let tcp = tokio::net::TcpStream::connect(served.webhook)
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(client_config(&served.ca, &[b"http/1.1"]))
        .connect(name, tcp)
        .await
        .unwrap();
    let head = format!(
        "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(first).await.unwrap();
    tls.flush().await.unwrap();
    // In progress once the handler counts it (it waits there for the rest of the body).
    let in_flight = "controller_runtime_webhook_requests_in_flight{webhook=\"/validate\"}";
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, metrics) = http_get(served.metrics, "/metrics").await.unwrap();
        if sample(&metrics, in_flight) == Some(1.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the request never reached the handler"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let term_at = Instant::now();
    served.signal("TERM");
    // Accepting stops once the delay is over: seen as the first refused connection, not
    // waited out.
    while Conn::open(served.webhook, &served.ca, Proto::H1)
        .await
        .is_ok()
    {
        assert!(
            term_at.elapsed() < delay + WAIT,
            "still accepting long after the delay"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        term_at.elapsed() >= delay,
        "accepting stopped {:?} after SIGTERM, before the {delay:?} delay",
        term_at.elapsed()
    );
    tls.write_all(rest).await.unwrap();
    tls.flush().await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, tls.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    let expected = expected_status(body.as_bytes());
    assert!(
        answer.starts_with(&format!("HTTP/1.1 {expected} ")),
        "{answer}"
    );
    let status = served.exit(WAIT).await;
    assert!(
        status.success(),
        "exit {status:?}; logs:\n{}",
        served.logs()
    );
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed_when_draining() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    // Timers far beyond the stop guard (`TestServer::stop`): an idle connection left to them
    // would hold the drain, and the stop would fail, not merely take longer.
    config.drain_timeout = Duration::from_secs(3600);
    config.header_read_timeout = Duration::from_secs(3600);
    let server = TestServer::start(config).await;
    let mut h1 = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    let mut h2 = Conn::open(server.addrs.webhook, &ca.der, Proto::H2)
        .await
        .unwrap();
    for conn in [&mut h1, &mut h2] {
        conn.send(post("/validate", Some("application/json"), NOT_A_REVIEW))
            .await
            .unwrap();
    }
    server.stop().await;
    let deadline = Instant::now() + WAIT;
    while !(h1.is_closed() && h2.is_closed()) {
        assert!(Instant::now() < deadline, "idle connections left open");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn drain_gives_up_after_the_drain_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.drain_timeout = Duration::from_millis(500);
    let server = TestServer::start(config).await;
    // A request whose body never finishes.
    let tcp = tokio::net::TcpStream::connect(server.addrs.webhook)
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(client_config(&ca.der, &[b"http/1.1"]))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.write_all(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    tls.flush().await.unwrap();
    // In progress once the handler counts it: it waits there for the rest of the body.
    let in_flight = "controller_runtime_webhook_requests_in_flight{webhook=\"/validate\"}";
    let deadline = Instant::now() + WAIT;
    while sample(&server.metrics().await, in_flight) != Some(1.0) {
        assert!(
            Instant::now() < deadline,
            "the request never reached the handler"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let start = Instant::now();
    // The body never comes, so the stop returns (within its guard) only by giving up on it; and
    // not before the drain timeout.
    server.stop().await;
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(500), "{took:?}");
    drop(tls);
}

#[tokio::test]
async fn dev_makes_certificates_once_and_prints_a_curl_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_dev(dir.path(), &["--shutdown-delay", "0s"]).await;
    let banner = served.banner.join("\n");
    assert!(banner.contains("(made now)"), "{banner}");
    let ca_path = std::fs::canonicalize(dir.path().join("ca.crt")).unwrap();
    let port = served.webhook.port();
    let curl = format!(
        "curl --cacert {} -H 'Content-Type: application/json' --data-binary @- https://localhost:{port}/validate <<'EOF'",
        ca_path.display()
    );
    assert!(banner.contains(&curl), "{banner}");
    assert!(
        banner.contains("judging against no cluster: an empty view"),
        "{banner}"
    );
    // The printed command works as printed, from any directory.
    let start = served
        .banner
        .iter()
        .position(|l| l.trim_start().starts_with("curl "))
        .unwrap();
    let command = served.banner[start..].join("\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&command)
        .current_dir(elsewhere.path())
        .output()
        .expect("bash runs");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {command}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    // The CA printed is the one that verifies the server as `localhost`.
    let conn = Conn::open(served.webhook, &served.ca, Proto::H1).await;
    assert!(conn.is_ok(), "{:?}", conn.err());
    assert_eq!(http_get(served.probe, "/readyz").await.unwrap().0, 200);
    assert_eq!(http_get(served.metrics, "/metrics").await.unwrap().0, 200);
    served.signal("INT");
    assert!(served.exit(WAIT).await.success());

    let tls_crt = std::fs::read(dir.path().join("tls.crt")).unwrap();
    let mut again = serve_dev(dir.path(), &["--shutdown-delay", "0s"]).await;
    assert!(
        again.banner.join("\n").contains("(reused)"),
        "{:#?}",
        again.banner
    );
    assert_eq!(std::fs::read(dir.path().join("tls.crt")).unwrap(), tls_crt);
    again.signal("TERM");
    assert!(again.exit(WAIT).await.success());
}

#[tokio::test]
async fn a_busy_port_fails_naming_the_flag() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--listen", "--probe-listen", "--metrics-listen"] {
        let mut args = vec![
            "serve",
            "--dev",
            "--listen",
            "127.0.0.1:0",
            "--probe-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ];
        let i = args.iter().position(|a| *a == flag).unwrap();
        args[i + 1] = &addr;
        let out = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
                .args(&args)
                .arg("--cert-dir")
                .arg(dir.path())
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains(&addr),
            "{flag}: {stderr}"
        );
    }
    drop(busy);
}

#[tokio::test]
async fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_dev(
        dir.path(),
        &["--shutdown-delay", "0s", "--log-format", "json"],
    )
    .await;
    served.wait_ready().await;
    let mut conn = Conn::open(served.webhook, &served.ca, Proto::H1)
        .await
        .unwrap();
    conn.send(post("/validate", Some("application/json"), NOT_A_REVIEW))
        .await
        .unwrap();
    served.signal("TERM");
    assert!(served.exit(WAIT).await.success());
    let logs = served.logs();
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let serving = lines
        .iter()
        .find(|l| l["message"] == "serving")
        .unwrap_or_else(|| panic!("{logs}"));
    assert_eq!(serving["level"], "INFO");
    assert_eq!(serving["webhook"], served.webhook.to_string());
    assert!(lines.iter().any(|l| l["message"] == "stopped"), "{logs}");
}

/// Ctrl-C on `serve --dev` ends it at once (nothing routes traffic away from a laptop); the
/// shutdown delay is for SIGTERM, which `sigterm_under_load_loses_no_request` proves still waits.
#[tokio::test]
async fn ctrl_c_under_dev_skips_the_shutdown_delay() {
    let dir = tempfile::tempdir().unwrap();
    // A delay no test waits out: exiting within WAIT proves it was skipped.
    let mut served = serve_dev(dir.path(), &["--shutdown-delay", "1h"]).await;
    served.wait_ready().await;
    served.signal("INT");
    assert!(served.exit(WAIT).await.success(), "{}", served.logs());
    assert!(
        served
            .logs()
            .contains("SIGINT under --dev: exiting without the shutdown delay"),
        "{}",
        served.logs()
    );
}
