//! What each trial contributes to a comparison ([`TrialMetric`]) and one side's trials at one
//! N ([`trials_at`]): the values the comparison and the midpoint test both read.

use serde::Serialize;
use stats::Direction;

use crate::AnalysisError;
use model::record::{RunData, RunMeta, TrialOutcome};

/// The value each trial contributes to a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialMetric {
    /// Ops per second of the trial's window (for a command, of its wall time).
    #[default]
    Throughput,
    /// Ops per CPU-second: per second of the trial's user + system time (for a command, its
    /// whole process tree's). Waiting for a CPU another process holds does not count, so
    /// time-sharing with other work on a busy machine does not move it; waiting for locks,
    /// I/O or sleep does not count either, so a slowdown made of waiting does not show.
    CpuThroughput,
    /// Peak memory: the largest resident set one process of the trial reached, in KiB
    /// (`Usage::max_rss_kib`); lower is better.
    MaxRss,
    /// A figure the command printed itself (`run --metric NAME=…`), by name: its value as
    /// printed (a latency in ms, not its reciprocal), judged in the direction its `--metric`
    /// gave.
    Reported(String),
}

impl TrialMetric {
    /// The metric's name: `throughput`, `ops_per_cpu_sec`, or the reported figure's.
    pub fn name(&self) -> &str {
        match self {
            TrialMetric::Throughput => "throughput",
            TrialMetric::CpuThroughput => "ops_per_cpu_sec",
            TrialMetric::MaxRss => "max_rss",
            TrialMetric::Reported(name) => name,
        }
    }

    /// What `--metric NAME` compares between runs `a` and `b`: `throughput`, `ops_per_cpu_sec`,
    /// `max_rss`, or a figure both runs' command printed (`NAME` or `metric.NAME`); the error
    /// names the run that lacks it and lists the figures it has.
    pub fn resolve(name: &str, a: &RunMeta, b: &RunMeta) -> Result<TrialMetric, AnalysisError> {
        match name {
            "throughput" => return Ok(TrialMetric::Throughput),
            "ops_per_cpu_sec" => return Ok(TrialMetric::CpuThroughput),
            "max_rss" | "max_rss_kib" => return Ok(TrialMetric::MaxRss),
            _ => {}
        }
        let name = name
            .strip_prefix(model::record::METRIC_PARAM)
            .unwrap_or(name);
        for (side, run) in [("A", a), ("B", b)] {
            let have: Vec<String> = run.metrics().into_iter().map(|m| m.name).collect();
            if !have.iter().any(|m| m == name) {
                let offer = if have.is_empty() {
                    "it printed none (`run --cmd … --metric NAME=REGEX` reads one); compare \
                     throughput, ops_per_cpu_sec or max_rss"
                        .to_string()
                } else {
                    format!(
                        "its figures: {} (or throughput, ops_per_cpu_sec, max_rss)",
                        have.join(", ")
                    )
                };
                return Err(AnalysisError::Input(format!(
                    "run {side} ({}) has no figure `{name}`; {offer}",
                    run.id
                )));
            }
        }
        Ok(TrialMetric::Reported(name.to_string()))
    }

    /// The unit, and which way is better: a reported figure's as run A's `--metric` gave them.
    pub(super) fn unit_and_direction(&self, a: &RunMeta) -> (String, Option<Direction>) {
        match self {
            TrialMetric::Throughput => ("ops/s".into(), None),
            TrialMetric::CpuThroughput => ("ops/CPU-s".into(), None),
            TrialMetric::MaxRss => ("KiB".into(), Some(Direction::LowerIsBetter)),
            TrialMetric::Reported(name) => {
                let spec = a.metrics().into_iter().find(|m| &m.name == name);
                let unit = spec.as_ref().map(|m| m.unit.clone()).unwrap_or_default();
                let direction = spec.map(|m| match m.direction {
                    model::record::Direction::Higher => Direction::HigherIsBetter,
                    model::record::Direction::Lower => Direction::LowerIsBetter,
                });
                (unit, direction)
            }
        }
    }

    pub(super) fn per_trial(&self) -> String {
        match self {
            TrialMetric::Throughput => {
                "ops / measurement window of each trial; a point's value is the median".into()
            }
            TrialMetric::CpuThroughput => {
                "ops / (user + system CPU time) of each trial; a point's value is the median".into()
            }
            TrialMetric::MaxRss => "the largest resident set one process of each trial \
                reached (KiB); a point's value is the median"
                .into(),
            TrialMetric::Reported(name) => format!(
                "{name} as the command printed it in each trial; a point's value is the median"
            ),
        }
    }

    /// The trial's value; not finite when it has none (no window, no CPU time recorded, no
    /// such reported figure).
    pub(crate) fn of(&self, m: &model::record::TrialMeasurement) -> f64 {
        match self {
            TrialMetric::Throughput => m.ops_per_sec(),
            TrialMetric::CpuThroughput => {
                let cpu = (m.usage.user.0 + m.usage.sys.0) as f64 / 1e9;
                if cpu > 0.0 {
                    m.ops() as f64 / cpu
                } else {
                    f64::NAN
                }
            }
            TrialMetric::MaxRss => m.usage.max_rss_kib.map_or(f64::NAN, |kib| kib as f64),
            TrialMetric::Reported(name) => m
                .reported
                .as_ref()
                .and_then(|r| r.values.get(name).copied())
                .unwrap_or(f64::NAN),
        }
    }
}

impl TrialMetric {
    /// Why `data` cannot be compared on this metric, when none of its trials has a value for
    /// it (peak memory in a run recorded before it was kept, or every step profiled).
    pub fn missing_in(&self, data: &RunData) -> Option<String> {
        if *self != TrialMetric::MaxRss {
            return None;
        }
        let measured = data.trials.iter().any(|t| {
            t.outcome
                .measurement()
                .is_some_and(|m| m.usage.max_rss_kib.is_some())
        });
        (!measured).then(|| {
            format!(
                "run {} has no peak memory in any trial (runs recorded before scalelab kept it, \
                 and command trials perf record ran, have none); run it again to compare max_rss",
                data.meta.id
            )
        })
    }
}

/// One side's successful trials at one N: throughput, trial index and start time each.
pub(super) struct Trials {
    pub(super) values: Vec<f64>,
    pub(super) index: Vec<u32>,
    pub(super) started_at: Vec<String>,
    pub(super) failed: usize,
    pub(super) first_failure: Option<String>,
}

pub(super) fn trials_at(data: &RunData, n: u32, metric: &TrialMetric) -> Trials {
    let mut t = Trials {
        values: Vec::new(),
        index: Vec::new(),
        started_at: Vec::new(),
        failed: 0,
        first_failure: None,
    };
    for trial in data.trials.iter().filter(|t| t.n == n) {
        match &trial.outcome {
            TrialOutcome::Ok(m) if metric.of(m).is_finite() => {
                t.values.push(metric.of(m));
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
