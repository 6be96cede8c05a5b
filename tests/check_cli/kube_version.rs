//! The API server release `check` speaks for: `--kube-version`, and a kubeconfig that
//! is missing said once.

use super::*;

/// Offline `check` speaks for the newest release the project tests against; `--kube-version`
/// picks another: v1.20 prunes unknown fields (a warning) where v1.36 refuses them.
#[test]
fn kube_version_picks_what_the_api_server_would_say() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    std::fs::write(
        &file,
        "apiVersion: ipam.cluster.x-k8s.io/v1alpha2\nkind: InClusterIPPool\n\
         metadata: {name: typo, namespace: n, lables: {a: b}}\n\
         spec: {addresses: [10.51.0.10-10.51.0.20], prefix: 24, gatway: 10.51.0.1}\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();

    let o = check(&[f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        lines(&o),
        vec![
            format!(
                r#"{f}:3: InClusterIPPool n/typo: metadata.lables: unknown field "metadata.lables" [SCHEMA]"#
            ),
            format!(
                r#"{f}:4: InClusterIPPool n/typo: spec.gatway: unknown field "spec.gatway" [SCHEMA]"#
            ),
        ]
    );
    assert_eq!(lines(&check(&["--kube-version", "v1.36.2", f])), lines(&o));

    let o = check(&["--kube-version", "1.20", f]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            r#"metadata.lables: unknown field "metadata.lables"; the API server drops it"#
        ) && out.contains(r#"spec.gatway: unknown field "spec.gatway"; the API server drops it"#),
        "{out}"
    );
    assert!(!stderr(&o).contains("note: Kubernetes"), "{}", stderr(&o));

    let o = check(&["--kube-version", "1.28", f]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: Kubernetes v1.28 is not a release the project tests against"),
        "{}",
        stderr(&o)
    );

    let o = check(&["--kube-version", "latest", f]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--kube-version: \"latest\" is not a Kubernetes version"),
        "{}",
        stderr(&o)
    );
}

/// Each error says its cause once: kube's errors carry their source in their text, so
/// printing the whole chain used to repeat "No such file or directory" at every layer.
#[test]
fn a_missing_kubeconfig_is_said_once() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ipam-guard"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let missing = home.path().join("nope.yaml");
    for args in [
        vec!["audit"],
        vec!["usage"],
        vec![
            "check",
            "--kubeconfig",
            missing.to_str().unwrap(),
            "examples/manifests",
        ],
        vec!["check", "--context", "c", "examples/manifests"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        let err = stderr(&o);
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error: ")).count(),
            1,
            "{args:?}: {err}"
        );
    }
    let err = stderr(&run(&["audit"]));
    assert!(
        err.starts_with("error: no cluster to talk to: not in a pod (")
            && err.contains("and no usable KUBECONFIG or ~/.kube/config (")
            && err.contains("); pass --kubeconfig"),
        "{err}"
    );
}
