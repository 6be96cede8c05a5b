//! Reading Kubernetes objects (any served version) into what the rules and the index need.
//! Decoding is lenient on purpose: a bad value is kept as written (`written::Written::Wrong`),
//! never a decode failure, so the rules can answer `spec.prefix: Invalid value: "abc": ...`
//! instead of a 400. Every field is found through its kind's `paths`. The address kinds, the
//! claims, the in-cluster IP and prefix pools and Spiderpool's pools are decoded into typed specs
//! and judged in `rules`; the Metal3 pool reader still reports its own findings as it reads.
//! Pure: no I/O.

pub mod capi;
pub(crate) mod capv;
pub mod cluster;
pub mod declared;
pub mod holder;
pub mod incluster;
pub mod metal3;
pub(crate) mod metal3_template;
pub mod paths;
pub mod pool;
pub mod prefix;
pub mod read;
pub mod spider;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod written;

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::address::{AddrSet, Cidr, Family, Ip};
use crate::field::FieldPath;
use crate::kinds::{Kind, ADDRESS_SPACE_ANNOTATION, DEFAULT_ADDRESS_SPACE};
use pool::PoolReading;

/// Identifies one object: kind (with group), namespace (None when cluster-scoped) and name.
/// Namespaces are shared `Arc<str>` because thousands of cached objects share a few.
/// Hashed as its [`KeyRef`], so the index's maps can be asked with a borrowed key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjKey {
    pub kind: Kind,
    pub namespace: Option<Arc<str>>,
    pub name: Arc<str>,
}

impl ObjKey {
    pub fn new(kind: Kind, namespace: Option<&str>, name: &str) -> Self {
        let key = KeyRef::new(kind, namespace, name);
        ObjKey {
            kind,
            namespace: key.namespace.map(Arc::from),
            name: Arc::from(name),
        }
    }

    pub(crate) fn key_ref(&self) -> KeyRef<'_> {
        KeyRef {
            kind: self.kind,
            namespace: self.namespace.as_deref(),
            name: &self.name,
        }
    }

    /// `ns/name`, or `name` when cluster-scoped.
    pub fn ns_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.to_string(),
        }
    }
}

impl fmt::Display for ObjKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key_ref().fmt(f)
    }
}

impl Hash for ObjKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key_ref().hash(state);
    }
}

/// An object's key, borrowed: what a rule looks the index up by without building an `ObjKey`
/// (two `Arc<str>`s made and freed per lookup, on every address and claim review).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyRef<'a> {
    pub kind: Kind,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> KeyRef<'a> {
    /// As `ObjKey::new`: a cluster-scoped kind has no namespace, whatever was given.
    pub fn new(kind: Kind, namespace: Option<&'a str>, name: &'a str) -> Self {
        KeyRef {
            kind,
            namespace: namespace.filter(|_| kind.namespaced()),
            name,
        }
    }

    pub(crate) fn to_key(self) -> ObjKey {
        ObjKey::new(self.kind, self.namespace, self.name)
    }
}

impl fmt::Display for KeyRef<'_> {
    /// `InClusterIPPool ns/name`, `IPPool.ipam.metal3.io ns/name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Anything that names an object: what the index's lookups take. `ObjKey` borrows as
/// `dyn Keyed`, so a map keyed by `ObjKey` can be asked with a `KeyRef`.
pub trait Keyed {
    fn key_ref(&self) -> KeyRef<'_>;
}

impl Keyed for ObjKey {
    fn key_ref(&self) -> KeyRef<'_> {
        ObjKey::key_ref(self)
    }
}

impl Keyed for KeyRef<'_> {
    fn key_ref(&self) -> KeyRef<'_> {
        *self
    }
}

impl<T: Keyed + ?Sized> Keyed for &T {
    fn key_ref(&self) -> KeyRef<'_> {
        (**self).key_ref()
    }
}

impl<'a> Borrow<dyn Keyed + 'a> for ObjKey {
    fn borrow(&self) -> &(dyn Keyed + 'a) {
        self
    }
}

impl Hash for dyn Keyed + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key_ref().hash(state);
    }
}

impl PartialEq for dyn Keyed + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key_ref() == other.key_ref()
    }
}

impl Eq for dyn Keyed + '_ {}

