//! The optional components: NetworkPolicy, monitoring (PrometheusRule) and PolicyReports, each
//! rendered through its example overlay.

use super::*;

// The optional NetworkPolicy component (manifests/components/network-policy), rendered through
// the example overlay that sets its two cluster-specific peers.

/// The ingress rule of `policy` for `port`; exactly one must exist.
pub fn rule_for(policy: &Value, port: u64) -> &Value {
    let rules: Vec<&Value> = policy["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["ports"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["port"] == port))
        })
        .collect();
    assert_eq!(rules.len(), 1, "ingress rules for port {port}: {rules:?}");
    for p in rules[0]["ports"].as_array().unwrap() {
        assert_eq!(p["port"], port, "a rule admits one port only");
        assert_eq!(p["protocol"], "TCP");
    }
    rules[0]
}

#[test]
fn network_policy_component_admits_each_port_only_from_its_peers() {
    // The base does not carry it: clusters without a policy-enforcing CNI are not surprised.
    assert!(all_of("NetworkPolicy").is_empty());

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/network-policy");
    let docs = docs_of(&render_dir(&dir));
    // Everything of the base, plus the policy.
    assert_eq!(docs.len(), objects().len() + 1);
    let policies: Vec<&Value> = docs
        .iter()
        .filter(|o| o["kind"] == "NetworkPolicy")
        .collect();
    assert_eq!(policies.len(), 1);
    let policy = policies[0];

    // It selects the webhook pods, in their namespace.
    let w = workload();
    assert_eq!(
        policy["metadata"]["namespace"],
        w.deployment["metadata"]["namespace"]
    );
    let selector = policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(!selector.is_empty());
    for (k, v) in selector {
        let labels = &w.deployment["spec"]["template"]["metadata"]["labels"];
        assert_eq!(&labels[k], v, "podSelector {k} matches the pod template");
    }
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"])
    );

    // One rule per port; the container's ports are all covered, and the decider's 9444 too.
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    let container_ports: BTreeSet<u64> = w.container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_u64().unwrap())
        .collect();
    let mut covered: BTreeSet<u64> = BTreeSet::new();
    for r in ingress {
        for p in r["ports"].as_array().expect("every rule names its ports") {
            covered.insert(p["port"].as_u64().unwrap());
        }
        assert!(
            !r["from"]
                .as_array()
                .expect("every rule names its peers")
                .is_empty(),
            "a rule without peers would admit everyone: {r}"
        );
    }
    assert!(
        covered.is_superset(&container_ports),
        "{covered:?} vs {container_ports:?}"
    );
    assert!(covered.contains(&9444));

    let peers = |port| rule_for(policy, port)["from"].as_array().unwrap().clone();
    // 9443: the API server only, as the overlay set it.
    assert_eq!(
        peers(9443),
        vec![serde_json::json!({"ipBlock": {"cidr": "192.168.10.0/24"}})]
    );
    // 8080: the monitoring namespace only.
    assert_eq!(
        peers(8080),
        vec![
            serde_json::json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "monitoring"}}})
        ]
    );
    // 8081: the nodes (kubelet).
    assert_eq!(
        peers(8081),
        vec![serde_json::json!({"ipBlock": {"cidr": "192.168.0.0/16"}})]
    );
    // 9444: the same app's pods (same namespace: no namespaceSelector).
    assert_eq!(
        peers(9444),
        vec![serde_json::json!({"podSelector": {"matchLabels": {NAME_LABEL: "ipam-guard"}}})]
    );
}

