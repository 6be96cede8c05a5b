//! Wrong types at every node of the envelope and of each kind's object: each node of a real
//! capture replaced by each stand-in in turn, with what the rules read of it deciding the answer.

use super::*;

/// The envelope: every node of the review outside the objects, each stand-in in turn.
pub fn envelope_cases(out: &mut Vec<Case>) {
    let source = "ipaddress-create.json";
    let review = capture(source);
    let mut paths = Vec::new();
    let skip = |p: &[Seg]| {
        p.len() > 2
            && matches!(p, [Seg::Key(r), Seg::Key(k), ..] if r == "request" && (k == "object" || k == "oldObject"))
    };
    nodes(&review, &[], &skip, &mut paths);
    for path in paths {
        let field = field_of(&path);
        for (label, with) in stand_ins() {
            let doc = replaced(&review, &path, with.as_ref());
            out.push(
                Case::new(
                    "envelope field of a wrong type or missing",
                    format!("envelope {field} := {label}"),
                    body(&doc),
                    envelope_expectation(&field, label),
                )
                .from(source),
            );
        }
    }
}

/// What a broken envelope field must get: a 400 naming it where the review cannot be
/// answered without it, else the decision the review got before.
pub fn envelope_expectation(field: &str, label: &str) -> Expect {
    match field {
        "apiVersion" => Expect::Http(400, "apiVersion".into()),
        "kind" => Expect::Http(400, "AdmissionReview".into()),
        "request" => Expect::Http(400, "request".into()),
        "request.uid" if label == "string" => Expect::Baseline,
        "request.uid" => Expect::Http(400, "uid".into()),
        "request.operation" => Expect::Http(400, "operation".into()),
        "request.kind" => Expect::Http(400, "request.kind".into()),
        // Another group or kind is a kind ipam-guard does not serve: allowed untouched.
        "request.kind.group" if matches!(label, "string" | "null" | "missing") => Expect::Allowed,
        "request.kind.kind" if label == "string" => Expect::Allowed,
        "request.kind.group" | "request.kind.version" | "request.kind.kind" => {
            Expect::EnvelopeOrBaseline(field.to_string())
        }
        "request.object" => match label {
            "object" => Expect::Judged,
            _ => Expect::DeniedAt("object".into()),
        },
        "request.name" | "request.namespace" | "request.dryRun" => {
            Expect::EnvelopeOrBaseline(field.to_string())
        }
        // userInfo, resource, requestKind, requestResource, options, and oldObject on a create.
        _ => Expect::Baseline,
    }
}

/// Captures whose objects get every node replaced in turn (one per kind and operation shape),
/// with the fields the rules read (`*` is any one segment, `[*]` any index). A
/// value of another JSON type at a read field cannot be decoded: it must be a denial at that
/// field, never silently read as absent.
pub const OBJECT_CAPTURES: &[(&str, &[&str])] = &[
    ("ipaddressclaim-create.json", CLAIM),
    ("ipaddressclaim-create-v1beta1.json", CLAIM),
    ("ipaddress-create.json", ADDRESS),
    ("ipaddress-create-v1beta1.json", ADDRESS),
    (
        "inclusterippool-create.json",
        &[
            "spec",
            "spec.addresses",
            "spec.addresses[*]",
            "spec.gateway",
            "spec.prefix",
        ],
    ),
    (
        "inclusterippool-create-v1alpha1.json",
        &[
            "spec",
            "spec.subnet",
            "spec.start",
            "spec.end",
            "spec.gateway",
            "spec.prefix",
        ],
    ),
    (
        "globalinclusterippool-update-spec.json",
        &[
            "spec",
            "spec.addresses",
            "spec.addresses[*]",
            "spec.excludedAddresses",
            "spec.excludedAddresses[*]",
            "spec.gateway",
            "spec.prefix",
        ],
    ),
    (
        "metal3-ippool-create.json",
        &[
            "spec",
            "spec.pools",
            "spec.pools[*]",
            "spec.pools[*].start",
            "spec.pools[*].end",
            "spec.pools[*].subnet",
            "spec.pools[*].gateway",
            "spec.pools[*].prefix",
            "spec.pools[*].dnsServers",
            "spec.pools[*].dnsServers[*]",
            "spec.prefix",
            "spec.gateway",
            "spec.dnsServers",
            "spec.dnsServers[*]",
            "spec.preAllocations",
            "spec.preAllocations.*",
        ],
    ),
    (
        "metal3-ipclaim-create.json",
        &["spec", "spec.pool", "spec.pool.name", "spec.pool.namespace"],
    ),
    (
        "metal3-ipaddress-create.json",
        &[
            "spec",
            "spec.address",
            "spec.prefix",
            "spec.gateway",
            "spec.pool",
            "spec.pool.name",
            "spec.pool.namespace",
            "spec.claim",
            "spec.claim.name",
            "spec.claim.namespace",
        ],
    ),
    (
        "spiderippool-create.json",
        &[
            "spec",
            "spec.subnet",
            "spec.ipVersion",
            "spec.ips",
            "spec.ips[*]",
            "spec.excludeIPs",
            "spec.excludeIPs[*]",
            "spec.gateway",
        ],
    ),
    (
        "spiderippool-delete.json",
        &["status", "status.allocatedIPCount", "status.allocatedIPs"],
    ),
    // V1 only warns: CAPV owns these objects.
    ("vspheremachine-create.json", &[]),
];

