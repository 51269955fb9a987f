//! Checking a run from outside (an exported file, a run handed to `import`) as strictly as a
//! fresh run is checked, before it is shown or stored: whatever a measurement could not have
//! produced is refused, naming the run and the field.
//!
//! The rules, each what the planner or the runner guarantees for a run it measured:
//! - labels: a workload, name, variant, host name and tag keys and values of at most
//!   [`MAX_LABEL_CHARS`] characters, parameter values and the command line of at most
//!   [`MAX_COMMAND_CHARS`];
//! - the plan: a workload name; points non-empty, strictly increasing, each 1..=[`MAX_TASKS`];
//!   1..=[`MAX_RUNS`] runs and at most [`MAX_TRIALS`] trials; a duration of 1 ns..=
//!   [`MAX_DURATION`] and a warm-up of at most that; finite, non-negative machine figures;
//! - the trials: at most points × runs, each at one of the points, its index below `runs`, no
//!   (N, index) twice;
//! - a measurement: a window longer than 0 and at most twice [`MAX_DURATION`] (a command's wall
//!   time up to its timeout, and then some); ops per task whose total fits in 64 bits, one
//!   count per task for a built-in workload (a command counts once); user + sys that fit in 64
//!   bits; a built-in's placement one entry per task, on CPUs up to [`sys::MAX_CPU`]; samples
//!   with one count per task, strictly later each, inside the window, never counting down; a
//!   clock window that does not end before it starts; lock waits whose minimum ≤ maximum ≤
//!   total; a profile with a path and a frequency;
//! - metric names (`--metric`'s, in the parameters and in each trial's figures) as the CLI
//!   takes them.

use std::collections::HashSet;
use std::fmt::Display;

use model::limits::{
    MAX_COMMAND_CHARS, MAX_DURATION, MAX_LABEL_CHARS, MAX_RUNS, MAX_TASKS, MAX_TRIALS, check_length,
};
use model::record::{
    LockReport, MetricSpec, ProfileRef, RunData, RunMeta, TrialMeasurement, TrialOutcome,
    TrialRecord, Usage,
};
use model::safe_text::excerpt;

/// `Err` names the run, the field and what is wrong with it.
pub(crate) fn validate(run: &RunData) -> Result<(), String> {
    let meta = &run.meta;
    let at = |field: &dyn Display, problem: String| {
        format!(
            "run {} ({}): {field}: {problem}",
            meta.id,
            excerpt(&meta.workload, 60)
        )
    };
    check_meta(meta).map_err(|(field, problem)| at(&field, problem))?;
    let planned = u64::from(meta.runs) * meta.points.len() as u64;
    if run.trials.len() as u64 > planned {
        return Err(at(
            &"trials",
            format!(
                "{} trials, more than the {planned} planned ({} points × {} runs)",
                run.trials.len(),
                meta.points.len(),
                meta.runs
            ),
        ));
    }
    let builtin = meta.workload != "cmd";
    let mut seen = HashSet::new();
    for (i, trial) in run.trials.iter().enumerate() {
        let place = format!("trials[{i}] (N={}, trial {})", trial.n, trial.index);
        check_trial(meta, trial, builtin, &mut seen)
            .map_err(|(field, problem)| at(&format!("{place}.{field}"), problem))?;
    }
    Ok(())
}

/// (field, problem).
type Fault = (String, String);

fn fault(field: &str, problem: impl Into<String>) -> Fault {
    (field.to_string(), problem.into())
}

