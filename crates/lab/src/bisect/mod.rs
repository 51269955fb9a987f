//! `scalelab bisect`: the commit that made it slower, with a statistical verdict at every step.
//!
//! The bisection first measures the good and the bad end interleaved (as `ab` does) and goes on
//! only if the bad end REGRESSED at some N — only those N are bisected. Each step builds one
//! commit in a worktree and measures it interleaved against the good and the bad builds (kept
//! aside), in groups of three in random order, growing up to `--max-runs` while the verdicts
//! are imprecise (`lifecycle::interleave`, the loop `ab` uses); the commit is good, bad, or
//! skipped when it stays undecided or does not build. Every measurement is a stored run tagged
//! `bisect=ID`, `commit=HASH`; the state lives in the store, so `resume` continues after a
//! Ctrl-C or a crash without measuring a decided step again.
//!
//! Kernels need a reboot per step: with `--no-build` ([`manual`]) scalelab builds nothing, says
//! which commit to boot next, and `mark` measures what runs now — unpaired against the ends'
//! runs, which a reboot cannot interleave.
//!
//! Its parts: `git` (the range and the worktrees), `build` (the bisection's folder and its
//! builds), `search` (the binary search, pure), `decide` (a step's verdict from its
//! comparisons, pure), `spec` (the settings, stored as JSON), `drive` (the automatic
//! bisection), `step` (one of its steps), `manual` (`--no-build`), `view` (a bisection read
//! back, pure), `state` (how a call left a bisection), `error` (what stops one).

mod build;
mod drive;
mod error;
mod git;
mod manual;
mod search;
mod spec;
mod state;
mod step;
mod view;

pub use drive::{resume, start};
pub use error::BisectError;
pub use manual::{Pending, mark, next};
pub use model::bisection::short;
pub use spec::{BisectSpec, Measure};
pub use state::{BisectEnd, BisectOutcome, latest_unfinished};

use std::collections::BTreeMap;

use analysis::bisect::BisectView;
use store::Store;

/// Bisection `id` as `scalelab bisect` prints it and `report --bisect` draws it, its figures
/// recomputed from its runs.
pub fn view(store: &Store, id: i64) -> Result<BisectView, BisectError> {
    let record = store.bisect(id)?;
    let mut runs = BTreeMap::new();
    for s in &record.steps {
        for run in [s.run_good, s.run_commit, s.run_bad].into_iter().flatten() {
            if let std::collections::btree_map::Entry::Vacant(e) = runs.entry(run) {
                e.insert(store.load_run(run)?);
            }
        }
    }
    view::build(&record, &runs)
}
