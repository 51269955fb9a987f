//! Is the machine quiet enough to measure on? An agent asks before each job.
//!
//! `doctor`'s memory check (little memory available: reclaim disturbs a run) and, instead of
//! its load check, the tasks runnable right now: `procs_running` of `/proc/stat`, sampled over
//! one second, less the agent itself. The load average `doctor` reads lags by minutes (its
//! 1-minute figure is an exponential average), so after one job it would call the machine
//! busy for a minute or two although nothing runs; the runnable count sees the machine as it
//! is now, and still sees a build or another benchmark at once.

use std::time::Duration;

use model::env::{Fingerprint, Severity, checks};

/// Runnable tasks (besides the agent) at or above this mean mean someone else is computing.
const BUSY_RUNNABLE: f64 = 0.5;

/// Samples of `procs_running` taken over one second.
const SAMPLES: u32 = 10;

/// What makes the machine too busy to measure on now, one finding each; empty when quiet.
pub fn busy_findings() -> Vec<String> {
    let mut busy = Vec::new();
    if let Some(others) = runnable_others() {
        if others >= BUSY_RUNNABLE {
            busy.push(format!(
                "{others:.1} tasks runnable besides the agent (mean over 1 s)"
            ));
        }
    }
    let fp = Fingerprint::capture(&std::env::current_dir().unwrap_or_else(|_| "/".into()));
    busy.extend(
        checks(&fp)
            .into_iter()
            .filter(|c| c.name == "memory" && c.severity == Severity::Warn)
            .map(|c| c.finding),
    );
    busy
}

/// The mean count of runnable tasks over one second, less this one (it is running while it
/// reads); `None` when `/proc/stat` cannot be read.
fn runnable_others() -> Option<f64> {
    let mut sum = 0u64;
    for i in 0..SAMPLES {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        sum += procs_running(&std::fs::read_to_string("/proc/stat").ok()?)?;
    }
    Some((sum as f64 / f64::from(SAMPLES) - 1.0).max(0.0))
}

/// `procs_running N` of `/proc/stat`.
fn procs_running(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procs_running_is_read_from_proc_stat() {
        let stat = "cpu  1 2 3\nctxt 99\nprocs_running 3\nprocs_blocked 0\n";
        assert_eq!(procs_running(stat), Some(3));
        assert_eq!(procs_running("cpu 1\n"), None);
    }

    #[test]
    fn this_machine_reads_a_runnable_count() {
        // The reading itself runs: at least 0 others, and a figure at all on Linux.
        assert!(runnable_others().is_some_and(|n| n >= 0.0));
    }
}
