//! A run's plan: the validated answer to "what will this sweep do?", built from the user's
//! request before anything runs, so every mistake is reported before the first trial.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Field, LabError};
use crate::runner::spec::{BuiltinWork, CommandSpec, OpsSource, TrialSpec, Work};
use crate::workloads::{self, WorkloadInfo};
use model::env::{Fingerprint, Severity};
use model::limits::{
    MAX_DURATION, MAX_LABEL_CHARS, MAX_READINGS, MAX_RUNS, MAX_TRIALS, check_length,
};
use model::params::Params;
use model::record::{Membind, Mode, Nanos, Pin, RunMeta, RunStatus};
use model::task_spec::{self, TaskSpec};
use model::warnings::Warning;

/// What the user asked for, already split into typed fields but not yet validated.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The built-in workload's name (ignored with `command`).
    pub workload: String,
    /// `-p KEY=VAL` pairs, not yet checked against the workload.
    pub params: Vec<(String, String)>,
    /// `--tasks`; `None` for the default sweep.
    pub tasks: Option<TaskSpec>,
    /// Threads or processes.
    pub mode: Mode,
    /// How tasks are pinned to CPUs.
    pub pin: Pin,
    /// Where the tasks' memory comes from.
    pub membind: Membind,
    /// Trials per point (`--runs`; a "run" is the stored sweep they make up).
    pub trials_per_point: u32,
    /// Each trial's measurement window.
    pub duration: Nanos,
    /// Each trial's warm-up before the window.
    pub warmup: Nanos,
    /// Count cycles and instructions with hardware counters.
    pub counters: bool,
    /// Where workloads that use files make their scratch directories (the system's temporary
    /// directory when `None`).
    pub workdir: Option<PathBuf>,
    /// `--variant`: a label for which build or setting this run is.
    pub variant: Option<String>,
    /// `--tag KEY=VAL` labels.
    pub tags: Vec<(String, String)>,
    /// `--name` for the run.
    pub name: Option<String>,
    /// `--cmd` and friends: an external command instead of a built-in workload.
    pub command: Option<CommandSpec>,
    /// `--timeout` per trial (external commands).
    pub timeout: Option<Nanos>,
    /// `--warmup-runs`: unmeasured runs of the command before the first trial.
    pub warmup_runs: u32,
    /// `--locks`: trace lock contention in every trial.
    pub locks: Option<crate::locks::LockRequest>,
    /// `--offcpu`: trace blocked time, with call chains, in every trial.
    pub offcpu: Option<crate::offcpu::OffCpuRequest>,
    /// `--profile`: `perf record` the first K trials of each point.
    pub profile: Option<crate::runner::ProfileSettings>,
}

/// What `scalelab list` and stored runs say about an external command.
pub(crate) static COMMAND_INFO: WorkloadInfo = WorkloadInfo {
    name: model::record::COMMAND_WORKLOAD,
    op: "one completion of the command (or --ops N per trial, or the count --ops-regex reads from its output)",
    stresses: "whatever the command does; it runs with its CPU affinity limited to N CPUs",
    params: &[],
    uses_files: false,
};

/// Default `--timeout` for a command trial.
pub(crate) const DEFAULT_COMMAND_TIMEOUT: Nanos = Nanos(3600 * 1_000_000_000);

/// Checks `runs` trials per point (the config's `field`) at `points` points against
/// `MAX_RUNS` and `MAX_TRIALS`.
pub fn check_runs(field: Field, runs: u32, points: usize) -> Result<(), LabError> {
    if runs > MAX_RUNS {
        return Err(LabError::invalid(
            field,
            format!("{runs}: at most {MAX_RUNS} trials per point"),
        ));
    }
    let trials = u64::from(runs) * points as u64;
    if trials > MAX_TRIALS {
        return Err(LabError::invalid(
            field,
            format!(
                "{runs} at {points} task counts is {trials} trials; a run holds at most \
                 {MAX_TRIALS} trials: fewer runs or task counts"
            ),
        ));
    }
    Ok(())
}

