//! The mutating webhook's patch as `check` applies it (RFC 6902, by `json-patch`) before the
//! schema and validation run, and as the warnings it reports: one per value the patch fills in,
//! at the field a reader would look for.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation};
use serde_json::Value;

use crate::field::{format_value, PatchOp, Warning};

/// One warning per value the patch fills in: a patch that creates `metadata.labels` is reported
/// at the label it adds, the way a user would look for it.
pub(super) fn mutation_warnings(op: &PatchOp) -> Vec<Warning> {
    let warning = |field: String, value: &Value| {
        Warning::new(
            op.rule,
            field,
            format!(
                "not set; the mutating webhook sets it to {}",
                format_value(value)
            ),
        )
    };
    match &op.value {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| {
                let key = k.replace('~', "~0").replace('/', "~1");
                warning(pointer_to_field(&format!("{}/{key}", op.path)), v)
            })
            .collect(),
        v => vec![warning(pointer_to_field(&op.path), v)],
    }
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `/metadata/labels/cluster.x-k8s.io~1cluster-name` → `metadata.labels[cluster.x-k8s.io/cluster-name]`,
/// the way `field.Path` writes map keys and list indexes.
pub(super) fn pointer_to_field(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1).map(unescape) {
        let index = !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
        if index || seg.contains(['.', '/']) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// Applies one operation of the mutating webhook's patch (RFC 6902, by `json-patch`), as the
/// API server would before validation.
pub(super) fn apply_add(doc: &mut Value, op: &PatchOp) -> Result<(), String> {
    let fail = |why: &str| {
        format!(
            "the mutating webhook's patch {} cannot apply: {why}",
            op.path
        )
    };
    let path = PointerBuf::parse(op.path.as_str()).map_err(|_| fail("not a JSON pointer"))?;
    let add = PatchOperation::Add(AddOperation {
        path,
        value: op.value.clone(),
    });
    json_patch::patch(doc, &[add]).map_err(|_| fail(why_add_fails(doc, &op.path)))
}

/// Why an `add` at `path` cannot apply to `doc`: the crate says only "path is invalid", while a
/// reader needs to know which part of it.
fn why_add_fails(doc: &Value, path: &str) -> &'static str {
    let parent = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    match doc.pointer(parent) {
        None => "the parent does not exist",
        Some(Value::Array(_)) => "index out of bounds",
        Some(_) => "the parent is not an object or a list",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule_id::RuleId;
    use serde_json::json;

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(
            pointer_to_field("/spec/poolRef/apiGroup"),
            "spec.poolRef.apiGroup"
        );
        assert_eq!(
            pointer_to_field("/metadata/labels/cluster.x-k8s.io~1cluster-name"),
            "metadata.labels[cluster.x-k8s.io/cluster-name]"
        );
        assert_eq!(pointer_to_field("/spec/addresses/0"), "spec.addresses[0]");
    }

    #[test]
    fn add_fills_and_replaces() {
        let mut doc = json!({"spec": {"poolRef": {"apiGroup": ""}}, "metadata": {}});
        let op = |path: &str, value: Value| PatchOp {
            rule: RuleId::M1,
            path: path.into(),
            value,
        };
        apply_add(&mut doc, &op("/spec/poolRef/apiGroup", json!("g"))).unwrap();
        apply_add(&mut doc, &op("/metadata/labels", json!({"a": "b"}))).unwrap();
        apply_add(
            &mut doc,
            &op(
                "/metadata/labels/cluster.x-k8s.io~1cluster-name",
                json!("c"),
            ),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"poolRef": {"apiGroup": "g"}},
                   "metadata": {"labels": {"a": "b", "cluster.x-k8s.io/cluster-name": "c"}}})
        );
        let fails = |doc: &mut Value, path: &str| apply_add(doc, &op(path, json!(1))).unwrap_err();
        assert!(fails(&mut doc, "/status/x").ends_with("the parent does not exist"));
        assert!(fails(&mut doc, "/spec/poolRef/apiGroup/x")
            .ends_with("the parent is not an object or a list"));
        let mut list = json!({"a": [1]});
        assert!(fails(&mut list, "/a/2").ends_with("index out of bounds"));
        assert!(fails(&mut list, "a").ends_with("not a JSON pointer"));
        apply_add(&mut list, &op("/a/-", json!(2))).unwrap();
        assert_eq!(list, json!({"a": [1, 2]}));
    }
}
