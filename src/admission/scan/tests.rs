//! `scan` is held to serde's reader: on every body below, captured, written by hand or made up
//! by proptest, the envelope (or the 400) is the same whichever reader reads it.

use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::super::envelope::{decode, decode_with_serde, Envelope, Refused};
use super::*;
use crate::kinds::Kind;
use crate::model::capi::read_address;
use crate::model::object::ReviewObject;
use crate::model::paths::meta;
use crate::model::{read, record_key};
use crate::rules::conditions;

fn render(r: Result<Envelope<'_>, Refused>) -> String {
    match r {
        Ok(e) => format!("{e:?}"),
        Err(refused) => format!("refused: {}", refused.message()),
    }
}

/// Both readers' answers for `body`, and whether `scan` read it. A first reading's trees are
/// recycled as a review's are, so the reading compared is built from the strings they left.
/// Where `scan` let the object stand in for the old one, serde's old object must be that object
/// but for labels its kind does not read on UPDATE; it is then compared as serde's.
fn alike(body: &[u8]) -> bool {
    if let Ok(e) = decode(body) {
        e.object
            .and_then(ReviewObject::into_tree)
            .into_iter()
            .chain(e.old_object)
            .for_each(recycle);
    }
    let theirs = decode_with_serde(body);
    let ours = match (decode(body).map(settled), &theirs) {
        (Ok(mut ours), Ok(theirs)) if ours.old_like_object => {
            let old = theirs.old_object.as_ref().expect("an old object");
            let object = ours.object.as_ref().expect("an object").as_obj().value();
            let labels = |v: &Value| v.pointer("/metadata/labels").cloned();
            let kind = Kind::from_group_kind(&ours.group, &ours.kind);
            if kind.is_none_or(conditions::reads_labels_on_update) {
                assert_eq!(
                    labels(object),
                    labels(old),
                    "{}",
                    String::from_utf8_lossy(body)
                );
            }
            let unlabelled = |v: &Value| {
                let mut v = v.clone();
                if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("labels");
                }
                v
            };
            assert_eq!(
                unlabelled(object),
                unlabelled(old),
                "{}",
                String::from_utf8_lossy(body)
            );
            ours.old_like_object = false;
            ours.old_object = Some(old.clone());
            Ok(ours)
        }
        (ours, _) => ours,
    };
    assert_eq!(
        render(ours),
        render(theirs),
        "{}",
        String::from_utf8_lossy(body)
    );
    std::str::from_utf8(body).is_ok_and(|t| top(t).is_some())
}

/// The envelope with an object kept as text (an address) as its tree, once what was read from
/// the text is held to what the tree's reader reads: the fields the rules judge, the key the
/// X2 record takes, the name the answer shows.
fn settled(mut e: Envelope<'_>) -> Envelope<'_> {
    if let Some(ReviewObject::Text(_)) = &e.object {
        let obj = e.object.as_ref().unwrap().as_obj();
        let (text, tree) = (obj.address_text().unwrap(), obj.value());
        assert_eq!(
            format!("{:?}", text.reading()),
            format!("{:?}", read_address(tree)),
            "{tree}"
        );
        assert_eq!(text.key(), record_key(Kind::IPAddress, tree), "{tree}");
        assert_eq!(
            text.namespace,
            read::get(tree, meta::NAMESPACE).and_then(Value::as_str)
        );
        assert_eq!(
            obj.name(),
            tree.pointer("/metadata/name").and_then(Value::as_str)
        );
        e.object = e.object.map(|o| ReviewObject::Tree(o.into_value()));
    }
    e
}

fn review(object: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u-1", "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "kind": "IPAddress"},
            "resource": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "resource": "ipaddresses"},
            "name": "a", "namespace": "ns", "operation": "UPDATE", "dryRun": false,
            "userInfo": {"username": "admin", "uid": "x", "groups": ["system:masters", 7, null]},
            "object": object.clone(), "oldObject": object,
            "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
        }
    })
}

