//! scalelab's model: what a run is made of, with no engine, store or analysis in it.
//!
//! The bottom layer above `sys`: every other scalelab crate may depend on it, and it depends on
//! none of them. It holds the records of runs, trials and samples ([`record`]), the machine a
//! run measured on ([`env`](mod@env): its fingerprint, topology and `doctor`'s judgement of it),
//! the user's requests as values ([`task_spec`], [`params`], [`metric`], [`limits`]), a
//! thread's role in a command's tree ([`thread_account`]), and how numbers and text read
//! ([`number_text`], [`safe_text`], [`timestamp`]), plus the CSV reader behind `model --csv` and
//! `history --csv` ([`csv_rows`]).
//!
//! Errors are typed for this layer ([`SpecError`]): a value the user gave that does not parse.
//! The engine wraps them unchanged; the CLI adds the flag.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bisection;
pub mod csv_rows;
pub mod env;
mod error;
pub mod limits;
pub mod metric;
mod nanos;
pub mod number_text;
pub mod params;
pub mod placement;
pub mod profile_path;
pub mod record;
pub mod safe_text;
pub mod schedule;
pub mod task_spec;
#[cfg(any(test, feature = "test-support"))]
pub mod test_runs;
pub mod thread_account;
pub mod timestamp;
pub mod warnings;

pub use error::SpecError;
