//! scalelab's use cases: what the CLI's commands and the dashboard's pages ask of the store and
//! the analysis, built once. Each takes a typed request and returns a typed result; the front
//! ends only parse their input, call one function here, and render what it returns.
//!
//! - [`history`]: one metric across the stored runs of a series, whole or per machine class.
//! - [`compare`]: run B against run A, refused when they measure different things.
//! - [`explain`]: why a run stops scaling, with its profiles read back.
//! - [`report`]: the data of one HTML report (runs, their comparisons, their history).
//! - [`queue`]: the lab's queue now, and why each job waits.
//!
//! Contract: nothing here prints, formats for a reader, or depends on clap, axum or `present`;
//! nothing here writes to the store. Errors say which input was wrong ([`AppError`]), so that
//! each front end can name it its own way (`--metric` on the command line, `metric=` in a URL).

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod compare;
mod error;
pub mod explain;
pub mod history;
pub mod queue;
pub mod report;

pub use error::{AppError, Input};
