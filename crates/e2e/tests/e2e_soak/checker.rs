//! The independent checker: it reads only the history of calls (each with its answer and its
//! times as the client saw them) and what the API server listed, and shares no code with
//! ipam-guard's src/ (addresses are parsed by `ipset`, on std).
//!
//! **Violations** (each must never happen):
//! - in any LIST: two pools of one address space whose allocatable sets meet (P10; only pools
//!   of one kind in the LISTs taken during the run, since one LIST is one consistent read, and
//!   every kind in the final one), two IPAddresses of one space holding one address (A9);
//! - in the final LIST: an IPAddress outside its pool (A8, P8), when that very pool (by uid) was
//!   stored all through the address's create;
//! - in the history, a write the API server stored while what it conflicts with was certainly
//!   stored all through the call: an address create over a held address (A9) or outside its
//!   pool (A8), a pool create or a pool update's added addresses over another pool (P10), a
//!   pool update leaving out a held address (P8), a pool DELETE while an address naming it was
//!   stored (P9). "Certainly stored all through [a, b]": its create or update got 2xx before a,
//!   and no call that may have changed it (2xx, or no answer) overlaps it or came before b;
//! - an answer with a server error from ipam-guard itself (`Webhook500`);
//! - a pool or address write sent after the decider was killed or paused (its own metric said
//!   it decided just before) and admitted before any other replica could decide (`no_decider`):
//!   a wait for the decider turned into an allow.
//!
//! An address's space is its pool's (docs/rules.md, P10): `default` when every pool ever
//! written under that name was in `default`, else the space of the pool certainly stored all
//! through the address's create, else unknown and the address is not compared.
//!
//! **False refusals**: a denial by ipam-guard all of whose causes name objects (A9, A7, P8, P9,
//! P10: the holders or overlapping pools; A8: the pool) that cannot explain it: none was
//! possibly stored with the conflicting value in [sent − slack, answered + slack], nor possibly
//! admitted (any answer but ipam-guard's own refusals, a 503, or the schema's refusals, made
//! before validating admission) less than the pending TTL before. A write the API server
//! refused because the webhook's answer came too late (`WebhookTimeout`) is such a possible
//! admission, held until the TTL from its answer (docs/rules.md, X2: a refused write holds its
//! reservation until then), never a false refusal nor an allow. A cause that names more
//! than the message lists (`and N more`), or of another rule, counts as explained. A denial
//! explained only by stretching the window back to a fault that broke the watches is counted
//! apart (`stale after a watch fault`), not as a false refusal; so is one explained by a
//! pending entry that outlived its TTL while a watch fault kept it from expiring (as designed:
//! crates/server/src/cluster/live/health.rs), each watch fault counted as sick until writes were admitted
//! again after it, and at least until 10 s after it was undone.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::faults::{Fault, FaultKind};
use super::ipset::{allocatable, parse_ip, Set};
use super::model::*;
use super::workload::Snapshot;

/// How long after a fault that broke the watches was undone they may still be catching up (a
/// restarted v1.20.2 serves custom resources seconds after its /readyz says ok:
/// crates/e2e/tests/e2e_outage.rs). A denial may rest on what they had not delivered yet.
const WATCH_GRACE: f64 = 10.0;

pub struct Input<'a> {
    pub history: &'a [Record],
    /// LISTs taken while the clients wrote.
    pub during: &'a [Snapshot],
    /// LISTs of every kind after the clients stopped.
    pub last: &'a [Snapshot],
    pub faults: &'a [Fault],
    /// The replicas' pending TTL, in seconds.
    pub ttl: f64,
    /// Watch latency allowed for, in seconds.
    pub slack: f64,
    /// How long after the decider was killed or paused nothing can be admitted, in seconds.
    pub no_decider: f64,
}

#[derive(Default, Debug)]
pub struct Findings {
    pub violations: Vec<String>,
    pub false_refusals: Vec<String>,
    pub stale_after_watch_fault: Vec<String>,
    /// False refusals that a pending entry explains if a clean handover restarts its TTL (it
    /// then lives longer than the TTL from its admission).
    pub false_after_handover: usize,
    /// Denials whose causes the model checked (all of them view-reading rules it reads).
    pub refusals_checked: usize,
    /// Addresses not compared for want of a known space.
    pub unknown_space: usize,
    /// Violations in the history that came within the pending TTL after an admitted write of
    /// the conflicting object's name that the API server refused (AlreadyExists, Conflict).
    pub after_refused_write: usize,
}

