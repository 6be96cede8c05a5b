//! AdmissionReview in and out: decode, dispatch to the rules, encode Status and patches.
//! (Interface fixed first so the server can be built against it; the body lands with the rules.)

use std::sync::Arc;

use crate::cluster::ClusterView;
use crate::rules::Options;

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
}

/// An HTTP answer: status and JSON body. `outcome` is `None` when the body was not a review.
#[derive(Debug, Clone)]
pub struct Answer {
    pub http_status: u16,
    pub body: Vec<u8>,
    pub outcome: Option<Outcome>,
}

/// The admission handler the server calls. Cheap to clone.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

struct Inner {
    view: Arc<dyn ClusterView>,
    options: Options,
}

impl Admission {
    pub fn new(view: Arc<dyn ClusterView>, options: Options) -> Self {
        Admission {
            inner: Arc::new(Inner { view, options }),
        }
    }

    /// The view behind this handler (metrics read object counts from it).
    pub fn view(&self) -> &Arc<dyn ClusterView> {
        &self.inner.view
    }

    /// Judges one AdmissionReview body. Never panics: bad bodies are a 400 answer with a message.
    pub fn review(&self, endpoint: Endpoint, body: &[u8]) -> Answer {
        let _ = (&self.inner.options, endpoint, body);
        Answer {
            http_status: 500,
            body: br#"{"message":"not built yet"}"#.to_vec(),
            outcome: None,
        }
    }

    /// Whether the cluster view has synced every watched kind (SPEC X3): `/readyz`.
    pub fn ready(&self) -> bool {
        self.inner.view.synced()
    }
}
