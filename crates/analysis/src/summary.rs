//! Derives every aggregate the reports show from a run's raw trials: per-point medians with
//! distribution-free intervals, speedup S(N) = X(N)/X(1), efficiency S/N, accounting per op,
//! "scales to S out of N" and negative-scalability steps. Pure: reads a `RunData`, runs nothing.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use stats::{Estimate, Sample};

use super::boundaries::{BoundaryMark, crossings, marks};
use model::number_text::plural;
use model::record::{RunData, TrialMeasurement, TrialOutcome};
use model::warnings::Warning;

/// Confidence level of point intervals.
pub(crate) const LEVEL: f64 = 0.95;
/// Trials varying more than this (coefficient of variation) get a warning.
pub(crate) const HIGH_CV: f64 = 0.05;
/// A throughput drop larger than this between consecutive points is called negative scalability.
pub(crate) const NEGATIVE_DROP: f64 = 0.02;
/// S(N) above this many times N is called superlinear (a suspect baseline).
pub(crate) const SUPERLINEAR: f64 = 1.1;
/// Tasks that waited for a CPU more than this share of the window (at N ≤ the online CPUs)
/// were competing with other work: the point's throughput is understated.
pub(crate) const RUNQ_WAIT: f64 = 5.0;
/// A built-in's window past `--duration` by this share (plus the sampler's interval) is
/// called overrun: the window closes at the first sample at or after the deadline, so a few
/// milliseconds over is how it works, and ten percent more is the sampler waking late.
const WINDOW_OVERRUN: f64 = 0.1;

/// Everything shown for one N; every figure is a median over the point's successful trials.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    /// The task count.
    pub n: u32,
    /// Trials that measured.
    pub trials_ok: usize,
    /// Trials that failed.
    pub trials_failed: usize,
    /// Ops per wall-clock second, all tasks together.
    pub throughput: Option<Estimate>,
    /// Coefficient of variation of the trials' throughputs.
    pub throughput_cv: Option<f64>,
    /// Ops per CPU-second (user + sys): the old `flt/cpu/s` next to `fault/wsec`.
    pub ops_per_cpu_sec: Option<f64>,
    /// Throughput per task, ops/s.
    pub ops_per_sec_per_task: Option<f64>,
    /// Wall nanoseconds per op seen by one task: N / throughput.
    pub ns_per_op_per_task: Option<f64>,
    /// Throughput over the throughput at N = 1.
    pub speedup: Option<f64>,
    /// Speedup divided by N (1 is perfect scaling).
    pub efficiency: Option<f64>,
    /// CPU time in user mode per trial, all tasks, in seconds.
    pub user_s: Option<f64>,
    /// CPU time in the kernel per trial, all tasks, in seconds.
    pub sys_s: Option<f64>,
    /// The trial's measurement window, in seconds.
    pub wall_s: Option<f64>,
    /// (user + sys) / wall × 100, as `time` prints it (exceeds 100 with several tasks).
    pub cpu_pct: Option<f64>,
    /// Share of the window the average task spent runnable but waiting for a CPU (run-queue
    /// delay / (window × N) × 100); `None` where not measured.
    pub runq_pct: Option<f64>,
    /// CPU time of the harness's sampler thread as a share of the tasks' CPU time, in percent
    /// (what measuring took from the tasks when every CPU has one); `None` where not measured.
    pub sampler_pct: Option<f64>,
    /// Seconds from creating the first task to the gate opening (task start-up), per trial.
    pub start_s: Option<f64>,
    /// Seconds from the window's end to the last task gone (task stop), per trial.
    pub stop_s: Option<f64>,
    /// Minor page faults per trial.
    pub minor_faults: Option<f64>,
    /// Major page faults per trial.
    pub major_faults: Option<f64>,
    /// Voluntary context switches per trial.
    pub voluntary_switches: Option<f64>,
    /// Involuntary context switches per trial.
    pub involuntary_switches: Option<f64>,
    /// Blocks read from storage per trial.
    pub block_in: Option<f64>,
    /// Blocks written to storage per trial.
    pub block_out: Option<f64>,
    /// Peak memory per trial, KiB: the largest resident set one process of the trial reached
    /// (`ru_maxrss`; for a built-in in threads mode, the trial's process, scalelab's own few MiB
    /// included); `None` where no trial measured it (profiled command steps, older runs).
    pub max_rss_kib: Option<f64>,
    /// Peak memory per task, KiB: in threads mode the process's peak over N (its tasks share
    /// it), in processes mode the largest task process's own; `None` for a command, whose
    /// processes are not its tasks.
    pub max_rss_per_task_kib: Option<f64>,
    /// Slowest task, ops/s (with `task_max`: how fair the tasks' shares were); `None` for an
    /// external command, whose trial measures the whole command, not each task.
    pub task_min: Option<f64>,
    /// Fastest task, ops/s; `None` for an external command.
    pub task_max: Option<f64>,
    /// Hardware cycles per op.
    pub cycles_per_op: Option<f64>,
    /// Hardware instructions per op.
    pub instructions_per_op: Option<f64>,
    /// Last-level cache misses per op (`cache-misses`): cache lines bouncing between CPUs
    /// show here as they grow with N.
    pub cache_misses_per_op: Option<f64>,
    /// Why counters are missing, when they are.
    pub counter_note: Option<String>,
    /// Workload-specific counts per trial (`time_backwards`, …), by name.
    pub extras: BTreeMap<String, f64>,
    /// External commands: each step's median accounting (empty for built-ins).
    pub steps: Vec<StepSummary>,
    /// A command's own figures (`--metric`) as it printed them, each the median over the
    /// trials with its interval, by name (empty without `--metric`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reported: BTreeMap<String, Estimate>,
}

