//! `--client-ca-file`, `--client-cn`, `--client-san`: over real TLS, only a caller holding an
//! accepted client certificate gets an HTTP answer; everyone else fails in the handshake, before a
//! request exists.

mod server_support;

use std::sync::Arc;
use std::time::Instant;

use ipam_guard::admission::Admission;
use ipam_guard::cluster::StaticView;
use ipam_guard::server::{CertError, CertFiles, ClientAuth, Server, ServerError};
use prometheus_client::registry::Registry;
use server_support::*;

const NOT_A_REVIEW: &[u8] = br#"{"kind":"NotAReview"}"#;

struct Setup {
    _dir: tempfile::TempDir,
    serving_ca: TestCa,
    ca_file: std::path::PathBuf,
    files: CertFiles,
}

fn setup(client_ca: &TestCa) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let serving_ca = TestCa::new("serving CA");
    write_pair(dir.path(), &serving_ca, KeyFormat::Pkcs8, "serving", &[]);
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &client_ca.pem).unwrap();
    Setup {
        files: CertFiles::in_dir(dir.path()),
        _dir: dir,
        serving_ca,
        ca_file,
    }
}

async fn start(s: &Setup, cns: &[&str], sans: &[&str]) -> TestServer {
    let mut config = loopback_config(s.files.clone());
    config.client_auth = Some(ClientAuth {
        ca_file: s.ca_file.clone(),
        allowed_cns: cns.iter().map(|c| c.to_string()).collect(),
        allowed_sans: sans.iter().map(|c| c.to_string()).collect(),
    });
    TestServer::start(config).await
}

/// The HTTP status of one request, or why no HTTP answer came.
async fn call(
    server: &TestServer,
    s: &Setup,
    cert: Option<&ClientCert>,
    proto: Proto,
) -> Result<u16, String> {
    let alpn: &[&[u8]] = match proto {
        Proto::H1 => &[b"http/1.1"],
        Proto::H2 => &[b"h2"],
    };
    let config = match cert {
        Some(cert) => client_config_with_cert(&s.serving_ca.der, alpn, cert),
        None => client_config(&s.serving_ca.der, alpn),
    };
    // Under TLS 1.3 the client finishes its side first and learns of the refusal on its next
    // read, so a refusal may show at connect or at the first request.
    let mut conn = Conn::open_with(server.addrs.webhook, config, proto)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    conn.send(post("/validate", Some("application/json"), NOT_A_REVIEW))
        .await
        .map(|r| r.status)
        .map_err(|e| format!("request: {e}"))
}

async fn refused(server: &TestServer, s: &Setup, cert: Option<&ClientCert>) {
    for proto in [Proto::H1, Proto::H2] {
        let got = call(server, s, cert, proto).await;
        assert!(got.is_err(), "{proto:?}: answered {got:?}");
    }
}

async fn answered(server: &TestServer, s: &Setup, cert: &ClientCert) {
    for proto in [Proto::H1, Proto::H2] {
        assert_eq!(
            call(server, s, Some(cert), proto).await,
            Ok(400),
            "{proto:?}"
        );
    }
}

#[tokio::test]
async fn without_a_client_certificate_the_handshake_fails() {
    let client_ca = TestCa::new("apiserver client CA");
    let s = setup(&client_ca);
    let server = start(&s, &[], &[]).await;
    refused(&server, &s, None).await;
    // The same server answers a caller with a certificate from its CA (no allow-lists: any name).
    answered(&server, &s, &client_ca.client("anyone", &[])).await;
    server.stop().await;
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let client_ca = TestCa::new("apiserver client CA");
    let other = TestCa::new("another CA");
    let s = setup(&client_ca);
    let server = start(&s, &["kube-apiserver"], &[]).await;
    refused(&server, &s, Some(&other.client("kube-apiserver", &[]))).await;
    // The serving CA is not the client CA either.
    refused(
        &server,
        &s,
        Some(&s.serving_ca.client("kube-apiserver", &[])),
    )
    .await;
    // The right CA, but a serving certificate (server auth usage only, like the webhook's own
    // from the same cert-manager CA): not a client certificate.
    let key = ServingKey::new(KeyFormat::Pkcs8);
    let serving = ClientCert {
        cert_pem: client_ca.leaf(&key, "kube-apiserver"),
        key_pem: key.pem.clone(),
    };
    refused(&server, &s, Some(&serving)).await;
    answered(&server, &s, &client_ca.client("kube-apiserver", &[])).await;
    server.stop().await;
}

