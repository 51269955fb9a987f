//! `explain`: why a run stops scaling, its cost per op accounted and its growth attributed, with
//! the run's profiles read back. `scalelab explain`, `scalelab run --explain` and the report's
//! explain section (through [`analysis::report_data`]) read profiles the same way.
//!
//! Invariant: profiles that cannot be read leave the answer without them and say why; they never
//! fail it.

use analysis::explain::Explanation;
use analysis::profile::load_if_profiled;
use model::record::RunData;

use crate::error::AppError;

/// A run explained.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The answer.
    pub explanation: Explanation,
    /// Why the run's profiles were left out of it, when they could not be read.
    pub profiles_left_out: Option<String>,
}

/// Explains `run` (its profiles already where this host reads them: see
/// `store::profile_files::fetch_profiles`).
pub fn explain(run: &RunData) -> Result<Explained, AppError> {
    let (profiles, profiles_left_out) = match load_if_profiled(run) {
        Ok(profiles) => (profiles, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let id = run.meta.id;
    let explanation = analysis::explain::explain(run, &profiles).ok_or_else(|| {
        AppError::NotFound(format!(
            "run {id} has no measured trial: nothing to explain (see `scalelab show {id}`)"
        ))
    })?;
    Ok(Explained {
        explanation,
        profiles_left_out,
    })
}
