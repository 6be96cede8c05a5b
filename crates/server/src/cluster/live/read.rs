//! One pass over a cluster for the commands a person types (`audit`, `usage`, `check
//! --kubeconfig`): API discovery, then for each served kind the live view's own first list (one
//! `resourceVersion=0` request, answered from the watch cache, decoded item by item by `list`).
//! Each object is handed over as soon as it is decoded and never collected here, so what a
//! command keeps is what it chooses to keep (a projection, a packed document), not the lists.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::core::ApiResource;
use kube::Client;

use super::list::{self, Items};
use super::{api_resource, discover, explain};
use crate::cluster::WatchedObject;
use crate::kinds::Kind;

/// Where the objects of a pass go, in list order, on a blocking thread.
pub trait Each: Default + Send + 'static {
    fn object(&mut self, kind: Kind, version: &str, obj: WatchedObject);
}

/// What a pass tells about its lists while they stream in (`--quiet` and non-terminals: `Silent`).
pub trait Progress: Send + Sync {
    /// `kind` (a label such as `IPAddress`) is being listed; `read` objects so far.
    fn reading(&self, kind: &str, read: u64);
    /// The list of `kind` is complete (or failed) after `read` objects in `took`.
    fn done(&self, kind: &str, read: u64, took: Duration);
}

/// No progress at all.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn reading(&self, _: &str, _: u64) {}
    fn done(&self, _: &str, _: u64, _: Duration) {}
}

/// How often (in objects) progress is told while a list streams in.
const PROGRESS_EVERY: u64 = 1024;

/// Reads every served kind of the table that `wanted` accepts, handing each object to `each`.
/// Returns `each` and what could not be read (discovery, or one kind), naming `server` (its URL;
/// may be empty). A kind that fails is reported and the others are still read.
pub async fn read<E: Each>(
    client: &Client,
    server: &str,
    wanted: impl Fn(Kind) -> bool,
    each: E,
    progress: Arc<dyn Progress>,
) -> (E, Vec<String>) {
    let served = match discover(client).await {
        Ok(s) => s,
        Err(e) => {
            return (
                each,
                vec![format!("API discovery failed: {}", explain(server, &e))],
            )
        }
    };
    // Shared with the decoder thread of each list; a mutex that no one contends.
    let each = Arc::new(Mutex::new(each));
    let mut errors = Vec::new();
    for (kind, version) in served.into_iter().filter(|(k, _)| wanted(*k)) {
        let sink = KindSink {
            each: each.clone(),
            kind,
            version: version.clone(),
            label: kind.display_name(),
            read: 0,
            progress: progress.clone(),
        };
        let label = kind.display_name();
        let started = Instant::now();
        let (result, sink) = list_resource(client, &api_resource(kind, &version), sink).await;
        progress.done(&label, sink.map_or(0, |s| s.read), started.elapsed());
        if let Err(e) = result {
            errors.push(format!("cannot list {label}: {}", describe(server, &e)));
        }
    }
    // Each sink is dropped when its list returns (the decoder thread is joined, panic or not), so
    // the pass owns `each` again; should a clone linger, its contents are taken all the same.
    let each = match Arc::try_unwrap(each) {
        Ok(m) => m.into_inner().unwrap_or_else(PoisonError::into_inner),
        Err(shared) => std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner)),
    };
    (each, errors)
}

/// Every object of `resource` through one `resourceVersion=0` list, handed to `items` as it is
/// decoded; `items` back (None only if the decoder panicked). The CRDs `check --kubeconfig`
/// validates with are read this way too.
pub async fn list_resource<S: Items>(
    client: &Client,
    resource: &ApiResource,
    items: S,
) -> (Result<String, list::ListError>, Option<S>) {
    let url = format!(
        "/apis/{}/{}?resourceVersion=0",
        resource.api_version, resource.plural
    );
    list::list(client, &url, items).await
}

/// A list error in words, with the API status explained when there is one.
pub fn describe(server: &str, e: &list::ListError) -> String {
    match e {
        list::ListError::Request(k) => explain(server, k),
        other => other.to_string(),
    }
}

struct KindSink<E> {
    each: Arc<Mutex<E>>,
    kind: Kind,
    version: String,
    label: String,
    read: u64,
    progress: Arc<dyn Progress>,
}

impl<E: Each> Items for KindSink<E> {
    fn item(&mut self, obj: WatchedObject) {
        self.each
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .object(self.kind, &self.version, obj);
        self.read += 1;
        if self.read.is_multiple_of(PROGRESS_EVERY) {
            self.progress.reading(&self.label, self.read);
        }
    }
}
