//! The comparison of two runs, point by point and as whole curves: the serialisable view that
//! `scalelab compare` and `scalelab ab` print as text ([`super::compare_term`]) or JSON.
//!
//! Every statistic comes from elsewhere: [`stats::compare`] judges each N (U test,
//! Hodges-Lehmann shift and interval, verdict, minimum detectable effect, runs needed), or
//! [`stats::compare_paired`] when the runs are the two sides of one `scalelab ab` experiment
//! (its trials ran in back-to-back pairs: trial i of A with trial i of B at each N);
//! [`Sample`] gives spread and MAD outliers, [`analysis::summarize`] gives "scales to S out of
//! N". This module only decides what is compared with what — per-trial throughput at each N
//! both runs measured — and gathers what a reader must know before trusting the answer: runs
//! that measure different things ([`Mismatch`], refused by the CLI unless `--force`), the
//! environment differences, too few runs, noise, outliers, failed trials.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use stats::{Change, CompareOptions, Direction, Estimate, Sample, Verdict};

pub use super::compare_warning::{CompareWarning, Mismatch};
use crate::analysis::{self, HIGH_CV, ScalesTo};
use crate::record::{Mode, Pin, RunData, RunMeta, RunStatus, TrialOutcome};
use crate::report::term;

/// Fingerprint fields expected to differ when two runs are compared on purpose (a kernel or a
/// scalelab build is often the very thing compared): shown as notes, not warnings.
const EXPECTED_DIFFERENCES: [&str; 5] = [
    "kernel_release",
    "kernel_cmdline",
    "os",
    "tool_version",
    "git_commit",
];

/// Which run of the pair: A is the baseline, B the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// One of the two runs, as far as a comparison needs to name it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    pub id: i64,
    /// The one-line description `scalelab show` heads a run with.
    pub description: String,
    pub name: Option<String>,
    pub variant: Option<String>,
    pub workload: String,
    pub params: BTreeMap<String, String>,
    pub mode: Mode,
    pub pin: Pin,
    pub points: Vec<u32>,
    pub status: RunStatus,
    pub started_at: String,
    pub tags: BTreeMap<String, String>,
    pub kernel_release: String,
    /// "Scales to S out of N" of the whole run.
    pub scales_to: Option<ScalesTo>,
}

/// What is compared, and which way is good.
#[derive(Debug, Clone, Serialize)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    /// The workload's op (from A).
    pub op: String,
    /// The value each trial contributes.
    pub per_trial: &'static str,
    pub direction: Direction,
}

/// One N measured by both runs.
#[derive(Debug, Clone, Serialize)]
pub struct PointComparison {
    pub n: u32,
    /// Successful trials of A and B at this N.
    pub runs_a: usize,
    pub runs_b: usize,
    /// Pairs compared when the comparison is paired (both trials of the pair succeeded).
    pub pairs: Option<usize>,
    pub failed_a: usize,
    pub failed_b: usize,
    /// Coefficient of variation of the per-trial throughputs.
    pub cv_a: Option<f64>,
    pub cv_b: Option<f64>,
    /// The statistics, B against A; `None` when one side has no successful trial or A's median
    /// is 0 (then `note` says which).
    pub change: Option<Change>,
    pub note: Option<String>,
}

impl PointComparison {
    pub fn verdict(&self) -> Option<Verdict> {
        self.change.map(|c| c.verdict)
    }
}

/// The point where B fares worst against A (by the Hodges-Lehmann shift).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WorstPoint {
    pub n: u32,
    /// Relative shift with its interval.
    pub shift: Estimate,
    pub verdict: Verdict,
}

/// Where the two throughput curves (medians) change order between consecutive common N.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Crossing {
    pub from_n: u32,
    pub to_n: u32,
    /// Linear interpolation of where the medians meet.
    pub at_n: f64,
    /// The side with the higher median at `from_n`.
    pub ahead_below: Side,
    /// Whether both neighbouring points have a significant verdict (else the crossing may be
    /// noise).
    pub significant: bool,
}

/// The whole curve in a few lines.
#[derive(Debug, Clone, Serialize)]
pub struct CurveSummary {
    /// REGRESSED if any point regressed, else IMPROVED if any improved, else NO CHANGE if every
    /// point shows none, else INCONCLUSIVE.
    pub verdict: Verdict,
    pub regressed: Vec<u32>,
    pub improved: Vec<u32>,
    pub no_change: Vec<u32>,
    pub inconclusive: Vec<u32>,
    pub worst: Option<WorstPoint>,
    /// The side ahead (higher median) at every compared N, when one is.
    pub ahead_everywhere: Option<Side>,
    pub crossings: Vec<Crossing>,
}

