//! A validating and a mutating webhook that admit everything (no patch) and keep each
//! AdmissionReview the API server POSTs to them, byte for byte and in arrival order, with the
//! path it came to (`/validate`, `/mutate`): `crates/e2e/tests/e2e_capture.rs` records the
//! repository's review fixtures (`tests/fixtures/reviews/`) with it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use ipam_guard::kinds::KINDS;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::https;

pub struct Recorder {
    pub addr: SocketAddr,
    pub ca_pem: String,
    received: Arc<Mutex<Vec<(String, Bytes)>>>,
    task: JoinHandle<()>,
}

impl Recorder {
    /// Serves on a loopback port of its own.
    pub async fn start() -> Recorder {
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        let (addr, ca_pem, task) =
            https::serve("e2e recorder", move |req| answer(req, kept.clone())).await;
        Recorder {
            addr,
            ca_pem,
            received,
            task,
        }
    }

    /// The paths and bodies received since the last call, oldest first.
    pub fn take(&self) -> Vec<(String, Bytes)> {
        std::mem::take(&mut *self.received.lock().unwrap())
    }

    /// Registers `/validate` for CREATE, UPDATE and DELETE of every kind of the table and
    /// `/mutate` for CREATE and UPDATE of the kinds ipam-guard mutates, in every version
    /// (`apiVersions: ["*"]`: a request arrives in the version its client used), main resources
    /// only, failing closed so that no write goes unrecorded.
    pub async fn register(&self, client: &kube::Client) {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let rule = |k: &ipam_guard::kinds::KindInfo, ops: &[&str]| {
            json!({
                "apiGroups": [k.group], "apiVersions": ["*"], "resources": [k.plural],
                "operations": ops, "scope": if k.namespaced { "Namespaced" } else { "Cluster" }
            })
        };
        let validate: Vec<Value> = KINDS
            .iter()
            .map(|k| rule(k, &["CREATE", "UPDATE", "DELETE"]))
            .collect();
        let mutate: Vec<Value> = KINDS
            .iter()
            .filter(|k| k.kind.mutated())
            .map(|k| rule(k, &["CREATE", "UPDATE"]))
            .collect();
        for (kind, path, rules) in [
            ("ValidatingWebhookConfiguration", "validate", validate),
            ("MutatingWebhookConfiguration", "mutate", mutate),
        ] {
            let config = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": "e2e-recorder"},
                "webhooks": [{
                    "name": format!("{path}.record.e2e.ipam-guard.io"),
                    "clientConfig": {"url": format!("https://{}/{path}", self.addr), "caBundle": ca},
                    "rules": rules,
                    "failurePolicy": "Fail", "matchPolicy": "Exact", "sideEffects": "None",
                    "admissionReviewVersions": ["v1"], "timeoutSeconds": 10
                }]
            });
            let collection = format!(
                "/apis/admissionregistration.k8s.io/v1/{}s",
                kind.to_lowercase()
            );
            super::api::create_path(client, &collection, &config)
                .await
                .expect(201);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    req: Request<Incoming>,
    received: Arc<Mutex<Vec<(String, Bytes)>>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_string();
    let body = req.into_body().collect().await?.to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    received.lock().unwrap().push((path, body));
    let out = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true}
    });
    Ok(Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&out).unwrap())))
        .unwrap())
}
