//! Where `check`'s time goes, as debug events on stderr (`RUST_LOG=ipam_guard=debug ipam-guard
//! check …`): per phase its wall time and the CPU time of the whole process (both cores) during
//! it; within reading, the time the workers spent in each step taken after parsing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The phases of one run, reported one by one as each ends.
pub struct Phases {
    wall: Instant,
    cpu: Duration,
}

impl Phases {
    pub fn start() -> Phases {
        Phases {
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }

    /// Reports the phase that ends now; the next one starts.
    pub fn done(&mut self, phase: &'static str) {
        let (wall, cpu) = (Instant::now(), process_cpu());
        tracing::debug!(
            phase,
            wall_ms = ms(wall - self.wall),
            cpu_ms = ms(cpu.saturating_sub(self.cpu)),
            "check phase"
        );
        self.wall = wall;
        self.cpu = cpu;
    }
}

/// The steps a worker takes with each object after parsing it, summed over the workers. Timed
/// only when debug events are on: a clock read per step and object costs next to nothing, but
/// not nothing.
#[derive(Default)]
pub(super) struct Steps {
    on: bool,
    nanos: [AtomicU64; STEPS.len()],
}

#[derive(Clone, Copy)]
pub(super) enum Step {
    Schema,
    Mutate,
    Project,
    Pack,
    Drop,
}

const STEPS: [&str; 5] = ["schema", "mutate", "project", "pack", "drop"];

impl Steps {
    pub(super) fn new() -> Steps {
        Steps {
            on: tracing::enabled!(tracing::Level::DEBUG),
            ..Steps::default()
        }
    }

    pub(super) fn time<R>(&self, step: Step, f: impl FnOnce() -> R) -> R {
        if !self.on {
            return f();
        }
        let start = Instant::now();
        let r = f();
        let took = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.nanos[step as usize].fetch_add(took, Ordering::Relaxed);
        r
    }

    /// One event with each step's time on the workers (wall time inside the step: CPU time
    /// unless the machine took the core away).
    pub(super) fn report(&self) {
        if !self.on {
            return;
        }
        let ms = |s: Step| {
            ms(Duration::from_nanos(
                self.nanos[s as usize].load(Ordering::Relaxed),
            ))
        };
        tracing::debug!(
            schema_ms = ms(Step::Schema),
            mutate_ms = ms(Step::Mutate),
            project_ms = ms(Step::Project),
            pack_ms = ms(Step::Pack),
            drop_ms = ms(Step::Drop),
            "check read steps (summed over workers; the rest of read is parsing)"
        );
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// CPU time of the whole process so far (every thread, user and system), from `/proc/self/stat`
/// in clock ticks (USER_HZ, 100 on Linux): 10 ms steps. Zero where there is no such file.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name may hold spaces; the fields counted here follow its closing parenthesis.
    let fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = fields
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}