/// ObjectMeta fields that neither the model (`Meta`; `creationTimestamp` is read for H1), the
/// rules nor the schema check (which only needs to know they are ObjectMeta's) read: a manifest
/// (`manifests`) and a review's objects (`admission`) leave them out of the tree once they are
/// checked as JSON. A reader of one of them takes it off this list.
pub const UNREAD_METADATA: &[&str] = &[
    "managedFields",
    "ownerReferences",
    "finalizers",
    "generation",
    "selfLink",
    "generateName",
    "deletionGracePeriodSeconds",
];

/// The metadata fields the rules read, borrowed from the object: reading them copies nothing
/// (a pool is read up to three times a review; copying its labels and annotations each time cost
/// about 5k of a review's 165k instructions).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Meta<'a> {
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// `metadata.labels` and `metadata.annotations` when they are maps. Only string values count
    /// (`label`, `annotation`): wrong types are ignored here.
    labels: Option<&'a Map<String, Value>>,
    annotations: Option<&'a Map<String, Value>>,
    pub deleting: bool,
}

impl<'a> Meta<'a> {
    /// Reads `metadata`; wrong types are ignored here (the API server validates metadata itself).
    ///
    /// One pass over `metadata`'s keys rather than an ordered search per field, which compares
    /// every key it passes: half the instructions.
    pub fn read(obj: &'a Value) -> Meta<'a> {
        let mut meta = Meta::default();
        let Some(Value::Object(m)) = obj.get("metadata") else {
            return meta;
        };
        for (key, v) in m {
            match key.as_str() {
                "namespace" => meta.namespace = v.as_str(),
                "name" => meta.name = v.as_str().unwrap_or_default(),
                "labels" => meta.labels = v.as_object(),
                "annotations" => meta.annotations = v.as_object(),
                "deletionTimestamp" => meta.deleting = !v.is_null(),
                _ => {}
            }
        }
        meta
    }

    /// The label `key`, when it is a string.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.labels?.get(key)?.as_str()
    }

    /// The annotation `key`, when it is a string.
    pub fn annotation(&self, key: &str) -> Option<&'a str> {
        self.annotations?.get(key)?.as_str()
    }

    /// Whether the object carries an annotation that switches off delete protection (P9, MP4, S6).
    pub(crate) fn skips_delete_check(&self) -> bool {
        pool::SKIP_DELETE_ANNOTATIONS
            .iter()
            .any(|a| self.annotation(a).is_some())
    }

    /// The address space the object names: annotation `ipam-guard.io/address-space`, or `default`.
    pub fn address_space(&self) -> &'a str {
        self.annotation(ADDRESS_SPACE_ANNOTATION)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_ADDRESS_SPACE)
    }
}

/// A typed reference to a pool, as written in a claim or address (`poolRef`, Metal3 `pool`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PoolRef {
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

impl PoolRef {
    /// The key of the referenced pool when it is a known pool kind (`kinds::Kind::is_pool`).
    pub fn key(&self, namespace: Option<&str>) -> Option<ObjKey> {
        let kind = Kind::from_group_kind(&self.api_group, &self.kind)?;
        kind.is_pool()
            .then(|| ObjKey::new(kind, namespace, &self.name))
    }
}

/// What the index keeps of a pool: its reading (declared − excluded − gateway − reserved), nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolProj {
    pub key: ObjKey,
    pub space: Arc<str>,
    /// None when the spec names no valid address at all.
    pub family: Option<Family>,
    /// declared − excluded − gateway − reserved: what the pool can really hand out. For a prefix
    /// pool, the union of the whole sub-prefixes it can hand out.
    pub allocatable: AddrSet,
    /// What the pool hands out of the other family, when it hands out both: a declared pool may
    /// (MetalLB's `IPAddressPool` mixes IPv4 and IPv6); every built-in kind is of one family.
    /// Boxed: None on all but those, so a pool costs 8 bytes for it.
    pub other_family: Option<Box<AddrSet>>,
    pub gateway: Option<Ip>,
    /// The prefix of the pool's subnet; for a prefix pool, the length of each sub-prefix it hands
    /// out (`allocationPrefixLength`).
    pub prefix: Option<u8>,
    pub deleting: bool,
    /// Annotations that switch off delete protection (P9): skip-validate-delete-webhook, delete-for-move.
    pub skip_delete_check: bool,
    /// Addresses the pool's own status records as handed out (Spiderpool `status.allocatedIPs`,
    /// which has no address objects); empty for kinds whose addresses are objects of their own.
    pub recorded: AddrSet,
    /// The subnet the pool declares as a field of its own (SpiderIPPool and SpiderSubnet
    /// `spec.subnet`), which S9–S11 compare across pools; None for kinds that declare none.
    pub declared_subnet: Option<Cidr>,
    /// How long an address released from this pool stays unavailable to a new holder
    /// (`spec.addressReuseGracePeriodSeconds` of an in-cluster v1alpha2 pool, R1); None when the
    /// pool does not say (0 included: the pool says addresses are free at once).
    pub reuse_grace: Option<std::time::Duration>,
}

