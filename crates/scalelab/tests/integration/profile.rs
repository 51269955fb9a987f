//! `--profile` and `scalelab profile` end to end: a real, short profiled run, its perf.data read
//! back by scalelab and by `perf report`, which must agree on the top functions; what grows,
//! the top table, the diff and the flame graphs on that run. Skipped (with the reason printed)
//! where `perf` is not installed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Lab, perf_available};

impl Lab {
    /// Run `run`'s profile folder: `profiles/<db file>/<run uuid>` beside the database.
    fn profiles(&self, run: u32) -> PathBuf {
        let shown = self.json(&["show", &run.to_string(), "--json"]);
        let uuid = shown["run"]["uuid"].as_str().unwrap();
        self.dir.path().join("profiles/lab.db").join(uuid)
    }
}

/// A short profiled page_fault sweep at N=1,2.
fn profiled_run(lab: &Lab) {
    lab.ok(&[
        "run",
        "page_fault",
        "--tasks",
        "1,2",
        "--runs",
        "1",
        "--duration",
        "400ms",
        "--warmup",
        "100ms",
        "--profile",
        "--quiet",
    ]);
}

/// `perf report --no-children --sort sym` self shares by symbol name (named symbols only).
fn perf_report(data: &Path, kallsyms: &Path) -> Vec<(String, f64)> {
    let out = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
        ])
        .args(["--percent-limit", "0", "-i"])
        .arg(data)
        .arg("--kallsyms")
        .arg(kallsyms)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_name: Vec<(String, f64)> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim();
        let Some((pct, rest)) = line.split_once('%') else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        let rest = rest.trim();
        let name = rest
            .strip_prefix("[k] ")
            .or_else(|| rest.strip_prefix("[.] "))
            .unwrap_or(rest)
            .trim()
            .to_string();
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 += pct,
            None => by_name.push((name, pct)),
        }
    }
    by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_name
}

#[test]
fn top_functions_agree_with_perf_report_within_half_a_point() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    profiled_run(&lab);
    let dir = lab.profiles(1);
    let data = dir.join("n2-t1.perf.data");
    let kallsyms = dir.join("kallsyms");
    assert!(data.is_file() && kallsyms.is_file(), "{}", dir.display());

    let ours = lab.json(&[
        "profile",
        "--perf-data",
        data.to_str().unwrap(),
        "--kallsyms",
        kallsyms.to_str().unwrap(),
        "--json",
    ]);
    let mut shares: HashMap<String, f64> = HashMap::new();
    for f in ours["functions"].as_array().unwrap() {
        *shares
            .entry(f["name"].as_str().unwrap().to_string())
            .or_default() += f["self_share"].as_f64().unwrap();
    }
    let theirs = perf_report(&data, &kallsyms);
    assert!(!theirs.is_empty(), "perf report printed no functions");
    let mut compared = 0;
    let mut worst = 0.0f64;
    for (name, pct) in theirs.iter().take(20) {
        if name.starts_with("0x") {
            continue; // perf lists each unresolved address apart; scalelab has [unknown]
        }
        let mine = shares.get(name).copied().unwrap_or(0.0);
        let d = (mine - pct).abs();
        worst = worst.max(d);
        println!("{pct:6.2}% perf  {mine:6.2}% scalelab  {name}");
        assert!(
            d <= 0.5,
            "{name}: perf report {pct:.2}%, scalelab {mine:.2}%"
        );
        compared += 1;
    }
    println!("compared {compared} functions, largest difference {worst:.3} pp");
    assert!(
        compared >= 10,
        "only {compared} named functions in perf's top 20"
    );
}

#[test]
fn a_profiled_run_ranks_what_grows_and_draws_flame_graphs() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    profiled_run(&lab);
    let exported = lab.ok(&["export", "last"]);
    assert!(
        exported.contains("n1-t1.perf.data"),
        "profile paths are stored"
    );

    let grows = lab.json(&["profile", "last", "--json"]);
    let rows = grows["what_grows"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    let text = lab.ok(&["profile", "last"]);
    assert!(text.contains("what grows"), "{text}");

    let at = lab.json(&["profile", "last", "--at", "1", "--json"]);
    let top = &at["points"][0]["functions"];
    let names: Vec<&str> = top
        .as_array()
        .unwrap()
        .iter()
        .take(10)
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    // Faulting pages in is kernel work: the fault path must lead the profile.
    assert!(
        names
            .iter()
            .any(|n| n.contains("page_fault") || n.contains("clear_page")),
        "{names:?}"
    );
    let cost = at["points"][0]["functions"][0]["cost_per_op"]
        .as_f64()
        .unwrap();
    assert!(cost > 0.0 && cost < 1e6, "{cost} ns/op");

    let svg = lab.dir.path().join("fg.svg");
    lab.ok(&[
        "profile",
        "last",
        "--at",
        "2",
        "--flamegraph",
        svg.to_str().unwrap(),
    ]);
    let body = std::fs::read_to_string(&svg).unwrap();
    assert!(
        body.contains("<svg") && body.contains("page_fault"),
        "flame graph"
    );

    // A second run to diff against.
    profiled_run(&lab);
    let diff = lab.json(&["profile", "last", "--diff", "1", "--json"]);
    assert_eq!(diff["n"], 2);
    assert!(!diff["functions"].as_array().unwrap().is_empty());
    let dsvg = lab.dir.path().join("diff.svg");
    lab.ok(&[
        "profile",
        "last",
        "--diff",
        "1",
        "--flamegraph",
        dsvg.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&dsvg).unwrap().contains("<svg"));
}

