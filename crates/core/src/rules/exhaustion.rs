//! E1: a claim created into a pool that has no free address, or few. Admitted all the same:
//! addresses are released later (a machine deleted, a rollout finished) and the provider then
//! serves the claim, so a denial would break clusters that recover on their own. The warning makes
//! the wait visible at the moment it starts, rather than as a machine stuck in provisioning.
//!
//! "Free" is the figure `ipam-guard usage` prints and `ipam_guard_pool_addresses` exports:
//! allocatable − used, from `Index::usage_of_pool` (one computation for all three). A prefix pool
//! counts whole sub-prefixes.

use std::fmt;

use crate::field::{FieldPath, Verdict};
use crate::index::usage::PoolUsage;
use crate::model::Keyed;
use crate::rule_id::RuleId;
use crate::rules::Ctx;

/// `--warn-free-below`: a pool is low when it has fewer free addresses than a count, or than a
/// percentage of its allocatable set (rounded up), whichever is larger. Written `2`, `5%`, or
/// both (`5%,2`). The default is `5%,2`: a pool of 254 addresses is low below 13 free, a pool of
/// 20 below 2 (one left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeThreshold {
    /// Hundredths of a percent: 500 is 5%.
    pub basis_points: u32,
    pub count: u128,
}

impl Default for FreeThreshold {
    fn default() -> Self {
        FreeThreshold {
            basis_points: 500,
            count: 2,
        }
    }
}

impl FreeThreshold {
    /// Reads `2`, `5%`, `2.5%`, `5%,2` (either order). A percentage above 100 or with more than
    /// two decimals, a negative or empty value, or two of one kind is an error that says so.
    pub fn parse(text: &str) -> Result<FreeThreshold, String> {
        let mut basis_points = None;
        let mut count = None;
        for part in text.split(',').map(str::trim) {
            if let Some(pct) = part.strip_suffix('%') {
                if basis_points.replace(parse_percent(pct)?).is_some() {
                    return Err(format!("{text:?}: two percentages"));
                }
            } else {
                let n = part.parse::<u128>().map_err(|_| {
                    format!("{part:?} is neither a count of addresses (2) nor a percentage (5%)")
                })?;
                if count.replace(n).is_some() {
                    return Err(format!("{text:?}: two counts"));
                }
            }
        }
        Ok(FreeThreshold {
            basis_points: basis_points.unwrap_or(0),
            count: count.unwrap_or(0),
        })
    }

    /// How many free addresses a pool of `allocatable` needs not to be low.
    pub fn limit(&self, allocatable: u128) -> u128 {
        let bp = u128::from(self.basis_points);
        // allocatable × bp / 10000, rounded up, without overflowing for a /0.
        let (whole, rest) = (allocatable / 10_000, allocatable % 10_000);
        let share = whole * bp + (rest * bp).div_ceil(10_000);
        share.max(self.count)
    }

    pub(crate) fn is_low(&self, u: &PoolUsage) -> bool {
        u.free() < self.limit(u.allocatable)
    }
}

fn parse_percent(text: &str) -> Result<u32, String> {
    let bad =
        || format!("{text:?}%: a percentage is 0 to 100 with at most two decimals (5%, 2.5%)");
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty()
        || frac.len() > 2
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let int: u32 = int.parse().map_err(|_| bad())?;
    let frac: u32 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    let bp = int
        .checked_mul(100)
        .and_then(|i| i.checked_add(frac))
        .ok_or_else(bad)?;
    if bp > 10_000 {
        return Err(bad());
    }
    Ok(bp)
}

impl fmt::Display for FreeThreshold {
    /// As `parse` reads it back: `5%,2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = format!("{}.{:02}", self.basis_points / 100, self.basis_points % 100);
        let pct = pct.trim_end_matches('0').trim_end_matches('.');
        match (self.basis_points, self.count) {
            (0, n) => write!(f, "{n}"),
            (_, 0) => write!(f, "{pct}%"),
            (_, n) => write!(f, "{pct}%,{n}"),
        }
    }
}

