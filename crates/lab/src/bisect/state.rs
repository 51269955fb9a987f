//! How a call that drives a bisection left it ([`BisectOutcome`]), and the bisection still
//! running that `--resume`, `next` and `mark` mean without an id.

use store::{BisectStatus, Store};

use super::error::BisectError;

/// How a call that drives a bisection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BisectEnd {
    /// It has its answer (or its refusal): the status says which.
    Finished(BisectStatus),
    /// Ctrl-C or SIGTERM stopped it between or during steps; `resume` continues it.
    Interrupted,
    /// `--no-build`: waiting for the next commit to be booted and marked.
    Waiting,
}

/// A bisection driven this far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BisectOutcome {
    /// Its id in the store.
    pub id: i64,
    /// How this call left it.
    pub end: BisectEnd,
}

/// The bisection `--resume` (and `next`, `mark`) mean without an id: the newest one still
/// running.
pub fn latest_unfinished(store: &Store) -> Result<Option<i64>, BisectError> {
    for id in store.bisect_ids()?.into_iter().rev() {
        if !store.bisect(id)?.status.is_finished() {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
