//! The AdmissionReview envelope: the fields ipam-guard reads, and the 400 messages for a body
//! that is not a review it can answer.

use serde_json::{Map, Value};

use crate::model::{review_body, Operation};

/// The envelope fields we read, borrowed from the parsed body.
pub(super) struct Envelope {
    pub(super) api_version: String,
    pub(super) uid: String,
    pub(super) group: String,
    pub(super) version: String,
    pub(super) kind: String,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
    pub(super) operation: String,
    pub(super) object: Option<Value>,
    pub(super) old_object: Option<Value>,
    pub(super) dry_run: bool,
    pub(super) user: String,
    pub(super) groups: Vec<String>,
}

/// Reads the envelope. Everything that keeps us from answering (not JSON, not a review, no uid)
/// is a 400 whose message says what was wrong.
pub(super) fn decode(body: &[u8]) -> Result<Envelope, String> {
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
