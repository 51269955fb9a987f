//! External-command trials: `--cmd 'make -j{n}'` with optional `--prepare`, `--step NAME=CMD`
//! and `--cleanup`, each run by `sh -c` with its CPU affinity limited to the point's N CPUs —
//! and so are, for the trial, scalelab's own threads that start, wait for and read it.
//!
//! A trial is: prepare (not timed) → the command and every step in order (each timed, each
//! accounted for its whole process tree through wait4, like the csh `time` lines) → cleanup (not
//! timed, also run after a failed step). The op count is one completion per trial, a fixed
//! `--ops N`, or the first capture group (or whole match) of `--ops-regex` in the command's
//! stdout. A non-zero exit or a timeout fails the trial with the exit status and the tail of
//! stderr; the sweep goes on.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::child_io::{read_in_background, tail};
use super::executor::{Execution, Executor};
use super::placement;
use super::trial::TrialSpec;
use crate::error::LabError;
use crate::model::{Nanos, SampleRecord, StepRecord, TrialMeasurement, TrialOutcome, Usage};
use crate::runner::control::to_usage;

/// How a command trial counts its ops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsSource {
    /// One op per trial: throughput is 1 / wall.
    Completion,
    /// A known amount of work per trial.
    Fixed(u64),
    /// Read from the timed steps' stdout.
    Regex(String),
}

/// An external-command workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Timed steps in order, `(name, command)`; the first is `--cmd` itself, named `cmd`.
    pub steps: Vec<(String, String)>,
    pub prepare: Option<String>,
    pub cleanup: Option<String>,
    pub ops: OpsSource,
}

impl CommandSpec {
    /// Checks that every command's program exists and the regex compiles, before any trial runs.
    pub fn validate(&self) -> Result<(), LabError> {
        if let OpsSource::Regex(re) = &self.ops {
            regex::Regex::new(re)
                .map_err(|e| LabError::BadOption(format!("--ops-regex `{re}`: {e}")))?;
        }
        let all = self
            .steps
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_str()))
            .chain(self.prepare.iter().map(|c| ("--prepare", c.as_str())))
            .chain(self.cleanup.iter().map(|c| ("--cleanup", c.as_str())));
        for (name, cmd) in all {
            let program = cmd.replace("{n}", "1");
            let first = program
                .split_whitespace()
                .next()
                .ok_or_else(|| LabError::BadOption(format!("{name}: the command is empty")))?;
            let found = Command::new("sh")
                .args(["-c", "command -v \"$1\" >/dev/null 2>&1", "sh", first])
                .stdin(Stdio::null())
                .status()
                .map_err(|e| LabError::io("running sh to look the command up", e))?;
            if !found.success() {
                return Err(LabError::BadOption(format!(
                    "{name}: `{first}` is not a command here (not found in PATH, not a shell builtin); check the spelling or give its full path"
                )));
            }
        }
        Ok(())
    }
}

/// Runs command trials directly (the command is the trial's child process).
#[derive(Debug, Default)]
pub struct CommandExecutor;

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

struct StepResult {
    wall: Duration,
    usage: Usage,
    stdout: Vec<u8>,
}

impl Executor for CommandExecutor {
    fn execute(&mut self, spec: &TrialSpec, deadline: Duration, stop: &AtomicBool) -> Execution {
        let Some(cmd) = &spec.command else {
            return Execution::Finished(TrialOutcome::Failed {
                reason: "internal: a command trial without a command".into(),
            });
        };
        let cpus = match placement::cpu_order() {
            Ok(order) => order
                .into_iter()
                .take(spec.tasks as usize)
                .collect::<Vec<_>>(),
            Err(e) => {
                return Execution::Finished(TrialOutcome::Failed {
                    reason: e.to_string(),
                });
            }
        };
        // Every step inherits this thread's affinity, and the threads that wait for and read the
        // command run on its CPUs too, for the whole trial: left free to run elsewhere they made
        // the measured speed depend on the scalelab process (`ab` A/B ratios varied between
        // invocations, F = 1.32–1.43 over 60 invocations of 10 pairs; confined, F = 0.91).
        let _confined = match ConfinedThread::to(&cpus) {
            Ok(guard) => guard,
            Err(why) => return Execution::Finished(TrialOutcome::Failed { reason: why }),
        };
        let n = spec.tasks.to_string();
        let started = Instant::now();
        let left = || deadline.saturating_sub(started.elapsed());
        if let Some(prepare) = &cmd.prepare {
            match run_step(&prepare.replace("{n}", &n), left(), stop, false) {
                Ok(_) => {}
                Err(StepError::Interrupted) => return Execution::Interrupted,
                Err(StepError::Failed(why)) => {
                    return Execution::Finished(TrialOutcome::Failed {
                        reason: format!("--prepare: {why}"),
                    });
                }
            }
        }
        let mut steps = Vec::new();
        let mut stdout = Vec::new();
        let mut failure = None;
        for (name, command) in &cmd.steps {
            match run_step(
                &command.replace("{n}", &n),
                left(),
                stop,
                matches!(cmd.ops, OpsSource::Regex(_)),
            ) {
                Ok(r) => {
                    stdout.extend_from_slice(&r.stdout);
                    steps.push(StepRecord {
                        name: name.clone(),
                        wall: Nanos::from_duration(r.wall),
                        usage: r.usage,
                    });
                }
                Err(StepError::Interrupted) => {
                    run_cleanup(cmd, &n);
                    return Execution::Interrupted;
                }
                Err(StepError::Failed(why)) => {
                    failure = Some(format!("step `{name}`: {why}"));
                    break;
                }
            }
        }
        run_cleanup(cmd, &n);
        if let Some(reason) = failure {
            return Execution::Finished(TrialOutcome::Failed { reason });
        }
        let ops = match &cmd.ops {
            OpsSource::Completion => 1,
            OpsSource::Fixed(k) => *k,
            OpsSource::Regex(re) => match ops_from_output(re, &stdout) {
                Ok(k) => k,
                Err(reason) => return Execution::Finished(TrialOutcome::Failed { reason }),
            },
        };
        let window = Nanos(steps.iter().map(|s| s.wall.0).sum());
        let usage = steps
            .iter()
            .fold(Usage::default(), |acc, s| acc.add(&s.usage));
        Execution::Finished(TrialOutcome::Ok(TrialMeasurement {
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
            steps,
            clock_window: None,
            profile: None,
            locks: None,
        }))
    }
}

