//! The kinds ipam-guard serves: one table that dispatch, the manifests test, RBAC and the live
//! view all read, so the code and the webhook registrations cannot drift apart.

use std::sync::RwLock;

/// API groups, spelled once.
pub const CAPI_IPAM: &str = "ipam.cluster.x-k8s.io";
pub(crate) const METAL3_IPAM: &str = "ipam.metal3.io";
pub(crate) const SPIDERPOOL: &str = "spiderpool.spidernet.io";
pub const CAPV: &str = "infrastructure.cluster.x-k8s.io";
pub(crate) const CAPI_CORE: &str = "cluster.x-k8s.io";

/// Annotation naming the address space a pool belongs to.
pub const ADDRESS_SPACE_ANNOTATION: &str = "ipam-guard.io/address-space";
pub const DEFAULT_ADDRESS_SPACE: &str = "default";

/// Pool kinds whose group M1 may fill in: the in-cluster provider serves exactly these.
const IN_CLUSTER_POOL_KINDS: [&str; 4] = [
    "InClusterIPPool",
    "GlobalInClusterIPPool",
    "InClusterPrefixPool",
    "GlobalInClusterPrefixPool",
];

/// The group M1 would write for a pool reference that names no group, if any. Readers use it too,
/// so the index and `check` see a reference the way the API server stores it after mutation.
pub fn default_pool_group(kind: &str) -> Option<&'static str> {
    IN_CLUSTER_POOL_KINDS.contains(&kind).then_some(CAPI_IPAM)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    IPAddressClaim,
    IPAddress,
    InClusterIPPool,
    GlobalInClusterIPPool,
    Metal3IPPool,
    Metal3IPClaim,
    Metal3IPAddress,
    SpiderIPPool,
    VSphereMachine,
    VSphereMachineTemplate,
    InClusterPrefixPool,
    GlobalInClusterPrefixPool,
    Cluster,
    Metal3DataTemplate,
    VSphereCluster,
    Metal3Cluster,
    SpiderSubnet,
    SpiderReservedIP,
    /// A pool kind declared in an `AddressKinds` file (docs/kinds.md), named by its number in
    /// the process's table of declared kinds (`declare`). Not in `Kind::ALL` or `KINDS`: those
    /// are the kinds ipam-guard is built with.
    Declared(u16),
}

/// What `info()` answers for a declared number nothing was installed under: no group, no
/// versions, not a pool, so nothing is read or judged as one. Only a `Kind` built by hand can
/// name such a number: `declare` hands out numbers it has filled.
static UNDECLARED: KindInfo = KindInfo {
    kind: Kind::Declared(u16::MAX),
    group: "",
    name: "(undeclared kind)",
    plural: "",
    versions: &[],
    namespaced: true,
    pool: false,
};

/// The facts of every declared kind, `Kind::Declared(n)` at place n (`declare`). Entries are
/// `'static` (the declared module leaks what it installs): a `Kind` is `Copy` and answers
/// `&'static` facts, so what it names must outlive every copy of it.
static DECLARED: RwLock<Vec<&'static KindInfo>> = RwLock::new(Vec::new());

/// Makes a declared kind known to the process (`declared::Registry::install`): `info` with its
/// `kind` set to the number it is given. A group and kind declared before keeps its number, so an
/// object filed under it stays its kind, and answers with the new facts from now on.
pub fn declare(mut info: KindInfo) -> Result<Kind, String> {
    let mut table = DECLARED
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let place = table
        .iter()
        .position(|d| d.group == info.group && d.name == info.name)
        .unwrap_or(table.len());
    // `u16::MAX` is `UNDECLARED`'s.
    let n = u16::try_from(place)
        .ok()
        .filter(|n| *n < u16::MAX)
        .ok_or_else(|| format!("more than {} declared kinds", u16::MAX - 1))?;
    info.kind = Kind::Declared(n);
    let info: &'static KindInfo = Box::leak(Box::new(info));
    match table.get_mut(place) {
        Some(slot) => *slot = info,
        None => table.push(info),
    }
    Ok(Kind::Declared(n))
}

