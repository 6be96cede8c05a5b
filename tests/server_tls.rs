//! Serving certificates: key formats, chains, refusal of bad pairs, rotation without a restart.

mod server_support;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipam_guard::admission::{Admission, Endpoint};
use ipam_guard::cluster::StaticView;
use ipam_guard::server::{CertError, CertFiles, Server, ServerError};
use prometheus_client::registry::Registry;
use rustls::pki_types::CertificateDer;
use server_support::*;

const NOT_A_REVIEW: &[u8] = br#"{"kind":"NotAReview"}"#;

fn expected_status() -> u16 {
    Admission::new(Arc::new(StaticView::empty()), Default::default())
        .review_now(Endpoint::Validate, NOT_A_REVIEW)
        .http_status
}

#[tokio::test]
async fn serves_keys_in_pkcs8_sec1_and_pkcs1() {
    for format in [KeyFormat::Pkcs8, KeyFormat::Sec1, KeyFormat::Pkcs1] {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("test CA");
        write_pair(dir.path(), &ca, format, "serving", &[]);
        let header = std::fs::read_to_string(dir.path().join("tls.key")).unwrap();
        let label = match format {
            KeyFormat::Pkcs8 => "-----BEGIN PRIVATE KEY-----",
            KeyFormat::Sec1 => "-----BEGIN EC PRIVATE KEY-----",
            KeyFormat::Pkcs1 => "-----BEGIN RSA PRIVATE KEY-----",
        };
        assert!(header.starts_with(label), "{format:?}: {header}");

        let server = TestServer::start(loopback_config(CertFiles::in_dir(dir.path()))).await;
        for proto in [Proto::H1, Proto::H2] {
            let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
                .await
                .unwrap();
            assert_eq!(
                conn.peer_cert,
                leaf_der(&dir.path().join("tls.crt")),
                "{format:?}"
            );
            let reply = conn
                .send(post("/validate", Some("application/json"), NOT_A_REVIEW))
                .await
                .unwrap();
            assert_eq!(reply.status, expected_status(), "{format:?} {proto:?}");
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn serves_the_chain_in_tls_crt() {
    let root = TestCa::new("root CA");
    let intermediate = root.intermediate("intermediate CA");
    let dir = tempfile::tempdir().unwrap();
    write_pair(
        dir.path(),
        &intermediate,
        KeyFormat::Sec1,
        "serving",
        &[&intermediate.pem],
    );
    let server = TestServer::start(loopback_config(CertFiles::in_dir(dir.path()))).await;
    // The client trusts the root only: the handshake needs the intermediate from the server.
    let conn = Conn::open(server.addrs.webhook, &root.der, Proto::H1).await;
    assert!(conn.is_ok(), "{:?}", conn.err());
    server.stop().await;

    // Without the intermediate, the same client refuses: the chain above was really served.
    write_pair(dir.path(), &intermediate, KeyFormat::Sec1, "serving", &[]);
    let server = TestServer::start(loopback_config(CertFiles::in_dir(dir.path()))).await;
    assert!(Conn::open(server.addrs.webhook, &root.der, Proto::H1)
        .await
        .is_err());
    server.stop().await;
}

async fn bind_error(files: CertFiles) -> ServerError {
    let admission = Admission::new(Arc::new(StaticView::empty()), Default::default());
    match Server::bind(loopback_config(files), admission, Registry::default()).await {
        Ok(_) => panic!("the server started with unusable certificate files"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn unusable_files_at_startup_are_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = CertFiles::in_dir(dir.path());
    let e = bind_error(files.clone()).await;
    assert!(
        matches!(e, ServerError::Certificate(CertError::Read { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("tls.crt"), "{e}");

    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let crt = std::fs::read(&files.cert).unwrap();
    std::fs::write(&files.key, b"not a key").unwrap();
    let e = bind_error(files.clone()).await;
    assert!(
        matches!(e, ServerError::Certificate(CertError::NoKey { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("tls.key"), "{e}");

    // A key from another pair.
    std::fs::write(&files.key, ServingKey::new(KeyFormat::Pkcs8).pem).unwrap();
    let e = bind_error(files.clone()).await;
    assert!(
        matches!(e, ServerError::Certificate(CertError::Pair { .. })),
        "{e}"
    );

    std::fs::write(
        &files.cert,
        b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = bind_error(files.clone()).await;
    assert!(
        matches!(e, ServerError::Certificate(CertError::Certificate { .. })),
        "{e}"
    );
    std::fs::write(&files.cert, crt).unwrap();
}

/// A Secret volume as the kubelet writes it: `tls.crt -> ..data/tls.crt`,
/// `..data -> ..<timestamp>`, updated by an atomic rename of a new `..data` link.
struct SecretVolume<'a> {
    dir: &'a Path,
    generation: u32,
}

impl<'a> SecretVolume<'a> {
    fn new(dir: &'a Path, ca: &TestCa, cn: &str, not_after: i64) -> SecretVolume<'a> {
        let mut volume = SecretVolume { dir, generation: 0 };
        volume.update(ca, cn, not_after);
        symlink("..data/tls.crt", dir.join("tls.crt")).unwrap();
        symlink("..data/tls.key", dir.join("tls.key")).unwrap();
        volume
    }

    fn update(&mut self, ca: &TestCa, cn: &str, not_after: i64) {
        self.generation += 1;
        let name = format!(
            "..2026_11_01_00_00_0{}.{}",
            self.generation,
            1000 + self.generation
        );
        let data = self.dir.join(&name);
        std::fs::create_dir(&data).unwrap();
        let key = ServingKey::new(KeyFormat::Sec1);
        std::fs::write(
            data.join("tls.crt"),
            ca.leaf_until(&key, cn, Some(not_after)),
        )
        .unwrap();
        std::fs::write(data.join("tls.key"), &key.pem).unwrap();
        let tmp = self.dir.join("..data_tmp");
        symlink(&name, &tmp).unwrap();
        let old = std::fs::read_link(self.dir.join("..data")).ok();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
        if let Some(old) = old {
            std::fs::remove_dir_all(self.dir.join(old)).unwrap();
        }
    }
}

/// Opens new connections until one presents `want`, within `WAIT`.
async fn wait_for_cert(
    addr: std::net::SocketAddr,
    ca: &TestCa,
    want: &CertificateDer<'static>,
) -> Duration {
    let start = Instant::now();
    while start.elapsed() < WAIT {
        let conn = Conn::open(addr, &ca.der, Proto::H1).await.unwrap();
        if &conn.peer_cert == want {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("new connections never saw the rotated certificate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_secret_rotation_under_load_loses_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    let first_not_after = 4_000_000_000;
    let second_not_after = 4_100_000_000;
    let mut volume = SecretVolume::new(dir.path(), &ca, "first", first_not_after);
    let files = CertFiles::in_dir(dir.path());
    let first = leaf_der(&files.cert);
    let server = TestServer::start(loopback_config(files.clone())).await;
    let metrics = server.metrics().await;
    assert_eq!(
        sample(&metrics, "ipam_guard_tls_certificate_not_after_seconds"),
        Some(first_not_after as f64)
    );

    let status = expected_status();
    let load = Load::start(
        server.addrs.webhook,
        &ca.der,
        status,
        NOT_A_REVIEW,
        &[
            (Proto::H1, false),
            (Proto::H2, false),
            (Proto::H1, true),
            (Proto::H2, true),
        ],
    );
    // Every kind of connection is answered with the first certificate before the rotation.
    load.wait_each_answered(5).await;
    volume.update(&ca, "second", second_not_after);
    let second = leaf_der(&files.cert);
    assert_ne!(first, second);
    let took = wait_for_cert(server.addrs.webhook, &ca, &second).await;
    // And after it: fresh connections shake hands with the second, open ones carry on.
    load.wait_each_answered(5).await;
    let stats = load.finish().await;
    eprintln!(
        "rotation: {} requests answered, new certificate seen after {took:?}",
        stats.ok
    );
    assert!(
        stats.failed.is_empty(),
        "{} failed: {:?}",
        stats.failed.len(),
        stats.failed
    );
    assert!(
        stats.ok > 20,
        "too little load to prove anything: {}",
        stats.ok
    );
    let metrics = server.metrics().await;
    assert_eq!(
        sample(&metrics, "ipam_guard_tls_certificate_not_after_seconds"),
        Some(second_not_after as f64)
    );
    assert_eq!(
        sample(&metrics, "ipam_guard_tls_reload_errors_total"),
        Some(0.0)
    );
    server.stop().await;
}

#[tokio::test]
async fn a_mismatched_pair_is_refused_and_the_old_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "first", &[]);
    let files = CertFiles::in_dir(dir.path());
    let first = leaf_der(&files.cert);
    let server = TestServer::start(loopback_config(files.clone())).await;

    // A new certificate next to a key that is not its own, written in place.
    let new_key = ServingKey::new(KeyFormat::Pkcs8);
    std::fs::write(&files.cert, ca.leaf(&new_key, "second")).unwrap();
    std::fs::write(&files.key, ServingKey::new(KeyFormat::Pkcs8).pem).unwrap();
    let errors = wait_for_errors(&server, 1.0).await;
    assert_eq!(errors, 1.0);
    let conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H2)
        .await
        .unwrap();
    assert_eq!(conn.peer_cert, first, "the refused pair was served");
    // Reported once per episode, not once per poll: `tls::refusal_tests` drives the poller's
    // state machine poll by poll; the count below stays exact through the next episode.

    // Files that vanish are refused the same way.
    std::fs::remove_file(&files.key).unwrap();
    assert_eq!(wait_for_errors(&server, 2.0).await, 2.0);
    let conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    assert_eq!(conn.peer_cert, first);

    // The matching key arrives: the new pair is served.
    std::fs::write(&files.key, &new_key.pem).unwrap();
    let second = leaf_der(&files.cert);
    wait_for_cert(server.addrs.webhook, &ca, &second).await;
    let metrics = server.metrics().await;
    assert_eq!(
        sample(&metrics, "ipam_guard_tls_reload_errors_total"),
        Some(2.0)
    );
    server.stop().await;
}

/// Waits (bounded) until the reload error counter reaches `want`; returns what it read last.
async fn wait_for_errors(server: &TestServer, want: f64) -> f64 {
    let start = Instant::now();
    loop {
        let metrics = server.metrics().await;
        let errors = sample(&metrics, "ipam_guard_tls_reload_errors_total").unwrap();
        if errors >= want || start.elapsed() > WAIT {
            return errors;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn speaks_tls_1_2_and_1_3() {
    let (server, ca, _dir) = start_default().await;
    for (version, name) in [
        (&rustls::version::TLS12, "TLS 1.2"),
        (&rustls::version::TLS13, "TLS 1.3"),
    ] {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der.clone()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut conn = Conn::open_with(server.addrs.webhook, Arc::new(config), Proto::H1)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let reply = conn
            .send(post("/validate", Some("application/json"), NOT_A_REVIEW))
            .await
            .unwrap();
        assert_eq!(reply.status, expected_status(), "{name}");
    }
    server.stop().await;
}
