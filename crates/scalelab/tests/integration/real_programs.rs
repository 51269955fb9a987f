//! `explain` on programs nobody here wrote, as Debian ships them — stripped PIE binaries with
//! supervising threads and figures of their own: dbench (a parent process and its clients,
//! MB/sec), sysbench (a main thread joining its workers, one hot pthread mutex) and zstd (a
//! main thread feeding a pool). Each runs at 1 and 2 tasks, 3 trials, under `--explain`.
//!
//! What must hold whatever the machine's noise: the workers are counted (N of them), the
//! supervisors are named apart and none of their waiting is a cause; the traces agree with the
//! accounting; the program's own figure is X(N); a stripped binary's call sites are named
//! module+address. Where the growth is beyond trial-to-trial noise its top cause is the one a
//! performance engineer names; where it is within noise, explain must say that instead of
//! ranking (the rule in `explain`'s noise module).
//!
//! `scripts/test` (the README's test command, which CI runs) installs the programs; elsewhere a
//! missing one skips its test, saying so.
//! Lock and scheduler tracing need root and tracefs, as `--explain` does.

use std::process::Command;

use serde_json::Value;

use crate::common::{CpuTicks, Lab, perf_available};

/// True when `program` runs here; in CI (`CI=true`) a missing program fails the test.
pub(crate) fn installed(program: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "{program} is not installed: scripts/test installs it (apt-get install {program})"
        );
        println!("skipped: {program} is not installed (Debian: apt-get install {program})");
    }
    ok
}

/// `run --cmd CMD … --tasks 1,2 --runs 3 --explain`, then `explain last --json`; `None` when
/// tracing is unavailable here (not root, no tracefs). Every trial must have measured.
pub(crate) fn explained(lab: &Lab, cmd: &str, extra: &[&str]) -> Option<Value> {
    let mut args = vec!["run", "--cmd", cmd, "--tasks", "1,2", "--runs", "3"];
    args.extend_from_slice(extra);
    args.push("--explain");
    let before = CpuTicks::now();
    let (_, stderr) = lab.ok_with_stderr(&args);
    let stolen = CpuTicks::now().stolen_share_since(&before);
    if stderr.contains("tracing unavailable") {
        println!("skipped: {stderr}");
        return None;
    }
    let export = lab.json(&["export", "last"]);
    for t in export["run"]["trials"].as_array().unwrap() {
        assert_eq!(t["outcome"]["status"], "ok", "trial failed: {t}\n{stderr}");
    }
    let mut e = lab.json(&["explain", "last", "--json"]);
    e[STOLEN] = Value::from(stolen);
    Some(e)
}

/// Where [`explained`] leaves, beside the explanation, the share of the CPUs' busy time the
/// host stole during the run ([`CpuTicks::stolen_share_since`]).
const STOLEN: &str = "test_stolen_share";

/// Every cause of the growth, named or within noise.
pub(crate) fn causes(e: &Value) -> Vec<Value> {
    let g = &e["growth"];
    ["named", "within_noise"]
        .iter()
        .flat_map(|k| g[k].as_array().cloned().unwrap_or_default())
        .map(|c| c["cause"].clone())
        .collect()
}

/// Why `cause` reads as a supervisor's waiting (a wait for children, a join, a progress
/// timer's sleep of a thread that started the work), or `None`.
fn supervising_wait(cause: &Value) -> Option<String> {
    // Spinning is CPU, not waiting: a supervisor's CPU is task time by design (the accounting
    // counts it), its spin included. A CI run named `spinlock 0xffff… from do_wait` (the `sh`
    // wrapper's wait4 spinning on a lock its exiting children held) within noise; that is the
    // supervisor's CPU, not its waiting.
    if cause["kind"] == "kernel_spin" {
        return None;
    }
    let field = |k: &str| cause[k].as_str().unwrap_or_default().to_string();
    let (what, object, caller) = (field("what"), field("object"), field("caller"));
    let mostly = cause["ended_by"][0]["by"].as_str().unwrap_or_default();
    let why = if object == "do_wait" || caller == "do_wait" || caller.contains("wait4") {
        "a wait for children"
    } else if caller.contains("join") {
        "a join"
    } else if mostly == "a thread or child exiting" {
        "ended by the exit of what it waited for"
    } else if what == "sleep" {
        "a sleep"
    } else {
        return None;
    };
    Some(format!("{why}: {cause}"))
}

