//! The engine's error type: every variant names the cause and, where there is one, the fix.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LabError {
    #[error("unknown workload `{name}`{suggestion} (see `scalelab list`)")]
    UnknownWorkload { name: String, suggestion: String },
    #[error("workload `{workload}` has no parameter `{key}`; valid: {valid}")]
    UnknownParam {
        workload: String,
        key: String,
        valid: String,
    },
    #[error("workload `{workload}`: `{key}={value}` is not valid; expected {expected}")]
    BadParamValue {
        workload: String,
        key: String,
        value: String,
        expected: String,
    },
    #[error("`{0}` is not KEY=VALUE")]
    MalformedPair(String),
    #[error("`{spec}`: {reason}; accepted forms: 1,2,4 | 1..8 | 1..16:2 | pow2 | all")]
    BadTasks { spec: String, reason: String },
    /// A field of a run's configuration is out of its range or does not apply; the CLI names
    /// the flag that set it.
    #[error("{field}: {reason}")]
    Invalid { field: Field, reason: String },
    #[error("{0}")]
    BadOption(String),
    #[error("workload `{workload}`: {message}")]
    Workload { workload: String, message: String },
    #[error("{context}: {source}")]
    Sys {
        context: String,
        source: sys::SysError,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Path(#[from] crate::owned_dir::PathError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Perf(#[from] perf::PerfError),
    #[error("run {runs} stopped after {stored} trials (kept, marked interrupted): {source}")]
    Stopped {
        /// The run id, or `A and B` for an A/B experiment.
        runs: String,
        stored: usize,
        source: Box<LabError>,
    },
    #[error("internal error: {0} (please report this)")]
    Internal(String),
}

/// The fields of a run's configuration ([`RunConfig`](crate::plan::RunConfig)) an error can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Workload,
    Params,
    Tasks,
    Runs,
    MaxRuns,
    Duration,
    Warmup,
    Timeout,
    Command,
    Locks,
    Profile,
    ProfileTrials,
    Workdir,
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

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            context: context.into(),
            source,
        }
    }
    pub(crate) fn sys(context: impl Into<String>, source: sys::SysError) -> LabError {
        LabError::Sys {
            context: context.into(),
            source,
        }
    }
}
