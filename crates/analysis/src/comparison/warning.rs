//! What a reader must know before trusting a comparison: [`Mismatch`] (the runs measure
//! different things: `compare` refuses unless `--force`) and [`ComparisonWarning`] (everything
//! else that weakens the answer, or is worth a note), each with its hint.

use std::fmt;

use serde::Serialize;

use super::side::Side;
use model::number_text::{comma_list, percent, plural, si};
use model::record::RunStatus;

/// Why two runs do not measure the same thing. The CLI refuses to compare unless forced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mismatch {
    /// The runs measure different workloads.
    Workload {
        /// A's workload.
        a: String,
        /// B's workload.
        b: String,
    },
    /// A workload parameter differs (or is set on one side only).
    Param {
        /// The parameter's name.
        key: String,
        /// A's value, if set.
        a: Option<String>,
        /// B's value, if set.
        b: Option<String>,
    },
    /// The runs swept different task counts.
    Points {
        /// A's task counts.
        a: Vec<u32>,
        /// B's task counts.
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
        /// The task counts affected.
        points: Vec<u32>,
        /// Pairs, when the comparison is paired.
        pairs: Option<usize>,
        /// Successful trials of A at those N.
        runs_a: usize,
        /// Successful trials of B at those N.
        runs_b: usize,
        /// The smallest p-value the test can give with these runs.
        min_achievable_p: f64,
        /// The significance level asked for.
        alpha: f64,
    },
    /// The data cannot tell a change of ±threshold from none at these points.
    RunMore {
        /// The task counts affected.
        points: Vec<u32>,
        /// Runs per side that would make a change of `threshold` detectable.
        runs_needed: usize,
        /// The smallest relative change that matters (0.02 = 2%).
        threshold: f64,
    },
    /// One side's metric varies too much between trials to show small changes.
    HighVariance {
        /// The run concerned, A or B.
        side: Side,
        /// Its run id.
        run: i64,
        /// The task count.
        n: u32,
        /// The metric compared (`throughput`, or a figure the command reported).
        metric: String,
        /// The coefficient of variation of its trials' values.
        cv: f64,
        /// Its run measures an external command (no `--duration` to lengthen).
        #[serde(skip)]
        command: bool,
    },
    /// A trial whose value stands far from the others of its point.
    Outlier {
        /// The run concerned, A or B.
        side: Side,
        /// Its run id.
        run: i64,
        /// The task count.
        n: u32,
        /// The trial's index at this N, as stored.
        trial: u32,
        /// When the trial started, RFC 3339 UTC.
        started_at: String,
        /// Its value, in `unit`.
        value: f64,
        /// The compared metric's unit (`ops/s`), empty for a figure printed without one.
        unit: String,
        /// Its modified z-score (infinite when most trials are identical).
        score: f64,
    },
    /// Trials failed at a point and are left out.
    FailedTrials {
        /// The run concerned, A or B.
        side: Side,
        /// Its run id.
        run: i64,
        /// The task count.
        n: u32,
        /// Failed trials.
        failed: usize,
        /// All trials at this N.
        total: usize,
        /// Why the first one failed.
        first_reason: String,
    },
    /// A run did not finish: only its finished trials are compared.
    NotComplete {
        /// The run concerned, A or B.
        side: Side,
        /// Its run id.
        run: i64,
        /// How it ended.
        status: RunStatus,
    },
    /// Task counts only one side measured, left out.
    OnlyInOne {
        /// The side that measured them.
        side: Side,
        /// The task counts.
        points: Vec<u32>,
    },
    /// Mode, pinning, trial length or warm-up differ: a legitimate experiment, but the
    /// reader must know.
    SetupDiffers {
        /// The setting that differs (`mode`, `pinning`, `trial duration`, `warm-up`).
        field: String,
        /// A's value.
        a: String,
        /// B's value.
        b: String,
    },
    /// A fingerprint field differs; `expected` for what is usually compared on purpose.
    Environment {
        /// The fingerprint field.
        field: String,
        /// A's value.
        a: String,
        /// B's value.
        b: String,
        /// Whether such a difference is usually the point of the comparison (a note, not a
        /// warning).
        expected: bool,
    },
    /// The runs were measured on machines of different classes (CPU model, CPUs, memory,
    /// hypervisor): a team's shared store holds many.
    MachineClass {
        /// A's class.
        a: String,
        /// B's class.
        b: String,
    },
    /// The runs measure different things and were compared anyway (`--force`).
    Forced {
        /// What differs.
        mismatch: Mismatch,
    },
    /// Two external commands: what A and B ran.
    CommandDiffers {
        /// The step (`cmd`, `step1.NAME`, …).
        key: String,
        /// A's command.
        a: String,
        /// B's command.
        b: String,
    },
    /// A and B are one run: every point is NO CHANGE or noise.
    SameRun {
        /// The run's id.
        run: i64,
    },
    /// A paired comparison left out trials whose partner failed or never ran.
    Unpartnered {
        /// The task count.
        n: u32,
        /// A's trials left out.
        a: usize,
        /// B's trials left out.
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
                "N={}: with {} the signed-rank test can never reach p < {alpha} (its smallest p \
                 is {min_achievable_p:.3}), so no change can be called; use --runs 6 or more",
                comma_list(points),
                plural(*pairs, "pair")
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
            ComparisonWarning::HighVariance {
                side,
                run,
                n,
                metric,
                cv,
                command,
            } => write!(
                f,
                "{side} (run {run}) N={n}: {metric} varies by {:.1}% (CV) between trials, which \
                 hides small changes; run `scalelab doctor`, {}",
                cv * 100.0,
                model::warnings::more_data_hint(*command)
            ),
            ComparisonWarning::Outlier {
                side,
                run,
                n,
                trial,
                started_at,
                value,
                unit,
                score,
            } => write!(
                f,
                "{side} (run {run}) N={n}: trial #{trial} (started {started_at}) is an outlier at \
                 {}{}{unit} (modified z = {}); the rank test resists it, but look for what else \
                 ran then",
                si(*value),
                if unit.is_empty() { "" } else { " " },
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
                "{side} (run {run}) N={n}: {failed} of {} failed ({first_reason}); they are \
                 left out",
                plural(*total, "trial")
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
            ComparisonWarning::MachineClass { a, b } => write!(
                f,
                "the runs cross machine classes: A on {a}, B on {b}; a difference may be the \
                 machine's, not the change's — compare runs of one class (`ls --host-class`)"
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
                    (0, b) => format!("{} of B", plural(*b, "trial")),
                    (a, 0) => format!("{} of A", plural(*a, "trial")),
                    (a, b) => format!("{} of A and {b} of B", plural(*a, "trial")),
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
