//! The model's error type: a value the user gave (a `--tasks` list, a `-p KEY=VAL`, a CSV
//! file) that does not parse; each message names the value and what is accepted.

use thiserror::Error;

/// A request value that does not parse; the message says what was given and what is accepted.
#[derive(Debug, Error)]
pub enum SpecError {
    /// A `-p KEY=VAL` whose key the workload does not declare.
    #[error("workload `{workload}` has no parameter `{key}`; valid: {valid}")]
    UnknownParam {
        /// The workload's name.
        workload: String,
        /// The key given.
        key: String,
        /// The workload's parameters as `name=kind`, comma-separated.
        valid: String,
    },
    /// A `-p KEY=VAL` whose value does not parse as the parameter's kind.
    #[error("workload `{workload}`: `{key}={value}` is not valid; expected {expected}")]
    BadParamValue {
        /// The workload's name.
        workload: String,
        /// The parameter's name.
        key: String,
        /// The value given.
        value: String,
        /// What the parameter accepts (its kind, as `scalelab list` shows it).
        expected: String,
    },
    /// A `KEY=VALUE` argument without `=` or with an empty key.
    #[error("`{0}` is not KEY=VALUE")]
    MalformedPair(String),
    /// A `--tasks` value that is not one of the accepted forms, or out of range.
    #[error("`{spec}`: {reason}; accepted forms: 1,2,4 | 1..8 | 1..16:2 | pow2 | all")]
    BadTasks {
        /// The value given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file of measurements the user named whose contents do not parse (the message names
    /// the line and the format expected).
    #[error("{0}")]
    BadFile(String),
    /// A file the user named is missing, unreadable, a device, or past its kind's limit.
    #[error(transparent)]
    Input(#[from] sys::SysError),
    /// A parameter validated earlier no longer reads as its kind: a bug.
    #[error("internal error: {0} (please report this)")]
    Internal(String),
}