impl PoolProj {
    /// What the pool hands out, one set per family it hands out of (`allocatable`, then
    /// `other_family`): what the index places and overlap (P10) compares.
    pub(crate) fn allocatable_sets(&self) -> impl Iterator<Item = &AddrSet> {
        std::iter::once(&self.allocatable).chain(self.other_family.as_deref())
    }
}

/// What the index keeps of an address object (CAPI IPAddress or Metal3 IPAddress).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressProj {
    pub key: ObjKey,
    /// None when `spec.address` does not parse: such an object holds nothing.
    pub ip: Option<Ip>,
    /// The pool it references, when that is a known pool kind.
    pub pool: Option<ObjKey>,
    /// The claim it fulfils (`spec.claimRef.name`, Metal3 `spec.claim.name`).
    pub claim: Option<Arc<str>>,
}

/// What the index keeps of a claim (CAPI IPAddressClaim, Metal3 IPClaim): A6 compares its
/// poolRef; the audits (H1, E1) read whether it has been served and since when it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimProj {
    pub key: ObjKey,
    pub pool_ref: PoolRef,
    /// `metadata.creationTimestamp`, in seconds since the Unix epoch (None on a create review,
    /// which has none yet, or when it does not parse).
    pub created: Option<i64>,
    /// The provider has recorded its address: `status.addressRef.name` (Metal3:
    /// `status.address.name`) is set.
    pub bound: bool,
    /// The Cluster (in the claim's namespace) whose control-plane endpoint the claim asks for
    /// (annotation `ipam-guard.io/control-plane-endpoint-of`; CP1, CP4).
    pub endpoint_of: Option<Arc<str>>,
    /// The Cluster (in the claim's namespace) the claim's machine belongs to:
    /// `spec.clusterName`, else the label `cluster.x-k8s.io/cluster-name` (CP5).
    pub cluster: Option<Arc<str>>,
}

/// The annotation `ipam-guard.io/control-plane-endpoint-of` of a claim, when set and not empty.
pub fn endpoint_of(obj: &Value) -> Option<Arc<str>> {
    Meta::read(obj)
        .annotation(cluster::ENDPOINT_CLAIM_ANNOTATION)
        .filter(|s| !s.is_empty())
        .map(Arc::from)
}

/// The Cluster a claim belongs to: `spec.clusterName` when set and not empty, else the label
/// `cluster.x-k8s.io/cluster-name`.
pub(crate) fn claim_cluster(obj: &Value) -> Option<Arc<str>> {
    read::get(obj, paths::claim::CLUSTER_NAME)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| Meta::read(obj).label(cluster::CLUSTER_NAME_LABEL))
        .filter(|s| !s.is_empty())
        .map(Arc::from)
}

/// `metadata.creationTimestamp` (RFC 3339, as the API server writes it) in Unix seconds.
pub fn creation_timestamp(obj: &Value) -> Option<i64> {
    let text = read::get(obj, paths::meta::CREATION_TIMESTAMP)?.as_str()?;
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp())
}

/// Whether the string at `path` is set and non-empty.
pub(crate) fn has_name(obj: &Value, path: FieldPath) -> bool {
    read::get(obj, path)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// What a review asks about, stripped of transport (the rules never see HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn parse(s: &str) -> Option<Operation> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// One admission request as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub operation: Operation,
    pub kind: Kind,
    /// The version the client used (no conversion webhook is assumed): every served version is decoded.
    pub version: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// The new object (CREATE, UPDATE); None on DELETE.
    pub object: Option<&'a Value>,
    /// The stored object (UPDATE, DELETE).
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
}

