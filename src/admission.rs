//! AdmissionReview in and out: decode, dispatch to the rules, encode Status and patches.
//!
//! The envelope is read by hand from a `serde_json::Value` rather than through
//! `kube::core::admission::AdmissionRequest`: that type decodes the object's metadata as a typed
//! `ObjectMeta` (one wrong-typed label would turn a field problem into a 400 for the whole review),
//! and its response writes `patch` as an array of numbers where Kubernetes documents a base64
//! string. The Status we send is kube's own `Status` type.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use base64::Engine as _;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::Status;
use serde_json::{json, Map, Value};

use crate::cluster::{Caller, ClusterView};
use crate::kinds::Kind;
use crate::model::{project, review_body, Operation, Projection, Request};
use crate::rules::field::{DenyReason, FieldError, Verdict};
use crate::rules::{self, Ctx, Options};

mod decision;
pub use decision::{DecisionAnswer, DecisionRequest, Here, Route, WireError, WireWarning};

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

/// What the server needs to know about one decision, for logs and metrics.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub uid: String,
    pub group: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub operation: String,
    pub allowed: bool,
    /// Status code in the answer (0 when allowed without a status).
    pub code: u16,
    /// Rule ids behind the denial, or behind the warnings when allowed.
    pub rules: Vec<String>,
    pub warnings: usize,
    pub patched: bool,
    pub dry_run: bool,
    /// Who asked (`request.userInfo`), for the log line of a denial or a warning.
    pub user: String,
    pub groups: Vec<String>,
}

/// An HTTP answer: status and JSON body. `outcome` is `None` when the body was not a review.
#[derive(Debug, Clone)]
pub struct Answer {
    pub http_status: u16,
    pub body: Vec<u8>,
    pub outcome: Option<Outcome>,
}

