//! The comparison of two runs, point by point and as whole curves: the typed result that
//! `scalelab compare` and `scalelab ab` print as text (the `present` crate's comparison table)
//! or JSON, and that `ab` reads to decide whether to run more pairs.
//!
//! Every statistic comes from elsewhere: [`stats::compare()`] judges each N (U test,
//! Hodges-Lehmann shift and interval, verdict, minimum detectable effect, runs needed), or
//! [`stats::compare_paired`] when the runs are the two sides of one `scalelab ab` experiment
//! (its trials ran in back-to-back pairs: trial i of A with trial i of B at each N);
//! [`Sample`] gives spread and MAD outliers, [`summary::summarize`] gives "scales to S out of
//! N". This module only decides what is compared with what — per-trial throughput at each N
//! both runs measured — and gathers what a reader must know before trusting the answer: runs
//! that measure different things ([`Mismatch`], refused by the CLI unless `--force`), the
//! environment differences, too few runs, noise, outliers, failed trials.
//!
//! Its parts, imported one way: `side.rs` ([`Side`]: A or B) ← `curve.rs` (per-N results, the
//! whole-curve summary) and `warning.rs` (mismatches and warnings) ← this module (which
//! compares) ← `midpoint.rs` (a candidate against the midpoint of two ends, for `bisect`).

mod curve;
mod midpoint;
mod side;
mod trials;
mod warning;

use std::collections::BTreeMap;

use serde::Serialize;
use stats::{CompareOptions, Direction, Sample, Verdict};

pub use self::curve::{Crossing, CurveSummary, PointComparison, WorstPoint};
pub use self::midpoint::against_midpoint;
pub use self::side::Side;
pub use self::trials::TrialMetric;
use self::trials::{Trials, trials_at};
pub use self::warning::{ComparisonWarning, Mismatch};
use crate::summary::{self, HIGH_CV, ScalesTo};
use model::record::{Mode, Pin, RunData, RunMeta, RunStatus};

/// Fingerprint fields expected to differ when two runs are compared on purpose (a kernel or a
/// scalelab build is often the very thing compared): shown as notes, not warnings.
const EXPECTED_DIFFERENCES: [&str; 5] = [
    "kernel_release",
    "kernel_cmdline",
    "os",
    "tool_version",
    "git_commit",
];

/// One of the two runs, as far as a comparison needs to name it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    /// The run's id in the database.
    pub id: i64,
    /// The one-line description `scalelab show` heads a run with.
    pub description: String,
    /// `--name`, when given.
    pub name: Option<String>,
    /// `--variant`, when given.
    pub variant: Option<String>,
    /// The workload's name (`cmd` for an external command).
    pub workload: String,
    /// The workload's parameters (the command strings for `cmd`).
    pub params: BTreeMap<String, String>,
    /// Threads or processes.
    pub mode: Mode,
    /// How tasks were pinned.
    pub pin: Pin,
    /// The task counts planned.
    pub points: Vec<u32>,
    /// Complete, interrupted, running or incomplete.
    pub status: RunStatus,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// The run's `--tag KEY=VAL` pairs.
    pub tags: BTreeMap<String, String>,
    /// The kernel the run measured (`uname -r`).
    pub kernel_release: String,
    /// "Scales to S out of N" of the whole run.
    pub scales_to: Option<ScalesTo>,
}

/// What is compared, and which way is good.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedMetric {
    /// The metric's name (`throughput`, or a figure the command reported).
    pub name: String,
    /// Its unit (`ops/s`; a reported figure's as its `--metric` read it, maybe empty).
    pub unit: String,
    /// The workload's op (from A).
    pub op: String,
    /// The value each trial contributes.
    pub per_trial: String,
    /// Whether higher or lower is better.
    pub direction: Direction,
}

impl ComparedMetric {
    /// What a value is, for a column or a sentence: the unit (`ops/s`), or the metric's name
    /// where its figure has none.
    pub fn label(&self) -> &str {
        if self.unit.is_empty() {
            &self.name
        } else {
            &self.unit
        }
    }
}

