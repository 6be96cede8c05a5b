//! End to end through the real HTTPS server: captured AdmissionReviews in, verdicts out, and the
//! decision metric counted. These need the real `Admission::review`.

mod server_support;

use base64::Engine;
use server_support::*;

const JSON: Option<&str> = Some("application/json");

fn uid_of(fixture_name: &str) -> String {
    uid_in(&fixture(fixture_name))
}

fn uid_in(review: &[u8]) -> String {
    let review: serde_json::Value = serde_json::from_slice(review).unwrap();
    review["request"]["uid"].as_str().unwrap().to_string()
}

/// The recorded claim create with `spec.poolRef.name` emptied (C1 denies it), renamed
/// `claim-no-pool-name` and given a uid of its own.
fn claim_without_pool_name() -> Vec<u8> {
    let mut review: serde_json::Value =
        serde_json::from_slice(&fixture("ipaddressclaim-create.json")).unwrap();
    let request = &mut review["request"];
    request["uid"] = "c1e0c1e0-0000-4000-8000-00000000c001".into();
    request["name"] = "claim-no-pool-name".into();
    request["object"]["metadata"]["name"] = "claim-no-pool-name".into();
    request["object"]["spec"]["poolRef"]["name"] = "".into();
    serde_json::to_vec(&review).unwrap()
}

#[tokio::test]
async fn claim_create_is_allowed_with_its_uid_echoed_over_h1_and_h2() {
    let (server, ca, _dir) = start_default().await;
    for proto in [Proto::H1, Proto::H2] {
        let mut conn = Conn::open(server.addrs.webhook, &ca.der, proto)
            .await
            .unwrap();
        let reply = conn
            .send(post(
                "/validate",
                JSON,
                fixture("ipaddressclaim-create.json"),
            ))
            .await
            .unwrap();
        assert_eq!(reply.status, 200, "{proto:?}: {}", reply.text());
        assert_eq!(reply.headers["content-type"], "application/json");
        let review = reply.json();
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(
            review["response"]["uid"],
            uid_of("ipaddressclaim-create.json")
        );
        assert_eq!(review["response"]["allowed"], true, "{review}");
    }
    let metrics = server.metrics().await;
    let counted: f64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with(
                r#"ipam_guard_decisions_total{kind="IPAddressClaim",operation="CREATE",decision="#,
            ) && !l.contains(r#"decision="denied""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(counted >= 2.0, "{metrics}");
    server.stop().await;
}

#[tokio::test]
async fn dry_run_claim_create_is_allowed_with_its_uid_echoed() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    let reply = conn
        .send(post(
            "/validate",
            JSON,
            fixture("ipaddressclaim-create-dryrun.json"),
        ))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let review = reply.json();
    assert_eq!(
        review["response"]["uid"],
        uid_of("ipaddressclaim-create-dryrun.json")
    );
    assert_eq!(review["response"]["allowed"], true, "{review}");
    server.stop().await;
}

