//! History: one metric at one N across every stored run of a workload and its parameters, in
//! time order, with change points (E-divisive / Apache Otava-style split-and-merge, from
//! `stats::change_points`) and whether the newest segment is a regression.
//!
//! Pure: takes runs already loaded, returns a serialisable [`History`].

use std::collections::BTreeMap;

use serde::Serialize;
use stats::{ChangePoint, ChangePointOptions};

use crate::AnalysisError;
use crate::summary::{PointSummary, summarize};
use model::csv_rows;
use model::limits::{MAX_LABEL_CHARS, check_length};
use model::record::RunData;

/// A metric a series can follow, and which way is better.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// The median throughput, ops/s (higher is better).
    Throughput,
    /// Ops per CPU-second, user + sys (higher is better).
    OpsPerCpuSec,
    /// Wall nanoseconds per op seen by one task (lower is better).
    NsPerOp,
    /// Throughput over the throughput at N = 1 (higher is better).
    Speedup,
    /// Speedup divided by N (higher is better).
    Efficiency,
    /// Hardware cycles per op (lower is better).
    CyclesPerOp,
    /// Hardware instructions per op (lower is better).
    InstructionsPerOp,
    /// Last-level cache misses per op (lower is better).
    CacheMissesPerOp,
    /// CPU use, (user + sys) / wall × 100 (lower is better).
    CpuPct,
    /// A figure the command printed itself (`run --metric NAME=…`): its median over a run's
    /// trials, as printed, better in the direction its `--metric` gave.
    Reported {
        /// The figure's name.
        name: String,
        /// Its `--metric` said `higher` (the default) rather than `lower`.
        higher_is_better: bool,
    },
}

/// The JSON spells a metric by its name, as `--metric` takes it.
impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Metric {
    pub(crate) const ALL: [Metric; 9] = [
        Metric::Throughput,
        Metric::OpsPerCpuSec,
        Metric::NsPerOp,
        Metric::Speedup,
        Metric::Efficiency,
        Metric::CyclesPerOp,
        Metric::InstructionsPerOp,
        Metric::CacheMissesPerOp,
        Metric::CpuPct,
    ];

    /// The metric's name, as `--metric` takes it and the JSON spells it.
    pub fn name(&self) -> &str {
        match self {
            Metric::Throughput => "throughput",
            Metric::OpsPerCpuSec => "ops_per_cpu_sec",
            Metric::NsPerOp => "ns_per_op",
            Metric::Speedup => "speedup",
            Metric::Efficiency => "efficiency",
            Metric::CyclesPerOp => "cycles_per_op",
            Metric::InstructionsPerOp => "instructions_per_op",
            Metric::CacheMissesPerOp => "cache_misses_per_op",
            Metric::CpuPct => "cpu_pct",
            Metric::Reported { name, .. } => name,
        }
    }

    /// The built-in metric called `text` (see [`Metric::name`]); the error lists the valid
    /// names. A figure a command printed is found with [`Metric::resolve`].
    pub fn parse(text: &str) -> Result<Metric, AnalysisError> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| {
                AnalysisError::Input(format!(
                    "`{text}` is not a metric; use one of: {}",
                    builtin_names()
                ))
            })
    }

    /// The metric called `text` for a series of `runs`: a built-in one, or a figure their
    /// command printed (`run --metric NAME=…`; also written `metric.NAME`, which a built-in's
    /// name never shadows), its direction from the newest run that has it. The error lists
    /// what the runs offer.
    pub fn resolve<R: std::borrow::Borrow<RunData>>(
        text: &str,
        runs: &[R],
    ) -> Result<Metric, AnalysisError> {
        let reported = text.strip_prefix(model::record::METRIC_PARAM);
        if reported.is_none()
            && let Ok(m) = Metric::parse(text)
        {
            return Ok(m);
        }
        let name = reported.unwrap_or(text);
        let spec = runs.iter().rev().find_map(|r| {
            r.borrow()
                .meta
                .metrics()
                .into_iter()
                .find(|m| m.name == name)
        });
        if let Some(spec) = spec {
            return Ok(Metric::Reported {
                name: spec.name,
                higher_is_better: spec.direction == model::record::Direction::Higher,
            });
        }
        let mut printed: Vec<String> = runs
            .iter()
            .flat_map(|r| r.borrow().meta.metrics().into_iter().map(|m| m.name))
            .collect();
        printed.sort();
        printed.dedup();
        let figures = if printed.is_empty() {
            String::new()
        } else {
            format!(
                "; or a figure these runs' command printed: {}",
                printed.join(", ")
            )
        };
        Err(AnalysisError::Input(format!(
            "`{text}` is not a metric of this series; use one of: {}{figures}",
            builtin_names()
        )))
    }

    pub(crate) fn higher_is_better(&self) -> bool {
        match self {
            Metric::Reported {
                higher_is_better, ..
            } => *higher_is_better,
            m => matches!(
                m,
                Metric::Throughput | Metric::OpsPerCpuSec | Metric::Speedup | Metric::Efficiency
            ),
        }
    }

    fn value(&self, p: &PointSummary) -> Option<f64> {
        match self {
            Metric::Throughput => p.throughput.map(|e| e.point),
            Metric::OpsPerCpuSec => p.ops_per_cpu_sec,
            Metric::NsPerOp => p.ns_per_op_per_task,
            Metric::Speedup => p.speedup,
            Metric::Efficiency => p.efficiency,
            Metric::CyclesPerOp => p.cycles_per_op,
            Metric::InstructionsPerOp => p.instructions_per_op,
            Metric::CacheMissesPerOp => p.cache_misses_per_op,
            Metric::CpuPct => p.cpu_pct,
            Metric::Reported { name, .. } => p.reported.get(name).map(|e| e.point),
        }
    }
}