impl<'a> Request<'a> {
    /// The request's namespace, else the one `obj` names in its metadata.
    pub fn namespace_of(&self, obj: &'a Value) -> Option<&'a str> {
        self.namespace
            .or_else(|| read::get(obj, paths::meta::NAMESPACE).and_then(Value::as_str))
    }
}

/// What the index caches of one object: the same reading admission, the static and live views
/// and the audit use.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// Boxed: a pool's reading (two address sets, a subnet) is several times the size of the
    /// others, and the commands that read a cluster hold one `Projection` per object (110k at
    /// 10k pools, nearly all addresses) while the index is built.
    Pool(Box<PoolProj>),
    Address(AddressProj),
    Claim(ClaimProj),
    /// Boxed as pools are: a Cluster's networks make it larger than an address.
    Cluster(Box<cluster::ClusterProj>),
    /// A ReservedIP or a machine's static addresses (`holder`).
    Holder(Box<holder::HolderProj>),
}

impl Projection {
    pub fn key(&self) -> &ObjKey {
        match self {
            Projection::Pool(p) => &p.key,
            Projection::Address(a) => &a.key,
            Projection::Claim(c) => &c.key,
            Projection::Cluster(c) => &c.key,
            Projection::Holder(h) => &h.key,
        }
    }
}

/// Reads any pool kind (the one reading every pool kind shares; each kind's reader uses `pool`'s helpers).
/// A kind that is not a pool gives an empty reading.
pub(crate) fn read_pool(kind: Kind, obj: &Value) -> PoolReading {
    match kind {
        Kind::InClusterIPPool | Kind::GlobalInClusterIPPool => incluster::read(kind, obj),
        Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool => prefix::read(kind, obj),
        Kind::Metal3IPPool => metal3::read_pool(obj),
        Kind::SpiderIPPool | Kind::SpiderSubnet => spider::read(kind, obj),
        // An object its declaration cannot read holds nothing (`check` reports it not judged).
        Kind::Declared(_) => {
            declared::read(kind, obj).unwrap_or_else(|_| PoolReading::empty(kind, &Meta::read(obj)))
        }
        _ => PoolReading::empty(kind, &Meta::read(obj)),
    }
}

/// Whether the rules read the `status` of an object of `kind` (`spider::allocation`): where not,
/// `check` need not keep it once the schema has seen it. Keep in step with the readers. A claim's
/// projection reads `status.addressRef.name` (`bound`), but `check` judges a manifest as the
/// create would store it, and a create stores no status: there a claim projects as unbound.
pub fn reads_status(kind: Kind) -> bool {
    matches!(kind, Kind::SpiderIPPool)
}

/// Turns an object of `kind` (any served version) into what the index keeps; None for kinds the
/// index does not hold and for objects without a name.
pub fn project(kind: Kind, obj: &Value) -> Option<Projection> {
    project_read(kind, obj, None)
}

/// Whether `new` projects as `old` does for certain: the two are equal but for
/// `metadata.labels` other than `cluster.x-k8s.io/cluster-name` (which a claim's projection
/// reads, CP5); no projection reads the others (a test holds every kind to it): admission need
/// not project a relabel again (`Admission::relabel`). Equality is exact (`24` and `24.0`, null and absent differ here): a false "changed" only
/// costs a projection.
pub fn projects_alike(new: &Value, old: &Value) -> bool {
    // The new object standing in for a stored one that differs only in labels (admission).
    if std::ptr::eq(new, old) {
        return true;
    }
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            pairs_alike(n, o, None, |key, n, o| match (key, n, o) {
                ("metadata", Value::Object(n), Value::Object(o)) => {
                    let cluster = |m: &'_ Map<String, Value>| {
                        m.get("labels")
                            .and_then(|l| l.get(cluster::CLUSTER_NAME_LABEL))
                            .cloned()
                    };
                    pairs_alike(n, o, Some("labels"), |_, n, o| n == o) && cluster(n) == cluster(o)
                }
                _ => n == o,
            })
        }
        _ => new == old,
    }
}

/// The two maps have the same keys, but for `ignored`, and `alike` holds for each key's pair of
/// values. Both iterate in key order (serde_json without `preserve_order`).
fn pairs_alike(
    n: &Map<String, Value>,
    o: &Map<String, Value>,
    ignored: Option<&str>,
    alike: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let ignored = |key: &str| ignored == Some(key);
    let mut n = n.iter().peekable();
    let mut o = o.iter().peekable();
    loop {
        let kept = match (n.peek().copied(), o.peek().copied()) {
            (None, None) => return true,
            (Some((kn, vn)), Some((ko, vo))) if kn == ko => {
                n.next();
                o.next();
                ignored(kn) || alike(kn, vn, vo)
            }
            (Some((kn, _)), Some((ko, _))) if kn < ko => {
                n.next();
                ignored(kn)
            }
            (Some((kn, _)), None) => {
                n.next();
                ignored(kn)
            }
            (_, Some((ko, _))) => {
                o.next();
                ignored(ko)
            }
        };
        if !kept {
            return false;
        }
    }
}

