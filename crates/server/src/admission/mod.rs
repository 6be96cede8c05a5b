//! AdmissionReview in and out, through one entry, `Admission::review`: `envelope` decodes the
//! review into borrowed types in one pass, each object into the tree the rules read (`object`),
//! `dispatch`
//! takes it to the rules and through the X2 step on the route (this replica, or the decider
//! across replicas, `decision`), `status` encodes the Status and the patch.
//!
//! The envelope is read by our own serde visitors rather than through
//! `kube::core::admission::AdmissionRequest`: that type decodes the object's metadata as a typed
//! `ObjectMeta` (one wrong-typed label would turn a field problem into a 400 for the whole review),
//! and its response writes `patch` as an array of numbers where Kubernetes documents a base64
//! string. The Status we send is kube's own `Status` type.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use crate::cluster::{Caller, ClusterView};
use crate::kinds::Kind;
use crate::model::{Operation, Request};
use crate::rule_id::RuleId;
use crate::rules::Options;

mod decision;
mod dispatch;
pub(crate) use dispatch::{basis_of, written};
mod envelope;
mod numbers;
mod object;
mod parts;
mod skip;
mod status;
pub(crate) use decision::known_entries;
#[doc(hidden)]
pub use decision::{forwarded, Forwarded};
pub use decision::{DecisionAnswer, DecisionRequest, Wire, WireError};
pub use decision::{Here, Route};

use dispatch::{
    needs_decider, not_synced, summarize, unavailable, Judged, Said, Stage, NOT_DECIDER,
    VIEW_NOT_READY_WARNING,
};
use envelope::{decode, Envelope, Refused};
use status::{allow, body, fault, respond};

/// Which webhook path a review came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Validate,
    Mutate,
}

impl Endpoint {
    /// The label used in metrics (`webhook="/validate"`), matching controller-runtime.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Validate => "/validate",
            Endpoint::Mutate => "/mutate",
        }
    }
}

/// What the server needs to know about one answered review, for logs and metrics. Its strings
/// are the envelope's, moved rather than copied: they borrow from the body the server still
/// holds while it logs and counts (five copies and their frees were 0.8k instructions a review).
#[derive(Debug, Clone)]
pub struct Summary<'b> {
    pub uid: Cow<'b, str>,
    /// `request.kind` as sent, for the log; `served` is the kind it names, when we serve it.
    pub group: Cow<'b, str>,
    pub kind: Cow<'b, str>,
    pub served: Option<Kind>,
    pub namespace: Option<Cow<'b, str>>,
    pub name: Cow<'b, str>,
    pub operation: Operation,
    pub allowed: bool,
    /// Status code in the answer (0 when allowed without a status).
    pub code: u16,
    /// Rule ids behind the denial, or behind the warnings when allowed.
    pub rules: Vec<String>,
    pub warnings: usize,
    pub patched: bool,
    pub dry_run: bool,
    /// Who asked (`request.userInfo`), for the log line of a denial or a warning; empty for a quiet
    /// review (`is_quiet`), as nothing prints it then.
    pub user: Cow<'b, str>,
    pub groups: Vec<Cow<'b, str>>,
}

impl Summary<'_> {
    /// Allowed without a word: logged at debug only, without who asked.
    pub(crate) fn is_quiet(&self) -> bool {
        self.allowed && self.warnings == 0
    }
}

/// An HTTP answer: status and JSON body. `summary` is `None` when the body was not a review.
#[derive(Debug, Clone)]
pub struct Answer<'b> {
    pub http_status: u16,
    pub body: Vec<u8>,
    pub summary: Option<Summary<'b>>,
}

impl Answer<'_> {
    /// A 400 with a JSON message: the body was not an AdmissionReview we can answer.
    fn bad_request(message: impl Into<String>) -> Self {
        let body = json!({ "message": message.into() });
        Answer {
            http_status: 400,
            body: serde_json::to_vec(&body).unwrap_or_default(),
            summary: None,
        }
    }
}

/// The admission handler the server calls. Cheap to clone.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

struct Inner {
    view: Arc<dyn ClusterView>,
    options: Options,
    /// Where the X2 step runs: here (`Local`, one replica), or at the decider several replicas
    /// share (X2 across replicas).
    route: Arc<dyn Route>,
    /// The view is this process's on a user's machine (`serve --dev`), not an install's pods:
    /// what a 503 tells the user to look at.
    local: bool,
}

/// The route of a replica that decides alone: every X2 step is taken here.
struct Local;

