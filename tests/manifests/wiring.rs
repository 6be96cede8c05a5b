//! Webhook settings, the Service and the certificate wiring: each registration reaches the pods'
//! listener through the Service, with the CA of the certificate the pods serve.

use super::*;

#[test]
fn webhooks_are_wired_to_the_service_and_certificate() {
    let w = workload();
    let ns = namespace_of(w.deployment);
    let service = webhook_service(&w);
    assert_eq!(namespace_of(service), ns);
    let cert = serving_certificate(&w);

    // The Service port the webhooks call must reach the container's webhook port.
    let webhook_port = container_port(w.container, "webhook");
    let service_ports = arr(&service["spec"]["ports"], "Service ports");
    let https = service_ports
        .iter()
        .find(|p| {
            p["targetPort"] == "webhook" || p["targetPort"].as_u64() == Some(webhook_port.into())
        })
        .expect("a Service port targeting the webhook port");
    assert_eq!(https["port"], 443);

    let dns = strings(&cert["spec"]["dnsNames"], "dnsNames");
    let svc = name_of(service);
    for want in [
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ] {
        assert!(
            dns.contains(&want),
            "Certificate dnsNames {dns:?} lack {want}"
        );
    }
    assert_eq!(cert["spec"]["privateKey"]["algorithm"], "ECDSA");
    assert_eq!(cert["spec"]["privateKey"]["size"], 256);
    issuer_chain_is_rendered(cert);

    let mut names = BTreeSet::new();
    for (config_kind, path, failure_policy) in [
        ("ValidatingWebhookConfiguration", "/validate", "Fail"),
        ("MutatingWebhookConfiguration", "/mutate", "Ignore"),
    ] {
        let config = only(config_kind);
        assert_eq!(
            config["metadata"]["annotations"][CERT_MANAGER_INJECT_CA],
            format!("{}/{}", namespace_of(cert), name_of(cert)),
            "{config_kind}: cainjector must read the serving Certificate"
        );
        let hooks = arr(&config["webhooks"], "webhooks");
        assert!(!hooks.is_empty());
        for hook in hooks {
            let name = s(&hook["name"], "webhook name");
            assert!(
                names.insert(name.to_string()),
                "duplicate webhook name {name}"
            );
            let ctx = format!("{config_kind} webhook {name}");
            let client = &hook["clientConfig"];
            assert!(
                client.get("url").is_none(),
                "{ctx}: call the Service, not a URL"
            );
            assert!(
                client.get("caBundle").is_none(),
                "{ctx}: caBundle is injected by cert-manager"
            );
            assert_eq!(client["service"]["name"], svc, "{ctx}");
            assert_eq!(client["service"]["namespace"], ns, "{ctx}");
            assert_eq!(client["service"]["path"], path, "{ctx}");
            assert_eq!(client["service"]["port"], https["port"], "{ctx}");
            assert_eq!(hook["sideEffects"], "None", "{ctx}");
            assert_eq!(
                hook["admissionReviewVersions"],
                serde_json::json!(["v1"]),
                "{ctx}"
            );
            assert_eq!(hook["timeoutSeconds"], 2, "{ctx}");
            // Clusters fail open (manifests/webhooks.yaml says why): Cluster API's controllers
            // write them constantly, and CP3 and CP4 still fail closed on the other side.
            let failure_policy = if name == "validate-clusters.ipam-guard.io" {
                "Ignore"
            } else {
                failure_policy
            };
            assert_eq!(hook["failurePolicy"], failure_policy, "{ctx}");
            assert_eq!(hook["matchPolicy"], "Equivalent", "{ctx}");
            assert!(
                hook.get("objectSelector").is_none(),
                "{ctx}: an objectSelector would let labels opt out"
            );
            if config_kind == "MutatingWebhookConfiguration" {
                assert_ne!(
                    hook["reinvocationPolicy"], "IfNeeded",
                    "{ctx}: patches are idempotent, once is enough"
                );
            }

            // Off its own namespace and kube-system, and nothing else.
            let exprs = arr(
                &hook["namespaceSelector"]["matchExpressions"],
                "namespaceSelector",
            );
            assert_eq!(exprs.len(), 1, "{ctx}: one namespaceSelector expression");
            assert!(
                hook["namespaceSelector"].get("matchLabels").is_none(),
                "{ctx}"
            );
            assert_eq!(exprs[0]["key"], NAMESPACE_NAME_LABEL, "{ctx}");
            assert_eq!(exprs[0]["operator"], "NotIn", "{ctx}");
            let excluded: BTreeSet<String> =
                strings(&exprs[0]["values"], "values").into_iter().collect();
            let want: BTreeSet<String> = [ns.to_string(), "kube-system".to_string()].into();
            assert_eq!(excluded, want, "{ctx}: namespaces kept out of the webhook");
        }
    }
}

/// The serving Certificate's issuer (and, for a CA issuer, the CA's own Certificate) exist in
/// the same namespace, so cert-manager can actually issue it.
pub fn issuer_chain_is_rendered(cert: &Value) {
    let ns = namespace_of(cert);
    let mut cert = cert;
    for _ in 0..3 {
        let issuer_ref = &cert["spec"]["issuerRef"];
        assert_eq!(
            issuer_ref["kind"].as_str().unwrap_or("Issuer"),
            "Issuer",
            "a namespaced Issuer"
        );
        let issuer_name = s(&issuer_ref["name"], "issuerRef.name");
        let issuer = named("Issuer", Some(ns), issuer_name)
            .unwrap_or_else(|| panic!("Issuer {ns}/{issuer_name} is not rendered"));
        if issuer["spec"].get("selfSigned").is_some() {
            return;
        }
        let ca_secret = s(&issuer["spec"]["ca"]["secretName"], "CA issuer secretName");
        cert = all_of("Certificate")
            .into_iter()
            .find(|c| c["spec"]["secretName"] == ca_secret && namespace_of(c) == ns)
            .unwrap_or_else(|| panic!("no Certificate writes the CA Secret {ns}/{ca_secret}"));
        assert_eq!(cert["spec"]["isCA"], true, "the CA Certificate is a CA");
    }
    panic!("the issuer chain does not end in a selfSigned Issuer");
}
