//! Shared by the `server_*` tests: a test CA, keys in every PEM format, an HTTPS client that can
//! speak h1 or h2 on a connection it controls (`client.rs`), and an in-process server on loopback.
#![allow(dead_code)]

mod client;
pub use client::*;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ipam_guard::admission::Admission;
use ipam_guard::cluster::{ClusterView, StaticView};
use ipam_guard::server::{Addrs, CertFiles, Config, Server};
use prometheus_client::registry::Registry;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData,
};
use rustls::pki_types::CertificateDer;
use rustls::ClientConfig;
use tokio::io::AsyncBufReadExt;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The bytes of a review a real API server sent (tests/fixtures/reviews/README.md), from the newest
/// set: `ipaddressclaim-create.json` as POSTed to /validate, `mutating/…` as POSTed to /mutate.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reviews/v1.36")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// === keys and certificates ===

/// How a serving key is written to `tls.key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFormat {
    /// `PRIVATE KEY` (ECDSA P-256).
    Pkcs8,
    /// `EC PRIVATE KEY` with its curve parameters, as cert-manager and OpenSSL write it.
    Sec1,
    /// `RSA PRIVATE KEY` (RSA 2048).
    Pkcs1,
}

/// A serving key: what signs the certificate request, and the PEM the server reads.
pub struct ServingKey {
    public: Public,
    pub pem: String,
}

impl ServingKey {
    pub fn new(format: KeyFormat) -> ServingKey {
        match format {
            KeyFormat::Pkcs8 => {
                let key = KeyPair::generate().unwrap();
                let pem = key.serialize_pem();
                ServingKey {
                    public: Public::Ec(Box::new(key)),
                    pem,
                }
            }
            KeyFormat::Sec1 => {
                let key = KeyPair::generate().unwrap();
                let pem = pem_block(
                    "EC PRIVATE KEY",
                    &sec1_from_p256_pkcs8(key.serialized_der()),
                );
                ServingKey {
                    public: Public::Ec(Box::new(key)),
                    pem,
                }
            }
            KeyFormat::Pkcs1 => {
                use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey, LineEnding};
                let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
                let pem = key.to_pkcs1_pem(LineEnding::LF).unwrap().to_string();
                let public = key
                    .to_public_key()
                    .to_pkcs1_der()
                    .unwrap()
                    .as_bytes()
                    .to_vec();
                ServingKey {
                    public: Public::Rsa(public),
                    pem,
                }
            }
        }
    }
}

/// rcgen with ring cannot hold an RSA key pair it did not make; the public half is enough here.
enum Public {
    Ec(Box<KeyPair>),
    /// PKCS#1 RSAPublicKey DER.
    Rsa(Vec<u8>),
}

impl PublicKeyData for Public {
    fn der_bytes(&self) -> &[u8] {
        match self {
            Public::Ec(key) => key.der_bytes(),
            Public::Rsa(der) => der,
        }
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            Public::Ec(key) => PublicKeyData::algorithm(key.as_ref()),
            Public::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
        }
    }
}