impl Route for Local {
    fn standing(&self) -> Here {
        Here::Decide
    }
    fn forward(&self, _: DecisionRequest) -> BoxFuture<'_, DecisionAnswer> {
        // `standing` never says `Forward`, so nothing is ever sent; were it, refuse, never allow.
        Box::pin(async { DecisionAnswer::unavailable(NOT_DECIDER) })
    }
    fn admitted(&self, _: &Request) {}
}

impl Admission {
    pub fn new(view: Arc<dyn ClusterView>, options: Options) -> Self {
        Self::build(view, options, Arc::new(Local), false)
    }

    /// As `new`, for a view held by this process on a user's machine (`serve --dev`).
    pub fn local(view: Arc<dyn ClusterView>, options: Options) -> Self {
        Self::build(view, options, Arc::new(Local), true)
    }

    /// As `new`, with the X2 step sent to the decider `route` names (several replicas).
    pub fn with_route(view: Arc<dyn ClusterView>, options: Options, route: Arc<dyn Route>) -> Self {
        Self::build(view, options, route, false)
    }

    fn build(
        view: Arc<dyn ClusterView>,
        options: Options,
        route: Arc<dyn Route>,
        local: bool,
    ) -> Self {
        Admission {
            inner: Arc::new(Inner {
                view,
                options,
                route,
                local,
            }),
        }
    }

    /// The view behind this handler (metrics read object counts from it).
    pub fn view(&self) -> &Arc<dyn ClusterView> {
        &self.inner.view
    }

    /// Whether the cluster view has synced every watched kind (X3): `/readyz`.
    pub fn ready(&self) -> bool {
        self.inner.view.synced()
    }

