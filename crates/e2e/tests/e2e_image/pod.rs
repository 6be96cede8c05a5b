//! What the Deployment asks for, read from `manifests/deployment.yaml` and turned into the
//! container's settings, files and the in-cluster API config the kubelet would give its pod.

use super::*;
use crate::e2e::pki::{Pki, Usage};

pub fn deployment() -> Value {
    let text = std::fs::read_to_string(e2e::repo_root().join("manifests/deployment.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).expect("manifests/deployment.yaml is YAML")
}

/// The documents of a manifest file.
pub fn documents(name: &str) -> Vec<Value> {
    use serde::Deserialize;
    let text = std::fs::read_to_string(e2e::repo_root().join("manifests").join(name)).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{name}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// Creates a manifest object through the API, at the collection its apiVersion and kind name.
pub async fn apply(client: &kube::Client, obj: &Value) {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let kind = obj["kind"].as_str().unwrap();
    let root = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    // The plurals of every kind the install's namespace and RBAC files hold.
    let plural = format!("{}s", kind.to_lowercase());
    let path = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
        None => format!("{root}/{plural}"),
    };
    create_path(client, &path, obj).await.expect(201);
}

/// `256Mi` → bytes (`Ki`, `Mi`, `Gi` or none).
pub fn memory_bytes(q: &str) -> u64 {
    let (n, unit) = q
        .find(|c: char| !c.is_ascii_digit())
        .map_or((q, ""), |i| q.split_at(i));
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("memory {q:?}"));
    n * match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => panic!("memory unit of {q:?}: the test knows Ki, Mi, Gi"),
    }
}

/// `500m` → `0.5`, `2` → `2`.
pub fn cpus(q: &str) -> String {
    match q.strip_suffix('m') {
        Some(milli) => {
            let m: u32 = milli.parse().unwrap_or_else(|_| panic!("cpu {q:?}"));
            format!("{}.{:03}", m / 1000, m % 1000)
        }
        None => q.to_string(),
    }
}

/// The `docker run` flags that give the container what the kubelet gives the Deployment's pod,
/// each read from the Deployment; a setting the test cannot reproduce fails it.
pub struct Pod {
    pub flags: Vec<String>,
    pub args: Vec<String>,
    pub cert_mount: String,
    pub grace: u64,
    /// `resources.limits.cpu` in cores (`--cpus`).
    pub cpus: f64,
}

pub fn pod(api_port: u16, certs: &Path, sa: &Path) -> Pod {
    let d = deployment();
    let namespace = d["metadata"]["namespace"].as_str().unwrap().to_string();
    let spec = &d["spec"]["template"]["spec"];
    let c = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "ipam-guard")
        .expect("the ipam-guard container");
    assert!(
        c.get("command").is_none(),
        "args only: the image's ENTRYPOINT runs"
    );
    let sc = |key: &str| -> Value {
        c["securityContext"]
            .get(key)
            .or_else(|| spec["securityContext"].get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut flags: Vec<String> = Vec::new();
    let user = sc("runAsUser").as_u64().expect("runAsUser");
    let group = sc("runAsGroup").as_u64().expect("runAsGroup");
    flags.push(format!("--user={user}:{group}"));
    if let Some(fs_group) = spec["securityContext"]["fsGroup"].as_u64() {
        flags.push(format!("--group-add={fs_group}"));
    }
    assert_eq!(sc("readOnlyRootFilesystem"), true);
    flags.push("--read-only".into());
    assert_eq!(sc("allowPrivilegeEscalation"), false);
    flags.push("--security-opt=no-new-privileges".into());
    assert_eq!(sc("capabilities")["drop"], json!(["ALL"]));
    assert!(sc("capabilities").get("add").is_none());
    flags.push("--cap-drop=ALL".into());
    // RuntimeDefault: the engine's default seccomp profile, which `docker run` applies unasked.
    assert_eq!(sc("seccompProfile")["type"], "RuntimeDefault");
    let limits = &c["resources"]["limits"];
    flags.push(format!(
        "--memory={}b",
        memory_bytes(limits["memory"].as_str().unwrap())
    ));
    let cores = cpus(limits["cpu"].as_str().unwrap());
    flags.push(format!("--cpus={cores}"));

    let pod_name = "ipam-guard-e2e-image";
    for e in c["env"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        let value = match (
            e["value"].as_str(),
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        ) {
            (Some(v), _) => v.to_string(),
            (None, Some("metadata.name")) => pod_name.to_string(),
            (None, Some("metadata.namespace")) => namespace.clone(),
            // The host's network: the pod's address is loopback.
            (None, Some("status.podIP")) => "127.0.0.1".to_string(),
            _ => panic!("env {name}: the test cannot fill {e}"),
        };
        flags.push(format!("--env={name}={value}"));
    }
    // What the kubelet adds for the in-cluster config.
    flags.push("--env=KUBERNETES_SERVICE_HOST=127.0.0.1".into());
    flags.push(format!("--env=KUBERNETES_SERVICE_PORT={api_port}"));
    flags.push(format!("--volume={}:{SA_DIR}:ro", sa.display()));

    let volumes = spec["volumes"].as_array().unwrap();
    let mounts = c["volumeMounts"].as_array().unwrap();
    assert_eq!(
        mounts.len(),
        1,
        "the test mounts the serving certificate only"
    );
    let mount = &mounts[0];
    let volume = volumes
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume");
    assert!(
        volume["secret"].is_object(),
        "the certificate comes from a Secret"
    );
    assert_eq!(mount["readOnly"], true);
    let cert_mount = mount["mountPath"].as_str().unwrap().to_string();
    flags.push(format!("--volume={}:{cert_mount}:ro", certs.display()));

    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    Pod {
        flags,
        args,
        cert_mount,
        grace: spec["terminationGracePeriodSeconds"].as_u64().unwrap(),
        cpus: cores.parse().unwrap(),
    }
}

/// The port of the Deployment's `--FLAG=:PORT` argument.
pub fn listen_port(args: &[String], flag: &str) -> u16 {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("{flag}=")))
        .and_then(|v| v.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("the Deployment passes {flag}=:PORT"))
}

/// Files as a Secret volume with `defaultMode` and the pod's `fsGroup` leave them: group-owned by
/// `group`, mode `mode`, in a directory anyone may enter.
pub fn write_files(dir: &Path, files: &[(&str, &[u8])], group: u32, mode: u32) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::os::unix::fs::chown(&path, Some(0), Some(group)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// A CA and a serving certificate with server and client auth (the decider's peer channel uses
/// it both ways), as cert-manager issues `certificate.yaml`'s: tls.crt, tls.key, ca.crt.
pub fn serving_certificate(
    namespace: &str,
) -> (Vec<(&'static str, Vec<u8>)>, CertificateDer<'static>) {
    let service = format!("ipam-guard-webhook.{namespace}.svc");
    let pki = Pki::issue(
        "ipam-guard e2e image CA",
        None,
        &[&service, "localhost", "127.0.0.1"],
        Usage::Serving,
    );
    (pki.secret_files(), pki.ca_der)
}

/// The CA the API server's self-signed serving certificate chains to: the last certificate of the
/// `apiserver.crt` it wrote into its `--cert-dir` (leaf first, then its CA).
pub fn apiserver_ca(cp: &ControlPlane) -> Vec<u8> {
    let text =
        std::fs::read_to_string(cp.dir.path().join("apiserver-certs/apiserver.crt")).unwrap();
    let begin = text
        .rfind("-----BEGIN CERTIFICATE-----")
        .expect("a certificate in apiserver.crt");
    text.as_bytes()[begin..].to_vec()
}
