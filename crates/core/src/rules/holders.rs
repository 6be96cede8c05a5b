//! Addresses held outside every pool: a `SpiderReservedIP`'s (RI1-RI6) and a `VSphereMachine`'s
//! static `spec.network.devices[].ipAddrs` (SA1-SA3). Both belong to the address space of their
//! object, as a Cluster's control-plane endpoint does (`rules::cluster`, CP1-CP4), and this file
//! says what each is owed on every side: the holder itself, a pool that could hand the address
//! out (RI5, SA2) and an address object holding it (RI4, SA1).
//!
//! What breaks decides deny or warn. Two machines with one address is an outage: a machine whose
//! static address is already in use, or can be handed out, is refused (SA3). Reserving an
//! address that is in use is what one does before draining it: a warning (RI6).

use serde_json::Value;

use crate::address::{AddrSet, Family, Ip, IpRange};
use crate::field::{FieldError, Verdict, Warning};
use crate::kinds::Kind;
use crate::model::holder::{reserved_spec, static_addresses, HolderProj, ReservedSpec};
use crate::model::paths::{address, reserved_ip as fields};
use crate::model::pool::PoolReading;
use crate::model::written::Written;
use crate::model::{project, AddressProj, KeyRef, Meta, ObjKey, Operation, Projection};
use crate::rule_id::RuleId;
use crate::rules::cluster::exclude_field;
use crate::rules::util::{allocatable_added_sets, each_capped, in_scope, join_limited, ratchet};
use crate::rules::{Call, Ctx, Options, OverlapScope, Validator};

/// `SpiderReservedIP`: RI1-RI3 and RI6.
pub(crate) struct ReservedIp;

impl Validator for ReservedIp {
    fn create(&self, obj: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let spec = reserved_spec(obj);
        let mut v = Verdict {
            errors: spec_findings(&spec),
            ..Verdict::default()
        };
        if let Some(Projection::Holder(h)) = project(call.kind, obj) {
            reserved_against_view(&h, None, ctx, &mut v);
        }
        v
    }

    fn update(&self, obj: &Value, old: &Value, call: &Call, ctx: &Ctx) -> Verdict {
        let mut v = Verdict::default();
        let (meta, old_meta) = (Meta::read(obj), Meta::read(old));
        if meta.deleting || old_meta.deleting {
            return v;
        }
        let (spec, before) = (reserved_spec(obj), reserved_spec(old));
        // RI2: Spiderpool's webhook refuses any change of ipVersion. One left out is the first
        // entry's family, as Spiderpool's mutating webhook fills it in.
        if let (Some(new), Some(was)) = (spec.family(), before.family()) {
            if new != was {
                v.deny(FieldError::forbidden(
                    RuleId::RI2,
                    fields::IP_VERSION,
                    format!("is not changeable (was {})", version_of(was)),
                ));
            }
        }
        // X5: the spec's own findings only where the update brings them.
        v.errors
            .extend(ratchet(spec_findings(&spec), &spec_findings(&before)));
        let (Some(Projection::Holder(h)), Some(Projection::Holder(was))) =
            (project(call.kind, obj), project(call.kind, old))
        else {
            return v;
        };
        let moved = h.space != was.space;
        reserved_against_view(&h, (!moved).then_some(&*was), ctx, &mut v);
        v
    }

    /// ReservedIPs are Spiderpool's to delete; what they held is free again.
    fn delete(&self, _old: &Value, _call: &Call, _ctx: &Ctx) -> Verdict {
        Verdict::default()
    }

    fn view_denials(&self, op: Operation, options: &Options) -> Vec<RuleId> {
        match op {
            Operation::Create | Operation::Update if options.overlap_scope != OverlapScope::Off => {
                vec![RuleId::RI3]
            }
            _ => Vec::new(),
        }
    }
}