impl Answer {
    /// A 400 with a JSON message: the body was not an AdmissionReview we can answer.
    fn bad_request(message: impl Into<String>) -> Answer {
        let body = json!({ "message": message.into() });
        Answer {
            http_status: 400,
            body: serde_json::to_vec(&body).unwrap_or_default(),
            outcome: None,
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
    /// Set when replicas share one decider (SPEC X2 across replicas); None decides locally.
    route: Option<Arc<dyn Route>>,
}

/// The envelope fields we read, borrowed from the parsed body.
struct Envelope {
    api_version: String,
    uid: String,
    group: String,
    version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    operation: String,
    object: Option<Value>,
    old_object: Option<Value>,
    dry_run: bool,
    user: String,
    groups: Vec<String>,
}

impl Admission {
    pub fn new(view: Arc<dyn ClusterView>, options: Options) -> Self {
        Admission {
            inner: Arc::new(Inner {
                view,
                options,
                route: None,
            }),
        }
    }

    /// As `new`, with the X2 step sent to the decider `route` names (several replicas).
    pub fn with_route(view: Arc<dyn ClusterView>, options: Options, route: Arc<dyn Route>) -> Self {
        Admission {
            inner: Arc::new(Inner {
                view,
                options,
                route: Some(route),
            }),
        }
    }

    /// The view behind this handler (metrics read object counts from it).
    pub fn view(&self) -> &Arc<dyn ClusterView> {
        &self.inner.view
    }

    /// Whether the cluster view has synced every watched kind (SPEC X3): `/readyz`.
    pub fn ready(&self) -> bool {
        self.inner.view.synced()
    }

    /// Judges one AdmissionReview body. Never panics: bad bodies are a 400 answer with a message,
    /// a fault inside the rules is a denial with code 500 (never an allow).
    ///
    /// With a route (several replicas), this is for callers that cannot wait: the X2 step is
    /// decided locally only when this replica is the decider, else refused with 503. The server
    /// calls `review_routed`.
    pub fn review(&self, endpoint: Endpoint, body: &[u8]) -> Answer {
        self.review_as(endpoint, body, &Caller::Trusted)
    }

    /// As `review`, for a request from `caller`: what a stranger's admitted write may reserve is
    /// bounded (SPEC X2, `cluster::trust`).
    pub fn review_as(&self, endpoint: Endpoint, body: &[u8], caller: &Caller) -> Answer {
        let env = match decode(body) {
            Ok(env) => env,
            Err(msg) => return Answer::bad_request(msg),
        };
        let verdict = catch_unwind(AssertUnwindSafe(|| match self.stage(endpoint, &env) {
            Stage::Done(judged) => judged,
            Stage::Validate(kind, req) => Judged::Verdict(kind, self.validate_here(&req, caller)),
        }));
        self.finish(&env, verdict)
    }

    /// `review_as`, sending the X2 step to the elected decider when this replica is not it; the
    /// decider bounds what `caller` may reserve as this replica would.
    pub async fn review_routed(&self, endpoint: Endpoint, body: &[u8], caller: &Caller) -> Answer {
        let Some(route) = &self.inner.route else {
            return self.review_as(endpoint, body, caller);
        };
        let env = match decode(body) {
            Ok(env) => env,
            Err(msg) => return Answer::bad_request(msg),
        };
        // Everything up to the X2 step is judged here, without the decision lock.
        let first = catch_unwind(AssertUnwindSafe(|| match self.stage(endpoint, &env) {
            Stage::Done(judged) => Err(judged),
            Stage::Validate(kind, req) => match route.standing() {
                Here::Decide => Err(Judged::Verdict(kind, self.validate_here(&req, caller))),
                Here::Refuse(why) => Err(Judged::Verdict(kind, unavailable(why))),
                Here::Forward => {
                    let mut local = self.validate_read_only(&req);
                    if needs_decider(&req, &local, &self.inner.options) {
                        Ok((
                            kind,
                            local,
                            DecisionRequest::from_request(&req).from(caller),
                        ))
                    } else {
                        if !self.inner.view.synced() {
                            local.warn("X3", "", VIEW_NOT_READY_WARNING);
                        }
                        Err(Judged::Verdict(kind, local))
                    }
                }
            },
        }));
        let verdict = match first {
            Ok(Ok((kind, mut local, request))) => {
                let answer = route.forward(request).await;
                answer.merge_into(&mut local, VIEW_RULES);
                Ok(Judged::Verdict(kind, local))
            }
            Ok(Err(judged)) => Ok(judged),
            Err(panic) => Err(panic),
        };
        self.finish(&env, verdict)
    }

    /// The decider's side of a forwarded decision: judge under the decision lock, record what is
    /// admitted as pending, answer with the view-dependent findings.
    pub fn decide_for_peer(&self, request: &DecisionRequest) -> DecisionAnswer {
        let (_, req) = match request.request() {
            Ok(r) => r,
            Err(why) => return DecisionAnswer::unavailable(why),
        };
        match self.inner.route.as_ref().map(|r| r.standing()) {
            Some(Here::Forward) => {
                return DecisionAnswer {
                    not_decider: true,
                    ..DecisionAnswer::unavailable(NOT_DECIDER)
                }
            }
            Some(Here::Refuse(why)) => return DecisionAnswer::unavailable(why),
            Some(Here::Decide) | None => {}
        }
        if !self.inner.view.synced() {
            return DecisionAnswer::from_verdict(&not_synced(), VIEW_RULES);
        }
        let caller = request.caller();
        let verdict = catch_unwind(AssertUnwindSafe(|| self.validate_here(&req, &caller)));
        match verdict {
            Ok(v) => DecisionAnswer::from_verdict(&v, VIEW_RULES),
            Err(_) => {
                tracing::error!(kind = %request.kind, "internal fault while deciding a forwarded request");
                DecisionAnswer::unavailable("internal error in the ipam-guard decider; the write is refused to stay safe, retry it")
            }
        }
    }

    fn finish(&self, env: &Envelope, verdict: std::thread::Result<Judged>) -> Answer {
        let outcome_base = Outcome {
            uid: env.uid.clone(),
            group: env.group.clone(),
            kind: env.kind.clone(),
            namespace: env.namespace.clone(),
            name: env.name.clone(),
            operation: env.operation.clone(),
            dry_run: env.dry_run,
            user: env.user.clone(),
            groups: env.groups.clone(),
            ..Outcome::default()
        };
        let response = match &verdict {
            Ok(Judged::Untouched) => allow(&env.uid),
            Ok(Judged::Verdict(kind, v)) => respond(env, *kind, v),
            Err(_) => {
                tracing::error!(uid = %env.uid, kind = %env.kind, "internal fault while judging a review");
                fault(&env.uid, 500, "InternalError", "internal error in ipam-guard while judging this request; the write is refused to stay safe, retry it")
            }
        };
        let mut outcome = outcome_base;
        fill_outcome(&mut outcome, &response, &verdict_rules(&verdict));
        let review = json!({
            "apiVersion": env.api_version,
            "kind": "AdmissionReview",
            "response": response,
        });
        Answer {
            http_status: 200,
            body: serde_json::to_vec(&review).unwrap_or_default(),
            outcome: Some(outcome),
        }
    }

    /// Everything before the X2 step: not ours, a broken request, a mutation, or a view that
    /// has not synced end here; a validation goes on to the decision.
    fn stage<'e>(&self, endpoint: Endpoint, env: &'e Envelope) -> Stage<'e> {
        let Some(kind) = Kind::from_group_kind(&env.group, &env.kind) else {
            return Stage::Done(Judged::Untouched);
        };
        let Some(operation) = Operation::parse(&env.operation) else {
            return Stage::Done(Judged::Untouched);
        };
        let req = Request {
            operation,
            kind,
            version: &env.version,
            namespace: env.namespace.as_deref(),
            name: &env.name,
            object: env.object.as_ref(),
            old_object: env.old_object.as_ref(),
            dry_run: env.dry_run,
        };
        if let Some(err) = shape_error(&req) {
            let mut v = Verdict::default();
            v.deny(err);
            return Stage::Done(Judged::Verdict(kind, v));
        }
        match endpoint {
            Endpoint::Mutate => Stage::Done(Judged::Verdict(kind, rules::mutate(&req))),
            Endpoint::Validate => {
                if !self.inner.view.synced()
                    && denies_from_view(kind, operation, &self.inner.options)
                {
                    return Stage::Done(Judged::Verdict(kind, not_synced()));
                }
                Stage::Validate(kind, req)
            }
        }
    }

