//! Values inside well-formed objects: address texts the grammar refuses, numbers past their types,
//! huge arrays, and what the HTTP layer refuses before a review is read.

use super::*;

/// Texts every address field must refuse, and where to put them.
pub const BAD_ADDRESSES: &[(&str, &str)] = &[
    ("IPv6 zone", "fe80::1%eth0"),
    ("IPv6 zone, numeric", "fe80::1%2"),
    ("IPv4-mapped IPv6", "::ffff:10.10.0.10"),
    ("IPv4-mapped IPv6, hex", "::ffff:a0a:a"),
    ("leading zeros", "010.10.0.10"),
    ("leading zeros, all octets", "010.010.000.010"),
    ("octet past 255", "10.10.0.256"),
    ("trailing dot", "10.10.0.10."),
    ("inner space", "10.10. 0.10"),
    ("hex IPv4", "0x0a.10.0.10"),
    ("three octets", "10.10.10"),
];

pub fn address_texts(out: &mut Vec<Case>) {
    let cat = "IPv6 zones, mapped IPv6, leading zeros";
    let targets: &[(&str, &str, &str)] = &[
        (
            "ipaddress-create.json",
            "request.object.spec.address",
            "spec.address",
        ),
        (
            "ipaddress-create.json",
            "request.object.spec.gateway",
            "spec.gateway",
        ),
        (
            "inclusterippool-create.json",
            "request.object.spec.gateway",
            "spec.gateway",
        ),
        (
            "metal3-ipaddress-create.json",
            "request.object.spec.address",
            "spec.address",
        ),
        (
            "metal3-ippool-create.json",
            "request.object.spec.gateway",
            "spec.gateway",
        ),
        (
            "spiderippool-create.json",
            "request.object.spec.gateway",
            "spec.gateway",
        ),
    ];
    for &(source, path, field) in targets {
        let review = capture(source);
        for &(label, text) in BAD_ADDRESSES {
            let doc = with(&review, &[(path, Some(json!(text)))]);
            out.push(Case::new(
                cat,
                format!("{source} {field} {label}"),
                body(&doc),
                Expect::DeniedAt(field.into()),
            ));
        }
    }
    // Lists: the first entry replaced.
    let lists: &[(&str, &str, &str)] = &[
        (
            "inclusterippool-create.json",
            "request.object.spec.addresses",
            "spec.addresses",
        ),
        (
            "spiderippool-create.json",
            "request.object.spec.ips",
            "spec.ips",
        ),
        (
            "spiderippool-create.json",
            "request.object.spec.excludeIPs",
            "spec.excludeIPs",
        ),
    ];
    for &(source, path, field) in lists {
        let review = capture(source);
        for &(label, text) in BAD_ADDRESSES {
            let mut doc = review.clone();
            get_mut(&mut doc, &key_path(path)).unwrap()[0] = json!(text);
            out.push(Case::new(
                cat,
                format!("{source} {field}[0] {label}"),
                body(&doc),
                Expect::DeniedAt(format!("{field}[0]")),
            ));
        }
    }
    let metal3 = capture("metal3-ippool-create.json");
    for &(label, text) in BAD_ADDRESSES {
        let mut doc = metal3.clone();
        doc["request"]["object"]["spec"]["pools"][0]["start"] = json!(text);
        out.push(Case::new(
            cat,
            format!("metal3 spec.pools[0].start {label}"),
            body(&doc),
            Expect::DeniedAt("spec.pools[0]".into()),
        ));
    }
    // Accepted forms: non-canonical IPv6 and host bits warn, and are allowed.
    let global = capture("globalinclusterippool-update-spec.json");
    for (label, entry) in [
        ("upper-case IPv6", "2001:DB8::10-2001:DB8::20"),
        ("uncompressed IPv6", "2001:0db8:0:0:0:0:0:10-2001:db8::20"),
    ] {
        let mut doc = global.clone();
        doc["request"]["object"]["spec"]["addresses"][0] = json!(entry);
        out.push(Case::new(
            cat,
            format!("global pool entry {label} (warning)"),
            body(&doc),
            Expect::Allowed,
        ));
    }
}