pub const CLAIM: &[&str] = &["spec", "spec.poolRef", "spec.poolRef.*", "spec.clusterName"];
pub const ADDRESS: &[&str] = &[
    "spec",
    "spec.address",
    "spec.prefix",
    "spec.gateway",
    "spec.claimRef",
    "spec.claimRef.name",
    "spec.poolRef",
    "spec.poolRef.*",
];

/// Whether `field` (indices written `[n]`) matches one of the patterns.
pub fn is_read(field: &str, patterns: &[&str]) -> bool {
    let mut shape = String::new();
    let mut in_index = false;
    for ch in field.chars() {
        match ch {
            '[' => {
                in_index = true;
                shape.push_str("[*]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => shape.push(ch),
        }
    }
    let fs: Vec<&str> = shape.split('.').collect();
    patterns.iter().any(|p| {
        let ps: Vec<&str> = p.split('.').collect();
        ps.len() == fs.len() && ps.iter().zip(&fs).all(|(p, f)| *p == "*" || p == f)
    })
}

/// Every node of the object (oldObject for deletes), each stand-in in turn.
pub fn object_cases(out: &mut Vec<Case>) {
    for &(source, read) in OBJECT_CAPTURES {
        let review = capture(source);
        let which = if review["request"]["operation"] == "DELETE" {
            "oldObject"
        } else {
            "object"
        };
        let root = [Seg::Key("request".into()), Seg::Key(which.into())];
        let mut paths = Vec::new();
        // managedFields is the API server's bookkeeping: replacing the whole list is enough.
        let skip = |p: &[Seg]| {
            p.len() > root.len() + 2
                && matches!(&p[root.len() + 1], Seg::Key(k) if k == "managedFields")
        };
        nodes(&review["request"][which], &root, &skip, &mut paths);
        for path in paths {
            let field = field_of(&path[2..]);
            let original = json_type(get(&review, &path).unwrap());
            for (label, with) in stand_ins() {
                let doc = replaced(&review, &path, with.as_ref());
                let retyped = with
                    .as_ref()
                    .is_some_and(|w| !w.is_null() && json_type(w) != original);
                let identity = matches!(
                    field.as_str(),
                    "apiVersion" | "kind" | "metadata" | "metadata.name" | "metadata.namespace"
                );
                let expect = if identity {
                    // Another identity is another object, judged on its own (a renamed pool
                    // overlaps the one it was copied from).
                    Expect::Judged
                } else if is_read(&field, read) && retyped {
                    Expect::DeniedAt(field.clone())
                } else if is_read(&field, read) {
                    // A new value of the right type, or none: whatever the rules make of it.
                    Expect::Judged
                } else {
                    Expect::FieldOrBaseline(field.clone())
                };
                out.push(
                    Case::new(
                        "object field of a wrong type or missing",
                        format!("{source} {which}.{field} := {label}"),
                        body(&doc),
                        expect,
                    )
                    .from(source),
                );
            }
        }
    }
}
