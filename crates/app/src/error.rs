//! The errors of the use cases: what was not found, which input was wrong, or the store's own
//! failure. Their text names the cause; the front ends add how the input was given.

use analysis::AnalysisError;
use store::StoreError;

/// The input of a request that was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The parameters that select a series of runs.
    Series,
    /// The metric's name.
    Metric,
    /// The task count the metric is read at.
    At(u32),
}

/// Why a use case gave no result.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Nothing stored matches the request (a page's 404).
    #[error("{0}")]
    NotFound(String),
    /// One input does not read or matches nothing measured (a page's 400).
    #[error("{source}")]
    Invalid {
        /// The input that was wrong.
        input: Input,
        /// Why.
        source: AnalysisError,
    },
    /// The request reads, but its runs cannot be judged as asked (e.g. runs that measure
    /// different things, compared without `--force`).
    #[error("{0}")]
    Refused(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AppError {
    pub(crate) fn invalid(input: Input) -> impl FnOnce(AnalysisError) -> AppError {
        move |source| AppError::Invalid { input, source }
    }
}
