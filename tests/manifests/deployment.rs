//! The Deployment: its pod locked down, its image pinned, its listeners, labels and disruption
//! budget, and the binary accepting the args it is started with.

use super::*;

#[test]
fn deployment_is_locked_down() {
    let w = workload();
    let spec = &w.deployment["spec"];
    assert_eq!(spec["replicas"], 2);

    let pod_sc = &w.pod["securityContext"];
    let sc = &w.container["securityContext"];
    // Container settings win over pod settings; either place counts.
    let effective = |key: &str| -> &Value {
        if sc.get(key).is_some() {
            &sc[key]
        } else {
            &pod_sc[key]
        }
    };
    assert_eq!(effective("runAsNonRoot"), true);
    assert_eq!(effective("runAsUser"), 65532);
    assert_eq!(effective("seccompProfile")["type"], "RuntimeDefault");
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(sc["capabilities"].get("add").is_none());
    assert_ne!(sc["privileged"], true);
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        assert_ne!(w.pod[host], true, "{host}");
    }

    // Termination: readiness off for --shutdown-delay, then the drain, all inside the grace period.
    let grace = w.pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds is set");
    let needed = w.serve.shutdown_delay.as_secs() + DRAIN_SECS;
    assert!(
        grace > needed,
        "terminationGracePeriodSeconds {grace} must exceed shutdown delay + drain = {needed}"
    );

    // Ports named after the listeners, and the listeners on those ports.
    assert_eq!(
        container_port(w.container, "webhook"),
        listen_port(&w.serve.listen)
    );
    assert_eq!(
        container_port(w.container, "probes"),
        listen_port(&w.serve.probe_listen)
    );
    assert_eq!(
        container_port(w.container, "metrics"),
        listen_port(&w.serve.metrics_listen)
    );
    assert_eq!(w.serve.log_format, LogFormat::Json);
    assert!(!w.serve.dev, "--dev in a cluster");
    assert!(
        w.serve.state_from.is_empty(),
        "the cluster install uses the live view"
    );

    let probe_port = container_port(w.container, "probes");
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &w.container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert!(
            get["port"] == "probes" || get["port"].as_u64() == Some(probe_port.into()),
            "{probe} must use the probe port, got {}",
            get["port"]
        );
        assert_eq!(get["scheme"].as_str().unwrap_or("HTTP"), "HTTP", "{probe}");
    }

    for kind in ["requests", "limits"] {
        for res in ["cpu", "memory"] {
            assert!(
                w.container["resources"][kind][res].is_string(),
                "resources.{kind}.{res} is set"
            );
        }
    }

    let image = ImageRef::parse(s(&w.container["image"], "image"));
    assert!(
        image.tag.is_some_and(|t| t != "latest") || image.digest.is_some(),
        "pin the image by tag or digest, got {image:?}"
    );

    // Spread across nodes (preferred, so a one-node cluster still runs both).
    let terms = arr(
        &w.pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
        "preferred pod anti-affinity",
    );
    let pod_labels = &spec["template"]["metadata"]["labels"];
    assert!(terms.iter().any(|t| {
        let term = &t["podAffinityTerm"];
        term["topologyKey"] == "kubernetes.io/hostname"
            && selects(&term["labelSelector"]["matchLabels"], pod_labels)
    }));

    // The certificate Secret the Certificate writes is the one mounted at --cert-dir.
    let cert = serving_certificate(&w);
    assert_eq!(namespace_of(cert), namespace_of(w.deployment));
}

/// An image reference `NAME[:TAG][@DIGEST]`, split as the runtime splits it.
#[derive(Debug, PartialEq)]
pub struct ImageRef<'a> {
    name: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

impl ImageRef<'_> {
    fn parse(image: &str) -> ImageRef<'_> {
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (image, None),
        };
        // A colon after the last slash starts the tag; one before it is a registry's port.
        let (name, tag) = match rest.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
            _ => (rest, None),
        };
        ImageRef { name, tag, digest }
    }
}

#[test]
fn image_ref_splits_name_tag_and_digest() {
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_eq!(
        ImageRef::parse("registry.example.com:5000/team/ipam-guard"),
        ImageRef {
            name: "registry.example.com:5000/team/ipam-guard",
            tag: None,
            digest: None
        }
    );
    let with_both = format!("registry.example.com:5000/ipam-guard:0.1.0@{digest}");
    assert_eq!(
        ImageRef::parse(&with_both),
        ImageRef {
            name: "registry.example.com:5000/ipam-guard",
            tag: Some("0.1.0"),
            digest: Some(digest)
        }
    );
}

/// The image override docs/operations.md documents: an overlay's `images:` entry with `newName`, `newTag`
/// and `digest` reaches the Deployment as `NAME:TAG@DIGEST` (pulled by the digest), and changes
/// nothing else.
#[test]
fn own_image_overlay_pins_the_image_by_digest() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/own-image");
    let overlay: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    let entry = &overlay["images"][0];
    let base = ImageRef::parse(s(&workload().container["image"], "image"));
    assert_eq!(
        entry["name"], base.name,
        "the overlay names the base's image"
    );
    let docs = docs_of(&render_dir(&dir));
    assert_eq!(docs.len(), objects().len());
    let deployment = docs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let image = s(
        &deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "image",
    );
    assert_eq!(
        ImageRef::parse(image),
        ImageRef {
            name: s(&entry["newName"], "newName"),
            tag: Some(s(&entry["newTag"], "newTag")),
            digest: Some(s(&entry["digest"], "digest")),
        }
    );
    let digest = s(&entry["digest"], "digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    // Only the image differs from the base.
    let mut expected = only("Deployment").clone();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = image.into();
    assert_eq!(deployment, &expected);
}

