//! Analysis: typed, serialisable results derived from stored runs — never by re-running
//! anything, and never formatted here (the `present` crate renders them as terminal tables,
//! JSON and HTML; this crate never imports it).
//!
//! A layer of its own: it depends on the model (`model`), the statistics (`stats`) and the
//! reading of profiles (`perf`), never on the engine, the store or the CLI — the engine loads
//! the runs, this crate reads them. Its errors are [`AnalysisError`]: input that does not
//! read (a metric's name, a CSV file, a profile).
//!
//! - [`summary`]: a run's per-point medians, intervals, speedup, efficiency, accounting, and
//!   the warnings they raise.
//! - [`comparison`]: run B against run A, N by N (verdicts, shifts, crossings, warnings).
//! - [`explain`]: why a run stops scaling: its cost per op accounted and the growth attributed.
//! - [`scaling_model`]: the Universal Scalability Law fitted to a run or to CSV rows.
//! - [`history`]: one metric across stored runs, with change points.
//! - [`series`]: which stored runs make one history series (one command line for commands).
//! - [`profile`]: CPU profiles read back per point, what grows with N, run against run.
//! - [`lock_contention`]: lock waits per point, and what grows with N.
//! - [`step`]: one step of a command run, read as a run (`profile`/`locks --step NAME`).
//! - [`report_data`]: all of the above for the runs of one HTML report.
//! - [`bisect`]: a bisection's answer and steps, each step's comparisons against both ends
//!   (the types; the engine's `bisect` builds them, since judging a step is its logic).

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bisect;
pub mod boundaries;
pub mod comparison;
mod error;
pub mod explain;
pub mod history;
pub mod lock_contention;
pub mod profile;
pub mod report_data;
pub mod scaling_model;
pub mod series;
pub mod step;
pub mod summary;

pub use error::AnalysisError;
