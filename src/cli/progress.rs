//! Progress of a cluster pass on stderr (per kind: objects read and the rate), drawn only when
//! stderr is a terminal: CI logs and pipes get nothing, as with `--quiet`.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cluster::live::read::{Progress, Silent};

/// Progress for a command's cluster pass: drawn on stderr when it is a terminal and not `quiet`.
pub fn for_stderr(quiet: bool) -> Arc<dyn Progress> {
    if quiet || !std::io::stderr().is_terminal() {
        Arc::new(Silent)
    } else {
        Arc::new(Bar::new(ProgressDrawTarget::stderr()))
    }
}

/// One spinner line for the kind being listed; a line per kind once it is read.
struct Bar {
    bar: ProgressBar,
    /// The kind the spinner shows now.
    kind: Mutex<String>,
}

impl Bar {
    fn new(target: ProgressDrawTarget) -> Bar {
        let bar = ProgressBar::with_draw_target(None, target);
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {msg}: {human_pos} objects ({per_sec})")
        {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Bar {
            bar,
            kind: Mutex::new(String::new()),
        }
    }

    fn show(&self, kind: &str) {
        let mut shown = self.kind.lock().unwrap_or_else(PoisonError::into_inner);
        if *shown != kind {
            *shown = kind.to_string();
            self.bar.reset();
            self.bar.set_message(format!("listing {kind}"));
        }
    }
}

impl Progress for Bar {
    fn reading(&self, kind: &str, read: u64) {
        self.show(kind);
        self.bar.set_position(read);
    }

    fn done(&self, kind: &str, read: u64, took: Duration) {
        self.show(kind);
        self.bar.println(line(kind, read, took));
        self.bar.set_position(0);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// `IPAddress: 100000 objects in 3.2 s (31250/s)`.
fn line(kind: &str, read: u64, took: Duration) -> String {
    let secs = took.as_secs_f64();
    if secs > 0.0 && read > 0 {
        format!(
            "{kind}: {read} objects in {secs:.1} s ({:.0}/s)",
            read as f64 / secs
        )
    } else {
        format!("{kind}: {read} objects in {secs:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_line_says_how_many_and_how_fast() {
        assert_eq!(
            line("IPAddress", 100_000, Duration::from_millis(3_200)),
            "IPAddress: 100000 objects in 3.2 s (31250/s)"
        );
        assert_eq!(
            line("SpiderIPPool", 0, Duration::from_millis(40)),
            "SpiderIPPool: 0 objects in 0.0 s"
        );
    }
}
