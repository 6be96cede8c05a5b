//! The decider's forward protocol (X2 across replicas): the body a follower POSTs to `/decide`
//! and the list `GET /pending` returns, decoded as the peer listener and the next decider decode
//! them (`forwarded`, `Handover`), and each request that decodes decided by
//! `Admission::answer_forwarded` over a `Ledger` holding the objects of `state.yaml`. The
//! requests of one input are decided one after another on the same ledger, so an earlier
//! admission is there when a later request is judged.
//!
//! Input: bytes that begin as JSON (`{`, `[`) are one body, read both as a `/decide` body and as
//! a `/pending` answer (the seeds are such bodies). Any other bytes are a sequence of steps carved
//! from them: a decision request built from a small universe (every kind, its versions and one
//! nobody serves, the four operations, names and namespaces of `state.yaml`, objects whose
//! fields are drawn from what each kind reads, with addresses that meet the stored pools),
//! sometimes with one field of the wire broken; the previous body sent again (a retry); a raw
//! body; a handover of several requests; or time passing on the ledger's clock.
//!
//! What must hold: no panic; a request that decodes re-encodes to a body that decodes equal, and
//! so does a handover's list; every decoded request gets an answer that decides it (never
//! `notDecider`, and `unavailable` only when the decider cannot read the object it was sent),
//! which the follower reads back equal; only an allowed, real CREATE or UPDATE, or a pool's
//! DELETE (held as being deleted), records anything in the view (a denial, a dry run, another
//! DELETE or an unreadable object leaves it as it was).
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use ipam_guard::admission::{forwarded, Admission, DecisionAnswer, DecisionRequest, Forwarded};
use ipam_guard::cluster::{Ledger, ManualClock, StaticView, PENDING_TTL};
use ipam_guard::decider::handover::Handover;
use ipam_guard::index::Index;
use ipam_guard::kinds::{Kind, ADDRESS_SPACE_ANNOTATION};
use ipam_guard::manifests;
use ipam_guard::model::Operation;
use ipam_guard::rules::Options;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

/// The objects of `state.yaml`, indexed once; each input starts from a copy.
fn base() -> &'static Index {
    static BASE: OnceLock<Index> = OnceLock::new();
    BASE.get_or_init(|| {
        let loaded = manifests::read_str("state.yaml", include_str!("../state.yaml"));
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        StaticView::from_manifests(loaded.manifests).into_index()
    })
}

/// A decider: the handler over a ledger whose clock moves only when a step says so.
struct Decider {
    ledger: Arc<Ledger>,
    admission: Admission,
    clock: Arc<ManualClock>,
}

impl Decider {
    fn new() -> Decider {
        let clock = ManualClock::at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        let ledger =
            Arc::new(Ledger::with_ttl(base().clone(), PENDING_TTL).with_clock(clock.clone()));
        let admission = Admission::new(ledger.clone(), Options::default());
        Decider {
            ledger,
            admission,
            clock,
        }
    }

    /// What the peer listener does with a `/decide` body.
    fn post(&self, body: &[u8]) {
        match forwarded(body) {
            // The listener's 400: the message names what is wrong.
            Err(e) => assert!(!e.to_string().is_empty()),
            Ok(Forwarded::NotOurs(why)) => {
                assert!(!why.is_empty());
                read_back(&DecisionAnswer::unavailable(why));
            }
            Ok(Forwarded::Request(request)) => {
                reencodes(&request);
                self.decide(&request);
            }
        }
    }

    /// What the next decider does with a `/pending` answer: every entry it keeps is a request it
    /// can decide.
    fn pending(&self, body: &[u8]) {
        let Ok(handover) = serde_json::from_slice::<Handover>(body) else {
            return;
        };
        let again = serde_json::to_vec(&handover).expect("a handover serialises");
        let back: Handover = serde_json::from_slice(&again).unwrap_or_else(|e| {
            panic!(
                "a re-encoded handover does not decode: {e}: {}",
                String::from_utf8_lossy(&again)
            )
        });
        assert_eq!(back.entries.len(), handover.entries.len());
        for (a, b) in handover.entries.iter().zip(&back.entries) {
            same(a, b);
        }
        for request in &handover.entries {
            self.decide(request);
        }
    }