impl RunConfig {
    /// The documented defaults for `workload`: 3 runs of 5 s after 1 s of warm-up, threads, auto pinning.
    pub fn new(workload: &str) -> RunConfig {
        RunConfig {
            workload: workload.to_string(),
            params: Vec::new(),
            tasks: None,
            mode: Mode::Threads,
            pin: Pin::Cores,
            membind: Membind::FirstTouch,
            trials_per_point: 3,
            duration: Nanos(5_000_000_000),
            warmup: Nanos(1_000_000_000),
            counters: true,
            workdir: None,
            variant: None,
            tags: Vec::new(),
            name: None,
            command: None,
            timeout: None,
            warmup_runs: 0,
            locks: None,
            offcpu: None,
            profile: None,
        }
    }
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload (for an external command, the `cmd` entry).
    pub info: &'static WorkloadInfo,
    /// The workload's parameters, checked, defaults filled in.
    pub params: Params,
    /// The task counts, in sweep order.
    pub points: Vec<u32>,
    /// Trials per point (`--runs`; a "run" is the stored sweep they make up).
    pub trials_per_point: u32,
    /// Each trial's measurement window.
    pub duration: Nanos,
    /// Each trial's warm-up before the window.
    pub warmup: Nanos,
    /// Threads or processes.
    pub mode: Mode,
    /// How tasks are pinned to CPUs.
    pub pin: Pin,
    /// Where the tasks' memory comes from.
    pub membind: Membind,
    /// Count cycles and instructions with hardware counters.
    pub counters: bool,
    /// Where scratch directories are made for workloads that use files.
    pub workdir: Option<PathBuf>,
    /// A label for which build or setting this run is.
    pub variant: Option<String>,
    /// Labels stored with the run.
    pub tags: BTreeMap<String, String>,
    /// A name for the run.
    pub name: Option<String>,
    /// Online CPUs when the plan was made.
    pub cpus: u32,
    /// The external command, when the run measures one.
    pub command: Option<CommandSpec>,
    /// Per-trial limit for external commands.
    pub timeout: Nanos,
    /// Unmeasured, untraced runs of the external command at the largest N before the first
    /// trial.
    pub warmup_runs: u32,
    /// `--locks`: trace lock contention in every trial.
    pub locks: Option<crate::locks::LockRequest>,
    /// `--offcpu`: trace blocked time, with call chains, in every trial.
    pub offcpu: Option<crate::offcpu::OffCpuRequest>,
    /// `--profile`: which trials are recorded under `perf record`, and how.
    pub profile: Option<crate::runner::ProfileSettings>,
}

/// The command strings as run parameters, so runs of different commands never compare as equal.
fn command_params(c: &CommandSpec) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    for (i, (name, cmd)) in c.steps.iter().enumerate() {
        let key = if i == 0 {
            "cmd".to_string()
        } else {
            format!("step{i}.{name}")
        };
        p.insert(key, cmd.clone());
    }
    if let Some(x) = &c.prepare {
        p.insert("prepare".into(), x.clone());
    }
    if let Some(x) = &c.cleanup {
        p.insert("cleanup".into(), x.clone());
    }
    match &c.ops {
        OpsSource::Completion => {}
        OpsSource::Fixed(k) => {
            p.insert("ops".into(), k.to_string());
        }
        OpsSource::Regex(re) => {
            p.insert("ops_regex".into(), re.clone());
        }
    }
    for m in &c.metrics {
        let direction = match m.direction {
            model::record::Direction::Higher => "higher",
            model::record::Direction::Lower => "lower",
        };
        let from = match m.from {
            model::record::OutputStream::Stdout => "",
            model::record::OutputStream::Stderr => "stderr:",
        };
        p.insert(
            format!("{}{}", model::record::METRIC_PARAM, m.name),
            format!("{from}{direction}:{}", m.pattern),
        );
    }
    if c.ops_primary && !c.metrics.is_empty() {
        p.insert(
            model::record::PRIMARY_PARAM.into(),
            model::record::PRIMARY_OPS.into(),
        );
    } else if let Some(primary) = c.metrics.first() {
        p.insert(model::record::PRIMARY_PARAM.into(), primary.name.clone());
    }
    p
}

