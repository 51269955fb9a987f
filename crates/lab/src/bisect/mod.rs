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
//! back, pure).

mod build;
mod decide;
mod drive;
mod git;
mod manual;
mod search;
mod spec;
mod step;
mod view;

use std::path::PathBuf;

pub use drive::{resume, start};
pub use manual::{Pending, mark, next};
pub use model::bisection::short;
pub use spec::{BisectSpec, Measure};

pub(crate) use decide::bisected;

use std::collections::BTreeMap;

use crate::analysis::bisect::BisectView;
use crate::store::{BisectStatus, Store, StoreError};

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

/// Everything that can stop a bisection, each naming the cause and the fix.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// A git command failed.
    #[error("{command}: {detail}")]
    Git {
        /// The command, as run.
        command: String,
        /// What git said.
        detail: String,
    },
    /// `--repo` is not inside a git repository.
    #[error("--repo {}: not a git repository ({detail}) — give the folder of a clone", path.display())]
    NotARepository {
        /// The folder given.
        path: PathBuf,
        /// What git said.
        detail: String,
    },
    /// `--good` or `--bad` names no commit.
    #[error("{flag} {rev}: no such commit in {} — give a hash, tag or branch of that repository (`git -C {} log --oneline`)", repo.display(), repo.display())]
    UnknownRevision {
        /// `--good` or `--bad`.
        flag: &'static str,
        /// The revision given.
        rev: String,
        /// The repository.
        repo: PathBuf,
    },
    /// The ends are not an older good commit and a newer bad one.
    #[error("{0}")]
    BadRange(String),
    /// A worktree folder of the bisection is not what scalelab left there.
    #[error("{}: {detail} — remove it (and run `git worktree prune` in the repository), then resume", path.display())]
    StaleWorktree {
        /// The worktree's folder.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// An end of the range did not build.
    #[error(
        "the {end} end {hash} did not build: {reason} — its log is {log}; fix --build (it runs in a worktree of --repo) or choose another --{end}"
    )]
    EndBuild {
        /// `good` or `bad`.
        end: &'static str,
        /// The commit.
        hash: String,
        /// How it failed.
        reason: String,
        /// The build's log.
        log: String,
    },
    /// Every trial of an end failed.
    #[error(
        "every trial of the {end} end failed (run {run}; the first: {reason}) — fix the command or workload, then `scalelab bisect --resume {bisect}`"
    )]
    EndMeasuredNothing {
        /// `good` or `bad`.
        end: &'static str,
        /// The run.
        run: i64,
        /// The bisection.
        bisect: i64,
        /// The first trial's failure.
        reason: String,
    },
    /// Nothing to resume, mark or show.
    #[error("{0}")]
    Nothing(String),
    /// The stored settings do not read back.
    #[error(
        "bisection {id}: its stored settings are unreadable ({detail}) — the database was damaged or written by an incompatible scalelab"
    )]
    BadSpec {
        /// The bisection.
        id: i64,
        /// Why.
        detail: String,
    },
    /// A setting cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// A folder or file scalelab would make is unsafe or unusable.
    #[error(transparent)]
    Path(#[from] crate::owned_dir::PathError),
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// What scalelab was doing.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Planning or measuring failed.
    #[error(transparent)]
    Lab(#[from] crate::error::LabError),
}

impl BisectError {
    fn io(context: impl Into<String>, source: std::io::Error) -> BisectError {
        BisectError::Io {
            context: context.into(),
            source,
        }
    }
}
