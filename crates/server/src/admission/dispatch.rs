//! Dispatch: what happens to a decoded review before its answer is built — not ours, a broken
//! request, a mutation, a view that has not synced, and the X2 step (validation under the
//! decision lock, or a follower's own reading before it asks the decider).

use std::borrow::Cow;

use serde_json::Value;

use super::envelope::Envelope;
use super::status::Response;
use super::{Admission, Endpoint, Here, Summary};
use crate::cluster::{Basis, Caller};
use crate::field::Verdict;
use crate::kinds::Kind;
use crate::model::{project, project_read, projects_alike, Operation, Projection, Request};
use crate::rule_id::RuleId;
use crate::rules::{self, Ctx, Options, Readings};

impl Admission {
    /// Everything before the X2 step: not ours, a broken request, a mutation, or a view that
    /// has not synced end here; a validation goes on to the decision.
    pub(super) fn stage<'e>(
        &self,
        endpoint: Endpoint,
        env: &'e Envelope,
        name: &'e str,
    ) -> Stage<'e> {
        let Some(kind) = Kind::from_group_kind(&env.group, &env.kind) else {
            return Stage::Done(Judged::Untouched);
        };
        let operation = env.operation;
        let req = Request {
            operation,
            kind,
            version: &env.version,
            namespace: env.namespace.as_deref(),
            name,
            object: env.object.as_ref(),
            old_object: env.old_object.as_ref(),
            dry_run: env.dry_run,
        };
        if let Err(err) = rules::shape(&req) {
            return Stage::Done(Judged::Verdict(kind, Verdict::denied(err)));
        }
        match endpoint {
            Endpoint::Mutate => Stage::Done(Judged::Verdict(kind, rules::mutate(&req))),
            Endpoint::Validate => {
                if !self.inner.view.synced()
                    && rules::denies_from_view(kind, operation, &self.inner.options)
                {
                    return Stage::Done(Judged::Verdict(kind, not_synced(self.inner.local)));
                }
                Stage::Validate(kind, req)
            }
        }
    }

    /// The X2 step on this replica: judge and record what was admitted in one step, so two
    /// racing creates of overlapping pools cannot both pass. A request that records nothing (a
    /// denial, a delete, a dry run, a relabel) is answered from one consistent reading without
    /// the lock: it changes nothing another decision could miss. With a route, only the decider
    /// gets here, and a decision that ends after its fence closed is refused (it may have been
    /// paused mid-decision while another replica took over).
    pub(super) fn validate_here(&self, req: &Request, caller: &Caller) -> Verdict {
        let route = &*self.inner.route;
        if let Here::Forward = route.standing() {
            return unavailable(NOT_DECIDER.to_string());
        }
        let synced = self.inner.view.synced();
        let options = self.inner.options;
        let now = self.inner.view.now();
        // The objects are read once for the review: both validations and the record share it.
        let mut readings = Readings::default();
        let relabel = self.relabel(req);
        // Judged outside the decision lock, on one consistent reading of the view: only what
        // records a pending entry needs the lock, and under it the work is redone only when the
        // view changed since that reading (another admission, a watch event, an expiry).
        let (mut verdict, seen) = {
            let index = self.inner.view.read();
            let verdict = rules::validate_reading(
                req,
                &Ctx {
                    index: &index,
                    options,
                    now,
                },
                &readings,
            );
            (verdict, index.version())
        };
        let mut pending = admitted(req, &verdict, &mut readings, relabel);
        let mut recorded = pending.is_some();
        if recorded {
            let basis = basis_of(req);
            self.inner.view.reserve_as(caller, &basis, &mut |index| {
                if index.version() != seen {
                    verdict = rules::validate_reading(
                        req,
                        &Ctx {
                            index,
                            options,
                            now,
                        },
                        &readings,
                    );
                    pending = admitted(req, &verdict, &mut readings, relabel);
                    recorded = pending.is_some();
                }
                pending.take()
            });
        }
        match route.standing() {
            Here::Decide => {}
            Here::Forward => return unavailable(NOT_DECIDER.to_string()),
            Here::Refuse(why) => return unavailable(why),
        }
        if recorded {
            route.admitted(req);
        }
        if !synced {
            // What the view-reading rules said came from a partial view: drop it, say so.
            verdict.warnings.retain(|w| !w.rule.reads_view());
            verdict.warn(RuleId::X3, "", VIEW_NOT_READY_WARNING);
        }
        verdict
    }

    /// Whether `req` is an UPDATE that changes nothing the index keeps (only labels), and so
    /// records nothing: no projection, no decision lock, no entry in the decider's hand-over
    /// log. What it replaces is held already (stored, or pending until the watch shows it: X2).
    fn relabel(&self, req: &Request) -> bool {
        let (Operation::Update, Some(new), Some(old)) = (req.operation, req.object, req.old_object)
        else {
            return false;
        };
        projects_alike(new, old)
    }

    /// A follower's own reading: every rule against its view, nothing recorded. The decider
    /// redoes the view-dependent part.
    pub(super) fn validate_read_only(&self, req: &Request) -> Verdict {
        let index = self.inner.view.read();
        let mut verdict = rules::validate(
            req,
            &Ctx {
                index: &index,
                options: self.inner.options,
                now: self.inner.view.now(),
            },
        );
        if !self.inner.view.synced() {
            // A partial view: the decider (synced, or it refuses) answers for the view rules.
            verdict.warnings.retain(|w| !w.rule.reads_view());
        }
        verdict
    }
}