fn address() -> Value {
    json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
        "metadata": {"name": "a", "namespace": "ns", "uid": "1", "generation": 3,
                     "labels": {"env": "test"}, "annotations": {"note": "x"},
                     "creationTimestamp": "2026-11-21T22:40:50Z",
                     "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {".": {}}}}]},
        "spec": {"address": "10.0.0.5", "prefix": 24, "gateway": "10.0.0.1",
                 "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"},
                 "claimRef": {"name": "c"}},
        "status": {}
    })
}

#[test]
fn captured_reviews_are_read_alike_and_by_scan() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews/v1.36");
    let entries = std::fs::read_dir(&dir).unwrap();
    let mut read = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let body = std::fs::read(&path).unwrap();
            assert!(alike(&body), "scan gave up on {}", path.display());
            read += 1;
        }
    }
    assert!(read > 40, "only {read} captures in {}", dir.display());
}

#[test]
fn the_projects_own_review_fixtures_are_read_alike() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut bodies, mut read) = (0, 0);
    for dir in ["tests/fixtures", "examples/reviews"] {
        let mut todo = vec![root.join(dir)];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    todo.push(path);
                } else if path.extension().is_some_and(|e| e == "json") {
                    let body = std::fs::read(&path).unwrap();
                    bodies += 1;
                    if alike(&body) {
                        read += 1;
                    }
                }
            }
        }
    }
    // Some are not reviews at all (check fixtures, expected answers): serde's reader refuses
    // those, and so does `scan` by giving up.
    assert!(
        bodies > 100 && read > bodies / 2,
        "{read} of {bodies} read by scan"
    );
}

#[test]
fn a_review_with_escapes_and_every_json_type_is_read_alike_and_by_scan() {
    let mut object = address();
    object["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": "{\"spec\":{\"address\":\"10.0.0.5\"}}\n",
        "quote\"in key": "tab\there, slash \\ / and é, 😀, \u{1}",
    });
    object["spec"]["list"] = json!([true, false, null, -7, 0, 123456789012345678u64, [], {}, ""]);
    let body = serde_json::to_vec(&review(object)).unwrap();
    assert!(alike(&body));
    // Escapes serde_json does not write: \/, \u of a plain letter, a surrogate pair, in keys too.
    let text = String::from_utf8(body).unwrap();
    let written = text
        .replacen("\"address\"", "\"addr\\u0065ss\"", 1)
        .replacen("10.0.0.5", "10.0.0.\\u0035", 1)
        .replacen("\"note\"", "\"n\\/ote \\ud83d\\ude00\"", 1);
    assert!(alike(written.as_bytes()));
    // Whitespace wherever JSON allows it.
    let value: Value = serde_json::from_str(&text).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    assert!(alike(pretty.as_bytes()));
    let spaced = pretty.replace("\n", " \r\n\t").replace(": ", "\t:\n");
    assert!(alike(spaced.as_bytes()));
}

/// `requestKind` and `requestResource` written as `kind` and `resource` are compared with them,
/// in either order; what differs, or is broken after the same text, is read as before.
#[test]
fn repeated_kinds_and_resources_are_read_alike() {
    let kind = r#"{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddress"}"#;
    let resource =
        r#"{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","resource":"ipaddresses"}"#;
    let object = serde_json::to_string(&address()).unwrap();
    let body = |request_kind: &str, first: &str, second: &str, order_ab: bool| {
        let (a, b) = if order_ab {
            (("resource", first), ("requestResource", second))
        } else {
            (("requestResource", first), ("resource", second))
        };
        format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u-1","kind":{kind},"{}":{},"requestKind":{request_kind},"{}":{},"name":"a","namespace":"ns","operation":"CREATE","object":{object}}}}}"#,
            a.0, a.1, b.0, b.1
        )
    };
    let other_kind = kind.replace("v1beta2", "v1alpha1");
    let other_resource = resource.replace("v1beta2", "v1alpha1");
    for order_ab in [true, false] {
        for (request_kind, first, second, read_by_scan) in [
            (kind, resource, resource, true),
            (other_kind.as_str(), resource, other_resource.as_str(), true),
            (&format!("{kind}x"), resource, resource, false),
            (kind, resource, &format!("{resource},"), false),
            (kind, resource, &resource[..resource.len() - 1], false),
            (&kind.replace('}', ",}"), resource, resource, false),
            (" 7", resource, "null", true),
        ] {
            let text = body(request_kind, first, second, order_ab);
            assert_eq!(alike(text.as_bytes()), read_by_scan, "{text}");
        }
    }
}