    fn decide(&self, request: &DecisionRequest) {
        let before = self.ledger.read().version();
        let answer = self.admission.answer_forwarded(request);
        assert!(!answer.not_decider, "the only replica is not the decider");
        if let Some(why) = &answer.unavailable {
            assert!(
                why.starts_with("the forwarded object is not valid JSON"),
                "a request the decider could read was not decided: {why}"
            );
        }
        let recorded = self.ledger.read().version() != before;
        // What an admitted write holds until the watch shows it (X2): the object of a CREATE or
        // UPDATE, or a pool marked as being deleted by its DELETE (A8 gives nothing out of it).
        if recorded {
            assert!(
                answer.unavailable.is_none()
                    && answer.errors.is_empty()
                    && !request.dry_run
                    && (matches!(request.operation, Operation::Create | Operation::Update)
                        || (request.operation == Operation::Delete && request.kind.is_pool())),
                "recorded in the view: {request:?} answered {answer:?}"
            );
        }
        read_back(&answer);
    }

    /// Time passes; the sweep runs now, so no decision finds anything due and a decision's own
    /// sweep never changes the view.
    fn wait(&self, by: Duration) {
        self.clock.advance(by);
        self.ledger.sweep(self.ledger.now());
    }
}

/// The follower reads the answer as the decider wrote it, but for one loss that shows nowhere: an
/// error's `null` value comes back as no value (`WireError::value` is an `Option` read with
/// `#[serde(default)]`), and `FieldError::body` writes both as `null`.
fn read_back(answer: &DecisionAnswer) {
    let bytes = serde_json::to_vec(answer).expect("an answer serialises");
    let back: DecisionAnswer = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "the follower cannot read the answer: {e}: {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    let mut sent = answer.clone();
    for e in &mut sent.errors {
        e.value = e.value.take().filter(|v| !v.is_null());
    }
    assert_eq!(back, sent, "the answer changed on the wire");
}

/// A request sent on (a follower's retry, a handover) decodes as the same request.
fn reencodes(request: &DecisionRequest) {
    let bytes = serde_json::to_vec(request).expect("a request serialises");
    match forwarded(&bytes) {
        Ok(Forwarded::Request(back)) => same(request, &back),
        Ok(Forwarded::NotOurs(why)) => panic!("a decoded request re-encodes as not ours: {why}"),
        Err(e) => panic!(
            "a decoded request re-encodes to a body that does not decode: {e}: {}",
            String::from_utf8_lossy(&bytes)
        ),
    }
}

fn same(a: &DecisionRequest, b: &DecisionRequest) {
    let raw = |r: &Option<Box<serde_json::value::RawValue>>| r.as_ref().map(|r| r.get().to_owned());
    assert_eq!(a.kind, b.kind);
    assert_eq!(a.version, b.version);
    assert_eq!(a.operation, b.operation);
    assert_eq!(a.namespace, b.namespace);
    assert_eq!(a.name, b.name);
    assert_eq!(raw(&a.object), raw(&b.object));
    assert_eq!(raw(&a.old_object), raw(&b.old_object));
    assert_eq!(a.dry_run, b.dry_run);
    assert_eq!(a.stranger, b.stranger);
}

const MAX_STEPS: usize = 16;

fuzz_target!(|data: &[u8]| {
    let decider = Decider::new();
    match data.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') | Some(b'[') => {
            decider.post(data);
            decider.pending(data);
        }
        _ => {
            let _ = steps(&decider, &mut Unstructured::new(data));
        }
    }
});