#[tokio::test]
async fn only_names_on_the_allow_lists_are_served() {
    let client_ca = TestCa::new("apiserver client CA");
    let s = setup(&client_ca);
    let server = start(&s, &["kube-apiserver"], &["apiserver.ipam-guard.local"]).await;
    // Wrong CN and wrong SAN.
    refused(
        &server,
        &s,
        Some(&client_ca.client("someone", &["other.local"])),
    )
    .await;
    // CN matches.
    answered(&server, &s, &client_ca.client("kube-apiserver", &[])).await;
    // SAN matches (any letter case for DNS names), CN does not.
    answered(
        &server,
        &s,
        &client_ca.client("someone", &["other.local", "APIServer.ipam-guard.local"]),
    )
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_rotated_client_ca_is_used_without_a_restart() {
    let first = TestCa::new("first client CA");
    let second = TestCa::new("second client CA");
    let s = setup(&first);
    let server = start(&s, &["kube-apiserver"], &[]).await;
    let old = first.client("kube-apiserver", &[]);
    let new = second.client("kube-apiserver", &[]);
    answered(&server, &s, &old).await;
    refused(&server, &s, Some(&new)).await;

    // A file that is not a CA is refused and the old CA kept.
    std::fs::write(&s.ca_file, b"not a certificate").unwrap();
    let start_wait = Instant::now();
    loop {
        let errors = sample(
            &server.metrics().await,
            "ipam_guard_tls_reload_errors_total",
        );
        if errors == Some(1.0) {
            break;
        }
        assert!(
            start_wait.elapsed() < WAIT,
            "bad CA never reported: {errors:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    answered(&server, &s, &old).await;

    // Both CAs during a rotation, then only the new one.
    std::fs::write(&s.ca_file, format!("{}{}", first.pem, second.pem)).unwrap();
    wait_until_answered(&server, &s, &new).await;
    answered(&server, &s, &old).await;
    std::fs::write(&s.ca_file, &second.pem).unwrap();
    let start_wait = Instant::now();
    while call(&server, &s, Some(&old), Proto::H1).await.is_ok() {
        assert!(start_wait.elapsed() < WAIT, "the old CA is still trusted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    refused(&server, &s, Some(&old)).await;
    answered(&server, &s, &new).await;
    server.stop().await;
}

async fn wait_until_answered(server: &TestServer, s: &Setup, cert: &ClientCert) {
    let start = Instant::now();
    while call(server, s, Some(cert), Proto::H1).await.is_err() {
        assert!(start.elapsed() < WAIT, "the new CA was never trusted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unusable_client_ca_file_at_startup_is_an_error_naming_it() {
    let client_ca = TestCa::new("apiserver client CA");
    let s = setup(&client_ca);
    for (contents, want) in [
        (None, "cannot read"),
        (Some(&b"no PEM here"[..]), "no PEM certificate"),
    ] {
        match contents {
            Some(bytes) => std::fs::write(&s.ca_file, bytes).unwrap(),
            None => std::fs::remove_file(&s.ca_file).unwrap(),
        }
        let mut config = loopback_config(s.files.clone());
        config.client_auth = Some(ClientAuth::new(&s.ca_file));
        let admission = Admission::new(Arc::new(StaticView::empty()), Default::default());
        let e = match Server::bind(config, admission, Registry::default()).await {
            Ok(_) => panic!("started with an unusable client CA"),
            Err(e) => e,
        };
        assert!(
            matches!(
                e,
                ServerError::ClientCa(CertError::Read { .. } | CertError::NoCertificate { .. })
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(text.contains("--client-ca-file"), "{text}");
        assert!(text.contains(want), "{text}");
        assert!(text.contains(&*s.ca_file.to_string_lossy()), "{text}");
    }
}

/// The flags of the real binary reach the listener: `serve --client-ca-file --client-cn`.
#[tokio::test]
async fn the_serve_flags_require_the_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let client_ca = TestCa::new("apiserver client CA");
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, &client_ca.pem).unwrap();
    let cert_dir = dir.path().join("certs");
    let served = serve_dev(
        &cert_dir,
        &[
            "--client-ca-file",
            ca_file.to_str().unwrap(),
            "--client-cn",
            "kube-apiserver",
        ],
    )
    .await;
    let status = |cert: Option<ClientCert>| {
        let ca = served.ca.clone();
        let addr = served.webhook;
        async move {
            let config = match &cert {
                Some(c) => client_config_with_cert(&ca, &[b"http/1.1"], c),
                None => client_config(&ca, &[b"http/1.1"]),
            };
            let mut conn = Conn::open_with(addr, config, Proto::H1).await.ok()?;
            conn.send(post("/validate", Some("application/json"), NOT_A_REVIEW))
                .await
                .ok()
                .map(|r| r.status)
        }
    };
    assert_eq!(status(None).await, None);
    assert_eq!(status(Some(client_ca.client("someone", &[]))).await, None);
    assert_eq!(
        status(Some(client_ca.client("kube-apiserver", &[]))).await,
        Some(400)
    );
    // The refusals are logged at info, the allow-list's with the names it saw.
    let start = std::time::Instant::now();
    loop {
        let logs = served.logs.lock().unwrap().clone();
        if logs.contains("client not authenticated; connection refused")
            && logs.contains("client certificate refused")
            && logs.contains("someone")
        {
            break;
        }
        assert!(start.elapsed() < WAIT, "refusals not logged:\n{logs}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop(served);
}

#[test]
fn client_names_without_a_client_ca_are_a_usage_error() {
    use clap::Parser;
    let parse = |args: &[&str]| ipam_guard::cli::Cli::try_parse_from(args).map(|_| ());
    assert!(parse(&["ipam-guard", "serve", "--client-cn", "kube-apiserver"]).is_err());
    assert!(parse(&["ipam-guard", "serve", "--client-san", "x"]).is_err());
    assert!(parse(&[
        "ipam-guard",
        "serve",
        "--client-ca-file",
        "ca.crt",
        "--client-cn",
        "a"
    ])
    .is_ok());
}
