//! Small pieces the rule modules share: the X5 ratchet, immutability diffs, short lists.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::address::AddrSet;
use crate::address::{check_prefix, Family};
use crate::field::{FieldError, FieldPath, Warning};
use crate::model::capi::RefReading;
use crate::model::paths::reference;
use crate::model::pool::PoolReading;
use crate::model::read;
use crate::model::read::LIST_PROBLEMS;
use crate::model::written::{Text, Written};
use crate::model::ObjKey;
use crate::rule_id::RuleId;
use crate::rules::OverlapScope;

/// Lists of offenders stop here, followed by `and N more`.
pub(crate) const MAX_LISTED: usize = 5;

/// Deep equality in which a number equals the same number written another way (`24`, `24.0`) and
/// a missing value equals `null`: on UPDATE, what matters is whether the user changed anything.
pub(crate) fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    match (a, b) {
        // One value (an UPDATE's new object standing in for its stored one).
        (Some(x), Some(y)) if std::ptr::eq(x, y) => true,
        (None, None) => true,
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        // Both maps iterate in key order (serde_json without `preserve_order`, which a test
        // holds): one walk pairs their keys, a null counting as absent, with no lookups.
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut x = x.iter().filter(|(_, v)| !v.is_null());
            let mut y = y.iter().filter(|(_, v)| !v.is_null());
            loop {
                match (x.next(), y.next()) {
                    (None, None) => return true,
                    (Some((kx, vx)), Some((ky, vy))) if kx == ky && same(Some(vx), Some(vy)) => {}
                    _ => return false,
                }
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(Some(a), Some(b)))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Whether an UPDATE changed the spec.
pub(crate) fn spec_changed(new: &Value, old: &Value) -> bool {
    !same(new.get("spec"), old.get("spec"))
}

/// One immutability cause per changed leaf under `path` (C4, A10, as `ValidateImmutableField`).
/// Objects are walked key by key; lists and scalars are leaves.
pub(crate) fn immutable_changes(
    rule: RuleId,
    path: &str,
    new: Option<&Value>,
    old: Option<&Value>,
    out: &mut Vec<FieldError>,
) {
    if let (Some(Value::Object(n)), Some(Value::Object(o))) = (new, old) {
        let keys: BTreeSet<&String> = n.keys().chain(o.keys()).collect();
        for k in keys {
            immutable_changes(rule, &format!("{path}.{k}"), n.get(k), o.get(k), out);
        }
        return;
    }
    if !same(new, old) {
        out.push(FieldError::immutable(
            rule,
            path,
            new.unwrap_or(&Value::Null),
            old.unwrap_or(&Value::Null),
        ));
    }
}

/// One immutability cause per changed leaf under each of `paths`: `spec` for the kinds whose spec
/// is immutable (C4, A10, MC3, MA3), single fields for the pools (MP4, S5).
pub(crate) fn immutable_fields(
    rule: RuleId,
    paths: &[FieldPath],
    new: &Value,
    old: &Value,
    out: &mut Vec<FieldError>,
) {
    for &path in paths {
        immutable_changes(
            rule,
            path.as_str(),
            read::get(new, path),
            read::get(old, path),
            out,
        );
    }
}

/// A prefix length `raw`, written at `path` as `value`, within the bound of `family`, or of IPv6
/// when the family is unknown (129 is wrong whatever the address turns out to be). Never
/// narrowed: a prefix that does not fit is a cause under `rule` showing the value as written.
pub(crate) fn prefix_in_family(
    rule: RuleId,
    path: impl AsRef<str>,
    raw: i64,
    value: Option<&Value>,
    family: Option<Family>,
) -> Result<u8, FieldError> {
    check_prefix(family.unwrap_or(Family::V6), raw).map_err(|e| {
        FieldError::invalid(
            rule,
            path.as_ref(),
            value.cloned().unwrap_or(Value::Null),
            e.to_string(),
        )
    })
}

/// A field that must be set and non-empty (C1, A5, MC1, MA2): a Required cause at `path`. A
/// value of the wrong type has its own cause (`Written::type_error`), not this one.
pub(crate) fn require(
    rule: RuleId,
    path: FieldPath,
    value: &Written<&str>,
    errors: &mut Vec<FieldError>,
) {
    if matches!(value, Written::Absent | Written::Ok("")) {
        errors.push(FieldError::required(rule, path, ""));
    }
}

/// An address field's own findings under `rule` (an IP, a CIDR): a wrong type or a syntax
/// error denies, a non-canonical text warns (A1, A3, MP1).
pub(crate) fn ip_findings<T>(
    rule: RuleId,
    path: impl AsRef<str>,
    field: &Written<Text<T>>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<Warning>,
) {
    let path = path.as_ref();
    match field {
        Written::Absent => {}
        Written::Wrong(w) => errors.push(w.error(rule, path)),
        Written::Ok(Text { text, parsed }) => match parsed {
            Ok(p) => warnings.extend(p.warnings.iter().map(|w| Warning::new(rule, path, w))),
            Err(e) => errors.push(FieldError::invalid(rule, path, *text, e.to_string())),
        },
    }
}

/// Judges the entries of the list at `path` (`len` entries, of which `items` were read) one at
/// a time, `judge` pushing an entry's causes. Past `LIST_PROBLEMS` causes in this list one cause
/// at the list, under `rule`, says how many entries were not checked: a list of 750k bad entries
/// costs a thousand causes, not 750k (docs/robustness.md, O1). The request is denied anyway.
pub(crate) fn each_capped<X>(
    rule: RuleId,
    path: FieldPath,
    len: usize,
    items: impl IntoIterator<Item = X>,
    errors: &mut Vec<FieldError>,
    mut judge: impl FnMut(X, &mut Vec<FieldError>),
) {
    let before = errors.len();
    let mut checked = 0;
    for item in items {
        if errors.len() - before >= LIST_PROBLEMS {
            break;
        }
        judge(item, errors);
        checked += 1;
    }
    if errors.len() - before >= LIST_PROBLEMS && checked < len {
        errors.push(FieldError::forbidden(
            rule,
            path,
            format!(
                "{} more entries not checked after {LIST_PROBLEMS} problems in this list",
                len - checked
            ),
        ));
    }
}

/// A typed reference's own findings under `rule`: the reference at `path` is an object, its
/// keys strings (C1, A5).
pub(crate) fn reference_types(
    rule: RuleId,
    r: &RefReading,
    path: FieldPath,
    errors: &mut Vec<FieldError>,
) {
    errors.extend(r.raw.type_error(rule, path));
    for (key, field) in [
        (reference::API_GROUP, &r.api_group),
        (reference::KIND, &r.kind),
        (reference::NAME, &r.name),
    ] {
        // The path is formatted only for a cause: this runs on every address and claim.
        if let Written::Wrong(w) = field {
            errors.push(w.error(rule, format!("{path}.{key}")));
        }
    }
}

/// X5: keeps the findings the old object did not already have, so an update is judged only on
/// what it changes (a problem that moves to another path or changes its text counts as new).
pub(crate) fn ratchet(new: Vec<FieldError>, old: &[FieldError]) -> Vec<FieldError> {
    new.into_iter().filter(|e| !old.contains(e)).collect()
}

/// `a, b, c, d, e and 3 more`.
pub(crate) fn join_limited(items: &[String]) -> String {
    let shown = &items[..items.len().min(MAX_LISTED)];
    join_shown(shown, items.len())
}

/// The first items of a list of `total`, so long lists are never formatted in full.
pub(crate) fn join_shown(shown: &[String], total: usize) -> String {
    let list = shown.join(", ");
    if total > shown.len() {
        format!("{list} and {} more", total - shown.len())
    } else {
        list
    }
}

/// Kubernetes `IsDNS1123Subdomain`, with its messages (C1: `poolRef.name`).
pub(crate) fn dns1123_subdomain_errors(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters");
    }
    let label_ok = |l: &str| {
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        let b = l.as_bytes();
        b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if !s.split('.').all(label_ok) {
        out.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        );
    }
    out
}

