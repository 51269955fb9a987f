//! `compare`: run B against run A, N by N. `scalelab compare`, `scalelab ab` and the
//! dashboard's comparison page build theirs here.
//!
//! Invariant: runs that measure different things (another workload, other parameters, no N in
//! common) are refused unless forced; forced, only the N both measured are compared. A metric one
//! run has no value of in any trial (`max_rss` of a run recorded before peak memory was kept) is
//! refused, whatever `force` says.

use analysis::comparison::{Comparison, TrialMetric, compare_runs_on};
use model::env::MachineClass;
use model::record::RunData;
use stats::CompareOptions;

use crate::error::AppError;

/// How two runs are compared.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// The test's significance level, threshold and direction.
    pub options: CompareOptions,
    /// Pair trial i of A with trial i of B (they ran interleaved).
    pub paired: bool,
    /// Compare runs that measure different things anyway (the N both measured).
    pub force: bool,
    /// What is compared trial by trial.
    pub metric: TrialMetric,
}

/// Run `b` against run `a`.
pub fn compare(a: &RunData, b: &RunData, request: &CompareRequest) -> Result<Comparison, AppError> {
    if let Some(why) = [a, b]
        .into_iter()
        .find_map(|r| request.metric.missing_in(r))
    {
        return Err(AppError::Refused(why));
    }
    let comparison = compare_runs_on(
        a,
        b,
        &request.options,
        request.paired,
        request.metric.clone(),
    );
    if !request.force && !comparison.mismatches.is_empty() {
        let reasons: Vec<String> = comparison
            .mismatches
            .iter()
            .map(|m| format!("  - {m}"))
            .collect();
        return Err(AppError::Refused(format!(
            "refusing to compare run {} with run {}: they measure different things\n{}\n\
             a change here would mix that difference with the one you mean to test; compare runs \
             of one workload with the same parameters and task counts, or pass --force to compare \
             the N both measured anyway",
            a.meta.id,
            b.meta.id,
            reasons.join("\n")
        )));
    }
    Ok(comparison)
}

/// The machine classes of `a` and `b` when they differ: a difference between the runs may then
/// be the machines', not the change's.
pub fn classes_differ(a: &RunData, b: &RunData) -> Option<(MachineClass, MachineClass)> {
    let (ca, cb) = (MachineClass::of(&a.meta.env), MachineClass::of(&b.meta.env));
    (ca != cb).then_some((ca, cb))
}