/// The names of the top `k` functions of `run`'s profile at N=1, in database `db`.
fn top_at_1(lab: &Lab, db: &str, run: &str, k: usize) -> Vec<String> {
    let at = lab.json(&["--db", db, "profile", run, "--at", "1", "--json"]);
    at["points"][0]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .take(k)
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

/// One profiled 300 ms trial of `workload` at N=1 into database `db`.
fn short_profiled_run(lab: &Lab, db: &str, workload: &str) {
    lab.ok(&[
        "--db",
        db,
        "run",
        workload,
        "--tasks",
        "1",
        "--runs",
        "1",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--profile",
        "--quiet",
    ]);
}

#[test]
fn profiles_of_two_databases_in_one_folder_stay_apart() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    for (db, workload) in [("a.db", "page_fault"), ("b.db", "spin")] {
        short_profiled_run(&lab, db, workload);
    }
    // Both are run 1 of their database; a.db's must still be page faults, not b.db's spin.
    let a = top_at_1(&lab, "a.db", "1", 10);
    assert!(
        a.iter()
            .any(|n| n.contains("page_fault") || n.contains("clear_page")),
        "a.db run 1: {a:?}"
    );
    let files = |db: &str| {
        let v = lab.json(&["--db", db, "profile", "1", "--at", "1", "--json"]);
        v["points"][0]["files"].clone()
    };
    assert_ne!(files("a.db"), files("b.db"));
}

/// `push --with-profiles` stores a run's perf.data and kallsyms in the target; on a host
/// without the recording's folder (here: the folder removed) the target's run reads the same
/// profile from those copies, and the push's second time copies nothing.
#[test]
fn profiles_pushed_with_their_run_are_read_where_the_files_are_not() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    short_profiled_run(&lab, "a.db", "page_fault");
    let here = top_at_1(&lab, "a.db", "1", 5);
    let pushed = lab.json(&[
        "--db",
        "a.db",
        "push",
        "--to",
        "b.db",
        "--with-profiles",
        "--json",
    ]);
    let files = &pushed["files"][0];
    assert_eq!(files["copied"], 2, "the perf.data and kallsyms: {pushed}");
    assert_eq!(files["missing"].as_array().unwrap().len(), 0, "{pushed}");
    let again = lab.json(&[
        "--db",
        "a.db",
        "push",
        "--to",
        "b.db",
        "--with-profiles",
        "--json",
    ]);
    assert_eq!(again["files"][0]["copied"], 0, "{again}");
    assert_eq!(again["files"][0]["present"], 2, "{again}");

    std::fs::remove_dir_all(lab.path("profiles/a.db")).unwrap();
    let there = top_at_1(&lab, "b.db", "1", 5);
    assert_eq!(there, here);
    let uuid = lab.json(&["--db", "b.db", "show", "1", "--json"])["run"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let copy = lab.path("profiles/b.db").join(uuid);
    assert!(copy.join("n1-t1.perf.data").is_file() && copy.join("kallsyms").is_file());
    // Without the stored copies the run says where its profile was.
    let err = lab.fails(&["--db", "a.db", "profile", "1"]);
    assert!(err.contains("gone"), "{err}");
}

#[test]
fn a_perf_data_that_is_not_the_runs_own_is_refused() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    lab.short_spin(&["--profile"]);
    lab.short_spin(&["--profile"]);
    let one = lab.ok(&["export", "1"]);
    let two: Value = serde_json::from_str(&lab.ok(&["export", "2"])).unwrap();
    let theirs = two["run"]["trials"][0]["outcome"]["profile"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let mut doctored: Value = serde_json::from_str(&one).unwrap();
    doctored["run"]["trials"][0]["outcome"]["profile"]["path"] = Value::String(theirs.clone());
    // A run of its own (a run already stored is not imported again).
    doctored["run"]["meta"]["uuid"] = Value::String("00000000-0000-4000-8000-00000000d0c7".into());
    let file = lab.path("doctored.json");
    std::fs::write(&file, serde_json::to_string(&doctored).unwrap()).unwrap();
    lab.ok(&["import", file.to_str().unwrap()]);
    let err = lab.fails(&["profile", "3"]);
    assert!(err.contains(&theirs), "{err}");
}

