//! The engine's error type: every variant names the cause and, where there is one, the fix.

use thiserror::Error;

/// Everything that can go wrong in the engine, from a mistyped workload name to a failed
/// system call; the message says what happened and how to fix it.
#[derive(Debug, Error)]
pub enum LabError {
    /// No built-in workload has this name.
    #[error("unknown workload `{name}`{suggestion} (see `scalelab list`)")]
    UnknownWorkload {
        /// The name asked for.
        name: String,
        /// `; did you mean …?` with the nearest names, or empty.
        suggestion: String,
    },
    /// A value the user gave that does not parse (`--tasks`, `-p KEY=VAL`, a CSV file).
    #[error(transparent)]
    Spec(#[from] model::SpecError),
    /// A field of a run's configuration is out of its range or does not apply; the CLI names
    /// the flag that set it.
    #[error("{field}: {reason}")]
    Invalid {
        /// The configuration field.
        field: Field,
        /// What is wrong with its value.
        reason: String,
    },
    /// An external command's option is unusable (an empty command, a bad `--ops-regex`).
    #[error("{0}")]
    BadOption(String),
    /// A built-in workload failed while preparing or running a trial.
    #[error("workload `{workload}`: {message}")]
    Workload {
        /// The workload's name.
        workload: String,
        /// What failed, and the fix where there is one.
        message: String,
    },
    /// A file the user named is missing, unreadable, a device, or past its kind's limit.
    #[error(transparent)]
    Input(#[from] sys::SysError),
    /// A system call failed.
    #[error("{context}: {source}")]
    Sys {
        /// What scalelab was doing.
        context: String,
        /// The failed call, its errno and the fix.
        source: sys::SysError,
    },
    /// Reading or writing a file or a pipe failed.
    #[error("{context}: {source}")]
    Io {
        /// What scalelab was doing.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A path scalelab would create or write is unsafe or unusable.
    #[error(transparent)]
    Path(#[from] sys::owned_dir::PathError),
    /// The database refused an operation.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// A perf_event, tracepoint or profile operation failed.
    #[error(transparent)]
    Perf(#[from] perf::PerfError),
    /// A run ended early on an error; the trials it stored are kept.
    #[error(
        "run {runs} stopped after {} (kept, marked interrupted): {source}",
        model::number_text::plural(*.stored, "trial")
    )]
    Stopped {
        /// The run id, or `A and B` for an A/B experiment.
        runs: String,
        /// Trials stored before it stopped.
        stored: usize,
        /// Why it stopped.
        source: Box<LabError>,
    },
    /// A broken invariant inside scalelab: a bug, not a user error.
    #[error("internal error: {0} (please report this)")]
    Internal(String),
}

/// The fields of a run's configuration ([`RunConfig`](crate::RunConfig)) an error can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The built-in workload's name.
    Workload,
    /// The workload's `KEY=VAL` parameters.
    Params,
    /// The task counts swept.
    Tasks,
    /// Trials per point.
    Runs,
    /// The most pairs an A/B experiment may grow to.
    MaxRuns,
    /// Each trial's measurement window.
    Duration,
    /// Each trial's warm-up before the window.
    Warmup,
    /// The per-trial limit of an external command.
    Timeout,
    /// The external command and its steps.
    Command,
    /// Lock tracing (`--locks`).
    Locks,
    /// CPU profiling under `perf record`.
    Profile,
    /// How many trials per point are profiled.
    ProfileTrials,
    /// The directory for workloads' scratch files.
    Workdir,
    /// Where the tasks' memory comes from (`--membind`).
    Membind,
    /// The run's name.
    Name,
    /// The run's variant label.
    Variant,
    /// The run's `KEY=VAL` tags.
    Tags,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Field::Workload => "workload",
            Field::Params => "params",
            Field::Tasks => "tasks",
            Field::Runs => "runs",
            Field::MaxRuns => "max_runs",
            Field::Duration => "duration",
            Field::Warmup => "warmup",
            Field::Timeout => "timeout",
            Field::Command => "command",
            Field::Locks => "locks",
            Field::Profile => "profile",
            Field::ProfileTrials => "profile_trials",
            Field::Workdir => "workdir",
            Field::Membind => "membind",
            Field::Name => "name",
            Field::Variant => "variant",
            Field::Tags => "tags",
        })
    }
}

impl LabError {
    /// A configuration field out of range or not applicable.
    pub(crate) fn invalid(field: Field, reason: impl Into<String>) -> LabError {
        LabError::Invalid {
            field,
            reason: reason.into(),
        }
    }

    /// An I/O failure while doing `context`.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            context: context.into(),
            source,
        }
    }

    /// A failed system call while doing `context`.
    pub(crate) fn sys(context: impl Into<String>, source: sys::SysError) -> LabError {
        LabError::Sys {
            context: context.into(),
            source,
        }
    }
}
