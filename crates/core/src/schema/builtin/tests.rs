use std::path::{Path, PathBuf};

use serde_json::Value;

use super::super::{ListType, Node, Schemas};
use super::*;

/// Every node of a schema as one line `path: facts`, in a fixed order: two schemas agree when
/// their listings do, and a difference reads as the field and the fact that differ.
fn listing(n: &Node, path: &str, out: &mut Vec<String>) {
    // Destructured in full: a field added to Node that is not listed here does not compile.
    let Node {
        ty,
        int_or_string,
        preserve_unknown,
        embedded_resource,
        properties,
        additional,
        additional_any,
        items,
        required,
        enumeration,
        pattern,
        format,
        minimum,
        maximum,
        exclusive_minimum,
        exclusive_maximum,
        min_length,
        max_length,
        min_items,
        max_items,
        min_properties,
        max_properties,
        list_type,
        map_type,
        nullable,
        default,
    } = n;
    let mut facts = vec![format!("type={}", ty.map_or("-", |t| t.name()))];
    let mut flag = |on: bool, name: &str| {
        if on {
            facts.push(name.to_string());
        }
    };
    flag(*int_or_string, "int-or-string");
    flag(*preserve_unknown, "preserve");
    flag(*embedded_resource, "embedded");
    flag(*additional_any, "additionalProperties=true");
    flag(*exclusive_minimum, "exclusiveMinimum");
    flag(*exclusive_maximum, "exclusiveMaximum");
    flag(*nullable, "nullable");
    if !required.is_empty() {
        facts.push(format!("required={required:?}"));
    }
    let mut some = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            facts.push(format!("{name}={v}"));
        }
    };
    some(
        "enum",
        enumeration
            .as_ref()
            .map(|e| Value::from(e.clone()).to_string()),
    );
    some("pattern", pattern.as_ref().map(|(t, _)| t.clone()));
    some("format", format.clone());
    some("minimum", minimum.map(|v| v.to_string()));
    some("maximum", maximum.map(|v| v.to_string()));
    some("minLength", min_length.map(|v| v.to_string()));
    some("maxLength", max_length.map(|v| v.to_string()));
    some("minItems", min_items.map(|v| v.to_string()));
    some("maxItems", max_items.map(|v| v.to_string()));
    some("minProperties", min_properties.map(|v| v.to_string()));
    some("maxProperties", max_properties.map(|v| v.to_string()));
    some(
        "list",
        list_type.as_ref().map(|l| match l {
            ListType::Atomic => "atomic".to_string(),
            ListType::Set => "set".to_string(),
            ListType::Map(keys) => format!("map{keys:?}"),
        }),
    );
    some("map", map_type.clone());
    some("default", default.as_ref().map(Value::to_string));
    out.push(format!("{path}: {}", facts.join(" ")));
    for (k, child) in properties {
        listing(child, &format!("{path}.{k}"), out);
    }
    if let Some(items) = items {
        listing(items, &format!("{path}[]"), out);
    }
    if let Some(a) = additional {
        listing(a, &format!("{path}{{}}"), out);
    }
}

fn listing_of(n: &Node) -> Vec<String> {
    let mut out = Vec::new();
    listing(n, "", &mut out);
    out
}

/// Keywords of a CRD schema that `Node::compile` reads, or that bear on nothing the API server
/// validates (documentation). Anything else in a real CRD would be lost by the compile and by
/// the description alike, so the comparison could not see it: the test fails on it instead.
const UNDERSTOOD: &[&str] = &[
    "type",
    "properties",
    "additionalProperties",
    "items",
    "required",
    "enum",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "default",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "description",
    "title",
    "example",
    "externalDocs",
];

fn unread_keywords(s: &Value, path: &str, out: &mut Vec<String>) {
    let Some(o) = s.as_object() else { return };
    for (k, v) in o {
        match k.as_str() {
            // What controller-gen writes beside x-kubernetes-int-or-string: the int-or-string
            // check is that union already.
            "anyOf"
                if o.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
                    && *v == serde_json::json!([{"type": "integer"}, {"type": "string"}]) => {}
            "properties" => {
                for (name, child) in v.as_object().into_iter().flatten() {
                    unread_keywords(child, &format!("{path}.{name}"), out);
                }
            }
            "items" => unread_keywords(v, &format!("{path}[]"), out),
            "additionalProperties" => unread_keywords(v, &format!("{path}{{}}"), out),
            k if UNDERSTOOD.contains(&k) => {}
            k => out.push(format!("{path}: {k}")),
        }
    }
}

fn fixture_crds() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/crds");
    dir.is_dir().then_some(dir)
}

/// Kinds ipam-guard judges without describing them: Cluster API's `Cluster` (topology,
/// variables, CEL rules) and Metal3's `Metal3DataTemplate` are their providers' own webhooks'
/// to validate, and ipam-guard reads only a Cluster's endpoint and networks and a template's
/// pool references. `check` validates these against a CRD only when `--crd-dir` or
/// the cluster supplies one.
const NOT_DESCRIBED: &[crate::kinds::Kind] = &[
    crate::kinds::Kind::Cluster,
    crate::kinds::Kind::Metal3DataTemplate,
    crate::kinds::Kind::VSphereCluster,
    crate::kinds::Kind::Metal3Cluster,
];