#[test]
fn a_run_without_profiles_says_how_to_get_them() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let out = lab.cmd().args(["profile", "last"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--profile"), "{err}");
}

#[test]
fn without_perf_the_run_is_measured_and_stored_with_a_warning_naming_the_fix() {
    let lab = Lab::new();
    let empty = lab.dir.path().join("no-perf-here");
    std::fs::create_dir(&empty).unwrap();
    let out = lab
        .cmd()
        .env("PATH", &empty)
        .args([
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "50ms",
        ])
        .args(["--warmup", "0", "--profile", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--profile") && err.contains("install"),
        "{err}"
    );
    let exported: Value = serde_json::from_str(&lab.ok(&["export", "last"])).unwrap();
    let trial = &exported["run"]["trials"][0]["outcome"];
    assert_eq!(trial["status"], "ok", "{trial}");
    assert!(trial.get("profile").is_none());
    let warnings = exported["run"]["meta"]["warnings"].to_string();
    assert!(warnings.contains("unprofiled"), "{warnings}");
}

/// Was `memory allocation of 1099511627776 bytes failed` and exit 134: a feature section size
/// read from the file was allocated before anything checked it against the file's size.
#[test]
fn a_corrupt_perf_data_is_a_clean_error_not_an_abort() {
    let lab = Lab::new();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../perf-read/tests/fixtures/dd.perf.data"
    );
    let mut data = std::fs::read(fixture).unwrap();
    let at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap()) as usize;
    // The feature table follows the data section; its first entry is {offset, size}.
    let first_feature_size = at(40) + at(48) + 8;
    data[first_feature_size..first_feature_size + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let path = lab.path("corrupt.perf.data");
    std::fs::write(&path, &data).unwrap();
    let err = lab.fails(&["profile", "--perf-data", path.to_str().unwrap()]);
    assert!(
        err.starts_with(&format!("error: {}: corrupt perf.data (", path.display())),
        "{err}"
    );
}

/// Was: a foreign perf.data read without `--kallsyms` said to set `kernel.kptr_restrict=0`,
/// a sysctl of this machine that cannot name another machine's (or an earlier boot's) kernel.
#[test]
fn a_foreign_perf_data_without_kallsyms_says_to_pass_kallsyms() {
    let lab = Lab::new();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../perf-read/tests/fixtures/dd.perf.data"
    );
    let (stdout, stderr) = lab.ok_with_stderr(&["profile", "--perf-data", fixture, "--top", "3"]);
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("--kallsyms FILE"), "{said}");
    assert!(!said.contains("kptr_restrict"), "{said}");
}

/// A command, and any program under `--explain`, is sampled at 1 kHz and a built-in workload's
/// `--profile` at 4 kHz unless `--profile-frequency` says otherwise (each stored with its profile); a rate outside 1..the kernel's limit is
/// refused before anything runs, naming the limit.
#[test]
fn a_commands_and_explains_profile_samples_at_1_khz_unless_told_and_a_bad_rate_is_refused() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    let frequency = |lab: &Lab| {
        let export = lab.json(&["export", "last"]);
        export["run"]["trials"][0]["outcome"]["profile"]["frequency"].as_u64()
    };
    let command = [
        "run",
        "--cmd",
        "true",
        "--runs",
        "1",
        "--profile",
        "--quiet",
    ];
    lab.ok(&command);
    assert_eq!(frequency(&lab), Some(1000));
    lab.ok(&[&command[..], &["--profile-frequency", "250"]].concat());
    assert_eq!(frequency(&lab), Some(250));
    let spin = [
        "run",
        "spin",
        "--tasks",
        "1",
        "--duration",
        "0.1s",
        "--runs",
        "1",
        "--profile",
        "--quiet",
    ];
    lab.ok(&spin);
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .map_or(100_000, |s| s.trim().parse().unwrap());
    assert_eq!(frequency(&lab), Some(4000.min(max / 4)));
    // Under --explain a built-in is sampled at 1 kHz too (each sample in a lock's hold makes
    // the other tasks wait), unless told.
    let explain = [&spin[..spin.len() - 2], &["--explain", "--quiet"]].concat();
    lab.ok(&explain);
    assert_eq!(frequency(&lab), Some(1000.min(max / 4)));
    lab.ok(&[&explain[..], &["--profile-frequency", "250"]].concat());
    assert_eq!(frequency(&lab), Some(250));
    let runs_before = lab.json(&["ls", "--json"]).as_array().unwrap().len();
    for bad in ["0", &(max + 1).to_string()] {
        let err = lab.fails(&[
            "run",
            "--cmd",
            "true",
            "--profile",
            "--profile-frequency",
            bad,
        ]);
        assert!(
            err.contains("perf_event_max_sample_rate") && err.contains(&max.to_string()),
            "{err}"
        );
    }
    let runs_after = lab.json(&["ls", "--json"]).as_array().unwrap().len();
    assert_eq!(runs_before, runs_after, "a refused run stores nothing");
}

