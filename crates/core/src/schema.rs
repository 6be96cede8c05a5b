//! What the API server checks before any webhook sees an object: the CRD's structural schema
//! (`openAPIV3Schema` of the version written in `apiVersion`), strict field validation (unknown
//! fields are errors, as `kubectl --validate=strict` reports them) and the metadata name rules.
//! `check` runs it so a folder kubectl would reject does not pass a CI gate.
//!
//! A small walker rather than a JSON Schema crate: a CRD schema is not plain JSON Schema. Its
//! meaning rests on Kubernetes extensions (`x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource`, list types, `nullable` with
//! null pruning), unknown fields are errors only under strict decoding, and the messages must read
//! as the API server writes them (`spec.prefix in body must be of type integer: "string"`), at
//! Kubernetes field paths, as the target release words them (`kube_version`). Not evaluated:
//! `x-kubernetes-validations` (CEL; none of the providers' CRDs of the judged kinds carries any),
//! string formats other than the ones listed in `check_format`, and defaults (the API server
//! fills them in before validating; a missing defaulted field is therefore never reported).
//!
//! Pure: no I/O. Without a CRD from the user (`--crd-dir`) or the cluster (`--kubeconfig`), the
//! schemas are the project's own description of the kinds it judges (`builtin.fields`, read by
//! `builtin`), compared field by field with the providers' real CRDs by its test.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

mod builtin;

use crate::kube_version::KubeVersion;

/// One schema problem, as the API server would report it: the field path and the cause body
/// (`Invalid value: "x": …`, `Required value`, `unknown field "spec.gatway"`). `warning`: the
/// API server accepts the object but drops what is named (an unknown field, on a release without
/// strict field validation: see `kube_version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
    pub warning: bool,
}

/// The schemas of a set of CRDs, by group, kind and served version.
#[derive(Debug, Default)]
pub struct Schemas {
    /// (group, kind) → served version → schema (None: the version declares no schema).
    kinds: BTreeMap<(String, String), BTreeMap<String, Option<Node>>>,
}

/// What a `(group, kind, version)` names in a set of CRDs.
#[derive(Debug)]
pub enum Lookup<'a> {
    Found(Option<&'a Node>),
    /// The group and kind are known, the version is not served.
    UnservedVersion {
        served: Vec<&'a str>,
    },
    /// The group is known, the kind is not.
    UnknownKind {
        known: Vec<&'a str>,
    },
    /// Nothing in these CRDs is of that group.
    UnknownGroup,
}

