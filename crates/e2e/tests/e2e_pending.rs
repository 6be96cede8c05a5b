//! Pending entries (X2) never hide what the API server stores, against every real
//! kube-apiserver found (tests/e2e; skipped without one).
//!
//! ipam-guard is asked before the API server checks that the name is free and while the other
//! validating webhooks are still being asked, so a write it admitted can still fail
//! (AlreadyExists, another webhook's refusal, a quota). Its pending entry must then not stand in
//! for the stored object of the same name: that object still holds its addresses. Each test has
//! the API server refuse a write ipam-guard admitted, then asks for what conflicts only with the
//! stored object:
//!
//! - A9: an IPAddress created again under a stored name at another address (AlreadyExists); a new
//!   IPAddress at the stored one's address is still a duplicate;
//! - P10: the same for pools; and a pool where the refused version would have been is admitted
//!   once the pending TTL has passed, at the latest;
//! - a second validating webhook refuses what ipam-guard admitted: a CREATE (its address is free
//!   again within the TTL at the latest) and an UPDATE moving a pool (the stored range is still
//!   held: P10);
//! - three replicas whose decider shuts down cleanly (a handover) after IPAddresses were deleted
//!   and the watch showed it: the next decider gives the deleted addresses out and still refuses
//!   the kept ones (A9);
//! - the A9 and P10 cases again with three replicas.
//!
//! The API server presents a client certificate (`--client-ca-file`), so its admissions are
//! trusted ones, which reserve for the whole pending TTL; a short TTL keeps the waits short.

#[path = "../../../tests/server_support/client.rs"]
mod client;
mod e2e;
#[path = "e2e_pending/handover.rs"]
mod handover;
#[path = "e2e/replica.rs"]
mod replica;
#[path = "e2e_pending/replicas.rs"]
mod replicas;

use std::time::{Duration, Instant};

use e2e::api::*;
use e2e::pki::{ApiserverIdentity, Pki, Usage};
use e2e::refuser::{self, Refuser};
use e2e::{eventually, ControlPlane};
use ipam_guard::cluster::live::LiveOptions;
use ipam_guard::cluster::ClusterView;
use ipam_guard::model::ObjKey;
use serde_json::{json, Value};

pub const NS: &str = "pending";

/// The pending TTL of these tests (`--pending-ttl`, 30 s by default): long enough that every
/// step of a case fits inside it with room to spare on a loaded machine, short enough to wait
/// out where a refusal may last that long.
pub const TTL: Duration = Duration::from_secs(10);

/// How much later than the TTL an entry may still count: the sweep runs before each decision,
/// so this is the clock of a loaded machine, not a period.
pub const SLACK: Duration = Duration::from_secs(5);

// === where the webhook runs ===

/// ipam-guard in process on a live view, its webhooks registered and called, the API server
/// authenticated. Fields drop in order: ipam-guard before the control plane, the certificates
/// last.
pub struct One {
    pub guard: Guard,
    pub client: kube::Client,
    pub cp: ControlPlane,
    _files: tempfile::TempDir,
}

impl One {
    pub async fn start(assets: &e2e::Server) -> One {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let files = tempfile::tempdir().unwrap();
        let pki = Pki::issue(
            "apiserver client CA",
            Some("kube-apiserver"),
            &[],
            Usage::Client,
        );
        let identity = ApiserverIdentity::write(&pki, files.path());
        let cp = ControlPlane::start_with(assets, std::slice::from_ref(&identity.flag)).await;
        let client = cp.client().await;
        install_crds(&client).await;
        create_namespace(&client, NS).await;
        let options = LiveOptions {
            pending_ttl: TTL,
            ..LiveOptions::default()
        };
        let (guard, ca_pem) = start_ipam_guard_trusting(&cp, options, &identity.ca_file).await;
        register_webhooks(&client, guard.addr, &ca_pem).await;
        // A handshake without the API server's certificate would fail every call: this also
        // shows that it presents one.
        let reversed = in_cluster_pool(NS, "probe", "10.250.0.20-10.250.0.10", "10.250.0.1");
        eventually("ipam-guard's webhook to be called", WAIT, || async {
            let r = create(&client, &reversed, true).await;
            r.status == 422 && r.message().contains("admission webhook")
        })
        .await;
        One {
            guard,
            client,
            cp,
            _files: files,
        }
    }
}

/// One replica or three: the cases read the same either way.
pub enum Target {
    One(One),
    Three(replicas::Three),
}

impl Target {
    pub fn client(&self) -> &kube::Client {
        match self {
            Target::One(o) => &o.client,
            Target::Three(t) => &t.client,
        }
    }

