//! External commands through the real CLI: the CPU affinity limit (`nproc` sees N CPUs), steps
//! accounted separately, op counts from output, failures and timeouts recorded per trial, and a
//! command that cannot start refused before any trial runs.

use crate::common::Lab;

#[test]
fn nproc_sees_exactly_n_cpus() {
    let lab = Lab::new();
    let out = lab
        .cmd()
        .args([
            "run",
            "--cmd",
            "nproc",
            "--ops-regex",
            r"(\d+)",
            "--tasks",
            "1,2",
            "--runs",
            "2",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export = lab.json(&["export", "last"]);
    let trials = export["run"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4);
    for t in trials {
        assert_eq!(t["outcome"]["status"], "ok", "{t}");
        // The command printed how many CPUs it may use: exactly the point's N.
        assert_eq!(t["outcome"]["task_ops"][0], t["n"], "{t}");
        assert_eq!(
            t["outcome"]["placement"].as_array().unwrap().len() as u64,
            t["n"].as_u64().unwrap()
        );
    }
}

#[test]
fn warm_up_runs_run_the_command_first_at_the_largest_n_and_store_no_trial() {
    // Each run of the command appends its N to a file: two warm-up runs at N=2, then the
    // trials round-robin. Only the trials are stored.
    let lab = Lab::new();
    let log = lab.path("runs.log");
    let cmd = format!("nproc >> {}", log.display());
    let (_, stderr) = lab.ok_with_stderr(&[
        "run",
        "--cmd",
        &cmd,
        "--tasks",
        "1,2",
        "--runs",
        "2",
        "--warmup-runs",
        "2",
    ]);
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        ["2", "2", "1", "2", "1", "2"],
        "{stderr}"
    );
    assert!(stderr.contains("warm-up run 2 of 2 at N=2"), "{stderr}");
    let export = lab.json(&["export", "last"]);
    assert_eq!(export["run"]["trials"].as_array().unwrap().len(), 4);
    assert!(
        export["run"]["meta"]["command_line"]
            .as_str()
            .unwrap()
            .contains("--warmup-runs 2"),
        "the stored command line says it warmed up: {}",
        export["run"]["meta"]["command_line"]
    );
}

#[test]
fn steps_are_timed_and_accounted_separately() {
    let lab = Lab::new();
    let tree = lab.dir.path().join("tree");
    let out = lab
        .cmd()
        .current_dir(lab.dir.path())
        .args([
            "run",
            "--cmd",
            &format!(
                "mkdir -p {0} && seq 1 2000 | while read i; do echo $i > {0}/f$i; done",
                tree.display()
            ),
            "--step",
            &format!(
                "md5=find {} -type f -exec md5sum {{}} + > /dev/null",
                tree.display()
            ),
            "--step",
            &format!("rm=rm -rf {}", tree.display()),
            "--tasks",
            "1",
            "--runs",
            "2",
            "--ops",
            "2000",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("md5") && stdout.contains("rm") && stdout.contains("step"),
        "{stdout}"
    );
    let export = lab.json(&["export", "last"]);
    for t in export["run"]["trials"].as_array().unwrap() {
        let m = &t["outcome"];
        let steps = m["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["cmd", "md5", "rm"]);
        let walls: u64 = steps.iter().map(|s| s["wall"].as_u64().unwrap()).sum();
        assert_eq!(
            walls,
            m["window"].as_u64().unwrap(),
            "the window is the sum of the timed steps"
        );
        // Creating 2000 files costs system time in the first step; the whole tree's usage is counted.
        assert!(steps[0]["usage"]["sys"].as_u64().unwrap() > 0);
        assert_eq!(m["task_ops"][0], 2000);
    }
    assert!(!tree.exists(), "the rm step ran");
}

#[test]
fn failing_and_hanging_commands_fail_their_trials_and_the_run_goes_on() {
    let lab = Lab::new();
    let out = lab
        .cmd()
        .args([
            "run",
            "--cmd",
            "echo broken pipe dream >&2; exit 3",
            "--tasks",
            "1",
            "--runs",
            "2",
            "--quiet",
        ])
        .output()
        .unwrap();
    // Every trial failed: the run is stored, and the exit status says it measured nothing.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for t in lab.json(&["export", "last"])["run"]["trials"]
        .as_array()
        .unwrap()
    {
        let reason = t["outcome"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("exited with code 3") && reason.contains("broken pipe dream"),
            "{reason}"
        );
    }
    let started = std::time::Instant::now();
    let out = lab
        .cmd()
        .args([
            "run",
            "--cmd",
            "sleep 30",
            "--timeout",
            "300ms",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "its only trial failed");
    assert!(
        started.elapsed().as_secs() < 20,
        "the hung command was killed at its timeout"
    );
    let t = &lab.json(&["export", "last"])["run"]["trials"][0];
    assert!(
        t["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{t}"
    );
}

#[test]
fn a_command_that_cannot_start_is_refused_before_any_trial() {
    let lab = Lab::new();
    let err = lab.fails(&["run", "--cmd", "no-such-tool-xyz -j{n}", "--tasks", "1"]);
    assert!(err.contains("no-such-tool-xyz"), "{err}");
    assert!(!lab.db().exists(), "nothing was stored");
    let out = lab
        .cmd()
        .args(["run", "spin", "--cmd", "true"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a workload and --cmd together are refused"
    );
}

/// Issue 16: every `--pin` strategy and a CPU list are stored and shown; a CPU outside the
/// usable set is refused with the usable list.
#[test]
fn pin_strategies_are_stored_and_an_unusable_cpu_is_refused() {
    let lab = Lab::new();
    for pin in ["compact", "spread-nodes", "none", "0"] {
        lab.short_spin(&["--pin", pin]);
        let shown = lab.ok(&["show", "last"]);
        assert!(shown.contains(&format!("pin {pin} ·")), "{pin}: {shown}");
        assert!(shown.contains("\ntopology: "), "{shown}");
    }
    // An old name still parses, as `cores`.
    lab.short_spin(&["--pin", "auto"]);
    assert!(lab.ok(&["show", "last"]).contains("pin cores ·"));
    let err = lab.fails(&["run", "spin", "--tasks", "1", "--pin", "0,4096"]);
    assert!(
        err.contains("CPU 4096 is not usable") && err.contains("usable CPUs: "),
        "{err}"
    );
    let err = lab.fails(&["run", "spin", "--pin", "sideways"]);
    assert!(err.contains("cores, compact, spread-nodes, none"), "{err}");
}