/// Everything `compare` shows: run B against run A.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The baseline run.
    pub a: RunRef,
    /// The candidate run.
    pub b: RunRef,
    /// What is compared.
    pub metric: ComparedMetric,
    /// The threshold, alpha and confidence level the verdicts used.
    pub options: CompareOptions,
    /// Whether each N was judged on back-to-back pairs (`ab_partners`) rather than as two
    /// independent samples.
    pub paired: bool,
    /// One entry per N both runs measured, in N order.
    pub points: Vec<PointComparison>,
    /// The whole curve's verdict, worst point and crossings.
    pub summary: CurveSummary,
    /// Why the runs may not be comparable; the CLI refuses unless forced.
    pub mismatches: Vec<Mismatch>,
    /// What makes the verdicts less trustworthy, and notes.
    pub warnings: Vec<ComparisonWarning>,
    /// Whether any point REGRESSED: `compare` then exits 1.
    pub regressed: bool,
}

/// What differs between two runs' workload, parameters and task counts.
pub(crate) fn mismatches(a: &RunMeta, b: &RunMeta) -> Vec<Mismatch> {
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
pub(crate) fn ab_partners(a: &RunMeta, b: &RunMeta) -> bool {
    let tag = |m: &'_ RunMeta, key: &str| m.tags.get(key).cloned();
    a.id != b.id
        && tag(a, "ab_seed").is_some()
        && tag(a, "ab_seed") == tag(b, "ab_seed")
        && tag(a, "ab_order") == tag(b, "ab_order")
}

/// Compares candidate `b` against baseline `a`, N by N, on per-trial throughput; paired when
/// `pair` allows it and the runs are `ab_partners`.
///
/// Never refuses: mismatched runs are compared on the N both measured, with the mismatches in
/// [`Comparison::mismatches`] for the caller to refuse on.
pub fn compare_runs(a: &RunData, b: &RunData, opts: &CompareOptions, pair: bool) -> Comparison {
    compare_runs_on(a, b, opts, pair, TrialMetric::Throughput)
}

/// [`compare_runs`] on the per-trial value `metric` gives.
///
/// A reported figure is judged in its own direction (a latency: lower is better), whatever
/// `opts.direction` says.
pub fn compare_runs_on(
    a: &RunData,
    b: &RunData,
    opts: &CompareOptions,
    pair: bool,
    metric: TrialMetric,
) -> Comparison {
    let (unit, own_direction) = metric.unit_and_direction(&a.meta);
    let opts = &CompareOptions {
        direction: own_direction.unwrap_or(opts.direction),
        ..*opts
    };
    let paired = pair && ab_partners(&a.meta, &b.meta);
    let mismatches = mismatches(&a.meta, &b.meta);
    let (ns_a, ns_b) = (measured(a), measured(b));
    let common: Vec<u32> = ns_a.iter().copied().filter(|n| ns_b.contains(n)).collect();
    let mut warnings = Vec::new();
    if a.meta.id == b.meta.id && a.meta.id != 0 && a.meta.started_at == b.meta.started_at {
        warnings.push(ComparisonWarning::SameRun { run: a.meta.id });
    }
    for (side, data) in [(Side::A, a), (Side::B, b)] {
        if data.meta.status != RunStatus::Complete {
            warnings.push(ComparisonWarning::NotComplete {
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
            .map(|(key, x, y)| ComparisonWarning::CommandDiffers {
                key: key.to_string(),
                a: x.cloned().unwrap_or_default(),
                b: y.cloned().unwrap_or_default(),
            }),
    );
    warnings.extend(
        mismatches
            .iter()
            .cloned()
            .map(|mismatch| ComparisonWarning::Forced { mismatch }),
    );
    warnings.extend(setup_differences(&a.meta, &b.meta));
    let (class_a, class_b) = (
        model::env::MachineClass::of(&a.meta.env),
        model::env::MachineClass::of(&b.meta.env),
    );
    if class_a != class_b {
        warnings.push(ComparisonWarning::MachineClass {
            a: class_a.to_string(),
            b: class_b.to_string(),
        });
    }
    warnings.extend(a.meta.env.differences(&b.meta.env).into_iter().map(|d| {
        ComparisonWarning::Environment {
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
            warnings.push(ComparisonWarning::OnlyInOne { side, points: only });
        }
    }

    let mut points = Vec::new();
    for &n in &common {
        let (sa, sb) = (trials_at(a, n, &metric), trials_at(b, n, &metric));
        for (side, data, s) in [(Side::A, a, &sa), (Side::B, b, &sb)] {
            let command = data.meta.workload == "cmd";
            warnings.extend(side_warnings(
                side,
                data.meta.id,
                command,
                n,
                s,
                (metric.name(), &unit),
            ));
        }
        let point = compare_point(n, &sa, &sb, opts, paired);
        if let Some(pairs) = point.pairs {
            let (alone_a, alone_b) = (sa.values.len() - pairs, sb.values.len() - pairs);
            if alone_a + alone_b > 0 {
                warnings.push(ComparisonWarning::Unpartnered {
                    n,
                    a: alone_a,
                    b: alone_b,
                });
            }
        }
        points.push(point);
    }
    warnings.extend(run_count_warnings(&points, opts));

    let summary = curve::curve_summary(&points, opts.direction);
    Comparison {
        a: run_ref(a),
        b: run_ref(b),
        metric: ComparedMetric {
            name: metric.name().to_string(),
            unit,
            op: a.meta.op_unit.clone(),
            per_trial: metric.per_trial(),
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
        spread_a: sa.as_ref().and_then(relative_iqr),
        spread_b: sb.as_ref().and_then(relative_iqr),
        change,
        note,
    }
}

/// A sample's interquartile range over its median; `None` for a median of 0.
fn relative_iqr(s: &Sample) -> Option<f64> {
    let median = s.median();
    (median != 0.0).then(|| (s.quantile(0.75) - s.quantile(0.25)) / median.abs())
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

fn side_warnings(
    side: Side,
    run: i64,
    command: bool,
    n: u32,
    t: &Trials,
    (metric, unit): (&str, &str),
) -> Vec<ComparisonWarning> {
    let mut out = Vec::new();
    if t.failed > 0 {
        out.push(ComparisonWarning::FailedTrials {
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
        out.push(ComparisonWarning::HighVariance {
            side,
            run,
            n,
            metric: metric.to_string(),
            cv,
            command,
        });
    }
    // With fewer than 3 values the median is one of two values: nothing is "far" from it.
    if sample.len() >= 3 {
        for o in sample.outliers() {
            out.push(ComparisonWarning::Outlier {
                side,
                run,
                n,
                trial: t.index[o.index],
                started_at: t.started_at[o.index].clone(),
                value: o.value,
                unit: unit.to_string(),
                score: o.score,
            });
        }
    }
    out
}

/// Too few runs to ever reach alpha, and "run more", each grouped over the points it concerns.
fn run_count_warnings(points: &[PointComparison], opts: &CompareOptions) -> Vec<ComparisonWarning> {
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
    let mut out: Vec<ComparisonWarning> = too_few
        .into_iter()
        .map(
            |((pairs, runs_a, runs_b), (points, p))| ComparisonWarning::TooFewRuns {
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
        out.push(ComparisonWarning::RunMore {
            points: run_more,
            runs_needed: needed,
            threshold: opts.threshold,
        });
    }
    out
}

fn setup_differences(a: &RunMeta, b: &RunMeta) -> Vec<ComparisonWarning> {
    let secs = |m: &RunMeta, d: model::record::Nanos| {
        if m.workload == "cmd" {
            "n/a (command)".to_string()
        } else {
            format!("{:.3}s", d.as_secs_f64())
        }
    };
    [
        ("mode", a.mode.to_string(), b.mode.to_string()),
        ("pinning", a.pin.to_string(), b.pin.to_string()),
        ("memory", a.membind.to_string(), b.membind.to_string()),
        ("trial duration", secs(a, a.duration), secs(b, b.duration)),
        ("warm-up", secs(a, a.warmup), secs(b, b.warmup)),
    ]
    .into_iter()
    .filter(|(_, x, y)| x != y)
    .map(|(field, a, b)| ComparisonWarning::SetupDiffers {
        field: field.into(),
        a,
        b,
    })
    .collect()
}

fn run_ref(data: &RunData) -> RunRef {
    let m = &data.meta;
    RunRef {
        id: m.id,
        description: without_order(m).description(),
        name: m.name.clone(),
        variant: m.variant.clone(),
        workload: m.workload.clone(),
        params: m.params.clone(),
        mode: m.mode,
        pin: m.pin.clone(),
        points: m.points.clone(),
        status: m.status,
        started_at: m.started_at.clone(),
        tags: m.tags.clone(),
        kernel_release: m.env.kernel_release.clone(),
        scales_to: summary::summarize(data).scales_to,
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
