//! Drives the real `scalelab` binary on real, short workloads and checks that the numbers are
//! plausible and consistent, that bad input is refused cleanly, and that nothing measured is lost.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Lab;

const SHORT: &[&str] = &[
    "--runs",
    "2",
    "--duration",
    "200ms",
    "--warmup",
    "50ms",
    "--quiet",
];

fn run_short(lab: &Lab, workload: &str, extra: &[&str]) -> Value {
    let mut args = vec!["run", workload, "--tasks", "1,2"];
    args.extend_from_slice(SHORT);
    args.extend_from_slice(extra);
    lab.ok(&args);
    lab.json(&["export", "last"])
}

fn trials(export: &Value) -> &Vec<Value> {
    export["run"]["trials"].as_array().unwrap()
}

fn ok_trial(t: &Value) -> &Value {
    assert_eq!(t["outcome"]["status"], "ok", "trial failed: {t}");
    &t["outcome"]
}

fn sum(v: &Value) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum()
}

/// Checks every trial: ops and samples agree, the window is the asked duration, usage is sane.
fn check_trials(export: &Value, duration_s: f64, tasks: &[u64]) {
    let trials = trials(export);
    assert_eq!(trials.len(), tasks.len() * 2);
    for t in trials {
        let m = ok_trial(t);
        let n = t["n"].as_u64().unwrap();
        let ops = sum(&m["task_ops"]);
        assert!(ops > 0, "no ops: {t}");
        assert_eq!(m["task_ops"].as_array().unwrap().len() as u64, n);
        let window = m["window"].as_u64().unwrap() as f64 / 1e9;
        assert!(
            (window - duration_s).abs() < 0.05,
            "window {window}s for a {duration_s}s duration"
        );
        let last = m["samples"].as_array().unwrap().last().unwrap();
        assert_eq!(
            sum(&last["task_ops"]),
            ops,
            "the last sample is the window's end"
        );
        assert_eq!(last["t"].as_u64(), m["window"].as_u64());
        let cpu = (m["usage"]["user"].as_u64().unwrap() + m["usage"]["sys"].as_u64().unwrap())
            as f64
            / 1e9;
        // Each task is busy the whole window; CPU time cannot exceed N × window (plus accounting slack).
        assert!(
            cpu > 0.0 && cpu <= n as f64 * window * 1.1 + 0.02,
            "cpu {cpu}s over {window}s at N={n}"
        );
    }
}

#[test]
fn list_names_every_workload_with_its_op() {
    let lab = Lab::new();
    let list = lab.json(&["list", "--json"]);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    for w in ["page_fault", "clock", "null_syscall", "atomic", "spin"] {
        assert!(names.contains(&w), "{names:?}");
    }
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|w| !w["op"].as_str().unwrap().is_empty())
    );
    let text = lab.ok(&["list"]);
    assert!(
        text.contains("one page faulted in") && text.contains("-p mode=fetch_add"),
        "{text}"
    );
}