fn run_cleanup(cmd: &CommandSpec, n: &str) {
    if let Some(cleanup) = &cmd.cleanup {
        // A failing cleanup must not hide the trial's own result; its stderr still reaches the user.
        let _ = run_step(
            &cleanup.replace("{n}", n),
            Duration::from_secs(3600),
            &AtomicBool::new(false),
            false,
        );
    }
}

/// The count from `re` in `out`: the first capture group if there is one, else the whole match.
fn ops_from_output(re: &str, out: &[u8]) -> Result<u64, String> {
    let re = regex::Regex::new(re).map_err(|e| format!("--ops-regex: {e}"))?;
    let text = String::from_utf8_lossy(out);
    let caps = re
        .captures(&text)
        .ok_or_else(|| format!("--ops-regex `{re}` did not match the command's output"))?;
    let m = caps
        .get(1)
        .or_else(|| caps.get(0))
        .map(|m| m.as_str())
        .unwrap_or("");
    m.trim()
        .replace(',', "")
        .parse::<u64>()
        .map_err(|_| format!("--ops-regex `{re}` matched `{m}`, which is not a whole number"))
}

enum StepError {
    Interrupted,
    Failed(String),
}

/// Runs `sh -c command` in its own process group, waits (wait4) up to `limit`. The child
/// inherits the calling thread's affinity: the caller holds a [`ConfinedThread`].
fn run_step(
    command: &str,
    limit: Duration,
    stop: &AtomicBool,
    capture: bool,
) -> Result<StepResult, StepError> {
    let spawned = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(if capture {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start sh: {e}"));
    let mut child = spawned.map_err(StepError::Failed)?;
    let started = Instant::now();
    let pid = child.id() as i32;
    let out = read_in_background(child.stdout.take());
    let err = read_in_background(child.stderr.take());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(sys::wait_child(pid));
    });
    let exit = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StepError::Failed("lost track of the command".into()));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::SeqCst) {
                    let _ = sys::send_signal(-pid, libc::SIGKILL);
                    let _ = rx.recv();
                    return Err(StepError::Interrupted);
                }
                if started.elapsed() >= limit {
                    let _ = sys::send_signal(-pid, libc::SIGKILL);
                    let _ = rx.recv();
                    return Err(StepError::Failed(format!(
                        "timed out after {:.1}s (--timeout); killed{}",
                        limit.as_secs_f64(),
                        tail(&err.recv().unwrap_or_default())
                    )));
                }
            }
        }
    };
    let wall = started.elapsed();
    let exit = exit.map_err(|e| StepError::Failed(format!("waiting for the command: {e}")))?;
    let stdout = out.recv().unwrap_or_default();
    let stderr = err.recv().unwrap_or_default();
    match exit.status {
        sys::ExitKind::Exited(0) => Ok(StepResult {
            wall,
            usage: to_usage(&exit.usage),
            stdout,
        }),
        status => Err(StepError::Failed(format!(
            "`{command}` {status}{}",
            tail(&stderr)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_read_from_output() {
        assert_eq!(
            ops_from_output(r"done (\d+) items", b"x\ndone 1234 items\n").unwrap(),
            1234
        );
        assert_eq!(ops_from_output(r"\d+", b"a 7 b").unwrap(), 7);
        assert!(
            ops_from_output(r"(\d+) files", b"none")
                .unwrap_err()
                .contains("did not match")
        );
        assert!(
            ops_from_output(r"(\w+) files", b"some files")
                .unwrap_err()
                .contains("not a whole number")
        );
    }

    #[test]
    fn missing_programs_are_caught_before_running() {
        let spec = CommandSpec {
            steps: vec![("cmd".into(), "no-such-program-xyz {n}".into())],
            prepare: None,
            cleanup: None,
            ops: OpsSource::Completion,
        };
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
        };
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .contains("--ops-regex")
        );
    }
}