impl Schemas {
    /// The project's own description of the kinds it judges (`builtin.fields`), read once.
    pub fn builtin() -> &'static Schemas {
        static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| {
            let mut s = Schemas::default();
            // The text is part of the binary and its test parses it: it cannot fail at run time
            // unless the build itself is broken.
            for d in builtin::parse(builtin::TEXT).expect("src/schema/builtin.fields parses") {
                let versions = d.versions.into_iter().map(|v| (v, Some(d.root.clone())));
                s.kinds
                    .entry((d.group, d.kind))
                    .or_default()
                    .extend(versions);
            }
            s
        });
        &SCHEMAS
    }

    /// Adds, from `other`, every kind these schemas do not have (a cluster's CRDs first, the
    /// built-in description for the judged kinds the cluster does not serve).
    pub fn fill_from(&mut self, other: &Schemas) {
        for (key, versions) in &other.kinds {
            self.kinds
                .entry(key.clone())
                .or_insert_with(|| versions.clone());
        }
    }

    /// Adds one CustomResourceDefinition (`apiextensions.k8s.io/v1`); a later CRD of the same
    /// group and kind replaces an earlier one, as an update on the API server would.
    pub fn add_crd(&mut self, crd: &Value) -> Result<(), String> {
        let kind_of = crd.get("kind").and_then(Value::as_str);
        if kind_of != Some("CustomResourceDefinition") {
            return Err("not a CustomResourceDefinition".into());
        }
        let spec = crd.get("spec").ok_or("spec is missing")?;
        let group = spec
            .get("group")
            .and_then(Value::as_str)
            .ok_or("spec.group is missing")?;
        let kind = spec
            .pointer("/names/kind")
            .and_then(Value::as_str)
            .ok_or("spec.names.kind is missing")?;
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .ok_or("spec.versions is missing")?;
        let mut by_version = BTreeMap::new();
        for (i, v) in versions.iter().enumerate() {
            let name = v
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("spec.versions[{i}].name is missing"))?;
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let schema = match v.pointer("/schema/openAPIV3Schema") {
                Some(s) => Some(
                    Node::compile(s)
                        .map_err(|e| format!("spec.versions[{i}].schema.openAPIV3Schema: {e}"))?,
                ),
                None => None,
            };
            by_version.insert(name.to_string(), schema);
        }
        self.kinds
            .insert((group.to_string(), kind.to_string()), by_version);
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    pub fn lookup(&self, group: &str, kind: &str, version: &str) -> Lookup<'_> {
        if let Some(versions) = self.kinds.get(&(group.to_string(), kind.to_string())) {
            return match versions.get(version) {
                Some(schema) => Lookup::Found(schema.as_ref()),
                None => Lookup::UnservedVersion {
                    served: versions.keys().map(String::as_str).collect(),
                },
            };
        }
        let known: Vec<&str> = self
            .kinds
            .keys()
            .filter(|(g, _)| g == group)
            .map(|(_, k)| k.as_str())
            .collect();
        if known.is_empty() {
            Lookup::UnknownGroup
        } else {
            Lookup::UnknownKind { known }
        }
    }

    /// Validates a whole object against the schema of its `apiVersion` and `kind`, plus the
    /// metadata rules every object meets, as the newest tested API server does (`validate_as`).
    /// None when these CRDs do not define that version (see `lookup` for why).
    pub fn validate(
        &self,
        group: &str,
        kind: &str,
        version: &str,
        object: &Value,
    ) -> Option<Vec<SchemaError>> {
        self.validate_as(KubeVersion::NEWEST_TESTED, group, kind, version, object)
    }

    /// `validate` as an API server of release `target` answers: whether unknown fields are
    /// refused or pruned, and its wording (see `kube_version`).
    pub fn validate_as(
        &self,
        target: KubeVersion,
        group: &str,
        kind: &str,
        version: &str,
        object: &Value,
    ) -> Option<Vec<SchemaError>> {
        let Lookup::Found(schema) = self.lookup(group, kind, version) else {
            return None;
        };
        let mut errors = Vec::new();
        validate_metadata(target, object.get("metadata"), &mut errors);
        if let (Some(schema), Some(fields)) = (schema, object.as_object()) {
            let mut w = Walk {
                errors: &mut errors,
                path: String::new(),
                target,
            };
            w.properties(schema, fields, true);
        }
        Some(errors)
    }
}

