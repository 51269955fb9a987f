//! Everything one HTML report shows, assembled from loaded runs: each run's summary, the USL
//! curve its throughput chart draws, its profiles (read back from their perf.data files) and
//! what grows across them, its lock table at the largest traced N, its explanation; every run compared with the
//! first; and the history the caller found. The `present` crate renders a [`ReportData`] as it
//! is: it loads nothing and computes no statistic.

use std::collections::BTreeSet;

use serde::Serialize;
use stats::{CompareOptions, Prediction, UslFit};

use super::comparison::{Comparison, compare_runs};
use super::explain::{Explanation, explain};
use super::history::History;
use super::lock_contention::{LockSides, PointLocks, at_point};
use super::profile::{GrowthReport, what_grows};
use super::profile::{PointProfile, load_if_profiled};
use super::summary::{RunSummary, summarize};
use model::record::{RunData, RunMeta};

/// Points on the drawn USL curve, from N = 1 to the largest N.
const CURVE_STEPS: u32 = 60;

/// The input of one HTML report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportData {
    /// The scalelab version that wrote the report.
    pub tool_version: String,
    /// RFC 3339 UTC.
    pub generated_at: String,
    /// In the order given; the first is the baseline of every comparison.
    pub runs: Vec<RunReport>,
    /// Every run after the first against the first (paired for the two runs of one `ab`).
    pub comparisons: Vec<Comparison>,
    /// The metric across stored runs, when the report shows one.
    pub history: Option<History>,
}

/// One run's part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The run as stored.
    pub meta: RunMeta,
    /// Its per-point results and warnings.
    pub summary: RunSummary,
    /// `(N, ops/s)` of every successful trial, in trial order.
    pub trials: Vec<(f64, f64)>,
    /// The USL fitted over [`RunReport::trials`], when they cover enough distinct N and the fit
    /// succeeds.
    pub usl: Option<UslCurve>,
    /// The profiled points, in N order (empty when the run recorded no profile).
    pub profiles: Vec<PointProfile>,
    /// What grows with N across [`RunReport::profiles`].
    pub profile_growth: Option<GrowthReport>,
    /// Why the run's profiles could not be read, when they could not.
    pub profile_error: Option<String>,
    /// The lock table at the largest N that traced locks (both sides).
    pub locks: Option<PointLocks>,
    /// Why the run stops scaling (`scalelab explain`), `None` without a measured trial.
    pub explanation: Option<Explanation>,
}

/// A USL fit and its curve for a chart.
#[derive(Debug, Clone, Serialize)]
pub struct UslCurve {
    /// The fitted parameters, with their intervals.
    pub fit: UslFit,
    /// The model with its 95% band at evenly spaced N from 1 to the largest N.
    pub curve: Vec<Prediction>,
}

impl ReportData {
    /// The report of `runs` (the first is the baseline of every comparison), with `history`.
    pub fn from_runs(
        runs: &[RunData],
        history: Option<History>,
        opts: &CompareOptions,
    ) -> ReportData {
        let comparisons = match runs.split_first() {
            Some((a, rest)) => rest
                .iter()
                .map(|b| compare_runs(a, b, opts, true))
                .collect(),
            None => Vec::new(),
        };
        ReportData {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            generated_at: model::timestamp::now_rfc3339(),
            runs: runs.iter().map(RunReport::from_run).collect(),
            comparisons,
            history,
        }
    }
}

impl RunReport {
    /// One run's analyses; a run without profiles or lock traces has none of those.
    pub(crate) fn from_run(run: &RunData) -> RunReport {
        let summary = summarize(run);
        let trials: Vec<(f64, f64)> = run
            .trials
            .iter()
            .filter_map(|t| {
                t.outcome
                    .measurement()
                    .map(|m| (f64::from(t.n), m.ops_per_sec()))
            })
            .collect();
        let max_n = summary
            .points
            .iter()
            .map(|p| f64::from(p.n))
            .fold(1.0, f64::max);
        let usl = usl_curve(run, &trials, max_n);
        let (profiles, profile_error) = match load_if_profiled(run) {
            Ok(points) => (points, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let profile_growth = what_grows(&profiles);
        let locks = run
            .trials
            .iter()
            .filter(|t| t.outcome.measurement().is_some_and(|m| m.locks.is_some()))
            .map(|t| t.n)
            .max()
            .and_then(|n| at_point(run, n, LockSides::BOTH));
        let explanation = explain(run, &profiles);
        RunReport {
            explanation,
            meta: run.meta.clone(),
            summary,
            trials,
            usl,
            profiles,
            profile_growth,
            profile_error,
            locks,
        }
    }
}

/// The USL over every successful trial and its curve up to `max_n`, when the trials cover at
/// least [`stats::USL_MIN_DISTINCT_N`] task counts and the fit succeeds.
fn usl_curve(run: &RunData, trials: &[(f64, f64)], max_n: f64) -> Option<UslCurve> {
    let distinct: BTreeSet<u32> = run
        .trials
        .iter()
        .filter(|t| t.outcome.measurement().is_some())
        .map(|t| t.n)
        .collect();
    if distinct.len() < stats::USL_MIN_DISTINCT_N {
        return None;
    }
    let fit = stats::fit_usl(trials).ok()?;
    let curve = (0..=CURVE_STEPS)
        .map(|i| fit.predict(1.0 + (max_n - 1.0) * f64::from(i) / f64::from(CURVE_STEPS)))
        .collect();
    Some(UslCurve { fit, curve })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::test_runs::run;

    fn usl(n: f64) -> f64 {
        1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0))
    }

    #[test]
    fn four_task_counts_get_a_usl_curve_and_fewer_do_not() {
        let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8]
            .iter()
            .map(|&n| (n, vec![usl(f64::from(n)) * 1.01, usl(f64::from(n)) * 0.99]))
            .collect();
        let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let report = RunReport::from_run(&run(1, "spin", &points));
        assert_eq!(report.trials.len(), 8);
        let curve = report.usl.expect("four task counts are fitted");
        assert_eq!(curve.curve.len(), 61);
        assert_eq!(curve.curve[0].n, 1.0);
        assert_eq!(curve.curve[60].n, 8.0);
        assert!(
            (curve.fit.sigma.point - 0.05).abs() < 0.02,
            "{:?}",
            curve.fit
        );

        let few = RunReport::from_run(&run(2, "spin", &points[..3]));
        assert!(few.usl.is_none());
        assert!(few.profiles.is_empty() && few.profile_error.is_none() && few.locks.is_none());
    }

    #[test]
    fn every_run_after_the_first_is_compared_with_the_first() {
        let runs = [
            run(1, "spin", &[(1, &[100.0, 101.0, 102.0])]),
            run(2, "spin", &[(1, &[90.0, 91.0, 92.0])]),
            run(3, "spin", &[(1, &[110.0, 111.0, 112.0])]),
        ];
        let data = ReportData::from_runs(&runs, None, &CompareOptions::default());
        assert_eq!(data.runs.len(), 3);
        let pairs: Vec<(i64, i64)> = data.comparisons.iter().map(|c| (c.a.id, c.b.id)).collect();
        assert_eq!(pairs, [(1, 2), (1, 3)]);
        assert!(
            ReportData::from_runs(&[], None, &CompareOptions::default())
                .comparisons
                .is_empty()
        );
    }
}