#[test]
fn spin_sweep_is_consistent_and_speedup_starts_at_one() {
    let lab = Lab::new();
    let export = run_short(&lab, "spin", &[]);
    check_trials(&export, 0.2, &[1, 2]);
    let show = lab.json(&["show", "last", "--json"]);
    let points = show["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert!((points[0]["speedup"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    // The point's throughput is the median of its trials' ops / window.
    let rates: Vec<f64> = trials(&export)
        .iter()
        .filter(|t| t["n"] == 1)
        .map(|t| {
            sum(&t["outcome"]["task_ops"]) as f64
                / (t["outcome"]["window"].as_u64().unwrap() as f64 / 1e9)
        })
        .collect();
    let median = (rates[0] + rates[1]) / 2.0;
    let reported = points[0]["throughput"]["point"].as_f64().unwrap();
    assert!(
        (reported - median).abs() / median < 1e-9,
        "{reported} vs {median}"
    );
    // Two tasks of a share-nothing loop on two CPUs: clearly more than one task's throughput.
    let s2 = points[1]["speedup"].as_f64().unwrap();
    assert!(s2 > 1.2, "spin S(2) = {s2}");
    let table = lab.ok(&["show", "last"]);
    assert!(
        table.contains("scales to") && table.contains("ops/s"),
        "{table}"
    );
}

#[test]
fn tasks_beyond_the_cpus_wait_on_the_run_queue_and_it_is_measured() {
    let lab = Lab::new();
    let cpus = std::thread::available_parallelism().unwrap().get();
    let n = (cpus + 1).to_string();
    for mode in ["threads", "processes"] {
        lab.ok(&[
            "run",
            "spin",
            "--tasks",
            &n,
            "--runs",
            "1",
            "--duration",
            "400ms",
            "--warmup",
            "100ms",
            "--mode",
            mode,
            "--quiet",
        ]);
        let export = lab.json(&["export", "last"]);
        let m = ok_trial(&trials(&export)[0]);
        let window = m["window"].as_u64().unwrap() as f64;
        let delay = m["usage"]["run_delay"]
            .as_u64()
            .unwrap_or_else(|| panic!("{mode}: no run delay: {m}")) as f64;
        // cpus + 1 spinning tasks on cpus CPUs: one task's worth of the window is spent
        // waiting, spread over all of them (more if something else ran too).
        assert!(
            delay > 0.5 * window && delay < (cpus + 1) as f64 * window,
            "{mode}: run delay {delay} ns over a {window} ns window"
        );
        let shown = lab.ok(&["show", "last"]);
        assert!(shown.contains("runq wait"), "{shown}");
    }
}

#[test]
fn page_fault_counts_at_least_one_minor_fault_per_op_in_both_modes() {
    let lab = Lab::new();
    for mode in ["threads", "processes"] {
        let export = run_short(&lab, "page_fault", &["-p", "size=16M", "--mode", mode]);
        check_trials(&export, 0.2, &[1, 2]);
        for t in trials(&export) {
            let m = ok_trial(t);
            let ops = sum(&m["task_ops"]);
            let faults = m["usage"]["minor_faults"].as_u64().unwrap();
            // Each op is a first touch of a fresh page: a fault. Ops count only finished batches.
            assert!(
                faults as f64 >= ops as f64 * 0.95,
                "{mode}: {faults} faults for {ops} ops"
            );
            assert!(
                faults < ops * 2 + 10_000,
                "{mode}: {faults} faults for {ops} ops"
            );
        }
    }
}

#[test]
fn atomic_modes_run_as_processes_and_report_their_counts() {
    let lab = Lab::new();
    let export = run_short(
        &lab,
        "atomic",
        &["-p", "mode=cmpxchg-retry", "--mode", "processes"],
    );
    check_trials(&export, 0.2, &[1, 2]);
    for t in trials(&export) {
        let extras = &ok_trial(t)["extras"];
        assert!(extras["cas_retries"].is_u64(), "{extras}");
        if t["n"] == 1 {
            assert_eq!(extras["cas_retries"], 0, "a lone task never retries");
        }
    }
    let export = run_short(&lab, "atomic", &["-p", "mode=private"]);
    check_trials(&export, 0.2, &[1, 2]);
}

#[test]
fn clock_never_goes_backwards_and_null_syscall_runs() {
    let lab = Lab::new();
    let export = run_short(&lab, "clock", &["-p", "source=syscall"]);
    check_trials(&export, 0.2, &[1, 2]);
    for t in trials(&export) {
        assert_eq!(ok_trial(t)["extras"]["time_backwards"], 0);
    }
    let export = run_short(&lab, "null_syscall", &[]);
    check_trials(&export, 0.2, &[1, 2]);
    for t in trials(&export) {
        let m = ok_trial(t);
        assert!(
            m["usage"]["sys"].as_u64().unwrap() > 0,
            "syscalls spend system time"
        );
    }
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_changes_nothing() {
    let lab = Lab::new();
    let cases: &[(&[&str], &str)] = &[
        (&["run", "page_falt"], "did you mean `page_fault`"),
        (&["run", "page_fault", "-p", "sise=1M"], "valid: "),
        (&["run", "page_fault", "-p", "size=lots"], "expected size"),
        (&["run", "page_fault", "-p", "nokey"], "KEY=VALUE"),
        (&["run", "spin", "--tasks", "0"], "start at 1"),
        (&["run", "spin", "--tasks", "-1"], "negative"),
        (&["run", "spin", "--tasks", ""], "empty"),
        (&["run", "spin", "--tasks", "8..2"], "backwards"),
        (&["run", "spin", "--tasks", "lots"], "not a whole number"),
        (&["run", "spin", "--duration", "0"], "--duration"),
        (&["run", "spin", "--duration", "-1s"], "--duration"),
        (&["run", "spin", "--runs", "0"], "--runs: 0"),
    ];
    for (args, needle) in cases {
        let err = lab.fails(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(
        !lab.db().exists(),
        "refused runs must not create the database"
    );
    // Unknown run ids.
    lab.short_spin(&[]);
    assert!(lab.fails(&["show", "999"]).contains("999"));
    assert!(lab.fails(&["show", "last~5"]).contains("last~5"));
    assert!(lab.fails(&["show", "yesterday"]).contains("last~K"));
}

/// Was an abort after the run was stored (`--runs 4294967295` allocated past 2 GB) and a
/// silent clamp of durations to 584 years.
#[test]
fn counts_and_durations_past_their_maximum_are_refused_before_anything_runs() {
    let lab = Lab::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "spin", "--runs", "4294967295"],
            "--runs: 4294967295",
        ),
        (&["run", "spin", "--duration", "1000000000h"], "longer than"),
        (&["run", "spin", "--warmup", "8d"], "--warmup"),
        (&["run", "--cmd", "true", "--timeout", "200h"], "1 week"),
        (
            &["run", "spin", "--profile", "--profile-trials", "4294967295"],
            "--profile-trials",
        ),
        (
            &[
                "ab",
                "--a",
                "true",
                "--b",
                "true",
                "--max-runs",
                "4294967295",
            ],
            "--max-runs",
        ),
        (
            &["ab", "--a", "true", "--b", "true", "--runs", "20000"],
            "at most 10000",
        ),
    ];
    for (args, needle) in cases {
        let err = lab.fails(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(
        !lab.db().exists(),
        "refused runs must not create the database"
    );
}

#[test]
fn a_corrupt_or_unwritable_database_is_never_overwritten() {
    let lab = Lab::new();
    let junk = b"this is not a database, it is my thesis\n".repeat(100);
    std::fs::write(lab.db(), &junk).unwrap();
    let err = lab.fails(&[
        "run",
        "spin",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--duration",
        "50ms",
    ]);
    assert!(err.contains(lab.db().to_str().unwrap()), "{err}");
    assert_eq!(std::fs::read(lab.db()).unwrap(), junk);
    lab.fails(&["ls"]);
    assert_eq!(std::fs::read(lab.db()).unwrap(), junk);
    let out = lab
        .cmd()
        .args(["--db", "/proc/version/x.db", "ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn reading_commands_refuse_a_missing_database_and_create_nothing() {
    let lab = Lab::new();
    let missing = lab.path("not/yet/lab.db");
    let db = missing.to_str().unwrap();
    let html = lab.path("r.html");
    let readers: &[&[&str]] = &[
        &["ls"],
        &["show", "1"],
        &["compare", "1", "2"],
        &["export", "1"],
        &["history", "spin"],
        &["locks", "1"],
        &["profile", "1"],
        &["report", "1", "-o", html.to_str().unwrap()],
        &["model", "1"],
    ];
    for args in readers {
        let mut full = vec!["--db", db];
        full.extend_from_slice(args);
        let err = lab.fails(&full);
        assert!(err.contains(db), "{args:?}: {err}");
        assert!(err.contains("scalelab run"), "{args:?}: {err}");
        assert!(!lab.path("not").exists(), "{args:?} created folders");
    }
    // An empty file is not a database yet either; readers leave it empty.
    let empty = lab.path("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let err = lab.fails(&["--db", empty.to_str().unwrap(), "ls"]);
    assert!(err.contains(empty.to_str().unwrap()), "{err}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    // Creating commands still create it, with its folders.
    lab.short_spin(&["--db", db]);
    assert!(lab.ok(&["--db", db, "ls"]).contains("spin"));
}

#[test]
fn export_and_import_round_trip_without_loss() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "spin",
        "--tasks",
        "1,2",
        "--runs",
        "2",
        "--duration",
        "100ms",
        "--warmup",
        "0",
        "--quiet",
        "--tag",
        "kernel=test",
        "--name",
        "rt",
    ]);
    let exported = lab.ok(&["export", "last"]);
    let file = lab.dir.path().join("run.json");
    std::fs::write(&file, &exported).unwrap();
    let other = Lab::new();
    let msg = other.ok(&["import", file.to_str().unwrap()]);
    assert!(msg.contains("as run 1"), "{msg}");
    let again: Value = serde_json::from_str(&other.ok(&["export", "last"])).unwrap();
    let original: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(again["schema_version"], 1);
    assert_eq!(again["run"]["trials"], original["run"]["trials"]);
    let strip = |v: &Value| {
        let mut m = v["run"]["meta"].clone();
        m.as_object_mut().unwrap().remove("id");
        m.as_object_mut().unwrap().remove("origin_id");
        m
    };
    assert_eq!(strip(&again), strip(&original));
    // A file path works wherever a run id does.
    let shown = lab.json(&["show", file.to_str().unwrap(), "--json"]);
    assert_eq!(shown["points"].as_array().unwrap().len(), 2);
    let csv = lab.ok(&["export", "last", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 5, "header + 4 trials:\n{csv}");
}

fn wait_for_trials(lab: &Lab, at_least: u64, limit: Duration) {
    let start = Instant::now();
    loop {
        let out = lab.cmd().args(["ls", "--json"]).output().unwrap();
        if out.status.success() {
            let runs: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if runs
                .as_array()
                .and_then(|r| r.last())
                .and_then(|r| r["trials_ok"].as_u64())
                .unwrap_or(0)
                >= at_least
            {
                return;
            }
        }
        assert!(
            start.elapsed() < limit,
            "no {at_least} trials stored within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn last_run(lab: &Lab) -> Value {
    lab.json(&["ls", "--json"])
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[test]
fn ctrl_c_keeps_finished_trials_and_marks_the_run_interrupted() {
    let lab = Lab::new();
    let child = lab
        .cmd()
        .args([
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "50",
            "--duration",
            "100ms",
            "--warmup",
            "0",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_trials(&lab, 2, Duration::from_secs(30));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "128 + SIGINT, as shells report it"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    let run = last_run(&lab);
    assert_eq!(run["status"], "interrupted");
    assert!(run["trials_ok"].as_u64().unwrap() >= 2);
    assert_eq!(
        run["trials_failed"], 0,
        "the trial in flight is dropped, not recorded as failed"
    );
}

#[test]
fn sigkill_leaves_a_consistent_database_with_the_run_incomplete() {
    let lab = Lab::new();
    let mut child = lab
        .cmd()
        .args([
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "50",
            "--duration",
            "100ms",
            "--warmup",
            "0",
            "--quiet",
        ])
        .spawn()
        .unwrap();
    wait_for_trials(&lab, 2, Duration::from_secs(30));
    child.kill().unwrap();
    child.wait().unwrap();
    let run = last_run(&lab);
    assert_eq!(run["status"], "incomplete");
    assert!(run["trials_ok"].as_u64().unwrap() >= 2);
    let show = lab.json(&["show", "last", "--json"]);
    assert!(show["points"][0]["throughput"]["point"].as_f64().unwrap() > 0.0);
    // The database still takes new runs.
    lab.short_spin(&[]);
    assert_eq!(last_run(&lab)["status"], "complete");
}

#[test]
fn two_scalelab_processes_can_write_one_database_at_once() {
    let lab = Lab::new();
    let spawn = || {
        lab.cmd()
            .args([
                "run",
                "spin",
                "--tasks",
                "1",
                "--runs",
                "4",
                "--duration",
                "50ms",
                "--warmup",
                "0",
                "--quiet",
            ])
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let runs = lab.json(&["ls", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter()
            .all(|r| r["trials_ok"] == 4 && r["status"] == "complete"),
        "{runs:?}"
    );
}

#[test]
fn a_crashing_trial_fails_alone_and_the_run_goes_on() {
    // page_fault with a size the kernel cannot map fails every trial: the run completes and is
    // stored, and as it measured nothing it exits 2 saying why (issue 13: it exited 0).
    let lab = Lab::new();
    let out = lab
        .cmd()
        .args([
            "run",
            "page_fault",
            "-p",
            "size=1T",
            "--tasks",
            "1",
            "--runs",
            "2",
            "--duration",
            "50ms",
            "--warmup",
            "0",
        ])
        .env("SCALELAB_DB", lab.db())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: every trial of run 1 failed") && stderr.contains("mmap"),
        "{stderr}"
    );
    let export = lab.json(&["export", "last"]);
    assert_eq!(export["run"]["meta"]["status"], "complete");
    for t in trials(&export) {
        assert_eq!(t["outcome"]["status"], "failed");
        assert!(
            t["outcome"]["reason"].as_str().unwrap().contains("mmap"),
            "{t}"
        );
    }
}

/// Bug: with many more tasks than CPUs and a tiny window, a task that got no CPU until after the
/// window closed recorded no usage and failed the whole trial ("did not record its resource usage").
#[test]
fn tasks_that_never_run_inside_the_window_do_not_fail_the_trial() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "spin",
        "--tasks",
        "256",
        "--runs",
        "2",
        "--duration",
        "5ms",
        "--warmup",
        "0",
        "--quiet",
    ]);
    for t in trials(&lab.json(&["export", "last"])) {
        let m = ok_trial(t);
        assert_eq!(m["task_ops"].as_array().unwrap().len(), 256);
    }
}

/// `--db postgres://…` used to create `./postgres:/…` as a SQLite file: a URL is never a path
/// (a PostgreSQL URL names a server, here one that cannot be reached: nothing is measured).
#[test]
fn a_database_url_is_refused_and_creates_nothing() {
    let lab = Lab::new();
    for (db, says) in [
        (
            "postgres://scalelab:secret@127.0.0.1:1/perf",
            "cannot connect to postgres://scalelab:***@127.0.0.1:1/perf",
        ),
        ("ftp://h/x.db", "unknown URL scheme"),
    ] {
        let err = lab.fails(&[
            "--db",
            db,
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "50ms",
        ]);
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("secret"), "{err}");
        let mut env = lab.cmd();
        env.env("SCALELAB_DB", db).arg("ls");
        assert_eq!(env.output().unwrap().status.code(), Some(2));
    }
    let left: Vec<_> = std::fs::read_dir(lab.path("."))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "created {left:?}");
}
