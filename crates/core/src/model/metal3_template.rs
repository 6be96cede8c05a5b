//! Reader for the pool references of Metal3's `Metal3DataTemplate`
//! (`infrastructure.cluster.x-k8s.io` v1beta1 and v1beta2, which spell them alike): every place
//! in `spec.metaData` and `spec.networkData` that names a pool its machines will claim from.
//!
//! Two forms: a typed reference (`fromPoolRef`, and the entries of `metaData.*FromIPPool`, each
//! with `apiGroup`, `kind`, `name`), and a bare name (`ipAddressFromIPPool`, `fromIPPool`,
//! `dnsFromIPPool`), which names a Metal3 `IPPool` of the template's namespace. A place that sets
//! `fromPoolAnnotation` takes its pool from an annotation at run time: its references are
//! ignored by Metal3, and here.

use serde_json::Value;

use crate::address::Family;
use crate::kinds::Kind;

/// Keys holding the bare name of a Metal3 `IPPool`.
const BY_NAME: [&str; 3] = ["ipAddressFromIPPool", "fromIPPool", "dnsFromIPPool"];

/// One pool reference of a template, as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TemplateRef<'a> {
    /// `spec.networkData.networks.ipv4[0].fromPoolRef`.
    pub path: String,
    /// The reference as written (an object, or the bare name), for comparing old and new.
    pub raw: &'a Value,
    /// None for a bare name (a Metal3 `IPPool`).
    pub api_group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
    /// The family the place needs: an address of an `ipv4` or `ipv6` network (its gateway
    /// included); None where either fits (DNS servers, metadata).
    pub family: Option<Family>,
}

impl TemplateRef<'_> {
    /// The kind the reference names: Metal3's `IPPool` for a bare name; None when the group and
    /// kind name no kind ipam-guard knows.
    pub(crate) fn named_kind(&self) -> Option<Kind> {
        match (self.api_group, self.kind) {
            (None, None) => Some(Kind::Metal3IPPool),
            (group, Some(kind)) => Kind::from_group_kind(group.unwrap_or_default(), kind),
            (Some(_), None) => None,
        }
    }
}

/// Every pool reference of the template, in document order.
pub(crate) fn pool_refs(obj: &Value) -> Vec<TemplateRef<'_>> {
    let mut out = Vec::new();
    let Some(spec) = obj.get("spec") else {
        return out;
    };
    for key in ["metaData", "networkData"] {
        if let Some(v) = spec.get(key) {
            walk(v, &format!("spec.{key}"), None, &mut out);
        }
    }
    out
}

fn walk<'a>(v: &'a Value, path: &str, family: Option<Family>, out: &mut Vec<TemplateRef<'a>>) {
    match v {
        Value::Object(m) => {
            let by_annotation = m.contains_key("fromPoolAnnotation");
            for (key, child) in m {
                let here = format!("{path}.{key}");
                let family = match key.as_str() {
                    "ipv4" => Some(Family::V4),
                    "ipv6" => Some(Family::V6),
                    _ => family,
                };
                if BY_NAME.contains(&key.as_str()) {
                    if let (Some(name), false) = (child.as_str(), by_annotation) {
                        out.push(TemplateRef {
                            path: here,
                            raw: child,
                            api_group: None,
                            kind: None,
                            name: Some(name),
                            family: if key == "dnsFromIPPool" { None } else { family },
                        });
                    }
                } else if key == "fromPoolRef" {
                    if !by_annotation {
                        out.push(typed(child, here, family));
                    }
                } else if key.ends_with("FromIPPool") {
                    // metaData's lists: each entry a typed reference (older entries: a name
                    // only, for a Metal3 IPPool).
                    for (i, entry) in child.as_array().into_iter().flatten().enumerate() {
                        out.push(typed(entry, format!("{here}[{i}]"), None));
                    }
                } else {
                    walk(child, &here, family, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                walk(child, &format!("{path}[{i}]"), family, out);
            }
        }
        _ => {}
    }
}

fn typed(v: &Value, path: String, family: Option<Family>) -> TemplateRef<'_> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    TemplateRef {
        path,
        raw: v,
        api_group: s("apiGroup"),
        kind: s("kind"),
        name: s("name"),
        family,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_place_that_names_a_pool_is_found_with_the_family_it_needs() {
        let t = json!({"spec": {
            "metaData": {
                "ipAddressesFromIPPool": [{"key": "ip", "apiGroup": "ipam.metal3.io", "kind": "IPPool", "name": "prov"}],
                "dnsServersFromIPPool": [{"key": "dns", "name": "legacy"}]
            },
            "networkData": {
                "networks": {
                    "ipv4": [{"id": "a", "link": "eth0", "ipAddressFromIPPool": "v4-pool",
                              "routes": [{"gateway": {"fromIPPool": "v4-pool"},
                                          "services": {"dns": [], "dnsFromIPPool": "dns-pool"}}]}],
                    "ipv6": [{"id": "b", "link": "eth1",
                              "fromPoolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "v6-pool"}},
                             {"id": "c", "link": "eth2", "ipAddressFromIPPool": "ignored",
                              "fromPoolAnnotation": {"object": "machine", "annotation": "pool"}}]
                },
                "services": {"dnsFromIPPool": "dns-pool"}
            }
        }});
        let refs = pool_refs(&t);
        type Seen<'a> = (String, Option<Kind>, Option<&'a str>, Option<Family>);
        let got: Vec<Seen> = refs
            .iter()
            .map(|r| (r.path.clone(), r.named_kind(), r.name, r.family))
            .collect();
        let m3 = Some(Kind::Metal3IPPool);
        assert_eq!(
            got,
            [
                (
                    "spec.metaData.dnsServersFromIPPool[0]".into(),
                    m3,
                    Some("legacy"),
                    None
                ),
                (
                    "spec.metaData.ipAddressesFromIPPool[0]".into(),
                    m3,
                    Some("prov"),
                    None
                ),
                (
                    "spec.networkData.networks.ipv4[0].ipAddressFromIPPool".into(),
                    m3,
                    Some("v4-pool"),
                    Some(Family::V4)
                ),
                (
                    "spec.networkData.networks.ipv4[0].routes[0].gateway.fromIPPool".into(),
                    m3,
                    Some("v4-pool"),
                    Some(Family::V4)
                ),
                (
                    "spec.networkData.networks.ipv4[0].routes[0].services.dnsFromIPPool".into(),
                    m3,
                    Some("dns-pool"),
                    None
                ),
                (
                    "spec.networkData.networks.ipv6[0].fromPoolRef".into(),
                    Some(Kind::InClusterIPPool),
                    Some("v6-pool"),
                    Some(Family::V6)
                ),
                (
                    "spec.networkData.services.dnsFromIPPool".into(),
                    m3,
                    Some("dns-pool"),
                    None
                ),
            ]
        );
    }
}