#[test]
fn network_policy_component_alone_leaves_placeholders_that_are_not_cidrs() {
    let text = std::fs::read_to_string(
        manifests_dir().join("components/network-policy/networkpolicy.yaml"),
    )
    .unwrap();
    let policy = &docs_of(&text)[0];
    for port in [9443, 8081] {
        let cidr = rule_for(policy, port)["from"][0]["ipBlock"]["cidr"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(cidr.starts_with("SET-ME"), "{cidr}");
        assert!(cidr.parse::<ipnet_free::Cidr>().is_err(), "{cidr}");
    }
}

/// Just enough CIDR parsing to show a placeholder is not one.
mod ipnet_free {
    pub struct Cidr;
    impl std::str::FromStr for Cidr {
        type Err = ();
        fn from_str(s: &str) -> Result<Cidr, ()> {
            let (ip, len) = s.split_once('/').ok_or(())?;
            ip.parse::<std::net::IpAddr>().map_err(|_| ())?;
            len.parse::<u8>().map_err(|_| ())?;
            Ok(Cidr)
        }
    }
}

#[test]
fn monitoring_component_adds_one_prometheus_rule_next_to_the_webhook() {
    assert!(
        all_of("PrometheusRule").is_empty(),
        "optional: not in the base"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/monitoring");
    let docs = docs_of(&render_dir(&dir));
    // The PrometheusRule and the ServiceMonitor.
    assert_eq!(docs.len(), objects().len() + 2);
    let rules: Vec<&Value> = docs
        .iter()
        .filter(|o| o["kind"] == "PrometheusRule")
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0]["metadata"]["namespace"],
        workload().deployment["metadata"]["namespace"]
    );
    // What each alert names is checked against a running server in tests/alerts.rs.
    let alerts: Vec<&str> = rules[0]["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .map(|r| r["alert"].as_str().unwrap())
        .collect();
    assert!(alerts.contains(&"IPAMGuardViolations"), "{alerts:?}");
    assert!(alerts.contains(&"IPAMPoolNearlyExhausted"), "{alerts:?}");
}

// ---------------------------------------------------------------------------------------------
// The optional PolicyReports component (manifests/components/policy-reports), rendered through
// examples/install/policy-reports.

/// `serve --policy-reports` lists, applies (patch, and create for an apply that creates) and
/// deletes the two report kinds; the component grants exactly that, cluster-wide (reports live in
/// every namespace with findings), to the pods' account, and adds the flag to the one container.
#[test]
fn policy_reports_component_grants_exactly_the_report_writes() {
    // The base does not carry it: clusters without the PolicyReport CRDs are not surprised.
    assert!(objects()
        .iter()
        .all(|o| o["metadata"]["name"] != "ipam-guard-policy-reports"));

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/install/policy-reports");
    let docs = docs_of(&render_dir(&dir));
    assert_eq!(
        docs.len(),
        objects().len() + 2,
        "a ClusterRole and its binding"
    );
    let of = |kind: &str, name: &str| -> &Value {
        let found: Vec<&Value> = docs
            .iter()
            .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{kind} {name}");
        found[0]
    };
    let role = of("ClusterRole", "ipam-guard-policy-reports");
    let mut got = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        assert!(rule.get("resourceNames").is_none(), "{rule}");
        for g in strings(&rule["apiGroups"], "apiGroups") {
            for r in strings(&rule["resources"], "resources") {
                for v in strings(&rule["verbs"], "verbs") {
                    got.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    let mut want = BTreeSet::new();
    for r in ["policyreports", "clusterpolicyreports"] {
        for v in ["list", "create", "patch", "delete"] {
            want.insert(("wgpolicyk8s.io".to_string(), r.to_string(), v.to_string()));
        }
    }
    assert_same_set("PolicyReport grants", &got, &want);

    let w = workload();
    let binding = of("ClusterRoleBinding", "ipam-guard-policy-reports");
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], "ipam-guard-policy-reports");
    let subjects = binding["subjects"].as_array().unwrap();
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], s(&w.pod["serviceAccountName"], "sa"));
    assert_eq!(subjects[0]["namespace"], namespace_of(w.deployment));

    let deployment = of("Deployment", name_of(w.deployment));
    let args: Vec<String> = strings(
        &deployment["spec"]["template"]["spec"]["containers"][0]["args"],
        "args",
    );
    assert!(args.contains(&"--policy-reports".to_string()), "{args:?}");
    assert!(
        args.iter().any(|a| a.starts_with("--audit-interval")),
        "--policy-reports needs the periodic audit: {args:?}"
    );
}
