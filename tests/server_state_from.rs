//! `serve --dev --state-from DIR` as a person runs it: the real binary, the static view loaded from
//! files, reviews built from real captures posted over HTTPS, and X2 on a dev server (an
//! admitted pool counts as existing, so a second overlapping create is refused).

mod server_support;

use std::path::Path;

use serde_json::{json, Value};
use server_support::*;

/// A review a real API server sent (tests/fixtures/reviews/README.md), from the newest set.
fn capture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reviews/v1.36")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

async fn validate(conn: &mut Conn, body: &Value) -> Value {
    let reply = conn
        .send(post(
            "/validate",
            Some("application/json"),
            serde_json::to_vec(body).unwrap(),
        ))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let out = reply.json();
    assert_eq!(out["response"]["uid"], body["request"]["uid"]);
    out["response"].clone()
}

fn pool_create(name: &str, uid: &str, addresses: Value, dry_run: bool) -> Value {
    let mut body = capture("inclusterippool-create.json");
    body["request"]["uid"] = json!(uid);
    body["request"]["name"] = json!(name);
    body["request"]["dryRun"] = json!(dry_run);
    body["request"]["object"]["metadata"]["name"] = json!(name);
    body["request"]["object"]["spec"]["addresses"] = addresses;
    body["request"]["object"]["spec"]["gateway"] = json!("10.10.1.1");
    body
}

#[tokio::test]
async fn dev_server_judges_against_state_from_and_remembers_what_it_admitted() {
    let certs = tempfile::tempdir().unwrap();
    let state = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews/state.yaml");
    let served = serve_dev(
        certs.path(),
        &[
            "--shutdown-delay",
            "0s",
            "--state-from",
            state.to_str().unwrap(),
        ],
    )
    .await;
    served.wait_ready().await;
    let mut conn = Conn::open(served.webhook, &served.ca, Proto::H2)
        .await
        .unwrap();

    // P9 from the loaded state: addr-held holds pool-a.
    let resp = validate(&mut conn, &capture("inclusterippool-delete.json")).await;
    assert_eq!(resp["allowed"], false, "{resp:#}");
    assert_eq!(resp["status"]["code"], 403);
    assert!(resp["status"]["message"]
        .as_str()
        .unwrap()
        .contains("capture-ns/addr-held (10.10.0.12)"));

    // A dry run of pool-b is allowed and leaves nothing behind ...
    let dry = pool_create("pool-b", "u-dry", json!(["10.10.1.0/24"]), true);
    let resp = validate(&mut conn, &dry).await;
    assert_eq!(resp["allowed"], true, "{resp:#}");
    let c = pool_create("pool-c", "u-c", json!(["10.10.1.128/25"]), false);
    assert_eq!(
        validate(&mut conn, &c).await["allowed"],
        true,
        "the dry run must not block pool-c"
    );

    // ... while the real create of pool-c now counts as existing (X2): pool-d overlapping it is refused.
    let d = pool_create("pool-d", "u-d", json!(["10.10.1.200-10.10.1.210"]), false);
    let resp = validate(&mut conn, &d).await;
    assert_eq!(resp["allowed"], false, "{resp:#}");
    let msg = resp["status"]["details"]["causes"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        msg.contains("overlaps InClusterIPPool capture-ns/pool-c"),
        "{msg}"
    );

    // A retried create of pool-c does not conflict with itself.
    let resp = validate(&mut conn, &c).await;
    assert_eq!(resp["allowed"], true, "{resp:#}");
    served.signal("TERM");
}

/// The served binary exports each pool's usage from its view, unless told not to.
#[tokio::test]
async fn pool_usage_metrics_follow_the_view_and_the_flag() {
    let state = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reviews/state.yaml");
    let pool_a = r#"ipam_guard_pool_addresses{kind="InClusterIPPool",namespace="capture-ns",pool="pool-a",state="#;
    for (flag, exported) in [("all", true), ("none", false)] {
        let certs = tempfile::tempdir().unwrap();
        let mut served = serve_dev(
            certs.path(),
            &[
                "--shutdown-delay",
                "0s",
                "--pool-metrics",
                flag,
                "--state-from",
                state.to_str().unwrap(),
            ],
        )
        .await;
        served.wait_ready().await;
        let (code, text) = http_get(served.metrics, "/metrics").await.unwrap();
        assert_eq!(code, 200);
        if exported {
            // 10.10.0.10-10.10.0.20 and 10.10.0.32/28; addr-held holds 10.10.0.12.
            assert_eq!(
                sample(&text, &format!("{pool_a}\"allocatable\"}}")),
                Some(27.0),
                "{text}"
            );
            assert_eq!(sample(&text, &format!("{pool_a}\"used\"}}")), Some(1.0));
            // 2001:db8::10-2001:db8::20 less the excluded ::15.
            assert_eq!(
                sample(
                    &text,
                    r#"ipam_guard_pool_addresses{kind="GlobalInClusterIPPool",namespace="",pool="global-pool-a",state="allocatable"}"#
                ),
                Some(16.0)
            );
            assert_eq!(sample(&text, "ipam_guard_pool_metrics_omitted"), Some(0.0));
        } else {
            assert!(!text.contains("ipam_guard_pool_addresses"), "{text}");
            assert!(text.contains("ipam_guard_view_objects"), "{text}");
        }
        served.signal("TERM");
        assert!(served.exit(WAIT).await.success());
    }
}