/// RI1 and RI2 on the spec alone, as Spiderpool's webhook reads it: `ipVersion` 4 or 6 (its
/// mutating webhook fills it in from `ips[0]` when absent), `ips` not empty, each entry an IP or a
/// range `a-b` of that family.
fn spec_findings(spec: &ReservedSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    errors.extend(spec.ip_version.type_error(RuleId::RI2, fields::IP_VERSION));
    if let Some(v) = spec.ip_version.get() {
        if spec.version_family().is_none() {
            errors.push(FieldError::invalid(
                RuleId::RI2,
                fields::IP_VERSION,
                spec.ip_version_value.cloned().unwrap_or(Value::Null),
                format!("{v} is not supported: supported values: \"4\", \"6\""),
            ));
        }
    }
    let ips = &spec.ips;
    errors.extend(ips.list.type_error(RuleId::RI1, ips.path));
    if ips.len == 0 && !matches!(ips.list, Written::Wrong(_)) {
        errors.push(FieldError::required(
            RuleId::RI1,
            ips.path,
            "requires at least one item",
        ));
        return errors;
    }
    let family = spec.family();
    each_capped(
        RuleId::RI1,
        ips.path,
        ips.len,
        &ips.items,
        &mut errors,
        |(path, item), errors| {
            let path = path.as_str();
            let (text, entry) = match item {
                Written::Absent => return,
                Written::Wrong(w) => return errors.push(w.error(RuleId::RI1, path)),
                Written::Ok(t) => match &t.parsed {
                    Ok(p) => (t.text, p.value),
                    Err(e) => {
                        return errors.push(FieldError::invalid(
                            RuleId::RI1,
                            path,
                            t.text,
                            e.to_string(),
                        ))
                    }
                },
            };
            if let Some(f) = family.filter(|f| *f != entry.family) {
                errors.push(FieldError::invalid(
                    RuleId::RI1,
                    path,
                    text,
                    format!(
                        "is not an {f} IP or range: the ReservedIP's ipVersion is {}",
                        version_of(f)
                    ),
                ));
            }
        },
    );
    errors
}

fn version_of(f: Family) -> u8 {
    match f {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

/// What `h` holds of `family` that `before` did not (X5): all of it on a create or a move to
/// another address space.
fn added(h: &HolderProj, before: Option<&HolderProj>, family: Family) -> AddrSet {
    let set = h.set(family);
    match before {
        Some(b) => set.difference(&b.set(family)),
        None => set,
    }
}

/// RI3 (another ReservedIP of the family in its address space holds one of the addresses; as
/// P10 and S9, ReservedIPs on separate networks opt out by naming different spaces) and RI6 (an address object holds one, or a pool
/// other than Spiderpool's can hand one out), on what the write adds.
fn reserved_against_view(h: &HolderProj, before: Option<&HolderProj>, ctx: &Ctx, v: &mut Verdict) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    let index = ctx.index;
    for family in [Family::V4, Family::V6] {
        let probe = added(h, before, family);
        if probe.is_empty() {
            continue;
        }
        let mut others: Vec<String> = index
            .held_in(&h.space, &probe)
            .into_iter()
            .filter(|(o, _)| o.key.kind == Kind::SpiderReservedIP && o.key != h.key)
            .map(|(o, shared)| format!("ReservedIP {} ({})", o.key.name, shared.display_limited(4)))
            .collect();
        others.dedup();
        if !others.is_empty() {
            v.deny(FieldError::forbidden(
                RuleId::RI3,
                fields::IPS,
                format!("overlaps with {}", join_limited(&others)),
            ));
        }
        let held: Vec<String> = addresses_in(ctx, &h.space, &probe)
            .into_iter()
            .filter(|a| in_scope(scope, &h.key, &a.key))
            .filter_map(|a| Some(format!("{} ({})", a.ip?, a.key)))
            .collect();
        if !held.is_empty() {
            v.warnings.push(Warning::new(
                RuleId::RI6,
                fields::IPS.as_str(),
                format!(
                    "reserves addresses already held: {}; they stay with their holders until released",
                    join_limited(&held)
                ),
            ));
        }
        let pools: Vec<String> = index
            .overlapping_pools(&h.space, &probe)
            .into_iter()
            .filter(|(p, _)| !p.key.kind.is_spider() && in_scope(scope, &h.key, &p.key))
            .map(|(p, shared)| format!("{} ({})", p.key, shared.display_limited(4)))
            .collect();
        if !pools.is_empty() {
            v.warnings.push(Warning::new(
                RuleId::RI6,
                fields::IPS.as_str(),
                format!(
                    "reserves addresses {} can still hand out: only Spiderpool honours a ReservedIP; exclude them there",
                    join_limited(&pools)
                ),
            ));
        }
    }
}

/// Sets this small are probed address by address; larger ones through the pools of the space
/// that meet them (an address held outside every pool is not found there).
const PROBE_LIMIT: u128 = 1024;

/// Address objects in `space` whose address lies in `set`, sorted by key.
fn addresses_in<'a>(ctx: &Ctx<'a>, space: &str, set: &AddrSet) -> Vec<&'a AddressProj> {
    let index = ctx.index;
    let family = set.family();
    let mut out: Vec<&AddressProj> = if set.len() <= PROBE_LIMIT {
        set.ranges()
            .iter()
            .flat_map(|r| r.start..=r.end)
            .flat_map(|v| index.holders(Ip::new(family, v)))
            .filter(|a| index.space_of_address(a) == space)
            .collect()
    } else {
        index
            .overlapping_pools(space, set)
            .into_iter()
            .flat_map(|(p, _)| index.addresses_for_pool(&p.key))
            .filter(|a| a.ip.is_some_and(|ip| set.contains(ip)))
            .collect()
    };
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out.dedup_by(|a, b| a.key == b.key);
    out
}

