//! The one error type of the statistics crate.
//!
//! Every variant names what was wrong with the input and, where there is one, the fix, so a
//! caller can show the message as it is (STYLE.md point 3).

use thiserror::Error;

/// Why a statistic could not be computed from the data it was given.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// A sample was built from no values at all.
    #[error("empty sample: at least one measured value is needed")]
    EmptySample,

    /// A sample value was NaN or infinite.
    #[error(
        "sample value #{index} is {value}: every value must be finite (a failed trial must be left out, not recorded as NaN)"
    )]
    NonFiniteValue {
        /// Position of the value in the order it was given.
        index: usize,
        /// The offending value.
        value: f64,
    },

    /// An option (alpha, level, threshold, ...) was outside its domain.
    #[error("{name} = {value} is out of range: it must be {expected}")]
    InvalidOption {
        /// The option's name as the caller knows it (`alpha`, `level`, `threshold`).
        name: &'static str,
        /// The value given.
        value: f64,
        /// The domain, in words (`in (0, 1)`).
        expected: &'static str,
    },

    /// A relative change was asked for against a baseline whose median is zero.
    #[error(
        "the baseline median is 0, so a relative change is undefined: compare a metric whose baseline is non-zero"
    )]
    ZeroBaseline,

    /// A paired comparison got a different number of values on each side.
    #[error(
        "a paired comparison needs one B value per A value, got {a} A and {b} B: pair the trials (a failed trial drops its partner too) or compare the samples unpaired"
    )]
    UnpairedLengths {
        /// Values of A.
        a: usize,
        /// Values of B.
        b: usize,
    },

    /// Too few distinct task counts for a three-parameter USL fit.
    #[error(
        "a USL fit needs at least {needed} distinct task counts, got {got}: measure more points (e.g. --tasks 1,2,4,8)"
    )]
    TooFewTaskCounts {
        /// Distinct N values present.
        got: usize,
        /// Distinct N values needed.
        needed: usize,
    },

    /// A USL point had a task count below 1 (or not finite).
    #[error("USL point #{index} has N = {n}: task counts must be finite and at least 1")]
    InvalidTaskCount {
        /// Position of the point as given.
        index: usize,
        /// The offending task count.
        n: f64,
    },

    /// A USL point had a throughput that is zero, negative or not finite.
    #[error(
        "USL point #{index} has throughput X = {x} at N = {n}: throughput must be finite and > 0 (drop failed trials)"
    )]
    InvalidThroughput {
        /// Position of the point as given.
        index: usize,
        /// The point's task count.
        n: f64,
        /// The offending throughput.
        x: f64,
    },

    /// The nonlinear least-squares fit could not produce parameters or standard errors.
    #[error("USL fit failed: {reason}")]
    FitFailed {
        /// What went wrong, in words.
        reason: String,
    },
}
