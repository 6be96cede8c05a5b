//! Claims in the index: a set keyed by each claim's own key, plus the versions admitted and
//! not yet stored (X2). No secondary index: the rules ask for a claim by key only.

use crate::model::{ClaimProj, Keyed, ObjKey};

use super::{ClaimEntry, Index, PendingId};

impl Index {
    /// Adds or replaces the claim with `claim.key`. Returns the one it replaced.
    pub fn upsert_claim(&mut self, mut claim: ClaimProj) -> Option<ClaimProj> {
        self.changed();
        self.share_claim_strings(&mut claim);
        let kind = claim.key.kind;
        let old = self.claims.replace(ClaimEntry(claim)).map(|e| e.0);
        if old.is_none() {
            self.count(kind, true);
        }
        old
    }

    /// Points the claim's namespace and Cluster names at copies the index already holds: many
    /// claims name one Cluster.
    pub(super) fn share_claim_strings(&mut self, claim: &mut ClaimProj) {
        self.strings.key(&mut claim.key);
        for name in [&mut claim.cluster, &mut claim.endpoint_of]
            .into_iter()
            .flatten()
        {
            *name = self.strings.get(name);
        }
    }

    pub fn remove_claim(&mut self, key: &ObjKey) -> Option<ClaimProj> {
        let old = self.claims.take(key).map(|e| e.0);
        if old.is_some() {
            self.changed();
            self.count(key.kind, false);
        }
        old
    }

    /// The claim under `key`: the stored one, else the newest version admitted and not yet
    /// stored (X2).
    pub fn claim(&self, key: &impl Keyed) -> Option<&ClaimProj> {
        let key: &dyn Keyed = key;
        self.claims.get(key).map(|e| &e.0).or_else(|| {
            self.pending_ids(key).iter().rev().find_map(|p| match *p {
                PendingId::Claim(id) => Some(self.pending_claims.get(id)),
                _ => None,
            })
        })
    }

    /// Every stored claim, in no particular order.
    pub fn claims(&self) -> impl Iterator<Item = &ClaimProj> + '_ {
        self.claims.iter().map(|e| &e.0)
    }

    /// Every stored claim and every version admitted and not yet stored (X2), in no particular
    /// order.
    pub(crate) fn claims_and_pending(&self) -> impl Iterator<Item = &ClaimProj> + '_ {
        self.claims()
            .chain(self.pending_claims.iter().map(|(_, c)| c))
    }
}
