//! External-command trials: `--cmd 'make -j{n}'` with optional `--prepare`, `--step NAME=CMD`
//! and `--cleanup`, each run by `sh -c` ([`run_step`]) with its CPU affinity limited to the
//! point's N CPUs — and so are, for the trial, scalelab's own threads that start, wait for and
//! read it.
//!
//! A trial is: prepare (not timed) → the command and every step in order (each timed, each
//! accounted for its whole process tree through wait4, like the csh `time` lines) → cleanup (not
//! timed, also run after a failed step). The op count is one completion per trial, a fixed
//! `--ops N`, or the first capture group (or whole match) of `--ops-regex` in the first line of
//! the steps' stdout that it matches ([`ops_regex`]). A non-zero exit or a timeout fails the
//! trial with the exit status and the tail of stderr; the sweep goes on. What a step leaves
//! running is killed when it ends, except what a successful `--prepare` started (a server the
//! timed steps use), killed when the trial ends, after cleanup.
//!
//! Limits: prepare and the timed steps share the trial's `--timeout`; cleanup has its own. A
//! Ctrl-C kills whatever runs; cleanup still runs after it (a second Ctrl-C or its `--timeout`
//! ends it), and a Ctrl-C during a finished trial's cleanup keeps the trial's measurement.
//!
//! Attribution is per timed step (prepare and cleanup are not observed): with `--profile` each
//! step of a profiled trial runs under `perf record` into its own perf.data (exactly its process
//! tree inside its wall time); with `--locks` a lock tracer opened just before the step sees its
//! whole tree and keeps the waits that ended inside the step's CLOCK_MONOTONIC window. Each
//! [`StepRecord`] carries its profile and lock report; the main command's (`cmd`) are also the
//! trial's, so `profile RUN` and `locks RUN` read the main command without `--step`.
//! read the main command without `--step`.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use regex::bytes::Regex;

use super::executor::{Execution, Executor};
use super::ops_regex;
use super::placement;
use super::spec::{CommandSpec, OpsSource, TrialSpec};
use super::step::{AfterStep, StepError, Watched, run_step};
use super::system::System;
use crate::error::LabError;
use crate::observer_list::{Observers, Requests};
use crate::process::leftovers::Leftovers;
use crate::process::owner::adopt;
use crate::traced_processes::Scope;
use model::metric;
use model::record::{
    ClockWindow, Nanos, SampleRecord, StepRecord, TrialMeasurement, TrialOutcome, Usage,
};

impl CommandSpec {
    /// Refuses, before any trial runs, what certainly cannot run: an empty command, a shell
    /// syntax error (`sh -n`), a first word that names no command (looked up only when it is a
    /// plain word — not an assignment, a subshell, a keyword, a redirection or quoted), and an
    /// `--ops-regex` that does not compile.
    pub(crate) fn validate(&self) -> Result<(), LabError> {
        if let OpsSource::Regex(re) = &self.ops {
            ops_regex::compile(re).map_err(LabError::BadOption)?;
        }
        let mut names = std::collections::HashSet::new();
        for m in &self.metrics {
            ops_regex::compile(&m.pattern)
                .map_err(|e| LabError::BadOption(format!("--metric {}: {e}", m.name)))?;
            if !names.insert(m.name.as_str()) {
                return Err(LabError::BadOption(format!(
                    "--metric {}: given twice; give each metric a name of its own",
                    m.name
                )));
            }
        }
        let all = self
            .steps
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_str()))
            .chain(self.prepare.iter().map(|c| ("--prepare", c.as_str())))
            .chain(self.cleanup.iter().map(|c| ("--cleanup", c.as_str())))
            .chain(self.system.servers.iter().map(|c| ("--server", c.as_str())))
            .chain(self.system.ready.iter().map(|c| ("--ready", c.as_str())));
        super::system::check_attached(&self.system).map_err(LabError::BadOption)?;
        for (name, cmd) in all {
            let text = cmd.replace("{n}", "1");
            if text.trim().is_empty() {
                return Err(LabError::BadOption(format!("{name}: the command is empty")));
            }
            let syntax = shell(&["-n", "-c", &text], self.dir.as_deref())?;
            if !syntax.status.success() {
                return Err(LabError::BadOption(format!(
                    "{name}: `{cmd}` is not valid shell syntax ({}); check its quoting and brackets",
                    String::from_utf8_lossy(&syntax.stderr).trim()
                )));
            }
            let Some(first) = plain_first_word(&text) else {
                continue;
            };
            if !shell(
                &["-c", "command -v \"$1\" >/dev/null 2>&1", "sh", first],
                self.dir.as_deref(),
            )?
            .status
            .success()
            {
                return Err(LabError::BadOption(format!(
                    "{name}: `{first}` is not a command here (not found in PATH, not a shell builtin); check the spelling or give its full path"
                )));
            }
        }
        Ok(())
    }
}

