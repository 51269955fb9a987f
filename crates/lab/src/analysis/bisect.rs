//! What a bisection found, as `scalelab bisect` prints it and `report --bisect` draws it: the
//! answer (`first bad commit: <hash> <subject>`, as git bisect says it), the change measured at
//! it with its interval, its neighbours' verdicts, and every step with its comparisons against
//! both ends — each recomputed from the stored runs with the bisection's threshold and alpha
//! (paired where the runs were measured together), never stored as figures.
//!
//! Pure: the stored bisection and its runs in, the typed view out (`bisect::view` loads them).

use std::collections::BTreeMap;

use serde::Serialize;
use stats::Change;

use crate::bisect::{BisectSpec, Next, Search};
use crate::record::RunData;
use crate::store::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};

/// A bisection, read.
#[derive(Debug, Clone, Serialize)]
pub struct BisectView {
    /// Its id.
    pub id: i64,
    /// The repository.
    pub repo: String,
    /// `--good` as given, and the commit it named.
    pub good_spec: String,
    /// `--bad` as given.
    pub bad_spec: String,
    /// The range, good end first.
    pub commits: Vec<BisectCommit>,
    /// Where it stands.
    pub status: BisectStatus,
    /// The build command (`None`: `--no-build`).
    pub build: Option<String>,
    /// What was measured: the command, or the built-in workload.
    pub measured: String,
    /// What each trial contributes (`ops_per_cpu_sec`, `throughput`).
    pub metric: String,
    /// Smallest change that matters (a fraction): the ends are judged at it.
    pub threshold: f64,
    /// The threshold the steps judged commits at: `threshold`, or half the gap between the ends
    /// when larger.
    pub step_threshold: f64,
    /// Significance level.
    pub alpha: f64,
    /// The N bisected: where the bad end REGRESSED.
    pub at: Vec<u32>,
    /// Step 0: the ends' comparison (the bad end against the good end).
    pub ends: Option<StepView>,
    /// The commits tested, in order.
    pub steps: Vec<StepView>,
    /// The first bad commit, when found.
    pub first_bad: Option<Answer>,
    /// When only skipped commits were left: the first bad commit is one of these.
    pub candidates: Vec<BisectCommit>,
    /// Bad verdicts below a good one, as (bad, good) positions: more than one change, or a
    /// wrong step.
    pub contradictions: Vec<(u32, u32)>,
    /// Commits skipped.
    pub skips: usize,
    /// Time spent building and measuring, over every step (nanoseconds).
    pub elapsed_ns: u64,
    /// When it began and ended, RFC 3339 UTC.
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
}

/// One step: the commit, its verdict and its comparisons at each bisected N.
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    /// The step's number (0: the ends).
    pub step: u32,
    /// The commit tested (the bad end for step 0).
    pub commit: BisectCommit,
    /// What was decided.
    pub verdict: StepVerdict,
    /// Why skipped or refused.
    pub reason: Option<String>,
    /// The commit against the good end, per N (step 0: the bad end against the good end).
    pub vs_good: Vec<PointChange>,
    /// The commit against the bad end, per N (empty for step 0).
    pub vs_bad: Vec<PointChange>,
    /// Groups (trials per side) measured at each N.
    pub runs: u32,
    /// The runs: good end, commit, bad end.
    pub run_good: Option<i64>,
    /// The commit's run.
    pub run_commit: Option<i64>,
    /// The bad end's run.
    pub run_bad: Option<i64>,
    /// The build's log.
    pub build_log: Option<String>,
    /// The whole step's time (nanoseconds).
    pub elapsed_ns: Option<u64>,
}

/// A comparison at one N.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PointChange {
    /// The task count.
    pub n: u32,
    /// The statistics (`None` when a side had no successful trial).
    pub change: Option<Change>,
    /// Whether the trials were judged in back-to-back groups.
    pub paired: bool,
}

/// The first bad commit and what surrounds it.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The commit.
    pub commit: BisectCommit,
    /// The step that judged it bad (step 0 when it is the bad end).
    pub judged: Option<StepView>,
    /// The commit before it, judged good (step 0 when it is the good end).
    pub parent: Option<StepView>,
    /// The nearest commit after it that was tested, when one was.
    pub after: Option<StepView>,
}

impl BisectView {
    /// Reads bisection `record` with its runs (every run a step names, by id).
    pub fn build(
        record: &BisectRecord,
        runs: &BTreeMap<i64, RunData>,
    ) -> Result<BisectView, crate::bisect::BisectError> {
        let spec = BisectSpec::from_json(record.id, &record.spec)?;
        let pair = |a: Option<i64>, b: Option<i64>| {
            Some((a.and_then(|a| runs.get(&a))?, b.and_then(|b| runs.get(&b))?))
        };
        // The ends at --threshold; the steps at the threshold their gap sets (`decide`).
        let step0 = record.steps.iter().find(|s| s.step == 0);
        let bisected = step0
            .and_then(|s| pair(s.run_good, s.run_bad))
            .and_then(|(g, b)| crate::bisect::bisected(&spec.compare(g, b, spec.threshold)));
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
}
