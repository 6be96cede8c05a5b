//! The X2 step with a route (several replicas): what a follower answers itself, what it
//! forwards, how it relays the decider, and how the decider fences its own decisions.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};

use super::*;
use crate::cluster::Ledger;
use crate::kinds::Kind;
use crate::model::Operation;

/// A route whose standing is scripted (the last entry repeats) and whose decider answers with
/// a fixed answer, recording what it was sent.
struct Scripted {
    standing: Mutex<VecDeque<Here>>,
    answer: DecisionAnswer,
    sent: Mutex<Vec<DecisionRequest>>,
    admitted: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(standing: &[Here], answer: DecisionAnswer) -> Arc<Scripted> {
        Arc::new(Scripted {
            standing: Mutex::new(standing.iter().cloned().collect()),
            answer,
            sent: Mutex::new(Vec::new()),
            admitted: Mutex::new(Vec::new()),
        })
    }
    fn sent(&self) -> Vec<DecisionRequest> {
        self.sent.lock().unwrap().clone()
    }
}

impl Route for Scripted {
    fn standing(&self) -> Here {
        let mut s = self.standing.lock().unwrap();
        if s.len() > 1 {
            s.pop_front().unwrap()
        } else {
            s.front().cloned().unwrap()
        }
    }
    fn forward(&self, req: DecisionRequest) -> BoxFuture<'_, DecisionAnswer> {
        self.sent.lock().unwrap().push(req);
        let answer = self.answer.clone();
        async move { answer }.boxed()
    }
    fn admitted(&self, req: &Request) {
        self.admitted.lock().unwrap().push(req.name.to_string());
    }
}

fn admission(route: Arc<Scripted>) -> (Admission, Arc<Ledger>) {
    let view = Arc::new(Ledger::default());
    (
        Admission::with_route(view.clone(), Options::default(), route),
        view,
    )
}

fn pool_review(name: &str, range: &str) -> Vec<u8> {
    let object = json!({
        "apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"addresses": [range], "prefix": 24, "gateway": "10.0.0.1"}
    });
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": format!("uid-{name}"),
            "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1alpha2", "kind": "InClusterIPPool"},
            "operation": "CREATE", "namespace": "ns", "name": name, "object": object,
            "userInfo": {"username": "someone"}}
    }))
    .unwrap()
}

fn response(a: &Answer) -> Value {
    serde_json::from_slice::<Value>(&a.body).unwrap()["response"].clone()
}

fn p10(detail: &str) -> DecisionAnswer {
    DecisionAnswer {
        errors: vec![WireError {
            rule: "P10".into(),
            path: "spec.addresses[0]".into(),
            kind: "FieldValueInvalid".into(),
            value: Some(json!("10.0.0.10-10.0.0.20")),
            detail: detail.into(),
        }],
        ..DecisionAnswer::default()
    }
}

#[tokio::test]
async fn x2_a_follower_forwards_a_view_dependent_create_and_relays_the_deciders_denial() {
    let route = Scripted::new(&[Here::Forward], p10("overlaps InClusterIPPool ns/first"));
    let (a, view) = admission(route.clone());
    let body = pool_review("second", "10.0.0.10-10.0.0.20");
    let out = a
        .review(Endpoint::Validate, &body, &crate::cluster::Caller::Trusted)
        .await;
    let r = response(&out);
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422);
    assert!(r["status"]["message"]
        .as_str()
        .unwrap()
        .contains("overlaps InClusterIPPool ns/first"));
    assert_eq!(out.summary.unwrap().rules, vec!["P10".to_string()]);
    // The compact request: what the rules read, nothing about the caller.
    let sent = route.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].name, "second");
    assert_eq!(sent[0].operation, Operation::Create);
    assert!(sent[0].object.is_some());
    let wire = serde_json::to_value(&sent[0]).unwrap();
    assert!(wire.get("uid").is_none() && wire.get("userInfo").is_none());
    // The follower records nothing itself: the decider holds the pending entries.
    assert_eq!(view.pending_len(), 0);
}