/// The built-in metrics' names, comma-separated, for an error.
fn builtin_names() -> String {
    Metric::ALL.map(|m| m.name().to_string()).join(", ")
}

/// One run's value in the series.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryPoint {
    /// The run's id in the database (the row number for `history --csv`).
    pub run: i64,
    /// When the run started, RFC 3339 UTC (empty for `history --csv`).
    pub started_at: String,
    /// The run's `--variant`, when given.
    pub variant: Option<String>,
    /// What tells runs apart: kernel release and tags (the first column of `history --csv`).
    pub label: String,
    /// The metric's value at this N.
    pub value: f64,
}

/// A change point, located at the first run of the new segment.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryChange {
    /// The first run of the new segment.
    pub run: i64,
    /// Its position in the series, from 0.
    pub index: usize,
    /// Relative change of the segment means, after vs before; `None` from a mean of 0.
    pub relative: Option<f64>,
    /// The t-test p-value between the segments, adjusted for the positions tried.
    pub p_value: f64,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// Standard deviation of the segment before.
    pub sd_before: f64,
    /// Mean of the segment from this run on.
    pub mean_after: f64,
    /// Standard deviation of the segment from this run on.
    pub sd_after: f64,
    /// Whether the metric got worse here.
    pub regression: bool,
}

/// One metric at one N across the stored runs, oldest first, with its change points.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// The workload followed (`csv` for `history --csv`).
    pub workload: String,
    /// The parameters of the runs followed — for a command, its command line (`cmd`) and
    /// steps: the series' key. Empty for `history --csv`.
    pub params: BTreeMap<String, String>,
    /// The task count N the metric is read at.
    pub at: u32,
    /// The metric followed.
    pub metric: Metric,
    /// Which way is better for `metric`.
    pub higher_is_better: bool,
    /// One value per run that measured N successfully (per row for `history --csv`), oldest
    /// first.
    pub points: Vec<HistoryPoint>,
    /// The change points, in series order.
    pub changes: Vec<HistoryChange>,
    /// True when the last change point exists and made the metric worse: the newest segment regressed.
    pub newest_regressed: bool,
    /// False when the series is too short for any change point to be found
    /// ([`ChangePointOptions::fewest_values`]): it can be neither called regressed nor
    /// cleared, and `history --check` says it cannot judge.
    pub judged: bool,
    /// How strict the change-point detection was.
    pub options: ChangePointOptions,
}

/// Builds the series of `metric` at `at` tasks over `runs` (in the order given, oldest first;
/// one series, as [`crate::series::series_runs`] picks them). Runs without a
/// successful `at` point are skipped. `runs` may be borrowed or shared (`&[Arc<RunData>]`).
pub fn build<R: std::borrow::Borrow<RunData>>(
    workload: &str,
    runs: &[R],
    at: u32,
    metric: Metric,
    opts: &ChangePointOptions,
) -> History {
    let mut points = Vec::new();
    for run in runs {
        let run: &RunData = run.borrow();
        let summary = summarize(run);
        let Some(value) = summary
            .points
            .iter()
            .find(|p| p.n == at)
            .and_then(|p| metric.value(p))
        else {
            continue;
        };
        points.push(HistoryPoint {
            run: run.meta.id,
            started_at: run.meta.started_at.clone(),
            variant: run.meta.variant.clone(),
            label: label(run),
            value,
        });
    }
    let mut history = from_points(workload, at, metric, points, opts);
    if let Some(first) = runs.first() {
        history.params = first.borrow().meta.params.clone();
    }
    history
}

