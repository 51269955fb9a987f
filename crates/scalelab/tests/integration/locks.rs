//! `--locks` and `scalelab locks` on real, short workloads: a shared futex mutex shows up as the
//! top user lock, attributed to the workload's locking function; a shared directory shows its
//! `i_rwsem` contention; the private variants show (near) none. Lock tracing needs root (or
//! CAP_PERFMON) and a mounted tracefs: where they are missing, the tests check the warning and
//! skip the rest, saying why.

use std::process::Command;

use serde_json::Value;

use crate::common::{Lab, kernel_tracer_fell_back};

impl Lab {
    /// `scalelab run WORKLOAD -p shared=… --tasks N --locks`, short; `false` when lock tracing is
    /// unavailable here (after checking that the run still stored its measurements).
    fn run_traced(&self, workload: &str, shared: bool, tasks: &str) -> bool {
        self.run_traced_by(workload, shared, tasks, "kernel")
    }

    /// [`run_traced`](Self::run_traced) with `--tracer TRACER`.
    fn run_traced_by(&self, workload: &str, shared: bool, tasks: &str, tracer: &str) -> bool {
        self.run_traced_with(workload, shared, tasks, &["--locks", "--tracer", tracer])
    }

    /// [`run_traced`](Self::run_traced) with `tracing`, the options that ask for locks.
    fn run_traced_with(&self, workload: &str, shared: bool, tasks: &str, tracing: &[&str]) -> bool {
        let shared = format!("shared={shared}");
        let mut args = vec![
            "run",
            workload,
            "-p",
            &shared,
            "--tasks",
            tasks,
            "--runs",
            "1",
            "--duration",
            "700ms",
            "--warmup",
            "100ms",
            "--quiet",
        ];
        args.extend_from_slice(tracing);
        let (_, stderr) = self.ok_with_stderr(&args);
        if stderr.contains("lock tracing unavailable") {
            assert!(
                stderr.contains(" — "),
                "the warning must name the fix: {stderr}"
            );
            let export = self.json(&["export", "last"]);
            let trials = export["run"]["trials"].as_array().unwrap();
            assert!(trials.iter().all(|t| t["outcome"]["status"] == "ok"));
            eprintln!("skipped: {stderr}");
            return false;
        }
        let export = self.json(&["export", "last"]);
        for t in export["run"]["trials"].as_array().unwrap() {
            assert_eq!(t["outcome"]["status"], "ok", "trial failed: {t}\n{stderr}");
            assert!(
                t["outcome"]["locks"].is_object(),
                "no lock report: {t}\n{stderr}"
            );
        }
        true
    }
}

fn rows<'a>(table: &'a Value, side: &str) -> Vec<&'a Value> {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == side)
        .collect()
}

/// The waits of a trial's lock report's rows on `side` (`user`, `kernel`), summed.
fn contentions(report: &Value, side: &str) -> u64 {
    report[side]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["contentions"].as_u64().unwrap())
        .sum()
}

/// `run spin` with `extra` fails, its error saying `says`.
fn refused(lab: &Lab, extra: &[&str], says: &str) {
    let mut args = vec!["run", "spin", "--tasks", "1", "--runs", "1"];
    args.extend_from_slice(extra);
    let err = lab.fails(&args);
    assert!(err.contains(says), "{extra:?}: {err}");
}