    pub fn pending_ttl(&self) -> Duration {
        match self {
            Target::One(_) => TTL,
            Target::Three(t) => t.pending_ttl,
        }
    }

    /// Waits until the deciding view has `obj` (just created) from its watch rather than as
    /// its own pending entry: only then does a later admission of the same name displace the
    /// stored object instead of the entry that stood for it.
    pub async fn watched(&self, obj: &Value) {
        match self {
            Target::One(o) => {
                let key = ObjKey::new(
                    kind_of(obj),
                    obj["metadata"]["namespace"].as_str(),
                    obj["metadata"]["name"].as_str().unwrap(),
                );
                eventually("the watch to show the object", WAIT, || {
                    let pending = o.guard.view.is_pending(&key);
                    async move { !pending }
                })
                .await;
            }
            Target::Three(t) => t.watched(obj).await,
        }
    }
}

// === what the API server answers ===

/// The text of a denial's message and causes.
fn denial_text(r: &Resp) -> String {
    let mut text = r.message().to_string();
    for c in r.causes() {
        text.push('\n');
        text.push_str(c["message"].as_str().unwrap_or_default());
    }
    text
}

/// An answer in one line: the status, and the reason and message of a failure or the stored
/// object's name and spec.
pub fn said(r: &Resp) -> String {
    if r.body["kind"] == "Status" {
        return format!("{} {}: {}", r.status, r.body["reason"], denial_text(r));
    }
    format!(
        "{} (stored {} with spec {})",
        r.status, r.body["metadata"]["name"], r.body["spec"]
    )
}

/// `r` is ipam-guard's denial by `rule` naming `holder` (`IPAddress pending/y-a`).
#[track_caller]
pub fn assert_denied(r: &Resp, rule: &str, holder: &str, what: &str) {
    let text = denial_text(r);
    assert!(
        r.status == 422 && text.contains(&format!("[ipam-guard {rule}]")) && text.contains(holder),
        "{what}: expected a denial by {rule} naming {holder}, got {}",
        said(r)
    );
}

#[track_caller]
pub fn assert_already_exists(r: &Resp, what: &str) {
    assert!(
        r.status == 409 && r.body["reason"] == "AlreadyExists",
        "{what}: expected AlreadyExists from the API server (after ipam-guard admitted), got {}",
        said(r)
    );
}

