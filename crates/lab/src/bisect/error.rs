//! Everything that can stop a bisection ([`BisectError`]), each naming the cause and the fix.

use std::path::PathBuf;

use store::StoreError;

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
    Path(#[from] sys::owned_dir::PathError),
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
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> BisectError {
        BisectError::Io {
            context: context.into(),
            source,
        }
    }
}