#[tokio::test]
async fn x2_a_follower_relays_an_allow_and_keeps_its_own_answer_for_the_rest() {
    let route = Scripted::new(&[Here::Forward], DecisionAnswer::default());
    let (a, _) = admission(route.clone());
    let body = pool_review("p", "10.0.0.10-10.0.0.20");
    let out = a
        .review(Endpoint::Validate, &body, &crate::cluster::Caller::Trusted)
        .await;
    assert_eq!(response(&out)["allowed"], true);
    assert_eq!(route.sent().len(), 1);
}

#[tokio::test]
async fn x2_a_follower_denies_syntax_itself_without_asking_the_decider() {
    let route = Scripted::new(&[Here::Forward], DecisionAnswer::default());
    let (a, _) = admission(route.clone());
    let body = pool_review("p", "10.0.0.300-10.0.0.1");
    let out = a
        .review(Endpoint::Validate, &body, &crate::cluster::Caller::Trusted)
        .await;
    assert_eq!(response(&out)["allowed"], false);
    assert!(route.sent().is_empty(), "a syntax denial needs no decider");
}

#[tokio::test]
async fn x2_no_decider_is_a_503_that_says_so() {
    let route = Scripted::new(
        &[Here::Forward],
        DecisionAnswer::unavailable("no ipam-guard replica is the decider right now"),
    );
    let (a, _) = admission(route);
    let r = response(
        &a.review(
            Endpoint::Validate,
            &pool_review("p", "10.0.0.10-10.0.0.20"),
            &crate::cluster::Caller::Trusted,
        )
        .await,
    );
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 503);
    assert!(r["status"]["message"]
        .as_str()
        .unwrap()
        .contains("no ipam-guard replica is the decider"));
}

#[tokio::test]
async fn x2_mutations_never_reach_the_decider() {
    let route = Scripted::new(&[Here::Refuse("waiting".into())], DecisionAnswer::default());
    let (a, _) = admission(route.clone());
    let body = pool_review("p", "10.0.0.10-10.0.0.20");
    let out = a
        .review(Endpoint::Mutate, &body, &crate::cluster::Caller::Trusted)
        .await;
    assert_eq!(response(&out)["allowed"], true);
    assert!(route.sent().is_empty());
}

#[tokio::test]
async fn x2_a_new_decider_still_waiting_refuses_with_503() {
    let route = Scripted::new(
        &[Here::Refuse("just became the decider and waits".into())],
        DecisionAnswer::default(),
    );
    let (a, view) = admission(route);
    let r = response(
        &a.review(
            Endpoint::Validate,
            &pool_review("p", "10.0.0.10-10.0.0.20"),
            &crate::cluster::Caller::Trusted,
        )
        .await,
    );
    assert_eq!(r["status"]["code"], 503);
    assert_eq!(view.pending_len(), 0);
}

#[tokio::test]
async fn x2_the_decider_decides_locally_and_the_second_overlap_is_denied() {
    let route = Scripted::new(&[Here::Decide], DecisionAnswer::default());
    let (a, view) = admission(route.clone());
    let first_body = pool_review("a", "10.0.0.10-10.0.0.20");
    let first = a
        .review(
            Endpoint::Validate,
            &first_body,
            &crate::cluster::Caller::Trusted,
        )
        .await;
    assert_eq!(response(&first)["allowed"], true);
    assert_eq!(view.pending_len(), 1);
    let second_body = pool_review("b", "10.0.0.15-10.0.0.25");
    let second = a
        .review(
            Endpoint::Validate,
            &second_body,
            &crate::cluster::Caller::Trusted,
        )
        .await;
    assert_eq!(response(&second)["allowed"], false);
    assert!(route.sent().is_empty());
    // Only what was admitted is kept for a handover.
    assert_eq!(*route.admitted.lock().unwrap(), vec!["a".to_string()]);
}