/// Everything `compare` shows.
#[derive(Debug, Clone, Serialize)]
pub struct CompareView {
    pub a: RunRef,
    pub b: RunRef,
    pub metric: Metric,
    pub options: CompareOptions,
    /// Whether each N was judged on back-to-back pairs ([`ab_partners`]) rather than as two
    /// independent samples.
    pub paired: bool,
    pub points: Vec<PointComparison>,
    pub summary: CurveSummary,
    /// Why the runs may not be comparable; the CLI refuses unless forced.
    pub mismatches: Vec<Mismatch>,
    pub warnings: Vec<CompareWarning>,
    /// Whether any point REGRESSED: `compare` then exits 1.
    pub regressed: bool,
}

/// What differs between two runs' workload, parameters and task counts.
pub fn mismatches(a: &RunMeta, b: &RunMeta) -> Vec<Mismatch> {
    let mut out = Vec::new();
    if a.workload != b.workload {
        out.push(Mismatch::Workload {
            a: a.workload.clone(),
            b: b.workload.clone(),
        });
    }
    for (key, va, vb) in param_differences(a, b) {
        if !is_command_text(a, b, key) {
            out.push(Mismatch::Param {
                key: key.to_string(),
                a: va.cloned(),
                b: vb.cloned(),
            });
        }
    }
    let (pa, pb) = (sorted(&a.points), sorted(&b.points));
    if pa != pb {
        out.push(Mismatch::Points { a: pa, b: pb });
    }
    out
}

/// Parameters whose values differ (or exist on one side only), by key.
fn param_differences<'m>(
    a: &'m RunMeta,
    b: &'m RunMeta,
) -> Vec<(&'m str, Option<&'m String>, Option<&'m String>)> {
    let mut keys: Vec<&String> = a.params.keys().chain(b.params.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| (k.as_str(), a.params.get(k), b.params.get(k)))
        .filter(|(_, x, y)| x != y)
        .collect()
}

/// For two external-command runs, the command lines themselves (`cmd`, `stepK.NAME`, `prepare`,
/// `cleanup`) are what an A/B compares: they differ on purpose. How ops are counted (`ops`,
/// `ops_regex`) is the unit, and must match.
fn is_command_text(a: &RunMeta, b: &RunMeta, key: &str) -> bool {
    a.workload == "cmd"
        && b.workload == "cmd"
        && (matches!(key, "cmd" | "prepare" | "cleanup") || key.starts_with("step"))
}

/// Whether two runs are the sides of one `scalelab ab` experiment: the same `ab_seed` and
/// `ab_order` tags, which `ab` gives both of its runs (and no other pair of runs shares).
pub fn ab_partners(a: &RunMeta, b: &RunMeta) -> bool {
    let tag = |m: &'_ RunMeta, key: &str| m.tags.get(key).cloned();
    a.id != b.id
        && tag(a, "ab_seed").is_some()
        && tag(a, "ab_seed") == tag(b, "ab_seed")
        && tag(a, "ab_order") == tag(b, "ab_order")
}