/// One step of an external command at one N: medians over the successful trials.
#[derive(Debug, Clone, Serialize)]
pub struct StepSummary {
    /// The step's name (`cmd` for `--cmd` itself).
    pub name: String,
    /// CPU time in user mode, seconds (the step's whole process tree).
    pub user_s: f64,
    /// CPU time in the kernel, seconds.
    pub sys_s: f64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// (user + sys) / wall × 100.
    pub cpu_pct: f64,
    /// Minor page faults.
    pub minor_faults: f64,
    /// Major page faults.
    pub major_faults: f64,
    /// Blocks read from storage.
    pub block_in: f64,
    /// Blocks written to storage.
    pub block_out: f64,
}

/// "Scales to S out of N CPUs" — or, when N exceeds the run's online CPUs, "S out of N tasks
/// (C CPUs)": tasks past the CPUs time-share them, and the CPUs are what the speedup is out of.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ScalesTo {
    /// Throughput at `n` over the throughput at N = 1.
    pub speedup: f64,
    /// The largest N with a speedup.
    pub n: u32,
    /// The run's online CPUs, from its fingerprint (`None` when not recorded).
    pub cpus: Option<u32>,
}

/// `1.90 out of 2 CPUs`, `0.46 out of 4 tasks (2 CPUs)`, or `… out of 4 tasks` when the CPUs
/// are unknown; the callers put "scales to" in front.
impl fmt::Display for ScalesTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.n as usize;
        write!(f, "{:.2} out of ", self.speedup)?;
        match self.cpus {
            Some(cpus) if self.n <= cpus => f.write_str(&plural(n, "CPU")),
            Some(cpus) => write!(
                f,
                "{} ({})",
                plural(n, "task"),
                plural(cpus as usize, "CPU")
            ),
            None => f.write_str(&plural(n, "task")),
        }
    }
}

/// A run's results: one summary per N and the warnings they raise.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// One per N measured, in N order.
    pub points: Vec<PointSummary>,
    /// How far the run scales, when N = 1 was measured.
    pub scales_to: Option<ScalesTo>,
    /// The measured N that first put a task past an L3 domain, node, socket or onto an SMT
    /// sibling, from the recorded topology and placement (empty without a recorded topology).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boundaries: Vec<BoundaryMark>,
    /// What makes these results less trustworthy than they look (not part of the JSON).
    #[serde(skip)]
    pub warnings: Vec<Warning>,
    /// The run's `--metric`s, the primary (X(N)) first; empty for a built-in or a command
    /// without them, whose X(N) is ops per second.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<model::record::MetricSpec>,
    /// The metric that is X(N), when one is (`None`: ops per second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<model::record::MetricSpec>,
}

fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    Sample::new(v).ok().map(|s| s.median())
}

/// Each reported figure's median and interval over `ok`, by name.
fn reported_medians(ok: &[&TrialMeasurement]) -> BTreeMap<String, Estimate> {
    let names: std::collections::BTreeSet<&String> = ok
        .iter()
        .filter_map(|m| m.reported.as_ref())
        .flat_map(|r| r.values.keys())
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let values: Vec<f64> = ok
                .iter()
                .filter_map(|m| m.reported.as_ref()?.values.get(name).copied())
                .collect();
            let sample = Sample::new(values).ok()?;
            Some((name.clone(), sample.median_interval(LEVEL)))
        })
        .collect()
}

