//! The periodic audit's pass over what a view holds, in steps. Each step judges a few objects
//! under one read of the view and lets go of it, so a write that the view records (an admitted
//! object, a watch event) waits for one step, not for the whole round: a round over 210k objects
//! held the view for 120–170 ms at once, and with one request worker (what the install's CPU
//! limit gives) every admission waited for it (docs/performance.md, "Periodic audit").
//!
//! Pools and address objects are gone through by their slots in the index; claims, kept in a
//! hash set, by their keys, copied in one read at the start (copying every object's key made
//! that read 12–30 ms at 210k objects; pools and addresses are half of them). Each object is
//! judged against the view as its step finds it, a pool's usage as the first claim naming it
//! found it. An object gone by its step is passed over; one added during the round is judged if
//! it took a slot not yet gone through, else by the next round.

use std::time::Instant;

use crate::cluster::ClusterView;
use crate::field::{FieldError, Warning};
use crate::kinds::Kind;
use crate::model::ObjKey;
use crate::rules::{health, stored, Ctx, Options};

/// Objects judged under one read of the view: about a millisecond of work.
pub(crate) const STEP: usize = 512;

/// What a round found: denials of pools, then of address objects, then of Clusters, each in the
/// index's order; warnings in the order of `rules::health::judge`; and the objects the view held
/// at the start.
pub struct Found {
    pub denials: Vec<(ObjKey, FieldError)>,
    pub warnings: Vec<(ObjKey, Warning)>,
    pub counts: Vec<(Kind, usize)>,
}

pub(crate) struct Round {
    options: Options,
    /// Unix seconds, what `rules::health` compares creation timestamps with.
    now: i64,
    started: Instant,
    /// Pool slots, then address slots, then claims, then Clusters, then holders outside pools
    /// (ReservedIPs, machines' static addresses): the order the findings come in.
    pools: usize,
    addresses: usize,
    claims: Vec<ObjKey>,
    clusters: Vec<ObjKey>,
    holders: Vec<ObjKey>,
    next: usize,
    usage: health::Usages,
    found: Found,
}

impl Round {
    /// Takes what to judge, in one read of `view`.
    pub fn start(view: &dyn ClusterView, options: Options, now: i64) -> Round {
        let index = view.read();
        Round {
            options,
            now,
            started: Instant::now(),
            pools: index.pool_slots(),
            addresses: index.address_slots(),
            claims: index.claims().map(|c| c.key.clone()).collect(),
            clusters: index.clusters().map(|c| c.key.clone()).collect(),
            holders: index.outside_holders().map(|h| h.key.clone()).collect(),
            next: 0,
            usage: health::Usages::new(),
            found: Found {
                denials: Vec::new(),
                warnings: Vec::new(),
                counts: index.counts(),
            },
        }
    }

    /// Judges the next `STEP` objects under one read of `view`; false once every one is judged.
    pub fn step(&mut self, view: &dyn ClusterView) -> bool {
        let claims_end = self.pools + self.addresses + self.claims.len();
        let clusters_end = claims_end + self.clusters.len();
        let total = clusters_end + self.holders.len();
        let end = (self.next + STEP).min(total);
        let index = view.read();
        let ctx = Ctx {
            index: &index,
            options: self.options,
            now: self.started,
        };
        let found = &mut self.found;
        for i in self.next..end {
            if i < self.pools {
                if let Some(pool) = index.pool_at(i) {
                    stored::pool_findings(&ctx, pool, &mut found.denials);
                }
            } else if i < self.pools + self.addresses {
                if let Some(a) = index.address_at(i - self.pools) {
                    stored::address_findings(&ctx, a, &mut found.denials);
                    health::address_findings(&index, a, &mut found.warnings);
                }
            } else if i < claims_end {
                if let Some(c) = index.claim(&self.claims[i - self.pools - self.addresses]) {
                    health::claim_findings(
                        &index,
                        c,
                        self.options,
                        self.now,
                        &mut self.usage,
                        &mut found.warnings,
                    );
                }
            } else if i < clusters_end {
                if let Some(c) = index
                    .cluster_versions(&self.clusters[i - claims_end])
                    .next()
                {
                    stored::cluster_findings(&ctx, c, &mut found.denials);
                }
            } else if let Some(h) = index
                .holder_versions(&self.holders[i - clusters_end])
                .next()
            {
                stored::holder_findings(&ctx, h, &mut found.denials);
            }
        }
        self.next = end;
        self.next < total
    }