/// Detects change points in an already-built series (also used for `history --csv`).
pub fn from_points(
    workload: &str,
    at: u32,
    metric: Metric,
    points: Vec<HistoryPoint>,
    opts: &ChangePointOptions,
) -> History {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let higher = metric.higher_is_better();
    let changes: Vec<HistoryChange> = stats::change_points(&values, opts)
        .into_iter()
        .map(|c: ChangePoint| HistoryChange {
            run: points[c.index].run,
            index: c.index,
            relative: c.relative,
            p_value: c.p_value,
            mean_before: c.mean_before,
            sd_before: c.sd_before,
            mean_after: c.mean_after,
            sd_after: c.sd_after,
            regression: if higher {
                c.mean_after < c.mean_before
            } else {
                c.mean_after > c.mean_before
            },
        })
        .collect();
    let newest_regressed = changes.last().is_some_and(|c| c.regression);
    let judged = points.len() >= opts.fewest_values();
    History {
        workload: workload.to_string(),
        params: BTreeMap::new(),
        at,
        metric,
        higher_is_better: higher,
        points,
        changes,
        newest_regressed,
        judged,
        options: *opts,
    }
}

/// The task counts any of `runs` measured, ascending.
pub fn measured_points<R: std::borrow::Borrow<RunData>>(runs: &[R]) -> Vec<u32> {
    let mut ns: Vec<u32> = runs
        .iter()
        .flat_map(|r| r.borrow().meta.points.iter().copied())
        .collect();
    ns.sort_unstable();
    ns.dedup();
    ns
}

/// `Err` naming the task counts that were measured when none of `runs` measured `at` (a
/// series at an N that was never measured is empty, and would pass any check).
pub fn check_measured<R: std::borrow::Borrow<RunData>>(
    workload: &str,
    runs: &[R],
    at: u32,
) -> Result<(), AnalysisError> {
    let measured = measured_points(runs);
    if measured.contains(&at) {
        return Ok(());
    }
    let list = measured
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    Err(AnalysisError::Input(format!(
        "no stored run of `{workload}` measured N={at}; these runs measured N = {list}"
    )))
}

/// Reads a series from `history --csv` text by the rules of `csv_rows` (those of
/// `model --csv`): one value per row, or `label,value`; an optional header; `#` comments and
/// blank lines anywhere. A bad row is an error naming its line.
pub fn parse_csv(text: &str) -> Result<Vec<HistoryPoint>, AnalysisError> {
    const FORMAT: &str = "each row is `value` or `label,value` (e.g. `build-20,1043.5`)";
    let mut points = Vec::new();
    for row in csv_rows::rows(text) {
        let (label, index) = match row.fields.len() {
            1 => (String::new(), 0),
            2 => (row.fields[0].to_string(), 1),
            k => {
                return Err(row
                    .error(format!("{k} fields, expected 1 or 2"), FORMAT)
                    .into());
            }
        };
        check_length(&label, MAX_LABEL_CHARS)
            .map_err(|why| row.error(format!("the label has {why}"), FORMAT))?;
        let value = row.number(index, "value", FORMAT)?;
        if !value.is_finite() {
            return Err(row
                .error(format!("value = {value}: it must be finite"), FORMAT)
                .into());
        }
        points.push(HistoryPoint {
            run: points.len() as i64 + 1,
            started_at: String::new(),
            variant: None,
            label,
            value,
        });
    }
    if points.is_empty() {
        return Err(AnalysisError::Input(
            "no data rows: expected one value per line, or `label,value` lines".into(),
        ));
    }
    Ok(points)
}