#[test]
fn duplicate_keys_keep_the_last_at_every_level() {
    let text = serde_json::to_string(&review(address())).unwrap();
    for (from, to) in [
        ("\"uid\":\"u-1\"", "\"uid\":\"u-0\",\"uid\":\"u-1\""),
        ("\"request\":{", "\"request\":{\"uid\":7},\"request\":{"),
        ("\"name\":\"a\"", "\"name\":\"b\",\"name\":\"a\""),
        ("\"spec\":{", "\"spec\":{\"prefix\":1,\"prefix\":{},"),
        ("\"labels\":{", "\"labels\":{\"env\":\"x\","),
        (
            "\"userInfo\":{",
            "\"userInfo\":{\"username\":\"x\"},\"userInfo\":{",
        ),
    ] {
        let body = text.replacen(from, to, 1);
        assert_ne!(body, text, "{from}");
        assert!(alike(body.as_bytes()), "{to}");
    }
}

#[test]
fn what_scan_gives_up_on_gets_serde_readers_answer() {
    let text = serde_json::to_string(&review(address())).unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let nested = format!("{}1{}", "[".repeat(70), "]".repeat(70));
    for (from, to) in [
        ("\"prefix\":24", "\"prefix\":24.0"),
        ("\"prefix\":24", "\"prefix\":2e1"),
        ("\"prefix\":24", "\"prefix\":1e400"),
        ("\"prefix\":24", "\"prefix\":-0"),
        ("\"prefix\":24", "\"prefix\":024"),
        ("\"prefix\":24", "\"prefix\":12345678901234567890123"),
        ("\"prefix\":24", "\"prefix\":-"),
        ("\"generation\":3", "\"generation\":3.5"),
        ("\"generation\":3", "\"generation\":1e400"),
        ("\"uid\":\"u-1\"", "\"uid\":1e400"),
        ("\"kind\":\"UpdateOptions\"", "\"kind\":1.5"),
        ("\"uid\":\"u-1\"", "\"uid\":\"\\ud83d\""),
        ("\"uid\":\"u-1\"", "\"uid\":\"\\ude00\""),
        ("\"uid\":\"u-1\"", "\"uid\":\"\\x\""),
        ("\"uid\":\"u-1\"", "\"uid\":\"a\u{1}b\""),
        ("\"uid\":\"u-1\"", "\"uid\":\"\\u00zz\""),
        ("\"env\":\"test\"", "\"env\":\"te\\u0000st\""),
        ("\"spec\":{", &format!("\"deep\":{deep},\"spec\":{{")),
        ("\"spec\":{", &format!("\"nested\":{nested},\"spec\":{{")),
        ("\"managedFields\":[", "\"managedFields\":[1,"),
        ("\"managedFields\":[", "\"managedFields\":[tru,"),
        ("\"groups\":[", "\"groups\":[nul,"),
        ("\"request\":{", "\"request\":null,\"r\":{"),
        ("\"request\":{", "\"request\":[],\"r\":{"),
        ("\"kind\":{", "\"kind\":\"IPAddress\",\"k\":{"),
        ("\"userInfo\":{", "\"userInfo\":7,\"u\":{"),
        ("\"groups\":[", "\"groups\":\"all\",\"g\":["),
        ("\"dryRun\":false", "\"dryRun\":\"no\""),
        ("\"object\":{", "\"object\":[1,\"a\",{}],\"o\":{"),
        ("\"metadata\":{", "\"metadata\":7,\"m\":{"),
        ("{\"apiVersion\"", "{,\"apiVersion\""),
        ("\"status\":{}", "\"status\":{},"),
    ] {
        let body = text.replacen(from, to, 1);
        assert_ne!(body, text, "{from}");
        alike(body.as_bytes());
    }
    for body in [
        format!("{text} x"),
        format!("{text}}}"),
        format!("[{text}]"),
        text[..text.len() - 1].to_string(),
        "\u{feff}{}".to_string(),
        String::new(),
        "null".into(),
        "\"review\"".into(),
    ] {
        alike(body.as_bytes());
    }
    let mut latin1 = text.into_bytes();
    let at = latin1.len() / 2;
    latin1.insert(at, 0xe9);
    alike(&latin1);
}

