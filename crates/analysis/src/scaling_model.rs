//! The Universal Scalability Law fitted to a run (or to `N,throughput` rows from anywhere): the
//! typed result [`ScalingModel`] that `scalelab model` prints as text (the `present` crate's
//! model table) or JSON.
//!
//! The fit, its intervals, N*, the Amdahl ceiling and the prediction bands are all
//! [`stats::fit_usl`] and [`stats::UslFit::predict`]; this module picks the points (every
//! successful trial, not per-N medians, so the residuals carry the noise), reads CSV rows,
//! explains a refusal, and lists the warnings.
//!
//! Task counts past the run's online CPUs measure time-sharing, not scaling: a USL fitted
//! through them reads the time-sharing as contention and coherency. They are left out of a
//! run's fit by default, with a warning naming them; `all_n` (`model --all-n`) fits them anyway,
//! with a warning too.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use stats::{Prediction, Sample, StatsError, UslFit, UslWarning, fit_usl};

use crate::AnalysisError;
use model::csv_rows;
use model::number_text::{comma_list, plural};
use model::record::RunData;
use model::task_spec;

/// Where the fitted points came from.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelSource {
    /// A stored run's successful trials.
    Run {
        /// The run's id in the database.
        id: i64,
        /// The one-line description `scalelab show` heads the run with.
        description: String,
        /// The workload's name.
        workload: String,
        /// What one op is.
        op: String,
        /// `--variant`, when given.
        variant: Option<String>,
    },
    /// `N,throughput` rows from a file.
    Csv {
        /// The file, as given.
        path: String,
    },
}

/// The measured throughput at one N beside the model's.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MeasuredPoint {
    /// The task count.
    pub n: f64,
    /// Points (trials, or CSV rows) at this N.
    pub count: usize,
    /// Median of them.
    pub median: f64,
    /// The model's throughput at this N.
    pub modelled: f64,
    /// `(median − modelled) / modelled`.
    pub residual: f64,
}

/// Something to keep in mind when reading the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelWarning {
    /// From the fit itself (bounds, N* outside the data, poor fit, convergence).
    Fit {
        /// The fit's warning.
        warning: UslWarning,
    },
    /// A prediction far beyond the data.
    Extrapolated {
        /// The N predicted at.
        n: f64,
        /// The largest N measured.
        max_n: f64,
    },
    /// Task counts past the run's online CPUs: left out of the fit, or fitted on request.
    Oversubscribed {
        /// The task counts past the CPUs.
        n: Vec<u32>,
        /// The run's online CPUs.
        cpus: u32,
        /// Whether they were fitted anyway (`--all-n`).
        included: bool,
    },
    /// Trials left out of the fit.
    Dropped {
        /// How many trials were left out.
        trials: usize,
        /// Why they were left out (no ops in the window, …).
        reason: String,
    },
}

impl fmt::Display for ModelWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelWarning::Fit { warning } => warning.fmt(f),
            ModelWarning::Extrapolated { n, max_n } => write!(
                f,
                "the prediction at N={n} is beyond 2× the largest measured N ({max_n}): an \
                 extrapolation, which assumes nothing new (another socket, SMT siblings, memory \
                 bandwidth) comes into play; its band is narrower than the truth"
            ),
            ModelWarning::Oversubscribed {
                n,
                cpus,
                included: false,
            } => write!(
                f,
                "N={} left out of the fit: past the run's {}, tasks time-share them, which \
                 measures time-sharing, not scaling, and would mislead the fit (--all-n fits \
                 them anyway)",
                comma_list(n),
                plural(*cpus as usize, "online CPU")
            ),
            ModelWarning::Oversubscribed {
                n,
                cpus,
                included: true,
            } => write!(
                f,
                "N={} fitted (--all-n) although past the run's {}: tasks there \
                 time-share the CPUs, and σ and κ read that time-sharing as contention and \
                 coherency",
                comma_list(n),
                plural(*cpus as usize, "online CPU")
            ),
            ModelWarning::Dropped { trials, reason } => {
                write!(
                    f,
                    "{} left out of the fit: {reason}",
                    plural(*trials, "trial")
                )
            }
        }
    }
}

