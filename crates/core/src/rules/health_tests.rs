use serde_json::{json, Value};

use super::*;
use crate::rules::test_support::{create, create_with, index};

const NS: &str = "team-a";
/// 2026-11-24T10:00:00Z
const T0: i64 = 1_795_514_400;

fn pool(name: &str, addresses: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"addresses": [addresses], "prefix": 24, "gateway": "10.0.0.1"}})
}

fn claim(name: &str, pool: &str, created: Option<&str>, bound: bool) -> Value {
    let mut c = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}}});
    if let Some(t) = created {
        c["metadata"]["creationTimestamp"] = json!(t);
    }
    if bound {
        c["status"] = json!({"addressRef": {"name": name}});
    }
    c
}

fn address(name: &str, ip: &str, claim: &str, pool: &str) -> Value {
    json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"address": ip, "prefix": 24, "gateway": "10.0.0.1",
            "claimRef": {"name": claim},
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool}}})
}

fn texts(found: &[(ObjKey, Warning)]) -> Vec<String> {
    found
        .iter()
        .map(|(k, w)| format!("{k}: {}: {} [{}]", w.path, w.message, w.rule))
        .collect()
}

#[test]
fn h1_a_claim_waiting_longer_than_stuck_after_while_its_pool_has_free_addresses() {
    let p = pool("nodes", "10.0.0.10-10.0.0.12");
    let waiting = claim("web-0", "nodes", Some("2026-11-24T10:00:00Z"), false);
    let ix = index(&[
        (Kind::InClusterIPPool, &p),
        (Kind::IPAddressClaim, &waiting),
    ]);
    let o = Options::default();
    // Ten minutes exactly is not longer than ten minutes.
    assert!(judge(&ix, o, T0 + 600).is_empty());
    assert_eq!(
        texts(&judge(&ix, o, T0 + 601)),
        ["IPAddressClaim team-a/web-0: status.addressRef: no address since 2026-11-24T10:00:00Z \
          (longer than --stuck-after 10m) while InClusterIPPool team-a/nodes has 3 free addresses: \
          the provider is not serving this claim (is it running, does it watch this namespace, do its logs name the claim?) [H1]"]
    );
    let patient = Options {
        stuck_after: Duration::from_secs(3600),
        ..o
    };
    assert!(judge(&ix, patient, T0 + 601).is_empty());
}

#[test]
fn h1_a_served_claim_is_not_stuck() {
    let p = pool("nodes", "10.0.0.10-10.0.0.12");
    let by_status = claim("web-0", "nodes", Some("2026-11-24T10:00:00Z"), true);
    // The provider wrote the IPAddress but not yet the claim's status.
    let by_address = claim("web-1", "nodes", Some("2026-11-24T10:00:00Z"), false);
    let a = address("web-1", "10.0.0.10", "web-1", "nodes");
    // No creationTimestamp (as on a create review): its age is unknown.
    let unknown = claim("web-2", "nodes", None, false);
    let ix = index(&[
        (Kind::InClusterIPPool, &p),
        (Kind::IPAddressClaim, &by_status),
        (Kind::IPAddressClaim, &by_address),
        (Kind::IPAddressClaim, &unknown),
        (Kind::IPAddress, &a),
    ]);
    assert!(judge(&ix, Options::default(), T0 + 86_400).is_empty());
}

#[test]
fn e1_in_the_audit_a_waiting_claim_whose_pool_is_exhausted() {
    let p = pool("nodes", "10.0.0.10-10.0.0.11");
    let a = address("web-0", "10.0.0.10", "web-0", "nodes");
    let b = address("web-1", "10.0.0.11", "web-1", "nodes");
    let served = claim("web-0", "nodes", Some("2026-11-24T10:00:00Z"), true);
    let served2 = claim("web-1", "nodes", Some("2026-11-24T10:00:00Z"), true);
    // Fresh: E1 does not wait for --stuck-after, H1 never speaks for a full pool.
    let waiting = claim("web-2", "nodes", Some("2026-11-24T10:00:00Z"), false);
    let ix = index(&[
        (Kind::InClusterIPPool, &p),
        (Kind::IPAddress, &a),
        (Kind::IPAddress, &b),
        (Kind::IPAddressClaim, &served),
        (Kind::IPAddressClaim, &served2),
        (Kind::IPAddressClaim, &waiting),
    ]);
    let expected = ["IPAddressClaim team-a/web-2: spec.poolRef.name: InClusterIPPool team-a/nodes has no free address \
                     (2 of 2 in use); this claim waits until one is released [E1]"];
    assert_eq!(texts(&judge(&ix, Options::default(), T0)), expected);
    assert_eq!(
        texts(&judge(&ix, Options::default(), T0 + 86_400)),
        expected
    );
    // The figures are `usage`'s.
    let u = ix
        .pool_usage()
        .into_iter()
        .find(|u| u.key.name.as_ref() == "nodes")
        .unwrap();
    assert_eq!((u.used, u.allocatable, u.free()), (2, 2, 0));
}