#[test]
fn a_plain_run_stops_at_the_first_quote_backslash_or_control_character_wherever_it_is() {
    for fill in ["a", "\u{e9}", "\u{7f}", "~"] {
        for before in 0..20 {
            for stop in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
                for after in ["", "\"", "abcdefghijklmnop"] {
                    let text = format!("{}{stop}{after}", fill.repeat(before));
                    let mut s = Scan::new(&text);
                    s.plain_run();
                    assert_eq!(s.i, fill.len() * before, "{text:?}");
                }
            }
        }
        let text = fill.repeat(21);
        let mut s = Scan::new(&text);
        s.plain_run();
        assert_eq!(s.i, text.len());
    }
}

#[test]
fn an_object_sent_as_raw_json_is_read_alike() {
    let text = serde_json::to_string(&address()).unwrap();
    let raw = serde_json::value::RawValue::from_string(text.clone()).unwrap();
    let fast = object(raw.get()).expect("scan reads a plain object");
    assert_eq!(
        Ok(fast),
        super::super::object::decode(&raw).map_err(|e| e.to_string())
    );
    let mut plain = address();
    for key in crate::model::UNREAD_METADATA {
        if let Some(meta) = plain["metadata"].as_object_mut() {
            meta.remove(*key);
        }
    }
    assert_eq!(object(&text), Some(plain));
    assert_eq!(object(&text.replacen("24", "1e400", 1)), None);
}

/// Any JSON value, with strings that need escaping and numbers of every form.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\/a\u{e9}\u{1F600}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"\\\\]{0,4}|metadata|managedFields|uid", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn made_up_values_anywhere_in_a_review_are_read_alike(
        v in any_json(),
        at in 0usize..10,
    ) {
        let mut r = review(address());
        match at {
            0 => r["request"]["object"]["spec"]["extra"] = v,
            1 => r["request"]["object"]["metadata"]["managedFields"] = v,
            2 => r["request"]["uid"] = v,
            3 => r["request"]["userInfo"]["groups"] = v,
            4 => r["request"]["object"] = v,
            // The old object beside an object it may or may not be like.
            5 => r["request"]["oldObject"]["metadata"]["labels"] = v,
            6 => r["request"]["oldObject"]["metadata"]["annotations"] = v,
            7 => r["request"]["oldObject"]["metadata"] = v,
            8 => {
                r["request"]["object"]["spec"]["extra"] = v.clone();
                r["request"]["oldObject"]["spec"]["extra"] = v;
            }
            _ => r["extra"] = v,
        }
        alike(&serde_json::to_vec(&r).unwrap());
    }

    #[test]
    fn a_review_broken_anywhere_is_answered_alike(
        cut in 0usize..2000,
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let mut body = serde_json::to_vec(&review(address())).unwrap();
        let at = cut % body.len();
        match how {
            0 => body[at] = byte,
            1 => body.insert(at, byte),
            _ => body.truncate(at),
        }
        alike(&body);
    }
}

/// An UPDATE whose old object is the object but for `change`, of `kind`: whether `scan` let the
/// object stand in for it (the old tree not built).
fn stands_in(kind: &str, change: impl Fn(&mut Value)) -> bool {
    let mut r = review(address());
    r["request"]["kind"]["kind"] = json!(kind);
    change(&mut r["request"]["oldObject"]);
    let body = serde_json::to_vec(&r).unwrap();
    assert!(alike(&body));
    decode(&body).ok().expect("read").old_like_object
}

