//! Signals to the processes a test starts, and whether a SIGSTOP took hold.

use std::process::Command;
use std::time::{Duration, Instant};

/// Sends `sig` (`-STOP`, `-CONT`, `-TERM`) to `pid`. After `-STOP` it returns once every thread
/// of the process is stopped: `kill -STOP` returns when the signal is pending and the threads stop
/// as the kernel gets to them, so on a loaded machine the process can still answer a request sent
/// right after the kill (a stressed run once saw a "paused" decider decide a probe 18 ms after
/// the signal). Panics when the signal cannot be sent or the process does not stop within 10 s.
pub fn signal(sig: &str, pid: u32) {
    let sent = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {sig} {pid}");
    if sig == "-STOP" {
        let start = Instant::now();
        while stopped(pid) != Some(true) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "process {pid} did not stop (stopped: {:?})",
                stopped(pid)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether every thread of `pid` is stopped (None: no such process).
pub fn stopped(pid: u32) -> Option<bool> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut any = false;
    for task in tasks.flatten() {
        any = true;
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        // The state follows the command name in parentheses, which may hold spaces.
        let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
        if state != "T" && state != "t" {
            return Some(false);
        }
    }
    Some(any)
}
