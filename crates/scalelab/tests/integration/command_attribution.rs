//! `--profile` and `--locks` on `--cmd` and its steps, end to end: a C program with one hot
//! mutex taken in `take_the_lock` and a hot private computation (`programs/mutex_worker.c`,
//! built with plain `gcc -O2 -g -pthread`), a step doing file-system work, and a command of two
//! worker processes. Needs gcc; the profile tests need perf and the lock tests lock tracing
//! (root and tracefs): where those are missing the tests say why and return.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Lab, perf_available};

const PROGRAM: &str = "tests/integration/programs/mutex_worker.c";

impl Lab {
    /// Builds the mutex worker as `./mutex_worker` in the lab's directory.
    fn build_mutex_worker(&self) {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(PROGRAM);
        let out = Command::new("gcc")
            .args(["-O2", "-g", "-pthread", "-o"])
            .arg(self.path("mutex_worker"))
            .arg(&source)
            .output()
            .unwrap_or_else(|e| panic!("these tests need gcc (apt-get install gcc): {e}"));
        assert!(
            out.status.success(),
            "gcc {}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `scalelab run ARGS… --runs 1 --quiet`, expecting success; returns stderr.
    fn run_command(&self, args: &[&str]) -> String {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--runs", "1", "--quiet"]);
        let (_, stderr) = self.ok_with_stderr(&all);
        let export = self.json(&["export", "last"]);
        for t in export["run"]["trials"].as_array().unwrap() {
            assert_eq!(t["outcome"]["status"], "ok", "trial failed: {t}\n{stderr}");
        }
        stderr
    }
}

/// False (and why, printed) when the run's warnings say lock tracing is unavailable here.
fn traced(stderr: &str) -> bool {
    if stderr.contains("lock tracing unavailable") {
        println!("skipped: {stderr}");
        return false;
    }
    true
}

/// The function names of a `profile … --json` point.
fn functions(point: &Value) -> Vec<String> {
    point["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

/// The only point of a `profile --json` answer of a one-point run (or the `--at` one).
fn only_point(profile: &Value) -> &Value {
    let points = profile["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{profile}");
    &points[0]
}

/// The user-lock rows of a `locks --json` point.
/// One line per user lock row (caller, contentions) and the notes: what a failure prints, short
/// enough for CI's log to keep.
fn rows_summary(point: &Value) -> String {
    let rows: Vec<String> = user_rows(point)
        .iter()
        .map(|r| format!("{} ×{}", r["caller"], r["contentions"]))
        .collect();
    format!("rows: {}; notes: {}", rows.join(", "), point["notes"])
}

fn user_rows(point: &Value) -> Vec<&Value> {
    point["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["side"] == "user")
        .collect()
}

#[test]
fn a_profiled_command_shows_its_private_work_and_none_of_scalelab() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    lab.build_mutex_worker();
    lab.run_command(&[
        "--cmd",
        "./mutex_worker {n} a 20000",
        "--tasks",
        "1,2",
        "--profile",
    ]);
    let profile = lab.json(&["profile", "last", "--at", "2", "--top", "40", "--json"]);
    let point = only_point(&profile);
    let names = functions(point);
    assert!(
        names.iter().any(|f| f == "private_work_a"),
        "private_work_a is not among the top functions: {names:?}"
    );
    // The lock path too: the critical section's function, and glibc's mutex code named from
    // its debug file (a command's stacks are unwound with DWARF, so this holds without frame
    // pointers).
    assert!(
        names.iter().any(|f| f == "take_the_lock"),
        "take_the_lock is not among the top functions: {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|f| f.contains("pthread_mutex") || f.contains("lll_lock")),
        "no pthread mutex function among the top functions: {names:?}"
    );
    assert!(point["samples"].as_u64().unwrap() > 0 && point["ops"].as_f64() == Some(1.0));
    // Only the command's process tree is sampled: never scalelab, which started and waited.
    let dsos: Vec<&str> = point["dsos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["dso"].as_str().unwrap())
        .collect();
    assert!(!dsos.contains(&"scalelab"), "scalelab sampled: {dsos:?}");
    // What grows across N=1,2 reads the same profiles.
    let text = lab.ok(&["profile", "last"]);
    assert!(text.contains("private_work_a"), "{text}");
}

#[test]
fn a_traced_command_shows_the_futex_waits_of_its_hot_mutex() {
    let lab = Lab::new();
    lab.build_mutex_worker();
    let stderr = lab.run_command(&[
        "--cmd",
        "./mutex_worker {n} a 20000",
        "--tasks",
        "1,2",
        "--locks",
    ]);
    if !traced(&stderr) {
        return;
    }
    let at2 = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let rows = user_rows(&at2);
    assert!(rows.iter().all(|r| r["kind"] == "futex"), "{at2}");
    // The hot mutex is the futex word waited on most (its rows are split by call site while
    // frame pointers give garbage frames past glibc; the main thread's joins are a few long
    // waits). Every 64th of 20,000 rounds sleeps holding the lock: ~300 waits per thread.
    let mut by_lock: HashMap<&str, (u64, u64)> = HashMap::new();
    for r in &rows {
        let e = by_lock.entry(r["lock"].as_str().unwrap()).or_default();
        e.0 += r["contentions"].as_u64().unwrap();
        e.1 += r["wait_total_ns"].as_u64().unwrap();
    }
    let (hot, (waits, waited)) = by_lock
        .iter()
        .max_by_key(|(_, (k, _))| *k)
        .unwrap_or_else(|| panic!("no futex waits: {at2}"));
    assert!(hot.starts_with("0x"), "{hot}: {at2}");
    assert!(
        *waits >= 50,
        "only {waits} futex waits on the hot mutex: {at2}"
    );
    assert!(*waited > 0);
    let waits = *waits;
    // One thread never waits for its own mutex (a few waits of the main thread's join at most).
    let at1 = lab.json(&["locks", "last", "--at", "1", "--user", "--json"]);
    let alone: u64 = user_rows(&at1)
        .iter()
        .map(|r| r["contentions"].as_u64().unwrap())
        .sum();
    assert!(alone < waits / 10, "{alone} waits with one thread: {at1}");
    assert_eq!(at2["lost_records"], 0, "{at2}");
    let text = lab.ok(&["locks", "last", "--user"]);
    assert!(text.contains("futex"), "{text}");
}

/// The caller of a plain `-O2` program's hot mutex is the function that takes it: frame
/// pointers stop in glibc's `__lll_lock_wait` (built without them), so the futex waits' user
/// stacks are unwound from a copy of the stack with the binaries' unwind tables. Before, all
/// 618 waits ended in "(unknown: unwinding stopped at 0x100005e71)".
#[test]
fn the_futex_caller_of_a_plain_o2_program_is_the_function_taking_the_lock() {
    let lab = Lab::new();
    lab.build_mutex_worker();
    let stderr = lab.run_command(&[
        "--cmd",
        "./mutex_worker 2 a 20000",
        "--tasks",
        "2",
        "--locks",
    ]);
    if !traced(&stderr) {
        return;
    }
    let at2 = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let rows = user_rows(&at2);
    // The hot mutex is the futex waited on most often (main's one long wait in pthread_join
    // may hold more time, and is named `main`, rightly).
    let hot = rows
        .iter()
        .max_by_key(|r| r["contentions"].as_u64().unwrap())
        .unwrap();
    assert_eq!(hot["caller"], "take_the_lock", "{}", rows_summary(&at2));
    assert!(
        rows.iter()
            .all(|r| !r["caller"].as_str().unwrap().starts_with("(unknown")),
        "every wait unwinds to a named caller: {}",
        rows_summary(&at2)
    );
}

#[test]
fn each_step_has_its_own_profile_and_a_file_system_step_shows_the_kernel_path() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    lab.build_mutex_worker();
    lab.run_command(&[
        "--cmd",
        "./mutex_worker 1 a 20000",
        "--step",
        "files=mkdir d && cd d && seq 1 3000 | xargs touch && cd .. && rm -rf d",
        "--tasks",
        "1",
        "--profile",
        "--locks",
    ]);
    let main = lab.json(&["profile", "last", "--top", "40", "--json"]);
    assert!(functions(only_point(&main)).contains(&"private_work_a".to_string()));
    let files = lab.json(&[
        "profile", "last", "--step", "files", "--top", "60", "--json",
    ]);
    let point = only_point(&files);
    let names = functions(point);
    assert!(
        !names.contains(&"private_work_a".to_string()),
        "the main command's samples leaked into the step's profile: {names:?}"
    );
    // Creating and unlinking files: the kernel's open/create and unlink paths.
    const PATH: [&str; 10] = [
        "path_openat",
        "do_filp_open",
        "do_sys_openat2",
        "do_unlinkat",
        "vfs_unlink",
        "link_path_walk",
        "lookup_open",
        "open_last_lookups",
        "d_alloc_parallel",
        "filename_create",
    ];
    let total: Vec<String> = point["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kernel"] == true)
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        total.iter().any(|f| PATH.contains(&f.as_str())),
        "no kernel function of the open/unlink path in the step's profile: {total:?}"
    );
    let text = lab.ok(&["profile", "last", "--step", "files"]);
    assert!(text.contains("step: files"), "{text}");
    let text = lab.ok(&["profile", "last"]);
    assert!(
        text.contains("the main command (the others: --step files)"),
        "{text}"
    );
    // An unknown step is refused, naming the steps there are.
    let stderr = lab.fails(&["profile", "last", "--step", "nope"]);
    assert!(stderr.contains("cmd, files"), "{stderr}");
    // The step's lock report is its own too (when lock tracing works here).
    let export = lab.json(&["export", "last"]);
    let steps = &export["run"]["trials"][0]["outcome"]["steps"];
    if steps[1]["locks"].is_object() {
        let point = lab.json(&["locks", "last", "--step", "files", "--at", "1", "--json"]);
        assert_eq!(point["trials"], 1, "{point}");
        let stderr = lab.fails(&["locks", "last", "--step", "nope"]);
        assert!(stderr.contains("cmd, files"), "{stderr}");
    } else {
        println!(
            "lock tracing unavailable here: {}",
            export["run"]["meta"]["warnings"]
        );
    }
}

#[test]
fn a_step_of_a_built_in_run_is_refused() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let stderr = lab.fails(&["profile", "last", "--step", "md5"]);
    assert!(stderr.contains("has no steps"), "{stderr}");
}

#[test]
fn a_multi_process_command_is_profiled_and_traced_in_both_processes() {
    let lab = Lab::new();
    lab.build_mutex_worker();
    let profile = perf_available();
    let mut args = vec![
        "--cmd",
        "./mutex_worker 2 a 15000 & ./mutex_worker 2 b 15000 & wait",
        "--tasks",
        "2",
        "--locks",
    ];
    if profile {
        args.push("--profile");
    }
    let stderr = lab.run_command(&args);
    if profile {
        let point = lab.json(&["profile", "last", "--top", "40", "--json"]);
        let names = functions(only_point(&point));
        for f in ["private_work_a", "private_work_b"] {
            assert!(names.iter().any(|n| n == f), "{f} missing: {names:?}");
        }
    }
    if !traced(&stderr) {
        return;
    }
    let at2 = lab.json(&["locks", "last", "--user", "--at", "2", "--json"]);
    let export = lab.json(&["export", "last"]);
    let report = &export["run"]["trials"][0]["outcome"]["locks"]["user"];
    // Each process has its own mutex (a futex word of its own): heavy waits on two addresses.
    let hot: Vec<&Value> = report
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["contentions"].as_u64().unwrap() >= 20)
        .collect();
    let randomized = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .is_ok_and(|v| v.trim() != "0");
    if randomized {
        let mut addrs: Vec<&str> = hot.iter().map(|r| r["lock"].as_str().unwrap()).collect();
        addrs.sort();
        addrs.dedup();
        assert!(
            addrs.len() >= 2,
            "futex waits of one process only: {report}\n{at2}"
        );
    } else {
        println!("address randomisation is off: both processes' mutexes share an address");
        assert!(!hot.is_empty(), "{report}");
    }
}