/// Compares candidate `b` against baseline `a`, N by N, on per-trial throughput; paired when
/// `pair` allows it and the runs are [`ab_partners`].
///
/// Never refuses: mismatched runs are compared on the N both measured, with the mismatches in
/// [`CompareView::mismatches`] for the caller to refuse on.
pub fn build(a: &RunData, b: &RunData, opts: &CompareOptions, pair: bool) -> CompareView {
    let paired = pair && ab_partners(&a.meta, &b.meta);
    let mismatches = mismatches(&a.meta, &b.meta);
    let (ns_a, ns_b) = (measured(a), measured(b));
    let common: Vec<u32> = ns_a.iter().copied().filter(|n| ns_b.contains(n)).collect();
    let mut warnings = Vec::new();
    if a.meta.id == b.meta.id && a.meta.id != 0 && a.meta.started_at == b.meta.started_at {
        warnings.push(CompareWarning::SameRun { run: a.meta.id });
    }
    for (side, data) in [(Side::A, a), (Side::B, b)] {
        if data.meta.status != RunStatus::Complete {
            warnings.push(CompareWarning::NotComplete {
                side,
                run: data.meta.id,
                status: data.meta.status,
            });
        }
    }
    warnings.extend(
        param_differences(&a.meta, &b.meta)
            .into_iter()
            .filter(|(key, _, _)| is_command_text(&a.meta, &b.meta, key))
            .map(|(key, x, y)| CompareWarning::CommandDiffers {
                key: key.to_string(),
                a: x.cloned().unwrap_or_default(),
                b: y.cloned().unwrap_or_default(),
            }),
    );
    warnings.extend(
        mismatches
            .iter()
            .cloned()
            .map(|mismatch| CompareWarning::Forced { mismatch }),
    );
    warnings.extend(setup_differences(&a.meta, &b.meta));
    warnings.extend(a.meta.env.differences(&b.meta.env).into_iter().map(|d| {
        CompareWarning::Environment {
            expected: EXPECTED_DIFFERENCES.contains(&d.field.as_str()),
            field: d.field,
            a: d.a,
            b: d.b,
        }
    }));
    for (side, mine, theirs) in [(Side::A, &ns_a, &ns_b), (Side::B, &ns_b, &ns_a)] {
        let only: Vec<u32> = mine
            .iter()
            .copied()
            .filter(|n| !theirs.contains(n))
            .collect();
        if !only.is_empty() {
            warnings.push(CompareWarning::OnlyInOne { side, points: only });
        }
    }

    let mut points = Vec::new();
    for &n in &common {
        let (sa, sb) = (trials_at(a, n), trials_at(b, n));
        for (side, data, s) in [(Side::A, a, &sa), (Side::B, b, &sb)] {
            warnings.extend(side_warnings(side, data.meta.id, n, s));
        }
        let point = compare_point(n, &sa, &sb, opts, paired);
        if let Some(pairs) = point.pairs {
            let (alone_a, alone_b) = (sa.values.len() - pairs, sb.values.len() - pairs);
            if alone_a + alone_b > 0 {
                warnings.push(CompareWarning::Unpartnered {
                    n,
                    a: alone_a,
                    b: alone_b,
                });
            }
        }
        points.push(point);
    }
    warnings.extend(run_count_warnings(&points, opts));

    let summary = curve_summary(&points, opts.direction);
    CompareView {
        a: run_ref(a),
        b: run_ref(b),
        metric: Metric {
            name: "throughput",
            unit: "ops/s",
            op: a.meta.op_unit.clone(),
            per_trial: "ops / measurement window of each trial; a point's value is the median",
            direction: opts.direction,
        },
        options: *opts,
        paired,
        regressed: !summary.regressed.is_empty(),
        points,
        summary,
        mismatches,
        warnings,
    }
}

/// One side's successful trials at one N: throughput, trial index and start time each.
struct Trials {
    values: Vec<f64>,
    index: Vec<u32>,
    started_at: Vec<String>,
    failed: usize,
    first_failure: Option<String>,
}

fn trials_at(data: &RunData, n: u32) -> Trials {
    let mut t = Trials {
        values: Vec::new(),
        index: Vec::new(),
        started_at: Vec::new(),
        failed: 0,
        first_failure: None,
    };
    for trial in data.trials.iter().filter(|t| t.n == n) {
        match &trial.outcome {
            TrialOutcome::Ok(m) if m.ops_per_sec().is_finite() => {
                t.values.push(m.ops_per_sec());
                t.index.push(trial.index);
                t.started_at.push(trial.started_at.clone());
            }
            TrialOutcome::Ok(_) => t.failed += 1,
            TrialOutcome::Failed { reason } => {
                t.failed += 1;
                t.first_failure.get_or_insert_with(|| reason.clone());
            }
        }
    }
    t
}

fn compare_point(
    n: u32,
    a: &Trials,
    b: &Trials,
    opts: &CompareOptions,
    paired: bool,
) -> PointComparison {
    let (sa, sb) = (
        Sample::new(a.values.clone()).ok(),
        Sample::new(b.values.clone()).ok(),
    );
    let (pair_a, pair_b) = partners(a, b);
    let judged = match (&sa, &sb) {
        (None, _) => Err("no successful trial in A".to_string()),
        (_, None) => Err("no successful trial in B".to_string()),
        (Some(_), Some(_)) if paired && pair_a.is_empty() => {
            Err("no pair with both trials successful".to_string())
        }
        (Some(_), Some(_)) if paired => {
            stats::compare_paired(&pair_a, &pair_b, opts).map_err(|e| e.to_string())
        }
        (Some(sa), Some(sb)) => stats::compare(sa, sb, opts).map_err(|e| e.to_string()),
    };
    let (change, note) = match judged {
        Ok(change) => (Some(change), None),
        Err(why) => (None, Some(why)),
    };
    PointComparison {
        n,
        runs_a: a.values.len(),
        runs_b: b.values.len(),
        pairs: paired.then_some(pair_a.len()),
        failed_a: a.failed,
        failed_b: b.failed,
        cv_a: sa.as_ref().and_then(Sample::cv),
        cv_b: sb.as_ref().and_then(Sample::cv),
        change,
        note,
    }
}