impl Plan {
    /// Checks `cfg` against the workload and the limits, with `cpus` online CPUs; every mistake
    /// is an error naming the field.
    pub fn new(cfg: RunConfig, cpus: u32) -> Result<Plan, LabError> {
        let (info, params) = match &cfg.command {
            Some(command) => {
                if !cfg.params.is_empty() {
                    return Err(LabError::invalid(
                        Field::Params,
                        "built-in workload parameters do not apply to a command; put \
                         parameters in the command itself",
                    ));
                }
                if command.steps.is_empty() {
                    return Err(LabError::invalid(Field::Command, "the command is empty"));
                }
                command.validate()?;
                (&COMMAND_INFO, Params::from_map(command_params(command)))
            }
            None => {
                let workload = workloads::find(&cfg.workload)?;
                let info = workload.info();
                (info, Params::resolve(info.name, info.params, &cfg.params)?)
            }
        };
        let points = match &cfg.tasks {
            Some(spec) => spec.points(cpus)?,
            None => task_spec::default_points(cpus),
        };
        if cfg.trials_per_point == 0 {
            return Err(LabError::invalid(
                Field::Runs,
                "0: a point needs at least one trial (3 or more to compare runs)",
            ));
        }
        if cfg.duration.0 == 0 {
            return Err(LabError::invalid(
                Field::Duration,
                "must be greater than 0 (e.g. 500ms, 5s)",
            ));
        }
        for (field, d) in [
            (Field::Duration, Some(cfg.duration)),
            (Field::Warmup, Some(cfg.warmup)),
            (Field::Timeout, cfg.timeout),
        ] {
            if d.is_some_and(|d| d > MAX_DURATION) {
                return Err(LabError::invalid(
                    field,
                    "longer than the maximum of 1 week (168h)",
                ));
            }
        }
        check_runs(Field::Runs, cfg.trials_per_point, points.len())?;
        if let Some(p) = cfg.profile.as_ref().filter(|p| p.trials > MAX_RUNS) {
            return Err(LabError::invalid(
                Field::ProfileTrials,
                format!(
                    "{}: at most {MAX_RUNS} (the most trials a point has)",
                    p.trials
                ),
            ));
        }
        if cfg.command.is_none() {
            check_readings(cfg.duration, points.last().copied().unwrap_or(1))?;
            if cfg.warmup_runs > 0 {
                return Err(LabError::BadOption(format!(
                    "warm-up runs: {} asked for, but they apply to --cmd; a built-in workload \
                     warms up for --warmup in every trial",
                    cfg.warmup_runs
                )));
            }
        }
        if cfg.membind != Membind::FirstTouch {
            if cfg.command.is_some() {
                return Err(LabError::invalid(
                    Field::Membind,
                    format!(
                        "{}: applies to built-in workloads; run a command under numactl \
                         (numactl --interleave=all CMD, numactl --localalloc CMD)",
                        cfg.membind
                    ),
                ));
            }
            if cfg.membind == Membind::Node && cfg.pin == Pin::None {
                return Err(LabError::invalid(
                    Field::Membind,
                    "node: a task's node is its CPU's, and with --pin none it has none; pin \
                     the tasks (--pin cores) or use --membind interleave",
                ));
            }
        }
        if cfg.profile.as_ref().is_some_and(|p| p.trials == 0) {
            return Err(LabError::invalid(
                Field::ProfileTrials,
                "0: profile at least one trial per point (default 1)",
            ));
        }
        let label = |field: Field, text: &str| {
            check_length(text, MAX_LABEL_CHARS).map_err(|why| LabError::invalid(field, why))
        };
        label(Field::Name, cfg.name.as_deref().unwrap_or_default())?;
        label(Field::Variant, cfg.variant.as_deref().unwrap_or_default())?;
        let mut tags = BTreeMap::new();
        for (k, v) in cfg.tags {
            for part in [&k, &v] {
                check_length(part, MAX_LABEL_CHARS)
                    .map_err(|why| LabError::invalid(Field::Tags, format!("{k:.40}: {why}")))?;
            }
            tags.insert(k, v);
        }
        Ok(Plan {
            info,
            params,
            points,
            trials_per_point: cfg.trials_per_point,
            duration: cfg.duration,
            warmup: cfg.warmup,
            mode: cfg.mode,
            pin: cfg.pin,
            membind: cfg.membind,
            counters: cfg.counters,
            workdir: cfg.workdir,
            variant: cfg.variant,
            tags,
            name: cfg.name,
            cpus,
            command: cfg.command,
            timeout: cfg.timeout.unwrap_or(DEFAULT_COMMAND_TIMEOUT),
            warmup_runs: cfg.warmup_runs,
            locks: cfg.locks,
            offcpu: cfg.offcpu,
            profile: cfg.profile,
        })
    }

    /// (N, repetition) in execution order: round-robin over the points.
    pub(crate) fn trial_order(&self) -> Vec<(u32, u32)> {
        (0..self.trials_per_point)
            .flat_map(|k| self.points.iter().map(move |&n| (n, k)))
            .collect()
    }

    /// The spec of a trial at N (not yet profiled, no scratch directory: the sweep adds them).
    pub(crate) fn trial_spec(&self, n: u32) -> TrialSpec {
        let work = match &self.command {
            Some(command) => Work::Command(command.clone()),
            None => Work::Builtin(BuiltinWork {
                workload: self.info.name.to_string(),
                params: self.params.as_map().clone(),
                mode: self.mode,
                pin: self.pin.clone(),
                membind: self.membind,
                warmup: self.warmup,
                duration: self.duration,
                sample_interval: self.sample_interval(),
                counters: self.counters,
                workdir: None,
            }),
        };
        TrialSpec {
            tasks: n,
            work,
            locks: self.locks,
            offcpu: self.offcpu,
            profile: None,
        }
    }