/// E1 at admission: the claim's CREATE names `pool` (found in the view) at `path`; a warning
/// when the pool has no free address, or is low under `--warn-free-below`.
pub(crate) fn on_create(pool: &impl Keyed, path: FieldPath, ctx: &Ctx, v: &mut Verdict) {
    // An audit judges claims that may hold their address already: `health` reports the
    // exhausted pools of claims still waiting instead.
    if ctx.options.stored {
        return;
    }
    let threshold = ctx.options.warn_free_below;
    match ctx.index.free_at_least(pool) {
        Some((allocatable, floor)) if floor > 0 && floor >= threshold.limit(allocatable) => return,
        None => return,
        Some(_) => {}
    }
    let Some(u) = ctx.index.usage_of_pool(pool) else {
        return;
    };
    if u.free() == 0 {
        v.warn(RuleId::E1, path, exhausted(&u));
    } else if threshold.is_low(&u) {
        let (one, many) = unit(&u);
        let free = u.free();
        v.warn(
            RuleId::E1,
            path,
            format!(
                "{} has {free} free {} left ({} of {} in use; warned below {})",
                u.key,
                if free == 1 { one } else { many },
                u.used,
                u.allocatable,
                threshold.describe(u.allocatable),
            ),
        );
    }
}

/// E1's text for a pool with nothing free, shared by admission and the audits.
pub(crate) fn exhausted(u: &PoolUsage) -> String {
    let (one, _) = unit(u);
    if u.allocatable == 0 {
        return format!(
            "{} can hand out no {one} (its allocatable set is empty); this claim waits until the pool is changed",
            u.key
        );
    }
    format!(
        "{} has no free {one} ({} of {} in use); this claim waits until one is released",
        u.key, u.used, u.allocatable
    )
}

/// What a pool's figures count: addresses, or a prefix pool's sub-prefixes.
fn unit(u: &PoolUsage) -> (String, String) {
    match u.sub_prefix {
        Some(len) => (format!("/{len} sub-prefix"), format!("/{len} sub-prefixes")),
        None => ("address".to_string(), "addresses".to_string()),
    }
}

impl FreeThreshold {
    /// The threshold as it applies to a pool of `allocatable`: `13 free (5%)`.
    fn describe(&self, allocatable: u128) -> String {
        format!(
            "{} free (--warn-free-below {self})",
            self.limit(allocatable)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e1_threshold_reads_counts_percentages_and_both() {
        let t = |s: &str| FreeThreshold::parse(s);
        assert_eq!(
            t("2"),
            Ok(FreeThreshold {
                basis_points: 0,
                count: 2
            })
        );
        assert_eq!(
            t("5%"),
            Ok(FreeThreshold {
                basis_points: 500,
                count: 0
            })
        );
        assert_eq!(
            t("2.5%"),
            Ok(FreeThreshold {
                basis_points: 250,
                count: 0
            })
        );
        assert_eq!(t("5%,2"), Ok(FreeThreshold::default()));
        assert_eq!(t("2, 5%"), Ok(FreeThreshold::default()));
        assert_eq!(
            t("0"),
            Ok(FreeThreshold {
                basis_points: 0,
                count: 0
            })
        );
        for bad in [
            "", "-1", "5%,6%", "1,2", "101%", "1.234%", "x%", "%", "5 %x", ".5%",
        ] {
            assert!(t(bad).is_err(), "{bad:?}");
        }
        for s in ["5%,2", "2", "2.5%", "0", "100%,7"] {
            assert_eq!(t(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn e1_threshold_is_the_larger_of_count_and_share_rounded_up() {
        let d = FreeThreshold::default();
        assert_eq!(d.limit(254), 13); // 12.7 rounded up
        assert_eq!(d.limit(20), 2); // 1 < 2
        assert_eq!(d.limit(0), 2);
        assert_eq!(d.limit(10_000), 500);
        // No overflow for the largest pools.
        assert_eq!(
            FreeThreshold {
                basis_points: 10_000,
                count: 0
            }
            .limit(u128::MAX),
            u128::MAX
        );
        assert_eq!(
            FreeThreshold {
                basis_points: 0,
                count: 0
            }
            .limit(254),
            0
        );
    }
}