#[test]
fn h2_an_address_whose_claim_is_gone_and_h3_one_whose_pool_is_gone() {
    let p = pool("nodes", "10.0.0.10-10.0.0.20");
    let orphan = address("web-0", "10.0.0.10", "web-0", "nodes");
    let no_pool = address("web-1", "10.0.0.11", "web-1", "gone");
    let c = claim("web-1", "gone", Some("2026-11-24T10:00:00Z"), true);
    let ix = index(&[
        (Kind::InClusterIPPool, &p),
        (Kind::IPAddress, &orphan),
        (Kind::IPAddress, &no_pool),
        (Kind::IPAddressClaim, &c),
    ]);
    assert_eq!(
        texts(&judge(&ix, Options::default(), T0)),
        [
            "IPAddress team-a/web-0: spec.claimRef.name: IPAddressClaim team-a/web-0 not found: an orphaned address \
             (its claim was deleted, or a restore has not brought it back yet); it still holds 10.0.0.10 [H2]",
            "IPAddress team-a/web-1: spec.poolRef.name: InClusterIPPool team-a/gone not found: the address's pool is gone \
             (deleted, or a restore has not brought it back yet); it still holds 10.0.0.11, which no pool accounts for [H3]",
        ]
    );
}

#[test]
fn h1_h2_metal3_claims_and_addresses() {
    let p = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": {"name": "m3", "namespace": NS},
        "spec": {"pools": [{"start": "10.1.0.10", "end": "10.1.0.20"}], "prefix": 24}});
    let waiting = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
        "metadata": {"name": "host-0", "namespace": NS, "creationTimestamp": "2026-11-24T10:00:00Z"},
        "spec": {"pool": {"name": "m3"}}});
    let served = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
        "metadata": {"name": "host-1", "namespace": NS, "creationTimestamp": "2026-11-24T10:00:00Z"},
        "spec": {"pool": {"name": "m3"}}, "status": {"address": {"name": "m3-host-1"}}});
    let orphan = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
        "metadata": {"name": "m3-host-9", "namespace": NS},
        "spec": {"address": "10.1.0.19", "prefix": 24, "pool": {"name": "m3"}, "claim": {"name": "host-9"}}});
    let ix = index(&[
        (Kind::Metal3IPPool, &p),
        (Kind::Metal3IPClaim, &waiting),
        (Kind::Metal3IPClaim, &served),
        (Kind::Metal3IPAddress, &orphan),
    ]);
    let found = texts(&judge(&ix, Options::default(), T0 + 3600));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0]
            .starts_with("IPClaim.ipam.metal3.io team-a/host-0: status.address: no address since")
            && found[0].contains("IPPool.ipam.metal3.io team-a/m3 has 10 free addresses")
            && found[0].ends_with("[H1]"),
        "{found:#?}"
    );
    assert!(
        found[1].starts_with("IPAddress.ipam.metal3.io team-a/m3-host-9: spec.claim.name: IPClaim.ipam.metal3.io team-a/host-9 not found")
            && found[1].ends_with("[H2]"),
        "{found:#?}"
    );
}

// === E1 at admission ===

fn full_cluster() -> (Value, Value, Value) {
    (
        pool("nodes", "10.0.0.10-10.0.0.11"),
        address("web-0", "10.0.0.10", "web-0", "nodes"),
        address("web-1", "10.0.0.11", "web-1", "nodes"),
    )
}

fn warned(v: &crate::field::Verdict) -> Vec<String> {
    v.warnings
        .iter()
        .map(|w| format!("{}: {} [{}]", w.path, w.message, w.rule))
        .collect()
}

#[test]
fn e1_a_claim_into_a_full_pool_is_admitted_with_a_warning() {
    let (p, a, b) = full_cluster();
    let ix = index(&[
        (Kind::InClusterIPPool, &p),
        (Kind::IPAddress, &a),
        (Kind::IPAddress, &b),
    ]);
    let v = create(
        Kind::IPAddressClaim,
        &claim("web-2", "nodes", None, false),
        &ix,
    );
    assert!(v.allowed());
    assert_eq!(
        warned(&v),
        [
            "spec.poolRef.name: InClusterIPPool team-a/nodes has no free address (2 of 2 in use); \
          this claim waits until one is released [E1]"
        ]
    );
    // What `usage` and the metrics read: the same figures.
    let u = ix
        .usage_of_pool(&ObjKey::new(Kind::InClusterIPPool, Some(NS), "nodes"))
        .unwrap();
    assert_eq!(ix.pool_usage(), vec![u.clone()]);
    assert!(warned(&v)[0].contains(&format!("({} of {} in use)", u.used, u.allocatable)));
    // An audit judges stored claims that may hold their address: `judge` speaks there instead.
    let stored = Options {
        stored: true,
        ..Options::default()
    };
    assert!(create_with(
        Kind::IPAddressClaim,
        &claim("web-2", "nodes", None, false),
        &ix,
        stored
    )
    .warnings
    .is_empty());
}