fn steps(d: &Decider, u: &mut Unstructured) -> Result<()> {
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..MAX_STEPS {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0..=9u8)? {
            0..=5 => {
                last = serde_json::to_vec(&wire(u)?).expect("a Value serialises");
                d.post(&last);
            }
            6 => d.post(&last),
            7 => {
                let len = u.arbitrary_len::<u8>()?;
                let body = u.bytes(len)?;
                d.post(body);
                d.pending(body);
            }
            8 => {
                let mut entries = Vec::new();
                for _ in 0..u.int_in_range(0..=4u8)? {
                    entries.push(wire(u)?);
                }
                d.pending(&serde_json::to_vec(&json!({ "entries": entries })).expect("serialises"));
            }
            _ => d.wait(*u.choose(&WAITS)?),
        }
    }
    Ok(())
}

/// Around the stranger TTL (5 s) and the pending TTL (30 s).
const WAITS: [Duration; 5] = [
    Duration::from_millis(1),
    Duration::from_secs(5),
    Duration::from_secs(29),
    Duration::from_secs(30),
    Duration::from_secs(31),
];

const OPERATIONS: [&str; 4] = ["CREATE", "UPDATE", "DELETE", "CONNECT"];
/// The namespaces of `state.yaml`, one it does not use, and none.
const NAMESPACES: [Option<&str>; 4] =
    [Some("capture-ns"), Some("capture-eco"), Some("other"), None];
/// Names of `state.yaml`'s objects, and two new ones.
const NAMES: [&str; 8] = [
    "pool-a",
    "global-pool-a",
    "claim-a",
    "claim-held",
    "addr-held",
    "provisioning-pool",
    "a",
    "b",
];

/// A decision request as a follower writes it, for `Decider::post`.
fn wire(u: &mut Unstructured) -> Result<Value> {
    // Now and then a kind this build does not decide (a follower of another version).
    let kind = if u.ratio(1, 32)? {
        None
    } else {
        Some(*u.choose(&Kind::ALL)?)
    };
    let (group, kind_name, versions) = match kind {
        Some(k) => (k.group(), k.name(), k.info().versions),
        None => ("ipam.cluster.x-k8s.io", "IPAddressRange", &["v1beta2"][..]),
    };
    let version = if u.ratio(1, 16)? {
        "v9"
    } else {
        *u.choose(versions)?
    };
    let operation = *u.choose(&OPERATIONS)?;
    let namespaced = kind.is_none_or(Kind::namespaced);
    // Mostly where the kind lives; now and then the other way round.
    let namespace = if namespaced != u.ratio(1, 16)? {
        *u.choose(&NAMESPACES)?
    } else {
        None
    };
    let name = *u.choose(&NAMES)?;
    let mut w = Map::new();
    w.insert("group".into(), json!(group));
    w.insert("kind".into(), json!(kind_name));
    w.insert("version".into(), json!(version));
    w.insert("operation".into(), json!(operation));
    if let Some(ns) = namespace {
        w.insert("namespace".into(), json!(ns));
    }
    w.insert("name".into(), json!(name));
    let meta = Meta {
        api_version: format!("{group}/{version}"),
        kind: kind_name,
        namespace,
        name,
    };
    let new = match operation {
        "DELETE" if !u.ratio(1, 8)? => None,
        _ => Some(object(u, kind, &meta)?),
    };
    let old = match (operation, &new) {
        // An update that changes the spec of what it replaces, or only its labels.
        ("UPDATE", Some(n)) if u.ratio(3, 4)? => Some(changed(u, n, kind, &meta)?),
        ("UPDATE", _) | ("DELETE", _) => Some(object(u, kind, &meta)?),
        _ => None,
    };
    if let Some(n) = new {
        w.insert("object".into(), n);
    } else if u.ratio(1, 4)? {
        w.insert("object".into(), Value::Null);
    }
    if let Some(o) = old {
        w.insert("oldObject".into(), o);
    }
    if u.ratio(1, 8)? {
        w.insert("dryRun".into(), json!(true));
    }
    if u.ratio(1, 4)? {
        let who = *u.choose(&["192.0.2.7", "192.0.2.8", "2001:db8::7", "::ffff:192.0.2.7"])?;
        w.insert("stranger".into(), json!(who));
    }
    let mut w = Value::Object(w);
    if u.ratio(1, 16)? {
        broken(u, &mut w)?;
    }
    Ok(w)
}