/// The manifests must work in IPv4-only, IPv6-only and dual-stack clusters. Listeners
/// are given as a bare `:PORT`, which the server binds on every family the pod has (`[::]`
/// dual-stack, falling back to `0.0.0.0` when the kernel has no IPv6). A literal `0.0.0.0`
/// misses IPv6-only clusters and a literal `[::]` fails where IPv6 is disabled.
#[test]
fn listeners_bind_every_family() {
    let w = workload();
    for (flag, listen) in [
        ("--listen", &w.serve.listen),
        ("--probe-listen", &w.serve.probe_listen),
        ("--metrics-listen", &w.serve.metrics_listen),
        ("--peer-listen", &w.serve.decider.peer_listen),
    ] {
        let (host, _) = listen.rsplit_once(':').expect("host:port");
        assert!(
            host.is_empty(),
            "{flag}={listen}: give the port only (:PORT) so every IP family is served"
        );
    }
}

#[test]
fn everything_is_labelled_namespaced_and_disruption_safe() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let namespace = only("Namespace");
    assert_eq!(name_of(namespace), ns);
    for o in objects() {
        let what = format!("{} {}", o["kind"], o["metadata"]["name"]);
        assert_eq!(
            o["metadata"]["labels"][NAME_LABEL], "ipam-guard",
            "{what} carries {NAME_LABEL}"
        );
        if let Some(obj_ns) = o["metadata"]["namespace"].as_str() {
            assert_eq!(obj_ns, ns, "{what} is in the install namespace");
        }
    }
    let pod_labels = &w.deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(pod_labels[NAME_LABEL], "ipam-guard");
    assert!(selects(
        &w.deployment["spec"]["selector"]["matchLabels"],
        pod_labels
    ));

    let pdb = only("PodDisruptionBudget");
    assert_eq!(namespace_of(pdb), ns);
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"], pod_labels));

    let service = webhook_service(&w);
    let metrics = container_port(w.container, "metrics");
    assert!(
        arr(&service["spec"]["ports"], "Service ports")
            .iter()
            .any(|p| p["targetPort"] == "metrics"
                || p["targetPort"].as_u64() == Some(metrics.into())),
        "the Service exposes the metrics port"
    );
}

/// The binary itself accepts the Deployment's flags, listener forms included: starts
/// `ipam-guard serve` with the Deployment's args, changed only where a test machine differs from
/// a pod (`--dev` for an empty view and generated certificates in a temporary `--cert-dir`, port 0
/// for every listener), and expects it to serve: its probe listener answers /readyz with 200.
#[test]
fn binary_accepts_the_deployment_args() {
    let w = workload();
    let certs = tempfile::tempdir().expect("temporary cert dir");
    let mut args: Vec<String> = Vec::new();
    for arg in strings(&w.container["args"], "container args") {
        let arg = match arg.split_once('=') {
            Some((
                flag @ ("--listen" | "--probe-listen" | "--metrics-listen" | "--peer-listen"),
                value,
            )) => {
                let (host, _) = value.rsplit_once(':').expect("host:port");
                format!("{flag}={host}:0")
            }
            Some(("--cert-dir", _)) => format!("--cert-dir={}", certs.path().display()),
            _ => arg,
        };
        args.push(arg);
    }
    args.push("--dev".to_string());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(&args)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ipam-guard");
    // Serving is shown, not waited out: `--dev` prints its listeners once all are bound, and the
    // probe listener then answers /readyz.
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, banner) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let probes = loop {
        match banner.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(line) => {
                if let Some(url) = line.trim().strip_prefix("probes:") {
                    break Some(url.trim().to_string());
                }
            }
            // Its stdout closed (it exited) or it printed nothing for 30 s.
            Err(_) => break None,
        }
    };
    let ready = probes.as_deref().map(readyz_status);
    let _ = child.kill();
    let out = child.wait_with_output().expect("collect ipam-guard output");
    assert!(
        ready == Some(200),
        "`ipam-guard {}` did not serve (probes: {probes:?}, /readyz: {ready:?}, exit: {}); the \
         Deployment passes these flags, so the pods would crash-loop. Listeners are given as a bare \
         \":PORT\" (every IP family: [::] dual-stack, 0.0.0.0 when the kernel has no IPv6; see \
         manifests/deployment.yaml).\nstderr:\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The HTTP status of `GET /readyz` at a probe URL the banner printed (`http://HOST:PORT/readyz`,
/// HOST possibly the unspecified address a bare `:PORT` binds): asked on IPv4 loopback.
pub fn readyz_status(url: &str) -> u16 {
    let port: u16 = url
        .trim_end_matches("/readyz")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the probe URL {url:?}"));
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the probes");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    tcp.write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("send GET /readyz");
    let mut reply = String::new();
    tcp.read_to_string(&mut reply)
        .expect("read the /readyz answer");
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {reply:?}"))
}

#[test]
fn deployment_runs_the_periodic_audit_from_the_view() {
    // X4 in the shipped install: the in-pod audit judges the view (tests/stored_audit.rs).
    let w = workload();
    assert_eq!(
        w.serve.audit_interval,
        Some(std::time::Duration::from_secs(600))
    );
}
