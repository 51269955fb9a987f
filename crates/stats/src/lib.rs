//! Pure statistics for scalelab: no I/O, no clocks, no randomness without a seed.
//!
//! - [`sample`]: a point's trials — median and its order-statistic interval, spread, outliers.
//! - [`mann_whitney`], [`hodges_lehmann`], [`compare`]: two samples to a verdict;
//!   [`signed_rank`] for trials that ran in back-to-back pairs; `permutation_null` for their
//!   exact distributions when values tie.
//! - [`usl`]: the Universal Scalability Law fit and its predictions.
//! - [`changepoint`]: change points in a history series (E-divisive, Otava style).
//!
//! Distributions (normal, Student's t, binomial) come from `statrs`; everything a maintained
//! crate does not offer is written here, and each module says which parts and after which
//! paper or book.

pub mod changepoint;
pub mod compare;
pub mod error;
pub mod hodges_lehmann;
mod least_squares;
pub mod mann_whitney;
mod permutation_null;
pub mod sample;
pub mod signed_rank;
pub mod usl;

pub use changepoint::{ChangePoint, ChangePointOptions, change_points};
pub use compare::{Change, CompareOptions, Direction, Method, Verdict, compare, compare_paired};
pub use error::StatsError;
pub use hodges_lehmann::hodges_lehmann;
pub use mann_whitney::{MannWhitney, mann_whitney_u, min_achievable_p};
pub use sample::{Estimate, Outlier, Sample};
pub use signed_rank::{SignedRank, hodges_lehmann_paired, wilcoxon_signed_rank};
pub use usl::{Prediction, UslFit, UslWarning, fit_usl};