    pub fn finish(mut self) -> Found {
        health::sort(&mut self.found.warnings);
        self.found
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Deref;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::cluster::{Caller, Ledger};
    use crate::index::Index;
    use crate::model::{project, Projection};
    use crate::rules::test_support::{addr, claim, index, ipool};

    /// A ledger that counts how often the index is read.
    struct Counted {
        ledger: Ledger,
        reads: AtomicUsize,
    }

    impl ClusterView for Counted {
        fn synced(&self) -> bool {
            true
        }
        fn object_counts(&self) -> Vec<(Kind, usize)> {
            self.ledger.read().counts()
        }
        fn read(&self) -> Box<dyn Deref<Target = Index> + '_> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Box::new(self.ledger.read())
        }
        fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<Projection>) {
            self.ledger.reserve(|ix| ((), f(ix)));
        }
        fn reserve_as(
            &self,
            caller: &Caller,
            basis: &crate::cluster::Basis,
            f: &mut dyn FnMut(&Index) -> Option<Projection>,
        ) {
            self.ledger.reserve_as(caller, basis, |ix| ((), f(ix)));
        }
    }

    const NS: &str = "ns";
    const POOL: &str = "InClusterIPPool";

    /// Two overlapping pools, 1,300 addresses in the first (most with their claim), one
    /// address twice and one outside its pool, and claims without an address.
    fn objects() -> Vec<(Kind, serde_json::Value)> {
        let mut objects = vec![
            (
                Kind::InClusterIPPool,
                ipool(NS, "a", json!({"addresses": ["10.0.0.0/20"], "prefix": 16})),
            ),
            (
                Kind::InClusterIPPool,
                ipool(
                    NS,
                    "b",
                    json!({"addresses": ["10.0.15.0/24"], "prefix": 16}),
                ),
            ),
        ];
        for i in 0..1300u32 {
            let ip = format!("10.0.{}.{}", i / 200, i % 200 + 1);
            let name = format!("m{i}");
            objects.push((Kind::IPAddress, addr(NS, &name, &ip, 16, POOL, "a")));
            if i % 100 != 7 {
                objects.push((
                    Kind::IPAddressClaim,
                    claim(NS, &format!("claim-{name}"), POOL, "a"),
                ));
            }
        }
        objects.push((Kind::IPAddress, addr(NS, "twin", "10.0.0.1", 16, POOL, "a")));
        objects.push((Kind::IPAddress, addr(NS, "far", "10.9.0.1", 16, POOL, "a")));
        objects.push((Kind::IPAddressClaim, claim(NS, "waiting", POOL, "b")));
        // A Cluster whose endpoint pool `a` can hand out (CP1), one inside its own pod network
        // (CP2).
        for (name, host) in [("vip", "10.0.3.250"), ("inner", "192.168.1.1")] {
            let cluster = json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"controlPlaneEndpoint": {"host": host},
                         "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}}}
            });
            objects.push((Kind::Cluster, cluster));
        }
        objects
    }

    fn view_of(objects: &[(Kind, serde_json::Value)]) -> (Index, Counted) {
        let refs: Vec<(Kind, &serde_json::Value)> = objects.iter().map(|(k, o)| (*k, o)).collect();
        let view = Counted {
            ledger: Ledger::new(index(&refs)),
            reads: AtomicUsize::new(0),
        };
        (index(&refs), view)
    }

    fn run(round: &mut Round, view: &Counted) -> usize {
        let mut steps = 1;
        while round.step(view) {
            steps += 1;
        }
        steps
    }

    #[test]
    fn a_round_in_steps_finds_what_one_pass_over_the_index_finds() {
        let (index, view) = view_of(&objects());
        let options = Options::default();
        let now = 1_800_000_000;
        let mut round = Round::start(&view, options, now);
        let steps = run(&mut round, &view);
        let found = round.finish();

        let total = index.len();
        assert!(total > 2 * STEP, "{total} objects: more than two steps");
        assert_eq!(steps, total.div_ceil(STEP));
        assert_eq!(
            view.reads.load(Ordering::Relaxed),
            1 + steps,
            "one read for the keys, one per step"
        );
        assert_eq!(found.denials, stored::judge(&index, options));
        assert_eq!(found.warnings, health::judge(&index, options, now));
        assert_eq!(found.counts, index.counts());
        let rules = |ids: Vec<String>| {
            let mut ids = ids;
            ids.sort();
            ids.dedup();
            ids
        };
        assert_eq!(
            rules(
                found
                    .denials
                    .iter()
                    .map(|(_, e)| e.rule.to_string())
                    .collect()
            ),
            ["A8", "A9", "CP1", "CP2", "P10"],
            "the fixture has something for each step to find"
        );
        assert_eq!(
            rules(
                found
                    .warnings
                    .iter()
                    .map(|(_, w)| w.rule.to_string())
                    .collect()
            ),
            ["H2"]
        );
    }

    #[test]
    fn objects_gone_by_their_step_are_passed_over_and_new_ones_judged_by_their_slot() {
        let (_, view) = view_of(&objects());
        let mut round = Round::start(&view, Options::default(), 1_800_000_000);
        let key = |kind, name: &str| ObjKey::new(kind, Some(NS), name);
        let add_pool = |name: &str, range: &str| {
            let pool = ipool(NS, name, json!({"addresses": [range], "prefix": 16}));
            view.ledger.apply(
                &key(Kind::InClusterIPPool, name),
                project(Kind::InClusterIPPool, &pool),
            );
        };
        view.ledger.delete(&key(Kind::IPAddress, "twin"));
        view.ledger.delete(&key(Kind::InClusterIPPool, "b"));
        // The first takes the slot pool b left, which the round has yet to go through; the
        // second a slot past the round's end.
        add_pool("late", "10.0.1.0/24");
        add_pool("later", "10.0.2.0/24");
        run(&mut round, &view);
        let found = round.finish();
        let named = |name: &str| {
            found
                .denials
                .iter()
                .filter(|(k, _)| k.name.as_ref() == name)
                .count()
        };
        assert_eq!(named("twin"), 0, "deleted before its step");
        assert_eq!(named("b"), 0);
        assert_eq!(named("late"), 1, "in a slot the round went through");
        assert_eq!(named("later"), 0, "the next round's");
        // Pool a is judged against the view at its step: it overlaps the new pools, not b.
        let a = found
            .denials
            .iter()
            .find(|(k, _)| k.name.as_ref() == "a")
            .expect("pool a overlaps");
        let text = a.1.to_string();
        assert!(
            text.contains("ns/late") && text.contains("ns/later") && !text.contains("ns/b "),
            "{text}"
        );
        // A9 for the twin's partner is gone with the twin.
        assert!(!found
            .denials
            .iter()
            .any(|(_, e)| e.rule == crate::rule_id::RuleId::A9));
    }
}