/// What distinguishes runs in a series: kernel release and user tags.
fn label(run: &RunData) -> String {
    let mut parts = vec![run.meta.env.kernel_release.clone()];
    parts.extend(run.meta.tags.iter().map(|(k, v)| format!("{k}={v}")));
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::{
        Mode, Nanos, Pin, RunMeta, RunStatus, TrialMeasurement, TrialOutcome, TrialRecord,
    };

    fn run(id: i64, rate: f64) -> RunData {
        let trials = (0..3)
            .map(|k| TrialRecord {
                n: 2,
                index: k,
                started_at: String::new(),
                outcome: TrialOutcome::Ok(TrialMeasurement {
                    window: Nanos(1_000_000_000),
                    task_ops: vec![(rate / 2.0) as u64; 2],
                    ..TrialMeasurement::default()
                }),
            })
            .collect();
        RunData {
            meta: RunMeta {
                id,
                origin_id: None,
                uuid: uuid::Uuid::nil(),
                name: None,
                workload: "spin".into(),
                params: Default::default(),
                op_unit: String::new(),
                mode: Mode::Threads,
                pin: Pin::Cores,
                membind: model::record::Membind::FirstTouch,
                points: vec![2],
                runs: 3,
                duration: Nanos(1_000_000_000),
                warmup: Nanos(0),
                variant: None,
                tags: Default::default(),
                started_at: format!("run {id}"),
                finished_at: None,
                status: RunStatus::Complete,
                env: Default::default(),
                warnings: vec![],
                command_line: String::new(),
            },
            trials,
        }
    }

    /// Deterministic ±1% noise.
    fn noisy(i: usize) -> f64 {
        1.0 + 0.01 * (((i * 7919) % 13) as f64 / 6.0 - 1.0)
    }

    #[test]
    fn a_five_percent_drop_is_a_regression_at_the_right_run() {
        let runs: Vec<RunData> = (0..30)
            .map(|i| {
                run(
                    i as i64 + 1,
                    1e6 * noisy(i) * if i >= 20 { 0.95 } else { 1.0 },
                )
            })
            .collect();
        let h = build(
            "spin",
            &runs,
            2,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        assert_eq!(h.points.len(), 30);
        assert_eq!(h.changes.len(), 1, "{:?}", h.changes);
        assert_eq!(h.changes[0].run, 21);
        assert!(h.changes[0].regression && h.newest_regressed);
        // The same data read as ns/op (lower is better) is a regression too: ns/op rose.
        let h = build(
            "spin",
            &runs,
            2,
            Metric::NsPerOp,
            &ChangePointOptions::default(),
        );
        assert!(h.newest_regressed);
    }

    #[test]
    fn an_improvement_and_a_flat_series_are_not_regressions() {
        let up: Vec<RunData> = (0..30)
            .map(|i| {
                run(
                    i as i64 + 1,
                    1e6 * noisy(i) * if i >= 15 { 1.08 } else { 1.0 },
                )
            })
            .collect();
        let h = build(
            "spin",
            &up,
            2,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        assert_eq!(h.changes.len(), 1);
        assert!(!h.newest_regressed);
        let flat: Vec<RunData> = (0..30).map(|i| run(i as i64 + 1, 1e6 * noisy(i))).collect();
        let h = build(
            "spin",
            &flat,
            2,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        assert!(h.changes.is_empty() && !h.newest_regressed && h.judged);
        // A run without the point is skipped, not read as zero.
        let h = build(
            "spin",
            &flat,
            4,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        assert!(h.points.is_empty() && !h.judged);
        let err = check_measured("spin", &flat, 4).unwrap_err().to_string();
        assert!(
            err.contains("no stored run of `spin` measured N=4; these runs measured N = 2"),
            "{err}"
        );
        check_measured("spin", &flat, 2).unwrap();
    }

    #[test]
    fn csv_series_follow_the_model_csv_rules() {
        let points =
            parse_csv("# weekly\nlabel,value\nb1,100.5\n\n# moved racks\nb2,-3e2\n7\n").unwrap();
        let got: Vec<(&str, f64)> = points.iter().map(|p| (p.label.as_str(), p.value)).collect();
        assert_eq!(got, [("b1", 100.5), ("b2", -300.0), ("", 7.0)]);
        assert_eq!(points[2].run, 3);
        for (input, want) in [
            (
                "1OO.5\n101\n",
                "line 1: `1OO.5`: value `1OO.5` is not a number",
            ),
            ("100\n# ok\nx\n", "line 3: `x`: value `x` is not a number"),
            ("a,b,1\n", "line 1: `a,b,1`: 3 fields, expected 1 or 2"),
            ("1\ninf\n", "line 2: `inf`: value = inf"),
            ("value\n", "no data rows"),
        ] {
            let err = parse_csv(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn a_rise_of_negative_values_is_a_positive_change() {
        // −100 → −90 was reported as −10%.
        let points: Vec<HistoryPoint> = (0..30)
            .map(|i| HistoryPoint {
                run: i as i64 + 1,
                started_at: String::new(),
                variant: None,
                label: String::new(),
                value: noisy(i) * if i >= 20 { -90.0 } else { -100.0 },
            })
            .collect();
        let h = from_points(
            "csv",
            0,
            Metric::Throughput,
            points,
            &ChangePointOptions::default(),
        );
        assert_eq!(h.changes.len(), 1, "{:?}", h.changes);
        assert!(
            (h.changes[0].relative.unwrap() - 0.1).abs() < 0.01,
            "{:?}",
            h.changes
        );
        assert!(!h.changes[0].regression && !h.newest_regressed);
    }

    #[test]
    fn metric_names_parse() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()).unwrap(), m);
        }
        assert!(
            Metric::parse("speed")
                .unwrap_err()
                .to_string()
                .contains("throughput")
        );
    }
}