/// Where `stage` left a review.
pub(super) enum Stage<'e> {
    Done(Judged),
    Validate(Kind, Request<'e>),
}

/// Whether a follower must send this request to the decider: when nothing but the view can deny
/// it (a denial for any other reason records nothing and needs no lock) and its answer reads the
/// view or it records a pending entry.
pub(super) fn needs_decider(req: &Request, local: &Verdict, options: &Options) -> bool {
    if local.errors.iter().any(|e| !e.rule.reads_view()) {
        return false;
    }
    rules::denies_from_view(req.kind, req.operation, options)
        || matches!(req.operation, Operation::Create | Operation::Update)
            && !req.dry_run
            && project(req.kind, req.object.unwrap_or(&Value::Null)).is_some()
}

pub(super) const NOT_DECIDER: &str =
    "this ipam-guard replica is not the decider (the decider lease moved); retry";

pub(super) fn unavailable(why: String) -> Verdict {
    Verdict {
        unavailable: Some(why),
        ..Verdict::default()
    }
}

/// What an allowed, real (not dry-run) create or update adds to the view before the watch shows it,
/// from what the validation kept in `readings` (a pool's reading; an address's or a claim's
/// projection, taken rather than copied: a validation run again keeps it again).
pub(super) fn admitted(
    req: &Request,
    verdict: &Verdict,
    readings: &mut Readings,
    relabel: bool,
) -> Option<Projection> {
    if req.dry_run || !verdict.allowed() {
        return None;
    }
    let projection = match req.operation {
        Operation::Update if relabel => return None,
        Operation::Create | Operation::Update => match readings.take_projection() {
            Some(kept) => Some(kept),
            None => project_read(req.kind, req.object?, readings.object()),
        },
        Operation::Delete => return written(req),
        Operation::Connect => return None,
    }?;
    // An update that holds what the version it replaces holds adds nothing, whether it lands or
    // not: that version is held already (stored, or pending if the view is behind).
    if let (Operation::Update, Some(old)) = (req.operation, req.old_object) {
        if project(req.kind, old).as_ref() == Some(&projection) {
            return None;
        }
    }
    Some(projection)
}

/// What the write of `req` would store, as the index keeps it (X2): the new object of a CREATE
/// or UPDATE; for a pool's DELETE, the pool marked as being deleted, so that until the watch shows
/// it gone no new address is given out of it (A8) while it still holds its addresses.
pub(crate) fn written(req: &Request) -> Option<Projection> {
    match req.operation {
        Operation::Create | Operation::Update => project(req.kind, req.object?),
        Operation::Delete if req.kind.is_pool() => match project(req.kind, req.old_object?)? {
            Projection::Pool(mut pool) => {
                pool.deleting = true;
                Some(Projection::Pool(pool))
            }
            _ => None,
        },
        Operation::Delete | Operation::Connect => None,
    }
}

