//! A bisection read back for `bisect` to print and `report --bisect` to draw: the answer, the
//! change measured at it, its neighbours' verdicts and every step with its comparisons against
//! both ends — each recomputed from the stored runs with the bisection's threshold and alpha
//! (paired where the runs were measured together), never stored as figures.
//!
//! Pure: the stored bisection and its runs in, the analysis's typed view out. It lives here,
//! not in the analysis, because a step is judged by the bisection's own logic ([`super::decide`],
//! [`super::search`], the stored [`BisectSpec`]).

use std::collections::BTreeMap;

use analysis::bisect::{Answer, BisectView, PointChange, StepView};

use super::error::BisectError;
use super::search::{Next, Search};
use super::spec::BisectSpec;
use model::record::RunData;
use store::{BisectRecord, BisectStatus, BisectStep, StepVerdict};

/// Reads bisection `record` with its runs (every run a step names, by id).
pub(super) fn build(
    record: &BisectRecord,
    runs: &BTreeMap<i64, RunData>,
) -> Result<BisectView, BisectError> {
    let spec = BisectSpec::from_json(record.id, &record.spec)?;
    let pair = |a: Option<i64>, b: Option<i64>| {
        Some((a.and_then(|a| runs.get(&a))?, b.and_then(|b| runs.get(&b))?))
    };
    // The ends at --threshold; the steps at the threshold their gap sets (`analysis::bisect::decide`).
    let step0 = record.steps.iter().find(|s| s.step == 0);
    let bisected = step0
        .and_then(|s| pair(s.run_good, s.run_bad))
        .and_then(|(g, b)| analysis::bisect::decide::bisected(&spec.compare(g, b, spec.threshold)));
    let step_threshold = bisected.as_ref().map_or(spec.threshold, |b| b.threshold);
    let compare = |a: Option<i64>, b: Option<i64>, threshold: f64| -> Vec<PointChange> {
        let Some((a, b)) = pair(a, b) else {
            return Vec::new();
        };
        let c = spec.compare(a, b, threshold);
        c.points
            .iter()
            .map(|p| PointChange {
                n: p.n,
                change: p.change,
                paired: c.paired,
            })
            .collect()
    };
    let view_of = |s: &BisectStep| -> StepView {
        let (vs_good, vs_bad) = if s.step == 0 {
            (compare(s.run_good, s.run_bad, spec.threshold), Vec::new())
        } else {
            (
                compare(s.run_good, s.run_commit, step_threshold),
                compare(s.run_bad, s.run_commit, step_threshold),
            )
        };
        let measured = if s.step == 0 { s.run_bad } else { s.run_commit };
        StepView {
            step: s.step,
            commit: record.commits[s.position as usize].clone(),
            verdict: s.verdict,
            reason: s.reason.clone(),
            vs_good,
            vs_bad,
            runs: measured
                .and_then(|r| runs.get(&r))
                .map_or(0, |r| r.meta.runs),
            run_good: s.run_good,
            run_commit: s.run_commit,
            run_bad: s.run_bad,
            build_log: s.build_log.clone(),
            elapsed_ns: s.elapsed_ns,
        }
    };
    let ends = record.steps.iter().find(|s| s.step == 0).map(view_of);
    let at: Vec<u32> = ends
        .as_ref()
        .filter(|e| e.verdict == StepVerdict::Regressed)
        .map(|e| {
            e.vs_good
                .iter()
                .filter(|p| {
                    p.change
                        .is_some_and(|c| c.verdict == stats::Verdict::Regressed)
                })
                .map(|p| p.n)
                .collect()
        })
        .unwrap_or_default();
    let steps: Vec<StepView> = record
        .steps
        .iter()
        .filter(|s| s.step > 0 && s.verdict != StepVerdict::Measuring)
        .map(view_of)
        .collect();
    let search = Search::of(record);
    let (last_good, first_bad) = search.bounds();
    let tested = |position: u32| -> Option<StepView> {
        if position == 0 || position as usize == record.commits.len() - 1 {
            return ends.clone();
        }
        steps
            .iter()
            .rev()
            .find(|s| s.commit.position == position)
            .cloned()
    };
    let answer = (record.status == BisectStatus::Found).then(|| Answer {
        commit: record.commits[first_bad as usize].clone(),
        judged: tested(first_bad),
        parent: tested(last_good),
        after: steps
            .iter()
            .filter(|s| s.commit.position > first_bad && s.verdict != StepVerdict::Skip)
            .min_by_key(|s| s.commit.position)
            .cloned(),
    });
    let candidates = match (record.status, search.next()) {
        (BisectStatus::Unresolved, Next::OnlySkipped(ps)) => ps
            .iter()
            .map(|&p| record.commits[p as usize].clone())
            .collect(),
        _ => Vec::new(),
    };
    let measured = match &spec.measure.command {
        Some(c) => c.steps.first().map(|s| s.1.clone()).unwrap_or_default(),
        None => spec.measure.workload.clone(),
    };
    Ok(BisectView {
        id: record.id,
        repo: spec.repo.display().to_string(),
        good_spec: spec.good.clone(),
        bad_spec: spec.bad.clone(),
        commits: record.commits.clone(),
        status: record.status,
        build: spec.build.clone(),
        measured,
        threshold: spec.threshold,
        step_threshold,
        metric: spec.metric.name().to_string(),
        alpha: spec.alpha,
        at,
        skips: steps
            .iter()
            .filter(|s| s.verdict == StepVerdict::Skip)
            .count(),
        elapsed_ns: record.steps.iter().filter_map(|s| s.elapsed_ns).sum(),
        contradictions: search.contradictions(),
        ends,
        steps,
        first_bad: answer,
        candidates,
        started_at: record.started_at.clone(),
        finished_at: record.finished_at.clone(),
    })
}
