//! One shell step of a command trial (prepare, a timed step, cleanup): `sh -c CMD` in its own
//! process group, started as every child of scalelab is ([`adopt`]: marked, dying with
//! scalelab), waited for with `wait4` (the whole tree's accounting) until it exits, its limit
//! passes or the stop flag is raised. Then, however it ended, everything it left running is
//! killed ([`Leftovers`]) — a background job ignoring SIGTERM, a `setsid`'d or double-forked
//! grandchild — and its output is collected within a bounded wait, so a process still holding
//! the step's pipes cannot hang the run.
//!
//! A timed step may be observed by the trial's [`Observers`] ([`crate::observer`]), opened on
//! this thread just before the spawn: one that wraps (`--profile`) runs it as `perf record …
//! -- sh -c CMD` (perf follows the whole tree across fork and exec, into a perf.data of the
//! step's own), and those that need draining (`--locks`, `--offcpu`: inherited by the step
//! from its first instruction) are drained every few milliseconds while the step runs.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use regex::bytes::Regex;

use std::path::Path;

use super::child_io::{Reader, Tail, read_in_background, tail};
use super::control::to_usage;
use super::ops_regex::{FirstMatch, Watch};
use crate::observer_list::Observers;
use crate::process::leftovers::Leftovers;
use crate::process::owner::adopt;
use model::record::Usage;

/// How often the stop flag and the limit are checked while a step runs.
const TICK: Duration = Duration::from_millis(100);

/// How often a lock tracer's ring buffers are drained while a traced step runs.
const LOCK_DRAIN_EVERY: Duration = Duration::from_millis(10);
/// How often while a drain keeps finding more than [`BUSY_DRAIN`] futex waits: a futex
/// wait's record carries its stack copy, and a ring holds about a thousand.
const BUSY_DRAIN_EVERY: Duration = Duration::from_millis(2);
/// Futex waits read by one drain that make the next one come sooner.
const BUSY_DRAIN: u64 = 128;

/// How long a killed shell may take to be reaped (it cannot block SIGKILL, but a process in
/// uninterruptible sleep dies only when the kernel lets it).
const REAP_WAIT: Duration = Duration::from_secs(5);

/// After the step, how long its output may still take to reach end of file: the time left
/// before its limit, but at least [`MIN_OUTPUT_WAIT`] (to read what is already in the pipes)
/// and at most [`MAX_OUTPUT_WAIT`]. Once every writer is gone this returns at once; the wait
/// only runs out when a process outside scalelab's reach holds a pipe open.
const MIN_OUTPUT_WAIT: Duration = Duration::from_millis(200);
const MAX_OUTPUT_WAIT: Duration = Duration::from_secs(2);

/// `usage` of a tree with `perf record`'s own CPU (`observer`) taken out. Its peak memory is
/// then not the command's: `perf record` is the waited process, and its own buffers would be
/// the largest resident set, so it is left unmeasured.
fn without_observer(mut usage: Usage, observer: Option<sys::OwnCpu>) -> Usage {
    if let Some(o) = observer {
        usage.user.0 = usage.user.0.saturating_sub(o.user_ns);
        usage.sys.0 = usage.sys.0.saturating_sub(o.sys_ns);
        usage.max_rss_kib = None;
    }
    usage
}

/// What a step's output is watched for: the op count (stdout) and each `--metric` (stdout or
/// stderr).
#[derive(Debug, Default)]
pub(super) struct Watched<'a> {
    pub ops: Option<&'a Regex>,
    /// Each metric's regex and whether it reads stderr.
    pub metrics: Vec<(&'a Regex, bool)>,
}

impl Watched<'_> {
    fn stdout(&self) -> bool {
        self.ops.is_some() || self.metrics.iter().any(|(_, err)| !err)
    }
}

/// A step that exited 0.
#[derive(Debug)]
pub(super) struct StepResult {
    /// From the command's start to its exit; under `--profile`, its own, as perf saw it.
    pub wall: Duration,
    /// Under `--profile`, when the command's own span was read: `perf record`'s wall.
    pub wrapper_wall: Option<Duration>,
    /// The step's tree; under `--profile` without `perf record`'s own CPU.
    pub usage: Usage,
    /// What `perf record` used itself, when the step was profiled.
    pub perf_record_cpu: Option<model::record::Nanos>,
    /// The `--ops-regex` match in its stdout, when one was asked for and found.
    pub found: Option<String>,
    /// Each `--metric`'s first match (text, line), in [`Watched::metrics`] order.
    pub metrics: Vec<Option<(String, String)>>,
    /// With [`AfterStep::KeepRunning`]: what the step left running, for the caller to end.
    pub running: Option<Leftovers>,
}

