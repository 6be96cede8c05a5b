//! Spiderpool `SpiderIPPool` and `SpiderSubnet`: S1–S4, S7 and S8 judge the spec on its own
//! (`rules::spider_spec`, on the review's reading; a SpiderSubnet's spec is a SpiderIPPool's
//! without podAffinity, so the same rules judge it); S5 and S6 are the SpiderIPPool's part of the
//! rules every pool kind shares (`rules::pool`, which adds P10 and P11); S9–S12 read the view:
//! how pools and subnets share `spec.subnet` (`rules::spider_subnet`).
//!
//! Who holds an address of a SpiderIPPool is recorded by Spiderpool itself in the pool's
//! `status.allocatedIPs`, not in objects the index watches, so S5 and S6 read the status of the
//! stored object (a main-resource update cannot change status, so old and new carry the same).
//! A SpiderSubnet holds nothing itself: pods draw from the SpiderIPPools carved from it (those in
//! its address space declaring its very `spec.subnet`, `model::spider::carved`), and S11 and S12
//! protect what those pools have.

use serde_json::Value;

use crate::field::{FieldError, Verdict};
use crate::model::pool::PoolReading;
use crate::model::spider::{allocation, Allocation};
use crate::model::Meta;
use crate::rule_id::RuleId;
use crate::rules::pool::{keeps_held, refuse_delete, PoolKind, Pools};
use crate::rules::spider_subnet::{carved_inside, s5_immutable, subnet_clashes};
use crate::rules::util::{join_shown, MAX_LISTED};
use crate::rules::OverlapScope;
use crate::rules::{Call, Ctx};

/// S6's text, in P9's words.
const HELD: &str = "Pool has IPs allocated. Cannot delete Pool until all IPs have been released.";

/// `SpiderIPPool`: S5 and S6 on top of the shared pool rules; held by what its status records.
pub(crate) struct SpiderIPPool;

pub(crate) static POOL: Pools<SpiderIPPool> = Pools(std::marker::PhantomData);

impl PoolKind for SpiderIPPool {
    const KEEPS_HELD: RuleId = RuleId::S5;
    const DELETE: RuleId = RuleId::S6;
    /// Its status records the holders: S5 and S6 read the stored object, not the view.
    const HOLDERS_IN_VIEW: bool = false;

    const VIEW_RULES: &'static [RuleId] = &[RuleId::S9, RuleId::S11];

    /// S9 against SpiderIPPools and SpiderSubnets; S11: a pool carved from a SpiderSubnet gains
    /// only addresses of the subnet.
    fn against_view(r: &PoolReading, before: Option<&PoolReading>, ctx: &Ctx, v: &mut Verdict) {
        if ctx.options.overlap_scope == OverlapScope::Off {
            return;
        }
        subnet_clashes(&r.proj, before.map(|b| &b.proj), ctx, v);
        carved_inside(r, before, ctx, v);
    }

    /// S5: Spiderpool keys everything it hands out by subnet and family.
    fn immutable(obj: &Value, old: &Value, out: &mut Vec<FieldError>) {
        s5_immutable(obj, old, out);
    }

    /// S5: what pods hold stays allocatable.
    fn keeps_held(
        r: &PoolReading,
        before: &PoolReading,
        obj: &Value,
        old: &Value,
        _ctx: &Ctx,
        v: &mut Verdict,
    ) {
        let held = || {
            allocation(old).ips.into_iter().filter_map(|a| {
                let pod = a.pod;
                a.ip.map(|ip| (ip, || pod.unwrap_or_else(|| "(unknown pod)".to_string())))
            })
        };
        keeps_held(Self::KEEPS_HELD, r, before, obj, held, v);
    }

    /// S6: a pool whose status says it hands out addresses cannot be deleted. The skip
    /// annotations of P9 apply too: they are the documented escape hatch for any pool.
    fn delete(old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        refuse_delete(Self::DELETE, &Meta::read(old), || {
            let a = allocation(old);
            a.held().then(|| format!("{HELD} {}", holders(&a)))
        })
    }
}