    /// Judges one AdmissionReview body from `caller` (what a stranger's admitted write may
    /// reserve is bounded: X2, `cluster::trust`). The one entry: decode, the panic guard and
    /// the staging are here and nowhere else. Never panics: bad bodies are a 400 answer with a
    /// message, a fault inside the rules is a denial with code 500 (never an allow).
    ///
    /// The X2 step runs where the route says: here when this replica decides, at the decider
    /// (awaited, within the route's budget) when another replica does.
    pub async fn review<'b>(
        &self,
        endpoint: Endpoint,
        body: &'b [u8],
        caller: &Caller,
    ) -> Answer<'b> {
        let env = match decode(body) {
            Ok(env) => env,
            // docs/robustness.md, O5: a number past an f64 is judged at its field, not refused whole.
            // The quoted copy is this function's own, so what the answer keeps of it is copied.
            Err(Refused::NumberOutOfRange(e)) => match numbers::quote_overflowing_numbers(body) {
                Some(quoted) => match decode(&quoted) {
                    Ok(env) => env.into_owned(),
                    Err(refused) => return Answer::bad_request(refused.message()),
                },
                None => return Answer::bad_request(Refused::NumberOutOfRange(e).message()),
            },
            Err(refused) => return Answer::bad_request(refused.message()),
        };
        // A create may not carry the name yet (generateName): the object's own name is the
        // better label, for the rules and the answer alike.
        let name = match &env.name {
            n if !n.is_empty() => n.clone(),
            _ => Cow::Owned(
                env.object
                    .as_ref()
                    .and_then(|o| o.pointer("/metadata/name"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
        };
        let route = &self.inner.route;
        // Everything up to the X2 step is judged here, without the decision lock.
        let first = catch_unwind(AssertUnwindSafe(|| {
            match self.stage(endpoint, &env, &name) {
                Stage::Done(judged) => Step::Done(judged),
                Stage::Validate(kind, req) => match route.standing() {
                    Here::Decide => {
                        Step::Done(Judged::Verdict(kind, self.validate_here(&req, caller)))
                    }
                    Here::Refuse(why) => Step::Done(Judged::Verdict(kind, unavailable(why))),
                    Here::Forward => {
                        let mut local = self.validate_read_only(&req);
                        if needs_decider(&req, &local, &self.inner.options) {
                            Step::Forward(kind, local, DecisionRequest::new(&req, caller))
                        } else {
                            if !self.inner.view.synced() {
                                local.warn(RuleId::X3, "", VIEW_NOT_READY_WARNING);
                            }
                            Step::Done(Judged::Verdict(kind, local))
                        }
                    }
                },
            }
        }));
        let verdict = match first {
            Ok(Step::Forward(kind, mut local, request)) => {
                let answer = route.forward(request).await;
                answer.merge_into(&mut local);
                Ok(Judged::Verdict(kind, local))
            }
            Ok(Step::Done(judged)) => Ok(judged),
            Err(panic) => Err(panic),
        };
        self.finish(env, name, verdict)
    }

    /// `review` from a trusted caller, driven to its end on this thread: for callers without an
    /// executor (`explain`, tests) on a handler that decides alone, whose review never waits.
    pub fn review_now<'b>(&self, endpoint: Endpoint, body: &'b [u8]) -> Answer<'b> {
        futures::executor::block_on(self.review(endpoint, body, &Caller::Trusted))
    }

    /// Whether a hand-over to the next decider should carry `request`, an admission of the last
    /// TTL: not when this replica's watch has shown its object deleted since, so a released
    /// address does not come back as held (X2; docs/rules.md).
    pub(crate) fn still_holds(&self, request: &DecisionRequest) -> bool {
        let gone = request.read(|req| {
            let key = crate::model::ObjKey::new(req.kind, req.namespace, req.name);
            self.inner.view.shown_gone(&key, &basis_of(req))
        });
        !gone.unwrap_or(false)
    }

    /// The decider's side of a forwarded X2 step: judged and recorded under the decision lock
    /// as a review of this replica's own would be, answered with the view-dependent findings.
    pub fn answer_forwarded(&self, request: &DecisionRequest) -> DecisionAnswer {
        match self.inner.route.standing() {
            Here::Forward => {
                return DecisionAnswer {
                    not_decider: true,
                    ..DecisionAnswer::unavailable(NOT_DECIDER)
                }
            }
            Here::Refuse(why) => return DecisionAnswer::unavailable(why),
            Here::Decide => {}
        }
        if !self.inner.view.synced() {
            return DecisionAnswer::from_verdict(&not_synced(self.inner.local));
        }
        let caller = request.caller();
        let verdict = catch_unwind(AssertUnwindSafe(|| {
            request.read(|req| self.validate_here(req, &caller))
        }));
        match verdict {
            Ok(Ok(v)) => DecisionAnswer::from_verdict(&v),
            Ok(Err(why)) => DecisionAnswer::unavailable(why),
            Err(_) => {
                tracing::error!(kind = %request.kind, "internal fault while deciding a forwarded request");
                DecisionAnswer::unavailable("internal error in the ipam-guard decider; the write is refused to stay safe, retry it")
            }
        }
    }

    fn finish<'b>(
        &self,
        env: Envelope<'b>,
        name: Cow<'b, str>,
        verdict: std::thread::Result<Judged>,
    ) -> Answer<'b> {
        let (response, served) = match &verdict {
            Ok(Judged::Untouched) => (allow(&env.uid), None),
            Ok(Judged::Verdict(kind, v)) => (respond(&env.uid, &name, *kind, v), Some(*kind)),
            Err(_) => {
                tracing::error!(uid = %env.uid, kind = %env.kind, "internal fault while judging a review");
                (
                    fault(&env.uid, 500, "InternalError", "internal error in ipam-guard while judging this request; the write is refused to stay safe, retry it"),
                    Kind::from_group_kind(&env.group, &env.kind),
                )
            }
        };
        let body = body(env.api_version, &response);
        let said = Said::of(&response);
        let summary = summarize(env, name, served, said, &verdict);
        Answer {
            http_status: 200,
            body,
            summary: Some(summary),
        }
    }
}

/// Where the first, synchronous part of `review` left a review.
enum Step {
    Done(Judged),
    /// The X2 step is the decider's: the follower's own verdict, and what to send.
    Forward(Kind, crate::field::Verdict, DecisionRequest),
}