/// Marks a violation that followed an admitted write the API server then refused.
const AFTER_REFUSED: &str = "; it came within the pending TTL after an admitted write of";

struct History<'a> {
    by_key: HashMap<&'a Key, Timeline<'a>>,
    by_uid: HashMap<&'a str, &'a Record>,
    ttl: f64,
}

fn is_write(r: &Record) -> bool {
    matches!(r.method, Method::Create | Method::Update)
}

/// One key's calls, with what the two questions below need precomputed, so that an hour's
/// history (hundreds of thousands of calls) is checked in seconds.
#[derive(Default)]
struct Timeline<'a> {
    /// Sorted by the time sent.
    ops: Vec<&'a Record>,
    /// For each prefix `ops[..i]`, the three latest answers (time, index) among the calls that
    /// may have changed what is stored.
    applied_top: Vec<[(f64, usize); 3]>,
    /// The 2xx creates and updates, (answer, index), by answer.
    done_writes: Vec<(f64, usize)>,
    /// (from, until, index): when each write may have been stored or held as admitted, by from.
    presence: Vec<(f64, f64, usize)>,
    /// The running maximum of `presence`'s untils.
    presence_until_max: Vec<f64>,
    always_default: bool,
}

const NONE: (f64, usize) = (f64::NEG_INFINITY, usize::MAX);

/// When a pending entry made at `t` ends, if it lives `ttl` of the time the watches are well:
/// entries of a kind whose watch is sick do not expire (crates/server/src/cluster/live/health.rs), so each
/// sick period (sorted) it meets adds its length.
fn pending_until(t: f64, ttl: f64, sick: &[(f64, f64)]) -> f64 {
    let (mut at, mut left) = (t, ttl);
    for &(from, to) in sick {
        if from > at + left {
            break;
        }
        if to <= at {
            continue;
        }
        left -= (from - at).max(0.0);
        at = at.max(to);
    }
    at + left
}

impl<'a> Timeline<'a> {
    /// `pending`: when a pending entry made by an admission answered at `t` ends.
    fn new(mut ops: Vec<&'a Record>, pending: &dyn Fn(f64) -> f64) -> Timeline<'a> {
        ops.sort_by(|a, b| a.send.total_cmp(&b.send));
        let mut applied_top = Vec::with_capacity(ops.len() + 1);
        let mut top = [NONE; 3];
        applied_top.push(top);
        for (i, r) in ops.iter().enumerate() {
            if r.outcome.may_have_applied() {
                let mut all = [top[0], top[1], top[2], (r.answer, i)];
                all.sort_by(|a, b| b.0.total_cmp(&a.0));
                top = [all[0], all[1], all[2]];
            }
            applied_top.push(top);
        }
        let mut done_writes: Vec<(f64, usize)> = ops
            .iter()
            .enumerate()
            .filter(|(_, r)| r.outcome == Outcome::Done && is_write(r))
            .map(|(i, r)| (r.answer, i))
            .collect();
        done_writes.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The earliest answer of a 2xx call sent at or after each position.
        let mut done_after = vec![f64::INFINITY; ops.len() + 1];
        for i in (0..ops.len()).rev() {
            done_after[i] = match ops[i].outcome == Outcome::Done {
                true => done_after[i + 1].min(ops[i].answer),
                false => done_after[i + 1],
            };
        }
        let mut presence: Vec<(f64, f64, usize)> = ops
            .iter()
            .enumerate()
            .filter(|(_, v)| is_write(v) && v.outcome.may_have_been_admitted() && v.spec.is_some())
            .map(|(i, v)| {
                let mut until = pending(v.answer);
                if v.outcome.may_have_applied() {
                    // Stored until a later call that certainly changed it.
                    let next = ops.partition_point(|j| j.send <= v.answer);
                    until = until.max(done_after[next]);
                }
                (v.send, until, i)
            })
            .collect();
        presence.sort_by(|a, b| a.0.total_cmp(&b.0));
        let presence_until_max = presence
            .iter()
            .scan(f64::NEG_INFINITY, |m, p| {
                *m = m.max(p.1);
                Some(*m)
            })
            .collect();
        let always_default = ops
            .iter()
            .filter_map(|r| r.spec.as_ref().and_then(Spec::pool))
            .all(|p| p.space == DEFAULT_SPACE);
        Timeline {
            ops,
            applied_top,
            done_writes,
            presence,
            presence_until_max,
            always_default,
        }
    }
}

impl<'a> History<'a> {
    /// `pending`: when a pending entry made by an admission answered at `t` ends (`t + ttl` in
    /// the plain model).
    fn new(records: &'a [Record], ttl: f64, pending: &dyn Fn(f64) -> f64) -> History<'a> {
        let mut ops: HashMap<&Key, Vec<&Record>> = HashMap::new();
        let mut by_uid = HashMap::new();
        for r in records {
            ops.entry(&r.key).or_default().push(r);
            if let (Some(uid), Outcome::Done, Method::Create) = (&r.uid, &r.outcome, r.method) {
                by_uid.insert(uid.as_str(), r);
            }
        }
        History {
            by_key: ops
                .into_iter()
                .map(|(k, v)| (k, Timeline::new(v, pending)))
                .collect(),
            by_uid,
            ttl,
        }
    }

    fn ops(&self, key: &Key) -> &[&'a Record] {
        self.by_key.get(key).map_or(&[], |t| t.ops.as_slice())
    }

    /// The version of `key` stored all through `[a, b]` for certain, if one is.
    fn certain(&self, key: &Key, a: f64, b: f64) -> Option<&'a Record> {
        self.certain_but(key, a, b, None)
    }

