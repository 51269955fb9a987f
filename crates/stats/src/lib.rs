//! Pure statistics for scalelab: no I/O, no clocks, no randomness without a seed.
//!
//! - [`Sample`]: a point's trials — median and its order-statistic interval, spread, outliers.
//! - [`mann_whitney_u`], [`hodges_lehmann()`], [`compare()`]: two samples to a verdict;
//!   [`compare_paired`] (Wilcoxon signed-rank test, paired Hodges-Lehmann shift) for trials
//!   that ran in back-to-back pairs; exact null distributions when values tie.
//! - [`fit_usl`]: the Universal Scalability Law fit and its predictions.
//! - [`change_points`]: change points in a history series (E-divisive, Otava style).
//! - [`mean_difference_interval`]: Welch's interval of a difference of means (explain's
//!   interval on each cause's growth).
//!
//! Distributions (normal, Student's t, binomial) come from `statrs`; everything a maintained
//! crate does not offer is written here, and each (private) module says which parts and after
//! which paper or book. Every item is reachable from the crate root, by one path.
#![warn(missing_docs, unreachable_pub)]

mod changepoint;
mod compare;
mod error;
mod hodges_lehmann;
mod least_squares;
mod mann_whitney;
mod permutation_null;
mod sample;
mod signed_rank;
mod usl;
mod welch;

pub use changepoint::{ChangePoint, ChangePointOptions, change_points};
pub use compare::{Change, CompareOptions, Direction, Method, Verdict, compare, compare_paired};
pub use error::StatsError;
pub use hodges_lehmann::hodges_lehmann;
pub use mann_whitney::{MannWhitney, mann_whitney_u, min_achievable_p};
pub use sample::{Estimate, Outlier, Sample};
pub use usl::{Prediction, USL_MIN_DISTINCT_N, UslFit, UslWarning, fit_usl};
pub use welch::mean_difference_interval;