/// The values of the trials whose repetition index succeeded on both sides, in index order.
fn partners(a: &Trials, b: &Trials) -> (Vec<f64>, Vec<f64>) {
    let of_a: BTreeMap<u32, f64> = a
        .index
        .iter()
        .copied()
        .zip(a.values.iter().copied())
        .collect();
    let of_b: BTreeMap<u32, f64> = b
        .index
        .iter()
        .copied()
        .zip(b.values.iter().copied())
        .collect();
    of_a.iter()
        .filter_map(|(i, &x)| of_b.get(i).map(|&y| (x, y)))
        .unzip()
}

fn side_warnings(side: Side, run: i64, n: u32, t: &Trials) -> Vec<CompareWarning> {
    let mut out = Vec::new();
    if t.failed > 0 {
        out.push(CompareWarning::FailedTrials {
            side,
            run,
            n,
            failed: t.failed,
            total: t.failed + t.values.len(),
            first_reason: t
                .first_failure
                .clone()
                .unwrap_or_else(|| "no throughput".into()),
        });
    }
    let Ok(sample) = Sample::new(t.values.clone()) else {
        return out;
    };
    if let Some(cv) = sample.cv().filter(|cv| *cv > HIGH_CV) {
        out.push(CompareWarning::HighVariance { side, run, n, cv });
    }
    // With fewer than 3 values the median is one of two values: nothing is "far" from it.
    if sample.len() >= 3 {
        for o in sample.outliers() {
            out.push(CompareWarning::Outlier {
                side,
                run,
                n,
                trial: t.index[o.index],
                started_at: t.started_at[o.index].clone(),
                value: o.value,
                score: o.score,
            });
        }
    }
    out
}

/// Too few runs to ever reach alpha, and "run more", each grouped over the points it concerns.
fn run_count_warnings(points: &[PointComparison], opts: &CompareOptions) -> Vec<CompareWarning> {
    // (pairs, runs A, runs B) -> (the points with those counts, the smallest p they allow)
    type Counts = (Option<usize>, usize, usize);
    let mut too_few: BTreeMap<Counts, (Vec<u32>, f64)> = BTreeMap::new();
    let mut run_more: Vec<u32> = Vec::new();
    let mut needed = 0usize;
    for p in points {
        let Some(c) = p.change else { continue };
        if c.min_achievable_p >= opts.alpha {
            let entry = too_few
                .entry((p.pairs, p.runs_a, p.runs_b))
                .or_insert((Vec::new(), c.min_achievable_p));
            entry.0.push(p.n);
        } else if let (Verdict::Inconclusive, Some(k)) = (c.verdict, c.runs_needed) {
            run_more.push(p.n);
            needed = needed.max(k);
        }
    }
    let mut out: Vec<CompareWarning> = too_few
        .into_iter()
        .map(
            |((pairs, runs_a, runs_b), (points, p))| CompareWarning::TooFewRuns {
                points,
                pairs,
                runs_a,
                runs_b,
                min_achievable_p: p,
                alpha: opts.alpha,
            },
        )
        .collect();
    if !run_more.is_empty() {
        out.push(CompareWarning::RunMore {
            points: run_more,
            runs_needed: needed,
            threshold: opts.threshold,
        });
    }
    out
}

fn setup_differences(a: &RunMeta, b: &RunMeta) -> Vec<CompareWarning> {
    let secs = |m: &RunMeta, d: crate::record::Nanos| {
        if m.workload == "cmd" {
            "n/a (command)".to_string()
        } else {
            format!("{:.3}s", d.as_secs_f64())
        }
    };
    [
        ("mode", a.mode.to_string(), b.mode.to_string()),
        ("pinning", a.pin.to_string(), b.pin.to_string()),
        ("trial duration", secs(a, a.duration), secs(b, b.duration)),
        ("warm-up", secs(a, a.warmup), secs(b, b.warmup)),
    ]
    .into_iter()
    .filter(|(_, x, y)| x != y)
    .map(|(field, a, b)| CompareWarning::SetupDiffers {
        field: field.into(),
        a,
        b,
    })
    .collect()
}