    /// As `certain`, `but` (a call on `key`) left out of what may have changed it.
    ///
    /// Only the 2xx write answered last before `a` can be certain: any other one answered
    /// before `a` either came before it (and was replaced) or overlaps it (and either may have
    /// landed last). It is, if no other call that may have changed the object was answered
    /// after it was sent and sent before `b`.
    fn certain_but(&self, key: &Key, a: f64, b: f64, but: Option<&Record>) -> Option<&'a Record> {
        let t = self.by_key.get(key)?;
        let at = t.done_writes.partition_point(|(answer, _)| *answer < a);
        let (_, vi) = *t.done_writes[..at]
            .iter()
            .rev()
            .find(|(_, i)| !but.is_some_and(|x| std::ptr::eq(t.ops[*i], x)))?;
        let v = t.ops[vi];
        let sent_before_b = t.ops.partition_point(|j| j.send < b);
        let interferes = t.applied_top[sent_before_b].iter().any(|&(answer, i)| {
            i != usize::MAX
                && i != vi
                && !but.is_some_and(|x| std::ptr::eq(t.ops[i], x))
                && answer > v.send
        });
        (!interferes).then_some(v)
    }

    /// Whether some version of `key` matching `pred` may have been stored, or may have been
    /// held as admitted (pending TTL), at some time in `[from, to]`.
    fn possibly_present(
        &self,
        key: &Key,
        from: f64,
        to: f64,
        pred: impl Fn(&Spec) -> bool,
    ) -> bool {
        let Some(t) = self.by_key.get(key) else {
            return false;
        };
        let end = t.presence.partition_point(|p| p.0 <= to);
        for j in (0..end).rev() {
            if t.presence_until_max[j] < from {
                break;
            }
            let (_, until, i) = t.presence[j];
            if until >= from && t.ops[i].spec.as_ref().is_some_and(&pred) {
                return true;
            }
        }
        false
    }

    /// Every pool ever written under `key` was in `default`.
    fn always_default(&self, key: &Key) -> bool {
        self.by_key.get(key).is_none_or(|t| t.always_default)
    }

    fn address_space(&self, a: &AddressSpec, send: f64, answer: f64) -> Option<String> {
        if self.always_default(&a.pool) {
            return Some(DEFAULT_SPACE.to_string());
        }
        let v = self.certain(&a.pool, send, answer)?;
        Some(v.spec.as_ref()?.pool()?.space.clone())
    }

    /// The space of a stored address, through the create that stored it.
    fn stored_address_space(&self, uid: &str, a: &AddressSpec) -> Option<String> {
        match self.by_uid.get(uid) {
            Some(r) => self.address_space(a, r.send, r.answer),
            None if self.always_default(&a.pool) => Some(DEFAULT_SPACE.to_string()),
            None => None,
        }
    }
}

/// Names the write of `key` that ipam-guard may have admitted and the API server refused
/// within the pending TTL before `r` was answered: what may have hidden the stored object.
/// A write the API server gave up on (its webhook timeout) is one: admitted, never stored.
fn refused_before(h: &History<'_>, key: &Key, r: &Record) -> String {
    h.ops(key)
        .iter()
        .filter(|x| match x.outcome {
            Outcome::AlreadyExists | Outcome::Conflict | Outcome::WebhookTimeout => true,
            Outcome::NotFound => x.method == Method::Update,
            _ => false,
        })
        .filter(|x| x.send <= r.answer && x.answer + h.ttl >= r.send)
        .map(|x| {
            format!(
                "{AFTER_REFUSED} its name refused: {} ({})",
                at(x),
                describe(&x.spec)
            )
        })
        .next_back()
        .unwrap_or_default()
}

