//! Where a trial's profile samples (`--profile-scope`): following the program's tasks, or every
//! CPU with the program's samples kept when reading — and, under `auto`, which of the two a
//! point's traced trials get, from how often its tasks switched in the untraced reference
//! trial run just before them.
//!
//! It is chosen per point because a per-task sampling event is stopped and started at every
//! context switch of every task it follows (for `cpu-clock`, an hrtimer cancelled and armed
//! again each time), while an event on every CPU runs on but interrupts every CPU at its rate
//! whoever runs. So `auto` samples every CPU, at [`EVERY_CPU_FREQUENCY`], where the untraced
//! tasks switched at least [`SWITCHES_FOR_EVERY_CPU`] times a second each and the event is
//! `cpu-clock`; elsewhere (and always with `cycles`, whose per-task switch costs MSR writes, not
//! a timer) it follows the tasks at the run's rate. A command has no untraced reference, so
//! `auto` follows its tasks; so does a point whose reference ran after its profiled trials
//! (`--profile-trials` below `--runs`). The evidence: docs/notes/profiling.md.

use serde::{Deserialize, Serialize};

/// Where a profile samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileScope {
    /// Every CPU where the untraced reference switched often (see the module doc), else the
    /// program's tasks.
    #[default]
    Auto,
    /// The program's tasks (`perf record -- program`): sampled only while they run.
    Tasks,
    /// Every CPU (`perf record -a`, idle left out), the program's samples kept when reading.
    EveryCpu,
}

/// Context switches a second per task, in the untraced reference, from which `auto` samples
/// every CPU: well above the CPU-bound built-ins, below the disk's fsync_write (the figures:
/// docs/notes/profiling.md).
pub const SWITCHES_FOR_EVERY_CPU: f64 = 5_000.0;

/// `auto`'s rate on every CPU: each sample interrupts a CPU whoever runs there, so it is kept
/// low (docs/notes/profiling.md). 241 Hz rather than 250 so that samples do not fall in
/// step with a 250 Hz (or 1000 Hz) tick.
pub const EVERY_CPU_FREQUENCY: u32 = 241;

/// Where and how fast one trial is profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScopeChoice {
    /// Every CPU (`perf record -a`) rather than the tasks.
    pub(crate) every_cpu: bool,
    /// Samples a second.
    pub(crate) frequency: u32,
}

/// The scope of a profiled trial: `scope` as asked, `auto` decided by `switch_rate` (its
/// point's untraced tasks' switches a second each, `None` when not measured), for `event`,
/// where perf may sample every CPU (`every_cpu_allowed`). `frequency` is the run's rate;
/// `frequency_given` keeps it (the user's `--profile-frequency`) on every CPU too.
pub(crate) fn choose(
    scope: ProfileScope,
    event: &str,
    every_cpu_allowed: bool,
    switch_rate: Option<f64>,
    frequency: u32,
    frequency_given: bool,
) -> ScopeChoice {
    let every_cpu = match scope {
        ProfileScope::Tasks => false,
        ProfileScope::EveryCpu => true,
        ProfileScope::Auto => {
            event == "cpu-clock"
                && every_cpu_allowed
                && switch_rate.is_some_and(|r| r >= SWITCHES_FOR_EVERY_CPU)
        }
    };
    let frequency = if every_cpu && scope == ProfileScope::Auto && !frequency_given {
        frequency.min(EVERY_CPU_FREQUENCY)
    } else {
        frequency
    };
    ScopeChoice {
        every_cpu,
        frequency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_samples_every_cpu_only_where_the_untraced_tasks_switched_often_on_cpu_clock() {
        let auto = |event, allowed, rate, given| {
            choose(ProfileScope::Auto, event, allowed, rate, 4000, given)
        };
        let tasks = ScopeChoice {
            every_cpu: false,
            frequency: 4000,
        };
        // The disk's fsync_write and pipe_pingpong: every CPU, at the low rate.
        for rate in [11_119.0, 250_465.0, SWITCHES_FOR_EVERY_CPU] {
            assert_eq!(
                auto("cpu-clock", true, Some(rate), false),
                ScopeChoice {
                    every_cpu: true,
                    frequency: EVERY_CPU_FREQUENCY
                },
                "{rate}"
            );
        }
        // A user's --profile-frequency is kept there.
        assert_eq!(
            auto("cpu-clock", true, Some(11_119.0), true).frequency,
            4000
        );
        // CPU-bound workloads, no reference (a command), a PMU, or perf not allowed -a.
        assert_eq!(auto("cpu-clock", true, Some(138.0), false), tasks);
        assert_eq!(auto("cpu-clock", true, Some(4_999.0), false), tasks);
        assert_eq!(auto("cpu-clock", true, None, false), tasks);
        assert_eq!(auto("cycles", true, Some(250_465.0), false), tasks);
        assert_eq!(auto("cpu-clock", false, Some(250_465.0), false), tasks);
    }

    #[test]
    fn an_explicit_scope_is_kept_at_the_runs_rate() {
        for rate in [None, Some(138.0), Some(250_465.0)] {
            let t = choose(ProfileScope::Tasks, "cpu-clock", true, rate, 4000, false);
            assert_eq!((t.every_cpu, t.frequency), (false, 4000));
            let e = choose(ProfileScope::EveryCpu, "cycles", true, rate, 1000, false);
            assert_eq!((e.every_cpu, e.frequency), (true, 1000));
        }
    }
}