#[test]
fn the_description_covers_every_kind_and_version_ipam_guard_judges() {
    let s = Schemas::builtin();
    for info in crate::kinds::KINDS {
        if NOT_DESCRIBED.contains(&info.kind) {
            assert!(matches!(
                s.lookup(info.group, info.name, info.versions[0]),
                crate::schema::Lookup::UnknownGroup | crate::schema::Lookup::UnknownKind { .. }
            ));
            continue;
        }
        for v in info.versions {
            assert!(
                matches!(
                    s.lookup(info.group, info.name, v),
                    crate::schema::Lookup::Found(Some(_))
                ),
                "{} {} {v}",
                info.group,
                info.name
            );
        }
    }
}

/// What differs between one real CRD and the description of its kind (nothing when the kind is
/// not described); each version compared is added to `compared`.
fn compare(crd: &Value, described: &[Described], compared: &mut Vec<String>) -> Vec<String> {
    let mut failures = Vec::new();
    let group = crd["spec"]["group"].as_str().unwrap();
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
    let ours: Vec<&Described> = described
        .iter()
        .filter(|d| d.group == group && d.kind == kind)
        .collect();
    if ours.is_empty() {
        eprintln!("not described (ipam-guard does not judge it): {group} {kind}");
        return Vec::new();
    }
    let mut theirs = Schemas::default();
    theirs.add_crd(crd).unwrap();
    let served = &theirs.kinds[&(group.to_string(), kind.to_string())];
    let mut ours_versions: Vec<&str> = ours
        .iter()
        .flat_map(|d| d.versions.iter().map(String::as_str))
        .collect();
    ours_versions.sort();
    let served_names: Vec<&str> = served.keys().map(String::as_str).collect();
    if ours_versions != served_names {
        failures.push(format!(
            "{kind}: served versions {served_names:?}, described {ours_versions:?}"
        ));
    }
    for v in crd["spec"]["versions"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let mut unread = Vec::new();
        unread_keywords(&v["schema"]["openAPIV3Schema"], "", &mut unread);
        for u in unread {
            failures.push(format!(
                "{kind} {name}: the CRD uses a keyword nothing here reads, at {u}"
            ));
        }
    }
    for (version, schema) in served {
        let Some(d) = ours.iter().find(|d| d.versions.contains(version)) else {
            continue;
        };
        let real = listing_of(schema.as_ref().expect("these CRDs declare schemas"));
        let mine = listing_of(&d.root);
        for line in real.iter().filter(|l| !mine.contains(l)) {
            failures.push(format!("{kind} {version}: the CRD has   {line}"));
        }
        for line in mine.iter().filter(|l| !real.contains(l)) {
            failures.push(format!("{kind} {version}: described as  {line}"));
        }
        compared.push(format!("{group} {kind} {version} ({} nodes)", real.len()));
    }
    failures
}