/// Everything `model` shows.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingModel {
    /// Where the fitted points came from.
    pub source: ModelSource,
    /// `X(N) = λN / (1 + σ(N−1) + κN(N−1))`.
    pub model: &'static str,
    /// The throughput's unit (`ops/s`).
    pub unit: &'static str,
    /// The fitted parameters, their intervals, N* and the Amdahl ceiling.
    pub fit: UslFit,
    /// Each measured N: the median beside the model.
    pub measured: Vec<MeasuredPoint>,
    /// The model at the N asked for (twice the largest N by default), with its band.
    pub predictions: Vec<Prediction>,
    /// What to keep in mind when reading the model.
    pub warnings: Vec<ModelWarning>,
}

/// The fitted points of a run: `(N, ops/s)` of every successful trial with a positive
/// throughput, and how many successful trials had none.
pub(crate) fn run_points(data: &RunData) -> (Vec<(f64, f64)>, usize) {
    let mut zero = 0;
    let mut points = Vec::new();
    for t in &data.trials {
        if let Some(m) = t.outcome.measurement() {
            let x = m.ops_per_sec();
            if x.is_finite() && x > 0.0 {
                points.push((f64::from(t.n), x));
            } else {
                zero += 1;
            }
        }
    }
    (points, zero)
}

/// Fits the USL to a run's trials and predicts at `predict` (default: twice the largest N).
/// Task counts past the run's online CPUs are left out unless `all_n`; either way a warning
/// names them.
pub fn fit_run(
    data: &RunData,
    predict: &[f64],
    all_n: bool,
) -> Result<ScalingModel, AnalysisError> {
    let (mut points, zero) = run_points(data);
    let m = &data.meta;
    let cpus = u32::try_from(m.env.online_cpus).ok().filter(|&c| c > 0);
    let mut past: Vec<u32> = match cpus {
        Some(cpus) => points
            .iter()
            .map(|&(n, _)| n as u32)
            .filter(|&n| n > cpus)
            .collect(),
        None => Vec::new(),
    };
    past.sort_unstable();
    past.dedup();
    let oversubscribed =
        cpus.filter(|_| !past.is_empty())
            .map(|cpus| ModelWarning::Oversubscribed {
                n: past.clone(),
                cpus,
                included: all_n,
            });
    if !all_n {
        if let Some(cpus) = cpus {
            points.retain(|&(n, _)| n <= f64::from(cpus));
        }
    }
    let source = ModelSource::Run {
        id: m.id,
        description: m.description(),
        workload: m.workload.clone(),
        op: m.op_unit.clone(),
        variant: m.variant.clone(),
    };
    let mut model = fit(source, &points, predict).map_err(|e| {
        let mut err = refusal(e, &points, cpus);
        if let (AnalysisError::Input(msg), Some(cpus), false) = (&mut err, cpus, all_n) {
            if !past.is_empty() {
                msg.push_str(&format!(
                    "; N={} are past the run's {} and were left out (--all-n fits them, \
                     though they measure time-sharing, not scaling)",
                    comma_list(&past),
                    plural(cpus as usize, "online CPU")
                ));
            }
        }
        err
    })?;
    model.warnings.extend(oversubscribed);
    if zero > 0 {
        model.warnings.push(ModelWarning::Dropped {
            trials: zero,
            reason: "no ops in the window (a throughput of 0 has no place in the model)".into(),
        });
    }
    Ok(model)
}

/// Fits the USL to `N,throughput` rows read by [`parse_csv`] from `path`.
pub fn fit_csv(
    path: &str,
    points: &[(f64, f64)],
    predict: &[f64],
) -> Result<ScalingModel, AnalysisError> {
    let source = ModelSource::Csv {
        path: path.to_string(),
    };
    fit(source, points, predict).map_err(|e| refusal(e, points, None))
}