fn curve_summary(points: &[PointComparison], direction: Direction) -> CurveSummary {
    let at = |v: Verdict| -> Vec<u32> {
        points
            .iter()
            .filter(|p| p.verdict() == Some(v))
            .map(|p| p.n)
            .collect()
    };
    let (regressed, improved, no_change) = (
        at(Verdict::Regressed),
        at(Verdict::Improved),
        at(Verdict::NoChange),
    );
    let inconclusive: Vec<u32> = points
        .iter()
        .filter(|p| matches!(p.verdict(), Some(Verdict::Inconclusive) | None))
        .map(|p| p.n)
        .collect();
    let verdict = if !regressed.is_empty() {
        Verdict::Regressed
    } else if !improved.is_empty() {
        Verdict::Improved
    } else if !points.is_empty() && no_change.len() == points.len() {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    };
    // "Badness" of B: a lower throughput is worse when higher is better.
    let sign = match direction {
        Direction::HigherIsBetter => -1.0,
        Direction::LowerIsBetter => 1.0,
    };
    let worst = points
        .iter()
        .filter_map(|p| p.change.map(|c| (p.n, c)))
        .max_by(|(_, x), (_, y)| {
            (sign * x.relative_shift.point).total_cmp(&(sign * y.relative_shift.point))
        })
        .map(|(n, c)| WorstPoint {
            n,
            shift: c.relative_shift,
            verdict: c.verdict,
        });

    let decided: Vec<(u32, &Change)> = points
        .iter()
        .filter_map(|p| p.change.as_ref().map(|c| (p.n, c)))
        .collect();
    let ahead = |c: &Change| {
        if c.median_b > c.median_a {
            Some(Side::B)
        } else if c.median_a > c.median_b {
            Some(Side::A)
        } else {
            None
        }
    };
    let significant = |c: &Change| matches!(c.verdict, Verdict::Regressed | Verdict::Improved);
    let mut crossings = Vec::new();
    for pair in decided.windows(2) {
        let ((n0, c0), (n1, c1)) = (pair[0], pair[1]);
        if let (Some(s0), Some(s1)) = (ahead(c0), ahead(c1)) {
            if s0 != s1 {
                let (d0, d1) = (c0.median_b - c0.median_a, c1.median_b - c1.median_a);
                let at_n = f64::from(n0) + (f64::from(n1) - f64::from(n0)) * d0 / (d0 - d1);
                crossings.push(Crossing {
                    from_n: n0,
                    to_n: n1,
                    at_n,
                    ahead_below: s0,
                    significant: significant(c0) && significant(c1),
                });
            }
        }
    }
    let sides: Vec<Option<Side>> = decided.iter().map(|(_, c)| ahead(c)).collect();
    let ahead_everywhere = match sides.first() {
        Some(&Some(first)) if sides.iter().all(|s| *s == Some(first)) => Some(first),
        _ => None,
    };
    CurveSummary {
        verdict,
        regressed,
        improved,
        no_change,
        inconclusive,
        worst,
        ahead_everywhere,
        crossings,
    }
}

fn run_ref(data: &RunData) -> RunRef {
    let m = &data.meta;
    RunRef {
        id: m.id,
        description: term::header(&without_order(m)),
        name: m.name.clone(),
        variant: m.variant.clone(),
        workload: m.workload.clone(),
        params: m.params.clone(),
        mode: m.mode,
        pin: m.pin,
        points: m.points.clone(),
        status: m.status,
        started_at: m.started_at.clone(),
        tags: m.tags.clone(),
        kernel_release: m.env.kernel_release.clone(),
        scales_to: analysis::summarize(data).scales_to,
    }
}

/// The run without the `ab_order` tag `scalelab ab` records (one letter per pair: too long
/// for a heading; it stays in [`RunRef::tags`]).
fn without_order(m: &RunMeta) -> RunMeta {
    let mut m = m.clone();
    m.tags.remove("ab_order");
    m
}

/// The N a run planned or measured, ascending.
fn measured(data: &RunData) -> Vec<u32> {
    let mut ns = data.meta.points.clone();
    ns.extend(data.trials.iter().map(|t| t.n));
    sorted(&ns)
}

fn sorted(ns: &[u32]) -> Vec<u32> {
    let mut v = ns.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests;