fn declared_info(n: u16) -> Option<&'static KindInfo> {
    let table = DECLARED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    table.get(usize::from(n)).copied()
}

fn declared_kind(group: &str, kind: &str) -> Option<Kind> {
    let table = DECLARED
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    table
        .iter()
        .find(|d| d.group == group && d.name == kind)
        .map(|d| d.kind)
}

/// Static facts about a kind.
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    pub kind: Kind,
    pub group: &'static str,
    /// The Kubernetes `kind` string.
    pub name: &'static str,
    pub plural: &'static str,
    /// Served versions, storage version last.
    pub versions: &'static [&'static str],
    pub namespaced: bool,
    pub pool: bool,
}

pub const KINDS: &[KindInfo] = &[
    KindInfo {
        kind: Kind::IPAddressClaim,
        group: CAPI_IPAM,
        name: "IPAddressClaim",
        plural: "ipaddressclaims",
        versions: &["v1alpha1", "v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::IPAddress,
        group: CAPI_IPAM,
        name: "IPAddress",
        plural: "ipaddresses",
        versions: &["v1alpha1", "v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::InClusterIPPool,
        group: CAPI_IPAM,
        name: "InClusterIPPool",
        plural: "inclusterippools",
        versions: &["v1alpha1", "v1alpha2"],
        namespaced: true,
        pool: true,
    },
    KindInfo {
        kind: Kind::GlobalInClusterIPPool,
        group: CAPI_IPAM,
        name: "GlobalInClusterIPPool",
        plural: "globalinclusterippools",
        versions: &["v1alpha1", "v1alpha2"],
        namespaced: false,
        pool: true,
    },
    KindInfo {
        kind: Kind::Metal3IPPool,
        group: METAL3_IPAM,
        name: "IPPool",
        plural: "ippools",
        versions: &["v1alpha1"],
        namespaced: true,
        pool: true,
    },
    KindInfo {
        kind: Kind::Metal3IPClaim,
        group: METAL3_IPAM,
        name: "IPClaim",
        plural: "ipclaims",
        versions: &["v1alpha1"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::Metal3IPAddress,
        group: METAL3_IPAM,
        name: "IPAddress",
        plural: "ipaddresses",
        versions: &["v1alpha1"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::SpiderIPPool,
        group: SPIDERPOOL,
        name: "SpiderIPPool",
        plural: "spiderippools",
        versions: &["v2beta1"],
        namespaced: false,
        pool: true,
    },
    KindInfo {
        kind: Kind::VSphereMachine,
        group: CAPV,
        name: "VSphereMachine",
        plural: "vspheremachines",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::VSphereMachineTemplate,
        group: CAPV,
        name: "VSphereMachineTemplate",
        plural: "vspheremachinetemplates",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::InClusterPrefixPool,
        group: CAPI_IPAM,
        name: "InClusterPrefixPool",
        plural: "inclusterprefixpools",
        versions: &["v1alpha2"],
        namespaced: true,
        pool: true,
    },
    KindInfo {
        kind: Kind::GlobalInClusterPrefixPool,
        group: CAPI_IPAM,
        name: "GlobalInClusterPrefixPool",
        plural: "globalinclusterprefixpools",
        versions: &["v1alpha2"],
        namespaced: false,
        pool: true,
    },
    KindInfo {
        kind: Kind::Cluster,
        group: CAPI_CORE,
        name: "Cluster",
        plural: "clusters",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::Metal3DataTemplate,
        group: CAPV,
        name: "Metal3DataTemplate",
        plural: "metal3datatemplates",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::VSphereCluster,
        group: CAPV,
        name: "VSphereCluster",
        plural: "vsphereclusters",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    KindInfo {
        kind: Kind::Metal3Cluster,
        group: CAPV,
        name: "Metal3Cluster",
        plural: "metal3clusters",
        versions: &["v1beta1", "v1beta2"],
        namespaced: true,
        pool: false,
    },
    // A pool kind to the index (its allocatable set is in its address space, P10), though pods
    // draw from the SpiderIPPools carved from it, never from it (S9–S12, `usage`).
    KindInfo {
        kind: Kind::SpiderSubnet,
        group: SPIDERPOOL,
        name: "SpiderSubnet",
        plural: "spidersubnets",
        versions: &["v2beta1"],
        namespaced: false,
        pool: true,
    },
    KindInfo {
        kind: Kind::SpiderReservedIP,
        group: SPIDERPOOL,
        name: "SpiderReservedIP",
        plural: "spiderreservedips",
        versions: &["v2beta1"],
        namespaced: false,
        pool: false,
    },
];

impl Kind {
    pub const ALL: [Kind; 18] = [
        Kind::IPAddressClaim,
        Kind::IPAddress,
        Kind::InClusterIPPool,
        Kind::GlobalInClusterIPPool,
        Kind::Metal3IPPool,
        Kind::Metal3IPClaim,
        Kind::Metal3IPAddress,
        Kind::SpiderIPPool,
        Kind::VSphereMachine,
        Kind::VSphereMachineTemplate,
        Kind::InClusterPrefixPool,
        Kind::GlobalInClusterPrefixPool,
        Kind::Cluster,
        Kind::Metal3DataTemplate,
        Kind::VSphereCluster,
        Kind::Metal3Cluster,
        Kind::SpiderSubnet,
        Kind::SpiderReservedIP,
    ];

    /// A kind is always matched together with its group: Metal3's `IPAddress` is not CAPI's.
    /// The kinds ipam-guard is built with, then those declared and installed
    /// (`declared::Registry::install`).
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Kind> {
        Kind::built_in(group, kind).or_else(|| declared_kind(group, kind))
    }

    /// One of the kinds ipam-guard is built with, never a declared one.
    pub(crate) fn built_in(group: &str, kind: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|k| k.group == group && k.name == kind)
            .map(|k| k.kind)
    }

    /// The kind's place in `Kind::ALL` (and `KINDS`); None for a declared kind.
    pub fn built_in_index(self) -> Option<usize> {
        // Written out (a data-carrying enum has no `as usize`); `table_is_in_enum_order` holds
        // it to `Kind::ALL`.
        Some(match self {
            Kind::IPAddressClaim => 0,
            Kind::IPAddress => 1,
            Kind::InClusterIPPool => 2,
            Kind::GlobalInClusterIPPool => 3,
            Kind::Metal3IPPool => 4,
            Kind::Metal3IPClaim => 5,
            Kind::Metal3IPAddress => 6,
            Kind::SpiderIPPool => 7,
            Kind::VSphereMachine => 8,
            Kind::VSphereMachineTemplate => 9,
            Kind::InClusterPrefixPool => 10,
            Kind::GlobalInClusterPrefixPool => 11,
            Kind::Cluster => 12,
            Kind::Metal3DataTemplate => 13,
            Kind::VSphereCluster => 14,
            Kind::Metal3Cluster => 15,
            Kind::SpiderSubnet => 16,
            Kind::SpiderReservedIP => 17,
            Kind::Declared(_) => return None,
        })
    }

    pub fn is_declared(self) -> bool {
        matches!(self, Kind::Declared(_))
    }

    /// Parses `apiVersion` (`group/version`) and `kind` as written in an object.
    pub fn from_api_version(api_version: &str, kind: &str) -> Option<(Kind, String)> {
        let (group, version) = api_version.rsplit_once('/')?;
        Kind::from_group_kind(group, kind).map(|k| (k, version.to_string()))
    }

    pub fn info(self) -> &'static KindInfo {
        match self {
            Kind::Declared(n) => declared_info(n).unwrap_or(&UNDECLARED),
            // KINDS is written in the order of the enum.
            built_in => built_in
                .built_in_index()
                .and_then(|i| KINDS.get(i))
                .unwrap_or(&UNDECLARED),
        }
    }
    pub fn group(self) -> &'static str {
        self.info().group
    }
    pub fn name(self) -> &'static str {
        self.info().name
    }
    pub fn plural(self) -> &'static str {
        self.info().plural
    }
    pub fn namespaced(self) -> bool {
        self.info().namespaced
    }
    pub fn is_pool(self) -> bool {
        self.info().pool
    }
    pub fn serves_version(self, version: &str) -> bool {
        self.info().versions.contains(&version)
    }
    pub fn storage_version(self) -> &'static str {
        self.info().versions.last().copied().unwrap_or_default()
    }
    /// DELETE is judged only for pools (P9, MP4, S6, S12); registering it elsewhere adds latency for nothing.
    pub fn operations(self) -> &'static [&'static str] {
        if self.is_pool() {
            &["CREATE", "UPDATE", "DELETE"]
        } else {
            &["CREATE", "UPDATE"]
        }
    }
    /// Pools that hand out whole IPv6 sub-prefixes (the in-cluster provider's prefix pools): their
    /// allocatable set is counted, and their addresses judged, in sub-prefixes.
    pub fn is_prefix_pool(self) -> bool {
        matches!(
            self,
            Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool
        )
    }
    /// Spiderpool's pool kinds, which declare a `spec.subnet` of their own (S9–S11).
    pub(crate) fn is_spider(self) -> bool {
        matches!(self, Kind::SpiderIPPool | Kind::SpiderSubnet)
    }
    /// Kinds that hold addresses outside every pool in their address space (RI4-RI6, SA1-SA3):
    /// a ReservedIP's addresses and a machine's static ones.
    pub fn holds_addresses(self) -> bool {
        matches!(self, Kind::SpiderReservedIP | Kind::VSphereMachine)
    }
    /// Kinds the mutating webhook patches (M1, M2).
    pub fn mutated(self) -> bool {
        matches!(self, Kind::IPAddressClaim | Kind::IPAddress)
    }
    /// How kinds are written in `check` output and messages: bare in Cluster API's IPAM and core
    /// groups, `Kind.group` elsewhere (Metal3's IPAddress must not read as CAPI's).
    /// A declared kind is written bare, as kubectl prints it (`InfobloxIPPool`).
    pub fn display_name(self) -> String {
        if self.is_declared() || self.group() == CAPI_IPAM || self.group() == CAPI_CORE {
            self.name().to_string()
        } else {
            format!("{}.{}", self.name(), self.group())
        }
    }
}