/// Runs `sh ARGS…` to completion (in `dir` when given), as every child of scalelab (see
/// [`adopt`]).
fn shell(args: &[&str], dir: Option<&std::path::Path>) -> Result<std::process::Output, LabError> {
    let mut sh = Command::new("sh");
    sh.args(args).stdin(Stdio::null());
    if let Some(dir) = dir {
        sh.current_dir(dir);
    }
    adopt(&mut sh);
    sh.output()
        .map_err(|e| LabError::io("running sh to check the command", e))
}

/// The command's first word when it is a plain word naming a program or builtin, `None` when it
/// is anything else the shell accepts first: an assignment (`CC=clang make`), a subshell or
/// group, a reserved word, a redirection, quoting or an expansion.
fn plain_first_word(text: &str) -> Option<&str> {
    const RESERVED: &[&str] = &[
        "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
        "in", "function", "select", "time", "coproc",
    ];
    let first = text.split_whitespace().next()?;
    let plain = first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./+-@%,:".contains(c));
    (plain && !RESERVED.contains(&first)).then_some(first)
}

/// Runs command trials directly (the command is the trial's child process), with the servers
/// of the system under test running beside it ([`System`]), stopped when this is dropped.
#[derive(Debug, Default)]
pub struct CommandExecutor {
    system: Option<System>,
}

/// The calling thread's CPU affinity narrowed to a set while this lives (threads it spawns
/// inherit it), restored on drop.
struct ConfinedThread {
    previous: Vec<usize>,
}

impl ConfinedThread {
    fn to(cpus: &[usize]) -> Result<ConfinedThread, String> {
        let previous =
            sys::current_affinity().map_err(|e| format!("reading scalelab's CPU affinity: {e}"))?;
        if !cpus.is_empty() {
            sys::set_current_affinity(cpus)
                .map_err(|e| format!("confining scalelab to CPUs {cpus:?}: {e}"))?;
        }
        Ok(ConfinedThread { previous })
    }
}

impl Drop for ConfinedThread {
    fn drop(&mut self) {
        // Best effort: the set was ours a moment ago, so only a CPU going offline can refuse.
        let _ = sys::set_current_affinity(&self.previous);
    }
}

impl Executor for CommandExecutor {
    fn execute(&mut self, spec: &TrialSpec, deadline: Duration, stop: &AtomicBool) -> Execution {
        let Some(cmd) = spec.command() else {
            return Execution::Finished(TrialOutcome::Failed {
                reason: "internal: a command trial without a command".into(),
            });
        };
        let usable = match placement::cpu_order() {
            Ok(order) => order,
            Err(e) => {
                return Execution::Finished(TrialOutcome::Failed {
                    reason: e.to_string(),
                });
            }
        };
        let cpus: Vec<usize> = usable.iter().copied().take(spec.tasks as usize).collect();
        // The servers start (or are checked) before this thread is confined, and are then
        // placed on the CPUs --server-cpus says.
        let system = self
            .system
            .get_or_insert_with(|| System::new(cmd.system.clone(), cmd.dir.clone()));
        match system.ready_for(spec.tasks, stop) {
            Ok(true) => {}
            Ok(false) => return Execution::Interrupted,
            Err(reason) => return Execution::Finished(TrialOutcome::Failed { reason }),
        }
        system.place(&cpus, &usable);
        let system: &System = system;
        // Every step inherits this thread's affinity, and the threads that wait for and read the
        // command run on its CPUs too, for the whole trial: left free to run elsewhere they made
        // the measured speed depend on the scalelab process (`ab` A/B ratios varied between
        // invocations, F = 1.32–1.43 over 60 invocations of 10 pairs; confined, F = 0.91).
        let _confined = match ConfinedThread::to(&cpus) {
            Ok(guard) => guard,
            Err(why) => return Execution::Finished(TrialOutcome::Failed { reason: why }),
        };
        let (ops_re, metric_res) = match output_patterns(cmd) {
            Ok(patterns) => patterns,
            Err(reason) => return Execution::Finished(TrialOutcome::Failed { reason }),
        };
        let watched = Watched {
            ops: ops_re.as_ref(),
            metrics: metric_res
                .iter()
                .zip(&cmd.metrics)
                .map(|(re, m)| (re, m.from == metric::OutputStream::Stderr))
                .collect(),
        };
        let mut metric_found: Vec<Option<(String, String)>> = vec![None; cmd.metrics.len()];
        let n = spec.tasks.to_string();
        let started = Instant::now();
        let left = || deadline.saturating_sub(started.elapsed());
        // Declared before the steps, dropped after cleanup on every path out.
        let mut services = PrepareServices(None);
        if let Some(prepare) = &cmd.prepare {
            match run_step(
                &prepare.replace("{n}", &n),
                cmd.dir.as_deref(),
                left(),
                stop,
                &Watched::default(),
                AfterStep::KeepRunning,
                None,
            ) {
                Ok(r) => services.0 = r.running,
                Err(StepError::Interrupted) => {
                    cleanup_after_stop(cmd, &n, deadline, stop);
                    return Execution::Interrupted;
                }
                Err(StepError::Failed(why)) => {
                    return Execution::Finished(TrialOutcome::Failed {
                        reason: format!("--prepare: {why}"),
                    });
                }
            }
        }
        let mut steps = Vec::new();
        let mut found = Vec::new();
        let mut failure = None;
        for (i, (name, command)) in cmd.steps.iter().enumerate() {
            let command = command.replace("{n}", &n);
            match timed_step(spec, (i, name), &command, left(), stop, (&watched, system)) {
                Ok((step, op_match, metrics)) => {
                    found.push(op_match);
                    // The first step whose output a metric matches gives its value.
                    for (slot, m) in metric_found.iter_mut().zip(metrics) {
                        if slot.is_none() {
                            *slot = m;
                        }
                    }
                    steps.push(step);
                }
                Err(StepError::Interrupted) => {
                    cleanup_after_stop(cmd, &n, deadline, stop);
                    return Execution::Interrupted;
                }
                Err(StepError::Failed(why)) => {
                    failure = Some(format!("step `{name}`: {why}"));
                    break;
                }
            }
        }
        run_cleanup(cmd, &n, deadline, stop);
        if let Some(reason) = failure {
            return Execution::Finished(TrialOutcome::Failed { reason });
        }
        Execution::Finished(command_measurement(cmd, steps, found, &metric_found, &cpus))
    }
}

