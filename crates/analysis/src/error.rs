//! The analysis's error type: input that does not read — a metric's name that no run has, a
//! CSV file's line, a profile that cannot be read; each message names the value and the fix.

use thiserror::Error;

/// Input the analysis cannot read; the message says what and how to fix it.
#[derive(Debug, Error)]
pub enum AnalysisError {
    /// A name, a file's contents or a selection of runs that the analysis cannot use.
    #[error("{0}")]
    Input(String),
    /// A value or file the user gave that does not parse.
    #[error(transparent)]
    Spec(#[from] model::SpecError),
    /// A profile that cannot be read.
    #[error(transparent)]
    Perf(#[from] perf_read::PerfError),
}
