//! RBAC: the ClusterRole reads only what the view serves, the decider's Role reaches only its
//! Lease, and the replicas share one decider over mutual TLS.

use super::*;

#[test]
fn cluster_role_grants_only_reads_of_served_kinds_and_crds() {
    let role = only("ClusterRole");
    let mut got = BTreeSet::new();
    for rule in arr(&role["rules"], "ClusterRole rules") {
        assert!(
            rule.get("nonResourceURLs").is_none(),
            "no nonResourceURLs: {rule}"
        );
        assert!(
            rule.get("resourceNames").is_none(),
            "no resourceNames: {rule}"
        );
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let mut want = BTreeSet::new();
    let reads = ["get", "list", "watch"];
    for k in KINDS {
        for v in reads {
            want.insert((k.group.to_string(), k.plural.to_string(), v.to_string()));
        }
    }
    // The CRD watch that starts a kind's watch when its CRD is installed.
    for v in reads {
        want.insert((
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
            v.to_string(),
        ));
    }
    assert_same_set("ClusterRole grants", &got, &want);

    // Bound to the ServiceAccount the pods run as.
    let w = workload();
    let sa_name = s(&w.pod["serviceAccountName"], "serviceAccountName");
    let ns = namespace_of(w.deployment);
    assert!(
        named("ServiceAccount", Some(ns), sa_name).is_some(),
        "ServiceAccount {ns}/{sa_name} is rendered"
    );
    assert_ne!(
        w.pod["automountServiceAccountToken"], false,
        "the live view needs the token"
    );
    let binding = only("ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], name_of(role));
    let subjects = arr(&binding["subjects"], "subjects");
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], sa_name);
    assert_eq!(subjects[0]["namespace"], ns);
}

/// X2 across replicas: the decider election needs get/create/update on one Lease, granted
/// by a namespaced Role in the install namespace (never cluster-wide), bound to the pods' account.
#[test]
fn decider_role_grants_only_leases_in_the_install_namespace() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let role = only("Role");
    assert_eq!(
        namespace_of(role),
        ns,
        "the Role is in the install namespace"
    );
    let mut got = BTreeSet::new();
    for rule in arr(&role["rules"], "Role rules") {
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let want: BTreeSet<_> = ["get", "create", "update"]
        .iter()
        .map(|v| {
            (
                "coordination.k8s.io".to_string(),
                "leases".to_string(),
                v.to_string(),
            )
        })
        .collect();
    assert_same_set("Role grants", &got, &want);
    let binding = only("RoleBinding");
    assert_eq!(namespace_of(binding), ns);
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], name_of(role));
    let subjects = arr(&binding["subjects"], "subjects");
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], s(&w.pod["serviceAccountName"], "sa"));
    assert_eq!(subjects[0]["namespace"], ns);
}

/// The pods elect a decider (not `--decider=off`), learn their name, namespace and IP from the
/// downward API, expose the peer port, and their certificate works as a client certificate too.
#[test]
fn replicas_share_one_decider_over_mutual_tls() {
    let w = workload();
    assert_eq!(w.serve.decider.decider, DeciderMode::Lease);
    assert_eq!(w.serve.decider.decider_lease, "ipam-guard-decider");
    assert!(
        w.serve.decider.peer_advertise.is_none(),
        "the address comes from POD_IP"
    );
    assert_eq!(
        container_port(w.container, "peer"),
        listen_port(&w.serve.decider.peer_listen)
    );
    let env = arr(&w.container["env"], "container env");
    for (name, path) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
        ("POD_IP", "status.podIP"),
    ] {
        let var = env
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("env {name} is set"));
        assert_eq!(var["valueFrom"]["fieldRef"]["fieldPath"], path, "{name}");
    }
    let cert = serving_certificate(&w);
    let usages = strings(&cert["spec"]["usages"], "usages");
    for want in ["server auth", "client auth"] {
        assert!(
            usages.iter().any(|u| u == want),
            "usages {usages:?} lack {want}"
        );
    }
    // The peer CA is the ca.crt cert-manager writes next to tls.crt in the mounted Secret.
    assert!(w.serve.decider.peer_ca_file.is_none());
}