/// The closest of `candidates` to `given` (case-insensitive edit distance at most a third of its
/// length, at least 2), for "did you mean" hints.
pub fn closest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let given_l = given.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (edit_distance(&given_l, &c.to_ascii_lowercase()), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min()
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
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

// === Compiled schema nodes ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl Type {
    fn parse(s: &str) -> Result<Type, String> {
        Ok(match s {
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            other => return Err(format!("unknown type {other:?}")),
        })
    }
    fn name(self) -> &'static str {
        match self {
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// One node of a structural schema, with its patterns compiled once. Every keyword that bears
/// on validation is kept, including those the walk does not act on (defaults, nullable, list
/// and map types): the built-in description is compared with real CRDs node by node.
#[derive(Debug, Clone, Default)]
pub struct Node {
    ty: Option<Type>,
    int_or_string: bool,
    preserve_unknown: bool,
    embedded_resource: bool,
    properties: BTreeMap<String, Node>,
    /// `additionalProperties` with a schema: a map whose values follow it.
    additional: Option<Box<Node>>,
    /// `additionalProperties: true`.
    additional_any: bool,
    items: Option<Box<Node>>,
    required: Vec<String>,
    enumeration: Option<Vec<Value>>,
    pattern: Option<(String, Regex)>,
    format: Option<String>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    list_type: Option<ListType>,
    /// `x-kubernetes-map-type`.
    map_type: Option<String>,
    nullable: bool,
    default: Option<Value>,
}

impl Node {
    fn compile(s: &Value) -> Result<Node, String> {
        let o = s.as_object().ok_or("a schema must be an object")?;
        let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
        let num = |k: &str| o.get(k).and_then(Value::as_f64);
        let count = |k: &str| o.get(k).and_then(Value::as_u64);
        let mut properties = BTreeMap::new();
        if let Some(Value::Object(props)) = o.get("properties") {
            for (k, v) in props {
                properties.insert(
                    k.clone(),
                    Node::compile(v).map_err(|e| format!("properties.{k}: {e}"))?,
                );
            }
        }
        let (additional, additional_any) = match o.get("additionalProperties") {
            Some(Value::Bool(b)) => (None, *b),
            Some(v @ Value::Object(_)) => (
                Some(Box::new(
                    Node::compile(v).map_err(|e| format!("additionalProperties: {e}"))?,
                )),
                false,
            ),
            _ => (None, false),
        };
        let items = match o.get("items") {
            Some(v @ Value::Object(_)) => Some(Box::new(
                Node::compile(v).map_err(|e| format!("items: {e}"))?,
            )),
            _ => None,
        };
        let pattern = match o.get("pattern").and_then(Value::as_str) {
            Some(p) => Some((
                p.to_string(),
                Regex::new(p).map_err(|e| format!("pattern {p:?}: {e}"))?,
            )),
            None => None,
        };
        let strings = |k: &str| -> Vec<String> {
            o.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Node {
            ty: o
                .get("type")
                .and_then(Value::as_str)
                .map(Type::parse)
                .transpose()?,
            int_or_string: flag("x-kubernetes-int-or-string"),
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag("x-kubernetes-embedded-resource"),
            properties,
            additional,
            additional_any,
            items,
            required: strings("required"),
            enumeration: o.get("enum").and_then(Value::as_array).cloned(),
            pattern,
            format: o.get("format").and_then(Value::as_str).map(str::to_string),
            minimum: num("minimum"),
            maximum: num("maximum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            min_length: count("minLength"),
            max_length: count("maxLength"),
            min_items: count("minItems"),
            max_items: count("maxItems"),
            min_properties: count("minProperties"),
            max_properties: count("maxProperties"),
            list_type: match o.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("atomic") => Some(ListType::Atomic),
                Some("set") => Some(ListType::Set),
                Some("map") => Some(ListType::Map(strings("x-kubernetes-list-map-keys"))),
                Some(other) => return Err(format!("unknown x-kubernetes-list-type {other:?}")),
                None => None,
            },
            map_type: o
                .get("x-kubernetes-map-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            nullable: flag("nullable"),
            default: o.get("default").cloned(),
        })
    }
}

// === Walking an object ===

/// One walk of an object. `path` is the field being looked at, grown and cut back as the walk
/// descends: most fields are valid, and formatting a path for each was 2% of `check`'s
/// instructions.
struct Walk<'e> {
    errors: &'e mut Vec<SchemaError>,
    path: String,
    target: KubeVersion,
}

/// How `field.Invalid` prints a value: strings quoted, numbers and booleans bare.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Walk<'_> {
    /// A finding at the current path.
    fn push(&mut self, message: String) {
        let path = self.path.clone();
        self.push_at(path, message);
    }

    fn push_at(&mut self, path: String, message: String) {
        self.errors.push(SchemaError {
            path,
            message,
            warning: false,
        });
    }

    fn invalid(&mut self, value: &Value, detail: String) {
        self.push(format!("Invalid value: {}: {detail}", shown(value)));
    }

    /// Runs `f` with `segment` appended to the path (`.key`, or `[i]`), then cuts it back.
    fn within(&mut self, segment: std::fmt::Arguments, f: impl FnOnce(&mut Self)) {
        use std::fmt::Write as _;
        let len = self.path.len();
        let _ = self.path.write_fmt(segment);
        f(self);
        self.path.truncate(len);
    }

    fn within_key(&mut self, key: &str, f: impl FnOnce(&mut Self)) {
        let len = self.path.len();
        if len > 0 {
            self.path.push('.');
        }
        self.path.push_str(key);
        f(self);
        self.path.truncate(len);
    }

    fn node(&mut self, n: &Node, v: &Value) {
        // The API server prunes a null of a non-nullable field before validating (apiextensions
        // v1): it is as if the field were not written.
        if v.is_null() {
            return;
        }
        if !self.type_ok(n, v) {
            return;
        }
        if let Some(allowed) = &n.enumeration {
            if !allowed.contains(v) {
                // apimachinery's NotSupported quotes every allowed value (`%q` of its text).
                let list: Vec<String> = allowed
                    .iter()
                    .map(|a| match a {
                        Value::String(s) => format!("{s:?}"),
                        other => format!("{:?}", other.to_string()),
                    })
                    .collect();
                self.push(format!(
                    "Unsupported value: {}: supported values: {}",
                    shown(v),
                    list.join(", ")
                ));
            }
        }
        match v {
            Value::Object(fields) => {
                self.properties(n, fields, false);
                if let Some(min) = n.min_properties {
                    if (fields.len() as u64) < min {
                        let detail = format!(
                            "{} in body should have at least {min} properties",
                            self.path
                        );
                        self.invalid(&Value::from(fields.len()), detail);
                    }
                }
                if let Some(max) = n.max_properties {
                    if fields.len() as u64 > max {
                        self.push(format!(
                            "Too many: {}: must have at most {max} items",
                            fields.len()
                        ));
                    }
                }
            }
            Value::Array(list) => self.array(n, list),
            Value::String(s) => self.string(n, v, s),
            Value::Number(_) => self.number(n, v),
            _ => {}
        }
    }

    fn type_ok(&mut self, n: &Node, v: &Value) -> bool {
        if n.int_or_string {
            if v.is_string() || v.as_i64().is_some() || v.as_u64().is_some() {
                return true;
            }
            let detail = format!(
                "{} in body must be of type integer,string: {:?}",
                self.path,
                json_type(v)
            );
            self.invalid(v, detail);
            return false;
        }
        let Some(ty) = n.ty else { return true };
        let ok = match ty {
            Type::Object => v.is_object(),
            Type::Array => v.is_array(),
            Type::String => v.is_string(),
            Type::Boolean => v.is_boolean(),
            Type::Number => v.is_number(),
            // A float with no fractional part (`24.0`) decodes as an integer on the API server too.
            Type::Integer => {
                v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
        };
        if !ok {
            let detail = format!(
                "{} in body must be of type {}: {:?}",
                self.path,
                ty.name(),
                json_type(v)
            );
            // The API server puts the type's name where the value goes; a reader needs the
            // value (the detail still names the type, in the API server's words).
            self.invalid(v, detail);
        }
        ok
    }

    /// The members of an object: required ones present, each known one valid, unknown ones
    /// reported (strict decoding) unless the schema keeps unknown fields or is a map.
    fn properties(&mut self, n: &Node, fields: &Map<String, Value>, root: bool) {
        for r in &n.required {
            if !fields.contains_key(r) || fields[r].is_null() {
                self.within_key(r, |w| w.push("Required value".into()));
            }
        }
        for (k, v) in fields {
            if let Some(p) = n.properties.get(k) {
                // metadata is ObjectMeta whatever the CRD says (`validate_metadata`).
                if root && k == "metadata" {
                    continue;
                }
                self.within_key(k, |w| w.node(p, v));
            } else if let Some(a) = &n.additional {
                self.within_key(k, |w| w.node(a, v));
            } else {
                // Every object (and an embedded one) has apiVersion, kind and metadata whether
                // or not its schema lists them.
                let type_meta = (root || n.embedded_resource)
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                if !(type_meta || n.additional_any || n.preserve_unknown) {
                    self.within_key(k, |w| {
                        let unknown = unknown_field(w.target, &w.path);
                        w.errors.push(unknown);
                    });
                }
            }
        }
    }

    fn array(&mut self, n: &Node, list: &[Value]) {
        if let Some(items) = &n.items {
            for (i, v) in list.iter().enumerate() {
                self.within(format_args!("[{i}]"), |w| w.node(items, v));
            }
        }
        if let Some(min) = n.min_items {
            if (list.len() as u64) < min {
                let detail = format!("{} in body should have at least {min} items", self.path);
                self.invalid(&Value::from(list.len()), detail);
            }
        }
        if let Some(max) = n.max_items {
            if list.len() as u64 > max {
                self.push(format!(
                    "Too many: {}: must have at most {max} items",
                    list.len()
                ));
            }
        }
        if n.list_type == Some(ListType::Set) {
            for (i, v) in list.iter().enumerate() {
                if list[..i].contains(v) {
                    self.push_at(
                        format!("{}[{i}]", self.path),
                        format!("Duplicate value: {}", shown(v)),
                    );
                }
            }
        }
        let map_keys = match &n.list_type {
            Some(ListType::Map(keys)) => keys.as_slice(),
            _ => &[],
        };
        if !map_keys.is_empty() {
            let key_of = |v: &Value| -> Vec<Value> {
                map_keys
                    .iter()
                    .map(|k| v.get(k).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            let keys: Vec<Vec<Value>> = list.iter().map(key_of).collect();
            for i in 0..keys.len() {
                if keys[..i].contains(&keys[i]) {
                    let shown_key: Vec<String> = map_keys
                        .iter()
                        .zip(&keys[i])
                        .map(|(k, v)| format!("{k}: {}", shown(v)))
                        .collect();
                    self.push_at(
                        format!("{}[{i}]", self.path),
                        format!("Duplicate value: {{{}}}", shown_key.join(", ")),
                    );
                }
            }
        }
    }

    fn string(&mut self, n: &Node, v: &Value, s: &str) {
        let len = s.chars().count() as u64;
        if let Some(max) = n.max_length {
            if len > max {
                self.push(format!("Too long: may not be longer than {max}"));
            }
        }
        if let Some(min) = n.min_length {
            if len < min {
                let detail = format!("{} in body should be at least {min} chars long", self.path);
                self.invalid(v, detail);
            }
        }
        if let Some((text, re)) = &n.pattern {
            if !re.is_match(s) {
                let detail = format!("{} in body should match '{text}'", self.path);
                self.invalid(v, detail);
            }
        }
        if let Some(format) = &n.format {
            if let Some(why) = check_format(format, s) {
                let detail = format!("{} in body must be of type {why}", self.path);
                self.invalid(v, detail);
            }
        }
    }

    fn number(&mut self, n: &Node, v: &Value) {
        let Some(x) = v.as_f64() else { return };
        if let Some(min) = n.minimum {
            let (bad, word) = if n.exclusive_minimum {
                (x <= min, "greater than")
            } else {
                (x < min, "greater than or equal to")
            };
            if bad {
                let detail = format!("{} in body should be {word} {}", self.path, trim(min));
                self.invalid(v, detail);
            }
        }
        if let Some(max) = n.maximum {
            let (bad, word) = if n.exclusive_maximum {
                (x >= max, "less than")
            } else {
                (x > max, "less than or equal to")
            };
            if bad {
                let detail = format!("{} in body should be {word} {}", self.path, trim(max));
                self.invalid(v, detail);
            }
        }
    }
}

fn trim(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// The string formats the API server checks that these CRDs use. Other formats pass, as they do
/// on the API server for formats it does not know.
fn check_format(format: &str, s: &str) -> Option<&'static str> {
    let ok = match format {
        "date-time" => is_date_time(s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => return None,
    };
    (!ok).then_some(match format {
        "date-time" => "date-time",
        "ipv4" => "ipv4",
        _ => "ipv6",
    })
}

/// RFC 3339 `date-time`, the shape `metav1.Time` writes (`2024-01-02T03:04:05Z`, offsets and
/// fractions allowed).
fn is_date_time(s: &str) -> bool {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok()
}

// === metadata ===

/// What ObjectMeta may hold: strict decoding rejects anything else.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// `metadata.name` of a custom resource: a DNS-1123 subdomain (the API server's default name
/// validation for CRDs).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// An unknown field: refused under strict field validation, pruned (and only a warning here) by
/// servers without it.
fn unknown_field(target: KubeVersion, path: &str) -> SchemaError {
    let refused = target.refuses_unknown_fields();
    SchemaError {
        path: path.to_string(),
        message: if refused {
            format!("unknown field {path:?}")
        } else {
            format!("unknown field {path:?}; the API server drops it")
        },
        warning: !refused,
    }
}

fn validate_metadata(target: KubeVersion, meta: Option<&Value>, errors: &mut Vec<SchemaError>) {
    let mut errors_warn = Vec::new();
    validate_metadata_fields(target, meta, errors, &mut errors_warn);
    errors.extend(errors_warn);
}

fn validate_metadata_fields(
    target: KubeVersion,
    meta: Option<&Value>,
    errors: &mut Vec<SchemaError>,
    errors_warn: &mut Vec<SchemaError>,
) {
    let mut push = |path: &str, message: String| {
        errors.push(SchemaError {
            path: path.into(),
            message,
            warning: false,
        })
    };
    let Some(meta) = meta else { return };
    let Some(meta) = meta.as_object() else {
        push(
            "metadata",
            format!(
                "Invalid value: {:?}: metadata in body must be of type object: {:?}",
                json_type(meta),
                json_type(meta)
            ),
        );
        return;
    };
    for k in meta.keys() {
        if !OBJECT_META.contains(&k.as_str()) {
            let unknown = unknown_field(target, &format!("metadata.{k}"));
            if unknown.warning {
                errors_warn.push(unknown);
            } else {
                push(&unknown.path, unknown.message);
            }
        }
    }
    if let Some(Value::String(name)) = meta.get("name") {
        if name.len() > 253 {
            push(
                "metadata.name",
                "Too long: must have at most 253 bytes".to_string(),
            );
        } else if !is_dns1123_subdomain(name) {
            push(
                "metadata.name",
                format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN_MSG}"),
            );
        }
    }
    if let Some(Value::String(ns)) = meta.get("namespace") {
        if !is_dns1123_label(ns) {
            push(
                "metadata.namespace",
                format!("Invalid value: {ns:?}: {DNS1123_LABEL_MSG}"),
            );
        }
    }
    for map in ["labels", "annotations"] {
        match meta.get(map) {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                for (k, v) in entries {
                    if !v.is_string() {
                        push(
                            &format!("metadata.{map}[{k}]"),
                            format!(
                                "Invalid value: {:?}: metadata.{map} in body must be of type string: {:?}",
                                json_type(v),
                                json_type(v)
                            ),
                        );
                    }
                }
                if map == "labels" {
                    for (k, v) in entries {
                        if let Some(why) = label_key_problem(target, k) {
                            push("metadata.labels", format!("Invalid value: {k:?}: {why}"));
                        }
                        if let Some(v) = v.as_str() {
                            if let Some(why) = label_value_problem(target, v) {
                                push("metadata.labels", format!("Invalid value: {v:?}: {why}"));
                            }
                        }
                    }
                }
            }
            Some(other) => push(
                &format!("metadata.{map}"),
                format!(
                    "Invalid value: {:?}: metadata.{map} in body must be of type object: {:?}",
                    json_type(other),
                    json_type(other)
                ),
            ),
        }
    }
}

fn is_name_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric()
}

const QUALIFIED_NAME_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `validation.IsQualifiedName`: `[prefix/]name`.
pub(crate) fn label_key_problem(target: KubeVersion, k: &str) -> Option<String> {
    let parts: Vec<&str> = k.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Some("prefix part must be non-empty".into());
            }
            if !is_dns1123_subdomain(prefix) {
                return Some(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
            }
            *name
        }
        _ => {
            let what = if target.newer_label_words() {
                "a valid label key"
            } else {
                "a qualified name"
            };
            return Some(format!(
                "{what} {QUALIFIED_NAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
        }
    };
    if name.is_empty() {
        return Some("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Some(format!(
            "name part must be no more than 63 {}",
            length_unit(target)
        ));
    }
    (!is_name_part(name)).then(|| format!("name part {QUALIFIED_NAME_REGEX_MSG}"))
}

/// How the target words a length limit.
fn length_unit(target: KubeVersion) -> &'static str {
    if target.newer_label_words() {
        "bytes"
    } else {
        "characters"
    }
}

/// `validation.IsValidLabelValue`: empty, or a name part of at most 63 characters.
pub(crate) fn label_value_problem(target: KubeVersion, v: &str) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    if v.len() > 63 {
        return Some(format!("must be no more than 63 {}", length_unit(target)));
    }
    (!is_name_part(v)).then(|| "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string())
}

#[cfg(test)]
mod tests;