/// Which stored version the write of `req` builds on (X2): a CREATE's uid, which the API server
/// sets before it asks validating webhooks; an UPDATE's or a DELETE's uid and the resourceVersion
/// of the stored object it replaces or deletes.
pub(crate) fn basis_of(req: &Request) -> Basis {
    fn meta(o: Option<&Value>) -> Option<&Value> {
        o.and_then(|o| o.get("metadata"))
    }
    let uid = meta(req.object)
        .or_else(|| meta(req.old_object))
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .map(std::sync::Arc::from);
    let replaces = match req.operation {
        Operation::Update | Operation::Delete => meta(req.old_object)
            .or_else(|| meta(req.object))
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .and_then(|rv| rv.parse().ok()),
        _ => None,
    };
    Basis {
        uid,
        replaces,
        ..Basis::default()
    }
}

pub(super) const VIEW_NOT_READY_WARNING: &str =
    "ipam-guard has not finished reading the cluster yet; checks against other objects were skipped";

/// The 503 of a view-dependent write while the view is not in sync (X3). It names the view it
/// waits for: a `serve --dev` trial's own process (`local`), or the pods of an install.
pub(super) fn not_synced(local: bool) -> Verdict {
    let why = if local {
        "ipam-guard's local view of pools and addresses (the `ipam-guard serve --dev` process on \
         your machine, watching the cluster of its --kubeconfig) is not in sync with the cluster \
         (it is still reading it, or a watch on it failed or went silent), so it cannot check this \
         write against other objects; retry in a few seconds. If this persists, read what `serve \
         --dev` prints and check that its kubeconfig's user may get/list/watch the IPAM kinds \
         [ipam-guard X3]"
    } else {
        "ipam-guard's view of pools and addresses (the watches of the ipam-guard pods) is not in \
         sync with the cluster (it is still reading it, or a watch on it failed or went silent), \
         so it cannot check this write against other objects; retry in a few seconds. If this \
         persists, check the ipam-guard pods' logs, their RBAC (get/list/watch on the IPAM kinds) \
         and that they reach the API server [ipam-guard X3]"
    };
    Verdict {
        unavailable: Some(why.to_string()),
        ..Verdict::default()
    }
}

pub(super) enum Judged {
    /// Not ours (unknown kind or operation): allowed, nothing added.
    Untouched,
    Verdict(Kind, Verdict),
}

/// What an answer said, taken before the envelope its response borrows from moves on.
pub(super) struct Said {
    allowed: bool,
    code: u16,
    warnings: usize,
    patched: bool,
}

impl Said {
    pub(super) fn of(response: &Response) -> Said {
        Said {
            allowed: response.allowed,
            code: response.status.as_ref().map_or(0, |s| s.code),
            warnings: response.warnings.len(),
            patched: response.patch.is_some(),
        }
    }
}

/// What the server logs and counts of an answered review: the envelope's strings, moved.
pub(super) fn summarize<'b>(
    env: Envelope<'b>,
    name: Cow<'b, str>,
    served: Option<Kind>,
    said: Said,
    verdict: &std::thread::Result<Judged>,
) -> Summary<'b> {
    let mut summary = Summary {
        uid: env.uid,
        group: env.group,
        kind: env.kind,
        served,
        namespace: env.namespace,
        name,
        operation: env.operation,
        allowed: said.allowed,
        code: said.code,
        rules: verdict_rules(verdict),
        warnings: said.warnings,
        patched: said.patched,
        dry_run: env.dry_run,
        user: Cow::Borrowed(""),
        groups: Vec::new(),
    };
    // Who asked is printed only on the log line of a denial or a warning.
    if !summary.is_quiet() {
        summary.user = env.user;
        summary.groups = env.groups;
    }
    summary
}

