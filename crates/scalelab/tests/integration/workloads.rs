//! Drives the real `scalelab` binary through every built-in workload of the file, process,
//! scheduler and lock families, at 1 and 2 tasks, as threads and as processes, and checks that
//! each op count is plausible against the kernel's own accounting (faults, context switches,
//! system time, block I/O) — not just that the run exits 0 — and that the file workloads leave
//! nothing behind in `--workdir`, even after a scalelab was killed mid-trial.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Lab;

/// A lab with a `--workdir` given to every run, which must be empty after each.
struct WorkLab {
    lab: Lab,
    work: tempfile::TempDir,
}

impl std::ops::Deref for WorkLab {
    type Target = Lab;
    fn deref(&self) -> &Lab {
        &self.lab
    }
}

impl WorkLab {
    fn new() -> WorkLab {
        WorkLab {
            lab: Lab::new(),
            work: tempfile::tempdir().unwrap(),
        }
    }
    fn workdir(&self) -> &str {
        self.work.path().to_str().unwrap()
    }
    /// Names left in the workdir.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(self.work.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
    /// Runs `workload` at 1 and 2 tasks (2 short trials each) in `mode`; checks every trial and
    /// that the workdir is empty afterwards; returns the trials.
    fn sweep(&self, workload: &str, mode: &str, params: &[&str]) -> Sweep {
        let mut args = vec![
            "run",
            workload,
            "--tasks",
            "1,2",
            "--runs",
            "2",
            "--duration",
            "200ms",
            "--warmup",
            "50ms",
            "--quiet",
            "--mode",
            mode,
            "--workdir",
            self.workdir(),
        ];
        for p in params {
            args.extend(["-p", p]);
        }
        self.ok(&args);
        let what = format!("{workload} {params:?} --mode {mode}");
        assert!(
            self.leftovers().is_empty(),
            "{what} left {:?} in --workdir",
            self.leftovers()
        );
        let export: Value = serde_json::from_str(&self.ok(&["export", "last"])).unwrap();
        let trials: Vec<Trial> = export["run"]["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| Trial::check(t, &what))
            .collect();
        assert_eq!(trials.len(), 4, "{what}");
        Sweep { what, trials }
    }
}

/// The trials of one sweep. The kernel splits a task's CPU time into user and system time by
/// sampling at the tick and keeps each part monotonic (`cputime_adjust`), so over one 200 ms
/// window either part can read 0 on a busy machine: checks of `user`/`sys` use the sweep's sums.
#[derive(Debug)]
struct Sweep {
    what: String,
    trials: Vec<Trial>,
}

impl Sweep {
    fn ops(&self) -> u64 {
        self.trials.iter().map(|t| t.ops).sum()
    }
    fn user_s(&self) -> f64 {
        self.trials.iter().map(|t| t.user_s).sum()
    }
    fn sys_s(&self) -> f64 {
        self.trials.iter().map(|t| t.sys_s).sum()
    }
    /// System time per op over the sweep, in nanoseconds.
    fn sys_ns_per_op(&self) -> f64 {
        self.sys_s() * 1e9 / self.ops() as f64
    }
}

/// One successful trial, with the fields the checks use.
#[derive(Debug)]
struct Trial {
    what: String,
    n: u64,
    ops: u64,
    window_s: f64,
    user_s: f64,
    sys_s: f64,
    usage: Value,
    extras: Value,
}

impl Trial {
    /// Every trial: ok, ops > 0, one count per task, the asked window, CPU time within N × window.
    fn check(t: &Value, what: &str) -> Trial {
        assert_eq!(t["outcome"]["status"], "ok", "{what}: trial failed: {t}");
        let m = &t["outcome"];
        let n = t["n"].as_u64().unwrap();
        let per_task: Vec<u64> = m["task_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(per_task.len() as u64, n, "{what}");
        assert!(
            per_task.iter().all(|&o| o > 0),
            "{what}: a task did no op: {per_task:?}"
        );
        let window_s = m["window"].as_u64().unwrap() as f64 / 1e9;
        assert!((window_s - 0.2).abs() < 0.05, "{what}: window {window_s}s");
        let secs = |k: &str| m["usage"][k].as_u64().unwrap() as f64 / 1e9;
        let (user_s, sys_s) = (secs("user"), secs("sys"));
        let cpu = user_s + sys_s;
        assert!(
            cpu <= n as f64 * window_s * 1.1 + 0.02,
            "{what}: cpu {cpu}s over {window_s}s at N={n}"
        );
        Trial {
            what: format!("{what} N={n}"),
            n,
            ops: per_task.iter().sum(),
            window_s,
            user_s,
            sys_s,
            usage: m["usage"].clone(),
            extras: m["extras"].clone(),
        }
    }
    fn usage(&self, key: &str) -> u64 {
        self.usage[key].as_u64().unwrap()
    }
    fn extra(&self, key: &str) -> u64 {
        self.extras[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: no extra `{key}` in {}", self.what, self.extras))
    }
}

const MODES: [&str; 2] = ["threads", "processes"];

#[test]
fn list_shows_every_new_workload_with_its_op_and_file_use() {
    let lab = WorkLab::new();
    let list: Value = serde_json::from_str(&lab.ok(&["list", "--json"])).unwrap();
    let list = list.as_array().unwrap();
    for name in [
        "open_close",
        "create_unlink",
        "fsync_write",
        "file_write",
        "pread",
        "mmap_munmap",
        "pipe_pingpong",
        "futex_mutex",
        "sched_yield",
        "spawn",
        "tree_hash",
    ] {
        let w = list
            .iter()
            .find(|w| w["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert!(!w["op"].as_str().unwrap().is_empty(), "{w}");
    }
}

#[test]
fn open_close_costs_system_time_in_every_variant() {
    let lab = WorkLab::new();
    for mode in MODES {
        for shared in ["shared=false", "shared=true"] {
            let sweep = lab.sweep("open_close", mode, &[shared]);
            // An open+close pair is two system calls and a path walk: well above 100 ns of
            // kernel time, and far below a millisecond.
            let ns = sweep.sys_ns_per_op();
            assert!(ns > 100.0 && ns < 1e6, "{}: {ns} ns sys per op", sweep.what);
        }
    }
}

#[test]
fn create_unlink_ops_agree_with_system_time() {
    let lab = WorkLab::new();
    for mode in MODES {
        for shared in ["shared=false", "shared=true"] {
            let sweep = lab.sweep("create_unlink", mode, &[shared]);
            // Three system calls that allocate and free an inode and a directory entry: at
            // least a microsecond of kernel time per op, and the tasks are in the kernel most
            // of their time (user space only loops).
            let ns = sweep.sys_ns_per_op();
            assert!(
                ns > 1000.0 && ns < 1e7,
                "{}: {ns} ns sys per op",
                sweep.what
            );
            assert!(sweep.sys_s() > sweep.user_s(), "{sweep:?}");
        }
    }
}

#[test]
fn fsync_write_spends_time_in_the_kernel_or_on_the_device() {
    let lab = WorkLab::new();
    for mode in MODES {
        for t in lab.sweep("fsync_write", mode, &["size=64K"]).trials {
            assert!(
                t.usage("block_out") > 0 || t.sys_s > 0.0,
                "{}: neither block output nor system time: {t:?}",
                t.what
            );
            // An fsync is a journal commit and a device flush: never a million per second.
            assert!(
                (t.ops as f64 / t.window_s) < 1e6 * t.n as f64,
                "{}: {t:?}",
                t.what
            );
        }
    }
}

#[test]
fn file_write_and_pread_move_the_bytes_they_count() {
    let lab = WorkLab::new();
    for mode in MODES {
        for shared in ["shared=false", "shared=true"] {
            let sweep = lab.sweep("file_write", mode, &["size=8M", shared]);
            // Copying 4 KiB into the page cache takes a few hundred nanoseconds at least.
            assert!(sweep.sys_ns_per_op() > 100.0, "{sweep:?}");
            let sweep = lab.sweep("pread", mode, &["size=4M", shared]);
            assert!(sweep.sys_ns_per_op() > 50.0, "{sweep:?}");
            for t in sweep.trials {
                // Everything was cached before the window: no read reaches the device.
                assert_eq!(t.usage("block_in"), 0, "{}: {t:?}", t.what);
                assert_eq!(t.usage("major_faults"), 0, "{}: {t:?}", t.what);
            }
        }
    }
}

#[test]
fn mmap_munmap_faults_once_per_touched_page() {
    let lab = WorkLab::new();
    for mode in MODES {
        for t in lab.sweep("mmap_munmap", mode, &["pages=4"]).trials {
            let faults = t.usage("minor_faults") as f64;
            let touched = t.ops as f64 * 4.0;
            // Each op maps 4 fresh pages and writes each: 4 faults (ops count whole batches).
            assert!(
                faults >= touched * 0.95,
                "{}: {faults} faults for {touched} pages",
                t.what
            );
            assert!(
                faults < touched * 2.0 + 10_000.0,
                "{}: {faults} faults for {touched} pages",
                t.what
            );
        }
    }
}

#[test]
fn pipe_pingpong_switches_context_on_every_round_trip() {
    let lab = WorkLab::new();
    for mode in MODES {
        for t in lab
            .sweep("pipe_pingpong", mode, &["partner=same_cpu"])
            .trials
        {
            // Task and partner share one CPU, so each round trip switches the task out at
            // least once: voluntarily (it blocks for the echo) or not (the woken partner
            // preempts it). The partner's own switches are not counted.
            let switches = (t.usage("voluntary_switches") + t.usage("involuntary_switches")) as f64;
            assert!(
                switches >= t.ops as f64 * 0.9,
                "{}: {switches} context switches for {} round trips",
                t.what,
                t.ops
            );
        }
        for t in lab.sweep("pipe_pingpong", mode, &["partner=any"]).trials {
            assert!(t.usage("voluntary_switches") > 0, "{}: {t:?}", t.what);
        }
    }
}

#[test]
fn futex_mutex_contends_only_when_shared() {
    let lab = WorkLab::new();
    for mode in MODES {
        let shared = lab.sweep(
            "futex_mutex",
            mode,
            &["shared=true", "hold=200", "work=200"],
        );
        for t in shared.trials {
            if t.n == 1 {
                assert_eq!(
                    t.extra("contended"),
                    0,
                    "{}: a lone task never waits",
                    t.what
                );
                assert_eq!(t.extra("futex_waits"), 0, "{}", t.what);
            } else {
                // Half of each task's time in the critical section: the other task must often
                // find the lock taken.
                assert!(t.extra("contended") > 0, "{}: {t:?}", t.what);
                assert!(t.extra("futex_wakes") > 0, "{}: {t:?}", t.what);
            }
        }
        let private = lab.sweep(
            "futex_mutex",
            mode,
            &["shared=false", "hold=200", "work=200"],
        );
        for t in private.trials {
            assert_eq!(
                t.extra("contended"),
                0,
                "{}: private mutexes never contend",
                t.what
            );
            assert_eq!(t.extra("futex_wakes"), 0, "{}", t.what);
        }
    }
}

#[test]
fn sched_yield_enters_the_kernel() {
    let lab = WorkLab::new();
    for mode in MODES {
        let sweep = lab.sweep("sched_yield", mode, &[]);
        assert!(sweep.sys_ns_per_op() > 20.0, "{sweep:?}");
    }
}

#[test]
fn spawn_creates_and_reaps_children_by_fork_and_posix_spawn() {
    let lab = WorkLab::new();
    for mode in MODES {
        for method in ["method=fork", "method=posix_spawn"] {
            let sweep = lab.sweep("spawn", mode, &[method]);
            assert!(sweep.sys_s() > 0.0, "{sweep:?}");
            for t in sweep.trials {
                // A process cannot be created and reaped in under 10 µs.
                let per_task_rate = t.ops as f64 / t.window_s / t.n as f64;
                assert!(
                    per_task_rate < 100_000.0,
                    "{}: {per_task_rate} children/s",
                    t.what
                );
            }
        }
    }
}

#[test]
fn tree_hash_reads_every_file_back_intact() {
    let lab = WorkLab::new();
    for mode in MODES {
        for shared in ["shared=false", "shared=true"] {
            let sweep = lab.sweep("tree_hash", mode, &["files=64", "size=8K", shared]);
            // FNV-1a over 8 KiB is user time; open/read/close is system time.
            assert!(sweep.user_s() > 0.0 && sweep.sys_s() > 0.0, "{sweep:?}");
            for t in sweep.trials {
                assert_eq!(t.extra("hash_mismatches"), 0, "{}", t.what);
                assert_eq!(t.usage("block_in"), 0, "{}: the tree is cached", t.what);
            }
        }
    }
}

/// Waits until `dir` holds an entry whose name starts with `prefix`.
fn wait_for_entry(dir: &Path, prefix: &str, limit: Duration) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(e) = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
        {
            return e.path();
        }
        assert!(
            start.elapsed() < limit,
            "no {prefix}* in {} within {limit:?}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn scratch_left_by_a_killed_scalelab_is_removed_by_the_next_run() {
    let lab = WorkLab::new();
    // A real one: kill scalelab with SIGKILL in the middle of a file workload's trial.
    let mut victim = lab
        .cmd()
        .args([
            "run",
            "create_unlink",
            "--tasks",
            "1",
            "--runs",
            "50",
            "--duration",
            "200ms",
            "--warmup",
            "0",
            "--quiet",
            "--workdir",
            lab.workdir(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let scratch = wait_for_entry(
        lab.work.path(),
        "scalelab-scratch.",
        Duration::from_secs(30),
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
    // The trial child dies with its parent (or finishes its short window); give it time.
    std::thread::sleep(Duration::from_millis(1000));
    // And one made by hand as a dead scalelab leaves it: a lock file nobody holds, files in
    // it (made after the victim started: its own start-up sweep would have removed it).
    let fake = lab.work.path().join("scalelab-scratch.0123456789abcdef");
    std::fs::create_dir_all(fake.join("1/create_unlink.0")).unwrap();
    std::fs::write(fake.join("lock"), b"").unwrap();
    std::fs::write(fake.join("1/create_unlink.0/f"), b"left over").unwrap();
    assert!(
        scratch.exists() && fake.exists(),
        "nothing to clean up: {:?}",
        lab.leftovers()
    );
    // Any file workload's next run sweeps both, and leaves the workdir empty itself.
    lab.sweep("open_close", "threads", &[]);
    assert!(lab.leftovers().is_empty(), "{:?}", lab.leftovers());
}

/// Checks every trial of the last run against what its window can hold: CPU time at most
/// `cpus` CPUs over the window (with a tick's slack per CPU at each edge) and run-queue wait at
/// most N × the window.
fn assert_accounting_within_the_window(lab: &Lab, what: &str, cpus: f64) {
    let export: Value = serde_json::from_str(&lab.ok(&["export", "last"])).unwrap();
    for t in export["run"]["trials"].as_array().unwrap() {
        let m = &t["outcome"];
        assert_eq!(m["status"], "ok", "{what}: {t}");
        let n = t["n"].as_f64().unwrap();
        let window = m["window"].as_f64().unwrap() / 1e9;
        let secs = |k: &str| m["usage"][k].as_f64().unwrap() / 1e9;
        let cpu = secs("user") + secs("sys");
        assert!(
            cpu <= cpus * (window * 1.02 + 0.02),
            "{what}: {:.0}% CPU on {cpus} CPUs over {window:.3}s at N={n}",
            cpu / window * 100.0
        );
        let waited = secs("run_delay");
        assert!(
            waited <= n * window * 1.02,
            "{what}: run-queue wait {:.0}% of N × {window:.3}s",
            waited / (n * window) * 100.0
        );
    }
}

#[test]
fn oversubscribed_cpu_and_run_queue_accounting_never_exceed_what_the_window_holds() {
    // Each task used to account its own span, from when it noticed the window open to when it
    // noticed it close. Tasks that get a CPU only now and then notice late: spin at N=256 on 2
    // CPUs reported 403–493% CPU and 106–137% run-queue wait. A step longer than the whole
    // trial (0.5 s of work per op) makes it certain: no task sees either edge, each accounted its
    // usage since the gate, and 4 such tasks reported several CPUs' worth.
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    for mode in MODES {
        let lab = Lab::new();
        lab.ok(&[
            "run",
            "futex_mutex",
            "-p",
            "work=500000000",
            "-p",
            "hold=0",
            "--tasks",
            "4",
            "--runs",
            "1",
            "--duration",
            "200ms",
            "--warmup",
            "100ms",
            "--mode",
            mode,
            "--no-counters",
            "--quiet",
        ]);
        assert_accounting_within_the_window(&lab, &format!("0.5 s steps, {mode}"), cpus);
        lab.ok(&[
            "run",
            "spin",
            "--tasks",
            "64",
            "--runs",
            "1",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--mode",
            mode,
            "--no-counters",
            "--quiet",
        ]);
        assert_accounting_within_the_window(&lab, &format!("spin N=64, {mode}"), cpus);
    }
}