fn check_meta(meta: &RunMeta) -> Result<(), Fault> {
    if meta.workload.trim().is_empty() {
        return Err(fault("workload", "empty"));
    }
    let labels = [
        ("workload", Some(&meta.workload)),
        ("name", meta.name.as_ref()),
        ("variant", meta.variant.as_ref()),
        ("env.hostname", Some(&meta.env.hostname)),
    ];
    for (field, text) in labels {
        if let Some(text) = text {
            check_length(text, MAX_LABEL_CHARS).map_err(|why| fault(field, why))?;
        }
    }
    for (key, value) in &meta.tags {
        check_length(key, MAX_LABEL_CHARS)
            .map_err(|why| fault("tags", format!("a key of {why}")))?;
        check_length(value, MAX_LABEL_CHARS)
            .map_err(|why| fault(&format!("tags.{}", excerpt(key, 40)), why))?;
    }
    for (key, value) in &meta.params {
        check_length(key, MAX_LABEL_CHARS)
            .map_err(|why| fault("params", format!("a key of {why}")))?;
        check_length(value, MAX_COMMAND_CHARS)
            .map_err(|why| fault(&format!("params.{}", excerpt(key, 40)), why))?;
    }
    check_length(&meta.command_line, MAX_COMMAND_CHARS)
        .map_err(|why| fault("command_line", why))?;
    for key in meta.params.keys() {
        if let Some(name) = key.strip_prefix(model::record::METRIC_PARAM) {
            MetricSpec::check_name(name)
                .map_err(|why| fault(&format!("params.{}", excerpt(key, 40)), why))?;
        }
    }
    if meta.points.is_empty() {
        return Err(fault("points", "empty; a run measures at least one N"));
    }
    if let Some(&n) = meta.points.iter().find(|&&n| n == 0 || n > MAX_TASKS) {
        return Err(fault("points", format!("N={n} is not in 1..={MAX_TASKS}")));
    }
    if meta.points.windows(2).any(|w| w[0] >= w[1]) {
        return Err(fault(
            "points",
            format!("{:?} is not strictly increasing", meta.points),
        ));
    }
    if meta.runs == 0 || meta.runs > MAX_RUNS {
        return Err(fault(
            "runs",
            format!("{} is not in 1..={MAX_RUNS}", meta.runs),
        ));
    }
    let trials = u64::from(meta.runs) * meta.points.len() as u64;
    if trials > MAX_TRIALS {
        return Err(fault(
            "runs",
            format!("{trials} planned trials, more than {MAX_TRIALS}"),
        ));
    }
    if meta.duration.0 == 0 || meta.duration > MAX_DURATION {
        return Err(fault(
            "duration",
            format!("{} ns is not in 1 ns..=1 week", meta.duration.0),
        ));
    }
    if meta.warmup > MAX_DURATION {
        return Err(fault(
            "warmup",
            format!("{} ns is longer than 1 week", meta.warmup.0),
        ));
    }
    let env = &meta.env;
    for (i, load) in env.loadavg.iter().flatten().enumerate() {
        if !(load.is_finite() && *load >= 0.0) {
            return Err(fault(
                &format!("env.loadavg[{i}]"),
                format!("{load} is not a load average"),
            ));
        }
    }
    if let Some(q) = env.cpu_quota.filter(|q| !(q.is_finite() && *q > 0.0)) {
        return Err(fault("env.cpu_quota", format!("{q} is not a CPU quota")));
    }
    Ok(())
}

fn check_trial(
    meta: &RunMeta,
    trial: &TrialRecord,
    builtin: bool,
    seen: &mut HashSet<(u32, u32)>,
) -> Result<(), Fault> {
    // The points are strictly increasing (checked first).
    if meta.points.binary_search(&trial.n).is_err() {
        return Err(fault(
            "n",
            format!(
                "N={} is not one of the run's points {:?}",
                trial.n, meta.points
            ),
        ));
    }
    if trial.index >= meta.runs {
        return Err(fault(
            "index",
            format!("{} is not below the run's {} runs", trial.index, meta.runs),
        ));
    }
    if !seen.insert((trial.n, trial.index)) {
        return Err(fault("index", "a second trial with this N and index"));
    }
    match &trial.outcome {
        TrialOutcome::Ok(m) => check_measurement(m, trial.n, builtin),
        TrialOutcome::Failed { .. } => Ok(()),
    }
}