/// What an object of a kind ipam-guard does not judge is to `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unjudged {
    /// Not IPAM, nothing to say about it: a kind the API server serves itself (core, `apps`,
    /// `rbac.authorization.k8s.io`, …) or of any group where no kind ipam-guard judges lives
    /// (`cluster.x-k8s.io`'s Cluster, cert-manager's Certificate, another team's CRD).
    BuiltIn,
    /// Another kind of a group ipam-guard judges kinds of (a provider's Metal3MachineTemplate,
    /// InfobloxIPPool, SpiderMultusConfig): skipped unless its CRD is at hand.
    Other,
    /// Almost the name of a kind ipam-guard serves in that group (a case slip, a couple of
    /// letters), and no provider publishes it: a typo the API server would refuse with "no
    /// matches for kind".
    NearMiss(&'static str),
}

/// Kinds the providers README names publish in the groups ipam-guard serves, besides the ones it
/// judges: never taken for a typo of a served kind. Read from each provider's API types (CAPI
/// core `api/ipam`, the in-cluster provider and CAPI's Infoblox provider, Metal3's
/// ip-address-manager, CAPM3 `api/`, CAPV `apis/`, Spiderpool `pkg/k8s/apis`).
const PUBLISHED: &[(&str, &[&str])] = &[
    (
        CAPI_CORE,
        &[
            "ClusterClass",
            "Machine",
            "MachineSet",
            "MachineDeployment",
            "MachineHealthCheck",
            "MachinePool",
            "MachineDrainRule",
        ],
    ),
    (CAPI_IPAM, &["InfobloxIPPool", "InfobloxInstance"]),
    (CAPV, CAPV_AND_CAPM3_KINDS),
    (
        SPIDERPOOL,
        &[
            "SpiderMultusConfig",
            "SpiderEndpoint",
            "SpiderCoordinator",
            "SpiderClaimParameter",
            "SpiderCNIConfig",
            "SpiderNode",
        ],
    ),
];

