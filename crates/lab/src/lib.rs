//! The scalelab engine: plans sweeps, runs trials, stores results and analyses them (the
//! `present` crate renders the analysis; nothing here depends on it).
//!
//! No module here depends on clap; the binary converts arguments into the types of this crate.
//! All unsafe code lives in the `sys` and `perf` crates.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod csv_rows;
pub mod env;
pub mod error;
pub mod lifecycle;
pub mod limits;
pub mod locks;
pub mod number_text;
pub mod owned_dir;
pub mod params;
pub mod plan;
pub mod process;
pub mod record;
pub mod runner;
pub mod safe_text;
pub mod scratch;
pub mod store;
pub mod task_spec;
#[cfg(any(test, feature = "test-support"))]
pub mod test_runs;
pub mod timestamp;
pub mod warnings;
pub mod workloads;

pub use error::{Field, LabError};
