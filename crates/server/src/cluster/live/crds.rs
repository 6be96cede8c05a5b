//! The CRD watch: a CRD installed after start must be watched before its objects could slip past
//! X2. Periodic discovery alone (every 60 s) is slower than the 30 s pending window, so the view
//! watches `apiextensions.k8s.io/v1` CustomResourceDefinitions and, for each established CRD that
//! serves a kind we watch:
//!
//! - marks that kind expected at once: the view is not synced (view-dependent writes answer 503,
//!   and pending entries of the kind are held) until the kind is watched and listed;
//! - wakes discovery, which starts the kind's watch (discovery stays the source of truth for
//!   which version to read).
//!
//! A CRD deleted, or no longer serving a version we read, un-expects its kinds and wakes
//! discovery too, which stops the watch and drops the objects.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kube::core::ApiResource;
use kube::runtime::watcher::Event;
use tokio::sync::Notify;

use super::health::Status;
use super::watch::Feed;
use super::watched;
use crate::cluster::WatchedObject;
use crate::kinds::{Kind, KINDS};

pub fn resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// Each watched kind an established CRD serves, with each version of the kinds table it serves
/// the kind in.
pub(crate) fn served_versions(crd: &WatchedObject) -> Vec<(Kind, &'static str)> {
    let rest = &crd.rest;
    let spec = rest.get("spec");
    let group = spec.and_then(|s| s["group"].as_str()).unwrap_or_default();
    let plural = spec
        .and_then(|s| s["names"]["plural"].as_str())
        .unwrap_or_default();
    let served: Vec<&str> = spec
        .and_then(|s| s["versions"].as_array())
        .map(|vs| {
            vs.iter()
                .filter(|v| v["served"].as_bool() == Some(true))
                .filter_map(|v| v["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let established = rest
        .get("status")
        .and_then(|s| s["conditions"].as_array())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if !established {
        return Vec::new();
    }
    KINDS
        .iter()
        .filter(|k| k.group == group && k.plural == plural && watched(k.kind))
        .flat_map(|k| {
            k.versions
                .iter()
                .filter(|v| served.contains(*v))
                .map(|v| (k.kind, *v))
        })
        .collect()
}

fn ours(crd: &WatchedObject) -> bool {
    let group = crd
        .rest
        .get("spec")
        .and_then(|s| s["group"].as_str())
        .unwrap_or_default();
    KINDS.iter().any(|k| k.group == group)
}

/// Feeds `Status::expect` from CRD events and wakes discovery.
pub(crate) struct CrdFeed {
    status: Arc<Status>,
    wake: Arc<Notify>,
    /// CRD name -> kinds it announces, each with the versions it serves the kind in.
    crds: HashMap<String, Vec<(Kind, &'static str)>>,
    relist: Option<HashMap<String, Vec<(Kind, &'static str)>>>,
}

impl CrdFeed {
    pub fn new(status: Arc<Status>, wake: Arc<Notify>) -> Self {
        CrdFeed {
            status,
            wake,
            crds: HashMap::new(),
            relist: None,
        }
    }

    fn all(&self) -> BTreeSet<Kind> {
        self.crds.values().flatten().map(|(k, _)| *k).collect()
    }

    /// Makes `status` expect exactly the kinds announced now, in the versions served now; wakes
    /// discovery on any change.
    fn settle(&self, before: BTreeSet<Kind>, relevant: bool) {
        self.status
            .crds_serve(self.crds.values().flatten().copied().collect());
        let now = self.all();
        for k in before.difference(&now) {
            self.status.unexpect(*k);
        }
        for k in &now {
            self.status.expect(*k);
        }
        if relevant || before != now {
            self.wake.notify_one();
        }
    }
}

impl Feed for CrdFeed {
    fn event(&mut self, event: Event<WatchedObject>) {
        let before = self.all();
        match event {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(crd) => {
                if let Some(name) = crd.metadata.name.clone() {
                    self.relist
                        .get_or_insert_with(HashMap::new)
                        .insert(name, served_versions(&crd));
                }
            }
            Event::InitDone => {
                self.crds = self.relist.take().unwrap_or_default();
                self.settle(before, true);
            }
            Event::Apply(crd) => {
                let Some(name) = crd.metadata.name.clone() else {
                    return;
                };
                self.crds.insert(name, served_versions(&crd));
                self.settle(before, ours(&crd));
            }
            Event::Delete(crd) => {
                let Some(name) = crd.metadata.name.as_deref() else {
                    return;
                };
                self.crds.remove(name);
                self.settle(before, ours(&crd));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Watched kinds an established CRD serves in a version of the kinds table.
    fn announced(crd: &WatchedObject) -> Vec<Kind> {
        let mut kinds: Vec<Kind> = served_versions(crd).into_iter().map(|(k, _)| k).collect();
        kinds.dedup();
        kinds
    }

    fn crd(
        group: &str,
        plural: &str,
        versions: &[(&str, bool)],
        established: bool,
    ) -> WatchedObject {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(v, served)| json!({"name": v, "served": served, "storage": false}))
            .collect();
        WatchedObject::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "names": {"plural": plural, "kind": "X"}, "scope": "Namespaced",
                     "versions": versions},
            "status": {"conditions": [{"type": "Established", "status": if established {"True"} else {"False"}}]}
        }))
        .unwrap()
    }

    #[test]
    fn an_established_crd_serving_a_version_we_read_announces_its_kind() {
        let spider = |vs, est| crd("spiderpool.spidernet.io", "spiderippools", vs, est);
        assert_eq!(
            announced(&spider(&[("v2beta1", true)], true)),
            vec![Kind::SpiderIPPool]
        );
        assert!(
            announced(&spider(&[("v2beta1", true)], false)).is_empty(),
            "not established"
        );
        assert!(
            announced(&spider(&[("v2beta1", false)], true)).is_empty(),
            "not served"
        );
        assert!(
            announced(&spider(&[("v9", true)], true)).is_empty(),
            "a version we cannot read"
        );
        assert!(
            announced(&crd(
                "infrastructure.cluster.x-k8s.io",
                "vspheremachinetemplates",
                &[("v1beta1", true)],
                true
            ))
            .is_empty(),
            "a kind no rule reads from the view"
        );
        assert!(announced(&crd("example.com", "widgets", &[("v1", true)], true)).is_empty());
    }

    #[test]
    fn the_crd_watch_keeps_the_versions_each_kind_is_served_in() {
        let status = Arc::new(Status::new(std::time::Duration::from_secs(30)));
        let mut feed = CrdFeed::new(status.clone(), Arc::new(Notify::new()));
        let addresses =
            |versions: &[(&str, bool)]| crd("ipam.cluster.x-k8s.io", "ipaddresses", versions, true);
        feed.event(Event::Init);
        feed.event(Event::InitApply(addresses(&[
            ("v1beta1", true),
            ("v1beta2", true),
        ])));
        feed.event(Event::InitDone);
        assert!(status.crd_serves(Kind::IPAddress, "v1beta1"));
        assert!(status.crd_serves(Kind::IPAddress, "v1beta2"));
        assert!(!status.crd_serves(Kind::IPAddressClaim, "v1beta2"));
        feed.event(Event::Apply(addresses(&[
            ("v1beta1", true),
            ("v1beta2", false),
        ])));
        assert!(status.crd_serves(Kind::IPAddress, "v1beta1"));
        assert!(!status.crd_serves(Kind::IPAddress, "v1beta2"));
        feed.event(Event::Delete(addresses(&[])));
        assert!(!status.crd_serves(Kind::IPAddress, "v1beta1"));
    }

    #[test]
    fn crd_events_expect_and_unexpect_kinds_and_wake_discovery() {
        let status = Arc::new(Status::new(std::time::Duration::from_secs(30)));
        let wake = Arc::new(Notify::new());
        let mut feed = CrdFeed::new(status.clone(), wake.clone());
        feed.event(Event::Init);
        feed.event(Event::InitDone);
        assert!(status.expected().is_empty());
        let spider = crd(
            "spiderpool.spidernet.io",
            "spiderippools",
            &[("v2beta1", true)],
            true,
        );
        feed.event(Event::Apply(spider.clone()));
        assert_eq!(status.expected(), vec![Kind::SpiderIPPool]);
        feed.event(Event::Delete(spider.clone()));
        assert!(status.expected().is_empty());
        // A relist that no longer has a CRD forgets what it announced.
        feed.event(Event::Apply(spider));
        feed.event(Event::Init);
        feed.event(Event::InitDone);
        assert!(status.expected().is_empty());
        // Each change stored a wake-up (Notify keeps one permit).
        let woke = futures::FutureExt::now_or_never(wake.notified());
        assert!(woke.is_some());
    }
}