/// What a pool can hand out that it could not before: the whole allocatable set on a create or a
/// move to another address space (`before` None), what the update adds otherwise (X5).
pub(crate) fn allocatable_added<'a>(
    r: &'a PoolReading,
    before: Option<&PoolReading>,
) -> std::borrow::Cow<'a, AddrSet> {
    match before {
        Some(b) => std::borrow::Cow::Owned(r.proj.allocatable.difference(&b.proj.allocatable)),
        None => std::borrow::Cow::Borrowed(&r.proj.allocatable),
    }
}

/// As `allocatable_added`, for each family the pool hands out of (`PoolProj::allocatable_sets`:
/// a declared pool may hand out both): what each set holds that no set of `before` held.
pub(crate) fn allocatable_added_sets<'a>(
    r: &'a PoolReading,
    before: Option<&PoolReading>,
) -> Vec<std::borrow::Cow<'a, AddrSet>> {
    r.proj
        .allocatable_sets()
        .map(|set| match before {
            // A set of the other family removes nothing, so each set loses what `before` held
            // of its own family, whichever of its sets that was.
            Some(b) => std::borrow::Cow::Owned(
                b.proj
                    .allocatable_sets()
                    .fold(set.clone(), |left, held| left.difference(held)),
            ),
            None => std::borrow::Cow::Borrowed(set),
        })
        .collect()
}

/// Whether anything but `metadata`'s bookkeeping differs between an update's objects: what a
/// declared kind's expressions may read (they see the whole object), where the built-in kinds'
/// rules read the spec alone (`spec_changed`). Labels and annotations count; `resourceVersion`,
/// `managedFields` and `generation`, which every write changes, do not.
pub(crate) fn object_changed(new: &Value, old: &Value) -> bool {
    const BOOKKEEPING: [&str; 3] = ["resourceVersion", "managedFields", "generation"];
    let keys = |v: &Value| -> BTreeSet<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let (n, o) = (keys(new), keys(old));
    n.union(&o).any(|k| {
        if k != "metadata" {
            return !same(new.get(k), old.get(k));
        }
        let (nm, om) = (new.get(k), old.get(k));
        let meta_keys = nm.map(keys).unwrap_or_default();
        let old_keys = om.map(keys).unwrap_or_default();
        meta_keys
            .union(&old_keys)
            .filter(|m| !BOOKKEEPING.contains(&m.as_str()))
            .any(|m| !same(nm.and_then(|v| v.get(m)), om.and_then(|v| v.get(m))))
    })
}