    /// The X2 step on this replica: judge and record what was admitted in one step, so two
    /// racing creates of overlapping pools cannot both pass. With a route, only the decider gets
    /// here, and a decision that ends after its fence closed is refused (it may have been paused
    /// mid-decision while another replica took over).
    fn validate_here(&self, req: &Request, caller: &Caller) -> Verdict {
        let route = self.inner.route.as_deref();
        if let Some(Here::Forward) = route.map(Route::standing) {
            return unavailable(NOT_DECIDER.to_string());
        }
        let synced = self.inner.view.synced();
        let mut verdict = Verdict::default();
        let options = self.inner.options;
        self.inner.view.decide_as(caller, &mut |index| {
            verdict = rules::validate(req, &Ctx { index, options });
            admitted(req, &verdict)
        });
        if let Some(route) = route {
            match route.standing() {
                Here::Decide => {}
                Here::Forward => return unavailable(NOT_DECIDER.to_string()),
                Here::Refuse(why) => return unavailable(why),
            }
            if admitted(req, &verdict).is_some() {
                route.admitted(DecisionRequest::from_request(req));
            }
        }
        if !synced {
            // What the view-reading rules said came from a partial view: drop it, say so.
            verdict.warnings.retain(|w| !VIEW_RULES.contains(&w.rule));
            verdict.warn("X3", "", VIEW_NOT_READY_WARNING);
        }
        verdict
    }

