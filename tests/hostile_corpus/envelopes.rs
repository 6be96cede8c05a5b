//! Envelopes that are not the one the API server sends (apiVersion, kind, uid) and operations
//! that do not fit the object they carry.

use super::*;

pub fn wrong_envelopes(out: &mut Vec<Case>) {
    let cat = "wrong apiVersion/kind, no uid";
    let review = capture("ipaddress-create.json");
    for (name, path, value, needle) in [
        (
            "apiVersion admission.k8s.io/v2",
            "apiVersion",
            json!("admission.k8s.io/v2"),
            "apiVersion",
        ),
        ("apiVersion v1", "apiVersion", json!("v1"), "apiVersion"),
        ("apiVersion empty", "apiVersion", json!(""), "apiVersion"),
        (
            "apiVersion in upper case",
            "apiVersion",
            json!("ADMISSION.K8S.IO/V1"),
            "apiVersion",
        ),
        (
            "kind AdmissionResponse",
            "kind",
            json!("AdmissionResponse"),
            "AdmissionReview",
        ),
        (
            "kind in lower case",
            "kind",
            json!("admissionreview"),
            "AdmissionReview",
        ),
        ("kind Pod", "kind", json!("Pod"), "AdmissionReview"),
        ("uid empty", "request.uid", json!(""), "uid"),
        (
            "operation in lower case",
            "request.operation",
            json!("create"),
            "operation",
        ),
        (
            "operation PATCH",
            "request.operation",
            json!("PATCH"),
            "operation",
        ),
        (
            "request.kind without kind",
            "request.kind",
            json!({"group": "ipam.cluster.x-k8s.io", "version": "v1beta2"}),
            "request.kind",
        ),
    ] {
        out.push(Case::new(
            cat,
            name,
            body(&with(&review, &[(path, Some(value))])),
            Expect::Http(400, needle.into()),
        ));
    }
    out.push(Case::new(
        cat,
        "no uid",
        body(&with(&review, &[("request.uid", None)])),
        Expect::Http(400, "uid".into()),
    ));
    out.push(Case::new(
        cat,
        "no request",
        body(&with(&review, &[("request", None)])),
        Expect::Http(400, "request".into()),
    ));
    // v1beta1 is served and answered as v1beta1.
    let mut old = with(
        &review,
        &[("apiVersion", Some(json!("admission.k8s.io/v1beta1")))],
    );
    old["request"]["uid"] = json!("v1beta1-uid");
    out.push(
        Case::new(
            cat,
            "apiVersion admission.k8s.io/v1beta1",
            body(&old),
            Expect::Baseline,
        )
        .from("ipaddress-create.json"),
    );
}

/// Update captures of every kind: object and oldObject swapped, oldObject missing.
pub const UPDATES: &[&str] = &[
    "ipaddressclaim-update-spec.json",
    "ipaddress-update-spec.json",
    "inclusterippool-update-spec.json",
    "globalinclusterippool-update-spec.json",
    "metal3-ippool-update-spec.json",
    "metal3-ipclaim-update-spec.json",
    "metal3-ipaddress-update-spec.json",
    "spiderippool-update-spec.json",
    "vspheremachine-update-spec.json",
    "vspheremachinetemplate-update-spec.json",
];

pub const DELETES: &[&str] = &[
    "ipaddressclaim-delete.json",
    "ipaddress-delete.json",
    "inclusterippool-delete.json",
    "globalinclusterippool-delete.json",
    "metal3-ippool-delete.json",
    "metal3-ipclaim-delete.json",
    "metal3-ipaddress-delete.json",
    "spiderippool-delete.json",
    "vspheremachine-delete.json",
];

pub fn wrong_operations(out: &mut Vec<Case>) {
    let cat = "object/oldObject swapped or missing";
    for &name in UPDATES {
        let review = capture(name);
        let (obj, old) = (
            review["request"]["object"].clone(),
            review["request"]["oldObject"].clone(),
        );
        let swapped = with(
            &review,
            &[
                ("request.object", Some(old)),
                ("request.oldObject", Some(obj)),
            ],
        );
        out.push(Case::new(
            cat,
            format!("{name} object and oldObject swapped"),
            body(&swapped),
            Expect::Judged,
        ));
        for (label, value) in [
            ("missing", None),
            ("null", Some(Value::Null)),
            ("a string", Some(json!("x"))),
        ] {
            let doc = with(&review, &[("request.oldObject", value)]);
            out.push(Case::new(
                cat,
                format!("{name} UPDATE with oldObject {label}"),
                body(&doc),
                Expect::DeniedAt("oldObject".into()),
            ));
        }
        let doc = with(&review, &[("request.object", None)]);
        out.push(Case::new(
            cat,
            format!("{name} UPDATE without object"),
            body(&doc),
            Expect::DeniedAt("object".into()),
        ));
    }
    for &name in DELETES {
        let review = capture(name);
        let old = review["request"]["oldObject"].clone();
        // The API server sends object: null on DELETE; an object there changes nothing.
        let doc = with(&review, &[("request.object", Some(old))]);
        out.push(
            Case::new(
                cat,
                format!("{name} DELETE with an object"),
                body(&doc),
                Expect::Baseline,
            )
            .from(name),
        );
        let doc = with(&review, &[("request.oldObject", None)]);
        out.push(Case::new(
            cat,
            format!("{name} DELETE without oldObject"),
            body(&doc),
            Expect::DeniedAt("oldObject".into()),
        ));
        let obj = review["request"]["oldObject"].clone();
        let doc = with(
            &review,
            &[
                ("request.object", Some(obj)),
                ("request.oldObject", Some(Value::Null)),
            ],
        );
        out.push(Case::new(
            cat,
            format!("{name} DELETE with object and oldObject swapped"),
            body(&doc),
            Expect::DeniedAt("oldObject".into()),
        ));
    }
    let create = capture("ipaddress-create.json");
    let obj = create["request"]["object"].clone();
    let doc = with(
        &create,
        &[
            ("request.object", Some(Value::Null)),
            ("request.oldObject", Some(obj)),
        ],
    );
    out.push(Case::new(
        cat,
        "CREATE with object and oldObject swapped",
        body(&doc),
        Expect::DeniedAt("object".into()),
    ));
    let doc = with(&create, &[("request.operation", Some(json!("CONNECT")))]);
    out.push(Case::new(
        cat,
        "CONNECT on an IPAddress",
        body(&doc),
        Expect::Allowed,
    ));
}