/// What the object's own type fields and metadata say.
struct Meta {
    api_version: String,
    kind: &'static str,
    namespace: Option<&'static str>,
    name: &'static str,
}

/// Spec fields the kinds read, one bit each in a kind's natural set.
const ADDRESSES: u32 = 1 << 0;
const EXCLUDED: u32 = 1 << 1;
const PREFIX: u32 = 1 << 2;
const GATEWAY: u32 = 1 << 3;
const ADDRESS: u32 = 1 << 4;
const CLAIM_REF: u32 = 1 << 5;
const POOL_REF: u32 = 1 << 6;
const M3_POOLS: u32 = 1 << 7;
const M3_POOL: u32 = 1 << 8;
const M3_CLAIM: u32 = 1 << 9;
const IPS: u32 = 1 << 10;
const SUBNET: u32 = 1 << 11;
const IP_VERSION: u32 = 1 << 12;
const PREFIXES: u32 = 1 << 13;
const ALLOCATION_PREFIX: u32 = 1 << 14;
const DEVICES: u32 = 1 << 15;
const PRE_ALLOCATIONS: u32 = 1 << 16;
const REUSE_GRACE: u32 = 1 << 17;
const EXCLUDE_IPS: u32 = 1 << 18;
const START_END: u32 = 1 << 19;
const FIELDS: u32 = 20;

fn natural(kind: Option<Kind>) -> u32 {
    match kind {
        Some(Kind::IPAddressClaim) => POOL_REF,
        Some(Kind::IPAddress) | None => ADDRESS | PREFIX | GATEWAY | CLAIM_REF | POOL_REF,
        Some(Kind::InClusterIPPool | Kind::GlobalInClusterIPPool) => ADDRESSES | PREFIX | GATEWAY,
        Some(Kind::Metal3IPPool) => M3_POOLS | PREFIX | GATEWAY,
        Some(Kind::Metal3IPClaim) => M3_POOL,
        Some(Kind::Metal3IPAddress) => ADDRESS | PREFIX | GATEWAY | M3_POOL | M3_CLAIM,
        Some(Kind::SpiderIPPool) => IPS | SUBNET | GATEWAY | IP_VERSION,
        Some(Kind::VSphereMachine | Kind::VSphereMachineTemplate) => DEVICES,
        Some(Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool) => {
            PREFIXES | ALLOCATION_PREFIX | GATEWAY
        }
        Some(Kind::SpiderSubnet) => IPS | SUBNET | GATEWAY | IP_VERSION,
        Some(Kind::SpiderReservedIP) => IPS | IP_VERSION,
        // Endpoints, templates and declared kinds read fields no flag draws: they get what the
        // bytes choose beside none of their own.
        Some(
            Kind::Cluster
            | Kind::VSphereCluster
            | Kind::Metal3Cluster
            | Kind::Metal3DataTemplate
            | Kind::Declared(_),
        ) => 0,
    }
}

/// Pool entries near and across the pools of `state.yaml` (10.10.0.10-20 and .32/28, Metal3's
/// 192.168.0.10-30, Spiderpool's 172.18.42.40-50, the global 2001:db8::10-20).
const ENTRIES: [&str; 10] = [
    "10.10.0.10-10.10.0.20",
    "10.10.0.15",
    "10.10.0.21-10.10.0.31",
    "10.10.0.32/28",
    "10.10.0.0/24",
    "192.168.0.12",
    "172.18.42.45",
    "2001:db8::18-2001:db8::30",
    "10.10.0.20-10.10.0.10",
    "x",
];
const SINGLE: [&str; 9] = [
    "10.10.0.12",
    "10.10.0.15",
    "10.10.0.33",
    "10.10.0.1",
    "192.168.0.14",
    "192.168.0.12",
    "172.18.42.45",
    "2001:db8::11",
    "10.10.0.300",
];
const GATEWAYS: [&str; 5] = [
    "10.10.0.1",
    "192.168.0.1",
    "172.18.42.1",
    "2001:db8::1",
    "10.10.0.12",
];
const PREFIX_LENGTHS: [i64; 7] = [24, 25, 28, 64, 0, 33, -1];
const POOL_KINDS: [&str; 4] = [
    "InClusterIPPool",
    "GlobalInClusterIPPool",
    "InClusterPrefixPool",
    "IPPool",
];
const POOL_NAMES: [&str; 4] = ["pool-a", "global-pool-a", "provisioning-pool", "a"];
const CLAIM_NAMES: [&str; 4] = ["claim-a", "claim-held", "held-claim", "a"];
const UIDS: [&str; 3] = ["uid-1", "uid-2", "uid-3"];