fn verdict_rules(v: &std::thread::Result<Judged>) -> Vec<String> {
    match v {
        // The rules behind the decision: a denial's, or (when allowed) the warnings'. A warning
        // that rides along with a denial is not counted as a denial rule.
        Ok(Judged::Verdict(_, v)) => {
            let mut ids: Vec<RuleId> = if v.errors.is_empty() {
                v.warnings.iter().map(|w| w.rule).collect()
            } else {
                v.errors.iter().map(|e| e.rule).collect()
            };
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().map(|id| id.to_string()).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    //! The decision lock covers only what records a pending entry: a test double
    //! counts the decisions and can show a different view inside the lock than outside it.

    use std::ops::Deref;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use serde_json::{json, Value};

    use crate::admission::{Admission, Endpoint};
    use crate::cluster::{Basis, Caller, ClusterView, Ledger};
    use crate::index::Index;
    use crate::kinds::Kind;
    use crate::model::{project, Projection};
    use crate::rules::Options;

    /// Reads from `outside`, decides on `inside` (the same view unless a test says otherwise).
    struct Counting {
        outside: Arc<Ledger>,
        inside: Arc<Ledger>,
        decisions: AtomicUsize,
    }

    impl Counting {
        fn one(view: Ledger) -> Arc<Counting> {
            let view = Arc::new(view);
            Arc::new(Counting {
                outside: view.clone(),
                inside: view,
                decisions: AtomicUsize::new(0),
            })
        }
    }

    impl ClusterView for Counting {
        fn synced(&self) -> bool {
            true
        }
        fn object_counts(&self) -> Vec<(Kind, usize)> {
            self.outside.read().counts()
        }
        fn read(&self) -> Box<dyn Deref<Target = Index> + '_> {
            ClusterView::read(&*self.outside)
        }
        fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>) {
            self.reserve_as(&Caller::Trusted, &Basis::default(), f)
        }
        fn reserve_as(
            &self,
            caller: &Caller,
            basis: &Basis,
            f: &mut dyn FnMut(&Index) -> Option<Projection>,
        ) {
            self.decisions.fetch_add(1, Ordering::SeqCst);
            ClusterView::reserve_as(&*self.inside, caller, basis, f)
        }
    }

    fn pool(name: &str, cidr: &str) -> Value {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": "InClusterIPPool",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"addresses": [cidr], "prefix": 24, "gateway": "10.9.9.1"}})
    }

    fn address(name: &str, ip: &str) -> Value {
        json!({"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddress",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"address": ip, "prefix": 24,
                "claimRef": {"name": name},
                "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "p"}}})
    }

    fn create(object: &Value) -> Vec<u8> {
        let (group, version) = object["apiVersion"]
            .as_str()
            .unwrap()
            .split_once('/')
            .unwrap();
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": {"group": group, "version": version, "kind": object["kind"]},
                "operation": "CREATE", "name": object["metadata"]["name"], "namespace": "ns",
                "object": object}}))
        .unwrap()
    }

    fn index_of(objects: &[Value]) -> Index {
        let mut index = Index::new();
        for o in objects {
            let kind = Kind::from_group_kind(
                o["apiVersion"].as_str().unwrap().split('/').next().unwrap(),
                o["kind"].as_str().unwrap(),
            )
            .unwrap();
            index.upsert(project(kind, o).expect("a valid object projects"));
        }
        index
    }

    fn judge(a: &Admission, object: &Value) -> (bool, Vec<String>) {
        let body = create(object);
        let answer = a.review_now(Endpoint::Validate, &body);
        let summary = answer.summary.expect("a review");
        (summary.allowed, summary.rules)
    }

    #[test]
    fn what_records_nothing_never_takes_the_lock() {
        let view = Counting::one(Ledger::new(index_of(&[
            pool("p", "10.9.9.0/24"),
            address("taken", "10.9.9.5"),
        ])));
        let a = Admission::new(view.clone(), Options::default());
        // Denied without the view (an address that does not parse).
        assert!(!judge(&a, &address("bad", "10.9.9.300")).0);
        // Denied by the view (the address is held): a consistent reading is the whole decision.
        let (allowed, rules) = judge(&a, &address("dup", "10.9.9.5"));
        assert!(!allowed);
        assert!(rules.iter().any(|r| r == "A9"), "{rules:?}");
        assert_eq!(view.decisions.load(Ordering::SeqCst), 0);
        // Admitted: recorded under the lock, so the next duplicate sees it.
        assert!(judge(&a, &address("first", "10.9.9.6")).0);
        assert_eq!(view.decisions.load(Ordering::SeqCst), 1);
        assert!(!judge(&a, &address("second", "10.9.9.6")).0);
        assert_eq!(view.decisions.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_view_that_moved_before_the_lock_is_judged_again_under_it() {
        // Outside the lock the pool does not overlap anything; by the time the lock is taken an
        // overlapping pool was admitted (another decision): the verdict must be the latter's.
        let outside = Arc::new(Ledger::new(Index::new()));
        let inside = Arc::new(Ledger::new(index_of(&[pool("other", "10.9.9.0/24")])));
        let view = Arc::new(Counting {
            outside,
            inside: inside.clone(),
            decisions: AtomicUsize::new(0),
        });
        let a = Admission::new(view.clone(), Options::default());
        let (allowed, rules) = judge(&a, &pool("mine", "10.9.9.0/25"));
        assert!(!allowed, "judged again on the view inside the lock");
        assert!(rules.iter().any(|r| r == "P10"), "{rules:?}");
        assert_eq!(view.decisions.load(Ordering::SeqCst), 1);
        assert_eq!(inside.pending_len(), 0, "a denial records nothing");
    }
}

#[cfg(test)]
mod kept_tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::index::Index;
    use crate::model::project;

    fn create(kind: Kind, obj: &Value) -> Option<Projection> {
        let req = Request {
            operation: Operation::Create,
            kind,
            version: "v1beta2",
            namespace: Some("ns"),
            name: obj["metadata"]["name"].as_str().unwrap(),
            object: Some(obj),
            old_object: None,
            dry_run: false,
        };
        let index = Index::new();
        let ctx = Ctx {
            index: &index,
            options: Options::default(),
            now: std::time::Instant::now(),
        };
        let mut readings = Readings::default();
        let verdict = rules::validate_reading(&req, &ctx, &readings);
        assert!(verdict.allowed(), "{kind}: {verdict:?}");
        assert!(
            readings.projection().is_some(),
            "{kind}: the validator kept nothing"
        );
        let kept = admitted(&req, &verdict, &mut readings, false);
        assert!(
            readings.projection().is_none(),
            "{kind}: the record copied what was kept"
        );
        // A validation run again under the decision lock keeps it again.
        let again = rules::validate_reading(&req, &ctx, &readings);
        assert_eq!(admitted(&req, &again, &mut readings, false), kept);
        kept
    }

    /// The X2 record of an admitted address or claim is what its validator kept; it must be
    /// what `model::project` makes of the object, whatever the object says.
    #[test]
    fn what_a_validator_keeps_is_the_objects_projection() {
        let claims = [
            json!({"metadata": {"name": "c", "namespace": "ns"},
                   "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io",
                                        "kind": "InClusterIPPool", "name": "p"}}}),
            json!({"metadata": {"name": "c", "namespace": "ns",
                                "creationTimestamp": "2026-11-21T22:40:50Z"},
                   "spec": {"poolRef": {"apiGroup": "ipam.cluster.x-k8s.io",
                                        "kind": "GlobalInClusterIPPool", "name": "g"}},
                   "status": {"addressRef": {"name": "c"}}}),
            json!({"metadata": {"name": "c", "namespace": "ns"},
                   "spec": {"poolRef": {"apiGroup": "ipam.metal3.io", "kind": "IPPool",
                                        "name": "m"}}}),
        ];
        for obj in &claims {
            let kept = create(Kind::IPAddressClaim, obj);
            assert!(matches!(kept, Some(Projection::Claim(_))));
            assert_eq!(kept, project(Kind::IPAddressClaim, obj), "{obj}");
        }
        let address = json!({"metadata": {"name": "a", "namespace": "ns"},
            "spec": {"address": "10.0.0.5", "prefix": 24, "gateway": "10.0.0.1",
                     "claimRef": {"name": "c"},
                     "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io",
                                 "kind": "InClusterIPPool", "name": "p"}}});
        let kept = create(Kind::IPAddress, &address);
        assert!(matches!(kept, Some(Projection::Address(_))));
        assert_eq!(kept, project(Kind::IPAddress, &address));
    }
}