/// Per point, the workers of each trial.
fn workers(e: &Value) -> Vec<Vec<u64>> {
    e["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["accounting"]["workers"]
                .as_array()
                .map(|w| w.iter().map(|x| x.as_u64().unwrap()).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// The names of the supervising (or idle) threads at every point.
fn supervisors(e: &Value) -> Vec<String> {
    e["points"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["threads"].as_array().cloned().unwrap_or_default())
        .filter(|g| g["role"] != "worker")
        .map(|g| g["comm"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The traces agree with the accounting: blocked time (where material) and the profile, each
/// within `tolerance` of 1 (`bench/agreement/real-programs` measures the release build against 0.90–1.10;
/// this is a debug build on a shared 2-CPU machine).
pub(crate) fn assert_agreement(lab: &Lab, e: &Value, tolerance: f64) {
    for p in e["points"].as_array().unwrap() {
        let n = &p["n"];
        let total = p["accounting"]["ns_per_op_task"].as_f64().unwrap();
        if let (Some(t), Some(r)) = (
            p["offcpu_traced_ns"].as_f64(),
            p["offcpu_residual_ns"].as_f64(),
        ) && r > 0.05 * total
        {
            assert!(
                (t / r - 1.0).abs() <= tolerance,
                "N={n}: blocked traced {t:.0} vs residual {r:.0} ns per unit (of {total:.0}); threads {}",
                p["threads"]
            );
        }
        // The profile's cpu-clock counts what the host stole while a task ran, its schedstat
        // CPU does not: a CI run read 1.26 at N=1 on dbench, and a run of this test here had
        // 17% of the busy time stolen.
        let stolen = e[STOLEN].as_f64().unwrap_or(0.0).min(0.9);
        // The run's average can hide a point where the host took much more: an `--attach`
        // pgbench run in a fresh-clone CI read 1.79 at N=1 (user+sys 751µs a unit, 2.5 times
        // its usual, with 20% of the run's busy time stolen). The in-kernel tracer measures
        // each point's stolen time per unit (the workers' wall-clock time on a CPU less their
        // CPU time), and the profile's cpu-clock counts it: the bound adds it.
        let stolen_here = p["offcpu_stolen_ns"].as_f64().unwrap_or(0.0);
        if let (Some(prof), Some(acc)) = (
            p["cpu_profiled_ns"].as_f64(),
            p["cpu_profiled_trials_ns"].as_f64(),
        ) {
            // The in-kernel tracers' programs run with interrupts off: a cpu-clock profile
            // cannot sample them, and explain names their time apart (`programs_pct`, of the
            // tasks' CPU). The profile is held to the rest: pgbench attached to a running
            // server read 0.849 of user+sys at N=1 with the programs at 10.6%, 0.949 of the rest.
            let programs = p["programs_pct"].as_f64().unwrap_or(0.0).clamp(0.0, 50.0);
            let rest = acc * (1.0 - programs / 100.0);
            let ratio = prof / rest;
            let most = ((1.0 + tolerance) / (1.0 - stolen))
                .max((1.0 + tolerance) * (1.0 + stolen_here / rest));
            assert!(
                ratio >= 1.0 - tolerance && ratio <= most,
                "N={n}: profile {prof:.0} vs user+sys {acc:.0} ns per unit (measuring {}%, \
                 the tracers' programs {}%; {:.1}% of the run's busy time stolen, \
                 {stolen_here:.0} ns per unit at this point); the profiles' \
                 samples, lost, throttles: {:?}",
                p["measuring_pct"],
                p["programs_pct"],
                100.0 * stolen,
                lab.json(&["profile", "last", "--json"])["points"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|q| format!(
                        "N={} {} {} {}",
                        q["n"], q["samples"], q["lost"], q["throttled"]
                    ))
                    .collect::<Vec<_>>()
            );
        }
    }
}

/// The growth's named causes that grew, the workload's own (not waiting for a CPU, not the
/// cost of measuring), largest first.
pub(crate) fn workload_causes(e: &Value) -> Vec<&Value> {
    e["growth"]["named"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter(|c| c["delta_ns"].as_f64().unwrap_or(0.0) > 0.0)
                .filter(|c| {
                    !matches!(
                        c["cause"]["kind"].as_str(),
                        Some("run_queue") | Some("measurement")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every positive candidate of the growth, beyond noise or not, the largest first (the run
/// queue and the cost of measuring left out).
fn growth_candidates(e: &Value) -> Vec<&Value> {
    let g = &e["growth"];
    let mut all: Vec<&Value> = ["named", "within_noise"]
        .iter()
        .flat_map(|k| g[*k].as_array().into_iter().flatten())
        .filter(|c| c["delta_ns"].as_f64().unwrap_or(0.0) > 0.0)
        .filter(|c| {
            !matches!(
                c["cause"]["kind"].as_str(),
                Some("run_queue") | Some("measurement")
            )
        })
        .collect();
    all.sort_by(|a, b| {
        b["delta_ns"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["delta_ns"].as_f64().unwrap_or(0.0))
    });
    all
}

/// Each point's trial-to-trial CV, for a message.
fn cvs(e: &Value) -> String {
    e["points"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "N={} CV {:.0}%",
                p["n"],
                p["accounting"]["cv"].as_f64().unwrap_or(0.0) * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cause's words: what it is, its caller and its evidence (the chains it rests on).
fn cause_text(cause: &Value) -> Vec<String> {
    let mut text = vec![
        cause["what"].as_str().unwrap_or_default().to_string(),
        cause["caller"].as_str().unwrap_or_default().to_string(),
        // A wait followed into another thread: whose (`jbd2/loop0-8`, `postgres`).
        cause["via"]["server"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ];
    text.extend(
        cause["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string)),
    );
    text
}

#[test]
fn dbench_is_explained_per_mb_by_its_file_system_waits_and_its_parent_only_supervises() {
    if !installed("dbench") || !perf_available() {
        return;
    }
    let loadfile = "/usr/share/dbench/client.txt";
    assert!(
        std::path::Path::new(loadfile).is_file(),
        "Debian's dbench ships {loadfile}"
    );
    let lab = Lab::new();
    let dir = lab.path("dbench");
    std::fs::create_dir_all(&dir).unwrap();
    // The seed's case is a journalled file system: this VM's root ext4 has no journal, and
    // there dbench scales (1.59–1.97 of 2) with nothing beyond noise to name. A journalled
    // ext4 of its own, on a loop device, where one can be mounted.
    let journalled = JournalledExt4::mount(&lab.path("ext4.img"), &dir);
    let cmd = format!("dbench -t 3 -D {} -c {loadfile} {{n}}", dir.display());
    // A fresh file system is slow at first: dbench on a new ext4 here ran 77–307 MB/s in the
    // first trials and 221–466 in the last, so trials 36–80% apart at N=1 left the growth
    // within noise in a CI run and in most runs of this test here. As a benchmarker would, it
    // warms up first (`--warmup-runs`: after 8 s of dbench the trials were 6–20% apart).
    let warm_up: &[&str] = if journalled.is_some() {
        &["--warmup-runs", "2"]
    } else {
        &[]
    };
    // A run whose growth is still within its own trials' noise names nothing beyond noise,
    // rightly; it gets one more run.
    let mut e = Value::Null;
    for attempt in 1..=2 {
        let mut extra = vec!["--metric", "throughput=Throughput ([0-9.]+) MB/sec"];
        extra.extend_from_slice(warm_up);
        let Some(got) = explained(&lab, &cmd, &extra) else {
            return;
        };
        e = got;
        if e["growth"]["noise"]["beyond"] == true || journalled.is_none() {
            break;
        }
        println!(
            "dbench run {attempt}: its growth was within its trials' noise ({})",
            cvs(&e)
        );
    }
    // X(N) is dbench's own MB/sec, and costs are per MB.
    assert_eq!(e["per"], "MB", "{e}");
    let show = lab.json(&["show", "last", "--json"]);
    for p in show["points"].as_array().unwrap() {
        let mb = p["reported"]["throughput"]["point"].as_f64().unwrap();
        let x = p["throughput"]["point"].as_f64().unwrap();
        assert!(
            (mb - x).abs() < 1e-9 && mb > 1.0,
            "X(N) {x} is the MB/sec {mb}"
        );
    }
    // One client process per task; the parent (and a shell, if one stayed) supervise.
    assert_eq!(workers(&e), [vec![1, 1, 1], vec![2, 2, 2]], "{e}");
    assert!(
        supervisors(&e).iter().any(|c| c == "dbench"),
        "dbench's parent supervises: {:?}",
        supervisors(&e)
    );
    // Nothing of the parent's waiting (its sleeps, its wait for the clients) is a cause.
    for c in causes(&e) {
        assert_eq!(supervising_wait(&c), None, "a supervisor's wait as a cause");
    }
    assert_agreement(&lab, &e, 0.15);
    // Beyond noise, the top cause is the file system's: fsync, the journal, block I/O, ext4's
    // own code (its inode allocator's `find_inode_bit` → `recently_deleted` reading the inode
    // table's buffers, under the block device's mapping lock, was the top one in a run here),
    // or the VFS taking a directory's lock.
    let top = workload_causes(&e);
    let delta = e["growth"]["delta_ns"].as_f64().unwrap_or(0.0);
    let noise = e["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["accounting"]["cv"].as_f64().unwrap()
                * p["accounting"]["ns_per_op_task"].as_f64().unwrap()
        })
        .fold(0.0, f64::max);
    if journalled.is_some() && e["growth"]["noise"]["beyond"] != true {
        // Twice within noise: nothing may be named as beyond it but what did separate, and
        // the largest candidate of the growth is still the journal's.
        let candidates = growth_candidates(&e);
        let first = candidates.first().expect("a candidate of the growth");
        let text = cause_text(&first["cause"]);
        assert!(
            text.iter()
                .any(|t| t.contains("fsync") || t.contains("jbd2") || t.contains("ext4_sync_file")),
            "the largest candidate on a journal: {first}"
        );
        println!(
            "dbench on a journalled ext4: the growth within noise in two runs ({}); its largest candidate {}",
            cvs(&e),
            text.join(" ")
        );
    } else if let Some(first) = top.first()
        && journalled.is_some()
    {
        // On a journalled ext4 dbench's clients wait in fsync for the journal's commit, and
        // more of them wait longer (runs here: scales 1.26–1.55 of 2, fsync ended by jbd2
        // 70–90% of the growth, the run queue 0–13%, 0–12% unexplained; before the trace's
        // sites were carried to the median trial, 19–21% of the same runs and 39% of a CI
        // run read as unexplained). On this VM the journal's own locks can top it: a CI run
        // ranked first the spinlock of the commit's wait queue (`prepare_to_wait_event ←
        // jbd2_log_wait_commit ← ext4_sync_file`), whose waits both tracers see (N=2, one
        // trial each: perf's 47 waits, 18 ms, the longest 0.7 ms; the kernel tracer's 85,
        // 32 ms; a vCPU whose holder the host preempted waits so), as the seed's 48-core
        // dbench was stopped by jbd2's `j_state_lock`. Either is the journal; anything else
        // first is wrong.
        let cause = &first["cause"];
        let ranked: Vec<String> = top
            .iter()
            .take(4)
            .map(|c| format!("{} ns/MB: {}", c["delta_ns"], c["cause"]))
            .collect();
        let text = cause_text(cause);
        let journal = text
            .iter()
            .any(|t| t.contains("jbd2") || t.contains("ext4_sync_file"));
        let unexplained = e["growth"]["unexplained_pct"].as_f64().unwrap_or(0.0);
        assert!(
            unexplained.abs() <= 30.0,
            "{unexplained}% unexplained; the growth {}; the points {}",
            e["growth"],
            e["points"]
        );
        // The clients' fsync waits that jbd2 ended are followed into jbd2 (issue 51): what it
        // did meanwhile, inside those waits (its journal write's I/O, its CPU, its wait for
        // one), is named, as the kernel thread's.
        let past_jbd2: Vec<Value> = causes(&e)
            .into_iter()
            .filter(|c| {
                c["via"]["kernel_thread"] == true
                    && c["via"]["server"]
                        .as_str()
                        .is_some_and(|s| s.starts_with("jbd2/"))
            })
            .collect();
        assert!(
            !past_jbd2.is_empty(),
            "the fsync chain followed past jbd2: {}",
            e["growth"]
        );
        if cause["what"] == "fsync" && cause["via"].is_null() {
            let by = cause["ended_by"][0]["by"].as_str().unwrap_or_default();
            assert!(
                by.contains("jbd2") || by.contains("I/O completion"),
                "fsync ended by the journal or its I/O: {cause}"
            );
            println!(
                "dbench on a journalled ext4: top cause fsync ended by {by}, {unexplained:.0}% unexplained"
            );
        } else {
            assert!(
                journal,
                "the top cause on a journal is its commit (fsync) or its own code: {cause}; the growth {}; ranked: {ranked:#?}",
                e["growth"]
            );
            println!(
                "dbench on a journalled ext4: top cause in the journal, {}, {unexplained:.0}% unexplained",
                text.join(" ")
            );
        }
    } else if delta <= noise {
        // dbench scales on this VM's unjournalled ext4 (1.94 of 2 in a run here: a MB cost
        // 11.1 ms of task time at N=1, 9.75 ms at N=2): nothing grew beyond the trials' spread.
        println!("dbench's cost per MB grew {delta:.0} ns, within CV × ns/op/task ({noise:.0} ns)");
    } else if let Some(first) = top.first() {
        let cause = &first["cause"];
        let text = cause_text(cause);
        let file_system = [
            "fsync",
            "jbd2",
            "ext4",
            "blk_",
            "bio_",
            "folio",
            "writeback",
            "journal",
            "I/O",
            "find_get_block",
            "find_inode_bit",
            "recently_deleted",
            "vfs_",
            "do_unlinkat",
            "path_openat",
            "do_renameat",
            "filename_create",
        ];
        assert!(
            text.iter()
                .any(|t| file_system.iter().any(|w| t.contains(w))),
            "the top cause of dbench's growth: {cause}"
        );
        let unexplained = e["growth"]["unexplained_pct"].as_f64().unwrap_or(0.0);
        assert!(
            unexplained.abs() <= 30.0,
            "{unexplained}% unexplained; the growth {}; the points {}",
            e["growth"],
            e["points"]
        );
    } else {
        // Within noise: explain says so (all of the growth unexplained, nothing ranked).
        println!("dbench's growth was within noise here: {}", e["growth"]);
    }
}

#[test]
fn sysbench_is_explained_by_its_hot_mutex_from_a_named_call_site_never_by_its_join() {
    if !installed("sysbench") || !perf_available() {
        return;
    }
    let lab = Lab::new();
    let Some(e) = explained(
        &lab,
        "sysbench --threads={n} --time=2 --thread-yields=100 threads --thread-locks=1 run",
        &["--ops-regex", r"total number of events:\s+([0-9]+)"],
    ) else {
        return;
    };
    assert_eq!(workers(&e), [vec![1, 1, 1], vec![2, 2, 2]], "{e}");
    assert!(
        supervisors(&e).iter().any(|c| c == "sysbench"),
        "the main thread joining its workers supervises: {:?}",
        supervisors(&e)
    );
    for c in causes(&e) {
        assert_eq!(supervising_wait(&c), None, "a join as a cause");
    }
    assert_agreement(&lab, &e, 0.15);
    // The hot mutex's waits are named by their call site in the stripped binary, as perf
    // names it: pthread_mutex_lock's caller, `sysbench+0x…`.
    let locks = lab.json(&["locks", "last", "--at", "2", "--user", "--json"]);
    let rows: Vec<&Value> = locks["rows"]
        .as_array()
        .expect("lock rows")
        .iter()
        .filter(|r| r["side"] == "user")
        .collect();
    let total: u64 = rows
        .iter()
        .map(|r| r["contentions"].as_u64().unwrap())
        .sum();
    let unknown: u64 = rows
        .iter()
        .filter(|r| r["caller"].as_str().unwrap_or("").starts_with("(unknown"))
        .map(|r| r["contentions"].as_u64().unwrap())
        .sum();
    assert!(total > 100, "the mutex was contended: {locks}");
    assert!(
        unknown * 20 <= total,
        "{unknown} of {total} futex waits without a call site: {locks}"
    );
    let hot = rows
        .iter()
        .max_by_key(|r| r["contentions"].as_u64().unwrap())
        .unwrap();
    assert!(
        hot["caller"].as_str().unwrap().starts_with("sysbench+0x"),
        "the hot mutex's caller: {hot}"
    );
    // The hot mutex's waits at N=2 are named by what ended them: most by the other worker
    // handing the lock over (its futex wake, recorded where it ran: `sched_waking`), not "an
    // interrupt" (the wake-up written on the waiter's CPU when it was queued there).
    let at2 = e["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["n"] == 2)
        .unwrap();
    let mutex = at2["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["cause"]["kind"] == "user_lock"
                && p["cause"]["caller"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("sysbench+0x"))
        })
        .unwrap_or_else(|| panic!("no futex wait from sysbench's hot mutex at N=2: {at2}"));
    let ended_by = mutex["cause"]["ended_by"].as_array().unwrap();
    let all: f64 = ended_by.iter().map(|b| b["ns"].as_f64().unwrap()).sum();
    let hand_off: f64 = ended_by
        .iter()
        .filter(|b| b["by"].as_str().unwrap().contains("lock hand-off"))
        .map(|b| b["ns"].as_f64().unwrap())
        .sum();
    assert!(
        hand_off >= 0.5 * all,
        "the hot mutex's waits were ended by: {ended_by:?}"
    );
    // Beyond noise, the top cause is the mutex (its waits, or CPU on its path) or the yields.
    if let Some(first) = workload_causes(&e).first() {
        let c = first["cause"].to_string();
        assert!(
            c.contains("futex") || c.contains("sched_yield") || c.contains("sysbench+0x"),
            "the top cause of sysbench's growth: {c}"
        );
    }
}

#[test]
fn zstd_is_never_explained_by_a_wait_and_the_thread_that_starts_its_pool_only_supervises() {
    if !installed("zstd") || !perf_available() {
        return;
    }
    let lab = Lab::new();
    // 24 MiB of text that compresses (words from a small vocabulary, pseudo-random order).
    let corpus = lab.path("corpus.txt");
    let words = [
        "scalability",
        "lock",
        "journal",
        "fsync",
        "page",
        "fault",
        "futex",
        "thread",
        "cache",
        "line",
        "kernel",
        "wait",
    ];
    let mut text = String::with_capacity(24 << 20);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while text.len() < 24 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(words[(x % words.len() as u64) as usize]);
        text.push(if x % 11 == 0 { '\n' } else { ' ' });
    }
    std::fs::write(&corpus, text).unwrap();
    let cmd = format!(
        "zstd -q -f -T{{n}} -9 {} -o {}",
        corpus.display(),
        lab.path("out.zst").display()
    );
    let Some(e) = explained(&lab, &cmd, &[]) else {
        return;
    };
    let answer = lab.ok(&["explain", "last"]);
    let first_lines: String = answer.lines().take(2).collect::<Vec<_>>().join("\n");
    let g = &e["growth"];
    let grew = g["delta_ns"].as_f64().unwrap();
    let from = g["from_ns"].as_f64().unwrap();
    // The cost of a compression does not grow from 1 to 2 threads here (3.30 s → 2.89 s of
    // task time in a bench run), but it may: a fresh-clone CI run had +18% (2.56 s → 3.02 s),
    // 62% of it CPU in zstd itself (-T2 splits the input into jobs with overlapping windows,
    // and this VM's two vCPUs run slower together). Where it grows, what explain names is
    // zstd's own CPU (or the run queue), never a wait: its workers hand jobs over through
    // condition variables, and the thread feeding them only supervises.
    if grew > 0.0 {
        for c in workload_causes(&e) {
            let kind = c["cause"]["kind"].as_str().unwrap_or_default();
            // The hypervisor's steal, named as such, is the machine's, no wait of zstd's (a
            // run here had +5 ms of it beyond noise on 2.03 s).
            assert!(
                matches!(kind, "function" | "user_cpu" | "system_cpu" | "steal"),
                "zstd's cost per run grew {grew:.0} ns of {from:.0}, a named cause not CPU: {c}\n{first_lines}"
            );
        }
    }
    // The thread that starts the pool and waits for it supervises, at both N; none of its
    // waiting is a cause, nor in the blocked time the accounting leaves to the workers.
    assert!(
        !supervisors(&e).is_empty(),
        "zstd's feeding thread supervises: {e}"
    );
    for c in causes(&e) {
        assert_eq!(supervising_wait(&c), None, "a supervisor's wait as a cause");
    }
    for (p, workers) in e["points"].as_array().unwrap().iter().zip(workers(&e)) {
        let acc = &p["accounting"];
        let waiting = acc["supervising_ns"].as_f64().unwrap();
        assert!(waiting > 0.0, "the supervising time is shown: {acc}");
        // zstd runs N compression threads beside its I/O threads: more workers than N, and
        // the count is said.
        let n = p["n"].as_u64().unwrap();
        assert!(
            workers.iter().all(|&w| w >= n),
            "N={n}: workers {workers:?}"
        );
    }
    assert_agreement(&lab, &e, 0.15);
}

/// Debian's stress-ng, `--flock`: its workers take and drop a flock on one file, each through
/// the file locks' per-CPU rwsem as a reader (its /proc/locks reader takes it as a writer),
/// from several places in the program. The waits on that rwsem are one cause, named by the
/// kernel function that took it with its callers under it, not a cause per call site (three
/// of them at 20/15/11% before) nor an address alone.
#[test]
fn stress_ng_flock_waits_on_the_file_locks_rwsem_are_one_cause() {
    if !installed("stress-ng") {
        return;
    }
    let lab = Lab::new();
    let Some(e) = explained(&lab, "stress-ng --flock {n} --timeout 1s", &[]) else {
        return;
    };
    let on_rwsem: Vec<Value> = causes(&e)
        .into_iter()
        .filter(|c| {
            c["what"]
                .as_str()
                .is_some_and(|w| w.starts_with("percpu-rwsem"))
        })
        .collect();
    assert_eq!(
        on_rwsem.len(),
        1,
        "one cause for the file locks' rwsem: {on_rwsem:?}"
    );
    let c = &on_rwsem[0];
    assert_eq!(c["caller"], "flock_lock_inode", "{c}");
    // Where the lock trace saw it, the lock (a static one: `static 0x…` where kallsyms lists no
    // data objects, as on this VM's kernel), never the wait site's address alone.
    let object = c["object"].as_str().unwrap_or_default();
    assert!(!object.starts_with("0x"), "{c}");
    // 8 workers on 2 CPUs at N=2 (4 per instance): run-queue wait grows most (60-65% in three
    // runs here), then the rwsem (15-21%); of the waits, it is the first.
    let first_wait = workload_causes(&e)
        .into_iter()
        .find(|w| matches!(w["cause"]["source"].as_str(), Some("offcpu" | "locks")))
        .unwrap_or_else(|| panic!("a wait grows: {}", e["growth"]));
    assert_eq!(&first_wait["cause"], c, "{}", e["growth"]);
    let text = lab.ok(&["explain", "last"]);
    assert!(
        !text.contains("is not the workload's own cost"),
        "its workers outnumber N: {text}"
    );
}

/// A journalled ext4 on a loop device, mounted on a folder for one test and unmounted when
/// dropped (the loop device detaches with it: `mount -o loop` sets autoclear).
pub(crate) struct JournalledExt4 {
    dir: std::path::PathBuf,
}

impl JournalledExt4 {
    /// A 1 GiB sparse image at `image`, made ext4 with its default journal and mounted on
    /// `dir`; `None`, saying why, where it cannot be (not root, no loop devices, no
    /// mkfs.ext4).
    pub(crate) fn mount(image: &std::path::Path, dir: &std::path::Path) -> Option<JournalledExt4> {
        let file = std::fs::File::create(image).ok()?;
        file.set_len(1 << 30).ok()?;
        let run = |program: &str, args: &[&std::ffi::OsStr]| {
            Command::new(program)
                .args(args)
                .output()
                .map_err(|e| format!("{program}: {e}"))
                .and_then(|o| {
                    if o.status.success() {
                        Ok(())
                    } else {
                        Err(format!("{program}: {}", String::from_utf8_lossy(&o.stderr)))
                    }
                })
        };
        let made = run(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
        )
        .and_then(|()| {
            run(
                "mount",
                &[
                    "-o".as_ref(),
                    "loop".as_ref(),
                    image.as_os_str(),
                    dir.as_os_str(),
                ],
            )
        });
        match made {
            Ok(()) => Some(JournalledExt4 {
                dir: dir.to_path_buf(),
            }),
            Err(why) => {
                println!(
                    "no journalled ext4 here ({why}); dbench runs on the workdir's file system"
                );
                None
            }
        }
    }
}

impl Drop for JournalledExt4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}