fn total_wait(rows: &[&Value], kind: &str) -> u64 {
    rows.iter()
        .filter(|r| r["kind"] == kind)
        .map(|r| r["wait_total_ns"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_shared_futex_mutex_is_the_top_user_lock_attributed_to_its_lock_function() {
    let lab = Lab::new();
    if !lab.run_traced("futex_mutex", true, "2") {
        return;
    }
    let shared = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let user = rows(&shared, "user");
    assert!(!user.is_empty(), "no futex waits: {shared}");
    let top = user[0];
    assert!(
        top["caller"]
            .as_str()
            .unwrap()
            .ends_with("futex_mutex::futex_mutex_lock"),
        "top user lock not attributed to futex_mutex_lock: {top}"
    );
    assert_eq!(top["kind"], "futex");
    let contended = top["contentions"].as_u64().unwrap();
    assert!(contended > 100, "only {contended} waits on a shared mutex");
    assert!(top["wait_per_op_ns"].as_f64().unwrap() > 0.0);
    assert!(
        rows(&shared, "kernel").is_empty(),
        "--user shows user locks only"
    );
    let text = lab.ok(&["locks", "last", "--at", "2", "--user"]);
    assert!(
        text.contains("futex_mutex_lock") && text.contains("avg wait"),
        "{text}"
    );

    assert!(lab.run_traced("futex_mutex", false, "2"));
    let private = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let waits: u64 = rows(&private, "user")
        .iter()
        .map(|r| r["contentions"].as_u64().unwrap())
        .sum();
    assert!(
        waits * 100 < contended,
        "shared=false should show (near) no futex waits: {waits} vs {contended} shared"
    );
}

/// The two tracers (`--tracer kernel`, the default, and `perf`) on the same workload: the same
/// top user lock and caller, and counts of the same order (the runs are apart: the counts are
/// each run's own). The kernel one sums every wait and says what it sampled; in CI
/// (`SCALELAB_REQUIRE_BPF`) it must not have fallen back.
#[test]
fn the_kernel_and_the_perf_tracer_name_the_same_hot_futex_mutex() {
    let lab = Lab::new();
    if !lab.run_traced_by("futex_mutex", true, "2", "perf") {
        return;
    }
    let perf = lab.json(&["export", "last"]);
    assert!(lab.run_traced_by("futex_mutex", true, "2", "kernel"));
    let kernel = lab.json(&["export", "last"]);
    let report = |export: &Value| export["run"]["trials"][0]["outcome"]["locks"].clone();
    let (p, k) = (report(&perf), report(&kernel));
    assert!(p["sampling"].is_null(), "perf reads every wait: {p}");
    if kernel_tracer_fell_back(&k) {
        return;
    }
    let sampling = &k["sampling"];
    let waits = sampling["waits"].as_u64().unwrap();
    let sampled = sampling["sampled"].as_u64().unwrap();
    assert!(sampled > 0 && sampled <= waits, "{sampling}");
    for (r, what) in [(&p, "perf"), (&k, "kernel")] {
        let top = &r["user"][0];
        assert!(
            top["caller"]
                .as_str()
                .unwrap()
                .ends_with("futex_mutex::futex_mutex_lock"),
            "the {what} tracer's top user lock: {top}"
        );
    }
    let top = &k["user"][0];
    let (user_waits, kernel_waits) = (contentions(&k, "user"), contentions(&k, "kernel"));
    // A lock's waits are shared out between its callers in whole waits that add up to them.
    assert_eq!(
        user_waits + kernel_waits,
        waits,
        "the rows share out every wait summed: {k}"
    );
    assert!(top["sampled"]["episodes"].as_u64().unwrap() > 0, "{top}");
    assert!(
        top["sampled"]["error"].as_u64().unwrap() <= top["wait_total"].as_u64().unwrap() / 4,
        "a lock of thousands of waits with one caller is known within ±25%: {top}"
    );
    let mut perf_waits = p["user"][0]["contentions"].as_u64().unwrap();
    let mut kernel_top = top["contentions"].as_u64().unwrap();
    eprintln!(
        "kernel tracer: {waits} waits summed, {sampled} sampled, top {kernel_top} waits {} ± {} ns; perf tracer: top {perf_waits} waits",
        top["wait_total"], top["sampled"]["error"]
    );
    let one_order = |k: u64, p: u64| k * 10 > p && k < p * 10;
    // How often two tasks on two vCPUs contend depends on whether the host runs both vCPUs at
    // once: a CI run read 2005 (kernel) against 22807 (perf) waits in runs a few seconds apart.
    // Two more runs, as far apart, then decide; every pair is printed.
    let first = (kernel_top, perf_waits);
    if !one_order(kernel_top, perf_waits) {
        let top_waits = |tracer: &str| {
            assert!(lab.run_traced_by("futex_mutex", true, "2", tracer));
            report(&lab.json(&["export", "last"]))["user"][0]["contentions"]
                .as_u64()
                .unwrap()
        };
        perf_waits = top_waits("perf");
        kernel_top = top_waits("kernel");
        eprintln!("again: kernel {kernel_top}, perf {perf_waits} waits");
    }
    assert!(
        one_order(kernel_top, perf_waits),
        "the two runs' waits on the hot lock are of one order: {kernel_top} and {perf_waits} \
         (first {first:?})"
    );
}

/// `--futex-waits sleeps`: the kernel tracer times the futex waits that slept, at the
/// scheduler, and says so. On a shared futex_mutex most contended calls return at once (the
/// word changed before the kernel looked: ~400 of ~35k slept in a 700 ms trial here), so the
/// sleeps are fewer than the calls `--futex-waits calls` counts, but as many as the report says
/// and named at the same caller. Where the option cannot apply, it is refused, naming why.
#[test]
fn futex_sleeps_are_the_waits_that_slept_and_the_report_says_so() {
    let lab = Lab::new();
    let traced = |futex: &str| {
        let shown = lab.run_traced_with(
            "futex_mutex",
            true,
            "2",
            &["--locks=user", "--futex-waits", futex],
        );
        let export = lab.json(&["export", "last"]);
        (
            shown,
            export["run"]["trials"][0]["outcome"]["locks"].clone(),
        )
    };
    let (shown, sleeps) = traced("sleeps");
    if !shown || kernel_tracer_fell_back(&sleeps) {
        return;
    }
    let notes = sleeps["notes"].to_string();
    assert!(
        notes.contains("the futex waits that slept (--futex-waits sleeps)"),
        "the report says what it counted: {notes}"
    );
    let waits = sleeps["sampling"]["waits"].as_u64().unwrap();
    assert_eq!(
        contentions(&sleeps, "user"),
        waits,
        "the rows share out every sleep summed: {sleeps}"
    );
    assert!(
        waits > 0,
        "two tasks on one futex mutex sleep at times: {sleeps}"
    );
    let top = &sleeps["user"][0];
    assert!(
        top["caller"]
            .as_str()
            .unwrap()
            .ends_with("futex_mutex::futex_mutex_lock"),
        "a sleep's chain, taken at its blocking switch, names the lock's caller: {top}"
    );
    let (_, calls) = traced("calls");
    let calls_waits = calls["sampling"]["waits"].as_u64().unwrap();
    eprintln!("futex_mutex shared N=2: {waits} sleeps, {calls_waits} calls");
    assert!(
        !calls["notes"].to_string().contains("--futex-waits sleeps"),
        "{calls}"
    );

    let bad = |extra: &[&str], says: &str| refused(&lab, extra, says);
    bad(&["--futex-waits", "sleeps"], "add --locks");
    bad(
        &["--locks=kernel", "--futex-waits", "sleeps"],
        "no futex waits are traced",
    );
    bad(
        &["--locks", "--tracer", "perf", "--futex-waits", "sleeps"],
        "needs --tracer kernel",
    );
}

#[test]
fn a_shared_directory_shows_its_rwsem_contention_and_private_ones_do_not() {
    let lab = Lab::new();
    if !lab.run_traced("create_unlink", true, "2") {
        return;
    }
    let shared = lab.json(&["locks", "last", "--at", "2", "--kernel", "--json"]);
    let kernel = rows(&shared, "kernel");
    let dir_lock: Vec<&&Value> = kernel
        .iter()
        .filter(|r| r["kind"] == "rwsem:write")
        .collect();
    assert!(!dir_lock.is_empty(), "no rwsem:write contention: {shared}");
    let callers: Vec<&str> = dir_lock
        .iter()
        .map(|r| r["caller"].as_str().unwrap())
        .collect();
    assert!(
        callers.iter().any(|c| [
            "path_openat",
            "do_unlinkat",
            "open_last_lookups",
            "filename_create"
        ]
        .contains(c)),
        "the directory lock should be taken by the create/unlink paths: {callers:?}"
    );
    let shared_wait = total_wait(&kernel, "rwsem:write");

    assert!(lab.run_traced("create_unlink", false, "2"));
    let private = lab.json(&["locks", "last", "--at", "2", "--kernel", "--json"]);
    let private_wait = total_wait(&rows(&private, "kernel"), "rwsem:write");
    assert!(
        shared_wait > 5 * private_wait,
        "directory lock wait: shared {shared_wait} ns, private {private_wait} ns"
    );
}

#[test]
fn what_grows_ranks_lock_wait_per_op_across_points() {
    let lab = Lab::new();
    if !lab.run_traced("futex_mutex", true, "1,2") {
        return;
    }
    let growth = lab.json(&["locks", "last", "--json"]);
    assert_eq!(growth["points"], serde_json::json!([1, 2]));
    let user: Vec<&Value> = growth["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == "user")
        .collect();
    assert!(!user.is_empty(), "{growth}");
    assert!(user[0]["growth_ns"].as_f64().unwrap() > 0.0, "{}", user[0]);
    let text = lab.ok(&["locks", "last", "--top", "3"]);
    for needle in ["wait/op N=1", "wait/op N=2", "growth", "futex_mutex_lock"] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
}

#[test]
fn locks_of_a_run_without_locks_is_refused_with_the_fix() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let stderr = lab.fails(&["locks", "last"]);
    assert!(stderr.contains("--locks"), "{stderr}");
}

/// In a private mount namespace without tracefs (needs root and `unshare`; skipped otherwise),
/// `--locks` warns with the fix, the run is still stored, and `locks` repeats the reason.
#[test]
fn without_tracefs_the_run_is_stored_and_the_warning_names_the_fix() {
    let lab = Lab::new();
    let scalelab = assert_cmd::cargo::cargo_bin("scalelab");
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; exec \"$@\"")
        .arg("sh")
        .arg(&scalelab)
        .args([
            "run", "futex_mutex", "--tasks", "1", "--runs", "1", "--duration", "100ms",
            "--warmup", "0", "--quiet", "--locks",
        ])
        .env("SCALELAB_DB", lab.db())
        .current_dir(lab.dir.path())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        other => {
            eprintln!("skipped: cannot run in a private mount namespace here: {other:?}");
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("lock tracing unavailable")
            && stderr.contains("mount -t tracefs nodev /sys/kernel/tracing"),
        "{stderr}"
    );
    let export = lab.json(&["export", "last"]);
    let trials = export["run"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 1);
    assert_eq!(trials[0]["outcome"]["status"], "ok");
    let warnings = export["run"]["meta"]["warnings"].to_string();
    assert!(warnings.contains("mount -t tracefs"), "{warnings}");
    let refused = lab.cmd().args(["locks", "last"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("mount -t tracefs"));
}

#[test]
fn a_stack_size_outside_perfs_limits_is_refused_naming_them() {
    let lab = Lab::new();
    for bad in ["100", "65536"] {
        let stderr = lab.fails(&[
            "run",
            "spin",
            "--tasks",
            "1",
            "--locks",
            "--stack-size",
            bad,
        ]);
        assert!(
            stderr.contains("multiple of 8") && stderr.contains("65528"),
            "{stderr}"
        );
    }
    let stderr = lab.fails(&["run", "spin", "--tasks", "1", "--stack-size", "8192"]);
    assert!(stderr.contains("--locks"), "{stderr}");
}

/// A C program with one hot `pthread_mutex_t` taken in `take_the_lock`, built as programs are
/// (`gcc -O2 -g -pthread`, no frame pointers): `locks last --user` names that function as the
/// caller of the top user lock, though Debian's glibc has no frame pointers.
///
/// Needs `run --cmd … --locks` (issue 14 part A) and DWARF-unwound futex chains (part B):
/// until part A lands the CLI refuses the run, and this test fails saying so.
#[test]
fn locks_of_a_c_program_without_frame_pointers_name_the_function_taking_the_lock() {
    let lab = Lab::new();
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../perf/tests/programs/hot_mutex.c"
    );
    let exe = lab.path("hot_mutex");
    let gcc = Command::new("gcc")
        .args(["-O2", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(source)
        .output()
        .expect("gcc is needed to build the test program: apt-get install gcc");
    assert!(
        gcc.status.success(),
        "{}",
        String::from_utf8_lossy(&gcc.stderr)
    );
    let cmd = format!("{} {{n}} 0.7", exe.display());
    let out = lab
        .cmd()
        .args([
            "run",
            "--cmd",
            &cmd,
            "--tasks",
            "2",
            "--runs",
            "1",
            "--quiet",
            "--locks=user",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`run --cmd … --locks` is refused: this test waits for issue 14 part A (--cmd with \
         --locks) to land; scalelab said: {stderr}"
    );
    if stderr.contains("lock tracing unavailable") {
        eprintln!("skipped: {stderr}");
        return;
    }
    let table = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let user = rows(&table, "user");
    let top = user
        .first()
        .unwrap_or_else(|| panic!("no futex waits: {table}"));
    assert_eq!(top["caller"], "take_the_lock", "top user lock: {top}");
}

/// `--chain-every 1`: the in-kernel tracers record the chains of every blocking switch and every
/// lock wait (the reference `bench/agreement/explain-sampling-agreement` compares the sample with), and
/// the counts say so; where it cannot apply it is refused, naming why.
#[test]
fn chain_every_one_records_the_chains_of_every_episode() {
    let lab = Lab::new();
    if !lab.run_traced_with(
        "futex_mutex",
        true,
        "2",
        &["--locks=user", "--offcpu", "--chain-every", "1"],
    ) {
        return;
    }
    let export = lab.json(&["export", "last"]);
    let outcome = &export["run"]["trials"][0]["outcome"];
    let (locks, offcpu) = (&outcome["locks"], &outcome["offcpu"]);
    if kernel_tracer_fell_back(locks) || kernel_tracer_fell_back(offcpu) {
        return;
    }
    let waits = &locks["sampling"];
    let (summed, sampled, lost) = (
        waits["waits"].as_u64().unwrap(),
        waits["sampled"].as_u64().unwrap(),
        waits["lost"].as_u64().unwrap(),
    );
    assert!(summed > 0, "two tasks on one futex mutex wait: {locks}");
    assert!(
        sampled + lost >= summed,
        "every wait in the window picked for a chain: {waits}"
    );
    let switches = &offcpu["sampling"];
    let (blocking, recorded, lost) = (
        switches["blocking_switches"].as_u64().unwrap(),
        switches["sampled"].as_u64().unwrap(),
        switches["lost"].as_u64().unwrap(),
    );
    assert!(blocking > 0, "{offcpu}");
    assert_eq!(
        recorded + lost,
        blocking,
        "every blocking switch recorded: {switches}"
    );
    let text = lab.ok(&["explain", "last"]);
    let whole = lost == 0 && waits["lost"] == 0 && sampled >= summed;
    assert!(
        !whole || text.contains("call chains of every episode (--chain-every 1): off-CPU N=2 all "),
        "{text}"
    );

    let bad = |extra: &[&str], says: &str| refused(&lab, extra, says);
    bad(
        &["--chain-every", "4"],
        "add --offcpu, --locks or --explain",
    );
    bad(
        &["--offcpu", "--tracer", "perf", "--chain-every", "4"],
        "needs --tracer kernel",
    );
    bad(
        &["--offcpu", "--chain-every", "0"],
        "0 is not in 1..=1000000",
    );
}