#[cfg(test)]
mod relabel_tests;
#[cfg(test)]
mod reuse_tests;
#[cfg(test)]
mod routing_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::StaticView;
    use crate::field::{DenyReason, FieldError, Verdict};
    use crate::kinds::Kind;
    use crate::model::Projection;
    use serde_json::Value;
    use status::{denial_status, MAX_SHOWN};

    fn admission() -> Admission {
        Admission::new(Arc::new(StaticView::empty()), Options::default())
    }

    fn body(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn bad_bodies_are_400_with_a_message() {
        let a = admission();
        for (input, needle) in [
            (b"not json".to_vec(), "not valid JSON"),
            (b"[]".to_vec(), "expected a JSON object"),
            (
                body(&json!({"apiVersion": "v1", "kind": "Pod"})),
                "unsupported AdmissionReview apiVersion",
            ),
            (
                body(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "Pod"})),
                "not an AdmissionReview",
            ),
            (
                body(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})),
                "no request",
            ),
            (
                body(
                    &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}),
                ),
                "no uid",
            ),
            (
                body(
                    &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": {"uid": "u", "kind": {"group": "g", "version": "v", "kind": "K"}, "operation": "EXPLODE"}}),
                ),
                "operation",
            ),
        ] {
            let ans = a.review_now(Endpoint::Validate, &input);
            assert_eq!(ans.http_status, 400, "{needle}");
            let msg: Value = serde_json::from_slice(&ans.body).unwrap();
            assert!(msg["message"].as_str().unwrap().contains(needle), "{msg}");
            assert!(ans.summary.is_none());
        }
    }

    #[test]
    fn a_body_that_is_not_utf8_is_answered_as_the_byte_reader_answers_it() {
        let a = admission();
        let claim = json!({"metadata": {"name": "x", "namespace": "ns", "labels": {"k": "LABEL"},
            "managedFields": [{"manager": "MANAGER"}]},
            "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}}});
        let text = String::from_utf8(review_of("IPAddressClaim", "CREATE", claim)).unwrap();
        let with = |placeholder: &str| {
            let at = text.find(placeholder).unwrap();
            let mut bytes = text.as_bytes().to_vec();
            bytes.splice(at..at + placeholder.len(), *b"a\xffb");
            bytes
        };

        // In a string the rules keep: refused, in serde_json's words for the same bytes.
        let bad_label = with("LABEL");
        let ans = a.review_now(Endpoint::Validate, &bad_label);
        assert_eq!(ans.http_status, 400);
        let msg: Value = serde_json::from_slice(&ans.body).unwrap();
        let want = serde_json::from_slice::<Value>(&bad_label).unwrap_err();
        assert_eq!(
            msg["message"],
            format!("request body is not valid JSON: {want}"),
            "{msg}"
        );

        // In managedFields, which nothing keeps: judged, as before.
        let sent = with("MANAGER");
        let ans = a.review_now(Endpoint::Validate, &sent);
        assert_eq!(
            ans.http_status,
            200,
            "{}",
            String::from_utf8_lossy(&ans.body)
        );
    }

    #[test]
    fn unknown_kinds_are_allowed_untouched_and_uid_echoed() {
        let a = admission();
        let review = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
            "request": {"uid": "abc", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "operation": "CREATE", "name": "x", "namespace": "ns", "object": {"spec": {}}}});
        let sent = body(&review);
        let ans = a.review_now(Endpoint::Validate, &sent);
        assert_eq!(ans.http_status, 200);
        let out: Value = serde_json::from_slice(&ans.body).unwrap();
        assert_eq!(out["apiVersion"], "admission.k8s.io/v1beta1");
        assert_eq!(out["response"], json!({"uid": "abc", "allowed": true}));
    }

    #[test]
    fn create_without_object_is_denied_not_allowed() {
        let a = admission();
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "kind": "IPAddress"},
                "operation": "CREATE", "name": "x", "namespace": "ns", "object": "oops"}});
        let out: Value =
            serde_json::from_slice(&a.review_now(Endpoint::Validate, &body(&review)).body).unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 422);
        assert_eq!(
            out["response"]["status"]["details"]["causes"][0]["field"],
            "object"
        );
    }

    /// A view that has not finished its first list (X3).
    struct Unsynced(StaticView);

    impl ClusterView for Unsynced {
        fn synced(&self) -> bool {
            false
        }
        fn object_counts(&self) -> Vec<(Kind, usize)> {
            self.0.object_counts()
        }
        fn read(&self) -> Box<dyn std::ops::Deref<Target = crate::index::Index> + '_> {
            self.0.read()
        }
        /// Reads only, as the static view it wraps.
        fn reserve(&self, f: &mut dyn FnMut(&crate::index::Index) -> Option<Projection>) {
            self.0.reserve(f);
        }
        fn reserve_as(
            &self,
            caller: &Caller,
            basis: &crate::cluster::Basis,
            f: &mut dyn FnMut(&crate::index::Index) -> Option<Projection>,
        ) {
            self.0.reserve_as(caller, basis, f);
        }
    }

    fn review_of(kind: &str, op: &str, object: Value) -> Vec<u8> {
        body(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": "ipam.cluster.x-k8s.io", "version": "v1beta2", "kind": kind},
                "operation": op, "name": "x", "namespace": "ns", "object": object}}),
        )
    }

    #[test]
    fn x3_view_not_synced_is_503_for_rules_that_deny_from_the_view() {
        let a = Admission::new(Arc::new(Unsynced(StaticView::empty())), Options::default());
        let address = json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"address": "10.0.0.5", "prefix": 24,
            "claimRef": {"name": "c"}, "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}}});
        let out: Value = serde_json::from_slice(
            &a.review_now(
                Endpoint::Validate,
                &review_of("IPAddress", "CREATE", address),
            )
            .body,
        )
        .unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 503);
        assert_eq!(out["response"]["status"]["reason"], "ServiceUnavailable");
        assert!(out["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("retry"));

        // A claim create only warns from the view: allowed, with the not-ready warning instead of C3's.
        let claim = json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {
            "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "missing"}}});
        let out: Value = serde_json::from_slice(
            &a.review_now(
                Endpoint::Validate,
                &review_of("IPAddressClaim", "CREATE", claim),
            )
            .body,
        )
        .unwrap();
        assert_eq!(out["response"]["allowed"], true, "{out:#}");
        let warnings = out["response"]["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0]
            .as_str()
            .unwrap()
            .contains("has not finished reading the cluster"));
        assert!(warnings[0].as_str().unwrap().ends_with(" [ipam-guard X3]"));
    }

    #[test]
    fn a_body_read_again_with_its_numbers_quoted_is_summarized_from_its_own_copy() {
        let a = admission();
        let sent = review_of(
            "IPAddress",
            "CREATE",
            json!({"metadata": {"name": "x", "namespace": "ns"},
            "spec": {"address": "10.0.0.5", "prefix": 24}}),
        );
        // A prefix past an f64 (docs/robustness.md, O5): decoded a second time from a quoted copy.
        let text = String::from_utf8(sent)
            .unwrap()
            .replace("\"prefix\":24", "\"prefix\":1e400");
        assert!(text.contains("1e400"));
        let answer = a.review_now(Endpoint::Validate, text.as_bytes());
        assert_eq!(answer.http_status, 200);
        let o = answer.summary.expect("a review");
        assert!(!o.allowed);
        assert_eq!((&*o.uid, &*o.kind, &*o.name), ("u", "IPAddress", "x"));
        assert_eq!(o.namespace.as_deref(), Some("ns"));
        assert!(matches!(o.uid, Cow::Owned(_)), "the quoted copy is gone");
    }

    #[test]
    fn summary_names_the_denying_rules_or_else_the_warning_ones() {
        let a = admission();
        let claim = |ns: Option<&str>| {
            let mut pool_ref = json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "missing"});
            if let Some(ns) = ns {
                pool_ref["namespace"] = json!(ns);
            }
            json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"poolRef": pool_ref}})
        };
        let sent = review_of("IPAddressClaim", "CREATE", claim(Some("other")));
        let denied = a.review_now(Endpoint::Validate, &sent);
        let o = denied.summary.unwrap();
        assert!(!o.allowed);
        assert_eq!(
            o.rules,
            vec!["C2".to_string()],
            "C3's warning rides along but did not deny"
        );
        let sent = review_of("IPAddressClaim", "CREATE", claim(None));
        let warned = a.review_now(Endpoint::Validate, &sent);
        let o = warned.summary.unwrap();
        assert!(o.allowed);
        assert_eq!(o.rules, vec!["C3".to_string()]);
        assert_eq!(o.warnings, 1);
    }

    #[test]
    fn summary_names_who_asked_only_when_the_log_line_prints_it() {
        let a = admission();
        let asked = |kind: &str, object: Value| {
            let mut r: Value = serde_json::from_slice(&review_of(kind, "CREATE", object)).unwrap();
            if kind == "InClusterIPPool" {
                r["request"]["kind"]["version"] = json!("v1alpha2");
            }
            r["request"]["userInfo"] =
                json!({"username": "alice", "groups": ["team-a", "system:authenticated"]});
            let sent = body(&r);
            let o = a.review_now(Endpoint::Validate, &sent).summary.unwrap();
            let groups: Vec<String> = o.groups.iter().map(|g| g.to_string()).collect();
            (o.allowed, o.warnings, (o.user.to_string(), groups))
        };
        let claim = |pool_ns: Option<&str>| {
            let mut pool_ref = json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "missing"});
            if let Some(ns) = pool_ns {
                pool_ref["namespace"] = json!(ns);
            }
            json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"poolRef": pool_ref}})
        };
        let alice = (
            "alice".to_string(),
            vec!["team-a".to_string(), "system:authenticated".to_string()],
        );
        let (allowed, _, who) = asked("IPAddressClaim", claim(Some("other")));
        assert!(!allowed);
        assert_eq!(who, alice);
        let (allowed, warnings, who) = asked("IPAddressClaim", claim(None));
        assert!(allowed && warnings == 1);
        assert_eq!(who, alice);
        let pool = json!({"metadata": {"name": "x", "namespace": "ns"},
            "spec": {"addresses": ["10.0.0.10-10.0.0.20"], "prefix": 24, "gateway": "10.0.0.1"}});
        let (allowed, warnings, who) = asked("InClusterIPPool", pool);
        assert!(allowed && warnings == 0);
        assert_eq!(who, (String::new(), Vec::new()));
    }

    #[test]
    fn status_text_follows_new_invalid_and_new_forbidden() {
        let mut v = Verdict::default();
        v.deny(FieldError::invalid(
            RuleId::P2,
            "spec.addresses[0]",
            "10.0.0.0/33",
            "bad",
        ));
        let s = denial_status("pool-a", Kind::InClusterIPPool, &v);
        assert_eq!(s.code, 422);
        assert_eq!(
            s.message,
            r#"InClusterIPPool.ipam.cluster.x-k8s.io "pool-a" is invalid: spec.addresses[0]: Invalid value: "10.0.0.0/33": bad [ipam-guard P2]"#
        );
        v.deny(FieldError::required(RuleId::P1, "spec.gateway", ""));
        let s = denial_status("pool-a", Kind::InClusterIPPool, &v);
        assert!(s.message.ends_with(r#"is invalid: [spec.addresses[0]: Invalid value: "10.0.0.0/33": bad [ipam-guard P2], spec.gateway: Required value [ipam-guard P1]]"#));
        let details = s.details.unwrap();
        assert_eq!(details.causes.len(), 2);
        assert_eq!(
            details.causes[0].message,
            r#"Invalid value: "10.0.0.0/33": bad [ipam-guard P2]"#
        );
        assert_eq!(details.causes[1].message, "Required value [ipam-guard P1]");
        assert_eq!(details.kind, "InClusterIPPool");
        assert_eq!(details.group, "ipam.cluster.x-k8s.io");

        let mut v = Verdict {
            reason: DenyReason::Forbidden,
            ..Verdict::default()
        };
        v.deny(FieldError::forbidden(
            RuleId::P9,
            "metadata.name",
            "Pool has IPAddresses allocated.",
        ));
        let s = denial_status("pool-a", Kind::InClusterIPPool, &v);
        assert_eq!(s.code, 403);
        assert_eq!(s.reason, "Forbidden");
        assert_eq!(
            s.message,
            r#"inclusterippools.ipam.cluster.x-k8s.io "pool-a" is forbidden: Pool has IPAddresses allocated. [ipam-guard P9]"#
        );
        assert_eq!(
            s.details.unwrap().causes[0].message,
            "Forbidden: Pool has IPAddresses allocated. [ipam-guard P9]"
        );
    }

    #[test]
    fn lines_past_the_cap_name_the_rules_they_stand_for() {
        let mut v = Verdict::default();
        for i in 0..MAX_SHOWN + 3 {
            let rule = if i < MAX_SHOWN + 1 {
                RuleId::P2
            } else {
                RuleId::P5
            };
            v.deny(FieldError::invalid(
                rule,
                format!("spec.addresses[{i}]"),
                "x",
                "bad",
            ));
            v.warn(
                if i % 2 == 0 { RuleId::P7 } else { RuleId::A4 },
                "spec.x",
                "w",
            );
        }
        let s = denial_status("pool-a", Kind::InClusterIPPool, &v);
        let causes = s.details.unwrap().causes;
        assert_eq!(causes.len(), MAX_SHOWN + 1);
        assert_eq!(
            causes[MAX_SHOWN].message,
            "Too many: 3 more problems not shown; `ipam-guard check` lists them all [ipam-guard P2, P5]"
        );
        assert!(s
            .message
            .ends_with(", and 3 more problems not shown [ipam-guard P2, P5]]"));
        let response =
            serde_json::to_value(respond("u", "pool-a", Kind::InClusterIPPool, &v)).unwrap();
        let warnings = response["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), MAX_SHOWN + 1);
        assert_eq!(warnings[0], "spec.x: w [ipam-guard P7]");
        assert_eq!(
            warnings[MAX_SHOWN],
            "and 3 more warnings not shown [ipam-guard A4, P7]"
        );
    }
}