#[test]
fn the_description_agrees_field_by_field_with_the_real_crds() {
    let Some(dir) = fixture_crds() else {
        eprintln!(
            "skipped: ../shared/fixtures/crds is absent; the built-in description is not compared with the providers' CRDs"
        );
        return;
    };
    let described = parse(TEXT).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut compared = Vec::new();
    let mut failures = Vec::new();
    for file in &files {
        let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        failures.extend(compare(&crd, &described, &mut compared));
    }
    for d in &described {
        for v in &d.versions {
            let name = format!("{} {} {v} (", d.group, d.kind);
            if !compared.iter().any(|c| c.starts_with(&name)) {
                failures.push(format!(
                    "{} {} {v}: described, but no CRD in {} to compare with",
                    d.group,
                    d.kind,
                    dir.display()
                ));
            }
        }
    }
    eprintln!("compared: {}", compared.join(", "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_long_patterns_are_the_crds_own_text() {
    // The IP pattern Metal3 writes, checked here too so its composition from named parts is
    // proven without the fixtures: a sample of what it must accept and refuse.
    let ip = &parse(TEXT).unwrap();
    let pool = ip
        .iter()
        .find(|d| d.group == "ipam.metal3.io" && d.kind == "IPPool")
        .unwrap();
    let (text, re) = pool.root.properties["spec"].properties["gateway"]
        .pattern
        .clone()
        .unwrap();
    assert!(text.starts_with("((^((([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.){3}"));
    for ok in [
        "10.0.0.1",
        "255.255.255.255",
        "::",
        "fd00::1",
        "1:2:3:4:5:6:7:8",
        "0.0.0.0",
    ] {
        assert!(re.is_match(ok), "{ok}");
    }
    for bad in [
        "256.0.0.1",
        "10.0.0",
        "10.0.0.1/24",
        "fd00::1::2",
        "01.2.3.4x",
        "${GATEWAY}",
    ] {
        assert!(!re.is_match(bad), "{bad}");
    }
}

#[test]
fn mistakes_in_the_notation_are_named_with_their_line() {
    let cases: &[(&str, &str)] = &[
        ("kind g K v1\n   spec object\n", "line 2: indented 3 spaces"),
        (
            "kind g K v1\n  spec object\n      x string\n",
            "line 3: indented 6 spaces",
        ),
        (
            "kind g K v1\n  spec object colour=red\n",
            "line 2: unknown attribute \"colour=red\"",
        ),
        ("kind g K v1\n  spec @Nope\n", "line 2: no shape named Nope"),
        (
            "kind g K v1\n  spec object\nshape S string\n",
            "line 3: shape S is never used",
        ),
        (
            "pattern A = x%B\nkind g K v1\n  a string re=A\n",
            "line 1: an unpaired %",
        ),
        (
            "pattern A = x%A%\nkind g K v1\n",
            "line 1: pattern A refers to itself",
        ),
        (
            "kind g K v1\n  a string re=NONE\n",
            "line 2: no pattern named NONE",
        ),
        (
            "kind g K v1\n  a strung\n",
            "line 2: unknown type \"strung\"",
        ),
        (
            "kind g K v1\n  a string\n  a string\n",
            "line 3: a is listed twice",
        ),
        (
            "kind g K v1\n  a string\n    b string\n",
            "line 3: fields belong under an object",
        ),
        (
            "kind g K v1\n  a integer enum=x|y\n",
            "line 2: enum=x|y: \"x\" is not a number",
        ),
        (
            "kind g K v1\n  a string len=1-3\n",
            "line 2: len=1-3: MIN..MAX expected",
        ),
        (
            "kind g K\n",
            "line 1: `kind GROUP KIND VERSION,...` expected",
        ),
        ("  a string\n", "line 1: a field outside a kind or shape"),
        (
            "shape S @S\nkind g K v1\n  a @S\n",
            "shape S contains itself",
        ),
        ("widget\n", "line 1: `pattern`, `kind` or `shape` expected"),
    ];
    for (text, want) in cases {
        let got = parse(text).map(|d| d.len()).unwrap_err();
        assert!(got.contains(want), "{text:?}: {got}");
    }
}

#[test]
fn a_shape_with_attributes_of_its_own_and_a_composed_pattern() {
    let text = "pattern D = [0-9]\npattern TWO = ^%D%%D%$\nkind g K v1,v2\n  spec! @S props=1..\n\
                shape S object\n  n integer range=1..9 enum=1|2\n  s string re=TWO default=\"07\"\n  l array list=map(a,b)\n    [] object\n      a string\n";
    let d = parse(text).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].versions, ["v1", "v2"]);
    let spec = &d[0].root.properties["spec"];
    assert_eq!(d[0].root.required, ["spec"]);
    assert_eq!(spec.min_properties, Some(1));
    assert_eq!(
        spec.properties["n"].enumeration,
        Some(vec![Value::from(1), Value::from(2)])
    );
    assert_eq!(
        (spec.properties["n"].minimum, spec.properties["n"].maximum),
        (Some(1.0), Some(9.0))
    );
    let s = &spec.properties["s"];
    assert_eq!(s.pattern.as_ref().unwrap().0, "^[0-9][0-9]$");
    assert_eq!(s.default, Some(Value::from("07")));
    assert_eq!(
        spec.properties["l"].list_type,
        Some(ListType::Map(vec!["a".into(), "b".into()]))
    );
    assert!(spec.properties["l"].items.is_some());
}

#[test]
fn the_comparison_names_each_fact_that_differs() {
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Thing"}, "versions": [
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "required": ["size"],
                  "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                  "properties": {
                    "size": {"type": "integer", "maximum": 10, "description": "not compared"},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"}}}}}}},
            {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {
                "type": "object"}}}]}});
    let described = parse(
        "kind example.com Thing v1\n  spec object\n    size! integer range=..11\n    mode string enum=a|b\n",
    )
    .unwrap();
    let mut compared = Vec::new();
    let failures = compare(&crd, &described, &mut compared);
    assert_eq!(
        failures,
        [
            "Thing: served versions [\"v1\", \"v2\"], described [\"v1\"]",
            "Thing v1: the CRD uses a keyword nothing here reads, at .spec: x-kubernetes-validations",
            "Thing v1: the CRD has   .spec.mode: type=string enum=[\"a\",\"b\"] default=\"a\"",
            "Thing v1: the CRD has   .spec.size: type=integer maximum=10",
            "Thing v1: described as  .spec.mode: type=string enum=[\"a\",\"b\"]",
            "Thing v1: described as  .spec.size: type=integer maximum=11",
        ],
        "{failures:#?}"
    );
    assert_eq!(compared, ["example.com Thing v1 (4 nodes)"]);
}
