//! The one table: each kind's validator and mutator.

use crate::kinds::Kind;
use crate::rules::mutate::{self, Mutator};
use crate::rules::validator::Validator;
use crate::rules::{
    capv, claim, cluster, declared_pool, holders, ipaddress, metal3, metal3_template, pool, spider,
    spider_subnet,
};

fn webhooks(kind: Kind) -> (&'static dyn Validator, &'static dyn Mutator) {
    match kind {
        Kind::IPAddressClaim => (&claim::Claim, &mutate::ClaimDefaults),
        Kind::IPAddress => (&ipaddress::Address, &mutate::AddressDefaults),
        Kind::InClusterIPPool | Kind::GlobalInClusterIPPool => {
            (&pool::IN_CLUSTER, &mutate::NoDefaults)
        }
        Kind::InClusterPrefixPool | Kind::GlobalInClusterPrefixPool => {
            (&pool::IN_CLUSTER_PREFIX, &mutate::NoDefaults)
        }
        Kind::Metal3IPPool => (&metal3::POOL, &mutate::NoDefaults),
        Kind::Metal3IPClaim => (&metal3::Claim, &mutate::NoDefaults),
        Kind::Metal3IPAddress => (&metal3::Address, &mutate::NoDefaults),
        Kind::SpiderIPPool => (&spider::POOL, &mutate::NoDefaults),
        Kind::SpiderSubnet => (&spider_subnet::SUBNET, &mutate::NoDefaults),
        Kind::VSphereMachine => (&capv::Machine(true), &mutate::NoDefaults),
        Kind::VSphereMachineTemplate => (&capv::Machine(false), &mutate::NoDefaults),
        Kind::SpiderReservedIP => (&holders::ReservedIp, &mutate::NoDefaults),
        Kind::Cluster | Kind::VSphereCluster | Kind::Metal3Cluster => {
            (&cluster::Cluster, &mutate::NoDefaults)
        }
        Kind::Metal3DataTemplate => (&metal3_template::DataTemplate, &mutate::NoDefaults),
        Kind::Declared(_) => (&declared_pool::DECLARED, &mutate::NoDefaults),
    }
}

/// The validator of `kind`.
pub fn for_kind(kind: Kind) -> &'static dyn Validator {
    webhooks(kind).0
}

/// The mutator of `kind`.
pub fn mutator_for(kind: Kind) -> &'static dyn Mutator {
    webhooks(kind).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::KINDS;
    use crate::model::Operation;
    use crate::rules::Options;
    use crate::rules::OverlapScope;

    /// What each validator declares is what the typed ids say: only view-reading rules, and
    /// each one's effect can refuse a write.
    #[test]
    fn view_denials_are_view_reading_rules_that_can_deny() {
        let settings = [
            Options::default(),
            Options {
                overlap_scope: OverlapScope::Off,
                require_existing_pool: true,
                ..Options::default()
            },
        ];
        for info in KINDS {
            for op in [
                Operation::Create,
                Operation::Update,
                Operation::Delete,
                Operation::Connect,
            ] {
                for options in &settings {
                    for id in for_kind(info.kind).view_denials(op, options) {
                        assert!(id.reads_view(), "{:?} {op:?}: {id}", info.kind);
                        assert_ne!(id.effect(), crate::rule_id::Effect::Warn, "{id}");
                    }
                }
            }
        }
    }
}