/// Whether two pools can conflict under `--overlap-scope namespace`: namespaced pools only within
/// their namespace, cluster-scoped pools with every pool.
pub(crate) fn in_scope(scope: OverlapScope, a: &ObjKey, b: &ObjKey) -> bool {
    match scope {
        OverlapScope::Off => false,
        OverlapScope::AddressSpace => true,
        OverlapScope::Namespace => {
            !a.kind.namespaced() || !b.kind.namespaced() || a.namespace == b.namespace
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn x5_numbers_compare_by_value() {
        assert!(same(
            Some(&json!({"prefix": 24})),
            Some(&json!({"prefix": 24.0}))
        ));
        assert!(!same(
            Some(&json!({"prefix": 24})),
            Some(&json!({"prefix": 25}))
        ));
        assert!(same(Some(&json!({"a": null})), Some(&json!({}))));
        assert!(!same(Some(&json!(["a"])), Some(&json!(["a", "b"]))));
    }

    #[test]
    fn x5_a_key_on_one_side_only_counts_unless_null() {
        let (a, b) = (
            json!({"p": {"q": {"r": 1, "s": null}}}),
            json!({"p": {"q": {"r": 1.0}}, "z": null}),
        );
        assert!(same(Some(&a), Some(&b)) && same(Some(&b), Some(&a)));
        for (a, b) in [
            (json!({}), json!({"a": 1})),
            (
                json!({"p": {"q": {"r": 1}}}),
                json!({"p": {"q": {"r": 1, "t": "x"}}}),
            ),
            (json!({"p": {"q": {"r": 1}}}), json!({"p": {"q": {"r": 2}}})),
        ] {
            assert!(!same(Some(&a), Some(&b)), "{a} {b}");
            assert!(!same(Some(&b), Some(&a)), "{b} {a}");
        }
    }

    /// `same` walks two maps side by side, which holds only while serde_json's `Map` iterates
    /// in key order: a dependency turning on `preserve_order` fails here first.
    #[test]
    fn maps_iterate_in_key_order() {
        let m = json!({"b": 1, "a": 2, "c": 3, "aa": 4});
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "aa", "b", "c"]);
    }

    /// The definition the walk replaced: every key of each side looked up in the other.
    fn same_by_lookup(a: Option<&Value>, b: Option<&Value>) -> bool {
        let a = a.filter(|v| !v.is_null());
        let b = b.filter(|v| !v.is_null());
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                x.iter().all(|(k, v)| same_by_lookup(Some(v), y.get(k)))
                    && y.iter().all(|(k, v)| v.is_null() || x.contains_key(k))
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|(a, b)| same_by_lookup(Some(a), Some(b)))
            }
            (Some(Value::Object(_)), _) | (_, Some(Value::Object(_))) => false,
            (Some(Value::Array(_)), _) | (_, Some(Value::Array(_))) => false,
            (a, b) => same(a, b),
        }
    }

    fn small_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            (0u8..3).prop_map(|n| json!(n)),
            (0u8..3).prop_map(|n| json!(f64::from(n))),
            prop_oneof![Just("x"), Just("y")].prop_map(|s| json!(s)),
            any::<bool>().prop_map(Value::Bool),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(String::from),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn the_walk_agrees_with_lookups(a in small_value(), b in small_value()) {
            proptest::prop_assert_eq!(same(Some(&a), Some(&b)), same_by_lookup(Some(&a), Some(&b)));
            proptest::prop_assert_eq!(same(Some(&b), Some(&a)), same_by_lookup(Some(&b), Some(&a)));
        }
    }

    #[test]
    fn immutable_changes_are_per_leaf() {
        let mut out = Vec::new();
        immutable_changes(
            RuleId::C4,
            "spec",
            Some(&json!({"poolRef": {"name": "b", "kind": "K"}, "clusterName": "c"})),
            Some(&json!({"poolRef": {"name": "a", "kind": "K"}})),
            &mut out,
        );
        let texts: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                r#"spec.clusterName: Invalid value: "c": field is immutable (was not set)"#,
                r#"spec.poolRef.name: Invalid value: "b": field is immutable (was "a")"#,
            ]
        );
    }

    #[test]
    fn lists_stop_at_five() {
        let items: Vec<String> = (1..=8).map(|i| i.to_string()).collect();
        assert_eq!(join_limited(&items), "1, 2, 3, 4, 5 and 3 more");
        assert_eq!(join_limited(&items[..2]), "1, 2");
    }

    #[test]
    fn dns1123_subdomain() {
        assert!(dns1123_subdomain_errors("pool-a.b").is_empty());
        assert_eq!(dns1123_subdomain_errors("Pool_A").len(), 1);
        assert_eq!(dns1123_subdomain_errors("-a").len(), 1);
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
    }
}
