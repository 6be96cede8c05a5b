//! A second validating webhook beside ipam-guard's, as clusters have (policy engines, quota
//! checks): it refuses every object labelled `e2e-refuse: "yes"` and allows everything else. The
//! API server calls validating webhooks in parallel and stores a write only when all allow, so a
//! labelled write is one ipam-guard admits (and counts as pending, X2) that is never stored.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::https;

/// The label that makes this webhook refuse, and its value.
pub const LABEL: &str = "e2e-refuse";
pub const VALUE: &str = "yes";
/// The webhook's name in its registration, which the API server's refusal message names.
pub const NAME: &str = "refuse.e2e.ipam-guard.io";
/// What it answers a labelled write.
pub const MESSAGE: &str = "refused by the e2e refuser: the object is labelled e2e-refuse=yes";

pub struct Refuser {
    pub addr: SocketAddr,
    pub ca_pem: String,
    refused: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Refuser {
    /// Serves on a loopback port of its own. A refusal is answered `delay` after the request
    /// arrives: however the API server gathers the parallel answers, ipam-guard's (microseconds
    /// of judging) is in by then, so its admission is certain to have been recorded.
    pub async fn start(delay: Duration) -> Refuser {
        let refused = Arc::new(Mutex::new(Vec::new()));
        let count = refused.clone();
        let (addr, ca_pem, task) =
            https::serve("e2e refuser", move |req| answer(req, delay, count.clone())).await;
        Refuser {
            addr,
            ca_pem,
            refused,
            task,
        }
    }

    /// The names of the objects of the writes refused so far, in order. The API server may ask
    /// twice for one write (an update retried on a fresher stored object).
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().unwrap().clone()
    }

    /// Registers it for CREATE and UPDATE of `resources` (plurals of group
    /// `ipam.cluster.x-k8s.io`, namespaced), failing closed.
    pub async fn register(&self, client: &kube::Client, resources: &[&str]) {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "e2e-refuser"},
            "webhooks": [{
                "name": NAME,
                "clientConfig": {"url": format!("https://{}/validate", self.addr), "caBundle": ca},
                "rules": [{
                    "apiGroups": ["ipam.cluster.x-k8s.io"], "apiVersions": ["*"],
                    "resources": resources, "operations": ["CREATE", "UPDATE"],
                    "scope": "Namespaced"
                }],
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "timeoutSeconds": 10
            }]
        });
        super::api::create_path(
            client,
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            &config,
        )
        .await
        .expect(201);
    }
}

impl Drop for Refuser {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether `obj` carries the label.
pub fn labelled(obj: &Value) -> bool {
    obj["metadata"]["labels"][LABEL] == VALUE
}

/// `obj` with the label.
pub fn with_label(obj: &Value) -> Value {
    let mut obj = obj.clone();
    obj["metadata"]["labels"] = json!({ LABEL: VALUE });
    obj
}

async fn answer(
    req: Request<Incoming>,
    delay: Duration,
    refused: Arc<Mutex<Vec<String>>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = &review["request"];
    let response = if labelled(&request["object"]) {
        tokio::time::sleep(delay).await;
        let name = request["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        refused.lock().unwrap().push(name.to_string());
        json!({
            "uid": request["uid"], "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": MESSAGE}
        })
    } else {
        json!({"uid": request["uid"], "allowed": true})
    };
    let out = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response
    });
    Ok(Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&out).unwrap())))
        .unwrap())
}
