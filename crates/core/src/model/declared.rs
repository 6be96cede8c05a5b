//! Objects of a declared pool kind (docs/kinds.md) read as pools: what its `addresses`
//! expression returns, less what `excluded` takes out, in the object's address space, as every
//! pool kind is read (`pool::PoolReading`). A declaration may name addresses of both families
//! (MetalLB's pools do): the reading's family is IPv4 when it hands out any, and the other
//! family's set rides along in `PoolProj::other_family`.

use std::collections::HashMap;

use serde_json::Value;

use crate::address::{Entry, Family};
use crate::declared::Addresses;
use crate::kinds::Kind;
use crate::model::paths;
use crate::model::pool::{projection, PoolEntry, PoolReading};
use crate::model::Meta;

/// The pool an object of the declared `kind` is, or why it cannot be read: the expression's
/// problem on this object (it fails, exceeds a bound, returns what is not a list of addresses),
/// as `declared::EvalError` words it. Such an object is not judged (`check` reports it as an
/// input it could not judge).
pub fn read(kind: Kind, obj: &Value) -> Result<PoolReading, String> {
    let declaration = crate::declared::declaration(kind)
        .ok_or_else(|| format!("{kind} is not a declared kind"))?;
    let (entries, excluded) = declaration.pool_entries(obj).map_err(|e| e.to_string())?;
    let declared = Addresses::of(&entries);
    let allocatable = declared.difference(&excluded);
    let pick = |a: &Addresses| {
        [Family::V4, Family::V6]
            .into_iter()
            .find(|f| !of(a, *f).is_empty())
    };
    let family = pick(&allocatable).or_else(|| pick(&declared));
    let main = family.unwrap_or(Family::V4);
    let other = match main {
        Family::V4 => Family::V6,
        Family::V6 => Family::V4,
    };
    let meta = Meta::read(obj);
    let mut proj = projection(
        kind,
        &meta,
        family,
        of(&allocatable, main).clone(),
        None,
        None,
    );
    let second = of(&allocatable, other);
    if !second.is_empty() {
        proj.other_family = Some(Box::new(second.clone()));
    }
    Ok(PoolReading {
        proj,
        declared: of(&declared, main).clone(),
        excluded: of(&excluded, main).clone(),
        subnet: None,
        entries: pool_entries(obj, entries),
        declared_path: paths::SPEC,
        errors: Vec::new(),
        warnings: Vec::new(),
    })
}

fn of(a: &Addresses, family: Family) -> &crate::address::AddrSet {
    match family {
        Family::V4 => &a.v4,
        Family::V6 => &a.v6,
    }
}

/// The entries as the reading keeps them, so a finding (P10) can sit on one. An expression's
/// result has no field path; each entry is placed at the first string of the object (outside
/// `metadata`) that reads exactly as it does, which is where it came from when the expression
/// picks fields (`object.spec.subnets.map(s, s.cidr)` → `spec.subnets[1].cidr`). An entry the
/// expression built (`x + '/32'`, a `split`) sits at `spec`, or at the object without one.
fn pool_entries(obj: &Value, entries: Vec<(String, Entry)>) -> Vec<PoolEntry> {
    let mut wanted: HashMap<&str, Option<String>> =
        entries.iter().map(|(t, _)| (t.as_str(), None)).collect();
    if let Value::Object(top) = obj {
        for (key, v) in top.iter().filter(|(k, _)| k.as_str() != "metadata") {
            locate(v, key.clone(), &mut wanted);
        }
    }
    let fallback = if obj.get("spec").is_some() {
        paths::SPEC.as_str()
    } else {
        ""
    };
    let paths: HashMap<String, String> = wanted
        .into_iter()
        .map(|(t, p)| (t.to_owned(), p.unwrap_or_else(|| fallback.to_owned())))
        .collect();
    entries
        .into_iter()
        .map(|(text, entry)| PoolEntry {
            path: paths.get(&text).cloned().unwrap_or_default(),
            set: entry.to_set(),
            text,
        })
        .collect()
}

/// Records `path` for each wanted text not placed yet that `v` (or a string under it) reads as.
/// Iterative: the object's depth is bounded by the declared limits, but the stack need not be.
fn locate(v: &Value, path: String, wanted: &mut HashMap<&str, Option<String>>) {
    let mut stack = vec![(v, path)];
    // Children are pushed in reverse, so the walk meets them in document order.
    while let Some((v, path)) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Some(slot @ None) = wanted.get_mut(s.as_str()) {
                    *slot = Some(path);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{path}[{i}]")));
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter().rev() {
                    stack.push((item, format!("{path}.{k}")));
                }
            }
            _ => {}
        }
    }
}
