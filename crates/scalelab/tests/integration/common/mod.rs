//! The harness every CLI test file shares: a lab (a temporary directory holding the database,
//! also the working directory) and the real `scalelab` binary run in it — expecting success,
//! a given exit status, JSON, or a clean refusal (exit 2, `error: …`, nothing on stdout).
//!
//! Each test file uses a different part of it.

use std::path::PathBuf;
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;

/// Whether these tests run as root (the effective uid, from `/proc/self/status`).
pub fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|e| e == "0"))
            .unwrap_or(false)
    })
}

pub struct Lab {
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A file in the lab's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The results database every command of this lab uses.
    pub fn db(&self) -> PathBuf {
        self.path("lab.db")
    }

    /// `scalelab` with the lab's database, run in the lab's directory; tables at full width
    /// and without colour whatever the caller's COLUMNS and NO_COLOR.
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("scalelab").unwrap();
        c.env("SCALELAB_DB", self.db())
            .env_remove("XDG_DATA_HOME")
            .env_remove("COLUMNS")
            .env_remove("NO_COLOR")
            .current_dir(self.dir.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Runs scalelab expecting exit status `code`; returns stdout.
    pub fn expect(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "scalelab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs scalelab expecting success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with_stderr(args).0
    }

    /// Runs scalelab expecting success; returns stdout and stderr.
    pub fn ok_with_stderr(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "scalelab {args:?} failed: {}\n{stderr}",
            out.status
        );
        (String::from_utf8(out.stdout).unwrap(), stderr)
    }

    /// Runs scalelab expecting success and JSON on stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        self.json_exit(0, args)
    }

    /// Runs scalelab expecting exit status `code` and JSON on stdout.
    pub fn json_exit(&self, code: i32, args: &[&str]) -> Value {
        parse(args, &self.expect(code, args))
    }

    /// One quiet 50 ms trial of `spin` at N=1, no warm-up, plus `extra` arguments: a stored run
    /// for tests that need one and do not care what it measured. Returns stdout.
    pub fn short_spin(&self, extra: &[&str]) -> String {
        let mut args = vec![
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        self.ok(&args)
    }

    /// Expects a usage or runtime error: exit 2 and `error: …` on stderr, nothing on stdout.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(
            out.status.code(),
            Some(2),
            "scalelab {args:?} should exit 2; stderr: {stderr}"
        );
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        stderr
    }
}

/// `text` as JSON, or a panic naming the command that printed it.
pub fn parse(args: &[&str], text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
}

/// True when perf is installed (profiles, `--explain`); says so when a test skips for it.
/// Where `CI` is set a missing perf fails the test instead: `scripts/test` installs it.
pub fn perf_available() -> bool {
    let ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "perf is not installed: scripts/test installs it (apt-get install linux-perf)"
        );
        println!(
            "skipped: `perf` is not installed (Debian: apt-get install linux-perf; scripts/test \
             installs it)"
        );
    }
    ok
}

/// Whether `report` (a trial's `locks` or `offcpu` report, asked of `--tracer kernel`) fell back
/// to the perf tracer, which it may only where the in-kernel one cannot load: then its notes
/// say why, and the test fails where `SCALELAB_REQUIRE_BPF` is set (CI).
pub fn kernel_tracer_fell_back(report: &Value) -> bool {
    if !report["sampling"].is_null() {
        return false;
    }
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("not in the kernel"),
        "a fallback says why: {notes}"
    );
    assert!(
        std::env::var_os("SCALELAB_REQUIRE_BPF").is_none(),
        "SCALELAB_REQUIRE_BPF is set and the kernel tracer fell back: {notes}"
    );
    eprintln!("the kernel tracer fell back here: {notes}");
    true
}

/// This VM's CPU time so far, all CPUs (`/proc/stat`'s `cpu` line, in USER_HZ ticks): what its
/// guests ran (user, nice, system, irq, softirq) and what the host stole.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTicks {
    pub busy: u64,
    pub steal: u64,
}

impl CpuTicks {
    pub fn now() -> CpuTicks {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let fields: Vec<u64> = stat
            .lines()
            .find(|l| l.starts_with("cpu "))
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .filter_map(|t| t.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        CpuTicks {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            steal: at(7),
        }
    }

    /// The host's steal since `before`, in ns (USER_HZ is 100 on Linux).
    pub fn steal_ns_since(&self, before: &CpuTicks) -> u64 {
        self.steal.saturating_sub(before.steal) * 10_000_000
    }

    /// The share of the time the CPUs wanted to run since `before` that the host took: a
    /// cpu-clock profile counts a stolen span as the running task's, its schedstat CPU does not
    /// (this kernel accounts steal apart), so the profile reads up to 1 ÷ (1 − share) of it.
    pub fn stolen_share_since(&self, before: &CpuTicks) -> f64 {
        let steal = self.steal.saturating_sub(before.steal) as f64;
        let busy = self.busy.saturating_sub(before.busy) as f64;
        if steal + busy > 0.0 {
            steal / (steal + busy)
        } else {
            0.0
        }
    }
}
