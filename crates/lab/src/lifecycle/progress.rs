//! What the owner of a run tells whoever watches it: the CLI's progress display, or nothing.
//!
//! A trait because there are two real watchers: the terminal (a progress bar, failure lines,
//! warnings and notes on stderr) and the silent one that tests and `--quiet` scripts use.

use model::record::{TrialOutcome, TrialRecord};

/// Which trial: its side in an interleaved experiment, its N and repetition (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrialLabel {
    /// `A` or `B` in an A/B experiment (`G`, `C`, `B` in a bisection: the good build, the
    /// commit, the bad build); `None` in a plain run.
    pub side: Option<char>,
    /// The task count.
    pub n: u32,
    /// Which repetition at this N, from 0.
    pub index: u32,
}

impl std::fmt::Display for TrialLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(side) = self.side {
            write!(f, "{side} ")?;
        }
        write!(f, "N={} trial {}", self.n, self.index + 1)
    }
}

/// Why and how far an A/B experiment grows.
#[derive(Debug, Clone, PartialEq)]
pub struct Replan {
    /// Pairs per point so far.
    pub pairs: u32,
    /// Pairs per point from now on.
    pub more: u32,
    /// The cap (`--max-runs`).
    pub max_runs: u32,
    /// The change that must be decidable (a fraction).
    pub threshold: f64,
    /// The N that cannot decide it yet.
    pub undecided: Vec<u32>,
    /// Trials in the grown plan, both sides.
    pub trials: usize,
}

/// Receives a run's events as they happen.
pub trait Progress {
    /// The runs are stored (as `running`) and `trials` trials are planned.
    fn begun(&mut self, runs: &[i64], trials: usize);
    /// A trial is about to start.
    fn trial_started(&mut self, trial: &TrialLabel);
    /// A trial ended and was committed (failed trials too).
    fn trial_finished(&mut self, trial: &TrialLabel, record: &TrialRecord);
    /// The plan grew (`ab --max-runs`).
    fn replanned(&mut self, replan: &Replan);
    /// Something that weakens the measurement; it is also stored with the run.
    fn warning(&mut self, text: &str);
    /// Something worth saying that changes nothing (a stale scratch area removed, the A/B order).
    fn note(&mut self, text: &str);
}

/// A watcher that ignores everything (for tests).
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Silent;

#[cfg(test)]
impl Progress for Silent {
    fn begun(&mut self, _: &[i64], _: usize) {}
    fn trial_started(&mut self, _: &TrialLabel) {}
    fn trial_finished(&mut self, _: &TrialLabel, _: &TrialRecord) {}
    fn replanned(&mut self, _: &Replan) {}
    fn warning(&mut self, _: &str) {}
    fn note(&mut self, _: &str) {}
}

/// The reason a finished trial failed, if it did.
pub fn failure(record: &TrialRecord) -> Option<&str> {
    match &record.outcome {
        TrialOutcome::Failed { reason } => Some(reason),
        TrialOutcome::Ok(_) => None,
    }
}
