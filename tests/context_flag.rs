//! `--context` on every command that takes `--kubeconfig` (`check`, `audit`, `usage`, `serve`)
//! through the real binary: a context the kubeconfig lacks is refused by name, and a context it
//! has is the one used (its server, here one where nothing listens, is the one named).

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
        .args(args)
        .output()
        .expect("run ipam-guard")
}

/// A kubeconfig whose current context points at a closed port and whose `other` context at a
/// second one: which port an error names tells which context was used.
fn kubeconfig(dir: &std::path::Path) -> (String, u16) {
    // Ports bound for a moment and let go: nothing listens there afterwards.
    let closed = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (a, b) = (closed(), closed());
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\n\
             clusters:\n- name: a\n  cluster: {{server: 'https://127.0.0.1:{a}'}}\n\
             - name: b\n  cluster: {{server: 'https://127.0.0.1:{b}'}}\n\
             users:\n- name: u\n  user: {{token: t}}\n\
             contexts:\n- name: current\n  context: {{cluster: a, user: u}}\n\
             - name: other\n  context: {{cluster: b, user: u}}\n\
             current-context: current\n"
        ),
    )
    .unwrap();
    (path.display().to_string(), b)
}

#[test]
fn every_command_with_kubeconfig_takes_a_context() {
    let dir = tempfile::tempdir().unwrap();
    let (kc, other_port) = kubeconfig(dir.path());
    let pool = dir.path().join("pool.yaml");
    std::fs::write(
        &pool,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: GlobalInClusterIPPool\nmetadata: {name: g}\nspec: {addresses: [10.0.0.0/24], prefix: 24}\n",
    )
    .unwrap();
    let pool = pool.to_str().unwrap();
    let certs = dir.path().join("certs");
    let certs = certs.to_str().unwrap();
    let commands: [Vec<&str>; 4] = [
        vec!["check", "--kubeconfig", &kc, pool],
        vec!["audit", "--kubeconfig", &kc],
        vec!["usage", "--kubeconfig", &kc],
        vec![
            "serve",
            "--dev",
            "--cert-dir",
            certs,
            "--kubeconfig",
            &kc,
            "--listen",
            "127.0.0.1:0",
            "--probe-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--decider",
            "off",
        ],
    ];
    for command in &commands {
        let mut args = command.clone();
        args.extend(["--context", "nope"]);
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("\"nope\""), "{args:?}: {err}");
    }
    // The named context is the one read: its server is the one that could not be reached.
    // (`serve` would wait for that server: not run here.)
    for command in &commands[..3] {
        let mut args = command.clone();
        args.extend(["--context", "other"]);
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("127.0.0.1:{other_port}")),
            "{args:?}: {err}"
        );
    }
}