#[test]
fn the_object_stands_in_for_an_old_one_that_differs_only_in_labels_no_rule_reads() {
    let meta = |key: &'static str, v: Value| move |o: &mut Value| o["metadata"][key] = v.clone();
    // What no rule of an IPAddress reads on UPDATE: its labels, and what the tree leaves out.
    assert!(stands_in("IPAddress", |_| {}));
    assert!(stands_in(
        "IPAddress",
        meta("labels", json!({"env": "prod"}))
    ));
    assert!(stands_in("IPAddress", |o| {
        o["metadata"].as_object_mut().unwrap().remove("labels");
    }));
    assert!(stands_in("IPAddress", meta("managedFields", json!([]))));
    assert!(stands_in("IPAddress", meta("finalizers", json!(["f"]))));
    // Not kept either, but a changed generation says the spec changed: not compared further.
    assert!(!stands_in("IPAddress", meta("generation", json!(2))));
    // Anything the tree keeps: the resourceVersion an update replaces is X2's basis.
    assert!(!stands_in("IPAddress", meta("resourceVersion", json!("9"))));
    assert!(!stands_in(
        "IPAddress",
        meta("annotations", json!({"note": "y"}))
    ));
    assert!(!stands_in(
        "IPAddress",
        meta("deletionTimestamp", json!("2026-11-22T00:00:00Z"))
    ));
    assert!(!stands_in("IPAddress", meta("name", json!("b"))));
    assert!(!stands_in("IPAddress", |o| o["spec"]["prefix"] = json!(25)));
    assert!(!stands_in("IPAddress", |o| o["spec"]["extra"] = json!(null)));
    assert!(!stands_in("IPAddress", |o| o["status"] = json!({"x": 1})));
    assert!(!stands_in("IPAddress", |o| {
        o.as_object_mut().unwrap().remove("status");
    }));
    assert!(!stands_in("IPAddress", |o| o["metadata"] = json!("not a map")));
    // A claim's rules read its cluster-name label: its labels must be the same too.
    assert!(stands_in("IPAddressClaim", |_| {}));
    assert!(!stands_in(
        "IPAddressClaim",
        meta("labels", json!({"env": "prod"}))
    ));
    assert!(!stands_in(
        "NotOurs",
        meta("labels", json!({"env": "prod"}))
    ));
}

#[test]
fn an_old_object_with_a_repeated_key_is_built() {
    let text = serde_json::to_string(&review(address())).unwrap();
    for (key, value) in [("spec", r#"{"prefix":1}"#), ("kind", r#""IPAddress""#)] {
        let body = text.replacen(
            r#""oldObject":{"#,
            &format!(r#""oldObject":{{"{key}":{value},"#),
            1,
        );
        assert!(alike(body.as_bytes()), "{key}");
        let env = decode(body.as_bytes()).ok().expect("read");
        assert!(!env.old_like_object && env.old_object.is_some(), "{key}");
    }
}

#[test]
fn an_old_object_compared_with_another_object_or_kind_is_left_to_serde() {
    let text = serde_json::to_string(&review(address())).unwrap();
    let (object, old) = (
        text.find("\"object\"").unwrap(),
        text.find("\"oldObject\"").unwrap(),
    );
    assert!(object < old);
    for extra in [
        r#""object":{"kind":"IPAddress"}"#,
        r#""kind":{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddressClaim"}"#,
    ] {
        let end = text.rfind('}').unwrap() - 1;
        let body = format!("{},{extra}{}", &text[..end], &text[end..]);
        assert!(!alike(body.as_bytes()), "{extra}");
        let env = decode(body.as_bytes()).ok().expect("read");
        assert!(!env.old_like_object && env.old_object.is_some(), "{extra}");
    }
}

/// A CREATE of `object`, written in the API server's key order (`operation` before `object`).
fn create_body(object: &Value) -> Vec<u8> {
    format!(
        r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u-1","kind":{{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddress"}},"name":"a","namespace":"ns","operation":"CREATE","object":{object},"oldObject":null,"dryRun":false}}}}"#
    )
    .into_bytes()
}

/// Whether `body`'s object was kept as text (`address_text`), and not built as a tree.
fn kept_as_text(body: &[u8]) -> bool {
    let e = decode(body).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(body)));
    matches!(e.object, Some(ReviewObject::Text(_)))
}

