//! The HTTPS transport in front of `Admission::review`: protocols, limits, probes, metrics.
//! Verdicts are not judged here: every webhook answer is compared with what `review` returns.

mod server_support;

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Version;
use ipam_guard::admission::Endpoint;
use ipam_guard::cluster::{ClusterView, StaticView, WatchHealth};
use ipam_guard::kinds::Kind;
use ipam_guard::server::{CertFiles, BODY_LIMIT};
use server_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const JSON: Option<&str> = Some("application/json");
/// Not an AdmissionReview: `review` answers it without touching any state.
const NOT_A_REVIEW: &[u8] = br#"{"kind":"NotAReview"}"#;

#[tokio::test]
async fn h1_and_h2_answer_exactly_what_review_answers() {
    let (server, ca, _dir) = start_default().await;
    let expected = server
        .admission
        .review_now(Endpoint::Validate, NOT_A_REVIEW);
    for (proto, alpn, version) in [
        (Proto::H1, &b"http/1.1"[..], Version::HTTP_11),
        (Proto::H2, &b"h2"[..], Version::HTTP_2),
    ] {
        let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
            .await
            .unwrap();
        assert_eq!(conn.alpn.as_deref(), Some(alpn));
        // Several requests on one connection: keep-alive (h1) and streams (h2) both work. The
        // API server calls `<path>?timeout=10s`: the query is not part of the path.
        for path in [
            "/validate",
            "/validate",
            "/mutate",
            "/validate?timeout=10s",
            "/mutate?timeout=30s",
        ] {
            let reply = conn.send(post(path, JSON, NOT_A_REVIEW)).await.unwrap();
            assert_eq!(reply.version, version);
            let endpoint = if path.starts_with("/mutate") {
                Endpoint::Mutate
            } else {
                Endpoint::Validate
            };
            let expected = server.admission.review_now(endpoint, NOT_A_REVIEW);
            assert_eq!(reply.status, expected.http_status, "{proto:?} {path}");
            assert_eq!(reply.body, expected.body, "{proto:?} {path}");
            assert_eq!(reply.headers["content-type"], "application/json");
        }
        // Each path reaches its own handler: a claim is patched by /mutate only.
        let claim = fixture("mutating/ipaddressclaim-create.json");
        for (path, endpoint) in [
            ("/mutate?timeout=10s", Endpoint::Mutate),
            ("/validate?timeout=10s", Endpoint::Validate),
        ] {
            let reply = conn.send(post(path, JSON, claim.clone())).await.unwrap();
            let expected = server.admission.review_now(endpoint, &claim);
            assert_eq!(reply.body, expected.body, "{proto:?} {path}");
            let patched = reply.json()["response"]["patch"].is_string();
            assert_eq!(patched, endpoint == Endpoint::Mutate, "{proto:?} {path}");
        }
    }
    assert!(
        expected.http_status >= 400,
        "a body that is not a review is an HTTP-level error"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_client_without_alpn_gets_http1() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open_with(server.addrs.webhook, client_config(&ca.der, &[]), Proto::H1)
        .await
        .unwrap();
    assert_eq!(conn.alpn, None);
    let reply = conn
        .send(post("/validate", JSON, NOT_A_REVIEW))
        .await
        .unwrap();
    assert_eq!(
        reply.status,
        server
            .admission
            .review_now(Endpoint::Validate, NOT_A_REVIEW)
            .http_status
    );
    server.stop().await;
}

#[tokio::test]
async fn body_up_to_7_mib_reaches_review_and_one_byte_more_is_413() {
    let (server, ca, _dir) = start_default().await;
    let at_limit = vec![b' '; BODY_LIMIT];
    let expected = server.admission.review_now(Endpoint::Validate, &at_limit);
    for proto in [Proto::H1, Proto::H2] {
        let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
            .await
            .unwrap();
        let reply = conn
            .send(post("/validate", JSON, at_limit.clone()))
            .await
            .unwrap();
        assert_eq!(
            reply.status, expected.http_status,
            "{proto:?}: at the limit"
        );
        assert_ne!(reply.status, 413);
    }
    // h2 lets the server answer before the upload ends without losing the answer.
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H2)
        .await
        .unwrap();
    let reply = conn
        .send(post("/validate", JSON, vec![b' '; BODY_LIMIT + 1]))
        .await
        .unwrap();
    assert_eq!(reply.status, 413);
    assert!(reply.json()["message"]
        .as_str()
        .unwrap()
        .contains("larger than"));
    assert_eq!(reply.headers["content-type"], "application/json");
    server.stop().await;
}