/// How a holder is named in a message about `ip`.
fn holder_label(h: &HolderProj) -> String {
    match h.key.kind {
        Kind::SpiderReservedIP => format!("reserved by SpiderReservedIP {}", h.key.name),
        _ => format!("the static address of {}", h.key),
    }
}

/// RI4 and SA1, for CAPI and Metal3 addresses: `addr`, in the address space of the pool
/// `pool_key` names, is neither reserved by a SpiderReservedIP nor a machine's static address.
pub(crate) fn address_is_held(
    addr: Ip,
    text: &str,
    own: KeyRef<'_>,
    pool_key: Option<KeyRef<'_>>,
    ctx: &Ctx,
) -> Vec<FieldError> {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return Vec::new();
    }
    let index = ctx.index;
    let space = pool_key.map_or(crate::kinds::DEFAULT_ADDRESS_SPACE, |k| {
        index.space_of_pool(&k)
    });
    let found = index.held_at(space, addr);
    if found.is_empty() {
        return Vec::new();
    }
    let own = own.to_key();
    let mut out = Vec::new();
    for (rule, reserved) in [(RuleId::RI4, true), (RuleId::SA1, false)] {
        let who: Vec<String> = found
            .iter()
            .filter(|h| h.is_reserved() == reserved && in_scope(scope, &own, &h.key))
            .map(|h| holder_label(h))
            .collect();
        if who.is_empty() {
            continue;
        }
        let why = if reserved {
            "no pool may hand it out; release it from the ReservedIP first"
        } else {
            "two machines would share it"
        };
        out.push(FieldError::invalid(
            rule,
            address::ADDRESS,
            text,
            format!("{addr} is {}: {why}", join_limited(&who)),
        ));
    }
    out
}

/// RI5 and SA2: what a pool can hand out (on an update: what the update adds, X5) holds no
/// reserved or static address of its address space. A SpiderIPPool or SpiderSubnet may list reserved
/// addresses: Spiderpool itself never hands out what a SpiderReservedIP holds, so that is how
/// its users set addresses aside on purpose; its static machine addresses are still refused.
pub(crate) fn pool_holds_held(
    r: &PoolReading,
    before: Option<&PoolReading>,
    ctx: &Ctx,
    v: &mut Verdict,
) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    // One probe per family the pool hands out of (a declared pool may hand out both).
    let probes = allocatable_added_sets(r, before);
    let own = &r.proj.key;
    let held: Vec<(&HolderProj, AddrSet)> = probes
        .iter()
        .filter(|probe| !probe.is_empty())
        .flat_map(|probe| ctx.index.held_in(&r.proj.space, probe))
        .filter(|(h, _)| !(h.is_reserved() && own.kind.is_spider()))
        .filter(|(h, _)| in_scope(scope, own, &h.key))
        .collect();
    if held.is_empty() {
        return;
    }
    for e in &r.entries {
        for (rule, reserved) in [(RuleId::RI5, true), (RuleId::SA2, false)] {
            let here: Vec<String> = held
                .iter()
                .filter(|(h, _)| h.is_reserved() == reserved)
                .filter_map(|(h, part)| {
                    let shared = part.intersection(&e.set);
                    (!shared.is_empty())
                        .then(|| format!("{}, {}", shared.display_limited(4), holder_label(h)))
                })
                .collect();
            if !here.is_empty() {
                v.deny(FieldError::invalid(
                    rule,
                    e.path.clone(),
                    e.text.as_str(),
                    format!(
                        "can hand out {}: exclude it ({})",
                        join_limited(&here),
                        exclude_field(own.kind)
                    ),
                ));
            }
        }
    }
}