/// The key `project` files an object of `kind` under: the namespace and name in its metadata;
/// None without a name.
pub(crate) fn record_key(kind: Kind, obj: &Value) -> Option<ObjKey> {
    let (namespace, name) = recorded_name(obj)?;
    Some(ObjKey::new(kind, namespace, name))
}

fn recorded_name(obj: &Value) -> Option<(Option<&str>, &str)> {
    let m = obj.get("metadata");
    let name = m.and_then(|m| m.get("name")).and_then(Value::as_str)?;
    Some((
        m.and_then(|m| m.get("namespace")).and_then(Value::as_str),
        name,
    ))
}

/// As `project`, where `reading` (if any) is `read_pool(kind, obj)` taken already: a pool is
/// not read again for the X2 record of an admitted pool.
pub fn project_read(kind: Kind, obj: &Value, reading: Option<&PoolReading>) -> Option<Projection> {
    let (namespace, name) = recorded_name(obj)?;
    match kind {
        Kind::InClusterIPPool
        | Kind::GlobalInClusterIPPool
        | Kind::InClusterPrefixPool
        | Kind::GlobalInClusterPrefixPool
        | Kind::Metal3IPPool
        | Kind::SpiderIPPool
        | Kind::SpiderSubnet
        | Kind::Declared(_) => Some(Projection::Pool(Box::new(match reading {
            Some(r) => r.proj.clone(),
            None => read_pool(kind, obj).proj,
        }))),
        Kind::IPAddress => Some(Projection::Address(capi::project_address(
            obj,
            ObjKey::new(kind, namespace, name),
        ))),
        Kind::IPAddressClaim => Some(Projection::Claim(capi::project_claim(
            obj,
            ObjKey::new(kind, namespace, name),
        ))),
        Kind::Metal3IPAddress => Some(Projection::Address(metal3::project_address(
            obj,
            ObjKey::new(kind, namespace, name),
        ))),
        Kind::Metal3IPClaim => Some(Projection::Claim(metal3::project_claim(
            obj,
            ObjKey::new(kind, namespace, name),
        ))),
        Kind::Cluster | Kind::VSphereCluster | Kind::Metal3Cluster => Some(Projection::Cluster(
            Box::new(cluster::project(obj, ObjKey::new(kind, namespace, name))),
        )),
        Kind::SpiderReservedIP | Kind::VSphereMachine => Some(Projection::Holder(Box::new(
            holder::project(obj, ObjKey::new(kind, namespace, name)),
        ))),
        Kind::VSphereMachineTemplate | Kind::Metal3DataTemplate => None,
    }
}

#[cfg(test)]
mod meta_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_read_in_one_pass_with_wrong_types_ignored() {
        let obj = json!({"metadata": {
            "uid": "u", "name": "p", "namespace": "ns", "labels": {"a": "b"},
            "annotations": {"ipam-guard.io/address-space": "east"},
            "deletionTimestamp": "2025-01-01T00:00:00Z", "resourceVersion": "7"
        }});
        let m = Meta::read(&obj);
        assert_eq!((m.namespace, m.name), (Some("ns"), "p"));
        assert_eq!(m.label("a"), Some("b"));
        assert_eq!(m.address_space(), "east");
        assert!(m.deleting);