/// Summarises a run.
pub fn summarize(data: &RunData) -> RunSummary {
    let mut points = Vec::new();
    let mut warnings = Vec::new();
    let mut min_runs = usize::MAX;
    // A command trial counts the whole command's ops, not each task's.
    let per_task = data.meta.workload != "cmd";
    // How many tasks the peak memory's process holds at N: all of them in threads mode, one in
    // processes mode; a command's processes are not its tasks.
    let tasks_per_peak = |n: u32| match (per_task, data.meta.mode) {
        (false, _) => None,
        (true, model::record::Mode::Threads) => Some(n),
        (true, model::record::Mode::Processes) => Some(1),
    };
    for &n in &sorted_points(data) {
        let trials: Vec<&TrialOutcome> = data
            .trials
            .iter()
            .filter(|t| t.n == n)
            .map(|t| &t.outcome)
            .collect();
        let ok: Vec<&TrialMeasurement> = trials.iter().filter_map(|t| t.measurement()).collect();
        let failed: Vec<&str> = trials
            .iter()
            .filter_map(|t| match t {
                TrialOutcome::Failed { reason } => Some(reason.as_str()),
                TrialOutcome::Ok(_) => None,
            })
            .collect();
        if let Some(first) = failed.first() {
            warnings.push(Warning::FailedTrials {
                n,
                failed: failed.len(),
                total: trials.len(),
                first_reason: (*first).to_string(),
            });
        }
        min_runs = min_runs.min(ok.len());
        let p = summarize_point(n, &ok, failed.len(), per_task, tasks_per_peak(n));
        if let Some(cv) = p.throughput_cv.filter(|cv| *cv > HIGH_CV) {
            warnings.push(Warning::HighVariance {
                n,
                cv,
                command: data.meta.workload == "cmd",
            });
        }
        if let Some(&count) = p.extras.get("time_backwards").filter(|c| **c > 0.0) {
            warnings.push(Warning::TimeBackwards { n, count });
        }
        points.push(p);
    }
    let base = points
        .iter()
        .find(|p| p.n == 1)
        .and_then(|p| p.throughput.map(|t| t.point));
    for p in &mut points {
        if let (Some(base), Some(x)) = (base, p.throughput) {
            if base > 0.0 {
                p.speedup = Some(x.point / base);
                p.efficiency = Some(x.point / base / f64::from(p.n));
            }
        }
    }
    if base.is_none() && !points.is_empty() {
        warnings.push(Warning::NoBaseline);
    }
    let cpus = data.meta.env.online_cpus;
    for p in &points {
        if let Some(pct) = p.runq_pct.filter(|pct| *pct > RUNQ_WAIT) {
            if cpus == 0 || p.n as usize <= cpus {
                warnings.push(Warning::WaitedForCpu { n: p.n, pct });
            }
        }
    }
    let base_cpu_pct = points.iter().find(|p| p.n == 1).and_then(|p| p.cpu_pct);
    for p in &points {
        if let Some(speedup) = p.speedup.filter(|s| *s > SUPERLINEAR * f64::from(p.n)) {
            warnings.push(Warning::Superlinear {
                n: p.n,
                speedup,
                base_cpu_pct,
                task_cpu_pct: p.cpu_pct.map(|c| c / f64::from(p.n)),
            });
        }
    }
    for pair in points.windows(2) {
        if let (Some(a), Some(b)) = (pair[0].throughput, pair[1].throughput) {
            let drop = (a.point - b.point) / a.point;
            if drop > NEGATIVE_DROP && b.upper < a.lower.max(a.point * (1.0 - NEGATIVE_DROP)) {
                warnings.push(Warning::NegativeScaling {
                    from: pair[0].n,
                    to: pair[1].n,
                    drop,
                });
            }
        }
    }
    if min_runs != usize::MAX && (1..3).contains(&min_runs) {
        warnings.push(Warning::FewRuns { runs: min_runs });
    }
    if let Some(reason) = points.iter().find_map(|p| p.counter_note.clone()) {
        warnings.push(Warning::CountersUnavailable { reason });
    }
    let multiplexed = data
        .trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .any(|m| m.counters.iter().any(|c| c.multiplexed));
    if multiplexed {
        warnings.push(Warning::CountersMultiplexed);
    }
    let mut late: Vec<u32> = data
        .trials
        .iter()
        .filter(|t| cpus > 0 && t.n as usize > cpus)
        .filter(|t| {
            t.outcome.measurement().is_some_and(|m| {
                m.harness
                    .as_ref()
                    .is_some_and(|h| h.sampler_realtime == Some(false))
            })
        })
        .map(|t| t.n)
        .collect();
    late.sort_unstable();
    late.dedup();
    if !late.is_empty() {
        warnings.push(Warning::SamplerNotRealtime { points: late });
    }
    if let Some(w) = window_overran(data) {
        warnings.push(w);
    }
    let online = u32::try_from(cpus).ok().filter(|&c| c > 0);
    let scales_to = points.iter().rev().find_map(|p| {
        p.speedup.map(|s| ScalesTo {
            speedup: s,
            n: p.n,
            cpus: online,
        })
    });
    let boundaries = data
        .meta
        .env
        .topology
        .as_ref()
        .map_or_else(Vec::new, |topology| {
            let ns: Vec<u32> = points.iter().map(|p| p.n).collect();
            marks(&ns, &crossings(topology, &data.meta.pin))
        });
    RunSummary {
        points,
        scales_to,
        boundaries,
        warnings,
        metrics: data.meta.metrics(),
        primary: data.meta.primary_metric(),
    }
}