/// A profiled step's wall time is the command's own, from its exec to its exit as perf's
/// records stamp them, not perf record's, which sets up before the command and writes its file
/// after it (about 0.3 s here): that is kept apart as `wrapper_wall`. An unprofiled step has
/// none.
#[test]
fn a_profiled_steps_wall_time_is_the_commands_own_and_perfs_is_kept_apart() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    let mut args = vec!["run", "--cmd", "sleep 0.5", "--tasks", "1", "--runs", "2"];
    args.extend_from_slice(&["--profile", "--quiet"]);
    let (_, stderr) = lab.ok_with_stderr(&args);
    assert!(
        stderr.contains("their times are the command's own"),
        "{stderr}"
    );
    let export = lab.json(&["export", "last"]);
    let trials = export["run"]["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    let step = |t: &Value| t["outcome"]["steps"][0].clone();
    let secs = |v: &Value| v.as_f64().unwrap() / 1e9;
    // Trial 0 is profiled (the first trial of each point), trial 1 is not.
    let profiled = step(&trials[0]);
    let wall = secs(&profiled["wall"]);
    let wrapper = secs(&profiled["wrapper_wall"]);
    assert!(profiled["profile"].is_object(), "{profiled}");
    assert!(
        (0.5..1.5).contains(&wall),
        "the command slept 0.5 s; its own wall was {wall} s"
    );
    assert!(
        wrapper > wall,
        "perf record's wall ({wrapper} s) holds the command's ({wall} s)"
    );
    let plain = step(&trials[1]);
    assert!(plain["wrapper_wall"].is_null(), "{plain}");
    assert!(secs(&plain["wall"]) >= 0.5, "{plain}");
}