    /// A follower's own reading: every rule against its view, nothing recorded. The decider
    /// redoes the view-dependent part.
    fn validate_read_only(&self, req: &Request) -> Verdict {
        let index = self.inner.view.read();
        let mut verdict = rules::validate(
            req,
            &Ctx {
                index: &index,
                options: self.inner.options,
            },
        );
        if !self.inner.view.synced() {
            // A partial view: the decider (synced, or it refuses) answers for the view rules.
            verdict.warnings.retain(|w| !VIEW_RULES.contains(&w.rule));
        }
        verdict
    }
}

/// Where `stage` left a review.
enum Stage<'e> {
    Done(Judged),
    Validate(Kind, Request<'e>),
}

/// Whether a follower must send this request to the decider: when nothing but the view can deny
/// it (a denial for any other reason records nothing and needs no lock) and its answer reads the
/// view or it records a pending entry.
fn needs_decider(req: &Request, local: &Verdict, options: &Options) -> bool {
    if local.errors.iter().any(|e| !VIEW_RULES.contains(&e.rule)) {
        return false;
    }
    denies_from_view(req.kind, req.operation, options)
        || matches!(req.operation, Operation::Create | Operation::Update)
            && !req.dry_run
            && project(req.kind, req.object.unwrap_or(&Value::Null)).is_some()
}

const NOT_DECIDER: &str =
    "this ipam-guard replica is not the decider (the decider lease moved); retry";

fn unavailable(why: String) -> Verdict {
    Verdict {
        unavailable: Some(why),
        ..Verdict::default()
    }
}

/// What an allowed, real (not dry-run) create or update adds to the view before the watch shows it.
fn admitted(req: &Request, verdict: &Verdict) -> Option<Projection> {
    if req.dry_run || !verdict.allowed() {
        return None;
    }
    match req.operation {
        Operation::Create | Operation::Update => project(req.kind, req.object?),
        Operation::Delete | Operation::Connect => None,
    }
}

/// Rules that read other objects through the view (SPEC X1; `catalogue::Rule::reads_view`).
const VIEW_RULES: &[&str] = &[
    "A6", "A7", "A8", "A9", "C3", "P8", "P9", "P10", "MP4", "MC4", "MA4", "S5", "V1",
];

const VIEW_NOT_READY_WARNING: &str =
    "ipam-guard has not finished reading the cluster yet; checks against other objects were skipped";

/// Whether a request of this kind and operation can be denied by a rule that reads the view.
/// Until the view has synced such requests get a 503 (SPEC X3): a partial view would let a
/// duplicate or an overlap through.
fn denies_from_view(kind: Kind, op: Operation, options: &Options) -> bool {
    use Kind::*;
    let overlap = options.overlap_scope != crate::cli::OverlapScope::Off;
    match (kind, op) {
        (IPAddressClaim, Operation::Create) => options.require_existing_pool,
        (IPAddress | Metal3IPAddress, Operation::Create) => true,
        (InClusterIPPool | GlobalInClusterIPPool | Metal3IPPool, Operation::Update) => true,
        (InClusterIPPool | GlobalInClusterIPPool | Metal3IPPool, Operation::Delete) => true,
        (InClusterIPPool | GlobalInClusterIPPool | Metal3IPPool, Operation::Create) => overlap,
        (SpiderIPPool, Operation::Create | Operation::Update) => overlap,
        _ => false,
    }
}

fn not_synced() -> Verdict {
    Verdict {
        unavailable: Some(
            "ipam-guard's view of pools and addresses is not in sync with the cluster (it is still \
             reading it, or a watch on it failed or went silent), so it cannot check this write \
             against other objects; retry in a few seconds. If this persists, check the ipam-guard \
             pods' logs, their RBAC (get/list/watch on the IPAM kinds) and that they reach the API server."
                .to_string(),
        ),
        ..Verdict::default()
    }
}

enum Judged {
    /// Not ours (unknown kind or operation): allowed, nothing added.
    Untouched,
    Verdict(Kind, Verdict),
}