/// The warning for built-in trials whose window lasted past `--duration` (commands run until
/// they end: their window is theirs).
fn window_overran(data: &RunData) -> Option<Warning> {
    let asked = data.meta.duration.0;
    if data.meta.workload == "cmd" || asked == 0 {
        return None;
    }
    let bound = asked as f64 * (1.0 + WINDOW_OVERRUN);
    let mut points = Vec::new();
    let mut longest = 0u64;
    for t in &data.trials {
        let Some(m) = t.outcome.measurement() else {
            continue;
        };
        if m.window.0 as f64 > bound {
            points.push(t.n);
            longest = longest.max(m.window.0);
        }
    }
    points.sort_unstable();
    points.dedup();
    (!points.is_empty()).then(|| Warning::WindowOverran {
        points,
        longest_s: longest as f64 / 1e9,
        asked_s: asked as f64 / 1e9,
    })
}

fn sorted_points(data: &RunData) -> Vec<u32> {
    let mut ns: Vec<u32> = data.meta.points.clone();
    ns.extend(data.trials.iter().map(|t| t.n));
    ns.sort_unstable();
    ns.dedup();
    ns
}

/// One N's medians; `per_task`: the trials count each task's ops (built-in workloads), so the
/// slowest and fastest task mean something; `tasks_per_peak`: how many tasks share the process
/// whose peak memory a trial records (`None`: no per-task memory).
fn summarize_point(
    n: u32,
    ok: &[&TrialMeasurement],
    failed: usize,
    per_task: bool,
    tasks_per_peak: Option<u32>,
) -> PointSummary {
    let rates: Vec<f64> = ok.iter().map(|m| m.ops_per_sec()).collect();
    let sample = Sample::new(rates).ok();
    let throughput = sample.as_ref().map(|s| s.median_interval(LEVEL));
    let throughput_cv = sample.as_ref().and_then(|s| s.cv());
    let secs = |m: &TrialMeasurement| m.window.as_secs_f64();
    let per = |f: &dyn Fn(&TrialMeasurement) -> f64| median(ok.iter().map(|m| f(m)));
    let per_op = |event: &str| {
        median(ok.iter().filter_map(|m| {
            let ops = m.ops();
            m.counter(event)
                .filter(|_| ops > 0)
                .map(|c| c as f64 / ops as f64)
        }))
    };
    let counter_note = ok
        .iter()
        .flat_map(|m| m.counters.iter())
        .find(|c| c.value.is_none())
        .and_then(|c| c.note.clone());
    let mut extras = BTreeMap::new();
    let names: std::collections::BTreeSet<&String> =
        ok.iter().flat_map(|m| m.extras.keys()).collect();
    for name in names {
        if let Some(v) = median(
            ok.iter()
                .map(|m| m.extras.get(name).copied().unwrap_or(0) as f64),
        ) {
            extras.insert(name.clone(), v);
        }
    }
    let x = throughput.map(|t| t.point);
    let max_rss_kib = median(
        ok.iter()
            .filter_map(|m| m.usage.max_rss_kib)
            .map(|k| k as f64),
    );
    PointSummary {
        n,
        trials_ok: ok.len(),
        trials_failed: failed,
        throughput,
        throughput_cv,
        // X per CPU-second: ops, or a reported rate's units, over the window's CPU time.
        ops_per_cpu_sec: median(
            ok.iter()
                .filter(|m| m.usage.cpu().0 > 0)
                .map(|m| m.ops_per_sec() * secs(m) / m.usage.cpu().as_secs_f64()),
        ),
        reported: reported_medians(ok),
        ops_per_sec_per_task: x.map(|x| x / f64::from(n)),
        ns_per_op_per_task: x.filter(|x| *x > 0.0).map(|x| f64::from(n) / x * 1e9),
        speedup: None,
        efficiency: None,
        user_s: per(&|m| m.usage.user.as_secs_f64()),
        sys_s: per(&|m| m.usage.sys.as_secs_f64()),
        wall_s: per(&secs),
        cpu_pct: median(
            ok.iter()
                .filter(|m| secs(m) > 0.0)
                .map(|m| m.usage.cpu().as_secs_f64() / secs(m) * 100.0),
        ),
        runq_pct: median(ok.iter().filter(|m| secs(m) > 0.0).filter_map(|m| {
            let delay = m.usage.run_delay?;
            Some(delay.as_secs_f64() / (secs(m) * f64::from(n)) * 100.0)
        })),
        sampler_pct: median(ok.iter().filter(|m| m.usage.cpu().0 > 0).filter_map(|m| {
            let h = m.harness?;
            Some(h.sampler_cpu.as_secs_f64() / m.usage.cpu().as_secs_f64() * 100.0)
        })),
        start_s: median(
            ok.iter()
                .filter_map(|m| Some(m.harness?.start.as_secs_f64())),
        ),
        stop_s: median(
            ok.iter()
                .filter_map(|m| Some(m.harness?.stop.as_secs_f64())),
        ),
        minor_faults: per(&|m| m.usage.minor_faults as f64),
        major_faults: per(&|m| m.usage.major_faults as f64),
        voluntary_switches: per(&|m| m.usage.voluntary_switches as f64),
        involuntary_switches: per(&|m| m.usage.involuntary_switches as f64),
        block_in: per(&|m| m.usage.block_in as f64),
        block_out: per(&|m| m.usage.block_out as f64),
        max_rss_kib,
        max_rss_per_task_kib: max_rss_kib
            .zip(tasks_per_peak)
            .map(|(kib, tasks)| kib / f64::from(tasks.max(1))),
        task_min: median(
            ok.iter()
                .filter(|m| per_task && secs(m) > 0.0)
                .filter_map(|m| m.task_ops.iter().min().map(|&v| v as f64 / secs(m))),
        ),
        task_max: median(
            ok.iter()
                .filter(|m| per_task && secs(m) > 0.0)
                .filter_map(|m| m.task_ops.iter().max().map(|&v| v as f64 / secs(m))),
        ),
        cycles_per_op: per_op("cycles"),
        instructions_per_op: per_op("instructions"),
        cache_misses_per_op: per_op("cache-misses"),
        counter_note,
        extras,
        steps: summarize_steps(ok),
    }
}