fn same_ip(a: &str, b: &str) -> bool {
    matches!((parse_ip(a), parse_ip(b)), (Some(x), Some(y)) if x == y)
}

fn alloc(spec: &Spec) -> Option<Set> {
    allocatable(spec.pool()?)
}

fn at(r: &Record) -> String {
    format!(
        "{} {} by client {} ({}) sent at {:.2} s, answered {} at {:.2} s",
        match r.method {
            Method::Create => "CREATE",
            Method::Update => "UPDATE",
            Method::Delete => "DELETE",
        },
        r.key,
        r.client,
        r.tag,
        r.send,
        r.status,
        r.answer
    )
}

fn describe(spec: &Option<Spec>) -> String {
    match spec {
        Some(Spec::Pool(p)) => format!(
            "[{}]{}{}",
            p.addresses.join(", "),
            match p.excluded.is_empty() {
                true => String::new(),
                false => format!(" excluding [{}]", p.excluded.join(", ")),
            },
            match p.space.as_str() {
                DEFAULT_SPACE => String::new(),
                s => format!(" in space {s}"),
            }
        ),
        Some(Spec::Address(a)) => format!("{} of {}", a.ip, a.pool),
        Some(Spec::Claim { pool }) => format!("for {pool}"),
        None => String::new(),
    }
}

pub fn check(input: &Input<'_>) -> Findings {
    let ttl = input.ttl;
    let h = History::new(input.history, ttl, &|t| t + ttl);
    let mut f = Findings::default();
    let mut seen = BTreeSet::new();
    let mut violation = |f: &mut Findings, dedupe: String, text: String| {
        if seen.insert(dedupe) {
            f.violations.push(text);
        }
    };

    for r in input.history {
        if r.outcome == Outcome::Webhook500 {
            violation(
                &mut f,
                format!("500 {}", r.send),
                format!(
                    "ipam-guard answered with a server error: {}: {}",
                    at(r),
                    r.message
                ),
            );
        }
    }
    history_conflicts(&h, input, &mut f, &mut violation);
    // A write sent after the decider was killed or paused, admitted before any other replica
    // could decide: a wait for the decider turned into an allow, or a replica deciding alone.
    for x in input.faults.iter().filter(|x| {
        x.hit_the_decider && matches!(x.kind, FaultKind::KillDecider | FaultKind::PauseDecider)
    }) {
        for r in input.history.iter().filter(|r| {
            is_write(r)
                && r.key.kind != Kind::Claim
                && r.send >= x.start
                && r.answer < x.start + input.no_decider
                && matches!(r.outcome, Outcome::Done | Outcome::AlreadyExists)
        }) {
            violation(
                &mut f,
                format!("no decider {}", r.send),
                format!(
                    "admitted while no replica could decide: {} ({}), {:.2} s after the fault {} ({})",
                    at(r),
                    describe(&r.spec),
                    r.send - x.start,
                    x.kind.label(),
                    x.detail
                ),
            );
        }
    }
    snapshot_conflicts(&h, input, &mut f, &mut violation);
    let sick = sick_periods(input);
    let stretched = History::new(input.history, ttl, &|t| pending_until(t, ttl, &sick));
    let handovers: Vec<(f64, f64)> = input
        .faults
        .iter()
        .filter(|x| x.kind == FaultKind::TermDecider)
        .map(|x| (x.start, x.end))
        .collect();
    let restarted = History::new(input.history, ttl, &|t| {
        handovers
            .iter()
            .fold(t + ttl, |until, &(from, to)| match from <= until {
                true => until.max(to + ttl),
                false => until,
            })
    });
    refusals(&h, &stretched, &restarted, &sick, input, &mut f);
    f.after_refused_write = f
        .violations
        .iter()
        .filter(|v| v.contains(AFTER_REFUSED))
        .count();
    f
}

