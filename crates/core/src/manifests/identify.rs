//! From a document to manifests: lists unfolded, kinds recognised, identity (kind, namespace,
//! name) read, and what is not a Kubernetes object of ours counted.

use serde_json::Value;

use super::collect::{Each, FileResult};
use super::{LoadError, Manifest, Other, Problem, Source};
use crate::kinds::{unjudged, Kind, Unjudged, KINDS};
use crate::model::ObjKey;

pub(super) fn dispatch<T>(source: &Source, doc: Value, out: &mut FileResult<T>, each: &Each<T>) {
    let doc = match doc {
        // An empty document (`---` twice, a trailing `---`) holds nothing.
        Value::Null => return,
        // A bare list of objects (what some tools write); a list of anything else is not
        // manifests (an Ansible playbook, a list of strings).
        Value::Array(elements) => {
            for (i, e) in elements.into_iter().enumerate() {
                if e.is_object() {
                    object(source.with_item(i), e, out, false, each);
                } else {
                    out.not_objects += 1;
                }
            }
            return;
        }
        Value::Object(o) => o,
        // A string that mentions apiVersion is a manifest gone wrong (a heredoc that lost its
        // newlines); any other scalar document is not a Kubernetes object.
        Value::String(text) if text.contains("apiVersion") => {
            out.errors.push(LoadError::new(
                source.clone(),
                Problem::NotAnObject("a string"),
            ));
            return;
        }
        _ => {
            out.not_objects += 1;
            return;
        }
    };
    if !is_list(&doc) {
        object(source.clone(), Value::Object(doc), out, false, each);
        return;
    }
    let mut doc = doc;
    match doc.remove("items") {
        // `kind: List` without items is an empty list.
        None | Some(Value::Null) => {}
        Some(Value::Array(elements)) => {
            for (i, e) in elements.into_iter().enumerate() {
                object(source.with_item(i), e, out, true, each);
            }
        }
        Some(other) => out.errors.push(LoadError::new(
            source.clone(),
            Problem::WrongType {
                field: "items",
                expected: "a list",
                found: json_type_name(&other),
            },
        )),
    }
}

/// Whether a document is a list of objects (`kind: List`, `IPAddressList`…): its `items` are
/// the objects, the rest of it is nothing to judge.
pub(super) fn is_list(doc: &serde_json::Map<String, Value>) -> bool {
    matches!(doc.get("kind"), Some(Value::String(k)) if k.ends_with("List"))
        && doc.contains_key("apiVersion")
}

/// One item of a list's `items`, as `dispatch` reads it.
pub(super) fn list_item<T>(source: Source, item: Value, out: &mut FileResult<T>, each: &Each<T>) {
    object(source, item, out, true, each);
}

/// One object: of a known kind (a manifest), of another kind (counted), or not a Kubernetes
/// object at all (counted). `in_list`: an item of a `kind: List`, which must be an object.
fn object<T>(
    source: Source,
    mut object: Value,
    out: &mut FileResult<T>,
    in_list: bool,
    each: &Each<T>,
) {
    if !object.is_object() {
        let found = json_type_name(&object);
        out.errors
            .push(LoadError::new(source, Problem::NotAnObject(found)));
        return;
    }
    let field = |name: &'static str| -> Result<&str, Problem> {
        match object.get(name) {
            None | Some(Value::Null) => Err(Problem::Missing(name)),
            Some(Value::String(s)) if s.is_empty() => Err(Problem::Missing(name)),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(Problem::WrongType {
                field: name,
                expected: "a string",
                found: json_type_name(other),
            }),
        }
    };
    let (kind, version) = match (field("apiVersion"), field("kind")) {
        (Ok(api_version), Ok(kind)) => match Kind::from_api_version(api_version, kind) {
            Some(known) => known,
            None => {
                let (group, version) = match api_version.rsplit_once('/') {
                    Some((g, v)) => (g, v),
                    None => ("", api_version),
                };
                let label = if group.is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind}.{group}")
                };
                // Its CRD at hand: the caller validates it against that, nothing else.
                if (each.keep_other)(group, kind) {
                    out.others.push(Other {
                        source,
                        group: group.to_string(),
                        version: version.to_string(),
                        kind: kind.to_string(),
                        object,
                    });
                    return;
                }
                match unjudged(Some(group), kind) {
                    Unjudged::BuiltIn => *out.not_ipam.entry(label).or_default() += 1,
                    Unjudged::NearMiss(meant) => out.errors.push(LoadError::new(
                        source,
                        unknown_kind(api_version, kind, Some(meant)),
                    )),
                    Unjudged::Other => {
                        *out.skipped.entry(label.clone()).or_default() += 1;
                        out.skipped_at.push((source, label));
                    }
                }
                return;
            }
        },
        // Neither apiVersion nor kind, or one of them without anything that names a kind we
        // serve: not a Kubernetes object (Helm values, renovate.json). Inside a `kind: List`
        // every item must be one.
        (Err(_), Err(_)) if !in_list => {
            out.not_objects += 1;
            return;
        }
        (Err(_), Ok(kind)) if !in_list && !KINDS.iter().any(|k| k.name == kind) => {
            out.not_objects += 1;
            return;
        }
        (Ok(api_version), Err(_))
            if !in_list
                && !KINDS
                    .iter()
                    .any(|k| api_version.starts_with(&format!("{}/", k.group))) =>
        {
            out.not_objects += 1;
            return;
        }
        (Err(p), _) | (_, Err(p)) => {
            out.errors.push(LoadError::new(source, p));
            return;
        }
    };
    match identify(kind, &mut object) {
        Ok(key) => out.manifests.push((each.manifest)(Manifest {
            source,
            kind,
            version,
            key,
            object,
        })),
        Err(p) => out.errors.push(LoadError::new(source, p)),
    }
}

fn unknown_kind(api_version: &str, kind: &str, hint: Option<&str>) -> Problem {
    let mut text = format!("no matches for kind {kind:?} in version {api_version:?}");
    if let Some(h) = hint {
        text.push_str(&format!(" (did you mean {h:?}?)"));
    }
    Problem::UnknownKind(text.into())
}

/// Reads name and namespace; fills in `default` for a namespaced object written without one.
fn identify(kind: Kind, object: &mut Value) -> Result<ObjKey, Problem> {
    let Some(meta) = object.get_mut("metadata") else {
        return Err(Problem::Missing("metadata.name"));
    };
    let found = json_type_name(meta);
    let Some(meta) = meta.as_object_mut() else {
        return Err(Problem::WrongType {
            field: "metadata",
            expected: "an object",
            found,
        });
    };
    let name = match meta.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            return Err(Problem::Missing("metadata.name"))
        }
        Some(v) => {
            return Err(Problem::WrongType {
                field: "metadata.name",
                expected: "a string",
                found: json_type_name(v),
            })
        }
    };
    let namespace = match meta.get("namespace") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(v) => {
            return Err(Problem::WrongType {
                field: "metadata.namespace",
                expected: "a string",
                found: json_type_name(v),
            })
        }
    };
    let namespace = match (kind.namespaced(), namespace) {
        (true, None) => {
            meta.insert("namespace".into(), Value::String("default".into()));
            Some("default".to_string())
        }
        (_, ns) => ns,
    };
    Ok(ObjKey::new(kind, namespace.as_deref(), &name))
}

pub(super) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
