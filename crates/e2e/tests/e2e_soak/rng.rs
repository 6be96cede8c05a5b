//! The soak's random numbers: SplitMix64, small and fully determined by its seed, so a run's
//! operation schedule and fault schedule can be replayed from the seed it printed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// An independent stream for one actor (a client, the fault schedule), drawn from `seed`
    /// and the actor's number so that adding an actor does not shift the others' streams.
    pub fn stream(seed: u64, actor: u64) -> Rng {
        let mut mix = Rng(seed ^ actor.wrapping_mul(0xA076_1D64_78BD_642F));
        Rng(mix.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant at these sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// An index into `weights`, each drawn in proportion to its weight.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut at = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if at < u64::from(*w) {
                return i;
            }
            at -= u64::from(*w);
        }
        weights.len() - 1
    }

    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.between(lo, hi))
    }
}

/// `IPAM_GUARD_SOAK_SEED` (decimal or `0x` hex), else one from the clock and the process id.
/// Returns the seed and whether it was given.
pub fn seed_from_env() -> (u64, bool) {
    if let Ok(text) = std::env::var("IPAM_GUARD_SOAK_SEED") {
        let text = text.trim();
        let parsed = match text.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => text.parse(),
        };
        let seed = parsed.unwrap_or_else(|e| panic!("IPAM_GUARD_SOAK_SEED={text}: {e}"));
        return (seed, true);
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut mix = Rng(nanos ^ u64::from(std::process::id()).rotate_left(32));
    (mix.next_u64(), false)
}
