//! Trial executors: the seam between the sweep and the process that measures.
//!
//! [`ChildExecutor`] re-executes the scalelab binary as a trial child (its own process group, so
//! a terminal's Ctrl-C reaches only the parent, which then stops the child cleanly), feeds it the
//! [`TrialSpec`] on stdin, reads the measurement from stdout, and kills the whole group at the
//! deadline — and, after every trial, whatever the trial left ([`Leftovers`]). The child (or
//! `perf record`, which then runs it) dies with scalelab ([`adopt`]), and so do its task
//! processes. [`FakeExecutor`] produces deterministic measurements for tests of everything above.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::child_io::{Tail, read_in_background, tail};
use super::spec::TrialSpec;
use crate::observer_list::{Observers, Requests};
use crate::process::leftovers::Leftovers;
use crate::process::owner::adopt;
use crate::traced_processes::Scope;
use model::record::{ClockWindow, Nanos, ProfileRef, TrialMeasurement, TrialOutcome};

/// What became of one execution.
#[derive(Debug, Clone, PartialEq)]
// One per trial, moved once: boxing the outcome would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Execution {
    /// The trial ran to an outcome: a measurement, or a failure with its reason.
    Finished(TrialOutcome),
    /// The user asked to stop; the trial was killed and measured nothing.
    Interrupted,
}

/// Runs one trial somewhere and reports its outcome. Never fails as a whole: a trial that cannot
/// run is a `Failed` outcome with the reason.
pub trait Executor {
    /// Runs `spec`; a trial still running `deadline` after it started is killed (a failed
    /// outcome), and raising `stop` kills it too ([`Execution::Interrupted`]).
    fn execute(&mut self, spec: &TrialSpec, deadline: Duration, stop: &AtomicBool) -> Execution;
}

/// Runs each trial in a fresh child process: `program args…`, spec on stdin, JSON on stdout.
#[derive(Debug, Clone)]
pub(crate) struct ChildExecutor {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Executor for ChildExecutor {
    fn execute(&mut self, spec: &TrialSpec, deadline: Duration, stop: &AtomicBool) -> Execution {
        let failed = |reason: String| Execution::Finished(TrialOutcome::Failed { reason });
        let input = match serde_json::to_vec(spec) {
            Ok(v) => v,
            Err(e) => return failed(format!("could not encode the trial spec: {e}")),
        };
        // The observers that wrap the trial child (`--profile`: perf record runs it, stdin and
        // stdout passing through); the tracers are opened inside it, before its tasks.
        let requests = Requests {
            profile: spec.profile.as_ref().map(|r| (r, r.path.as_path())),
            ..Requests::default()
        };
        let observers = Observers::open(requests, Scope::Command);
        let (program, args) = observers
            .wrap(&self.program, &self.args)
            .unwrap_or_else(|| (self.program.clone(), self.args.clone()));
        let mut command = Command::new(&program);
        command
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // Spawned on the calling thread, which waits below until the child has ended: the
        // parent-death signal fires when the spawning thread exits, so it must not be a helper.
        let mark = adopt(&mut command);
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => {
                return failed(format!(
                    "could not start the trial child {}: {e}",
                    program.display()
                ));
            }
        };
        let pid = child.id() as i32;
        let leftovers = Leftovers {
            leader: pid,
            pgid: pid,
            mark,
        };
        let started = Instant::now();
        if let Some(mut stdin) = child.stdin.take() {
            // A child that died at once is reported through its exit status below.
            let _ = stdin.write_all(&input);
        }
        let stdout = read_in_background(child.stdout.take(), Vec::new());
        let stderr = read_in_background(child.stderr.take(), Tail::default());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = loop {
            let left = deadline.saturating_sub(started.elapsed());
            match rx.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(status) => break Some(status),
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if stop.load(Ordering::SeqCst) {
                        kill_group(pid);
                        let _ = rx.recv_timeout(REAP_WAIT);
                        leftovers.kill();
                        return Execution::Interrupted;
                    }
                    if started.elapsed() >= deadline {
                        kill_group(pid);
                        let _ = rx.recv_timeout(REAP_WAIT);
                        leftovers.kill();
                        let err = stderr.finish(OUTPUT_WAIT).unwrap_or_default();
                        return failed(format!(
                            "timed out: still running after {:.1}s (warm-up + duration + margin); killed{}",
                            deadline.as_secs_f64(),
                            tail(err.bytes())
                        ));
                    }
                }
            }
        };
        // Task processes that outlived their trial child must not disturb the next trial.
        kill_group(pid);
        leftovers.kill();
        let out = stdout.finish(OUTPUT_WAIT).unwrap_or_default();
        let err = stderr.finish(OUTPUT_WAIT).unwrap_or_default();
        let err = err.bytes();
        let status = match status {
            Some(Ok(s)) => s,
            Some(Err(e)) => return failed(format!("waiting for the trial child: {e}")),
            None => return failed("lost track of the trial child".into()),
        };
        if status.success() {
            return match serde_json::from_slice::<TrialMeasurement>(&out) {
                Ok(mut m) => {
                    let window = m.clock_window.unwrap_or(ClockWindow {
                        start: Nanos(0),
                        end: Nanos(0),
                    });
                    let observed = observers.finish(window, None);
                    // The child names its task and partner threads and the partners' CPU;
                    // the file and what was sampled are the profile's.
                    let child = m.profile.take().unwrap_or_default();
                    m.profile = observed.profile.map(|p| ProfileRef {
                        path: p.path,
                        event: p.event,
                        frequency: p.frequency,
                        every_cpu: p.every_cpu,
                        ..child
                    });
                    Execution::Finished(TrialOutcome::Ok(m))
                }
                Err(e) => failed(format!(
                    "the trial child's output is not a measurement ({e}){}",
                    tail(err)
                )),
            };
        }
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("trial child exited with status {code}"),
            (None, Some(sig)) => format!("trial child was killed by {}", sys::signal_name(sig)),
            _ => "trial child ended abnormally".to_string(),
        };
        failed(format!("{how}{}", tail(err)))
    }
}