/// The command's `--ops-regex` and `--metric` patterns, compiled (a pattern that does not
/// compile fails the trial with the reason).
fn output_patterns(cmd: &CommandSpec) -> Result<(Option<Regex>, Vec<Regex>), String> {
    let ops = match &cmd.ops {
        OpsSource::Regex(pattern) => Some(ops_regex::compile(pattern)?),
        _ => None,
    };
    let metrics = cmd
        .metrics
        .iter()
        .map(|m| ops_regex::compile(&m.pattern))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ops, metrics))
}

/// A timed step's record, the op count's match in its output, and each metric's (text, line).
type TimedStep = (StepRecord, Option<String>, Vec<Option<(String, String)>>);

/// Timed step `i` of a trial (`command`, `{n}` already replaced) with the trial's observers:
/// its record, the op count's match in its output and each metric's (text, line).
fn timed_step(
    spec: &TrialSpec,
    (i, name): (usize, &str),
    command: &str,
    limit: Duration,
    stop: &AtomicBool,
    (watched, system): (&Watched<'_>, &System),
) -> Result<TimedStep, StepError> {
    let cmd_dir = spec.command().and_then(|c| c.dir.as_deref());
    let profile = spec
        .profile
        .as_ref()
        .and_then(|req| req.steps.get(i).map(|path| (req, path.as_path())));
    let requests = Requests {
        profile,
        locks: spec.locks,
        offcpu: spec.offcpu,
    };
    let mut observers = Observers::open(requests, Scope::Command);
    observers.follow_system(&system.processes());
    let clock_start = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
    observers.window_opens(clock_start);
    let r = run_step(
        command,
        cmd_dir,
        limit,
        stop,
        watched,
        AfterStep::Kill,
        Some(&mut observers),
    )?;
    let clock_end = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
    let window = ClockWindow {
        start: Nanos(clock_start),
        end: Nanos(clock_end),
    };
    let observed = observers.finish(window, None);
    let step = StepRecord {
        name: name.to_string(),
        wall: Nanos::from_duration(r.wall),
        wrapper_wall: r.wrapper_wall.map(Nanos::from_duration),
        usage: r.usage,
        perf_record_cpu: r.perf_record_cpu,
        profile: observed.profile,
        locks: observed.locks,
        offcpu: observed.offcpu,
    };
    Ok((step, r.found, r.metrics))
}

/// The trial's measurement from its steps: the op count (one completion, `--ops N`, or what
/// `--ops-regex` read), the metrics' values, and the steps' summed wall time and usage.
fn command_measurement(
    cmd: &CommandSpec,
    steps: Vec<StepRecord>,
    found: Vec<Option<String>>,
    metric_found: &[Option<(String, String)>],
    cpus: &[usize],
) -> TrialOutcome {
    let ops = match &cmd.ops {
        OpsSource::Completion => 1,
        OpsSource::Fixed(k) => *k,
        OpsSource::Regex(pattern) => match ops_regex::ops_from_matches(pattern, found) {
            Ok(k) => k,
            Err(reason) => return TrialOutcome::Failed { reason },
        },
    };
    let reported = match metric::values(&cmd.metrics, metric_found) {
        Ok(values) => (!cmd.metrics.is_empty()).then(|| model::record::Reported {
            values: cmd
                .metrics
                .iter()
                .map(|m| m.name.clone())
                .zip(values)
                .collect(),
            primary: cmd.metrics.first().filter(|_| !cmd.ops_primary).cloned(),
        }),
        Err(reason) => return TrialOutcome::Failed { reason },
    };
    let window = Nanos(steps.iter().map(|s| s.wall.0).sum());
    let usage = steps
        .iter()
        .fold(Usage::default(), |acc, s| acc.add(&s.usage));
    TrialOutcome::Ok(TrialMeasurement {
        window,
        task_ops: vec![ops],
        usage,
        counters: Vec::new(),
        extras: Default::default(),
        placement: cpus.iter().map(|&c| Some(c)).collect(),
        samples: vec![SampleRecord {
            t: window,
            task_ops: vec![ops],
        }],
        clock_window: None,
        // The main command's: what `profile RUN` and `locks RUN` read without `--step`.
        profile: steps.first().and_then(|s| s.profile.clone()),
        locks: steps.first().and_then(|s| s.locks.clone()),
        offcpu: steps.first().and_then(|s| s.offcpu.clone()),
        harness: None,
        reported,
        steps,
    })
}

/// What `--prepare` left running (a server the timed steps use): killed when the trial ends,
/// after cleanup, however the trial ends.
struct PrepareServices(Option<Leftovers>);

impl Drop for PrepareServices {
    fn drop(&mut self) {
        if let Some(running) = self.0.take() {
            running.kill();
        }
    }
}

/// Runs `--cleanup`, if any, with a `--timeout` of its own and obeying `stop`. Its failure is
/// not the trial's: cleanup is not measured, and the trial's result stands.
fn run_cleanup(cmd: &CommandSpec, n: &str, limit: Duration, stop: &AtomicBool) {
    if let Some(cleanup) = &cmd.cleanup {
        let _ = run_step(
            &cleanup.replace("{n}", n),
            cmd.dir.as_deref(),
            limit,
            stop,
            &Watched::default(),
            AfterStep::Kill,
            None,
        );
    }
}

/// Cleanup after a Ctrl-C (or SIGTERM) stopped the trial: it still runs, but the stop flag is
/// lowered for it so that a second Ctrl-C ends it, then raised again for the caller. (A second
/// signal in the instant between the step's end and the lowering is not seen.)
fn cleanup_after_stop(cmd: &CommandSpec, n: &str, limit: Duration, stop: &AtomicBool) {
    if cmd.cleanup.is_none() {
        return;
    }
    stop.store(false, Ordering::SeqCst);
    run_cleanup(cmd, n, limit, stop);
    stop.store(true, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_step(cmd: &str) -> CommandSpec {
        CommandSpec::one_step(cmd)
    }

    #[test]
    fn the_pre_check_accepts_valid_shell_it_cannot_look_up() {
        // Assignments, subshells, groups, keywords, negation, redirections first, pipelines:
        // all valid shell whose first word is no program to look up (make need not exist).
        for ok in [
            "FOO=1 true",
            "(true)",
            "CC=clang make -j{n}",
            "{ true; }",
            "if true; then :; fi",
            "! false",
            ">/dev/null true",
            "true | cat",
            "cd / && true",
            "\"true\" {n}",
        ] {
            let checked = one_step(ok).validate();
            assert!(checked.is_ok(), "`{ok}` refused: {checked:?}");
        }
        // What certainly cannot run is still refused, naming the cause.
        for (bad, why) in [
            ("no-such-program-xyz {n}", "no-such-program-xyz"),
            ("true (", "syntax"),
            ("if true; then", "syntax"),
            ("   ", "empty"),
        ] {
            let err = one_step(bad).validate().unwrap_err().to_string();
            assert!(err.contains(why), "`{bad}`: {err}");
        }
    }

    #[test]
    fn missing_programs_are_caught_before_running() {
        let spec = one_step("no-such-program-xyz {n}");
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .contains("no-such-program-xyz")
        );
        let spec = CommandSpec {
            steps: vec![("cmd".into(), "true".into())],
            prepare: Some("echo hi".into()),
            cleanup: None,
            ops: OpsSource::Regex("(".into()),
            dir: None,
            metrics: Vec::new(),
            ops_primary: false,
            system: Default::default(),
        };
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .contains("--ops-regex")
        );
    }
}