#[tokio::test]
async fn c1_claim_without_pool_name_is_denied_and_counted() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H2)
        .await
        .unwrap();
    let denied = claim_without_pool_name();
    let reply = conn
        .send(post("/validate", JSON, denied.clone()))
        .await
        .unwrap();
    // A denial is a successful HTTP exchange; the verdict is in the body.
    assert_eq!(reply.status, 200, "{}", reply.text());
    let review = reply.json();
    let response = &review["response"];
    assert_eq!(response["uid"], uid_in(&denied));
    assert_eq!(response["allowed"], false, "{review}");
    assert_eq!(response["status"]["code"], 422, "{review}");
    assert_eq!(response["status"]["reason"], "Invalid", "{review}");
    let causes = response["status"]["details"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["field"] == "spec.poolRef.name"),
        "{review}"
    );

    let metrics = server.metrics().await;
    assert_eq!(
        sample(
            &metrics,
            r#"ipam_guard_decisions_total{kind="IPAddressClaim",operation="CREATE",decision="denied",rule="C1"}"#
        ),
        Some(1.0),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn m2_claim_create_on_mutate_gets_a_base64_json_patch() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    let reply = conn
        .send(post(
            "/mutate",
            JSON,
            fixture("mutating/ipaddressclaim-create.json"),
        ))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let review = reply.json();
    let response = &review["response"];
    assert_eq!(
        response["uid"],
        uid_of("mutating/ipaddressclaim-create.json")
    );
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch", "{review}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(
            response["patch"]
                .as_str()
                .expect("patch is a base64 string"),
        )
        .unwrap();
    let patch: serde_json::Value = serde_json::from_slice(&patch).unwrap();
    let text = patch.to_string();
    assert!(
        text.contains("cluster.x-k8s.io~1cluster-name")
            || text.contains("cluster.x-k8s.io/cluster-name"),
        "M2 adds the cluster-name label: {patch}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_body_that_is_not_a_review_is_400_with_a_message() {
    let (server, ca, _dir) = start_default().await;
    let mut conn = Conn::open(server.addrs.webhook, &ca.der, Proto::H1)
        .await
        .unwrap();
    for body in [&b"not json"[..], br#"{"kind":"NotAReview"}"#, b""] {
        let reply = conn.send(post("/validate", JSON, body)).await.unwrap();
        assert_eq!(
            reply.status,
            400,
            "{:?}: {}",
            String::from_utf8_lossy(body),
            reply.text()
        );
        assert_eq!(reply.headers["content-type"], "application/json");
        assert!(reply.json()["message"].is_string());
    }
    server.stop().await;
}

#[tokio::test]
async fn a_denial_or_a_warning_is_one_info_line_naming_the_user_and_an_allowed_request_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_dev(
        dir.path(),
        &["--shutdown-delay", "0s", "--log-format", "json"],
    )
    .await;
    served.wait_ready().await;
    let mut conn = Conn::open(served.webhook, &served.ca, Proto::H1)
        .await
        .unwrap();
    for body in [
        claim_without_pool_name(),
        fixture("ipaddressclaim-create.json"),
    ] {
        let reply = conn.send(post("/validate", JSON, body)).await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    // Allowed without a word (see tests/examples_reviews.rs).
    let clean = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/reviews/pool-create-allowed.json"),
    )
    .unwrap();
    let clean_uid = serde_json::from_slice::<serde_json::Value>(&clean).unwrap()["request"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let reply = conn.send(post("/validate", JSON, clean)).await.unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    served.signal("TERM");
    assert!(served.exit(WAIT).await.success());
    let logs = served.logs();
    let denied = uid_in(&claim_without_pool_name());
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .filter(|l| l.contains(&denied))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{logs}");
    let line = &lines[0];
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["message"], "denied");
    assert_eq!(line["uid"], denied.as_str());
    assert_eq!(line["kind"], "IPAddressClaim");
    assert_eq!(line["operation"], "CREATE");
    assert_eq!(line["dry_run"], false);
    assert!(
        line["object"]
            .as_str()
            .unwrap()
            .ends_with("/claim-no-pool-name"),
        "{line}"
    );
    assert!(line["rules"].as_str().unwrap().contains("C1"), "{line}");
    assert_eq!(line["user"], "ipam-guard-e2e", "{line}");
    assert_eq!(
        line["groups"], "system:masters,system:authenticated",
        "{line}"
    );
    // A warning (C3: the pool does not exist) is logged too, with who asked.
    let warned = uid_of("ipaddressclaim-create.json");
    let line: serde_json::Value = logs
        .lines()
        .find(|l| l.contains(&warned))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap_or_else(|| panic!("{logs}"));
    assert_eq!(line["message"], "allowed with warnings", "{line}");
    assert_eq!(line["rules"], "C3", "{line}");
    assert_eq!(line["user"], "ipam-guard-e2e", "{line}");
    // Allowed requests without a warning stay below info.
    assert!(!logs.contains(&clean_uid), "{logs}");
}
