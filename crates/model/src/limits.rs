//! The largest values scalelab accepts — task counts, trials, durations, readings — in one
//! place, below everything that checks them: a fresh plan (and its `--tasks`) and an imported
//! run are held to the same limits.

use crate::record::Nanos;

/// The largest task count accepted: enough for a 1024-CPU machine oversubscribed 64 times.
pub const MAX_TASKS: u32 = 65_536;

/// The longest duration any flag accepts (`--duration`, `--warmup`, `--timeout`): one week.
pub const MAX_DURATION: Nanos = Nanos(7 * 24 * 3600 * 1_000_000_000);
/// The most trials per point (`--runs`, `ab --max-runs`).
pub const MAX_RUNS: u32 = 10_000;
/// The most trials in one run (points × runs): a run of 100,000 five-second trials takes a week.
pub const MAX_TRIALS: u64 = 100_000;
/// The most per-task readings one trial keeps (samples × N): 128 MiB of counts.
pub const MAX_READINGS: u64 = 1 << 24;

/// The most characters of a name, variant, tag key or value, host name, workload name or
/// `history --csv` label: a label, shown in every list and page (a 50 MB name made every runs
/// page 100 MB).
pub const MAX_LABEL_CHARS: usize = 256;
/// The most characters of a stored command line or parameter value (a command with its steps).
pub const MAX_COMMAND_CHARS: usize = 65_536;

/// `Err` saying how long `text` is and the limit, when it has more than `max` characters.
pub fn check_length(text: &str, max: usize) -> Result<(), String> {
    let n = text.chars().count();
    if n > max {
        Err(format!("{n} characters; at most {max}"))
    } else {
        Ok(())
    }
}