fn list(u: &mut Unstructured, from: &[&'static str]) -> Result<Value> {
    let mut out = Vec::new();
    for _ in 0..u.int_in_range(0..=3u8)? {
        out.push(json!(*u.choose(from)?));
    }
    Ok(Value::Array(out))
}

/// An object of `kind`: the spec fields the kind reads, a few switched on or off, each value
/// drawn from what meets or misses `state.yaml`'s objects.
fn object(u: &mut Unstructured, kind: Option<Kind>, meta: &Meta) -> Result<Value> {
    let mut fields = natural(kind);
    for _ in 0..u.int_in_range(0..=3u8)? {
        fields ^= 1 << u.int_in_range(0..=FIELDS - 1)?;
    }
    let mut spec = Map::new();
    let mut put = |k: &str, v: Value| {
        spec.insert(k.to_string(), v);
    };
    if fields & ADDRESSES != 0 {
        put("addresses", list(u, &ENTRIES)?);
    }
    if fields & EXCLUDED != 0 {
        put("excludedAddresses", list(u, &ENTRIES)?);
    }
    if fields & PREFIX != 0 {
        put("prefix", json!(*u.choose(&PREFIX_LENGTHS)?));
    }
    if fields & GATEWAY != 0 {
        put("gateway", json!(*u.choose(&GATEWAYS)?));
    }
    if fields & ADDRESS != 0 {
        put("address", json!(*u.choose(&SINGLE)?));
    }
    if fields & CLAIM_REF != 0 {
        put("claimRef", json!({"name": *u.choose(&CLAIM_NAMES)?}));
    }
    if fields & POOL_REF != 0 {
        put(
            "poolRef",
            json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": *u.choose(&POOL_KINDS)?,
                   "name": *u.choose(&POOL_NAMES)?}),
        );
    }
    if fields & M3_POOLS != 0 {
        let mut pools = Vec::new();
        for _ in 0..u.int_in_range(1..=2u8)? {
            pools.push(if u.arbitrary()? {
                json!({"start": *u.choose(&SINGLE)?, "end": *u.choose(&SINGLE)?})
            } else {
                json!({"subnet": *u.choose(&["192.168.1.0/26", "192.168.0.0/27", "10.10.0.0/28"])?})
            });
        }
        put("pools", Value::Array(pools));
    }
    if fields & M3_POOL != 0 {
        put(
            "pool",
            json!({"name": *u.choose(&POOL_NAMES)?, "namespace": "capture-eco"}),
        );
    }
    if fields & M3_CLAIM != 0 {
        put(
            "claim",
            json!({"name": *u.choose(&CLAIM_NAMES)?, "namespace": "capture-eco"}),
        );
    }
    if fields & IPS != 0 {
        put("ips", list(u, &ENTRIES)?);
    }
    if fields & SUBNET != 0 {
        put(
            "subnet",
            json!(*u.choose(&[
                "172.18.42.0/24",
                "10.10.0.0/24",
                "192.168.1.0/26",
                "2001:db8::/64"
            ])?),
        );
    }
    if fields & IP_VERSION != 0 {
        put("ipVersion", json!(*u.choose(&[4, 6])?));
    }
    if fields & PREFIXES != 0 {
        put(
            "prefixes",
            list(
                u,
                &[
                    "10.10.0.0/24",
                    "10.20.0.0/16",
                    "10.20.0.0/24",
                    "2001:db8::/60",
                ],
            )?,
        );
    }
    if fields & ALLOCATION_PREFIX != 0 {
        put(
            "allocationPrefixLength",
            json!(*u.choose(&[26, 28, 24, 33])?),
        );
    }
    if fields & DEVICES != 0 {
        let pool = json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": *u.choose(&POOL_KINDS)?,
                          "name": *u.choose(&POOL_NAMES)?});
        put(
            "network",
            json!({"devices": [{"networkName": "vm-net", "addressesFromPools": [pool]}]}),
        );
    }
    if fields & PRE_ALLOCATIONS != 0 {
        put(
            "preAllocations",
            json!({ *u.choose(&CLAIM_NAMES)?: *u.choose(&SINGLE)? }),
        );
    }
    if fields & REUSE_GRACE != 0 {
        put(
            "addressReuseGracePeriodSeconds",
            json!(u.int_in_range(0..=60u8)?),
        );
    }
    if fields & EXCLUDE_IPS != 0 {
        put("excludeIPs", list(u, &ENTRIES)?);
    }
    if fields & START_END != 0 {
        put("start", json!(*u.choose(&SINGLE)?));
        put("end", json!(*u.choose(&SINGLE)?));
    }
    let spec = Value::Object(spec);
    let spec = if kind == Some(Kind::VSphereMachineTemplate) {
        json!({"template": {"spec": spec}})
    } else {
        spec
    };
    let mut metadata = json!({"name": meta.name});
    if let Some(ns) = meta.namespace {
        metadata["namespace"] = json!(ns);
    }
    if u.ratio(3, 4)? {
        metadata["uid"] = json!(*u.choose(&UIDS)?);
    }
    if u.arbitrary()? {
        metadata["resourceVersion"] = json!(u.int_in_range(1..=4u8)?.to_string());
    }
    if u.ratio(1, 8)? {
        metadata["annotations"] = json!({ ADDRESS_SPACE_ANNOTATION: "blue" });
    }
    if u.ratio(1, 16)? {
        metadata["deletionTimestamp"] = json!("2023-11-14T22:13:20Z");
    }
    Ok(json!({
        "apiVersion": meta.api_version, "kind": meta.kind,
        "metadata": metadata, "spec": spec
    }))
}

