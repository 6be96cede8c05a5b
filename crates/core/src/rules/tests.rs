//! Table tests of what `rules::validate` does for every kind (K1, CONNECT, captured creates) and
//! of the projections. Each family's rules are tested beside them (`claim_tests.rs`,
//! `ipaddress_tests.rs`, `pool_tests.rs`); all build their view the way the server does:
//! objects → `model::project` → `Index`.

use serde_json::json;

use crate::field::Verdict;
use crate::index::Index;
use crate::kinds::Kind;
use crate::model::{project, Operation, Projection};
use crate::rules::test_support::*;
use crate::rules::Options;

// === dispatch ===

#[test]
fn k1_unserved_version_allowed_with_warning() {
    let mut obj = claim(NS, "c", "InClusterIPPool", "p");
    obj["apiVersion"] = json!("ipam.cluster.x-k8s.io/v1alpha9");
    obj["spec"] = json!({});
    let v = create(Kind::IPAddressClaim, &obj, &Index::new());
    assert!(v.allowed());
    assert_eq!(
        warnings(&v),
        ["ipam.cluster.x-k8s.io/v1alpha9 IPAddressClaim is not a version ipam-guard knows (serves v1alpha1, v1beta1, v1beta2); the object was not checked"]
    );
    assert_eq!(v.rules(), ["K1"]);
}

#[test]
fn connect_is_allowed_untouched() {
    let obj = claim(NS, "c", "InClusterIPPool", "p");
    let v = judge(
        Kind::IPAddressClaim,
        Operation::Connect,
        Some(&obj),
        None,
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
    // DELETE of a kind that is not a pool is not judged either.
    let v = judge(
        Kind::IPAddress,
        Operation::Delete,
        None,
        Some(&addr(NS, "a", "10.0.0.5", 24, "InClusterIPPool", "p")),
        &Index::new(),
        Options::default(),
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn captured_creates_pass_against_a_consistent_view() {
    let pool_a = review("inclusterippool-create.json").2.unwrap();
    let ix = index(&[(Kind::InClusterIPPool, &pool_a)]);
    for f in [
        "ipaddressclaim-create.json",
        "ipaddressclaim-create-v1beta1.json",
        "ipaddressclaim-create-v1alpha1.json",
        "inclusterippool-create.json",
        "inclusterippool-create-v1alpha1.json",
        "globalinclusterippool-create.json",
        "globalinclusterippool-create-v1alpha1.json",
    ] {
        let (kind, op, obj, old) = review(f);
        let v = judge(
            kind,
            op,
            obj.as_ref(),
            old.as_ref(),
            &ix,
            Options::default(),
        );
        assert!(v.allowed(), "{f}: {:?}", errors(&v));
        assert!(v.warnings.is_empty(), "{f}: {:?}", warnings(&v));
    }
}

#[test]
fn projections_of_captures() {
    for (f, want) in [
        (
            "inclusterippool-create.json",
            "10.10.0.10-10.10.0.20, 10.10.0.32-10.10.0.47",
        ),
        (
            "globalinclusterippool-create.json",
            "2001:db8::10-2001:db8::14, 2001:db8::16-2001:db8::20",
        ),
        (
            "globalinclusterippool-create-v1alpha1.json",
            "192.0.2.2-192.0.2.15",
        ),
    ] {
        let (kind, _, obj, _) = review(f);
        let Some(Projection::Pool(p)) = project(kind, obj.as_ref().unwrap()) else {
            panic!("{f}");
        };
        assert_eq!(p.allocatable.to_string(), want, "{f}");
    }
    let (kind, _, obj, _) = review("ipaddressclaim-create.json");
    assert!(matches!(
        project(kind, obj.as_ref().unwrap()),
        Some(Projection::Claim(_))
    ));
    let (kind, _, obj, _) = review("ipaddress-create.json");
    let Some(Projection::Address(a)) = project(kind, obj.as_ref().unwrap()) else {
        panic!()
    };
    assert_eq!(a.claim.as_deref(), Some("claim-a"));
}
