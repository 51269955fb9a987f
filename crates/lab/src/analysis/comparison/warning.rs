//! What a reader must know before trusting a comparison: [`Mismatch`] (the runs measure
//! different things: `compare` refuses unless `--force`) and [`ComparisonWarning`] (everything
//! else that weakens the answer, or is worth a note), each with its hint.

use std::fmt;

use serde::Serialize;

use super::side::Side;
use crate::number_text::{comma_list, percent, si};
use crate::record::RunStatus;

/// Why two runs do not measure the same thing. The CLI refuses to compare unless forced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mismatch {
    Workload {
        a: String,
        b: String,
    },
    Param {
        key: String,
        a: Option<String>,
        b: Option<String>,
    },
    Points {
        a: Vec<u32>,
        b: Vec<u32>,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".into());
        match self {
            Mismatch::Workload { a, b } => write!(f, "different workloads: A is `{a}`, B is `{b}`"),
            Mismatch::Param { key, a, b } => write!(
                f,
                "parameter `{key}` differs: A has `{}`, B has `{}`",
                shown(a),
                shown(b)
            ),
            Mismatch::Points { a, b } => write!(
                f,
                "different task counts: A swept N={}, B swept N={} (only N in both would be compared)",
                comma_list(a),
                comma_list(b)
            ),
        }
    }
}

/// Something that weakens the comparison, each with what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ComparisonWarning {
    /// The exact test cannot reach alpha with these runs, whatever the data.
    TooFewRuns {
        points: Vec<u32>,
        /// Pairs, when the comparison is paired.
        pairs: Option<usize>,
        runs_a: usize,
        runs_b: usize,
        min_achievable_p: f64,
        alpha: f64,
    },
    /// The data cannot tell a change of ±threshold from none at these points.
    RunMore {
        points: Vec<u32>,
        runs_needed: usize,
        threshold: f64,
    },
    HighVariance {
        side: Side,
        run: i64,
        n: u32,
        cv: f64,
    },
    Outlier {
        side: Side,
        run: i64,
        n: u32,
        trial: u32,
        started_at: String,
        value: f64,
        score: f64,
    },
    FailedTrials {
        side: Side,
        run: i64,
        n: u32,
        failed: usize,
        total: usize,
        first_reason: String,
    },
    NotComplete {
        side: Side,
        run: i64,
        status: RunStatus,
    },
    OnlyInOne {
        side: Side,
        points: Vec<u32>,
    },
    /// Mode, pinning, trial length or warm-up differ: a legitimate experiment, but the
    /// reader must know.
    SetupDiffers {
        field: String,
        a: String,
        b: String,
    },
    /// A fingerprint field differs; `expected` for what is usually compared on purpose.
    Environment {
        field: String,
        a: String,
        b: String,
        expected: bool,
    },
    /// The runs measure different things and were compared anyway (`--force`).
    Forced {
        mismatch: Mismatch,
    },
    /// Two external commands: what A and B ran.
    CommandDiffers {
        key: String,
        a: String,
        b: String,
    },
    SameRun {
        run: i64,
    },
    /// A paired comparison left out trials whose partner failed or never ran.
    Unpartnered {
        n: u32,
        a: usize,
        b: usize,
    },
}

impl ComparisonWarning {
    /// A note is information, not a reason for doubt.
    pub fn is_note(&self) -> bool {
        matches!(
            self,
            ComparisonWarning::Environment { expected: true, .. }
                | ComparisonWarning::Forced { .. }
                | ComparisonWarning::CommandDiffers { .. }
        )
    }
}

impl fmt::Display for ComparisonWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComparisonWarning::TooFewRuns {
                points,
                pairs: Some(pairs),
                min_achievable_p,
                alpha,
                ..
            } => write!(
                f,
                "N={}: with {pairs} pairs the signed-rank test can never reach p < {alpha} (its \
                 smallest p is {min_achievable_p:.3}), so no change can be called; use --runs 6 \
                 or more",
                comma_list(points)
            ),
            ComparisonWarning::TooFewRuns {
                points,
                runs_a,
                runs_b,
                min_achievable_p,
                alpha,
                ..
            } => write!(
                f,
                "N={}: with {runs_a} vs {runs_b} runs the U test can never reach p < {alpha} (its \
                 smallest p is {min_achievable_p:.3}), so no change can be called; use --runs 5 \
                 or more per side",
                comma_list(points)
            ),
            ComparisonWarning::RunMore {
                points,
                runs_needed,
                threshold,
            } => write!(
                f,
                "N={}: the data cannot tell a change of ±{} from none; about {runs_needed} runs \
                 per side would (--runs {runs_needed})",
                comma_list(points),
                percent(*threshold)
            ),
            ComparisonWarning::HighVariance { side, run, n, cv } => write!(
                f,
                "{side} (run {run}) N={n}: throughput varies by {:.1}% (CV) between trials, which \
                 hides small changes; run `scalelab doctor`, lengthen --duration or add --runs",
                cv * 100.0
            ),
            ComparisonWarning::Outlier {
                side,
                run,
                n,
                trial,
                started_at,
                value,
                score,
            } => write!(
                f,
                "{side} (run {run}) N={n}: trial #{trial} (started {started_at}) is an outlier at \
                 {} ops/s (modified z = {}); the rank test resists it, but look for what else ran \
                 then",
                si(*value),
                z_score(*score)
            ),
            ComparisonWarning::FailedTrials {
                side,
                run,
                n,
                failed,
                total,
                first_reason,
            } => write!(
                f,
                "{side} (run {run}) N={n}: {failed} of {total} trials failed ({first_reason}); \
                 they are left out"
            ),
            ComparisonWarning::NotComplete { side, run, status } => write!(
                f,
                "{side} (run {run}) is {status}: it compares only the trials it finished"
            ),
            ComparisonWarning::OnlyInOne { side, points } => write!(
                f,
                "N={} measured only by {side}: not compared",
                comma_list(points)
            ),
            ComparisonWarning::SetupDiffers { field, a, b } => write!(
                f,
                "{field} differs: A {a}, B {b}; the comparison includes that difference"
            ),
            ComparisonWarning::Environment {
                field,
                a,
                b,
                expected: true,
            } => write!(f, "{field}: A `{a}`, B `{b}`"),
            ComparisonWarning::Environment { field, a, b, .. } => write!(
                f,
                "environment differs, {field}: A `{a}`, B `{b}`; the comparison includes that \
                 difference (see `scalelab doctor`)"
            ),
            ComparisonWarning::Forced { mismatch } => write!(f, "compared anyway: {mismatch}"),
            ComparisonWarning::CommandDiffers { key, a, b } => {
                write!(f, "{key}: A ran `{a}`, B ran `{b}`")
            }
            ComparisonWarning::Unpartnered { n, a, b } => write!(
                f,
                "N={n}: {} left out of the paired test because the other trial of their pair \
                 failed or never ran",
                match (a, b) {
                    (0, b) => format!("{b} trial(s) of B"),
                    (a, 0) => format!("{a} trial(s) of A"),
                    (a, b) => format!("{a} trial(s) of A and {b} of B"),
                }
            ),
            ComparisonWarning::SameRun { run } => {
                write!(
                    f,
                    "A and B are the same run ({run}): every point is NO CHANGE or noise"
                )
            }
        }
    }
}

fn z_score(score: f64) -> String {
    if score.is_finite() {
        format!("{score:+.1}")
    } else if score > 0.0 {
        "+∞, most trials are identical".into()
    } else {
        "-∞, most trials are identical".into()
    }
}
