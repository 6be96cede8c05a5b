//! Where the view's timers read the time: the pending window of X2, strangers' strikes and
//! the watches' health bound. Production reads the monotonic clock; tests hold a `ManualClock`
//! and move it forward, so they show what a timer does without sleeping for it.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A source of `Instant`s. Only what is compared against the timers reads it; log lines that
/// say how long something took keep using `Instant::now()`.
pub trait Clock: Send + Sync + Debug {
    fn now(&self) -> Instant;
    /// Wall-clock time, for what is compared with timestamps the API server wrote (the
    /// periodic audit's H1 reads `creationTimestamp`).
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The monotonic clock of the machine.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The system clock, shared.
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that stands still until `advance` moves it (tests).
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    wall_start: SystemTime,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        ManualClock::at(SystemTime::now())
    }

    /// A manual clock whose wall time starts at `wall`.
    pub fn at(wall: SystemTime) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            start: Instant::now(),
            wall_start: wall,
            elapsed: Mutex::new(Duration::ZERO),
        })
    }

    fn elapsed(&self) -> Duration {
        *self.elapsed.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn advance(&self, by: Duration) {
        *self.elapsed.lock().unwrap_or_else(|p| p.into_inner()) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }
    fn wall(&self) -> SystemTime {
        self.wall_start + self.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_secs(30));
        assert_eq!(clock.now(), t0 + Duration::from_secs(30));
    }

    #[test]
    fn a_manual_clocks_wall_time_moves_with_it() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_514_400);
        let clock = ManualClock::at(start);
        clock.advance(Duration::from_secs(601));
        assert_eq!(clock.wall(), start + Duration::from_secs(601));
    }
}
