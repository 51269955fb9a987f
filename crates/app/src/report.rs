//! `report`: the data of one HTML report — its runs' analyses, each run against the first, and
//! the first run's history when the store holds its series. `scalelab report` and the
//! dashboard's run, comparison and history pages build theirs here; `present::html` draws it.

use analysis::history::History;
use analysis::report_data::ReportData;
use model::record::RunData;
use stats::CompareOptions;
use store::Store;

use crate::error::AppError;
use crate::history;

/// The report of `runs` (each compared with the first) ending with `history`.
pub fn of_runs(runs: &[RunData], history: Option<History>, options: &CompareOptions) -> ReportData {
    ReportData::from_runs(runs, history, options)
}

/// The report of `runs`, ending with the first run's history when `store` holds at least one
/// other run of its series ([`history::of_run`]).
pub fn with_history(
    store: Option<&Store>,
    runs: &[RunData],
    options: &CompareOptions,
) -> Result<ReportData, AppError> {
    let history = match (store, runs.first()) {
        (Some(store), Some(first)) => history::of_run(store, first)?,
        _ => None,
    };
    Ok(of_runs(runs, history, options))
}