    /// [`Plan::trial_spec`] with no tracer either: a trial that only runs the work (a warm-up
    /// run, the untraced reference a traced built-in run measures).
    pub(crate) fn untraced_spec(&self, n: u32) -> TrialSpec {
        TrialSpec {
            locks: None,
            offcpu: None,
            ..self.trial_spec(n)
        }
    }

    /// About 20 samples per window, between 10 ms and 1 s apart.
    pub(crate) fn sample_interval(&self) -> Nanos {
        sample_interval(self.duration)
    }

    /// When a trial child is declared hung and killed: warm-up + duration plus a generous margin
    /// for setup and teardown (30 s, or the window itself when longer).
    pub(crate) fn deadline(&self) -> Duration {
        if self.command.is_some() {
            return self.timeout.as_duration();
        }
        let window = self.warmup.as_duration() + self.duration.as_duration();
        window + window.max(Duration::from_secs(30))
    }

    /// The run as stored when it starts: every field of the plan, the machine's fingerprint, and
    /// its warnings — the environment checks that warn, then `extra` (e.g. why a flag was
    /// dropped), then oversubscription.
    pub(crate) fn run_meta(
        &self,
        env: Fingerprint,
        extra: Vec<String>,
        command_line: String,
    ) -> RunMeta {
        let mut warnings: Vec<String> = model::env::checks(&env)
            .into_iter()
            .filter(|c| c.severity == Severity::Warn)
            .map(|c| match c.fix {
                Some(fix) => format!("{}: {} (fix: {fix})", c.name, c.finding),
                None => format!("{}: {}", c.name, c.finding),
            })
            .collect();
        warnings.extend(extra);
        let over = self.oversubscribed();
        if !over.is_empty() {
            warnings.push(
                Warning::Oversubscribed {
                    points: over,
                    cpus: self.cpus,
                }
                .to_string(),
            );
        }
        RunMeta {
            id: 0,
            origin_id: None,
            uuid: uuid::Uuid::new_v4(),
            name: self.name.clone(),
            workload: self.info.name.to_string(),
            params: self.params.as_map().clone(),
            op_unit: match self
                .command
                .as_ref()
                .filter(|c| !c.ops_primary)
                .and_then(|c| c.metrics.first())
            {
                Some(m) => format!(
                    "the command's own figure {}, {} is better (--metric; X(N) is it{}), read from each trial's output",
                    m.label(),
                    match m.direction {
                        model::record::Direction::Higher => "higher",
                        model::record::Direction::Lower => "lower",
                    },
                    match m.direction {
                        model::record::Direction::Higher => "",
                        model::record::Direction::Lower => "s reciprocal, a rate",
                    }
                ),
                None => self.info.op.to_string(),
            },
            mode: self.mode,
            pin: self.pin.clone(),
            membind: self.membind,
            points: self.points.clone(),
            runs: self.trials_per_point,
            duration: self.duration,
            warmup: self.warmup,
            variant: self.variant.clone(),
            tags: self.tags.clone(),
            started_at: model::timestamp::now_rfc3339(),
            finished_at: None,
            status: RunStatus::Running,
            env,
            warnings,
            command_line,
        }
    }

    /// Points with more tasks than online CPUs.
    pub(crate) fn oversubscribed(&self) -> Vec<u32> {
        self.points
            .iter()
            .copied()
            .filter(|&n| n > self.cpus)
            .collect()
    }
}

/// About 20 samples per window of `duration`, between 10 ms and 1 s apart.
fn sample_interval(duration: Nanos) -> Nanos {
    Nanos((duration.0 / 20).clamp(10_000_000, 1_000_000_000))
}

/// A trial of a built-in workload keeps a reading per task per sample: refuses a window so long,
/// at so many tasks, that they exceed [`MAX_READINGS`].
fn check_readings(duration: Nanos, most_tasks: u32) -> Result<(), LabError> {
    let samples = duration.0 / sample_interval(duration).0 + 1;
    let readings = samples.saturating_mul(u64::from(most_tasks));
    if readings > MAX_READINGS {
        return Err(LabError::invalid(
            Field::Duration,
            format!(
                "{:.0}s at N={most_tasks} would keep {readings} per-task readings per trial (one \
                 per task per sample), more than {MAX_READINGS}: shorten it or lower the task \
                 counts",
                duration.as_secs_f64()
            ),
        ));
    }
    Ok(())
}