#[tokio::test]
async fn declared_content_length_over_the_limit_is_413_before_the_body_is_sent() {
    let (server, ca, _dir) = start_default().await;
    let tcp = tokio::net::TcpStream::connect(server.addrs.webhook)
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(client_config(&ca.der, &[b"http/1.1"]))
        .connect(name, tcp)
        .await
        .unwrap();
    let head = format!(
        "POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        BODY_LIMIT + 1
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + WAIT;
    while !String::from_utf8_lossy(&answer).contains("}") && Instant::now() < deadline {
        match tokio::time::timeout(WAIT, tls.read(&mut buf))
            .await
            .unwrap()
        {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#"{"message":"#), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn content_type_other_than_json_is_415() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    for ct in [
        Some("text/plain"),
        Some("application/yaml"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let reply = conn
            .send(post("/validate", ct, NOT_A_REVIEW))
            .await
            .unwrap();
        assert_eq!(reply.status, 415, "{ct:?}");
        assert!(
            reply.json()["message"]
                .as_str()
                .unwrap()
                .contains("application/json"),
            "{ct:?}"
        );
    }
    let expected = server
        .admission
        .review_now(Endpoint::Validate, NOT_A_REVIEW)
        .http_status;
    for ct in ["application/json; charset=utf-8", "Application/JSON"] {
        let reply = conn
            .send(post("/validate", Some(ct), NOT_A_REVIEW))
            .await
            .unwrap();
        assert_eq!(reply.status, expected, "{ct}");
    }
    server.stop().await;
}

#[tokio::test]
async fn other_methods_are_405_and_other_paths_404() {
    let (server, ca, _dir) = start_default().await;
    for proto in [Proto::H1, Proto::H2] {
        let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
            .await
            .unwrap();
        for method in ["GET", "PUT", "DELETE", "PATCH"] {
            let reply = conn
                .send(request(method, "/validate", JSON, ""))
                .await
                .unwrap();
            assert_eq!(reply.status, 405, "{proto:?} {method}");
            assert_eq!(reply.headers["allow"], "POST");
            assert!(reply.json()["message"].is_string());
        }
        // HEAD: the headers a GET gets, its length included, and no body.
        let get = conn
            .send(request("GET", "/mutate", JSON, ""))
            .await
            .unwrap();
        let head = conn
            .send(request("HEAD", "/mutate", JSON, ""))
            .await
            .unwrap();
        assert_eq!(head.status, 405, "{proto:?}");
        assert_eq!(head.headers["allow"], "POST");
        assert_eq!(head.headers["content-type"], "application/json");
        // The GET's message names its method, the HEAD's would name its own.
        let would_be = get.body.len() - "GET".len() + "HEAD".len();
        assert_eq!(
            head.headers["content-length"],
            would_be.to_string().as_str(),
            "{proto:?}"
        );
        assert!(head.body.is_empty(), "{proto:?}");
        for path in [
            "/admit",
            "/validate/",
            "/Validate",
            "/validate/x",
            "/",
            "//validate",
        ] {
            let reply = conn.send(post(path, JSON, NOT_A_REVIEW)).await.unwrap();
            assert_eq!(reply.status, 404, "{proto:?} {path}");
            assert!(reply.json()["message"].is_string());
            let head = conn.send(request("HEAD", path, JSON, "")).await.unwrap();
            assert_eq!(head.status, 404, "{proto:?} HEAD {path}");
            assert_eq!(
                head.headers["content-length"],
                reply.body.len().to_string().as_str()
            );
            assert!(head.body.is_empty(), "{proto:?} HEAD {path}");
        }
    }
    server.stop().await;
}

/// A view that has not finished its first list, holding a few objects.
struct Syncing(StaticView);

impl ClusterView for Syncing {
    fn read(&self) -> Box<dyn std::ops::Deref<Target = ipam_guard::index::Index> + '_> {
        self.0.read()
    }
    fn synced(&self) -> bool {
        false
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        vec![(Kind::InClusterIPPool, 2), (Kind::Metal3IPAddress, 5)]
    }
    fn watch_health(&self) -> Vec<WatchHealth> {
        vec![
            WatchHealth {
                kind: "InClusterIPPool".into(),
                healthy: true,
                last_event_age: Some(std::time::Duration::from_millis(1500)),
                lists: vec![("initial", 1)],
            },
            WatchHealth {
                kind: "IPAddress".into(),
                healthy: false,
                last_event_age: None,
                lists: vec![("initial", 1), ("expired", 3)],
            },
        ]
    }
    /// Reads only, as the static view it wraps.
    fn reserve(
        &self,
        f: &mut dyn FnMut(&ipam_guard::index::Index) -> Option<ipam_guard::model::Projection>,
    ) {
        self.0.reserve(f);
    }
    fn reserve_as(
        &self,
        caller: &ipam_guard::cluster::Caller,
        basis: &ipam_guard::cluster::Basis,
        f: &mut dyn FnMut(&ipam_guard::index::Index) -> Option<ipam_guard::model::Projection>,
    ) {
        self.0.reserve_as(caller, basis, f);
    }
}

#[tokio::test]
async fn readyz_fails_until_the_view_is_synced_while_healthz_passes() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let config = loopback_config(CertFiles::in_dir(dir.path()));
    let server = TestServer::start_with_view(config, Arc::new(Syncing(StaticView::empty()))).await;
    assert_eq!(
        http_get(server.addrs.probe, "/healthz").await.unwrap().0,
        200
    );
    let (status, reason) = http_get(server.addrs.probe, "/readyz").await.unwrap();
    assert_eq!(status, 503);
    assert!(reason.contains("not synced"), "{reason}");

    let metrics = server.metrics().await;
    assert_eq!(sample(&metrics, "ipam_guard_view_synced"), Some(0.0));
    let watch = |series: &str| sample(&metrics, series);
    assert_eq!(
        watch(r#"ipam_guard_view_watch_healthy{kind="InClusterIPPool"}"#),
        Some(1.0)
    );
    assert_eq!(
        watch(r#"ipam_guard_view_watch_healthy{kind="IPAddress"}"#),
        Some(0.0)
    );
    assert_eq!(
        watch(r#"ipam_guard_view_last_event_age_seconds{kind="InClusterIPPool"}"#),
        Some(1.5)
    );
    assert_eq!(
        watch(r#"ipam_guard_view_relists_total{kind="IPAddress",cause="expired"}"#),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &metrics,
            r#"ipam_guard_view_objects{kind="InClusterIPPool"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &metrics,
            r#"ipam_guard_view_objects{kind="IPAddress.ipam.metal3.io"}"#
        ),
        Some(5.0)
    );
    server.stop().await;

    let (server, _ca, _dir) = start_default().await;
    assert_eq!(
        http_get(server.addrs.probe, "/healthz").await.unwrap().0,
        200
    );
    assert_eq!(
        http_get(server.addrs.probe, "/readyz").await.unwrap().0,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn metrics_name_every_family_after_traffic() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    let review_status = conn
        .send(post("/validate", JSON, NOT_A_REVIEW))
        .await
        .unwrap()
        .status;
    conn.send(post("/validate", Some("text/plain"), NOT_A_REVIEW))
        .await
        .unwrap();
    conn.send(post("/mutate", JSON, NOT_A_REVIEW))
        .await
        .unwrap();

    let text = server.metrics().await;
    let code = |webhook: &str, code: u16| {
        sample(
            &text,
            &format!(
                r#"controller_runtime_webhook_requests_total{{webhook="{webhook}",code="{code}"}}"#
            ),
        )
    };
    assert_eq!(code("/validate", review_status), Some(1.0), "{text}");
    assert_eq!(code("/validate", 415), Some(1.0), "{text}");
    assert_eq!(code("/mutate", review_status), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"controller_runtime_webhook_latency_seconds_count{webhook="/validate"}"#
        ),
        Some(2.0)
    );
    assert!(text.contains(
        r#"controller_runtime_webhook_latency_seconds_bucket{le="0.00005",webhook="/validate"}"#
    ));
    assert_eq!(
        sample(
            &text,
            r#"controller_runtime_webhook_requests_in_flight{webhook="/validate"}"#
        ),
        Some(0.0)
    );
    let not_after = sample(&text, "ipam_guard_tls_certificate_not_after_seconds").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(not_after > now, "{not_after}");
    assert_eq!(
        sample(&text, "ipam_guard_tls_reload_errors_total"),
        Some(0.0)
    );
    assert_eq!(sample(&text, "ipam_guard_view_synced"), Some(1.0));
    assert!(!text.contains("_total_total"));
    assert!(text.ends_with("# EOF\n"));
    server.stop().await;
}

#[tokio::test]
async fn serves_on_ipv6_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("serves_on_ipv6_loopback: skipped: no IPv6 loopback on this machine");
        return;
    }
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.listen = "[::1]:0".parse().unwrap();
    config.probe_listen = "[::1]:0".parse().unwrap();
    let server = TestServer::start(config).await;
    assert!(server.addrs.webhook.is_ipv6());
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H2)
        .await
        .unwrap();
    let reply = conn
        .send(post("/validate", JSON, NOT_A_REVIEW))
        .await
        .unwrap();
    assert_eq!(
        reply.status,
        server
            .admission
            .review_now(Endpoint::Validate, NOT_A_REVIEW)
            .http_status
    );
    assert_eq!(
        http_get(server.addrs.probe, "/healthz").await.unwrap().0,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn unspecified_ipv6_listens_dual_stack() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("unspecified_ipv6_listens_dual_stack: skipped: no IPv6 on this machine");
        return;
    }
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.listen = "[::]:0".parse().unwrap();
    let server = TestServer::start(config).await;
    let port = server.addrs.webhook.port();
    for ip in ["127.0.0.1", "[::1]"] {
        let addr = format!("{ip}:{port}").parse().unwrap();
        let mut conn = Conn::open(addr, &ca.der, Proto::H1).await.unwrap();
        conn.send(post("/validate", JSON, NOT_A_REVIEW))
            .await
            .unwrap();
    }
    server.stop().await;
}

#[tokio::test]
async fn a_port_alone_listens_on_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.listen = ":0".parse().unwrap();
    let server = TestServer::start(config).await;
    let port = server.addrs.webhook.port();
    let mut families = vec!["127.0.0.1"];
    if server.addrs.webhook.is_ipv6() {
        families.push("[::1]");
    } else {
        eprintln!(
            "a_port_alone_listens_on_every_family: IPv6 part skipped: no IPv6 on this machine (bound {})",
            server.addrs.webhook
        );
    }
    for ip in families {
        let addr = format!("{ip}:{port}").parse().unwrap();
        let mut conn = Conn::open(addr, &ca.der, Proto::H1).await.unwrap();
        conn.send(post("/validate", JSON, NOT_A_REVIEW))
            .await
            .unwrap();
    }
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_never_finishes_the_handshake_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    let handshake_timeout = Duration::from_millis(300);
    config.handshake_timeout = handshake_timeout;
    let server = TestServer::start(config).await;

    let start = Instant::now();
    let mut tcp = tokio::net::TcpStream::connect(server.addrs.webhook)
        .await
        .unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(WAIT, tcp.read(&mut buf))
        .await
        .expect("server closes the connection");
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == ErrorKind::ConnectionReset)
    );
    // Not before the timeout: its timer starts when the server accepts, after `start`, so this
    // lower bound is exact and holds on any machine (there is no upper bound but WAIT's guard).
    assert!(
        start.elapsed() >= handshake_timeout,
        "{:?}",
        start.elapsed()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_408() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.body_read_timeout = Duration::from_millis(300);
    let server = TestServer::start(config).await;

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
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, tls.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#"{"message":"#), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_by_the_header_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.header_read_timeout = Duration::from_millis(300);
    let server = TestServer::start(config).await;

    let conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while !conn.is_closed() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(conn.is_closed(), "the server kept a silent connection open");
    server.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let mut config = loopback_config(CertFiles::in_dir(dir.path()));
    config.max_connections = 2;
    let server = TestServer::start(config).await;
    let addr = server.addrs.webhook;
    let open = "ipam_guard_connections{listener=\"webhook\"}";

    let first = Conn::open(addr, &ca.der, Proto::H1).await.unwrap();
    let _second = Conn::open(addr, &ca.der, Proto::H1).await.unwrap();
    assert_eq!(sample(&server.metrics().await, open), Some(2.0));
    let ca_der = ca.der.clone();
    let third = tokio::spawn(async move { Conn::open(addr, &ca_der, Proto::H1).await });
    // Seen from the kernel, not after a pause: the third connection has reached the listener
    // and waits in its accept queue, while the server holds its two and has taken no other.
    let deadline = Instant::now() + WAIT;
    while accept_queue(addr) != 1 {
        assert!(
            Instant::now() < deadline,
            "the third connection never waited in the accept queue"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(sample(&server.metrics().await, open), Some(2.0));
    assert!(
        !third.is_finished(),
        "a third connection was served beyond the cap of 2"
    );
    drop(first);
    let mut third = tokio::time::timeout(WAIT, third)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    third
        .send(post("/validate", JSON, NOT_A_REVIEW))
        .await
        .unwrap();
    assert_eq!(accept_queue(addr), 0);
    assert_eq!(sample(&server.metrics().await, open), Some(2.0));
    server.stop().await;
}

/// Connections the kernel holds for `listener` that were not accepted yet: a listening socket's
/// `rx_queue` in /proc/net/tcp (IPv4 loopback here).
fn accept_queue(listener: std::net::SocketAddr) -> u64 {
    let std::net::IpAddr::V4(ip) = listener.ip() else {
        panic!("an IPv4 listener expected, got {listener}");
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(ip.octets()),
        listener.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp (Linux)");
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(1) == Some(&local.as_str()) && f.get(3) == Some(&"0A"))
        .and_then(|f| f.get(4)?.split_once(':').map(|(_, rx)| rx.to_string()))
        .map(|rx| u64::from_str_radix(&rx, 16).expect("a hex queue length"))
        .unwrap_or_else(|| panic!("no listening socket {local} in /proc/net/tcp"))
}
