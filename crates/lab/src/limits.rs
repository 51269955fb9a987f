//! The largest values scalelab accepts — task counts, trials, durations, readings — in one
//! place, below everything that checks them: a fresh plan (and its `--tasks`) and an imported
//! run are held to the same limits.

use crate::record::Nanos;

/// The largest task count accepted: enough for a 1024-CPU machine oversubscribed 64 times.
pub(crate) const MAX_TASKS: u32 = 65_536;

/// The longest duration any flag accepts (`--duration`, `--warmup`, `--timeout`): one week.
pub const MAX_DURATION: Nanos = Nanos(7 * 24 * 3600 * 1_000_000_000);
/// The most trials per point (`--runs`, `ab --max-runs`).
pub(crate) const MAX_RUNS: u32 = 10_000;
/// The most trials in one run (points × runs): a run of 100,000 five-second trials takes a week.
pub(crate) const MAX_TRIALS: u64 = 100_000;
/// The most per-task readings one trial keeps (samples × N): 128 MiB of counts.
pub(crate) const MAX_READINGS: u64 = 1 << 24;
