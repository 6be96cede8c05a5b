//! docs/trial.md followed step by step, and the trial's webhooks leaving other teams'
//! cluster-scoped objects alone.

use super::*;

/// One step of docs/trial.md: a `sh` block and how the page says it behaves.
#[derive(Debug)]
pub enum Step {
    Run(String),
    Background(String),
    Retry(String),
    FailsWith(String, String),
}

pub fn trial_steps(page: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    // A marker applies to the next block (prose may stand in between).
    let mut marker: Option<String> = None;
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(m) = line.strip_prefix("<!-- trial:") {
            marker = Some(m.trim_end_matches("-->").trim().to_string());
        } else if line == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let command = block.join("\n");
            steps.push(match marker.take().as_deref() {
                None => Step::Run(command),
                Some("background") => Step::Background(command),
                Some("retry") => Step::Retry(command),
                Some(m) if m.starts_with("fails-with ") => {
                    let text = m["fails-with ".len()..].trim_matches('"').to_string();
                    Step::FailsWith(command, text)
                }
                Some(other) => panic!("unknown trial marker {other:?}"),
            });
        }
    }
    steps
}

/// docs/trial.md, followed as written against a real kube-apiserver: serve --dev --kubeconfig,
/// dev-webhooks, kubectl, a denial through the API server, removal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_page_works_as_written() {
    e2e::each_server(
        "trial_page_works_as_written",
        trial_page_works_as_written_against,
    )
    .await;
}

pub async fn trial_page_works_as_written_against(assets: e2e::Server) {
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        panic!("kubectl is not on PATH (.ci/run installs it)");
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let page = std::fs::read_to_string(crate::e2e::repo_root().join("docs/trial.md")).unwrap();
    let steps = trial_steps(&page);
    assert!(steps.len() >= 6, "{steps:#?}");

    // The page's ports, moved to free ones; the binary on PATH; a directory of its own.
    let ports = [
        ("9443", e2e::free_port()),
        ("8081", e2e::free_port()),
        ("8080", e2e::free_port()),
    ];
    let localise = |c: &str| {
        ports.iter().fold(c.to_string(), |c, (from, to)| {
            c.replace(from, &to.to_string())
        })
    };
    let bin = crate::e2e::ipam_guard_bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    let bash = |command: &str| {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(localise(command))
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("KUBECONFIG", &cp.kubeconfig)
            .kill_on_drop(true);
        cmd
    };
    let within = Duration::from_secs(90);
    let mut background = Vec::new();
    for step in &steps {
        match step {
            Step::Background(c) => {
                let mut cmd = bash(c);
                cmd.stdout(std::process::Stdio::null())
                    .stderr(std::fs::File::create(dir.path().join("serve.log")).unwrap());
                background.push(cmd.spawn().expect("serve starts"));
            }
            Step::Run(c) => {
                let o = bash(c).output().await.unwrap();
                assert!(
                    o.status.success(),
                    "{c}\n{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            Step::Retry(c) | Step::FailsWith(c, _) => {
                let start = std::time::Instant::now();
                loop {
                    let o = bash(c).output().await.unwrap();
                    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
                    let done = match step {
                        Step::FailsWith(_, text) => !o.status.success() && stderr.contains(text),
                        _ => o.status.success(),
                    };
                    if done {
                        break;
                    }
                    assert!(
                        start.elapsed() < within,
                        "{step:?} did not happen within {within:?}: {}{stderr}\nserve log:\n{}",
                        String::from_utf8_lossy(&o.stdout),
                        std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default()
                    );
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
    // The trial is gone: the configurations are deleted.
    let o =
        bash("kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations -o name")
            .output()
            .await
            .unwrap();
    assert!(o.status.success());
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("ipam-guard-dev"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    drop(background);
    // The first sync says what it read, kind by kind.
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("listed") && l.contains("objects=")),
        "no sync progress in the log:\n{log}"
    );
}

/// `dev-webhooks` touches only the trial: against a real API server, with its configurations
/// applied and nothing but a connection counter at the URL (`serve` down), another team's
/// cluster-scoped pools are created without the API server ever calling the URL; a pool that opts
/// in with the trial label is sent (and, failing open, created all the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_webhooks_leave_other_teams_cluster_scoped_objects_alone() {
    e2e::each_server(
        "trial_webhooks_leave_other_teams_cluster_scoped_objects_alone",
        trial_webhooks_leave_other_teams_cluster_scoped_objects_alone_against,
    )
    .await;
}

pub async fn trial_webhooks_leave_other_teams_cluster_scoped_objects_alone_against(
    assets: e2e::Server,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cp = e2e::ControlPlane::start(&assets).await;
    let client = cp.client().await;
    install_crds(&client).await;
    let dir = tempfile::tempdir().unwrap();
    let certs =
        ipam_guard::server::dev::ensure(&dir.path().join("certs")).expect("dev certificates");
    let cert_dir = certs.ca_cert.parent().unwrap().to_path_buf();

    // Where `serve` would listen: a socket that only counts who connects.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });

    let out = std::process::Command::new(crate::e2e::ipam_guard_bin())
        .args([
            "dev-webhooks",
            "--url",
            &format!("https://127.0.0.1:{port}"),
        ])
        .args(["--namespace", "ipam-trial", "--cert-dir"])
        .arg(&cert_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let file = dir.path().join("dev-webhooks.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = std::process::Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&cp.kubeconfig).args(args);
        if let Some(text) = stdin {
            let path = dir.path().join("obj.yaml");
            std::fs::write(&path, text).unwrap();
            cmd.arg("-f").arg(path);
        }
        cmd.output().unwrap()
    };
    let o = kubectl(&["apply", "-f", file.to_str().unwrap()], None);
    assert!(o.status.success(), "{o:?}");

    let global = |name: &str, labels: &str| {
        format!(
            "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: GlobalInClusterIPPool\n\
             metadata:\n  name: {name}\n  labels: {{{labels}}}\n\
             spec:\n  addresses: [10.200.0.10-10.200.0.20]\n  prefix: 24\n  gateway: 10.200.0.1\n"
        )
    };
    let spider = "apiVersion: spiderpool.spidernet.io/v2beta1\nkind: SpiderIPPool\n\
                  metadata: {name: other-team-pods}\n\
                  spec:\n  subnet: 172.19.0.0/24\n  ips: [172.19.0.10-172.19.0.20]\n";
    // A configuration takes a moment to reach the API server's webhook cache: the labelled pool
    // is created (and deleted) until the URL has been called once.
    let start = std::time::Instant::now();
    loop {
        let o = kubectl(
            &["create"],
            Some(&global("opted-in", "ipam-guard.io/trial: \"true\"")),
        );
        assert!(o.status.success(), "{o:?}");
        let o = kubectl(
            &[
                "delete",
                "globalinclusterippools.ipam.cluster.x-k8s.io",
                "opted-in",
            ],
            None,
        );
        assert!(o.status.success(), "{o:?}");
        if calls.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the API server never called the trial's URL for a labelled pool"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let before = calls.load(std::sync::atomic::Ordering::SeqCst);
    for text in [global("other-team", "team: b"), spider.to_string()] {
        let o = kubectl(&["create"], Some(&text));
        assert!(o.status.success(), "{o:?}");
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Updates and deletes of those objects are not sent either.
    let o = kubectl(
        &[
            "delete",
            "spiderippools.spiderpool.spidernet.io",
            "other-team-pods",
        ],
        None,
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "an unlabelled cluster-scoped object was sent to the trial"
    );
    drop(cp);
}