/// How long a killed trial child may take to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// How long the trial child's output may take to reach end of file once the child has ended
/// and its leftovers are killed (immediate, unless something outside scalelab holds a pipe).
const OUTPUT_WAIT: Duration = Duration::from_secs(2);

fn kill_group(pid: i32) {
    // ESRCH (the group is already gone) is the normal case.
    let _ = sys::send_signal(-pid, libc::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::spec::{BuiltinWork, Work};
    use model::record::Nanos;

    fn spin_trial() -> TrialSpec {
        TrialSpec {
            tasks: 1,
            work: Work::Builtin(BuiltinWork {
                workload: "spin".into(),
                params: Default::default(),
                mode: model::record::Mode::Threads,
                pin: model::record::Pin::None,
                membind: model::record::Membind::FirstTouch,
                warmup: Nanos(0),
                duration: Nanos(1_000_000),
                sample_interval: Nanos(1_000_000),
                counters: false,
                workdir: None,
            }),
            locks: None,
            offcpu: None,
            profile: None,
        }
    }

    #[test]
    fn a_missing_binary_fails_the_trial_not_the_run() {
        let mut exec = ChildExecutor {
            program: "/nonexistent/scalelab".into(),
            args: vec![],
        };
        let spec = spin_trial();
        match exec.execute(&spec, Duration::from_secs(5), &AtomicBool::new(false)) {
            Execution::Finished(TrialOutcome::Failed { reason }) => {
                assert!(reason.contains("could not start"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_hung_child_is_killed_at_its_deadline() {
        let mut exec = ChildExecutor {
            program: "/bin/sleep".into(),
            args: vec!["30".into()],
        };
        let spec = spin_trial();
        let t = Instant::now();
        match exec.execute(&spec, Duration::from_millis(300), &AtomicBool::new(false)) {
            Execution::Finished(TrialOutcome::Failed { reason }) => {
                assert!(reason.contains("timed out"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}