/// SA3, for a `VSphereMachine`: each static address it adds (X5: on an update, those it did not
/// have in the same address space) is held by no address object, can be handed out by no pool
/// and is no other machine's static address, in the machine's address space.
pub(crate) fn static_conflicts(obj: &Value, old: Option<&Value>, ctx: &Ctx, v: &mut Verdict) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    let meta = Meta::read(obj);
    let space = meta.address_space();
    let before: Vec<Ip> = old
        .filter(|o| Meta::read(o).address_space() == space)
        .map(|o| {
            static_addresses(o)
                .iter()
                .map(|s| Ip::new(s.entry.family, s.entry.range.start))
                .collect()
        })
        .unwrap_or_default();
    let own = ObjKey::new(Kind::VSphereMachine, meta.namespace, meta.name);
    for s in static_addresses(obj) {
        let ip = Ip::new(s.entry.family, s.entry.range.start);
        if before.contains(&ip) {
            continue;
        }
        if let Some(e) = static_conflict(ip, s.text, &s.path, &own, space, ctx) {
            v.deny(e);
        }
    }
}

/// SA3 for one static address `ip` of the machine `own`, written `text` at `path`.
fn static_conflict(
    ip: Ip,
    text: &str,
    path: &str,
    own: &ObjKey,
    space: &str,
    ctx: &Ctx,
) -> Option<FieldError> {
    let scope = ctx.options.overlap_scope;
    let index = ctx.index;
    let mut found: Vec<String> = index
        .holders(ip)
        .filter(|a| index.space_of_address(a) == space && in_scope(scope, own, &a.key))
        .map(|a| format!("held by {}", a.key))
        .collect();
    let single = AddrSet::from_range(ip.family, IpRange::single(ip.value));
    found.extend(
        index
            .overlapping_pools(space, &single)
            .into_iter()
            .filter(|(p, _)| in_scope(scope, own, &p.key))
            .map(|(p, _)| format!("allocatable in {}", p.key)),
    );
    found.extend(
        index
            .held_at(space, ip)
            .into_iter()
            .filter(|h| h.key.kind == Kind::VSphereMachine && h.key != *own)
            .filter(|h| in_scope(scope, own, &h.key))
            .map(|h| format!("the static address of {}", h.key)),
    );
    (!found.is_empty()).then(|| {
        FieldError::invalid(
            RuleId::SA3,
            path,
            text,
            format!(
                "{ip} is {}: two machines would share it",
                join_limited(&found)
            ),
        )
    })
}

/// The audit's findings (RI3, SA3) for one stored holder: what admission would refuse were it
/// written now, judged against every other object (X5 keeps admission from refusing it again).
pub fn holder_findings(ctx: &Ctx, h: &HolderProj, out: &mut Vec<(ObjKey, FieldError)>) {
    match h.key.kind {
        Kind::SpiderReservedIP => {
            let mut v = Verdict::default();
            reserved_against_view(h, None, ctx, &mut v);
            out.extend(v.errors.into_iter().map(|e| (h.key.clone(), e)));
            reserved_in_pools(ctx, h, out);
        }
        _ => {
            if ctx.options.overlap_scope == OverlapScope::Off {
                return;
            }
            for e in &h.held {
                let ip = Ip::new(e.family, e.range.start);
                let text = ip.to_string();
                if let Some(err) =
                    static_conflict(ip, &text, "spec.network.devices", &h.key, &h.space, ctx)
                {
                    out.push((h.key.clone(), err));
                }
            }
        }
    }
}

/// RI5 of stored pools, found from the ReservedIP's side (a stored pool keeps no entries): each
/// pool of the space, other than a SpiderIPPool or SpiderSubnet, that can hand out one of its addresses.
fn reserved_in_pools(ctx: &Ctx, h: &HolderProj, out: &mut Vec<(ObjKey, FieldError)>) {
    let scope = ctx.options.overlap_scope;
    if scope == OverlapScope::Off {
        return;
    }
    for family in [Family::V4, Family::V6] {
        let set = h.set(family);
        if set.is_empty() {
            continue;
        }
        for (p, shared) in ctx.index.overlapping_pools(&h.space, &set) {
            if p.key.kind.is_spider() || !in_scope(scope, &h.key, &p.key) {
                continue;
            }
            out.push((
                p.key.clone(),
                FieldError::invalid(
                    RuleId::RI5,
                    "spec",
                    p.allocatable.display_limited(4),
                    format!(
                        "can hand out {}, reserved by SpiderReservedIP {}: exclude it ({})",
                        shared.display_limited(4),
                        h.key.name,
                        exclude_field(p.key.kind)
                    ),
                ),
            ));
        }
    }
}