/// What an update replaces: the new object with another spec, or other labels only.
fn changed(u: &mut Unstructured, new: &Value, kind: Option<Kind>, meta: &Meta) -> Result<Value> {
    let mut old = new.clone();
    if u.arbitrary()? {
        old["metadata"]["labels"] = json!({"tier": "old"});
    } else {
        old["spec"] = object(u, kind, meta)?["spec"].take();
    }
    if let Some(rv) = new["metadata"]["resourceVersion"].as_str() {
        let rv: u64 = rv.parse().unwrap_or(1);
        old["metadata"]["resourceVersion"] = json!(rv.saturating_sub(1).max(1).to_string());
    }
    Ok(old)
}

/// One field of the wire removed or of the wrong type: the decoder's refusals, and what it
/// lets through (`null` objects, a string where an object goes).
fn broken(u: &mut Unstructured, w: &mut Value) -> Result<()> {
    const KEYS: [&str; 10] = [
        "group",
        "kind",
        "version",
        "operation",
        "namespace",
        "name",
        "object",
        "oldObject",
        "dryRun",
        "stranger",
    ];
    const VALUES: [&str; 8] = [
        "null",
        "1",
        "\"\"",
        "\"x\"",
        "[]",
        "{}",
        "true",
        "{\"metadata\":{\"name\":1}}",
    ];
    let key = *u.choose(&KEYS)?;
    let map = w.as_object_mut().expect("the wire is an object");
    if u.arbitrary()? {
        map.remove(key);
    } else {
        let v: Value = serde_json::from_str(u.choose(&VALUES)?).unwrap_or(Value::Null);
        map.insert(key.into(), v);
    }
    Ok(())
}
