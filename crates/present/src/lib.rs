//! scalelab's presentation layer: renders the typed results of the analysis (the `analysis`
//! crate) for people — terminal tables, flame graphs, the self-contained HTML report. It
//! computes no statistic and loads nothing: every figure it shows comes from `analysis`, on the
//! records of `model`. It does not depend on the engine (`lab`), and neither the engine nor the
//! analysis imports this crate (as ripgrep's searcher never imports its printer).
//!
//! - [`run_table`]: one run (`scalelab show`, `run`).
//! - [`comparison_table`]: run B against run A (`compare`, `ab`).
//! - [`model_table`]: the USL fit (`model`).
//! - [`profile_table`]: top functions, what grows, run against run (`profile`).
//! - [`queue_table`]: the lab's job queue and its agents (`queue`).
//! - [`lock_table`]: the lock table at one N and what grows (`locks`).
//! - [`explain_table`] and [`explain_threads`]: the accounted answer (`explain`), and a
//!   command's threads by role; [`explain_text`]: its words, which the HTML report shares.
//! - [`history_table`]: a metric across runs with change points (`history`).
//! - [`bisect_text`]: a bisection's steps and its answer (`bisect`).
//! - [`flame_graph`]: interactive SVG flame graphs (`profile --flamegraph`, the HTML report).
//! - [`html`]: the HTML report (`report`).
//! - [`dashboard`]: the pages of `serve` the report has not (runs, history index).
//! - [`run_list`]: the stored runs, one line each (`ls`).
//! - [`comparison_csv`]: a comparison as CSV, one row per N (`compare --format csv`).
//! - [`Printer`] ([`Format`]), [`palette`], [`TextOptions`]: the output seam every table writes
//!   to (text, Markdown or CSV), colour (`--color`, `NO_COLOR`) and width (`--wide`, `COLUMNS`).
//!
//! JSON needs no renderer: the binary writes the analysis results with `model::safe_text`.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bisect_text;
pub mod comparison_csv;
pub mod comparison_table;
pub mod dashboard;
mod error;
pub mod explain_table;
pub mod explain_text;
pub mod explain_threads;
pub mod flame_graph;
mod grid;
pub mod history_table;
pub mod html;
pub mod lock_table;
mod markdown;
pub mod model_table;
mod number_format;
pub mod palette;
mod printer;
pub mod profile_table;
pub mod queue_table;
pub mod run_list;
pub mod run_table;
mod text_options;

pub use error::PresentError;
pub use palette::{ColorChoice, Palette};
pub use printer::{Format, Printer};
pub use text_options::{TextOptions, table_width};