fn check_measurement(m: &TrialMeasurement, n: u32, builtin: bool) -> Result<(), Fault> {
    if let Some(reported) = &m.reported {
        for name in reported
            .values
            .keys()
            .chain(reported.primary.iter().map(|p| &p.name))
        {
            MetricSpec::check_name(name).map_err(|why| fault("reported", why))?;
        }
    }
    if m.window.0 == 0 {
        return Err(fault("window", "0 ns; a measured window is longer than 0"));
    }
    if m.window.0 > 2 * MAX_DURATION.0 {
        return Err(fault(
            "window",
            format!("{} ns, longer than any trial lasts", m.window.0),
        ));
    }
    if m.task_ops.is_empty() {
        return Err(fault(
            "task_ops",
            "empty; a trial counts the ops of its tasks",
        ));
    }
    if builtin && m.task_ops.len() != n as usize {
        return Err(fault(
            "task_ops",
            format!("{} counts for N={n} tasks", m.task_ops.len()),
        ));
    }
    if m.task_ops
        .iter()
        .try_fold(0u64, |sum, &ops| sum.checked_add(ops))
        .is_none()
    {
        return Err(fault("task_ops", "the total overflows 64 bits"));
    }
    check_usage(&m.usage).map_err(|(f, p)| (format!("usage.{f}"), p))?;
    if builtin && m.placement.len() != n as usize {
        return Err(fault(
            "placement",
            format!("{} entries for N={n} tasks", m.placement.len()),
        ));
    }
    if let Some(cpu) = m.placement.iter().flatten().find(|&&c| c > sys::MAX_CPU) {
        return Err(fault(
            "placement",
            format!(
                "CPU {cpu} is beyond the highest CPU Linux numbers ({})",
                sys::MAX_CPU
            ),
        ));
    }
    let mut previous: Option<&model::record::SampleRecord> = None;
    for (i, s) in m.samples.iter().enumerate() {
        let field = format!("samples[{i}]");
        if s.task_ops.len() != m.task_ops.len() {
            return Err(fault(
                &field,
                format!("{} counts for {} tasks", s.task_ops.len(), m.task_ops.len()),
            ));
        }
        if s.t > m.window {
            return Err(fault(
                &field,
                format!("at {} ns, after the {} ns window", s.t.0, m.window.0),
            ));
        }
        if let Some(p) = previous {
            if s.t <= p.t {
                return Err(fault(&field, "not later than the sample before it"));
            }
            if s.task_ops
                .iter()
                .zip(&p.task_ops)
                .any(|(now, before)| now < before)
            {
                return Err(fault(&field, "a task's cumulative count went down"));
            }
        }
        previous = Some(s);
    }
    if let Some(w) = m.clock_window.filter(|w| w.end < w.start) {
        return Err(fault(
            "clock_window",
            format!("ends at {} before it starts at {}", w.end.0, w.start.0),
        ));
    }
    for (i, step) in m.steps.iter().enumerate() {
        check_usage(&step.usage).map_err(|(f, p)| (format!("steps[{i}].usage.{f}"), p))?;
        check_observed(
            &format!("steps[{i}]."),
            step.locks.as_ref(),
            step.profile.as_ref(),
        )?;
    }
    check_observed("", m.locks.as_ref(), m.profile.as_ref())?;
    if m.counters.iter().any(|c| c.event.is_empty()) {
        return Err(fault("counters", "a counter without an event name"));
    }
    Ok(())
}

/// A lock report's rows and a profile's reference, of a trial (`prefix` "") or of a step.
fn check_observed(
    prefix: &str,
    locks: Option<&LockReport>,
    profile: Option<&ProfileRef>,
) -> Result<(), Fault> {
    if let Some(locks) = locks {
        for (side, list) in [("kernel", &locks.kernel), ("user", &locks.user)] {
            for (i, c) in list.iter().enumerate() {
                if c.contentions == 0 || c.wait_min > c.wait_max || c.wait_max > c.wait_total {
                    return Err(fault(
                        &format!("{prefix}locks.{side}[{i}]"),
                        format!(
                            "{} contentions waiting min {} ≤ max {} ≤ total {} ns does not hold",
                            c.contentions, c.wait_min.0, c.wait_max.0, c.wait_total.0
                        ),
                    ));
                }
            }
        }
    }
    if let Some(p) = profile {
        if p.path.is_empty() || p.frequency == 0 {
            return Err(fault(
                &format!("{prefix}profile"),
                "a profile needs a path and a frequency",
            ));
        }
    }
    Ok(())
}

fn check_usage(u: &Usage) -> Result<(), Fault> {
    if u.user.0.checked_add(u.sys.0).is_none() {
        return Err(fault("sys", "user + sys overflows 64 bits"));
    }
    Ok(())
}
