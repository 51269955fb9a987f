//! The external-command executor as a keeper of processes, through its public API, in this
//! process: every process a step starts ends with the step (background grandchildren that ignore
//! SIGTERM, setsid'd and double-forked ones, with or without their output redirected), no step
//! or cleanup outlives `--timeout` or Ctrl-C, and captured output has a memory bound.
//!
//! Each test's commands sleep with a unique argument (`sleep 4123.000456789`), so a scan of
//! /proc for that string finds exactly the processes the test started. A test that fails kills
//! what it left behind on the way out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lab::runner::{CommandExecutor, CommandSpec, Execution, Executor, OpsSource, TrialSpec, Work};
use model::record::TrialOutcome;

/// Long enough that a test never waits for it by accident.
const HANG: Duration = Duration::from_secs(20);

/// A `sleep` argument no other process on the machine has: about an hour and a unique
/// fraction.
fn unique_sleep() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{}.{:09}",
        3000 + k * 7 + std::process::id() % 600,
        nanos.max(1)
    )
}

/// Live (not zombie) processes whose command line contains `marker`.
fn alive_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if cmdline.contains(marker) && !zombie {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `limit` for every process carrying `marker` to be gone; returns the ones
/// still alive then.
fn survivors(marker: &str, limit: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let left = alive_with(marker);
        if left.is_empty() || start.elapsed() > limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits up to `limit` for a process carrying `marker` to appear.
fn wait_for(marker: &str, limit: Duration) {
    let start = Instant::now();
    while alive_with(marker).is_empty() {
        assert!(
            start.elapsed() < limit,
            "no process with `{marker}` started within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills, on drop, whatever the test's commands left running, so a failing test does not
/// leave hour-long sleeps behind.
struct Sweeper(Vec<String>);

impl Drop for Sweeper {
    fn drop(&mut self) {
        for marker in &self.0 {
            for pid in alive_with(marker) {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
        }
    }
}

fn spec(steps: &[&str], cleanup: Option<&str>, ops: OpsSource) -> TrialSpec {
    TrialSpec {
        tasks: 1,
        work: Work::Command(CommandSpec {
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    (
                        if i == 0 {
                            "cmd".into()
                        } else {
                            format!("s{i}")
                        },
                        (*c).into(),
                    )
                })
                .collect(),
            prepare: None,
            cleanup: cleanup.map(str::to_string),
            ops,
            dir: None,
            metrics: Vec::new(),
            ops_primary: false,
            system: Default::default(),
        }),
        locks: None,
        offcpu: None,
        profile: None,
    }
}

/// Runs one trial on a thread with `stop`; panics when it has not ended within `limit`.
fn execute_within(
    spec: TrialSpec,
    deadline: Duration,
    stop: Arc<AtomicBool>,
    limit: Duration,
) -> (Execution, Duration) {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let out = CommandExecutor::default().execute(&spec, deadline, &stop);
        let _ = tx.send(out);
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (out, started.elapsed()),
        Err(_) => panic!("the trial was still running after {limit:?} (deadline {deadline:?})"),
    }
}

fn failed_reason(e: &Execution) -> &str {
    match e {
        Execution::Finished(TrialOutcome::Failed { reason }) => reason,
        other => panic!("expected a failed trial, got {other:?}"),
    }
}

fn ok_ops(e: &Execution) -> u64 {
    match e {
        Execution::Finished(TrialOutcome::Ok(m)) => m.task_ops[0],
        other => panic!("expected a measured trial, got {other:?}"),
    }
}

#[test]
fn a_service_started_by_prepare_serves_the_steps_and_ends_with_the_trial() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let mut trial = spec(
        // The timed step fails unless prepare's background service is still running.
        &[&format!("pgrep -f '^sleep {u}$' >/dev/null")],
        None,
        OpsSource::Completion,
    );
    if let Work::Command(cmd) = &mut trial.work {
        cmd.prepare = Some(format!("setsid sleep {u} >/dev/null 2>&1 < /dev/null &"));
    }
    let (out, _) = execute_within(
        trial,
        Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    assert_eq!(
        ok_ops(&out),
        1,
        "the service was gone during the step: {out:?}"
    );
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_background_grandchild_holding_stderr_does_not_hang_the_step() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    // sh exits at once; its grandchild ignores SIGTERM and keeps the stderr pipe open.
    let cmd = format!("(trap '' TERM; sleep {u}) &");
    let (out, took) = execute_within(
        spec(&[&cmd], None, OpsSource::Completion),
        Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    assert_eq!(ok_ops(&out), 1, "sh exited 0, so the step succeeded");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_setsid_grandchild_that_ignores_sigterm_ends_at_the_timeout() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    // Out of the step's process group, holding stderr, ignoring SIGTERM; sh waits for it.
    let cmd = format!("setsid sh -c \"trap '' TERM; sleep {u}; true\" & wait");
    let (out, took) = execute_within(
        spec(&[&cmd], None, OpsSource::Completion),
        Duration::from_secs(1),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    assert!(failed_reason(&out).contains("timed out"), "{out:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_grandchild_in_the_group_that_ignores_sigterm_ends_at_the_timeout() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let cmd = format!("(trap '' TERM; sleep {u}) & wait");
    let (out, took) = execute_within(
        spec(&[&cmd], None, OpsSource::Completion),
        Duration::from_secs(1),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    assert!(failed_reason(&out).contains("timed out"), "{out:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_double_forked_grandchild_with_redirected_output_is_not_left_running() {
    let (u1, u2) = (unique_sleep(), unique_sleep());
    let _sweep = Sweeper(vec![u1.clone(), u2.clone()]);
    // Double fork (the subshell exits), one also in a new session; no pipe is held.
    let cmd = format!(
        "(sleep {u1} >/dev/null 2>&1 &); (setsid sh -c 'sleep {u2}; true' >/dev/null 2>&1 &)"
    );
    let (out, _) = execute_within(
        spec(&[&cmd], None, OpsSource::Completion),
        Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    assert_eq!(ok_ops(&out), 1);
    assert_eq!(survivors(&u1, Duration::from_secs(2)), Vec::<i32>::new());
    assert_eq!(survivors(&u2, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn ctrl_c_ends_a_step_whose_grandchild_escaped_and_ignores_sigterm() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let cmd = format!("setsid sh -c \"trap '' TERM; sleep {u}; true\" & wait");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let marker = u.clone();
    std::thread::spawn(move || {
        wait_for(&marker, Duration::from_secs(10));
        flag.store(true, Ordering::SeqCst);
    });
    let (out, took) = execute_within(
        spec(&[&cmd], None, OpsSource::Completion),
        Duration::from_secs(3600),
        stop,
        HANG,
    );
    assert_eq!(out, Execution::Interrupted);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn cleanup_obeys_the_timeout() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let cleanup = format!("sleep {u}");
    let (out, took) = execute_within(
        spec(&["true"], Some(&cleanup), OpsSource::Completion),
        Duration::from_secs(1),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    // Cleanup is not timed: a cleanup that overran does not undo the measurement.
    assert_eq!(ok_ops(&out), 1);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn prepare_obeys_the_timeout() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let mut s = spec(&["true"], None, OpsSource::Completion);
    if let Work::Command(cmd) = &mut s.work {
        cmd.prepare = Some(format!("sleep {u}"));
    }
    let (out, took) = execute_within(
        s,
        Duration::from_secs(1),
        Arc::new(AtomicBool::new(false)),
        HANG,
    );
    let reason = failed_reason(&out);
    assert!(
        reason.contains("--prepare") && reason.contains("timed out"),
        "{reason}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn ctrl_c_during_a_long_cleanup_ends_it_promptly() {
    let u = unique_sleep();
    let _sweep = Sweeper(vec![u.clone()]);
    let cleanup = format!("sleep {u}");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let marker = u.clone();
    std::thread::spawn(move || {
        wait_for(&marker, Duration::from_secs(10));
        flag.store(true, Ordering::SeqCst);
    });
    let (out, took) = execute_within(
        spec(&["true"], Some(&cleanup), OpsSource::Completion),
        Duration::from_secs(3600),
        Arc::clone(&stop),
        HANG,
    );
    // The timed step had finished: its measurement is kept; the sweep sees the flag.
    assert_eq!(ok_ops(&out), 1);
    assert!(stop.load(Ordering::SeqCst));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u, Duration::from_secs(2)), Vec::<i32>::new());
}

#[test]
fn a_second_ctrl_c_ends_the_cleanup_that_follows_the_first() {
    let (u1, u2) = (unique_sleep(), unique_sleep());
    let _sweep = Sweeper(vec![u1.clone(), u2.clone()]);
    let (cmd, cleanup) = (format!("sleep {u1}"), format!("sleep {u2}"));
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let (m1, m2) = (u1.clone(), u2.clone());
    let cleanup_started = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&cleanup_started);
    std::thread::spawn(move || {
        wait_for(&m1, Duration::from_secs(10));
        flag.store(true, Ordering::SeqCst);
        // The first Ctrl-C stopped the step; its cleanup still runs, until a second one.
        wait_for(&m2, Duration::from_secs(10));
        seen.store(true, Ordering::SeqCst);
        flag.store(true, Ordering::SeqCst);
    });
    let (out, took) = execute_within(
        spec(&[&cmd], Some(&cleanup), OpsSource::Completion),
        Duration::from_secs(3600),
        Arc::clone(&stop),
        HANG,
    );
    assert_eq!(out, Execution::Interrupted);
    assert!(
        cleanup_started.load(Ordering::SeqCst),
        "cleanup ran after the first Ctrl-C"
    );
    assert!(
        stop.load(Ordering::SeqCst),
        "the caller still sees the stop"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(survivors(&u1, Duration::from_secs(2)), Vec::<i32>::new());
    assert_eq!(survivors(&u2, Duration::from_secs(2)), Vec::<i32>::new());
}

/// `VmHWM` (peak resident set) or `VmRSS` of this process, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

#[test]
fn captured_output_has_a_memory_bound() {
    // Writing 5 to clear_refs resets the peak (VmHWM) to the current RSS (Linux >= 4.0).
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting VmHWM");
    let before = status_kib("VmRSS:");
    // 300 MB on stderr as one endless line, 300 MB of short lines on stdout, then the count.
    let cmd = "head -c 300000000 /dev/zero | tr '\\0' x >&2; \
               yes | head -c 300000000; echo 'done: 42 ops'";
    let (out, _) = execute_within(
        spec(&[cmd], None, OpsSource::Regex(r"done: (\d+) ops".into())),
        Duration::from_secs(120),
        Arc::new(AtomicBool::new(false)),
        Duration::from_secs(120),
    );
    assert_eq!(ok_ops(&out), 42);
    // A failing command's reason carries a bounded tail of its 300 MB of stderr.
    let (out, _) = execute_within(
        spec(
            &["head -c 300000000 /dev/zero | tr '\\0' y >&2; exit 3"],
            None,
            OpsSource::Completion,
        ),
        Duration::from_secs(120),
        Arc::new(AtomicBool::new(false)),
        Duration::from_secs(120),
    );
    let reason = failed_reason(&out);
    assert!(
        reason.contains("exited with code 3") && reason.ends_with("yyyy"),
        "{}",
        &reason[..200.min(reason.len())]
    );
    assert!(reason.len() < 2000, "{} bytes of reason", reason.len());
    let grew_mib = status_kib("VmHWM:").saturating_sub(before) / 1024;
    println!("peak RSS grew by {grew_mib} MiB");
    assert!(
        grew_mib < 64,
        "peak RSS grew by {grew_mib} MiB while reading 600 MB of output"
    );
}
