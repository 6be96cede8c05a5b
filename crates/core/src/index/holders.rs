//! Objects holding addresses outside pools (ReservedIPs, machines' static addresses) in the
//! index: each by its key, and what they hold in one segment map per address space and family,
//! the structure pools and endpoints use, each range owned by its holder's slot id (RI3-RI6,
//! SA1-SA3). A pool asks which held addresses its allocatable set meets in O(runs · log H + k),
//! an address whether it is held in O(log H).

use std::sync::Arc;

use crate::address::{AddrSet, Family, Ip, IpRange};
use crate::model::holder::HolderProj;
use crate::model::{Keyed, ObjKey};

use super::{FamilySegments, FastMap, Index, PendingId};

impl Index {
    /// Adds or replaces the holder with `holder.key`. Returns the one it replaced.
    pub(crate) fn upsert_holder(&mut self, mut holder: HolderProj) -> Option<HolderProj> {
        self.changed();
        self.strings.key(&mut holder.key);
        holder.space = self.strings.get(&holder.space);
        match self.holder_ids.get(&holder.key) {
            Some(&id) => {
                self.unplace_held(id);
                let old = std::mem::replace(self.holders_held.get_mut(id), holder);
                self.place_held(id);
                Some(old)
            }
            None => {
                self.count(holder.key.kind, true);
                let key = holder.key.clone();
                let id = self.holders_held.insert(holder, false);
                self.holder_ids.insert(key, id);
                self.place_held(id);
                None
            }
        }
    }

    pub fn remove_holder(&mut self, key: &ObjKey) -> Option<HolderProj> {
        let id = self.holder_ids.remove(key)?;
        self.changed();
        self.unplace_held(id);
        let holder = self.holders_held.remove(id);
        self.count(holder.key.kind, false);
        Some(holder)
    }

    /// Every version of the holder under `key`: the stored one first, then those pending (X2),
    /// newest first.
    pub fn holder_versions<'a>(
        &'a self,
        key: &dyn Keyed,
    ) -> impl Iterator<Item = &'a HolderProj> + use<'a> {
        let stored = self.holder_ids.get(key).copied();
        let pending = self.pending_ids(key).iter().rev().filter_map(|p| match *p {
            PendingId::Holder(id) => Some(id),
            _ => None,
        });
        stored
            .into_iter()
            .chain(pending)
            .map(|id| self.holders_held.get(id))
    }

    /// Every stored holder, in no particular order.
    pub fn outside_holders(&self) -> impl Iterator<Item = &HolderProj> + '_ {
        self.holders_held.stored.iter().map(|(_, h)| h)
    }

    /// Holders (stored and pending versions, X2) of addresses in `space` that `set` meets, each
    /// with the part of `set` it holds, sorted by key; versions that hold the same part once.
    pub(crate) fn held_in(&self, space: &str, set: &AddrSet) -> Vec<(&HolderProj, AddrSet)> {
        let Some(segs) = self.held.get(space).map(|s| s.get(set.family())) else {
            return Vec::new();
        };
        let mut parts: FastMap<u32, Vec<IpRange>> = FastMap::default();
        for r in set.ranges() {
            for (start, end, owners) in segs.query(r.start, r.end) {
                for &id in owners {
                    parts.entry(id).or_default().push(IpRange::new(start, end));
                }
            }
        }
        let mut out: Vec<(&HolderProj, AddrSet)> = parts
            .into_iter()
            .map(|(id, ranges)| {
                (
                    self.holders_held.get(id),
                    AddrSet::from_ranges(set.family(), ranges),
                )
            })
            .collect();
        out.sort_by(|a, b| (&a.0.key, a.1.ranges()).cmp(&(&b.0.key, b.1.ranges())));
        out.dedup_by(|a, b| a.0.key == b.0.key && a.1 == b.1);
        out
    }

    /// Holders of `ip` in `space` (`held_in` for one address).
    pub(crate) fn held_at(&self, space: &str, ip: Ip) -> Vec<&HolderProj> {
        if self.held.is_empty() {
            return Vec::new();
        }
        self.held_in(
            space,
            &AddrSet::from_range(ip.family, IpRange::single(ip.value)),
        )
        .into_iter()
        .map(|(h, _)| h)
        .collect()
    }

    pub(super) fn place_held(&mut self, id: u32) {
        let holder = self.holders_held.get(id);
        if holder.held.is_empty() {
            return;
        }
        // Placed as one set per family: a ReservedIP may list ranges that overlap, and an owner
        // covers each value once.
        let sets = [holder.set(Family::V4), holder.set(Family::V6)];
        let space = self.held.entry(holder.space.clone()).or_default();
        for set in sets {
            for r in set.ranges() {
                space.get_mut(set.family()).insert(r.start, r.end, id);
            }
        }
    }

    pub(super) fn unplace_held(&mut self, id: u32) {
        let holder = self.holders_held.get(id);
        if holder.held.is_empty() {
            return;
        }
        let sets = [holder.set(Family::V4), holder.set(Family::V6)];
        let Some(space) = self.held.get_mut(&*holder.space) else {
            return;
        };
        for set in sets {
            for r in set.ranges() {
                space.get_mut(set.family()).remove(r.start, r.end, id);
            }
        }
        if space.v4.is_empty() && space.v6.is_empty() {
            self.held.remove(&*holder.space);
        }
    }

    /// Held maps built afresh from the holders kept (the consistency check).
    pub(super) fn fresh_held(&self) -> FastMap<Arc<str>, FamilySegments> {
        let mut fresh = Index {
            holders_held: self.holders_held.clone(),
            ..Index::default()
        };
        for id in self.holders_held.ids() {
            fresh.place_held(id);
        }
        fresh.held
    }
}