// CAPV and CAPM3 share the infrastructure group (so do every other infrastructure provider's
// kinds, which is why a near miss must be a near one).
const CAPV_AND_CAPM3_KINDS: &[&str] = &[
    "VSphereClusterTemplate",
    "VSphereClusterIdentity",
    "VSphereDeploymentZone",
    "VSphereFailureDomain",
    "VSphereVM",
    "HAProxyLoadBalancer",
    "BareMetalCluster",
    "BareMetalMachine",
    "BareMetalMachineTemplate",
    "Metal3ClusterTemplate",
    "Metal3Machine",
    "Metal3MachineTemplate",
    "Metal3Data",
    "Metal3DataClaim",
    "Metal3Remediation",
    "Metal3RemediationTemplate",
];

/// Sorts a kind ipam-guard does not judge (`group` None or `""`: the core group).
pub fn unjudged(group: Option<&str>, kind: &str) -> Unjudged {
    let group = group.unwrap_or("");
    // Kubernetes' own groups among them: no kind ipam-guard judges lives there.
    if !KINDS.iter().any(|k| k.group == group) {
        return Unjudged::BuiltIn;
    }
    let published = PUBLISHED
        .iter()
        .any(|(g, kinds)| *g == group && kinds.contains(&kind));
    if published {
        return Unjudged::Other;
    }
    let lower = kind.to_ascii_lowercase();
    KINDS
        .iter()
        .filter(|k| k.group == group)
        .map(|k| (edit_distance(&lower, &k.name.to_ascii_lowercase()), k.name))
        // Two edits at most, and never more than a fifth of the name: `IPPoolClaim` is not
        // `IPClaim` misspelt.
        .filter(|(d, name)| *d <= 2.min(name.len() / 5))
        .min()
        .map_or(Unjudged::Other, |(_, name)| Unjudged::NearMiss(name))
}

