//! The scalelab engine: plans sweeps, runs trials, stores results and analyses them (the
//! `present` crate renders the analysis; nothing here depends on it).
//!
//! No module here depends on clap; the binary converts arguments into the types of this crate.
//! All unsafe code lives in the `sys` and `perf` crates.
//!
//! The public surface, each item by one path:
//! - At the root: the request and its plan ([`RunConfig`], [`Plan`], [`TaskSpec`], [`Params`],
//!   [`LockRequest`], [`parse_duration`], [`check_runs`]), the built-in workloads
//!   ([`workload_infos`], [`workload_info`]), the errors ([`LabError`], [`Field`],
//!   [`PathError`]), the run [`Warning`]s, [`create_output`], a run's profile files read from
//!   its store on another host ([`fetch_profiles`]), and the entry points of the
//!   binary's hidden helper processes ([`die_with_owner`], [`serve_guard`]).
//! - [`lifecycle`]: the owner of a run ([`lifecycle::run`], [`lifecycle::ab`]).
//! - [`bisect`]: the commit that made it slower ([`bisect::start`], [`bisect::resume`], and
//!   [`bisect::next`] / [`bisect::mark`] for `--no-build`).
//! - [`runner`]: what one trial is ([`runner::TrialSpec`]) and who executes it; the tracers
//!   that watch its tasks (`--locks`, `--offcpu`) plug into it through one seam (`observer`,
//!   `observers`).
//! - [`record`]: the data model of runs, trials and samples.
//! - [`store`]: the results database, export and import.
//! - [`env`](mod@env): the machine's fingerprint and `doctor`'s checks.
//! - [`analysis`]: typed results derived from stored runs, one module per analysis.
//! - [`number_text`], [`safe_text`]: how numbers read, and text made safe for a terminal.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bisect;
mod error;
pub mod lifecycle;
mod locks;
mod observer;
mod observers;
mod offcpu;
mod plan;
mod process;
mod profile;
pub mod runner;
mod scratch;
#[cfg(any(test, feature = "test-support"))]
pub mod test_runs;
mod traced_processes;
mod tracer_choice;
mod workloads;

pub use analysis;
pub use error::{Field, LabError};
pub use locks::{FutexWaits, LockRequest};
pub use model::csv_rows::read_file as read_csv_file;
pub use model::limits::{MAX_COMMAND_CHARS, MAX_DURATION, MAX_LABEL_CHARS};
pub use model::params::{ParamKind, ParamSpec, Params, split_pair};
pub use model::task_spec::TaskSpec;
pub use model::warnings::Warning;
pub use model::{SpecError, env, number_text, record, safe_text, schedule, timestamp};
pub use offcpu::OffCpuRequest;
pub use plan::{Plan, RunConfig, check_runs, parse_duration};
pub use process::{die_with_owner, perf_checks, serve_guard};
pub use store;
pub use store::profile_files::{FilesCopied, MAX_FILE_BYTES, fetch_profiles};
pub use sys::owned_dir::{PathError, create_output};
pub use tracer_choice::TracerChoice;
pub use workloads::{WorkloadInfo, workload_info, workload_infos};