/// What becomes of the processes a step leaves running once it exits 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterStep {
    /// Killed at once (timed steps, cleanup).
    Kill,
    /// Left running for the caller, who kills them ([`Leftovers::kill`]) when the trial ends:
    /// `--prepare` may start a service the timed steps use. A step that fails or is
    /// interrupted is cleaned up at once either way.
    KeepRunning,
}

#[derive(Debug)]
pub(super) enum StepError {
    /// The stop flag was raised; the step was killed.
    Interrupted,
    /// It exited non-zero, was killed at its limit, or could not run; the reason says which.
    Failed(String),
}

/// Runs `sh -c command` up to `limit` (see the module doc), in `dir` when given. The child
/// inherits the calling thread's CPU affinity. With `watched`, stdout is watched for the op
/// count and it and stderr for the metrics;
/// otherwise discarded.
pub(super) fn run_step(
    command: &str,
    dir: Option<&Path>,
    limit: Duration,
    stop: &AtomicBool,
    watched: &Watched<'_>,
    after: AfterStep,
    mut observers: Option<&mut Observers>,
) -> Result<StepResult, StepError> {
    let (mut sh, wrapped) = step_command(command, observers.as_deref());
    sh.stdin(Stdio::null())
        .stdout(if watched.stdout() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = dir {
        sh.current_dir(dir);
    }
    // Spawned on the calling thread, which waits below until the step has ended: the
    // parent-death signal fires when the spawning thread exits, so it must not be a helper.
    let mark = adopt(&mut sh);
    let mut child = sh.spawn().map_err(|e| {
        let program = sh.get_program().to_string_lossy();
        StepError::Failed(format!("could not start {program}: {e}"))
    })?;
    let started = Instant::now();
    let pid = child.id() as i32;
    if wrapped && let Some(o) = observers.as_deref_mut() {
        // A wrapper's (perf record's) own waits are not the command's.
        o.exclude(child.id());
    }
    let tick = if observers.as_ref().is_some_and(|o| o.needs_draining()) {
        LOCK_DRAIN_EVERY
    } else {
        TICK
    };
    let leftovers = Leftovers {
        leader: pid,
        pgid: pid,
        mark,
    };
    let (out, err) = watch_output(&mut child, watched);
    let (tx, rx) = mpsc::channel();
    // A wrapper's (perf record's) own CPU, read before it is reaped, is not the command's.
    std::thread::spawn(move || {
        let _ = tx.send(if wrapped {
            sys::wait_child_own_cpu(pid)
        } else {
            sys::wait_child(pid).map(|exit| (exit, None))
        });
    });
    let ended = loop {
        let mut wait = tick;
        if let Some(o) = observers.as_deref_mut()
            && o.drain() > BUSY_DRAIN
        {
            wait = BUSY_DRAIN_EVERY;
        }
        match rx.recv_timeout(wait) {
            Ok(exit) => break Ok(exit),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(StepError::Failed("lost track of the command".into()));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(why) = stopped_or_late(stop, started, limit) {
                    break Err(why);
                }
            }
        }
    };
    let wall = started.elapsed();
    if ended.is_err() {
        // ESRCH (the group is already gone) is fine.
        let _ = sys::send_signal(-pid, libc::SIGKILL);
        let _ = rx.recv_timeout(REAP_WAIT);
    }
    let keep = ended.as_ref().is_ok_and(|exit| {
        after == AfterStep::KeepRunning && exit.as_ref().is_ok_and(|e| e.0.status.success())
    });
    if !keep {
        leftovers.kill();
    }
    let wait = limit
        .saturating_sub(started.elapsed())
        .clamp(MIN_OUTPUT_WAIT, MAX_OUTPUT_WAIT);
    let mut stderr_watch = err.finish(wait).unwrap_or_default();
    let stderr = stderr_watch.tail.take().unwrap_or_default();
    let stdout_firsts = out
        .and_then(|r| r.finish(wait))
        .map(|w| w.firsts)
        .unwrap_or_default();
    let (found, metrics) = matches_found(watched, stdout_firsts, stderr_watch.firsts);
    let exit = match ended {
        Ok(exit) => exit.map_err(|e| StepError::Failed(format!("waiting for the command: {e}")))?,
        Err(StepError::Failed(why)) => {
            return Err(StepError::Failed(format!("{why}{}", tail(stderr.bytes()))));
        }
        Err(interrupted) => return Err(interrupted),
    };
    let (exit, observer) = exit;
    // A wrapper (perf record) sets up before the command starts and writes its file after it
    // ends: the command's own span, from the wrapper's records, is the step's wall time.
    let own_wall = if wrapped {
        observers
            .as_deref()
            .and_then(Observers::wrapped_span)
            .map(|(exec, exit)| Duration::from_nanos(exit - exec))
            .filter(|own| *own <= wall)
    } else {
        None
    };
    match exit.status {
        sys::ExitKind::Exited(0) => Ok(StepResult {
            wall: own_wall.unwrap_or(wall),
            wrapper_wall: own_wall.is_some().then_some(wall),
            usage: without_observer(to_usage(&exit.usage), observer),
            perf_record_cpu: observer.map(|o| model::record::Nanos(o.user_ns + o.sys_ns)),
            found,
            metrics,
            running: keep.then_some(leftovers),
        }),
        status => Err(StepError::Failed(format!(
            "`{command}` {status}{}",
            tail(stderr.bytes())
        ))),
    }
}