#[test]
fn an_address_create_is_read_from_its_text_in_either_key_order() {
    let body = create_body(&address());
    assert!(alike(&body) && kept_as_text(&body));
    // serde_json's own order (keys sorted: `object` before `operation`).
    let mut sorted = review(address());
    sorted["request"]["operation"] = json!("CREATE");
    sorted["request"]["oldObject"] = Value::Null;
    let body = serde_json::to_vec(&sorted).unwrap();
    assert!(alike(&body) && kept_as_text(&body));
    // An UPDATE in that order: the object is read again as a tree, noted, for the old one.
    let body = serde_json::to_vec(&review(address())).unwrap();
    assert!(alike(&body) && !kept_as_text(&body));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews/v1.36");
    let body = std::fs::read(dir.join("ipaddress-create.json")).unwrap();
    assert!(alike(&body) && kept_as_text(&body));
}

#[test]
fn an_address_field_of_another_type_escaped_or_repeated_is_read_as_a_tree() {
    let objects = [
        r#"{"metadata":{"name":7},"spec":{}}"#,
        r#"{"metadata":{"name":"a","name":"b"},"spec":{}}"#,
        r#"{"metadata":{"namespace":null},"spec":{}}"#,
        r#"{"metadata":[],"spec":{}}"#,
        r#"{"metadata":{},"metadata":{},"spec":{}}"#,
        r#"{"spec":{"address":"10.0.0.\u0035"}}"#,
        r#"{"spec":{"address":null}}"#,
        r#"{"spec":{"prefix":"24"}}"#,
        r#"{"spec":{"prefix":24,"prefix":25}}"#,
        r#"{"spec":{"gateway":["10.0.0.1"]}}"#,
        r#"{"spec":{"claimRef":"c"}}"#,
        r#"{"spec":{"claimRef":{"name":"c"},"claimRef":{}}}"#,
        r#"{"spec":{"poolRef":{"name":"p","name":"q"}}}"#,
        r#"{"spec":{"poolRef":{"kind":true}}}"#,
        r#"{"spec":{"poolRef":{"namespace":"x","namespace":"y"}}}"#,
        r#"{"spec":null}"#,
        r#"{"spec":{},"spec":{}}"#,
    ];
    for object in objects {
        let body = format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u-1","kind":{{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddress"}},"name":"a","operation":"CREATE","object":{object}}}}}"#
        );
        assert!(alike(body.as_bytes()), "{object}");
        assert!(!kept_as_text(body.as_bytes()), "{object}");
    }
    // What it does read: any other key, a namespace of any type, an absent field.
    for object in [
        r#"{"metadata":{"labels":{"a":"b"},"uid":7},"spec":{"x":[1,{"y":null}]},"status":{}}"#,
        r#"{"spec":{"claimRef":{"namespace":null},"poolRef":{"namespace":[]}}}"#,
        r#"{"spec":{"prefix":-3,"address":"::1"}}"#,
        r#"{}"#,
    ] {
        let body = format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u-1","kind":{{"group":"ipam.cluster.x-k8s.io","version":"v1beta2","kind":"IPAddress"}},"name":"a","operation":"CREATE","object":{object}}}}}"#
        );
        assert!(alike(body.as_bytes()), "{object}");
        assert!(kept_as_text(body.as_bytes()), "{object}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever stands where the address's reader reads, the fields it reads from the text are
    /// the tree reader's (`settled`), or it leaves the object to the tree.
    #[test]
    fn made_up_values_where_an_address_is_read_are_read_alike(
        v in any_json(),
        at in 0usize..14,
    ) {
        let mut o = address();
        match at {
            0 => o["spec"]["address"] = v,
            1 => o["spec"]["prefix"] = v,
            2 => o["spec"]["gateway"] = v,
            3 => o["spec"]["claimRef"] = v,
            4 => o["spec"]["claimRef"]["name"] = v,
            5 => o["spec"]["claimRef"]["namespace"] = v,
            6 => o["spec"]["poolRef"] = v,
            7 => o["spec"]["poolRef"]["apiGroup"] = v,
            8 => o["spec"]["poolRef"]["kind"] = v,
            9 => o["spec"]["poolRef"]["name"] = v,
            10 => o["spec"] = v,
            11 => o["metadata"]["name"] = v,
            12 => o["metadata"]["namespace"] = v,
            _ => o["metadata"] = v,
        }
        alike(&create_body(&o));
    }
}