#[tokio::test]
async fn x2_a_decision_that_ends_after_the_fence_closed_is_refused() {
    // Decider when the decision starts; by its end the renew deadline has passed (the process
    // was paused mid-decision, say).
    let route = Scripted::new(
        &[Here::Decide, Here::Refuse("fenced".into())],
        DecisionAnswer::default(),
    );
    let (a, _) = admission(route);
    let r = response(
        &a.review(
            Endpoint::Validate,
            &pool_review("a", "10.0.0.10-10.0.0.20"),
            &crate::cluster::Caller::Trusted,
        )
        .await,
    );
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 503);
}

/// A forwarded decision as a follower sends it: the review's object, raw.
fn forwarded_pool(name: &str, range: &str) -> DecisionRequest {
    let review: Value = serde_json::from_slice(&pool_review(name, range)).unwrap();
    DecisionRequest {
        kind: Kind::InClusterIPPool,
        version: "v1alpha2".into(),
        operation: Operation::Create,
        namespace: Some("ns".into()),
        name: name.into(),
        object: Some(
            serde_json::value::RawValue::from_string(review["request"]["object"].to_string())
                .unwrap(),
        ),
        old_object: None,
        dry_run: false,
        stranger: None,
        admitted_ms_ago: None,
    }
}

#[test]
fn x2_the_deciders_side_records_and_serialises_forwarded_decisions() {
    let route = Scripted::new(&[Here::Decide], DecisionAnswer::default());
    let (a, view) = admission(route.clone());
    let first = a.answer_forwarded(&forwarded_pool("a", "10.0.0.10-10.0.0.20"));
    assert_eq!(first, DecisionAnswer::default());
    assert_eq!(view.pending_len(), 1);
    assert_eq!(*route.admitted.lock().unwrap(), ["a"]);
    let second = a.answer_forwarded(&forwarded_pool("b", "10.0.0.15-10.0.0.25"));
    assert_eq!(second.errors.len(), 1, "{second:?}");
    assert_eq!(second.errors[0].rule, "P10");
}

#[test]
fn x2_the_wire_is_text_and_a_kind_this_build_does_not_decide_is_answered() {
    let sent = serde_json::to_value(forwarded_pool("a", "10.0.0.10-10.0.0.20")).unwrap();
    assert_eq!(sent["group"], "ipam.cluster.x-k8s.io");
    assert_eq!(sent["kind"], "InClusterIPPool");
    assert_eq!(sent["operation"], "CREATE");
    assert_eq!(
        sent["object"]["spec"]["addresses"][0],
        "10.0.0.10-10.0.0.20"
    );
    let back = forwarded(&serde_json::to_vec(&sent).unwrap()).unwrap();
    let Forwarded::Request(back) = back else {
        panic!("a kind we decide")
    };
    assert_eq!(back.kind, Kind::InClusterIPPool);
    assert_eq!(back.operation, Operation::Create);
    // Not a kind we decide (a follower of another version): an answer, not a panic.
    let mut odd = sent.clone();
    odd["kind"] = json!("Deployment");
    match forwarded(&serde_json::to_vec(&odd).unwrap()).unwrap() {
        Forwarded::NotOurs(why) => assert!(why.contains("not a kind"), "{why}"),
        Forwarded::Request(_) => panic!("Deployment is not ours"),
    }
    assert!(forwarded(b"{\"kind\": 7}").is_err());
}

#[test]
fn x2_a_replica_that_is_not_the_decider_refuses_forwarded_decisions() {
    let route = Scripted::new(&[Here::Forward], DecisionAnswer::default());
    let (a, view) = admission(route);
    let answer = a.answer_forwarded(&forwarded_pool("a", "10.0.0.10-10.0.0.20"));
    assert!(answer.unavailable.is_some());
    // Tells the asker to look at the lease again rather than wait for its next read.
    assert!(answer.not_decider);
    assert_eq!(view.pending_len(), 0);
}