fn verdict_rules(v: &std::thread::Result<Judged>) -> Vec<String> {
    match v {
        // The rules behind the decision: a denial's, or (when allowed) the warnings'. A warning
        // that rides along with a denial is not counted as a denial rule.
        Ok(Judged::Verdict(_, v)) => {
            let mut ids: Vec<&str> = if v.errors.is_empty() {
                v.warnings.iter().map(|w| w.rule).collect()
            } else {
                v.errors.iter().map(|e| e.rule).collect()
            };
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().map(str::to_string).collect()
        }
        _ => Vec::new(),
    }
}

fn fill_outcome(o: &mut Outcome, response: &Value, rules: &[String]) {
    o.allowed = response["allowed"].as_bool().unwrap_or(false);
    o.code = response["status"]["code"].as_u64().unwrap_or(0) as u16;
    o.warnings = response["warnings"].as_array().map_or(0, Vec::len);
    o.patched = response.get("patch").is_some();
    o.rules = rules.to_vec();
}

/// Reads the envelope. Everything that keeps us from answering (not JSON, not a review, no uid)
/// is a 400 whose message says what was wrong.
fn decode(body: &[u8]) -> Result<Envelope, String> {
    let parsed = review_body::parse(body).or_else(|e| {
        // SPEC ROBUSTNESS O5: a number past an f64 is judged at its field, not refused whole.
        match crate::model::numbers::quote_overflowing_numbers(body) {
            Some(quoted) if e.to_string().starts_with("number out of range") => {
                review_body::parse(&quoted)
            }
            _ => Err(e),
        }
    });
    let mut review: Value = parsed.map_err(|e| format!("request body is not valid JSON: {e}"))?;
    let Some(top) = review.as_object_mut() else {
        return Err("request body is not an AdmissionReview: expected a JSON object".into());
    };
    let api_version = match top.get("apiVersion").and_then(Value::as_str) {
        Some(v @ ("admission.k8s.io/v1" | "admission.k8s.io/v1beta1")) => v.to_string(),
        Some(other) => {
            return Err(format!(
                "unsupported AdmissionReview apiVersion {other:?}: expected admission.k8s.io/v1 or admission.k8s.io/v1beta1"
            ))
        }
        None => return Err("request body is not an AdmissionReview: apiVersion is missing".into()),
    };
    match top.get("kind").and_then(Value::as_str) {
        Some("AdmissionReview") => {}
        Some(other) => {
            return Err(format!(
                "request body is a {other:?}, not an AdmissionReview"
            ))
        }
        None => return Err("request body is not an AdmissionReview: kind is missing".into()),
    }
    let Some(Value::Object(mut req)) = top.remove("request") else {
        return Err("AdmissionReview has no request object".into());
    };
    let uid = match req.get("uid") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(
                "AdmissionReview request has no uid: an answer could not be matched to it".into(),
            )
        }
    };
    let str_field = |req: &Map<String, Value>, k: &str| -> Result<String, String> {
        match req.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("AdmissionReview request.{k} must be a string")),
        }
    };
    let gvk = req.get("kind").cloned().unwrap_or(Value::Null);
    let Some(gvk) = gvk.as_object() else {
        return Err(
            "AdmissionReview request.kind must be an object with group, version and kind".into(),
        );
    };
    let gvk_field = |k: &str| -> Result<String, String> {
        match gvk.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("AdmissionReview request.kind.{k} must be a string")),
        }
    };
    let (group, version, kind) = (
        gvk_field("group")?,
        gvk_field("version")?,
        gvk_field("kind")?,
    );
    if kind.is_empty() {
        return Err("AdmissionReview request.kind.kind is missing".into());
    }
    let operation = str_field(&req, "operation")?;
    if Operation::parse(&operation).is_none() {
        return Err(format!(
            "AdmissionReview request.operation {operation:?} is not one of CREATE, UPDATE, DELETE, CONNECT"
        ));
    }
    let namespace = Some(str_field(&req, "namespace")?).filter(|s| !s.is_empty());
    let name = str_field(&req, "name")?;
    let dry_run = match req.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("AdmissionReview request.dryRun must be a boolean".into()),
    };
    let take = |req: &mut Map<String, Value>, k: &str| match req.remove(k) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v),
    };
    let object = take(&mut req, "object");
    let old_object = take(&mut req, "oldObject");
    // Only for logs: a userInfo of the wrong shape is not a reason to refuse the review.
    let user_info = req.get("userInfo");
    let user = user_info
        .and_then(|u| u.get("username"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let groups = user_info
        .and_then(|u| u.get("groups"))
        .and_then(Value::as_array)
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    // A create may not carry the name yet (generateName): the object's own name is the better label.
    let name = if name.is_empty() {
        object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    } else {
        name
    };
    Ok(Envelope {
        api_version,
        uid,
        group,
        version,
        kind,
        namespace,
        name,
        operation,
        object,
        old_object,
        dry_run,
        user,
        groups,
    })
}

/// Checks the request carries the objects its operation needs, in a shape the rules can read.
/// A broken request is denied with a cause at the offending field, never allowed.
fn shape_error(req: &Request) -> Option<FieldError> {
    let need = |v: Option<&Value>, field: &str| -> Option<FieldError> {
        match v {
            None => Some(FieldError::required(
                "REQ",
                field,
                format!("a {} request must carry {field}", req.operation.as_str()),
            )),
            Some(Value::Object(_)) => None,
            Some(_) => Some(FieldError::invalid(
                "REQ",
                field,
                "(not an object)",
                "must be a JSON object",
            )),
        }
    };
    match req.operation {
        Operation::Create => need(req.object, "object"),
        Operation::Update => {
            need(req.object, "object").or_else(|| need(req.old_object, "oldObject"))
        }
        Operation::Delete => need(req.old_object, "oldObject"),
        Operation::Connect => None,
    }
}

fn allow(uid: &str) -> Value {
    json!({ "uid": uid, "allowed": true })
}

fn fault(uid: &str, code: u16, reason: &str, message: &str) -> Value {
    let status = Status {
        status: Some(StatusSummary::Failure),
        code,
        message: message.to_string(),
        reason: reason.to_string(),
        metadata: None,
        details: None,
    };
    json!({ "uid": uid, "allowed": false, "status": status })
}

/// Builds the `response` of a review from a verdict (SPEC §8).
fn respond(env: &Envelope, kind: Kind, v: &Verdict) -> Value {
    let mut response = if let Some(why) = &v.unavailable {
        fault(&env.uid, 503, "ServiceUnavailable", why)
    } else if v.errors.is_empty() {
        allow(&env.uid)
    } else {
        json!({ "uid": env.uid, "allowed": false, "status": denial_status(&env.name, kind, v) })
    };
    if !v.warnings.is_empty() {
        let mut warnings: Vec<String> = v
            .warnings
            .iter()
            .take(MAX_SHOWN)
            .map(|w| signed(w, [w.rule]))
            .collect();
        if let Some(hidden) = v.warnings.get(MAX_SHOWN..) {
            warnings.push(signed(
                format_args!("and {} more warnings not shown", hidden.len()),
                hidden.iter().map(|w| w.rule),
            ));
        }
        response["warnings"] = json!(warnings);
    }
    if v.allowed() && !v.patch.is_empty() {
        let ops: Vec<Value> = v
            .patch
            .iter()
            .map(|op| json!({ "op": "add", "path": op.path, "value": op.value }))
            .collect();
        let bytes = serde_json::to_vec(&ops).unwrap_or_default();
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    response
}

/// At most this many causes, and warnings, go into one answer; the rest are counted. A 400 KiB
/// pool of 100k bad entries made a 24 MB answer and 250 MB of transient memory, so a few such
/// requests could get the webhook OOM-killed (tests/hostile_regressions.rs). `ipam-guard check`
/// still lists every problem.
const MAX_SHOWN: usize = 100;

/// The one place that signs what a user reads through kubectl (SPEC §8): a cause, a warning or
/// a 403 message ends with ` [ipam-guard <ID>]`, so a reader knows which component and which
/// rule spoke (a bare `spec.addresses[0]: …` reads like a CRD schema error). A line that stands
/// for several findings (the count past the cap) names each of their rules once.
fn signed<'a>(text: impl std::fmt::Display, rules: impl IntoIterator<Item = &'a str>) -> String {
    let mut ids: Vec<&str> = rules.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    format!("{text} [ipam-guard {}]", ids.join(", "))
}

/// The Status of a denial, as apimachinery's `NewInvalid` / `NewForbidden` write it, with one
/// cause per problem (up to `MAX_SHOWN`, then one `FieldValueTooMany` cause counting the rest).
/// Every text in it is signed (`signed`).
pub fn denial_status(name: &str, kind: Kind, v: &Verdict) -> Status {
    let shown = &v.errors[..v.errors.len().min(MAX_SHOWN)];
    let hidden = &v.errors[shown.len()..];
    let mut causes: Vec<StatusCause> = shown
        .iter()
        .map(|e| StatusCause {
            reason: e.kind.reason().to_string(),
            message: signed(e.body(), [e.rule]),
            field: e.path.clone(),
        })
        .collect();
    let hidden_rules = || hidden.iter().map(|e| e.rule);
    let more = (!hidden.is_empty()).then(|| {
        signed(
            format_args!("and {} more problems not shown", hidden.len()),
            hidden_rules(),
        )
    });
    if let Some(first_hidden) = hidden.first() {
        causes.push(StatusCause {
            reason: "FieldValueTooMany".to_string(),
            message: signed(
                format_args!(
                    "Too many: {} more problems not shown; `ipam-guard check` lists them all",
                    hidden.len()
                ),
                hidden_rules(),
            ),
            field: first_hidden.path.clone(),
        });
    }
    let (code, reason, message) = match v.reason {
        DenyReason::Invalid => (
            422,
            "Invalid",
            format!(
                "{}.{} {:?} is invalid: {}",
                kind.name(),
                kind.group(),
                name,
                // `NewInvalid` joins `<field>: <body>` per error: the causes' own messages.
                aggregate(
                    shown
                        .iter()
                        .zip(&causes)
                        .map(|(e, c)| format!("{}: {}", e.path, c.message))
                        .chain(more.clone())
                )
            ),
        ),
        DenyReason::Forbidden => (
            403,
            "Forbidden",
            format!(
                "{}.{} {:?} is forbidden: {}",
                kind.plural(),
                kind.group(),
                name,
                aggregate(
                    shown
                        .iter()
                        .map(|e| signed(&e.detail, [e.rule]))
                        .chain(more)
                )
            ),
        ),
    };
    Status {
        status: Some(StatusSummary::Failure),
        code,
        message,
        reason: reason.to_string(),
        metadata: None,
        details: Some(StatusDetails {
            name: name.to_string(),
            group: kind.group().to_string(),
            kind: kind.name().to_string(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        }),
    }
}

/// apimachinery's aggregate error text: one message bare, several as `[a, b]`, duplicates once.
fn aggregate(msgs: impl Iterator<Item = String>) -> String {
    // The set keeps this linear: a search of the list alone made a pool with 100k bad
    // entries take minutes (tests/hostile_regressions.rs).
    let mut unique = std::collections::HashSet::new();
    let mut seen: Vec<String> = Vec::new();
    for m in msgs {
        if unique.insert(m.clone()) {
            seen.push(m);
        }
    }
    match seen.len() {
        1 => seen.pop().unwrap_or_default(),
        _ => format!("[{}]", seen.join(", ")),
    }
}

#[cfg(test)]
mod routing_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::StaticView;

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
            let ans = a.review(Endpoint::Validate, &input);
            assert_eq!(ans.http_status, 400, "{needle}");
            let msg: Value = serde_json::from_slice(&ans.body).unwrap();
            assert!(msg["message"].as_str().unwrap().contains(needle), "{msg}");
            assert!(ans.outcome.is_none());
        }
    }

    #[test]
    fn unknown_kinds_are_allowed_untouched_and_uid_echoed() {
        let a = admission();
        let review = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
            "request": {"uid": "abc", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "operation": "CREATE", "name": "x", "namespace": "ns", "object": {"spec": {}}}});
        let ans = a.review(Endpoint::Validate, &body(&review));
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
            serde_json::from_slice(&a.review(Endpoint::Validate, &body(&review)).body).unwrap();
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(out["response"]["status"]["code"], 422);
        assert_eq!(
            out["response"]["status"]["details"]["causes"][0]["field"],
            "object"
        );
    }

    /// A view that has not finished its first list (SPEC X3).
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
        fn decide(&self, f: &mut dyn FnMut(&crate::index::Index) -> Option<Projection>) {
            self.0.decide(f);
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
            &a.review(
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
            &a.review(
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
    fn outcome_names_the_denying_rules_or_else_the_warning_ones() {
        let a = admission();
        let claim = |ns: Option<&str>| {
            let mut pool_ref = json!({"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "missing"});
            if let Some(ns) = ns {
                pool_ref["namespace"] = json!(ns);
            }
            json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"poolRef": pool_ref}})
        };
        let denied = a.review(
            Endpoint::Validate,
            &review_of("IPAddressClaim", "CREATE", claim(Some("other"))),
        );
        let o = denied.outcome.unwrap();
        assert!(!o.allowed);
        assert_eq!(
            o.rules,
            vec!["C2".to_string()],
            "C3's warning rides along but did not deny"
        );
        let warned = a.review(
            Endpoint::Validate,
            &review_of("IPAddressClaim", "CREATE", claim(None)),
        );
        let o = warned.outcome.unwrap();
        assert!(o.allowed);
        assert_eq!(o.rules, vec!["C3".to_string()]);
        assert_eq!(o.warnings, 1);
    }

    #[test]
    fn status_text_follows_new_invalid_and_new_forbidden() {
        let mut v = Verdict::default();
        v.deny(FieldError::invalid(
            "P2",
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
        v.deny(FieldError::required("P1", "spec.gateway", ""));
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
            "P9",
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
    fn view_rules_are_the_catalogues() {
        let mut from_catalogue: Vec<&str> = crate::catalogue::RULES
            .iter()
            .filter(|r| r.reads_view)
            .map(|r| r.id)
            .collect();
        from_catalogue.sort_unstable();
        let mut here = VIEW_RULES.to_vec();
        here.sort_unstable();
        assert_eq!(here, from_catalogue);
    }

    #[test]
    fn lines_past_the_cap_name_the_rules_they_stand_for() {
        let mut v = Verdict::default();
        for i in 0..MAX_SHOWN + 3 {
            let rule = if i < MAX_SHOWN + 1 { "P2" } else { "P5" };
            v.deny(FieldError::invalid(
                rule,
                format!("spec.addresses[{i}]"),
                "x",
                "bad",
            ));
            v.warn(if i % 2 == 0 { "P7" } else { "A4" }, "spec.x", "w");
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
        let env = Envelope {
            api_version: String::new(),
            uid: "u".into(),
            group: String::new(),
            version: String::new(),
            kind: String::new(),
            namespace: None,
            name: "pool-a".into(),
            operation: "CREATE".into(),
            object: None,
            old_object: None,
            dry_run: false,
            user: String::new(),
            groups: Vec::new(),
        };
        let response = respond(&env, Kind::InClusterIPPool, &v);
        let warnings = response["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), MAX_SHOWN + 1);
        assert_eq!(warnings[0], "spec.x: w [ipam-guard P7]");
        assert_eq!(
            warnings[MAX_SHOWN],
            "and 3 more warnings not shown [ipam-guard A4, P7]"
        );
    }
}