/// Creates `obj` until it is stored. Until `deadline` a denial by `rule` naming `holder` is taken
/// for the conservative refusal a pending entry may cause and retried; anything else fails.
pub async fn created_by(
    client: &kube::Client,
    obj: &Value,
    rule: &str,
    holder: &str,
    deadline: Instant,
    what: &str,
) -> Duration {
    let start = Instant::now();
    loop {
        let r = create(client, obj, false).await;
        if r.status == 201 {
            return start.elapsed();
        }
        let text = denial_text(&r);
        let conservative = r.status == 422
            && text.contains(&format!("[ipam-guard {rule}]"))
            && text.contains(holder);
        assert!(
            conservative,
            "{what}: neither created nor refused for {holder} ({rule}): {}",
            said(&r)
        );
        assert!(
            Instant::now() < deadline,
            "{what}: still refused after the pending TTL ({:?} of refusals): {}",
            start.elapsed(),
            said(&r)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The stored items of `kind` in `NS`.
pub async fn stored(
    client: &kube::Client,
    api_version: &str,
    kind: ipam_guard::kinds::Kind,
) -> Vec<Value> {
    let path = collection(api_version, kind, Some(NS));
    let r = call(client, http::Method::GET, &path, None, "application/json").await;
    r.expect(200);
    r.body["items"].as_array().cloned().unwrap_or_default()
}

/// No address is stored twice in `NS` (A9 as the cluster ends up, whatever was answered).
pub async fn assert_no_address_twice(client: &kube::Client) {
    let items = stored(
        client,
        "ipam.cluster.x-k8s.io/v1beta2",
        ipam_guard::kinds::Kind::IPAddress,
    )
    .await;
    let mut holders: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for item in &items {
        holders
            .entry(
                item["spec"]["address"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
            .or_default()
            .push(
                item["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
    }
    let twice: Vec<_> = holders
        .iter()
        .filter(|(_, names)| names.len() > 1)
        .collect();
    assert!(twice.is_empty(), "addresses stored twice: {twice:?}");
}

/// An IPv4 range `a-b` (or one address) as numbers.
fn span(entry: &str) -> (u32, u32) {
    let ip = |s: &str| u32::from(s.trim().parse::<std::net::Ipv4Addr>().unwrap());
    match entry.split_once('-') {
        Some((a, b)) => (ip(a), ip(b)),
        None => (ip(entry), ip(entry)),
    }
}

/// No two stored InClusterIPPools of `NS` share an address (P10 as the cluster ends up).
pub async fn assert_no_pools_overlap(client: &kube::Client) {
    let items = stored(
        client,
        "ipam.cluster.x-k8s.io/v1alpha2",
        ipam_guard::kinds::Kind::InClusterIPPool,
    )
    .await;
    let ranges: Vec<(String, (u32, u32))> = items
        .iter()
        .flat_map(|p| {
            let name = p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            p["spec"]["addresses"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |a| (name.clone(), span(a.as_str().unwrap_or_default())))
        })
        .collect();
    for (i, (a, ra)) in ranges.iter().enumerate() {
        for (b, rb) in &ranges[i + 1..] {
            assert!(
                a == b || ra.1 < rb.0 || rb.1 < ra.0,
                "stored pools {a} and {b} overlap: {items:#?}"
            );
        }
    }
}

// === the cases ===

/// A9: `y-a` stored at .105; a create of `y-a` at .111 is admitted and then refused
/// AlreadyExists; `y-c` at .105 is still a second holder of the stored `y-a`'s address.
pub async fn a9_already_exists_then_duplicate(t: &Target) {
    let client = t.client();
    let pool = in_cluster_pool(NS, "x0", "10.99.7.100-10.99.7.120", "10.99.7.1");
    create(client, &pool, false).await.expect(201);
    let y_a = ip_address(NS, "y-a", "y-a", "10.99.7.105", "x0");
    create(client, &y_a, false).await.expect(201);
    t.watched(&y_a).await;
    let holder = format!("IPAddress {NS}/y-a");
    let y_b = ip_address(NS, "y-b", "y-b", "10.99.7.105", "x0");
    let r = create(client, &y_b, false).await;
    assert_denied(&r, "A9", &holder, "y-b at the stored y-a's address");

    let again = ip_address(NS, "y-a", "y-a", "10.99.7.111", "x0");
    let r = create(client, &again, false).await;
    assert_already_exists(&r, "y-a created again at 10.99.7.111");
    let y_c = ip_address(NS, "y-c", "y-c", "10.99.7.105", "x0");
    let r = create(client, &y_c, false).await;
    assert_denied(
        &r,
        "A9",
        &holder,
        "y-c at the stored y-a's address, after a create of y-a elsewhere failed AlreadyExists",
    );
    let stored = get(client, &y_a).await;
    stored.expect(200);
    assert_eq!(stored.body["spec"]["address"], "10.99.7.105");
    assert_no_address_twice(client).await;
}

/// P10: pool `p0` stored; a create of `p0` over other addresses is admitted and then refused
/// AlreadyExists; `p1` overlapping the stored `p0` is refused, and `p2` where the refused version
/// would have been is admitted once the pending TTL has passed at the latest.
pub async fn p10_already_exists_then_overlap(t: &Target) {
    let client = t.client();
    let p0 = in_cluster_pool(NS, "p0", "10.99.8.10-10.99.8.20", "10.99.8.1");
    create(client, &p0, false).await.expect(201);
    t.watched(&p0).await;
    let again = in_cluster_pool(NS, "p0", "10.99.9.10-10.99.9.20", "10.99.9.1");
    let r = create(client, &again, false).await;
    let refused = Instant::now();
    assert_already_exists(&r, "p0 created again at 10.99.9.10-10.99.9.20");
    let holder = format!("InClusterIPPool {NS}/p0");
    let p1 = in_cluster_pool(NS, "p1", "10.99.8.15-10.99.8.30", "10.99.8.1");
    let r = create(client, &p1, false).await;
    assert_denied(
        &r,
        "P10",
        &holder,
        "p1 overlapping the stored p0, after a create of p0 elsewhere failed AlreadyExists",
    );
    let p2 = in_cluster_pool(NS, "p2", "10.99.9.10-10.99.9.20", "10.99.9.1");
    let took = created_by(
        client,
        &p2,
        "P10",
        &holder,
        refused + t.pending_ttl() + SLACK,
        "p2 where the refused p0 would have been",
    )
    .await;
    println!(
        "p2 admitted after {took:?} of refusals (pending TTL {:?})",
        t.pending_ttl()
    );
    let stored = get(client, &p0).await;
    stored.expect(200);
    assert_eq!(
        stored.body["spec"]["addresses"],
        json!(["10.99.8.10-10.99.8.20"])
    );
    assert_no_pools_overlap(client).await;
}

/// A second webhook refuses what ipam-guard admitted. A CREATE: its address is free again
/// within the TTL at the latest. An UPDATE moving pool `q0`: the stored range is still held, so
/// `q1` overlapping it is refused (P10).
pub async fn x2_refused_by_another_webhook(t: &Target, refuser: &Refuser) {
    let client = t.client();
    let before = refuser.refused().len();
    let r0 = in_cluster_pool(NS, "r0", "10.99.13.10-10.99.13.60", "10.99.13.1");
    create(client, &r0, false).await.expect(201);
    t.watched(&r0).await;
    let z_a = refuser::with_label(&ip_address(NS, "z-a", "z-a", "10.99.13.20", "r0"));
    let r = create(client, &z_a, false).await;
    let refused = Instant::now();
    assert!(
        r.status == 403 && r.message().contains(refuser::MESSAGE),
        "the labelled z-a is refused by the other webhook: {}",
        said(&r)
    );
    let z_b = ip_address(NS, "z-b", "z-b", "10.99.13.20", "r0");
    let took = created_by(
        client,
        &z_b,
        "A9",
        &format!("IPAddress {NS}/z-a"),
        refused + t.pending_ttl() + SLACK,
        "z-b at the address of the refused z-a",
    )
    .await;
    println!(
        "z-b admitted after {took:?} of refusals (pending TTL {:?})",
        t.pending_ttl()
    );
    assert_no_address_twice(client).await;

    let q0 = in_cluster_pool(NS, "q0", "10.99.10.10-10.99.10.20", "10.99.10.1");
    create(client, &q0, false).await.expect(201);
    t.watched(&q0).await;
    let moved = json!({
        "metadata": {"labels": {refuser::LABEL: refuser::VALUE}},
        "spec": {"addresses": ["10.99.11.10-10.99.11.20"], "gateway": "10.99.11.1"}
    });
    let r = merge_patch(client, &q0, moved).await;
    assert!(
        r.status == 403 && r.message().contains(refuser::MESSAGE),
        "the labelled update of q0 is refused by the other webhook: {}",
        said(&r)
    );
    let q1 = in_cluster_pool(NS, "q1", "10.99.10.15-10.99.10.25", "10.99.10.1");
    let r = create(client, &q1, false).await;
    assert_denied(
        &r,
        "P10",
        &format!("InClusterIPPool {NS}/q0"),
        "q1 overlapping the stored q0, after an update moving q0 was refused by another webhook",
    );
    let stored = get(client, &q0).await;
    stored.expect(200);
    assert_eq!(
        stored.body["spec"]["addresses"],
        json!(["10.99.10.10-10.99.10.20"])
    );
    let refused = refuser.refused().split_off(before);
    assert!(
        refused.iter().any(|n| n == "z-a") && refused.iter().any(|n| n == "q0"),
        "the other webhook refused z-a and q0's update: it refused {refused:?}"
    );
    assert_no_pools_overlap(client).await;
}

// === one replica ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a9_an_already_exists_create_does_not_hide_the_stored_address() {
    e2e::each_server(
        "a9_an_already_exists_create_does_not_hide_the_stored_address",
        |assets| async move {
            let t = Target::One(One::start(&assets).await);
            a9_already_exists_then_duplicate(&t).await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p10_an_already_exists_create_does_not_hide_the_stored_pool() {
    e2e::each_server(
        "p10_an_already_exists_create_does_not_hide_the_stored_pool",
        |assets| async move {
            let t = Target::One(One::start(&assets).await);
            p10_already_exists_then_overlap(&t).await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_a_write_another_webhook_refuses_does_not_hide_what_is_stored() {
    e2e::each_server(
        "x2_a_write_another_webhook_refuses_does_not_hide_what_is_stored",
        |assets| async move {
            let t = Target::One(One::start(&assets).await);
            let client = t.client();
            let refuser = Refuser::start(Duration::from_millis(300)).await;
            refuser
                .register(client, &["ipaddresses", "inclusterippools"])
                .await;
            let probe = refuser::with_label(&in_cluster_pool(
                NS,
                "probe",
                "10.250.1.10-10.250.1.20",
                "10.250.1.1",
            ));
            eventually("the other webhook to be called", WAIT, || async {
                let r = create(client, &probe, true).await;
                r.status == 403 && r.message().contains(refuser::MESSAGE)
            })
            .await;
            x2_refused_by_another_webhook(&t, &refuser).await;
        },
    )
    .await;
}
