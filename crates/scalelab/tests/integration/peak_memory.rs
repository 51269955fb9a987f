//! Peak memory per point: each trial's `max_rss_kib` (the largest resident set one process
//! reached), checked against GNU `time`'s own reading of the same command, per task in threads
//! mode, and judged by `compare --metric max_rss`.

use std::process::Command;

use serde_json::Value;

use crate::common::Lab;
use crate::real_programs::installed;

/// `dd` with a `bs`-byte buffer: it fills the buffer once, so its peak is about `bs` more than
/// its start-up (and nothing another tool has to build).
fn dd(mib: u32) -> String {
    format!("dd if=/dev/zero of=/dev/null bs={mib}M count=1 status=none")
}

/// The point at N of `show last --json`.
fn point(show: &Value, n: u64) -> &Value {
    show["points"]
        .as_array()
        .unwrap_or_else(|| panic!("no points: {show}"))
        .iter()
        .find(|p| p["n"] == n)
        .unwrap_or_else(|| panic!("no point N={n}: {show}"))
}

#[test]
fn a_commands_peak_memory_agrees_with_gnu_time_and_compare_judges_it() {
    if !installed("/usr/bin/time") {
        return;
    }
    let lab = Lab::new();
    // GNU time's own reading of the same command: its `%M`, KiB, is the same ru_maxrss.
    let time = Command::new("/usr/bin/time")
        .args(["-f", "%M", "sh", "-c", &dd(64)])
        .output()
        .unwrap();
    let gnu_kib: f64 = String::from_utf8_lossy(&time.stderr)
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    assert!(gnu_kib > 64.0 * 1024.0, "GNU time saw {gnu_kib} KiB");

    let run = |mib: u32| {
        lab.ok(&[
            "run",
            "--cmd",
            &dd(mib),
            "--tasks",
            "1",
            "--runs",
            "5",
            "--quiet",
        ]);
        lab.json(&["show", "last", "--json"])
    };
    let big = run(64);
    let kib = point(&big, 1)["max_rss_kib"]
        .as_f64()
        .unwrap_or_else(|| panic!("{big}"));
    let ratio = kib / gnu_kib;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "scalelab's peak {kib} KiB against GNU time's {gnu_kib} KiB"
    );
    // A command's processes are not its tasks: no per-task figure.
    assert!(point(&big, 1)["max_rss_per_task_kib"].is_null(), "{big}");
    let text = lab.ok(&["show", "last"]);
    assert!(text.contains("max RSS"), "{text}");
    assert!(text.contains(" MiB"), "{text}");
    let csv = lab.ok(&["export", "last", "--format", "csv"]);
    assert!(csv.lines().next().unwrap().contains("max_rss_kib"), "{csv}");

    let small = run(8);
    let small_kib = point(&small, 1)["max_rss_kib"].as_f64().unwrap();
    assert!(
        small_kib + 40.0 * 1024.0 < kib,
        "{small_kib} KiB vs {kib} KiB"
    );
    let a = big["run"]["id"].to_string();
    let b = small["run"]["id"].to_string();
    // Five trials a side: the rank test can reach p < 0.05.
    let cmp = lab.json(&[
        "compare", &a, &b, "--metric", "max_rss", "--force", "--json",
    ]);
    assert_eq!(cmp["metric"]["unit"], "KiB", "{cmp}");
    assert_eq!(
        cmp["summary"]["verdict"], "improved",
        "less memory is better: {cmp}"
    );
    assert_eq!(cmp["summary"]["ahead_everywhere"], "b", "{cmp}");
}

#[test]
fn a_threads_runs_peak_memory_is_shared_by_its_tasks() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "page_fault",
        "--tasks",
        "1,2",
        "--runs",
        "2",
        "--duration",
        "200ms",
        "--warmup",
        "50ms",
        "--mode",
        "threads",
        "--quiet",
    ]);
    let show = lab.json(&["show", "last", "--json"]);
    for n in [1u64, 2] {
        let p = point(&show, n);
        let kib = p["max_rss_kib"].as_f64().unwrap_or_else(|| panic!("{p}"));
        let per_task = p["max_rss_per_task_kib"].as_f64().unwrap();
        assert!(kib > 1024.0, "N={n}: {kib} KiB");
        assert!((per_task * n as f64 - kib).abs() < 1e-6, "{p}");
    }
}
