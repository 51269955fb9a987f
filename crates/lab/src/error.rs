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
    #[error("--tasks `{spec}`: {reason}; accepted forms: 1,2,4 | 1..8 | 1..16:2 | pow2 | all")]
    BadTasks { spec: String, reason: String },
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

impl LabError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            context: context.into(),
            source,
        }
    }
    pub fn sys(context: impl Into<String>, source: sys::SysError) -> LabError {
        LabError::Sys {
            context: context.into(),
            source,
        }
    }
}