/// Parses `5s`, `500ms`, `1.5s`, `2m`, `1h`, `1d`, `250us`, `0` (a bare number is seconds), up
/// to [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Nanos, LabError> {
    let t = text.trim();
    let bad = || {
        LabError::BadOption(format!(
            "`{text}` is not a duration; use e.g. 500ms, 5s, 1.5s, 2m"
        ))
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        _ => return Err(bad()),
    };
    if !value.is_finite() || value < 0.0 {
        return Err(bad());
    }
    let nanos = (value * scale).round();
    if nanos > MAX_DURATION.0 as f64 {
        return Err(LabError::BadOption(format!(
            "`{text}` is longer than the maximum of 1 week (168h)"
        )));
    }
    Ok(Nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s").unwrap(), Nanos(5_000_000_000));
        assert_eq!(parse_duration("500ms").unwrap(), Nanos(500_000_000));
        assert_eq!(parse_duration("1.5").unwrap(), Nanos(1_500_000_000));
        assert_eq!(parse_duration("2m").unwrap(), Nanos(120_000_000_000));
        assert_eq!(parse_duration("0").unwrap(), Nanos(0));
        for bad in ["-1s", "fast", "5 parsecs", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_plans_are_refused() {
        let mut cfg = RunConfig::new("spin");
        cfg.trials_per_point = 0;
        assert!(
            Plan::new(cfg, 2)
                .unwrap_err()
                .to_string()
                .contains("runs: 0")
        );
        let mut cfg = RunConfig::new("spin");
        cfg.duration = Nanos(0);
        assert!(
            Plan::new(cfg, 2)
                .unwrap_err()
                .to_string()
                .contains("duration: must be greater than 0")
        );
        assert!(Plan::new(RunConfig::new("nope"), 2).is_err());
    }

    /// Was a silent clamp: `1000000000h` became u64::MAX ns (584 years).
    #[test]
    fn durations_past_the_maximum_are_refused_not_clamped() {
        assert_eq!(parse_duration("168h").unwrap(), MAX_DURATION);
        assert_eq!(parse_duration("7d").unwrap(), MAX_DURATION);
        for long in ["169h", "1000000000h", "99999999999999999999999s", "8d"] {
            let err = parse_duration(long).unwrap_err().to_string();
            assert!(
                err.contains("longer than") && err.contains("1 week"),
                "{long}: {err}"
            );
        }
    }

    /// Was an abort: `--runs 4294967295` planned 2^32 trials per point, allocated past 2 GB for
    /// the trial order and died after the run was stored, leaving it incomplete.
    #[test]
    fn counts_past_their_maximum_are_refused_before_anything_runs() {
        let refused = |f: &dyn Fn(&mut RunConfig), needle: &str| {
            let mut cfg = RunConfig::new("spin");
            f(&mut cfg);
            let err = Plan::new(cfg, 2).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        };
        refused(&|c| c.trials_per_point = u32::MAX, "runs: 4294967295");
        refused(&|c| c.warmup = Nanos(u64::MAX), "warmup: longer");
        refused(&|c| c.timeout = Some(Nanos(u64::MAX)), "timeout: longer");
        refused(&|c| c.trials_per_point = MAX_RUNS + 1, "at most 10000");
        refused(
            &|c| c.tasks = Some("1..40000".parse().unwrap()),
            "at most 100000 trials",
        );
        // --profile-trials past MAX_RUNS: tests/cli.rs (ProfileSettings is the runner's).
        // A week-long window at N=1024 would keep 620 M per-task readings per trial.
        refused(
            &|c| {
                c.duration = MAX_DURATION;
                c.tasks = Some("1024".parse().unwrap());
            },
            "readings",
        );
        assert!(check_runs(Field::MaxRuns, u32::MAX, 1).is_err());
        assert!(check_runs(Field::MaxRuns, 100, 4).is_ok());
        let mut fine = RunConfig::new("spin");
        fine.trials_per_point = MAX_RUNS;
        fine.tasks = Some("1,2,4,8,16,32,64,128,256,512".parse().unwrap());
        assert!(Plan::new(fine, 2).is_ok());
    }

    #[test]
    fn default_plan_sweeps_pow2_and_orders_round_robin() {
        let plan = Plan::new(RunConfig::new("spin"), 6).unwrap();
        assert_eq!(plan.points, vec![1, 2, 4, 6]);
        assert_eq!(
            plan.trial_order()[..5],
            [(1, 0), (2, 0), (4, 0), (6, 0), (1, 1)]
        );
        assert_eq!(plan.params.as_map().len(), 0);
        assert!(plan.deadline() >= Duration::from_secs(36));
    }
}