#[test]
fn e1_below_the_threshold_the_warning_says_how_many_are_left() {
    // 10.0.0.10-10.0.0.49: 40 allocatable; 5% is 2, so the count 2 and the share agree.
    let p = pool("nodes", "10.0.0.10-10.0.0.49");
    let held: Vec<Value> = (10..48)
        .map(|i| {
            address(
                &format!("a{i}"),
                &format!("10.0.0.{i}"),
                &format!("a{i}"),
                "nodes",
            )
        })
        .collect();
    let mut objects = vec![(Kind::InClusterIPPool, &p)];
    objects.extend(held.iter().map(|a| (Kind::IPAddress, a)));
    // 38 of 40 used: 2 free, not below 2.
    let ix = index(&objects);
    let c = claim("web", "nodes", None, false);
    assert!(create(Kind::IPAddressClaim, &c, &ix).warnings.is_empty());
    let last = address("a48", "10.0.0.48", "a48", "nodes");
    objects.push((Kind::IPAddress, &last));
    let ix = index(&objects);
    assert_eq!(
        warned(&create(Kind::IPAddressClaim, &c, &ix)),
        ["spec.poolRef.name: InClusterIPPool team-a/nodes has 1 free address left (39 of 40 in use; \
          warned below 2 free (--warn-free-below 5%,2)) [E1]"]
    );
    // A percentage alone: 50% of 40 is 20.
    let half = Options {
        warn_free_below: exhaustion::FreeThreshold::parse("50%").unwrap(),
        ..Options::default()
    };
    let ix = index(&objects[..22]);
    assert_eq!(
        warned(&create_with(Kind::IPAddressClaim, &c, &ix, half)),
        ["spec.poolRef.name: InClusterIPPool team-a/nodes has 19 free addresses left (21 of 40 in use; \
          warned below 20 free (--warn-free-below 50%)) [E1]"]
    );
}

#[test]
fn e1_metal3_claims_and_a_missing_pool() {
    let p = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPPool",
        "metadata": {"name": "m3", "namespace": NS},
        "spec": {"pools": [{"start": "10.1.0.10", "end": "10.1.0.10"}], "prefix": 24}});
    let a = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPAddress",
        "metadata": {"name": "m3-host-0", "namespace": NS},
        "spec": {"address": "10.1.0.10", "prefix": 24, "pool": {"name": "m3"}, "claim": {"name": "host-0"}}});
    let ix = index(&[(Kind::Metal3IPPool, &p), (Kind::Metal3IPAddress, &a)]);
    let c = json!({"apiVersion": "ipam.metal3.io/v1alpha1", "kind": "IPClaim",
        "metadata": {"name": "host-1", "namespace": NS}, "spec": {"pool": {"name": "m3"}}});
    let v = create(Kind::Metal3IPClaim, &c, &ix);
    assert!(v.allowed());
    assert_eq!(
        warned(&v),
        [
            "spec.pool.name: IPPool.ipam.metal3.io team-a/m3 has no free address (1 of 1 in use); \
          this claim waits until one is released [E1]"
        ]
    );
    // No pool in the view: C3's to say (CAPI), nothing for E1.
    let v = create(
        Kind::IPAddressClaim,
        &claim("web", "absent", None, false),
        &ix,
    );
    assert_eq!(v.rules(), [RuleId::C3]);
}

#[test]
fn e1_a_prefix_pool_counts_sub_prefixes() {
    // fd00:50::/63 hands out two /64s; one is held.
    let p = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterPrefixPool",
        "metadata": {"name": "v6", "namespace": NS},
        "spec": {"prefixes": ["fd00:50::/63"], "allocationPrefixLength": 64, "gateway": "fd00:50::1"}});
    let held = |name: &str, address: &str| {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"address": address, "prefix": 64, "gateway": "fd00:50::1", "claimRef": {"name": name},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool", "name": "v6"}}})
    };
    let (a, b) = (held("m-0", "fd00:50::"), held("m-1", "fd00:50:0:1::"));
    let c = json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
        "metadata": {"name": "m-2", "namespace": NS},
        "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool", "name": "v6"}}});
    let ix = index(&[(Kind::InClusterPrefixPool, &p), (Kind::IPAddress, &a)]);
    assert_eq!(
        warned(&create(Kind::IPAddressClaim, &c, &ix)),
        ["spec.poolRef.name: InClusterPrefixPool team-a/v6 has 1 free /64 sub-prefix left (1 of 2 in use; \
          warned below 2 free (--warn-free-below 5%,2)) [E1]"]
    );
    let ix = index(&[
        (Kind::InClusterPrefixPool, &p),
        (Kind::IPAddress, &a),
        (Kind::IPAddress, &b),
    ]);
    assert_eq!(
        warned(&create(Kind::IPAddressClaim, &c, &ix)),
        ["spec.poolRef.name: InClusterPrefixPool team-a/v6 has no free /64 sub-prefix (2 of 2 in use); \
          this claim waits until one is released [E1]"]
    );
}