/// A CA that issues serving certificates for the loopback names.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pub der: CertificateDer<'static>,
    pub pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let params = ca_params(name);
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            der: cert.der().clone(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// An intermediate CA signed by this one.
    pub fn intermediate(&self, name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let params = ca_params(name);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        TestCa {
            der: cert.der().clone(),
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf for `localhost`, `127.0.0.1` and `::1`, as PEM; `cn` tells leaves apart.
    pub fn leaf(&self, key: &ServingKey, cn: &str) -> String {
        self.leaf_until(key, cn, None)
    }

    /// Like `leaf`, valid until `not_after` (Unix seconds) when given.
    pub fn leaf_until(&self, key: &ServingKey, cn: &str, not_after: Option<i64>) -> String {
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        if let Some(t) = not_after {
            params.not_before = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
            params.not_after = time::OffsetDateTime::from_unix_timestamp(t).unwrap();
        }
        params.signed_by(&key.public, &self.issuer).unwrap().pem()
    }
}

/// A client certificate and its key (PEM), for `--client-ca-file` tests.
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    /// A client leaf with subject CN `cn` and DNS SANs `sans`.
    pub fn client(&self, cn: &str, sans: &[&str]) -> ClientCert {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ClientCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// As `client_config`, presenting `cert` when the server asks for one.
pub fn client_config_with_cert(
    ca: &CertificateDer<'static>,
    alpn: &[&[u8]],
    cert: &ClientCert,
) -> Arc<ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::PrivateKeyDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let chain = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).unwrap();
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// One DER element: (tag, whole element, content, rest).
fn der_element(buf: &[u8]) -> (u8, &[u8], &[u8], &[u8]) {
    let tag = buf[0];
    let (len, header) = match buf[1] {
        n if n < 0x80 => (n as usize, 2),
        0x81 => (buf[2] as usize, 3),
        0x82 => (((buf[2] as usize) << 8) | buf[3] as usize, 4),
        n => panic!("DER length form {n:#x} not expected in a test key"),
    };
    (
        tag,
        &buf[..header + len],
        &buf[header..header + len],
        &buf[header + len..],
    )
}

fn der_wrap(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match content.len() {
        n if n < 0x80 => out.push(n as u8),
        n if n < 0x100 => out.extend([0x81, n as u8]),
        n => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(content);
    out
}

/// ring writes the ECPrivateKey inside PKCS#8 without the curve; a SEC1 file carries it.
fn sec1_from_p256_pkcs8(pkcs8: &[u8]) -> Vec<u8> {
    let (_, _, pkcs8, _) = der_element(pkcs8);
    let (_, _, _version, rest) = der_element(pkcs8);
    let (_, _, _algorithm, rest) = der_element(rest);
    let (_, _, ec_private_key, _) = der_element(rest);
    let (_, _, ec, _) = der_element(ec_private_key);
    let (_, version, _, rest) = der_element(ec);
    let (_, secret, _, mut rest) = der_element(rest);
    let mut public = None;
    while !rest.is_empty() {
        let (tag, whole, _, next) = der_element(rest);
        if tag == 0xa1 {
            public = Some(whole);
        }
        rest = next;
    }
    const PRIME256V1: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let mut content = Vec::new();
    content.extend_from_slice(version);
    content.extend_from_slice(secret);
    content.extend(der_wrap(0xa0, &PRIME256V1));
    content.extend_from_slice(public.expect("ring writes the public key"));
    der_wrap(0x30, &content)
}

/// Writes `tls.crt` (leaf first, then `chain`) and `tls.key` for a fresh key of `format`.
pub fn write_pair(dir: &Path, ca: &TestCa, format: KeyFormat, cn: &str, chain: &[&str]) {
    let key = ServingKey::new(format);
    let mut crt = ca.leaf(&key, cn);
    for extra in chain {
        crt.push_str(extra);
    }
    std::fs::write(dir.join("tls.crt"), crt).unwrap();
    std::fs::write(dir.join("tls.key"), &key.pem).unwrap();
}

/// The first certificate of a PEM file.
pub fn leaf_der(path: &Path) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
}

// === in-process server ===

/// Loopback addresses with port 0, fast certificate polling, no shutdown delay.
pub fn loopback_config(certs: CertFiles) -> Config {
    let mut config = Config::new(certs);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.probe_listen = "127.0.0.1:0".parse().unwrap();
    config.metrics_listen = "127.0.0.1:0".parse().unwrap();
    config.cert_poll_interval = Duration::from_millis(100);
    config.shutdown_delay = Duration::ZERO;
    config.drain_timeout = Duration::from_secs(5);
    config
}

/// A running in-process server.
pub struct TestServer {
    pub addrs: Addrs,
    pub admission: Admission,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    pub async fn start(config: Config) -> TestServer {
        TestServer::start_with_view(config, Arc::new(StaticView::empty())).await
    }

    pub async fn start_with_view(config: Config, view: Arc<dyn ClusterView>) -> TestServer {
        let admission = Admission::new(view, Default::default());
        let server = Server::bind(config, admission.clone(), Registry::default())
            .await
            .expect("server binds");
        let addrs = server.addrs();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        TestServer {
            addrs,
            admission,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Signals shutdown and waits (bounded) for the server to return.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT * 2, task)
                .await
                .expect("server stops in time")
                .expect("server task did not panic");
        }
    }

    pub async fn metrics(&self) -> String {
        let (status, text) = http_get(self.addrs.metrics, "/metrics").await.unwrap();
        assert_eq!(status, 200);
        text
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A server on loopback with a fresh CA and an ECDSA pair in a temporary directory.
pub async fn start_default() -> (TestServer, TestCa, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("test CA");
    write_pair(dir.path(), &ca, KeyFormat::Pkcs8, "serving", &[]);
    let server = TestServer::start(loopback_config(CertFiles::in_dir(dir.path()))).await;
    (server, ca, dir)
}

/// The value of one sample line `name{labels} value` in a metrics text, if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .and_then(|v| v.trim().parse().ok())
}

// === load ===

/// What a load worker saw.
#[derive(Debug, Default)]
pub struct LoadStats {
    pub ok: u64,
    pub failed: Vec<String>,
}

/// Workers posting to `/validate` until stopped: `(proto, fresh)` where `fresh` opens a new
/// connection (and so a new handshake) per request.
pub struct Load {
    stop: Arc<std::sync::atomic::AtomicBool>,
    workers: Vec<JoinHandle<LoadStats>>,
    /// Requests each worker has had answered so far, for tests to wait on instead of sleeping.
    answered: Vec<Arc<std::sync::atomic::AtomicU64>>,
}

impl Load {
    pub fn start(
        addr: SocketAddr,
        ca: &CertificateDer<'static>,
        expected_status: u16,
        body: &'static [u8],
        workers: &[(Proto, bool)],
    ) -> Load {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answered: Vec<_> = workers
            .iter()
            .map(|_| Arc::new(std::sync::atomic::AtomicU64::new(0)))
            .collect();
        let workers = workers
            .iter()
            .zip(&answered)
            .map(|(&(proto, fresh), answered)| {
                let stop = stop.clone();
                let ca = ca.clone();
                let answered = answered.clone();
                tokio::spawn(async move {
                    let mut stats = LoadStats::default();
                    let mut conn: Option<Conn> = None;
                    // Bounded even if nobody calls stop.
                    let deadline = std::time::Instant::now() + WAIT * 3;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && std::time::Instant::now() < deadline
                    {
                        if conn.is_none() || fresh {
                            match Conn::open(addr, &ca, proto).await {
                                Ok(c) => conn = Some(c),
                                Err(e) => {
                                    stats.failed.push(format!("{proto:?} connect: {e}"));
                                    continue;
                                }
                            }
                        }
                        let c = conn.as_mut().unwrap();
                        match c
                            .send(post("/validate", Some("application/json"), body))
                            .await
                        {
                            Ok(r) if r.status == expected_status => {
                                stats.ok += 1;
                                answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Ok(r) => stats.failed.push(format!(
                                "{proto:?} status {}: {}",
                                r.status,
                                r.text()
                            )),
                            Err(e) => {
                                stats.failed.push(format!("{proto:?} request: {e}"));
                                conn = None;
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    stats
                })
            })
            .collect();
        Load {
            stop,
            workers,
            answered,
        }
    }

    /// Waits until every worker has had `more` requests answered beyond what it had when called:
    /// proof that each kind of connection went on working, whatever the machine's speed. Panics
    /// after `WAIT` with each worker's count.
    pub async fn wait_each_answered(&self, more: u64) {
        let count =
            |a: &Arc<std::sync::atomic::AtomicU64>| a.load(std::sync::atomic::Ordering::Relaxed);
        let from: Vec<u64> = self.answered.iter().map(count).collect();
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let now: Vec<u64> = self.answered.iter().map(count).collect();
            if now.iter().zip(&from).all(|(n, f)| *n >= f + more) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "workers answered {now:?} (from {from:?}), waiting for {more} more each"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn finish(self) -> LoadStats {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut total = LoadStats::default();
        for w in self.workers {
            let stats = tokio::time::timeout(WAIT * 4, w).await.unwrap().unwrap();
            total.ok += stats.ok;
            total.failed.extend(stats.failed);
        }
        total
    }
}

// === the real binary ===

/// `ipam-guard serve --dev` on loopback ports chosen by the kernel, read back from the banner.
pub struct Served {
    pub child: tokio::process::Child,
    pub banner: Vec<String>,
    pub webhook: SocketAddr,
    pub probe: SocketAddr,
    pub metrics: SocketAddr,
    pub ca: CertificateDer<'static>,
    pub logs: Arc<std::sync::Mutex<String>>,
    /// The task copying stderr into `logs`: `exit` waits for it, so the last lines are there.
    pub stderr_done: Option<tokio::task::JoinHandle<()>>,
}

pub async fn serve_dev(cert_dir: &Path, extra: &[&str]) -> Served {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(["serve", "--dev", "--cert-dir"])
        .arg(cert_dir)
        .args(["--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0"])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        // --dev must not need (or read) a cluster.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let logs = Arc::new(std::sync::Mutex::new(String::new()));
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = logs.clone();
    let stderr_done = tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let mut logs = sink.lock().unwrap();
            logs.push_str(&line);
            logs.push('\n');
        }
    });
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut banner = Vec::new();
    let read = async {
        // The banner ends with the curl command and, when it takes its body from a here-document,
        // that document up to its `EOF`.
        let mut heredoc = false;
        while let Ok(Some(line)) = stdout.next_line().await {
            let curl = line.trim_start().starts_with("curl ");
            heredoc |= curl && line.ends_with("<<'EOF'");
            let done = (curl && !heredoc) || (heredoc && line == "EOF");
            banner.push(line);
            if done {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(WAIT, read).await;
    let find = |prefix: &str| -> String {
        banner
            .iter()
            .find_map(|l| {
                l.trim()
                    .strip_prefix(prefix)
                    .map(|rest| rest.trim().to_string())
            })
            .unwrap_or_else(|| {
                panic!(
                    "no {prefix:?} in the banner: {banner:#?}\nlogs:\n{}",
                    logs.lock().unwrap()
                )
            })
    };
    let webhook = find("webhook:");
    let webhook = webhook
        .rsplit("listening on ")
        .next()
        .unwrap()
        .trim_end_matches(')')
        .parse()
        .unwrap();
    let probe = find("probes:");
    let probe = probe
        .trim_start_matches("http://")
        .trim_end_matches("/readyz")
        .parse()
        .unwrap();
    let metrics = find("metrics:");
    let metrics = metrics
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    let ca = <CertificateDer as rustls::pki_types::pem::PemObject>::from_pem_file(
        cert_dir.join("ca.crt"),
    )
    .unwrap();
    Served {
        child,
        banner,
        webhook,
        probe,
        metrics,
        ca,
        logs,
        stderr_done: Some(stderr_done),
    }
}

impl Served {
    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub async fn exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let status = match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.unwrap(),
            Err(_) => panic!("still running after {within:?}; logs:\n{}", self.logs()),
        };
        // The process is gone, so its stderr reaches end of file: read it to the end.
        if let Some(task) = self.stderr_done.take() {
            let _ = tokio::time::timeout(within, task).await;
        }
        status
    }

    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    pub async fn wait_ready(&self) {
        let start = std::time::Instant::now();
        while start.elapsed() < WAIT {
            if let Ok((200, _)) = http_get(self.probe, "/readyz").await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("never ready; logs:\n{}", self.logs());
    }
}
