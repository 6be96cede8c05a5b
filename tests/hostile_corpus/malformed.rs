//! Malformed bodies: 1 MiB strings, deep nesting, duplicate keys and bytes that are not UTF-8 or
//! not JSON.

use super::*;

pub fn huge_strings(out: &mut Vec<Case>) {
    let cat = "1 MiB strings";
    let address = capture("ipaddress-create.json");
    let pool = capture("inclusterippool-create.json");
    let big = big_string();
    let mut uid = Case::new(
        cat,
        "1 MiB uid",
        body(&with(&address, &[("request.uid", Some(json!(big)))])),
        Expect::Baseline,
    )
    .from("ipaddress-create.json");
    uid.max_answer = Some((1 << 20) + 64 * 1024);
    out.push(uid);
    for (name, edits, expect) in [
        (
            "1 MiB request.name",
            vec![("request.name", Some(json!(big)))],
            Expect::Judged,
        ),
        (
            "1 MiB spec.address",
            vec![("request.object.spec.address", Some(json!(big)))],
            Expect::DeniedAt("spec.address".into()),
        ),
        (
            "1 MiB spec.gateway",
            vec![("request.object.spec.gateway", Some(json!(big)))],
            Expect::DeniedAt("spec.gateway".into()),
        ),
        (
            "1 MiB spec.poolRef.name",
            vec![("request.object.spec.poolRef.name", Some(json!(big)))],
            Expect::DeniedAt("spec.poolRef".into()),
        ),
        (
            "1 MiB label value",
            vec![("request.object.metadata.labels.env", Some(json!(big)))],
            Expect::Baseline,
        ),
    ] {
        out.push(
            Case::new(cat, name, body(&with(&address, &edits)), expect)
                .from("ipaddress-create.json"),
        );
    }
    let mut key = address.clone();
    key["request"]["object"]["spec"][big.as_str()] = json!("x");
    out.push(
        Case::new(cat, "1 MiB key in spec", body(&key), Expect::Baseline)
            .from("ipaddress-create.json"),
    );
    let entry = with(
        &pool,
        &[("request.object.spec.addresses", Some(json!([big])))],
    );
    out.push(Case::new(
        cat,
        "1 MiB pool entry",
        body(&entry),
        Expect::DeniedAt("spec.addresses".into()),
    ));
    let ipv6 = format!("2001:db8::{}", "0".repeat(1 << 20));
    let entry = with(
        &pool,
        &[("request.object.spec.addresses", Some(json!([ipv6])))],
    );
    out.push(Case::new(
        cat,
        "1 MiB IPv6-looking pool entry",
        body(&entry),
        Expect::DeniedAt("spec.addresses".into()),
    ));
}