pub fn numbers(out: &mut Vec<Case>) {
    let cat = "numbers out of range";
    let address = capture("ipaddress-create.json");
    for (label, prefix) in [
        ("2^64", json!(18_446_744_073_709_551_616.0_f64)),
        ("-1", json!(-1)),
        ("33", json!(33)),
        ("i64::MIN", json!(i64::MIN)),
        ("u64::MAX", json!(u64::MAX)),
        ("24.5", json!(24.5)),
        ("string 24", json!("24")),
        ("true", json!(true)),
    ] {
        let doc = with(&address, &[("request.object.spec.prefix", Some(prefix))]);
        out.push(Case::new(
            cat,
            format!("IPAddress spec.prefix {label}"),
            body(&doc),
            Expect::DeniedAt("spec.prefix".into()),
        ));
    }
    let text = String::from_utf8(body(&address)).unwrap();
    let big = text.replacen(
        r#""prefix":24"#,
        &format!(r#""prefix":{}"#, "9".repeat(400)),
        1,
    );
    // Valid JSON, but past what an f64 holds: serde_json cannot hold it, so it is read as the
    // string it is written as and denied at its field (O5).
    out.push(Case::new(
        cat,
        "IPAddress spec.prefix with 400 digits",
        big.into_bytes(),
        Expect::DeniedAt("spec.prefix".into()),
    ));
    let spider = capture("spiderippool-create.json");
    for (label, v) in [
        ("6 for an IPv4 subnet", json!(6)),
        ("5", json!(5)),
        ("-4", json!(-4)),
    ] {
        let doc = with(&spider, &[("request.object.spec.ipVersion", Some(v))]);
        out.push(Case::new(
            cat,
            format!("SpiderIPPool spec.ipVersion {label}"),
            body(&doc),
            Expect::DeniedAt("spec.ipVersion".into()),
        ));
    }
}

/// 100,000 entries: judged in one answer, in bounded time, with a bounded answer.
pub fn huge_arrays(out: &mut Vec<Case>) {
    let cat = "100k-entry address lists";
    const N: u32 = 100_000;
    // Distinct /32s inside 10.100.0.0/14 (clear of pool-a), which prefix 14 covers.
    let good: Vec<Value> = (0..N)
        .map(|i| {
            json!(format!(
                "10.{}.{}.{}",
                100 + (i >> 16),
                (i >> 8) & 0xff,
                i & 0xff
            ))
        })
        .collect();
    let bad: Vec<Value> = (0..N)
        .map(|i| json!(format!("10.0.0.{}", 256 + i)))
        .collect();
    // The answers stay under the default 64 KiB bound too: at most 100 causes and 100 warnings.
    let mut push = |name: String, doc: Value, expect: Expect| {
        out.push(Case::new(cat, name, body(&doc), expect));
    };
    let pool = capture("inclusterippool-create.json");
    let mut doc = with(
        &pool,
        &[(
            "request.object.spec.addresses",
            Some(Value::Array(good.clone())),
        )],
    );
    doc["request"]["object"]["spec"]["prefix"] = json!(14);
    doc["request"]["object"]["spec"]["gateway"] = json!("10.100.0.1");
    doc["request"]["name"] = json!("pool-100k");
    doc["request"]["object"]["metadata"]["name"] = json!("pool-100k");
    push(
        "InClusterIPPool with 100k valid /32 entries".into(),
        doc.clone(),
        Expect::Judged,
    );
    let mut excl = doc.clone();
    excl["request"]["object"]["spec"]["excludedAddresses"] = Value::Array(good.clone());
    push(
        "InClusterIPPool with 100k entries, all excluded".into(),
        excl,
        Expect::Judged,
    );
    let bad_doc = with(
        &pool,
        &[(
            "request.object.spec.addresses",
            Some(Value::Array(bad.clone())),
        )],
    );
    push(
        "InClusterIPPool with 100k invalid entries".into(),
        bad_doc,
        Expect::DeniedAt("spec.addresses".into()),
    );
    let spider = capture("spiderippool-create.json");
    let mut sdoc = with(
        &spider,
        &[("request.object.spec.ips", Some(Value::Array(good.clone())))],
    );
    sdoc["request"]["object"]["spec"]["subnet"] = json!("10.100.0.0/14");
    sdoc["request"]["object"]["spec"]["gateway"] = json!("10.100.0.1");
    sdoc["request"]["object"]["spec"]["excludeIPs"] = json!([]);
    push("SpiderIPPool with 100k ips".into(), sdoc, Expect::Judged);
    let metal3 = capture("metal3-ippool-create.json");
    let pools: Vec<Value> = good
        .iter()
        .map(|a| json!({"start": a, "end": a, "prefix": 14}))
        .collect();
    let mut mdoc = with(
        &metal3,
        &[("request.object.spec.pools", Some(Value::Array(pools)))],
    );
    mdoc["request"]["object"]["spec"]["preAllocations"] = json!({});
    push("Metal3 IPPool with 100k pools".into(), mdoc, Expect::Judged);
    let claim = capture("ipaddressclaim-create.json");
    let cdoc = with(
        &claim,
        &[("request.object.spec.poolRef.name", Some(Value::Array(good)))],
    );
    push(
        "IPAddressClaim with a 100k-entry array as poolRef.name".into(),
        cdoc,
        Expect::DeniedAt("spec.poolRef.name".into()),
    );
}

pub fn http_level(out: &mut Vec<Case>) {
    let cat = "HTTP-level (type, size, method, path)";
    let good = body(&capture("ipaddress-create.json"));
    for (label, ct) in [
        ("missing", None),
        ("text/plain", Some("text/plain")),
        ("application/yaml", Some("application/yaml")),
        ("form", Some("application/x-www-form-urlencoded")),
        ("application/jsonx", Some("application/jsonx")),
        ("empty", Some("")),
    ] {
        let mut c = Case::new(
            cat,
            format!("Content-Type {label}"),
            good.clone(),
            Expect::Http(415, "Content-Type".into()),
        );
        c.content_type = ct;
        out.push(c);
    }
    let mut c = Case::new(
        cat,
        "Content-Type with charset",
        good.clone(),
        Expect::Baseline,
    )
    .from("ipaddress-create.json");
    c.content_type = Some("application/json; charset=utf-8");
    out.push(c);
    // Over the 7 MiB limit, valid JSON all the way (a padded label). The server answers 413 on
    // the Content-Length, then reads and discards the rest (tests/server_413.rs for both
    // protocols, tests/hostile_connections.rs from a raw socket).
    let mut big = capture("ipaddress-create.json");
    big["request"]["object"]["metadata"]["labels"]["pad"] = json!("p".repeat(8 << 20));
    let mut c = Case::new(
        cat,
        "8 MiB review over h2",
        body(&big),
        Expect::Http(413, "larger than".into()),
    );
    c.proto = Proto::H2;
    out.push(c);
}