/// `sh -c command`, wrapped by the observers that wrap it (`perf record` when the step is
/// profiled), and whether it is.
fn step_command(command: &str, observers: Option<&Observers>) -> (Command, bool) {
    let sh = Path::new("sh");
    let args = ["-c".to_string(), command.to_string()];
    match observers.and_then(|o| o.wrap(sh, &args)) {
        Some((program, args)) => {
            let mut wrapper = Command::new(program);
            wrapper.args(args);
            (wrapper, true)
        }
        None => {
            let mut plain = Command::new(sh);
            plain.args(args);
            (plain, false)
        }
    }
}

/// Starts reading the child's stdout (when watched: the op count's regex, then the stdout
/// metrics') and its stderr (its tail, and the stderr metrics') on helper threads.
fn watch_output(
    child: &mut std::process::Child,
    watched: &Watched<'_>,
) -> (Option<Reader<Watch>>, Reader<Watch>) {
    let first = |re: &Regex| FirstMatch::new(re);
    let out = watched.stdout().then(|| {
        let firsts = watched
            .ops
            .into_iter()
            .chain(
                watched
                    .metrics
                    .iter()
                    .filter(|(_, e)| !e)
                    .map(|(re, _)| *re),
            )
            .map(first)
            .collect();
        read_in_background(child.stdout.take(), Watch { tail: None, firsts })
    });
    let err = read_in_background(
        child.stderr.take(),
        Watch {
            tail: Some(Tail::default()),
            firsts: watched
                .metrics
                .iter()
                .filter(|(_, e)| *e)
                .map(|(re, _)| first(re))
                .collect(),
        },
    );
    (out, err)
}

/// Why the wait for a step ends early: Ctrl-C, or its `--timeout` passed.
fn stopped_or_late(stop: &AtomicBool, started: Instant, limit: Duration) -> Option<StepError> {
    if stop.load(Ordering::SeqCst) {
        return Some(StepError::Interrupted);
    }
    (started.elapsed() >= limit).then(|| {
        StepError::Failed(format!(
            "timed out after {:.1}s (--timeout); killed",
            limit.as_secs_f64()
        ))
    })
}

/// The op count's match and each metric's (text, line), from the first matches found in
/// stdout (the op count's first, then the stdout metrics') and stderr, in `watched` order.
fn matches_found(
    watched: &Watched<'_>,
    stdout_firsts: Vec<FirstMatch>,
    stderr_firsts: Vec<FirstMatch>,
) -> (Option<String>, Vec<Option<(String, String)>>) {
    let mut stdout_firsts = stdout_firsts.into_iter();
    let found = if watched.ops.is_some() {
        stdout_firsts.next().and_then(FirstMatch::into_found)
    } else {
        None
    };
    let mut stderr_firsts = stderr_firsts.into_iter();
    let metrics = watched
        .metrics
        .iter()
        .map(|(_, from_stderr)| {
            let f = if *from_stderr {
                stderr_firsts.next()
            } else {
                stdout_firsts.next()
            };
            f.and_then(FirstMatch::into_found_with_line)
        })
        .collect();
    (found, metrics)
}