fn history_conflicts(
    h: &History<'_>,
    input: &Input<'_>,
    f: &mut Findings,
    violation: &mut impl FnMut(&mut Findings, String, String),
) {
    let keys: Vec<&Key> = {
        let mut k: Vec<&Key> = h.by_key.keys().copied().collect();
        k.sort();
        k
    };
    for r in input.history.iter().filter(|r| r.outcome == Outcome::Done) {
        match (&r.spec, r.method) {
            (Some(Spec::Address(a)), Method::Create) => {
                let Some(space) = h.address_space(a, r.send, r.answer) else {
                    f.unknown_space += 1;
                    continue;
                };
                for k in keys
                    .iter()
                    .filter(|k| k.kind == Kind::Address && **k != &r.key)
                {
                    let Some(v) = h.certain(k, r.send, r.answer) else {
                        continue;
                    };
                    let Some(held) = v.spec.as_ref().and_then(Spec::address) else {
                        continue;
                    };
                    if same_ip(&held.ip, &a.ip)
                        && h.address_space(held, v.send, v.answer).as_deref() == Some(&space)
                    {
                        violation(
                            f,
                            format!("A9 {} {}", r.key, v.key),
                            format!(
                                "duplicate address stored (A9): {} ({}) while {} held {} in space {space} \
                                 (stored by {}){}",
                                at(r),
                                describe(&r.spec),
                                v.key,
                                held.ip,
                                at(v),
                                refused_before(h, &v.key, r)
                            ),
                        );
                    }
                }
                if let Some(p) = h.certain(&a.pool, r.send, r.answer) {
                    let ip = parse_ip(&a.ip);
                    if let (Some(set), Some(ip)) = (p.spec.as_ref().and_then(alloc), ip) {
                        if !set.contains(ip) {
                            violation(
                                f,
                                format!("A8 {} {}", r.key, r.send),
                                format!(
                                    "address stored outside its pool (A8): {} ({}) while {} held [{set}] (stored by {}){}",
                                    at(r),
                                    describe(&r.spec),
                                    p.key,
                                    at(p),
                                    refused_before(h, &p.key, r)
                                ),
                            );
                        }
                    }
                }
            }
            (Some(Spec::Pool(p)), Method::Create | Method::Update) => {
                let Some(mine) = allocatable(p) else {
                    continue;
                };
                // What the pool held before an update, for certain.
                let before = match r.method {
                    Method::Create => None,
                    _ => match h
                        .certain_but(&r.key, r.send, r.answer, Some(r))
                        .and_then(|v| v.spec.as_ref().and_then(alloc))
                    {
                        Some(before) => Some(before),
                        None => continue,
                    },
                };
                // P10 judges what an update adds (X5): the rest was judged before.
                let probe = match &before {
                    None => mine.clone(),
                    Some(before) => mine.difference(before),
                };
                for k in keys.iter().filter(|k| k.kind.is_pool() && **k != &r.key) {
                    let Some(v) = h.certain(k, r.send, r.answer) else {
                        continue;
                    };
                    let Some(other) = v.spec.as_ref().and_then(Spec::pool) else {
                        continue;
                    };
                    let shared = allocatable(other)
                        .map(|o| o.intersection(&probe))
                        .unwrap_or_default();
                    if other.space == p.space && !shared.is_empty() {
                        violation(
                            f,
                            format!("P10 {} {} {}", r.key, v.key, r.send),
                            format!(
                                "overlapping pool stored (P10): {} ({}) while {} held {} (stored by {}); shared: {shared}{}",
                                at(r),
                                describe(&r.spec),
                                v.key,
                                describe(&v.spec),
                                at(v),
                                refused_before(h, &v.key, r)
                            ),
                        );
                    }
                }
                // P8 keeps inside what was inside: an address stored while its pool was absent
                // may lie anywhere, and the pool created later need not hold it.
                if let Some(before) = &before {
                    for k in keys.iter().filter(|k| k.kind == Kind::Address) {
                        let Some(v) = h.certain(k, r.send, r.answer) else {
                            continue;
                        };
                        let Some(held) = v.spec.as_ref().and_then(Spec::address) else {
                            continue;
                        };
                        if held.pool == r.key
                            && parse_ip(&held.ip)
                                .is_some_and(|ip| before.contains(ip) && !mine.contains(ip))
                        {
                            violation(
                                f,
                                format!("P8 {} {}", r.key, r.send),
                                format!(
                                    "pool update stored without a held address (P8): {} ({}) while {} held {} (stored by {}){}",
                                    at(r),
                                    describe(&r.spec),
                                    v.key,
                                    held.ip,
                                    at(v),
                                    refused_before(h, &v.key, r)
                                ),
                            );
                        }
                    }
                }
            }
            (None, Method::Delete) if r.key.kind.is_pool() => {
                for k in keys.iter().filter(|k| k.kind == Kind::Address) {
                    let Some(v) = h.certain(k, r.send, r.answer) else {
                        continue;
                    };
                    if v.spec.as_ref().and_then(Spec::address).map(|a| &a.pool) == Some(&r.key) {
                        violation(
                            f,
                            format!("P9 {} {}", r.key, r.send),
                            format!(
                                "pool deleted while an address named it (P9): {} while {} ({}) was stored (by {}){}",
                                at(r),
                                v.key,
                                describe(&v.spec),
                                at(v),
                                refused_before(h, &v.key, r)
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

fn snapshot_conflicts(
    h: &History<'_>,
    input: &Input<'_>,
    f: &mut Findings,
    violation: &mut impl FnMut(&mut Findings, String, String),
) {
    // The LISTs taken during the run, one at a time; the last ones together.
    let mut groups: Vec<(f64, Vec<&Snapshot>)> =
        input.during.iter().map(|s| (s.at, vec![s])).collect();
    if !input.last.is_empty() {
        groups.push((input.last[0].at, input.last.iter().collect()));
    }
    for (t, group) in &groups {
        let pools: Vec<(Key, &String, &Spec)> = group
            .iter()
            .filter(|s| s.kind.is_pool())
            .flat_map(|s| {
                s.items
                    .iter()
                    .map(move |(n, uid, spec)| (Key::new(s.kind, n.clone()), uid, spec))
            })
            .collect();
        for (i, (ka, _, sa)) in pools.iter().enumerate() {
            for (kb, _, sb) in &pools[i + 1..] {
                let (Some(pa), Some(pb)) = (sa.pool(), sb.pool()) else {
                    continue;
                };
                if pa.space != pb.space {
                    continue;
                }
                let (Some(aa), Some(ab)) = (allocatable(pa), allocatable(pb)) else {
                    continue;
                };
                let shared = aa.intersection(&ab);
                if !shared.is_empty() {
                    violation(
                        f,
                        format!("stored P10 {ka} {kb} {shared} {pa:?} {pb:?}"),
                        format!(
                            "stored overlap (P10) in the LIST at {t:.2} s: {ka} [{}] and {kb} [{}] in space {}, shared {shared}",
                            pa.addresses.join(", "),
                            pb.addresses.join(", "),
                            pa.space
                        ),
                    );
                }
            }
        }
        let mut holders: BTreeMap<(String, (super::ipset::Family, u128)), Vec<String>> =
            BTreeMap::new();
        for s in group.iter().filter(|s| s.kind == Kind::Address) {
            for (name, uid, spec) in &s.items {
                let Some(a) = spec.address() else { continue };
                let (Some(space), Some(ip)) = (h.stored_address_space(uid, a), parse_ip(&a.ip))
                else {
                    continue;
                };
                holders
                    .entry((space, ip))
                    .or_default()
                    .push(format!("{name} ({} of {})", a.ip, a.pool));
            }
        }
        for ((space, _), names) in holders.into_iter().filter(|(_, v)| v.len() > 1) {
            violation(
                f,
                format!("stored A9 {names:?}"),
                format!(
                    "stored duplicate address (A9) in the LIST at {t:.2} s, space {space}: {}",
                    names.join(", ")
                ),
            );
        }
    }
    // The final LIST: every address inside the pool that was stored all through its create.
    let pools: HashMap<Key, (&String, &Spec)> = input
        .last
        .iter()
        .filter(|s| s.kind.is_pool())
        .flat_map(|s| {
            s.items
                .iter()
                .map(move |(n, uid, spec)| (Key::new(s.kind, n.clone()), (uid, spec)))
        })
        .collect();
    for s in input.last.iter().filter(|s| s.kind == Kind::Address) {
        for (name, uid, spec) in &s.items {
            let Some(a) = spec.address() else { continue };
            let Some(r) = h.by_uid.get(uid.as_str()) else {
                continue;
            };
            let Some(anchor) = h.certain(&a.pool, r.send, r.answer) else {
                continue;
            };
            let Some((pool_uid, pool_spec)) = pools.get(&a.pool) else {
                continue;
            };
            if anchor.uid.as_deref() != Some(pool_uid.as_str()) {
                continue;
            }
            let (Some(set), Some(ip)) = (alloc(pool_spec), parse_ip(&a.ip)) else {
                continue;
            };
            if !set.contains(ip) {
                violation(
                    f,
                    format!("stored A8 {name} {}", a.ip),
                    format!(
                        "stored address outside its pool (A8/P8) in the final LIST: {name} holds {} but {} hands out [{set}]",
                        a.ip, a.pool
                    ),
                );
            }
        }
    }
}

/// An object a denial's cause names, with the value it says conflicts.
#[derive(Debug, Clone, PartialEq)]
enum Named {
    /// Another address holds the same address (A9), or names the same claim (A7).
    Address(Key),
    /// A pool shares these addresses (P10; None when the message's list did not parse).
    Pool(Key, Option<Set>),
    /// An address naming the pool, at this address (P8, P9).
    Holder(Key, String),
    /// The pool an address is not allocatable in (A8).
    PoolLacks(Key),
}

/// A cause of a denial, as the checker reads it: None when it cannot tell what it rests on.
fn named(rule: &str, text: &str) -> Option<Vec<Named>> {
    fn key(text: &str) -> Option<Key> {
        let (word, rest) = text.trim().split_once(' ')?;
        let kind = Kind::from_word(word)?;
        let name = match kind.namespaced() {
            true => rest.split_once('/')?.1,
            false => rest,
        };
        Some(Key::new(kind, name.trim()))
    }
    fn truncated(list: &str) -> bool {
        list.contains(" more")
    }
    let after = |marker: &str| text.split_once(marker).map(|(_, rest)| rest.trim());
    match rule {
        "A9" => {
            let list = after("is already held by ")?;
            if truncated(list) {
                return None;
            }
            list.split(", ")
                .map(|k| key(k).map(Named::Address))
                .collect()
        }
        "A7" => {
            let list = after("is already fulfilled by ")?;
            if truncated(list) {
                return None;
            }
            list.split(", ")
                .map(|k| key(k).map(Named::Address))
                .collect()
        }
        "P10" => {
            let mut rest = after("overlaps ")?;
            let mut out = Vec::new();
            loop {
                let (k, tail) = rest.split_once(" (")?;
                let (shared, tail) = tail.split_once(')')?;
                let set = shared
                    .split(", ")
                    .map(Set::parse_entry)
                    .try_fold(Set::default(), |acc, s| Some(acc.union(&s?)));
                out.push(Named::Pool(key(k)?, set));
                let tail = tail.trim_start();
                match tail.strip_prefix(", ") {
                    Some(more) => rest = more,
                    None if tail.starts_with("and ") => return None,
                    None => return Some(out),
                }
            }
        }
        "P9" => {
            let list = after("Held by: ")?;
            if truncated(list) {
                return None;
            }
            list.split("), ")
                .map(|item| {
                    let (k, ip) = item.split_once(" (")?;
                    let name = k.trim().split_once('/')?.1;
                    Some(Named::Holder(
                        Key::new(Kind::Address, name),
                        ip.trim_end_matches(')').to_string(),
                    ))
                })
                .collect()
        }
        "P8" => {
            let list = after("do not contain allocated addresses: ")?;
            if truncated(list) {
                return None;
            }
            list.split(", ")
                .map(|item| {
                    let (k, ip) = item.trim().split_once(' ')?;
                    let name = k.split_once('/')?.1;
                    Some(Named::Holder(
                        Key::new(Kind::Address, name),
                        ip.trim().to_string(),
                    ))
                })
                .collect()
        }
        "A8" => {
            let rest = after("not an allocatable address of ")?;
            let (k, _) = rest.split_once(':')?;
            Some(vec![Named::PoolLacks(key(k)?)])
        }
        _ => None,
    }
}

/// The causes of a denial's message: (rule, text before its `[ipam-guard RULE]`).
fn causes(message: &str) -> Vec<(String, String)> {
    let pieces: Vec<&str> = message.split("[ipam-guard ").collect();
    let mut out = Vec::new();
    for k in 1..pieces.len() {
        let Some((rule, _)) = pieces[k].split_once(']') else {
            continue;
        };
        let text = match k {
            1 => pieces[0],
            _ => pieces[k - 1].split_once(']').map_or("", |(_, t)| t),
        };
        out.push((rule.to_string(), text.to_string()));
    }
    out
}

/// Whether `n` may explain the denial of `r` with the window `[from, to]`.
fn explains(h: &History<'_>, r: &Record, n: &Named, from: f64, to: f64) -> bool {
    let own = r.spec.as_ref();
    match n {
        Named::Address(k) => {
            let own = own.and_then(Spec::address);
            h.possibly_present(k, from, to, |s| match (s.address(), own) {
                (Some(a), Some(o)) => same_ip(&a.ip, &o.ip) || a.claim == o.claim,
                _ => true,
            })
        }
        Named::Pool(k, shared) => h.possibly_present(k, from, to, |s| {
            match (s.pool().and_then(|p| Set::parse_all(&p.addresses)), shared) {
                (Some(declared), Some(shared)) => declared.intersects(shared),
                _ => true,
            }
        }),
        Named::Holder(k, ip) => h.possibly_present(k, from, to, |s| {
            s.address()
                .is_none_or(|a| a.pool == r.key && same_ip(&a.ip, ip))
        }),
        Named::PoolLacks(k) => {
            let ip = own.and_then(Spec::address).and_then(|a| parse_ip(&a.ip));
            h.possibly_present(k, from, to, |s| match (alloc(s), ip) {
                (Some(set), Some(ip)) => !set.contains(ip),
                _ => true,
            })
        }
    }
}

/// When the watches may have been broken, sorted: from each fault that breaks them until writes
/// were admitted again after it (that needs every watch synced), and at least until
/// `WATCH_GRACE` after the fault was undone.
fn sick_periods(input: &Input<'_>) -> Vec<(f64, f64)> {
    let mut sick: Vec<(f64, f64)> = input
        .faults
        .iter()
        .filter(|x| x.kind.breaks_watches())
        .map(|x| {
            let back = resumed(input.history, x).map_or(f64::INFINITY, |t| x.start + t);
            (x.start, back.max(x.end + WATCH_GRACE))
        })
        .collect();
    sick.sort_by(|a, b| a.0.total_cmp(&b.0));
    sick
}

/// `h` holds the plain model; `stretched` the one whose pending entries outlive the watch
/// faults they meet; `restarted` the one where a clean handover gives each entry it hands
/// over a whole TTL again (only to say so beside a false refusal: it stays one).
fn refusals(
    h: &History<'_>,
    stretched: &History<'_>,
    restarted: &History<'_>,
    sick: &[(f64, f64)],
    input: &Input<'_>,
    f: &mut Findings,
) {
    for r in input.history {
        let Outcome::Denied(_) = &r.outcome else {
            continue;
        };
        let cs = causes(&r.message);
        let mut all_named = Vec::new();
        let readable = !cs.is_empty()
            && cs.iter().all(|(rule, text)| match named(rule, text) {
                Some(n) if !n.is_empty() => {
                    all_named.push((rule.clone(), n));
                    true
                }
                _ => false,
            });
        if !readable {
            continue;
        }
        f.refusals_checked += 1;
        let (from, to) = (r.send - input.slack, r.answer + input.slack);
        let any = |h: &History<'_>, from: f64| {
            all_named
                .iter()
                .any(|(_, ns)| ns.iter().any(|n| explains(h, r, n, from, to)))
        };
        if any(h, from) {
            continue;
        }
        let watch_fault = sick
            .iter()
            .filter(|(start, end)| *start <= r.send && r.send <= *end)
            .map(|(start, _)| start - input.slack)
            .fold(from, f64::min);
        let text = format!(
            "{} ({}): {}; {}",
            at(r),
            describe(&r.spec),
            r.message.trim(),
            all_named
                .iter()
                .flat_map(|(rule, ns)| ns.iter().map(move |n| format!("{rule} names {n:?}")))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if any(stretched, watch_fault) {
            f.stale_after_watch_fault.push(text);
        } else {
            // The fault it followed, if any: where to look first.
            let after = input
                .faults
                .iter()
                .rfind(|x| x.start <= r.send)
                .map(|x| {
                    format!(
                        " [{:.1} s after the fault {} ({})]",
                        r.send - x.start,
                        x.kind.label(),
                        x.detail
                    )
                })
                .unwrap_or_default();
            let restart = match any(restarted, from) {
                true => {
                    f.false_after_handover += 1;
                    " [explained if a clean handover gave the admissions it handed over a whole \
                     pending TTL again]"
                }
                false => "",
            };
            f.false_refusals.push(text + &after + restart);
        }
    }
}

/// Seconds from a fault until the first pool or address write sent after it was admitted: an
/// admission takes the decider's serialised step (X2), where some denials (A8, A6) may be
/// answered by any replica alone.
pub fn resumed(history: &[Record], fault: &Fault) -> Option<f64> {
    history
        .iter()
        .filter(|r| {
            r.send >= fault.start
                && is_write(r)
                && r.key.kind != Kind::Claim
                && matches!(r.outcome, Outcome::Done | Outcome::AlreadyExists)
        })
        .map(|r| r.answer - fault.start)
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.min(t))))
}

#[cfg(test)]
#[path = "checker_tests.rs"]
mod tests;