/// `--profile-scope every-cpu`: perf samples every CPU, so the file holds a busy shell beside
/// the workload (as `perf script` shows), and scalelab keeps the workload's samples alone.
#[test]
fn a_profile_of_every_cpu_keeps_the_programs_samples_alone() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _busy = Killed(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let (_, stderr) = lab.ok_with_stderr(&[
        "run",
        "spin",
        "--tasks",
        "1",
        "--duration",
        "400ms",
        "--warmup",
        "0",
        "--runs",
        "1",
        "--profile",
        "--profile-scope",
        "every-cpu",
        "--quiet",
    ]);
    if stderr.contains("may not sample every CPU") {
        eprintln!("skipped: {stderr}");
        return;
    }
    let data = lab.profiles(1).join("n1-t1.perf.data");
    let script = Command::new("perf")
        .args(["script", "-F", "comm", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let comms = String::from_utf8_lossy(&script.stdout);
    assert!(
        comms.lines().any(|c| c.trim() == "sh"),
        "perf sampled every CPU, the shell's too"
    );
    let profile = lab.json(&["profile", "last", "--at", "1", "--json"]);
    let dsos: Vec<&str> = profile["points"][0]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["dso"].as_str().unwrap())
        .collect();
    assert!(
        dsos.contains(&"scalelab"),
        "the workload's own code: {dsos:?}"
    );
    assert!(
        !dsos.iter().any(|d| ["dash", "bash", "sh"].contains(d)),
        "no sample of the shell is the workload's: {dsos:?}"
    );
    let export = lab.json(&["export", "last"]);
    let profile = &export["run"]["trials"][0]["outcome"]["profile"];
    assert_eq!(
        profile["every_cpu"], true,
        "the record says where: {profile}"
    );
}

/// `--profile-scope auto` (the default) under `--explain`: pipe_pingpong's untraced tasks
/// switch ~250,000 times a second each, so its traced trials are profiled on every CPU at the
/// low rate, and explain says so with the rate; spin's (a few a second) follow the tasks at the
/// run's rate, and `--profile-scope tasks` keeps pipe_pingpong on its tasks.
#[test]
fn explain_profiles_every_cpu_where_the_untraced_tasks_switch_often() {
    if !perf_available() {
        return;
    }
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|e| e == "0"))
            .unwrap_or(false)
    });
    if !root {
        println!("skipped: perf may sample every CPU only for root here");
        return;
    }
    let lab = Lab::new();
    let run = |workload: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            workload,
            "--tasks",
            "1",
            "--runs",
            "2",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--explain",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let (_, stderr) = lab.ok_with_stderr(&args);
        let export = lab.json(&["export", "last"]);
        let trials = export["run"]["trials"].as_array().unwrap().clone();
        (trials, stderr)
    };
    let (trials, stderr) = run("pipe_pingpong", &[]);
    if stderr.contains("lock tracing unavailable") {
        println!("skipped: {stderr}");
        return;
    }
    let first = &trials[0]["outcome"];
    let switches = first["harness"]["untraced"]["switches"]
        .as_u64()
        .unwrap_or(0);
    let window_s = first["harness"]["untraced"]["window"].as_f64().unwrap() / 1e9;
    assert!(
        switches as f64 / window_s >= 5_000.0,
        "the untraced pipe_pingpong switched {switches} times in {window_s} s"
    );
    for t in &trials {
        let p = &t["outcome"]["profile"];
        assert_eq!(p["every_cpu"], true, "trial {}: {p}", t["index"]);
        assert_eq!(p["frequency"], 241, "trial {}: {p}", t["index"]);
    }
    let text = lab.ok(&["explain", "last", "--verbose"]);
    assert!(
        text.contains("traced and profiled on every CPU")
            && text
                .contains("profiled on every CPU where the untraced tasks switched often (N=1: "),
        "{text}"
    );
    let (spin, _) = run("spin", &[]);
    for t in &spin {
        let p = &t["outcome"]["profile"];
        assert!(p["every_cpu"].is_null(), "spin follows its tasks: {p}");
        assert!(p["frequency"].as_u64().unwrap() > 241, "{p}");
    }
    let (tasks, _) = run("pipe_pingpong", &["--profile-scope", "tasks"]);
    assert!(
        tasks
            .iter()
            .all(|t| t["outcome"]["profile"]["every_cpu"].is_null()),
        "--profile-scope tasks follows the tasks"
    );
}