fn summarize_steps(ok: &[&TrialMeasurement]) -> Vec<StepSummary> {
    let Some(first) = ok.first() else {
        return Vec::new();
    };
    first
        .steps
        .iter()
        .map(|s| s.name.clone())
        .map(|name| {
            let steps: Vec<&model::record::StepRecord> = ok
                .iter()
                .filter_map(|m| m.steps.iter().find(|s| s.name == name))
                .collect();
            let med = |f: &dyn Fn(&model::record::StepRecord) -> f64| {
                median(steps.iter().map(|s| f(s))).unwrap_or(f64::NAN)
            };
            StepSummary {
                user_s: med(&|s| s.usage.user.as_secs_f64()),
                sys_s: med(&|s| s.usage.sys.as_secs_f64()),
                wall_s: med(&|s| s.wall.as_secs_f64()),
                cpu_pct: med(&|s| {
                    if s.wall.0 > 0 {
                        s.usage.cpu().as_secs_f64() / s.wall.as_secs_f64() * 100.0
                    } else {
                        0.0
                    }
                }),
                minor_faults: med(&|s| s.usage.minor_faults as f64),
                major_faults: med(&|s| s.usage.major_faults as f64),
                block_in: med(&|s| s.usage.block_in as f64),
                block_out: med(&|s| s.usage.block_out as f64),
                name,
            }
        })
        .collect()
}