        let odd = json!({"metadata": {
            "name": 7, "namespace": null, "labels": ["a"], "annotations": "x",
            "deletionTimestamp": null
        }});
        assert_eq!(Meta::read(&odd), Meta::default());
        for no_metadata in [json!({}), json!({"metadata": "p"}), json!([1]), json!(null)] {
            assert_eq!(Meta::read(&no_metadata), Meta::default(), "{no_metadata}");
        }
    }

    #[test]
    fn objects_project_alike_when_only_their_labels_differ() {
        let base = json!({"apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"},
                "annotations": {"c": "d"}},
            "spec": {"prefix": 24, "addresses": ["10.0.0.1"]}, "status": {"x": 1}});
        let changed = |f: &dyn Fn(&mut Value)| {
            let mut v = base.clone();
            f(&mut v);
            v
        };
        let alike = [
            changed(&|v| v["metadata"]["labels"]["a"] = json!("z")),
            changed(&|v| v["metadata"]["labels"] = json!({})),
            changed(&|v| v["metadata"]["labels"] = json!("not a map")),
            changed(&|v| {
                v["metadata"].as_object_mut().unwrap().remove("labels");
            }),
        ];
        let unlike = [
            changed(&|v| v["spec"]["prefix"] = json!(25)),
            changed(&|v| v["spec"]["prefix"] = json!(24.0)),
            changed(&|v| v["spec"]["gateway"] = json!(null)),
            changed(&|v| v["metadata"]["annotations"]["c"] = json!("e")),
            changed(&|v| v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z")),
            changed(&|v| v["metadata"]["name"] = json!("q")),
            changed(&|v| v["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] = json!("p")),
            changed(&|v| v["apiVersion"] = json!("g/v2")),
            changed(&|v| v["status"]["x"] = json!(2)),
            changed(&|v| {
                v.as_object_mut().unwrap().remove("status");
            }),
            changed(&|v| v["metadata"] = json!("not a map")),
            json!(null),
        ];
        for other in &alike {
            assert!(
                projects_alike(other, &base) && projects_alike(&base, other),
                "{other}"
            );
        }
        for other in &unlike {
            assert!(
                !projects_alike(other, &base) && !projects_alike(&base, other),
                "{other}"
            );
        }
        assert!(projects_alike(&base, &base) && projects_alike(&json!(7), &json!(7)));
    }
}

#[cfg(test)]
mod key_tests {
    use std::collections::{HashMap, HashSet};
    use std::hash::BuildHasher;

    use super::*;

    fn keys() -> Vec<ObjKey> {
        vec![
            ObjKey::new(Kind::IPAddress, Some("ns"), "a"),
            ObjKey::new(Kind::IPAddress, Some("ns"), "b"),
            ObjKey::new(Kind::IPAddress, Some("other"), "a"),
            ObjKey::new(Kind::IPAddressClaim, Some("ns"), "a"),
            ObjKey::new(Kind::InClusterIPPool, Some("ns"), "a"),
            ObjKey::new(Kind::GlobalInClusterIPPool, None, "a"),
            // Names that run together differently must not collide by construction.
            ObjKey::new(Kind::IPAddress, Some("n"), "sa"),
            ObjKey::new(Kind::IPAddress, Some(""), "nsa"),
        ]
    }

    /// `Borrow<dyn Keyed>` holds only if a key and its borrowed form hash and compare alike.
    #[test]
    fn a_key_and_its_borrowed_form_hash_and_compare_alike() {
        let state = foldhash::fast::RandomState::default();
        for k in keys() {
            let r = k.key_ref();
            assert_eq!(state.hash_one(&k), state.hash_one(r), "{k}");
            let as_dyn: &dyn Keyed = &k;
            assert_eq!(state.hash_one(as_dyn), state.hash_one(&r as &dyn Keyed));
            assert_eq!(r.to_key(), k);
            assert_eq!(r.to_string(), k.to_string());
        }
    }

    #[test]
    fn maps_keyed_by_objkey_are_asked_with_a_borrowed_key() {
        let map: HashMap<ObjKey, usize> = keys().into_iter().zip(0..).collect();
        let set: HashSet<ObjKey> = keys().into_iter().collect();
        for (i, k) in keys().iter().enumerate() {
            let r = KeyRef::new(k.kind, k.namespace.as_deref(), &k.name);
            assert_eq!(map.get(&r as &dyn Keyed), Some(&i));
            assert!(set.contains(&r as &dyn Keyed));
        }
        let missing = KeyRef::new(Kind::IPAddress, Some("ns"), "c");
        assert_eq!(map.get(&missing as &dyn Keyed), None);
    }

    /// As `ObjKey::new`, a cluster-scoped kind drops the namespace it was given, so the lookup
    /// of a global pool named from a namespaced object still finds it.
    #[test]
    fn a_borrowed_key_of_a_cluster_scoped_kind_has_no_namespace() {
        let r = KeyRef::new(Kind::GlobalInClusterIPPool, Some("ns"), "g");
        assert_eq!(r.namespace, None);
        assert_eq!(
            r.to_key(),
            ObjKey::new(Kind::GlobalInClusterIPPool, None, "g")
        );
        assert_eq!(r.to_string(), "GlobalInClusterIPPool g");
        let n = KeyRef::new(Kind::InClusterIPPool, Some("ns"), "p");
        assert_eq!(n.to_string(), "InClusterIPPool ns/p");
    }
}
