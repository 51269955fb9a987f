//! An A/B experiment: two plans measured in interleaved pairs, each pair in a random order
//! ([`ab_schedule`](super::ab_schedule)), stored as two runs (each trial committed as it ends,
//! like `run`); with `max_runs`, the schedule grows while some N cannot decide
//! ([`ab_extension`](super::ab_extension)) — the same seed's longer order, of which the first
//! one is a prefix — and both runs' planned count and `ab_order` tag are updated in the store
//! before the new trials. The loop is [`interleave`](super::interleave)'s, which `bisect`
//! shares with three sides.
//!
//! Both runs share one environment fingerprint and the tags `ab_seed` (which, with the points
//! and runs, repeats the order) and `ab_order` (the side that went first in each pair, in
//! execution order). A stop between trials leaves both runs `interrupted` with what finished.

use super::ab_policy::AbPolicy;
use super::ab_schedule::AB_LETTERS;
use super::interleave::{Sides, interleave};
use super::session::Session;
use super::sweep::SweepEnd;
use crate::error::LabError;
use crate::plan::Plan;
use crate::runner::Executor;

/// How an A/B experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbOutcome {
    /// Run A's id in the database.
    pub id_a: i64,
    /// Run B's id in the database.
    pub id_b: i64,
    /// Whether every planned pair ran or the stop flag ended the experiment.
    pub end: SweepEnd,
    /// Trials committed, both sides together.
    pub stored: usize,
}

/// Measures `a` against `b` (see the module doc).
pub fn ab(
    a: Plan,
    b: Plan,
    policy: &AbPolicy,
    session: &mut Session<'_>,
    executor: Option<&mut dyn Executor>,
) -> Result<AbOutcome, LabError> {
    let sides = Sides {
        name: "ab",
        letters: &AB_LETTERS,
        watch: &[(0, 1)],
        decided: None,
    };
    let outcome = interleave(&mut [a, b], &sides, policy, session, executor)?;
    Ok(AbOutcome {
        id_a: outcome.ids[0],
        id_b: outcome.ids[1],
        end: outcome.end,
        stored: outcome.stored,
    })
}