fn fit(
    source: ModelSource,
    points: &[(f64, f64)],
    predict: &[f64],
) -> Result<ScalingModel, StatsError> {
    let fit = fit_usl(points)?;
    let mut by_n: BTreeMap<u64, (f64, Vec<f64>)> = BTreeMap::new();
    for &(n, x) in points {
        by_n.entry(n.to_bits()).or_insert((n, Vec::new())).1.push(x);
    }
    let mut measured: Vec<MeasuredPoint> = by_n
        .into_values()
        .filter_map(|(n, xs)| {
            let count = xs.len();
            let median = Sample::new(xs).ok()?.median();
            let modelled = fit.predict(n).x.point;
            Some(MeasuredPoint {
                n,
                count,
                median,
                modelled,
                residual: (median - modelled) / modelled,
            })
        })
        .collect();
    measured.sort_by(|a, b| a.n.total_cmp(&b.n));
    let default = [2.0 * fit.max_n];
    let at: &[f64] = if predict.is_empty() {
        &default
    } else {
        predict
    };
    let predictions: Vec<Prediction> = at.iter().map(|&n| fit.predict(n)).collect();
    let mut warnings: Vec<ModelWarning> = fit
        .warnings
        .iter()
        .cloned()
        .map(|warning| ModelWarning::Fit { warning })
        .collect();
    warnings.extend(predictions.iter().filter(|p| p.extrapolated).map(|p| {
        ModelWarning::Extrapolated {
            n: p.n,
            max_n: fit.max_n,
        }
    }));
    Ok(ScalingModel {
        source,
        model: "X(N) = λN / (1 + σ(N−1) + κN(N−1))",
        unit: "ops/s",
        fit,
        measured,
        predictions,
        warnings,
    })
}

/// Turns a refused fit into an error that explains itself; with too few task counts, says why
/// four are needed and, for a run, what to do on a machine this small.
fn refusal(e: StatsError, points: &[(f64, f64)], cpus: Option<u32>) -> AnalysisError {
    let StatsError::TooFewTaskCounts { got, needed } = e else {
        return AnalysisError::Input(format!("cannot fit the USL: {e}"));
    };
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    let shown: Vec<String> = ns.iter().map(|n| n.to_string()).collect();
    let mut msg = format!(
        "cannot fit the USL: it has three parameters (σ, κ, λ), so it needs at least {needed} \
         distinct task counts to say anything, and these data have {got} (N={}); with fewer, a \
         curve passes through every point and the parameters mean nothing",
        shown.join(",")
    );
    match cpus {
        Some(cpus) if task_spec::default_points(cpus).len() < needed => msg.push_str(&format!(
            " — this run's machine has {cpus} online CPUs, so the default sweep (N={}) is too \
             short; sweep N=1..{} on a machine with that many CPUs and model that run (`scalelab \
             export` there, `scalelab import` here), or pass measurements with --csv. Task counts \
             past the CPUs (--tasks 1..{}) measure time-sharing, not scaling, and would mislead \
             the fit",
            task_spec::default_points(cpus)
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            needed.max(8),
            needed
        )),
        Some(_) => msg.push_str(" — sweep more task counts, e.g. --tasks 1,2,4,8 (or --tasks all)"),
        None => msg.push_str(" — add rows for more task counts"),
    }
    AnalysisError::Input(msg)
}

/// Parses `N,throughput` rows by the rules of `csv_rows` (commas, tabs, semicolons or
/// spaces between two numbers; an optional header; `#` comments and blank lines skipped). A bad
/// row is an error naming its line.
pub fn parse_csv(text: &str) -> Result<Vec<(f64, f64)>, AnalysisError> {
    const FORMAT: &str = "each row is `N,throughput` (e.g. `4,3548.68`)";
    let mut points = Vec::new();
    for row in csv_rows::rows(text) {
        if row.fields.len() != 2 {
            return Err(row
                .error(format!("{} fields, expected 2", row.fields.len()), FORMAT)
                .into());
        }
        let n = row.number(0, "N", FORMAT)?;
        let x = row.number(1, "throughput", FORMAT)?;
        if !(n.is_finite() && n >= 1.0) {
            return Err(row
                .error(format!("N = {n}: task counts are at least 1"), FORMAT)
                .into());
        }
        if !(x.is_finite() && x > 0.0) {
            return Err(row
                .error(
                    format!("throughput = {x}: it must be greater than 0"),
                    FORMAT,
                )
                .into());
        }
        points.push((n, x));
    }
    if points.is_empty() {
        return Err(AnalysisError::Input(
            "no data rows: expected `N,throughput` lines (e.g. `1,955.16`)".into(),
        ));
    }
    Ok(points)
}

#[cfg(test)]
mod tests;