/// Levenshtein distance, for "did you mean" hints.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_enum_order() {
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k.info().kind, k);
            assert_eq!(k.built_in_index(), Some(i));
        }
        assert_eq!(KINDS.len(), Kind::ALL.len());
    }

    #[test]
    fn kind_is_matched_with_its_group() {
        assert_eq!(
            Kind::from_group_kind(CAPI_IPAM, "IPAddress"),
            Some(Kind::IPAddress)
        );
        assert_eq!(
            Kind::from_group_kind(METAL3_IPAM, "IPAddress"),
            Some(Kind::Metal3IPAddress)
        );
        assert_eq!(Kind::from_group_kind("example.com", "IPAddress"), None);
    }

    #[test]
    fn kinds_not_judged_are_sorted() {
        use Unjudged::*;
        for (group, kind) in [
            (None, "Namespace"),
            (Some("apps"), "Deployment"),
            (Some("cert-manager.io"), "Certificate"),
            (Some("example.com"), "Widget"),
        ] {
            assert_eq!(unjudged(group, kind), BuiltIn, "{kind}");
        }
        // Published by the providers: never a typo, however close to a served kind.
        for (group, kind) in [
            (CAPV, "Metal3MachineTemplate"),
            (CAPI_IPAM, "InfobloxIPPool"),
            (SPIDERPOOL, "SpiderMultusConfig"),
            (CAPV, "AWSMachineTemplate"),
            (CAPI_CORE, "Machine"),
            (CAPI_CORE, "MachineDeployment"),
        ] {
            assert_eq!(unjudged(Some(group), kind), Other, "{kind}");
        }
        for (group, kind, meant) in [
            (CAPI_IPAM, "InclusterIPPool", "InClusterIPPool"),
            (CAPI_IPAM, "IPAdressClaim", "IPAddressClaim"),
            (CAPI_IPAM, "InClusterIPPol", "InClusterIPPool"),
            (SPIDERPOOL, "SpiderIpPool", "SpiderIPPool"),
            (CAPV, "VsphereMachine", "VSphereMachine"),
        ] {
            assert_eq!(unjudged(Some(group), kind), NearMiss(meant), "{kind}");
        }
    }
}