pub fn deep_nesting(out: &mut Vec<Case>) {
    let cat = "10,000-deep nesting";
    let depth = 10_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    out.push(Case::new(
        cat,
        "10,000 nested arrays",
        arrays.clone().into_bytes(),
        Expect::Http(400, "recursion limit".into()),
    ));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    out.push(Case::new(
        cat,
        "10,000 nested objects",
        objects.clone().into_bytes(),
        Expect::Http(400, "recursion limit".into()),
    ));
    // The same, at the place a rule would read, inside a review that is otherwise fine.
    let text = String::from_utf8(body(&capture("ipaddress-create.json"))).unwrap();
    for (name, nested) in [("arrays", &arrays), ("objects", &objects)] {
        let spliced = text.replacen(
            r#""address":"10.10.0.10""#,
            &format!(r#""address":{nested}"#),
            1,
        );
        assert_ne!(spliced, text);
        out.push(Case::new(
            cat,
            format!("10,000 nested {name} at spec.address"),
            spliced.into_bytes(),
            Expect::Http(400, "recursion limit".into()),
        ));
    }
    // Just under serde_json's limit of 128: parsed, so the rules meet it and must deny.
    let shallow = format!("{}\"10.0.0.1\"{}", "[".repeat(100), "]".repeat(100));
    let spliced = text.replacen(
        r#""address":"10.10.0.10""#,
        &format!(r#""address":{shallow}"#),
        1,
    );
    out.push(
        Case::new(
            cat,
            "100 nested arrays at spec.address",
            spliced.into_bytes(),
            Expect::DeniedAt("spec.address".into()),
        )
        .from("ipaddress-create.json"),
    );
}

pub fn duplicate_keys(out: &mut Vec<Case>) {
    let cat = "duplicate keys";
    let text = String::from_utf8(body(&capture("ipaddress-create.json"))).unwrap();
    let uid = r#""uid":"a3fd0c43-fa38-43fe-868e-720e833dd23e""#;
    // serde_json keeps the last of duplicate keys, as Go's encoding/json (the API server's) does.
    let twice = text.replacen(uid, &format!(r#"{uid},"uid":"second-uid""#), 1);
    out.push(
        Case::new(
            cat,
            "uid twice (last wins)",
            twice.into_bytes(),
            Expect::Baseline,
        )
        .from("ipaddress-create.json"),
    );
    let bad_last = text.replacen(
        r#""address":"10.10.0.10""#,
        r#""address":"10.10.0.10","address":"010.10.0.10""#,
        1,
    );
    out.push(Case::new(
        cat,
        "spec.address twice, the last bad",
        bad_last.into_bytes(),
        Expect::DeniedAt("spec.address".into()),
    ));
    let good_last = text.replacen(
        r#""address":"10.10.0.10""#,
        r#""address":"010.10.0.10","address":"10.10.0.10""#,
        1,
    );
    out.push(
        Case::new(
            cat,
            "spec.address twice, the last good",
            good_last.into_bytes(),
            Expect::Baseline,
        )
        .from("ipaddress-create.json"),
    );
    let op_twice = text.replacen(
        r#""operation":"CREATE""#,
        r#""operation":"CREATE","operation":"CONNECT""#,
        1,
    );
    out.push(Case::new(
        cat,
        "operation twice (CONNECT last)",
        op_twice.into_bytes(),
        Expect::Allowed,
    ));
    let request_twice = text.replacen(
        r#""request":{"#,
        r#""request":{"uid":"first"},"request":{"#,
        1,
    );
    out.push(
        Case::new(
            cat,
            "request twice",
            request_twice.into_bytes(),
            Expect::Baseline,
        )
        .from("ipaddress-create.json"),
    );
}

pub fn bad_bytes(out: &mut Vec<Case>) {
    let cat = "invalid UTF-8 and broken JSON text";
    let text = body(&capture("ipaddress-create.json"));
    let at = |needle: &str| {
        text.windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .unwrap()
    };
    let mut bad = |name: &str, bytes: Vec<u8>, needle: &str| {
        out.push(Case::new(
            cat,
            name,
            bytes,
            Expect::Http(400, needle.into()),
        ));
    };
    let mut v = text.clone();
    v[at("10.10.0.10") + 2] = 0xff;
    bad("0xff inside spec.address", v, "JSON");
    let mut v = text.clone();
    let i = at("addr-a");
    v.splice(i..i + 1, [0xc0, 0xaf]);
    bad("overlong UTF-8 in request.name", v, "JSON");
    let mut v = text.clone();
    let i = at("capture-ns");
    v.splice(i..i + 1, [0xed, 0xa0, 0x80]);
    bad("UTF-8-encoded surrogate in request.namespace", v, "JSON");
    let s = String::from_utf8(text.clone()).unwrap();
    bad(
        "lone surrogate escape in spec.address",
        s.replacen("10.10.0.10", r"\ud800", 1).into_bytes(),
        "JSON",
    );
    bad(
        "NUL byte in the body",
        [&text[..10], b"\0", &text[10..]].concat(),
        "JSON",
    );
    bad(
        "UTF-8 byte-order mark first",
        [&[0xef, 0xbb, 0xbf][..], &text].concat(),
        "JSON",
    );
    bad(
        "UTF-16 body",
        s.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        "JSON",
    );
    bad(
        "random bytes",
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect(),
        "JSON",
    );
    bad("empty body", Vec::new(), "JSON");
    bad("whitespace only", b"  \n\t ".to_vec(), "JSON");
    bad("trailing garbage", [&text[..], b"}{"].concat(), "JSON");
    for top in ["null", "[]", "\"AdmissionReview\"", "7", "true"] {
        bad(
            &format!("top-level {top}"),
            top.as_bytes().to_vec(),
            "AdmissionReview",
        );
    }
    // Truncated anywhere: never a guess at what the rest would have said.
    for n in 1..=24 {
        let cut = text.len() * n / 25;
        bad(
            &format!("truncated at {cut} of {} bytes", text.len()),
            text[..cut].to_vec(),
            "JSON",
        );
    }
    // Valid JSON past an f64: judged at the field (O5).
    out.push(Case::new(
        cat,
        "number 1e400 as spec.prefix",
        s.replacen(r#""prefix":24"#, r#""prefix":1e400"#, 1)
            .into_bytes(),
        Expect::DeniedAt("spec.prefix".into()),
    ));
}
