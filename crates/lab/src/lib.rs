//! The scalelab engine: plans sweeps, runs trials, stores results, analyses and presents them.
//!
//! No module here depends on clap; the binary converts arguments into the types of this crate.
//! All unsafe code lives in the `sys` and `perf` crates.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod csv_rows;
pub mod env;
pub mod error;
pub mod history;
pub mod lifecycle;
pub mod limits;
pub mod locks;
pub mod owned_dir;
pub mod params;
pub mod plan;
pub mod process;
pub mod profile;
pub mod record;
pub mod report;
pub mod runner;
pub mod safe_text;
pub mod scratch;
pub mod store;
pub mod task_spec;
pub mod timestamp;
pub mod warnings;
pub mod workloads;

pub use error::{Field, LabError};