/// Who holds the pool, as far as its status tells.
fn holders(a: &Allocation) -> String {
    if a.unreadable {
        return "status.allocatedIPs cannot be read, so the pool counts as held.".to_string();
    }
    if a.ips.is_empty() {
        return format!(
            "status.allocatedIPCount is {}.",
            a.count.unwrap_or_default()
        );
    }
    let shown: Vec<String> = a
        .ips
        .iter()
        .take(MAX_LISTED)
        .map(|ip| ip.holder_text())
        .collect();
    format!("Held by: {}", join_shown(&shown, a.ips.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{DenyReason, ErrorType};
    use crate::index::Index;
    use crate::kinds::Kind;
    use crate::model::Operation;
    use crate::rules::test_support::{
        self as ts, eco_object as object, eco_old_object as old_object, errors as texts, index,
    };
    use crate::rules::Options;
    use serde_json::json;

    fn create(obj: &Value, ix: &Index) -> Verdict {
        ts::create(Kind::SpiderIPPool, obj, ix)
    }

    fn update(obj: &Value, old: &Value, ix: &Index) -> Verdict {
        ts::update(Kind::SpiderIPPool, obj, old, ix)
    }

    fn delete(old: &Value) -> Verdict {
        ts::delete(Kind::SpiderIPPool, old, &Index::new())
    }

    #[test]
    fn captures_pass() {
        let ix = Index::new();
        for f in ["spiderippool-create.json", "spiderippool-create-ipv6.json"] {
            assert_eq!(create(&object(f), &ix), Verdict::default(), "{f}");
        }
        for f in [
            "spiderippool-update-label.json",
            "spiderippool-update-spec.json",
        ] {
            let v = update(&object(f), &old_object(f), &ix);
            assert!(v.allowed(), "{f}: {:?}", texts(&v));
        }
    }

    #[test]
    fn s1_unformatted_subnet_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["subnet"] = json!("172.18.41.7/24");
        let v = create(&obj, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.subnet: Invalid value: "172.18.41.7/24": unformatted subnet 172.18.41.7/24, please change it to 172.18.41.0/24"#
            ]
        );
    }

    #[test]
    fn s2_ip_version_of_the_other_family_is_denied() {
        let mut obj = object("spiderippool-create-ipv6.json");
        obj["spec"]["ipVersion"] = json!(4);
        assert_eq!(create(&obj, &Index::new()).rules(), ["S2"]);
    }

    #[test]
    fn s3_ip_outside_the_subnet_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["ips"][1] = json!("172.18.42.60");
        obj["spec"]["excludeIPs"][0] = json!("172.18.41.45-172.18.41.40");
        let v = create(&obj, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips[1]: Invalid value: "172.18.42.60": must be inside spec.subnet 172.18.41.0/24"#,
                r#"spec.excludeIPs[0]: Invalid value: "172.18.41.45-172.18.41.40": range start 172.18.41.45 is after range end 172.18.41.40"#,
            ]
        );
    }

    #[test]
    fn s4_allocatable_gateway_is_denied() {
        let mut obj = object("spiderippool-create.json");
        obj["spec"]["gateway"] = json!("172.18.41.41");
        let v = create(&obj, &Index::new());
        assert_eq!(v.rules(), ["S4"]);
        // Excluded, the same gateway is fine.
        obj["spec"]["excludeIPs"] = json!(["172.18.41.41"]);
        assert!(create(&obj, &Index::new()).allowed());
    }

    #[test]
    fn s5_subnet_and_ip_version_are_immutable() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["subnet"] = json!("172.18.0.0/16");
        obj["spec"]["ipVersion"] = json!(6);
        let v = update(&obj, &old, &Index::new());
        let texts = texts(&v);
        assert_eq!(
            texts[..2],
            [
                r#"spec.subnet: Invalid value: "172.18.0.0/16": field is immutable (was "172.18.41.0/24")"#,
                "spec.ipVersion: Invalid value: 6: field is immutable (was 4)",
            ]
        );
    }

    #[test]
    fn s5_allocated_ips_in_the_status_string_stay_allocatable() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["excludeIPs"] = json!(["172.18.41.40"]);
        let v = update(&obj, &old, &Index::new());
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips: Invalid value: ["172.18.41.40-172.18.41.55","172.18.41.60"]: pool addresses do not contain allocated addresses: default/web-0 172.18.41.40"#
            ]
        );
        assert_eq!(v.errors[0].rule, "S5");
    }

    #[test]
    fn s6_delete_denied_while_allocated_ips_string_has_keys() {
        let v = delete(&old_object("spiderippool-delete.json"));
        assert_eq!(v.reason, DenyReason::Forbidden);
        assert_eq!(v.errors[0].kind, ErrorType::Forbidden);
        assert_eq!(
            texts(&v),
            ["metadata.name: Forbidden: Pool has IPs allocated. Cannot delete Pool until all IPs have been released. Held by: default/web-0 (172.18.41.40)"]
        );
    }

    #[test]
    fn s6_delete_denied_on_count_or_unreadable_allocations() {
        let mut old = old_object("spiderippool-delete.json");
        old["status"] = json!({"allocatedIPCount": 2, "allocatedIPs": "{}"});
        assert!(texts(&delete(&old))[0].ends_with("status.allocatedIPCount is 2."));
        old["status"] = json!({"allocatedIPCount": 0, "allocatedIPs": "{\"172.18.41.40\":"});
        assert!(texts(&delete(&old))[0].ends_with("cannot be read, so the pool counts as held."));
        old["status"] = json!({"allocatedIPCount": 0, "allocatedIPs": "{}"});
        assert!(delete(&old).allowed());
        old["status"] = Value::Null;
        assert!(delete(&old).allowed());
    }

    #[test]
    fn p11_deleting_spiderippool_passes_every_update() {
        let old = old_object("spiderippool-update-spec.json");
        let mut obj = object("spiderippool-update-spec.json");
        obj["spec"]["subnet"] = json!("10.0.0.0/8");
        obj["metadata"]["deletionTimestamp"] = json!("2026-11-21T23:22:32Z");
        assert!(update(&obj, &old, &Index::new()).allowed());
    }

    #[test]
    fn x5_unchanged_spiderippool_spec_is_never_denied() {
        let mut old = old_object("spiderippool-update-label.json");
        old["spec"]["gateway"] = json!("172.18.41.41");
        let mut obj = old.clone();
        obj["metadata"]["labels"]["x"] = json!("y");
        assert_eq!(update(&obj, &old, &Index::new()), Verdict::default());
    }

    #[test]
    fn p10_spiderippool_overlaps_other_kinds_only_in_its_space() {
        let incl = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "shared"},
            "spec": {"addresses": ["172.18.41.48-172.18.41.70"], "prefix": 24}});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &incl)]);
        let v = create(&object("spiderippool-create.json"), &ix);
        assert_eq!(
            texts(&v),
            [
                r#"spec.ips[0]: Invalid value: "172.18.41.40-172.18.41.50": overlaps GlobalInClusterIPPool shared (172.18.41.48-172.18.41.50)"#,
                r#"spec.ips[1]: Invalid value: "172.18.41.60": overlaps GlobalInClusterIPPool shared (172.18.41.60)"#,
            ]
        );
        let mut other = incl.clone();
        other["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &other)]);
        assert!(create(&object("spiderippool-create.json"), &ix).allowed());
        // A spec update is judged on the addresses it adds.
        let old = old_object("spiderippool-update-spec.json");
        let obj = object("spiderippool-update-spec.json");
        let narrow = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "GlobalInClusterIPPool",
            "metadata": {"name": "shared"},
            "spec": {"addresses": ["172.18.41.52"], "prefix": 24}});
        let ix = index(&[(Kind::GlobalInClusterIPPool, &narrow)]);
        assert_eq!(update(&obj, &old, &ix).rules(), ["P10"]);
    }

    // === S7: routes (Spiderpool's own webhook cases, in our words) ===

    /// A pool as Spiderpool's webhook tests write it: 172.18.40.0/24, a few IPs.
    fn spider(spec: Value) -> Value {
        let mut base = json!({"subnet": "172.18.40.0/24", "ipVersion": 4,
            "ips": ["172.18.40.2-172.18.40.3", "172.18.40.10"]});
        for (k, v) in spec.as_object().unwrap() {
            base[k] = v.clone();
        }
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": "ippool-1"}, "spec": base})
    }

    #[test]
    fn s7_routes_table_on_create_and_update() {
        let r = |dst: &str, gw: &str| json!({"dst": dst, "gw": gw});
        let cases: &[(&str, Value, Option<&str>)] = &[
            (
                "default route",
                json!([r("0.0.0.0/0", "172.18.40.1")]),
                Some(
                    r#"spec.routes[0].dst: Invalid value: "0.0.0.0/0": is a default route: set spec.gateway instead"#,
                ),
            ),
            (
                "same dst twice",
                json!([
                    r("192.168.40.0/24", "172.18.40.1"),
                    r("192.168.40.0/24", "172.18.40.2")
                ]),
                Some(
                    r#"spec.routes[1].dst: Duplicate value: "192.168.40.0/24": spec.routes[0] already routes 192.168.40.0/24"#,
                ),
            ),
            (
                "dst not a CIDR",
                json!([r("invalid CIDR", "172.18.40.1")]),
                Some(r#"spec.routes[0].dst: Invalid value: "invalid CIDR": "#),
            ),
            (
                "dst of the other family",
                json!([r("fd00:40::/120", "172.18.40.1")]),
                Some(
                    r#"spec.routes[0].dst: Invalid value: "fd00:40::/120": IP family does not match spec.subnet 172.18.40.0/24"#,
                ),
            ),
            (
                "gw not an IP",
                json!([r("192.168.40.0/24", "invalid IP")]),
                Some(r#"spec.routes[0].gw: Invalid value: "invalid IP": "#),
            ),
            (
                "gw outside the subnet",
                json!([r("192.168.40.0/24", "172.18.41.1")]),
                Some(
                    r#"spec.routes[0].gw: Invalid value: "172.18.41.1": must be inside spec.subnet 172.18.40.0/24"#,
                ),
            ),
            (
                "a route that is a number, shown as one",
                json!([5]),
                Some("spec.routes[0]: Invalid value: 5: must be an object"),
            ),
            (
                "a route that is a string, quoted once",
                json!(["192.168.40.0/24"]),
                Some(r#"spec.routes[0]: Invalid value: "192.168.40.0/24": must be an object"#),
            ),
            (
                "a valid route",
                json!([r("192.168.40.0/24", "172.18.40.40")]),
                None,
            ),
        ];
        for (what, routes, want) in cases {
            let obj = spider(json!({"routes": routes}));
            let old = spider(json!({}));
            for v in [
                create(&obj, &Index::new()),
                update(&obj, &old, &Index::new()),
            ] {
                match want {
                    Some(want) => {
                        let t = texts(&v);
                        assert_eq!(t.len(), 1, "{what}: {t:?}");
                        assert!(t[0].starts_with(want), "{what}: {t:?}");
                        assert_eq!(v.rules(), ["S7"], "{what}");
                    }
                    None => assert!(v.allowed(), "{what}: {:?}", texts(&v)),
                }
            }
        }
        // IPv6: a default route is `::/0`; a gw inside the subnet passes.
        let v6 = |routes: Value| {
            let mut o = spider(json!({"subnet": "abcd:1234::/120", "ipVersion": 6,
                "ips": ["abcd:1234::2-abcd:1234::3"], "routes": routes}));
            o["spec"]["gateway"] = json!("abcd:1234::1");
            o
        };
        assert_eq!(
            create(&v6(json!([r("::/0", "abcd:1234::1")])), &Index::new()).rules(),
            ["S7"]
        );
        assert!(create(
            &v6(json!([r("fd00:40::/120", "abcd:1234::28")])),
            &Index::new()
        )
        .allowed());
    }

    #[test]
    fn x5_s7_unchanged_routes_are_never_denied() {
        let bad = spider(json!({"routes": [{"dst": "0.0.0.0/0", "gw": "172.18.40.1"}]}));
        let mut relabelled = bad.clone();
        relabelled["metadata"]["labels"] = json!({"team": "a"});
        assert!(update(&relabelled, &bad, &Index::new()).allowed());
        // A spec change elsewhere leaves the old finding to the audit.
        let mut grown = bad.clone();
        grown["spec"]["ips"] = json!(["172.18.40.2-172.18.40.5", "172.18.40.10"]);
        assert!(update(&grown, &bad, &Index::new()).allowed());
    }

    // === S8: podAffinity ===

    #[test]
    fn s8_pod_affinity_table_on_create_and_update() {
        let cases: &[(&str, Value, Option<&str>)] = &[
            ("label value starting with a dot", json!({"matchLabels": {"key": ".starts.with.dot"}}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: ".starts.with.dot": a valid label must be"#)),
            ("empty selector", json!({"matchLabels": {}, "matchExpressions": []}),
                Some("spec.podAffinity: Invalid value: {\"matchExpressions\":[],\"matchLabels\":{}}: an empty selector")),
            ("no fields at all", json!({}),
                Some("spec.podAffinity: Invalid value: {}: an empty selector")),
            ("bad key", json!({"matchLabels": {"a/b/c": "x"}}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: "a/b/c": a valid label key"#)),
            ("In without values", json!({"matchExpressions": [{"key": "app", "operator": "In"}]}),
                Some("spec.podAffinity.matchExpressions[0].values: Required value")),
            ("Exists with values", json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}),
                Some("spec.podAffinity.matchExpressions[0].values: Forbidden")),
            ("unknown operator", json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["a"]}]}),
                Some(r#"spec.podAffinity.matchExpressions[0].operator: Invalid value: "Near""#)),
            ("bad value in an expression", json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["-x"]}]}),
                Some(r#"spec.podAffinity.matchExpressions[0].values[0]: Invalid value: "-x""#)),
            ("matchLabels not a map", json!({"matchLabels": ["a"], "matchExpressions": [{"key": "app", "operator": "Exists"}]}),
                Some(r#"spec.podAffinity.matchLabels: Invalid value: "[\"a\"]": must be an object"#)),
            ("an expression that is a number", json!({"matchExpressions": [7]}),
                Some("spec.podAffinity.matchExpressions[0]: Invalid value: 7: must be an object")),
            ("matchExpressions not a list", json!({"matchLabels": {"key": "value"}, "matchExpressions": "app"}),
                Some(r#"spec.podAffinity.matchExpressions: Invalid value: "app": must be a list"#)),
            ("a valid selector", json!({"matchLabels": {"key": "value"}}), None),
            ("a valid expression", json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a", "b"]}]}), None),
        ];
        for (what, affinity, want) in cases {
            let obj = spider(json!({"podAffinity": affinity}));
            let old = spider(json!({}));
            for v in [
                create(&obj, &Index::new()),
                update(&obj, &old, &Index::new()),
            ] {
                match want {
                    Some(want) => {
                        let t = texts(&v);
                        assert_eq!(t.len(), 1, "{what}: {t:?}");
                        assert!(t[0].starts_with(want), "{what}: {t:?}");
                        assert_eq!(v.rules(), ["S8"], "{what}");
                    }
                    None => assert!(v.allowed(), "{what}: {:?}", texts(&v)),
                }
            }
        }
    }

    #[test]
    fn s8_an_application_pool_keeps_the_affinity_spiderpool_derived() {
        let derived = json!({"matchLabels": {
            "ipam.spidernet.io/app-api-group": "apps", "ipam.spidernet.io/app-api-version": "v1",
            "ipam.spidernet.io/app-kind": "Deployment", "ipam.spidernet.io/app-namespace": "test-ns",
            "ipam.spidernet.io/app-name": "test-name"}});
        let mut auto = spider(json!({"ips": ["172.18.40.1"], "podAffinity": derived}));
        auto["metadata"]["labels"] = json!({
            "ipam.spidernet.io/owner-application-gv": "apps_v1",
            "ipam.spidernet.io/owner-application-kind": "Deployment",
            "ipam.spidernet.io/owner-application-namespace": "test-ns",
            "ipam.spidernet.io/owner-application-name": "test-name"});
        assert!(
            create(&auto, &Index::new()).allowed(),
            "{:?}",
            texts(&create(&auto, &Index::new()))
        );
        let mut changed = auto.clone();
        changed["spec"]["podAffinity"] = json!({"matchLabels": {"key": "value"},
            "matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]});
        for v in [
            create(&changed, &Index::new()),
            update(&changed, &auto, &Index::new()),
        ] {
            assert_eq!(
                texts(&v),
                [
                    r#"spec.podAffinity.matchLabels: Invalid value: "key": a pool Spiderpool created for an application (ipam.spidernet.io/owner-application-name) selects its Pods by the ipam.spidernet.io/app-* keys only"#,
                    r#"spec.podAffinity.matchExpressions: Invalid value: [{"key":"key","operator":"In","values":["value"]}]: a pool Spiderpool created for an application (ipam.spidernet.io/owner-application-name) takes no matchExpressions"#,
                ]
            );
        }
    }

    #[test]
    fn x5_s8_an_unchanged_selector_is_never_denied() {
        let bad = spider(json!({"podAffinity": {"matchLabels": {"key": ".starts.with.dot"}}}));
        let mut grown = bad.clone();
        grown["spec"]["ips"] = json!(["172.18.40.2-172.18.40.5", "172.18.40.10"]);
        assert!(update(&grown, &bad, &Index::new()).allowed());
    }

    // === S9: overlapping subnets are the same subnet ===

    fn named(name: &str, subnet: &str, ips: &[&str]) -> Value {
        json!({"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderIPPool",
            "metadata": {"name": name}, "spec": {"subnet": subnet, "ips": ips}})
    }

    #[test]
    fn s9_overlapping_subnets_must_be_identical() {
        // Spiderpool's case: a /25 exists, a /24 holding it is created (disjoint ips).
        let existing = named("z-exist", "172.18.40.0/25", &["172.18.40.40"]);
        let ix = index(&[(Kind::SpiderIPPool, &existing)]);
        let v = create(
            &named(
                "ippool-1",
                "172.18.40.0/24",
                &["172.18.40.1-172.18.40.2", "172.18.40.10"],
            ),
            &ix,
        );
        assert_eq!(
            texts(&v),
            [
                r#"spec.subnet: Invalid value: "172.18.40.0/24": overlaps the subnet of SpiderIPPool.spiderpool.spidernet.io z-exist (172.18.40.0/25); SpiderIPPools and SpiderSubnets whose subnets overlap must declare the same subnet"#
            ]
        );
        assert_eq!(v.rules(), ["S9"]);
        // The same subnet, disjoint ips: fine. A disjoint subnet: fine.
        assert!(create(&named("ippool-2", "172.18.40.0/25", &["172.18.40.10"]), &ix).allowed());
        assert!(create(&named("ippool-3", "172.18.41.0/24", &["172.18.41.10"]), &ix).allowed());
        // An empty pool still declares its subnet.
        assert_eq!(
            create(&named("ippool-4", "172.18.0.0/16", &[]), &ix).rules(),
            ["S9"]
        );
        // Another address space, or --overlap-scope off: not this pool's neighbour.
        let mut apart = named("ippool-5", "172.18.40.0/24", &["172.18.40.10"]);
        apart["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        assert!(create(&apart, &ix).allowed());
        let off = Options {
            overlap_scope: OverlapScope::Off,
            ..Options::default()
        };
        let v = ts::judge(
            Kind::SpiderIPPool,
            Operation::Create,
            Some(&named("ippool-6", "172.18.40.0/24", &["172.18.40.10"])),
            None,
            &ix,
            off,
        );
        assert!(v.allowed(), "{:?}", texts(&v));
    }

    #[test]
    fn x5_s9_an_update_that_keeps_its_subnet_keeps_its_neighbours() {
        let a = named("a", "172.18.40.0/25", &["172.18.40.40"]);
        let b = named("b", "172.18.40.0/24", &["172.18.40.200"]);
        let ix = index(&[(Kind::SpiderIPPool, &a), (Kind::SpiderIPPool, &b)]);
        let mut grown = b.clone();
        grown["spec"]["ips"] = json!(["172.18.40.200-172.18.40.210"]);
        assert!(
            update(&grown, &b, &ix).allowed(),
            "{:?}",
            texts(&update(&grown, &b, &ix))
        );
        // Moving into the space of the other pool meets it.
        let mut moved = b.clone();
        moved["metadata"]["annotations"] = json!({"ipam-guard.io/address-space": "dc2"});
        let ix2 = index(&[(Kind::SpiderIPPool, &a), (Kind::SpiderIPPool, &moved)]);
        assert_eq!(update(&b, &moved, &ix2).rules(), ["S9"]);
    }
}
