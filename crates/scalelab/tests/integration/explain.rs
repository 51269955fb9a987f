//! `scalelab explain` and `run --explain` on real, short workloads: a shared futex mutex is
//! explained by its user lock and the caller that takes it; one shared atomic word by CPU in
//! the atomic step (no lock wait); the private variants name no shared lock; a run without
//! evidence says what is missing and the command that gets it. Every explanation's parts add
//! up to its `ns/op/task`.
//!
//! This VM's other load shows up as run-queue wait (the tasks wait for a CPU although N fits
//! the CPUs); that is reported as a cause of its own, so these tests rank the workload's causes
//! among the rest. Lock tracing needs root and tracefs: where it is unavailable the tests say
//! why and return.

use serde_json::Value;

use crate::common::{CpuTicks, Lab, kernel_tracer_fell_back, perf_available};

/// `run WORKLOAD … --tasks 1,2 --runs 3 --duration 300ms` with `extra`, then `explain last
/// --json`; `None` when lock tracing is unavailable here. Returns the explanation and `run`'s
/// stdout.
fn explained(lab: &Lab, spec: &[&str], extra: &[&str]) -> Option<(Value, String)> {
    // Every caller asks for a profile (`--explain` or `--profile`): perf records it.
    if !perf_available() {
        return None;
    }
    let mut args = vec!["run"];
    args.extend_from_slice(spec);
    args.extend_from_slice(&[
        "--tasks",
        "1,2",
        "--runs",
        "3",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
    ]);
    args.extend_from_slice(extra);
    let steal_before = steal_ns();
    let (stdout, stderr) = lab.ok_with_stderr(&args);
    let steal = steal_ns().saturating_sub(steal_before);
    if stderr.contains("lock tracing unavailable") {
        eprintln!("skipped: {stderr}");
        return None;
    }
    let mut e = lab.json(&["explain", "last", "--json"]);
    assert_parts_add_up(&e);
    // The trials' task time: 3 windows of 300 ms at N=1 and at N=2.
    let task_ns = 3.0 * 0.3e9 * (1.0 + 2.0);
    e[STEAL_BOUND] = Value::from(steal as f64 / task_ns);
    Some((e, stdout))
}

/// Where [`explained`] leaves, beside the explanation, the most of a task's time a host's steal
/// during the run can account for: all of it (every CPU's, `/proc/stat`) over the trials' task
/// time, as if every stolen tick fell inside a window on a task's CPU.
const STEAL_BOUND: &str = "test_steal_bound";

/// Time the host took from this VM's CPUs so far (`/proc/stat`'s steal, all CPUs), in ns.
fn steal_ns() -> u64 {
    CpuTicks::now().steal_ns_since(&CpuTicks::default())
}

fn assert_parts_add_up(e: &Value) {
    for p in e["points"].as_array().unwrap() {
        let a = &p["accounting"];
        let f = |k: &str| a[k].as_f64().unwrap();
        let sum = f("user_ns") + f("system_ns") + f("runq_ns") + f("offcpu_ns");
        let total = f("ns_per_op_task");
        assert!(
            (sum - total).abs() <= 1e-9 * total,
            "N={}: parts {sum} ≠ {total}",
            p["n"]
        );
    }
}

/// The named causes that grew, largest first, run-queue wait (this machine's other load) left
/// out.
/// The profile's CPU per op against the same trials' user + system, and the blocked time the
/// trace saw against the same trials' residual: measured on the same trials, they agree.
/// Within 10% here (a debug build on a shared 2-CPU machine: `bench/agreement/explain-agreement` measures
/// the release build against the 5%); blocked time only where it is material (at least
/// 5% of ns/op/task).
fn assert_the_traces_agree_with_the_accounting(e: &Value) {
    assert_the_traces_agree_within(e, 0.10);
}

/// As [`assert_the_traces_agree_with_the_accounting`], the profile within `cpu_tolerance`.
fn assert_the_traces_agree_within(e: &Value, cpu_tolerance: f64) {
    for p in e["points"].as_array().unwrap() {
        let n = &p["n"];
        if let (Some(prof), Some(acc)) = (
            p["cpu_profiled_ns"].as_f64(),
            p["cpu_profiled_trials_ns"].as_f64(),
        ) {
            assert!(
                (prof / acc - 1.0).abs() <= cpu_tolerance,
                "N={n}: profile {prof:.1} ns/op vs the same trials' user+sys {acc:.1}"
            );
        }
        let total = p["accounting"]["ns_per_op_task"].as_f64().unwrap();
        if let (Some(traced), Some(residual)) = (
            p["offcpu_traced_ns"].as_f64(),
            p["offcpu_residual_ns"].as_f64(),
        ) {
            // The residual is a difference of whole-trial figures (window × tasks − CPU −
            // run queue): its own error is a point or so of ns/op/task, which at 7% blocked
            // is 15% of it (a CI run: traced 9.9 µs vs residual 11.3 µs of 154.5 µs). The
            // build before this round read 0.83–0.96 of the residual on the same runs here.
            // It also holds what the host stole from a task's CPU while the task ran (neither
            // its CPU time nor run-queue wait): create_unlink at N=1, which never blocks, read
            // traced 0 against a residual of 5.2% on an hour this VM lost 10–70 ms in 2.6 s.
            let steal = e[STEAL_BOUND].as_f64().unwrap_or(0.0);
            if residual >= 0.05 * total {
                assert!(
                    (traced - residual).abs() <= 0.10 * residual + (0.015 + steal) * total,
                    "N={n}: traced blocked {traced:.1} ns/op vs residual {residual:.1} (ns/op/task \
                     {total:.1}; the host's steal during the run, at most {:.1}% of the tasks' time)",
                    100.0 * steal
                );
            }
        }
    }
}

/// A short summary of the growth for failure messages (CI's log keeps the start of a message).
fn growth_summary(e: &Value) -> String {
    let g = &e["growth"];
    let named: Vec<String> = g["named"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|c| {
                    format!(
                        "{}:{}:{}:{} {:+.1}ns",
                        c["cause"]["kind"].as_str().unwrap_or(""),
                        c["cause"]["what"].as_str().unwrap_or(""),
                        c["cause"]["caller"].as_str().unwrap_or(""),
                        c["cause"]["source"].as_str().unwrap_or(""),
                        c["delta_ns"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "growth {:+.1}ns; named: [{}]; unexplained {:+.1}ns; points: {}",
        g["delta_ns"].as_f64().unwrap_or(0.0),
        named.join("; "),
        g["unexplained_ns"].as_f64().unwrap_or(0.0),
        e["points"]
    )
}

fn workload_causes(e: &Value) -> Vec<&Value> {
    e["growth"]["named"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["delta_ns"].as_f64().unwrap() > 0.0)
        .filter(|c| c["cause"]["kind"] != "run_queue" && c["cause"]["kind"] != "measurement")
        .collect()
}

/// The largest trial-to-trial CV of `ns/op/task` over the points.
fn largest_cv(e: &Value) -> f64 {
    e["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["accounting"]["cv"].as_f64())
        .fold(0.0, f64::max)
}

fn runq_share_at_largest_n(e: &Value) -> f64 {
    let last = e["points"].as_array().unwrap().last().unwrap();
    last["accounting"]["runq_ns"].as_f64().unwrap()
        / last["accounting"]["ns_per_op_task"].as_f64().unwrap()
}

#[test]
fn run_explain_names_the_shared_user_lock_and_its_caller() {
    let lab = Lab::new();
    let Some((e, stdout)) = explained(&lab, &["futex_mutex", "-p", "shared=true"], &["--explain"])
    else {
        return;
    };
    assert!(stdout.contains("growth from N=1 to N=2"), "{stdout}");
    assert!(stdout.contains("missing evidence"), "{stdout}");
    let causes = workload_causes(&e);
    let top = causes
        .first()
        .unwrap_or_else(|| panic!("no cause named: {}", growth_summary(&e)));
    // A contended lock costs its takers in three ways, and any may grow most from run to run
    // on this VM: waiting in the kernel (a futex wait from the function taking the lock), CPU
    // in the lock function itself (the lock word's cache line moving between the CPUs on every
    // exchange), or system CPU in its futex calls (entering the kernel to wait and to wake).
    // Each way the answer names the lock: its function, or its system call.
    // `busy` is fixed work on a register (the lock holder's and the free work's): when its CPU per
    // op leads the growth, the CPUs themselves ran slower at N=2 than at N=1 (on this VM the two
    // vCPUs share host cores; seen once in a fresh-clone CI: +88 ns, 8%, against the lock's
    // +20 ns), which explain rightly names; the lock's place in the ranking is then inside that.
    let busy_led = top["cause"]["kind"] == "function"
        && top["cause"]["what"]
            .as_str()
            .is_some_and(|w| w.ends_with("futex_mutex::busy"));
    let names_the_lock = busy_led
        || match top["cause"]["kind"].as_str() {
            Some("user_lock") => top["cause"]["caller"]
                .as_str()
                .unwrap()
                .contains("futex_mutex_lock"),
            Some("function") => top["cause"]["what"]
                .as_str()
                .unwrap()
                .contains("futex_mutex_lock"),
            Some("system_cpu") => top["cause"]["what"].as_str().unwrap().contains("futex() "),
            // (its main caller is named when the profile's user stacks unwind: `… from …futex_mutex_lock`)
            _ => false,
        };
    assert!(names_the_lock, "{}", growth_summary(&e));
    if busy_led {
        eprintln!(
            "skipped the ranking: the fixed busy work grew most (the CPUs ran slower at N=2): {}",
            growth_summary(&e)
        );
    }
    // The futex waits at N=2, named or not.
    let wait = e["points"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"]["kind"] == "user_lock")
        .unwrap_or_else(|| panic!("no futex wait at N=2: {}", growth_summary(&e)));
    // --explain recorded an off-CPU trace, a lock trace and a profile: blocked time is split
    // by the off-CPU trace, the futex named from the same trials' lock trace.
    assert_eq!(wait["cause"]["source"], "offcpu");
    // Heap futexes have an address per trial process: one, or "3 addresses" pooled.
    let object = wait["cause"]["object"].as_str().unwrap();
    assert!(
        object.starts_with("0x") || object.ends_with(" addresses"),
        "{wait:#}"
    );
    // The evidence starts with the user chain: the lock function first.
    assert!(
        wait["cause"]["evidence"][0]
            .as_str()
            .unwrap()
            .contains("futex"),
        "{wait:#}"
    );
    let p = &e["points"][1];
    assert_eq!(p["offcpu_source"], "offcpu");
    assert!(!p["profile_files"].as_array().unwrap().is_empty(), "{p:#}");
    assert_the_traces_agree_with_the_accounting(&e);
}

#[test]
fn explain_names_cpu_in_the_atomic_step_for_one_shared_word_and_no_lock_wait() {
    let lab = Lab::new();
    let Some((e, _)) = explained(&lab, &["atomic"], &["--profile", "--locks"]) else {
        return;
    };
    let causes = workload_causes(&e);
    assert!(
        !causes
            .iter()
            .any(|c| c["cause"]["kind"] == "user_lock" || c["cause"]["kind"] == "kernel_lock"),
        "a lock wait named for an atomic counter: {}",
        growth_summary(&e)
    );
    let runq = runq_share_at_largest_n(&e);
    if runq > 0.2 {
        eprintln!(
            "skipped the ranking: the tasks waited for a CPU {:.0}% of the time at N=2 (other work on this machine); the atomic step's growth is inside that noise",
            runq * 100.0
        );
        return;
    }
    let top = causes
        .first()
        .unwrap_or_else(|| panic!("no cause named: {}", growth_summary(&e)));
    assert_eq!(top["cause"]["kind"], "function", "{}", growth_summary(&e));
    assert!(
        top["cause"]["what"].as_str().unwrap().contains("atomic"),
        "{top:#}"
    );
    assert_the_traces_agree_with_the_accounting(&e);
}

#[test]
fn explain_of_the_private_mutex_names_no_shared_lock() {
    let lab = Lab::new();
    let Some((e, _)) = explained(
        &lab,
        &["futex_mutex", "-p", "shared=false"],
        &["--profile", "--locks"],
    ) else {
        return;
    };
    assert!(
        !workload_causes(&e)
            .iter()
            .any(|c| c["cause"]["kind"] == "user_lock"),
        "{}",
        growth_summary(&e)
    );
}

#[test]
fn explain_names_the_directory_rwsem_of_a_shared_create_unlink_and_not_of_a_private_one() {
    let lab = Lab::new();
    let Some((e, _)) = explained(
        &lab,
        &["create_unlink", "-p", "shared=true"],
        &["--explain"],
    ) else {
        return;
    };
    let runq = runq_share_at_largest_n(&e);
    let cv = largest_cv(&e);
    let causes = workload_causes(&e);
    // The optimistic spinning comes from the profile; `--explain` profiles every trial, so its
    // growth is judged trial by trial: at N=1 no one spins, at N=2 every trial does. Where
    // explain still puts the spin within noise (its trials overlap, or a run profiled one trial
    // per N, whose causes must grow beyond CV × ns/op/task: a CI run had +3.8 µs of spinning
    // against a bound of 4.6 µs), it must say by which rule and leave the growth unexplained.
    let spin_within_noise = e["growth"]["within_noise"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| is_rwsem_cause(c) && c["cause"]["kind"] == "kernel_spin");
    if let Some(spin) = spin_within_noise {
        let delta = spin["delta_ns"].as_f64().unwrap();
        match spin["noise"]["rule"].as_str() {
            Some("cv_bound") => {
                let bound = spin["noise"]["bound_ns"].as_f64();
                assert!(
                    bound.is_some_and(|b| delta.abs() <= b),
                    "the spin is put within noise, but its growth {delta} ns exceeds the bound: {spin:#}"
                );
            }
            Some("trials_separate") => {}
            _ => panic!("the spin is within noise by no per-trial or CV rule: {spin:#}"),
        }
        assert!(
            e["growth"]["unexplained_ns"].as_f64().unwrap() >= 0.5 * delta,
            "the spin's growth within noise is shown as unexplained: {}",
            growth_summary(&e)
        );
        eprintln!(
            "skipped the ranking: the rwsem spin grew {delta:.0} ns, within noise by {}",
            spin["noise"]["rule"]
        );
    } else if runq <= 0.2 && cv <= 0.25 {
        let top = causes
            .first()
            .unwrap_or_else(|| panic!("no cause named: {}", growth_summary(&e)));
        // The directory's rwsem: slept on (the off-CPU trace), or spun on before sleeping
        // (optimistic spinning on its owner, from the profile).
        assert!(
            is_rwsem_cause(top),
            "the top cause is not the directory's rwsem: {}",
            growth_summary(&e)
        );
    } else {
        eprintln!(
            "skipped the ranking: run-queue wait {:.0}% at N=2, trial-to-trial CV up to {:.0}%",
            runq * 100.0,
            cv * 100.0
        );
    }
    assert_the_traces_agree_with_the_accounting(&e);

    let Some((e, _)) = explained(
        &lab,
        &["create_unlink", "-p", "shared=false"],
        &["--explain"],
    ) else {
        return;
    };
    assert!(
        !workload_causes(&e).iter().any(|c| is_rwsem_cause(c)
            && (c["cause"]["kind"] == "kernel_spin" || c["cause"]["caller"] == "do_unlinkat")),
        "a private directory named the shared directory's rwsem: {}",
        growth_summary(&e)
    );
}

/// A growth cause on an rwsem: a sleeping wait (`rwsem:…`) or optimistic spinning on its owner.
fn is_rwsem_cause(c: &Value) -> bool {
    let what = c["cause"]["what"].as_str().unwrap_or_default();
    let object = c["cause"]["object"].as_str().unwrap_or_default();
    (c["cause"]["kind"] == "kernel_lock" && what.starts_with("rwsem"))
        || (c["cause"]["kind"] == "kernel_spin"
            && (object == "an rwsem's owner"
                || (object.ends_with("'s owner") && what.contains("rwsem"))))
}

/// A process spinning beside the workload, outside what is traced: the tasks' wait for a CPU
/// is said to be held by it, by name.
#[test]
fn the_wait_for_a_cpu_names_the_process_that_held_it() {
    struct Hog(std::process::Child);
    impl Drop for Hog {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let hog = Hog(std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh"));
    let lab = Lab::new();
    let explained = explained(&lab, &["atomic"], &["--explain"]);
    drop(hog);
    let Some((e, stdout)) = explained else {
        return;
    };
    let export = lab.json(&["export", "last"]);
    if kernel_tracer_fell_back(&export["run"]["trials"][0]["outcome"]["offcpu"]) {
        return;
    }
    let at_two = e["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["n"] == 2)
        .expect("N=2");
    let runq = at_two["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"]["kind"] == "run_queue")
        .unwrap_or_else(|| panic!("a run-queue part: {at_two}"));
    let held_by = runq["cause"]["held_by"]
        .as_array()
        .unwrap_or_else(|| panic!("who held the CPUs: {runq}"));
    assert_eq!(held_by[0]["by"], "sh", "{runq}\n{stdout}");
    let total: f64 = held_by.iter().map(|h| h["ns"].as_f64().unwrap()).sum();
    assert!(
        held_by[0]["ns"].as_f64().unwrap() >= 0.5 * total,
        "the hog held most of it: {runq}"
    );
}

/// Threads that mmap and munmap contend on their process's `mmap_lock`: the lock trace names
/// it (the waiter's `mm->mmap_lock`, as `perf lock contention -b` does), its sleeping waits
/// from both callers are one cause, and the optimistic spinning on it is named after it.
#[test]
fn explain_names_the_mmap_lock_of_threads_that_map_and_unmap() {
    let lab = Lab::new();
    let Some((e, stdout)) = explained(&lab, &["mmap_munmap"], &["--explain"]) else {
        return;
    };
    let export = lab.json(&["export", "last"]);
    let locks = &export["run"]["trials"][0]["outcome"]["locks"];
    if kernel_tracer_fell_back(locks) {
        return;
    }
    let on_it = |c: &&Value| {
        let object = c["cause"]["object"].as_str().unwrap_or_default();
        object == "mmap_lock" || object == "mmap_lock's owner"
    };
    let waits: Vec<&Value> = workload_causes(&e)
        .into_iter()
        .filter(|c| {
            matches!(c["cause"]["source"].as_str(), Some("offcpu" | "locks"))
                || c["cause"]["kind"] == "kernel_spin"
        })
        .collect();
    let first = waits
        .first()
        .unwrap_or_else(|| panic!("the waits grow: {}", growth_summary(&e)));
    assert!(on_it(first), "{}\n{stdout}", growth_summary(&e));
    assert!(
        !stdout.contains("an rwsem's owner") && !stdout.contains("rwsem:write on 0x"),
        "{stdout}"
    );
    let sleeping: Vec<&&Value> = waits
        .iter()
        .filter(|c| c["cause"]["object"] == "mmap_lock")
        .collect();
    assert_eq!(
        sleeping.len(),
        1,
        "its waits, whoever took it, read or write, are one cause: {sleeping:?}"
    );
}

#[test]
fn explain_names_the_pipe_read_of_pipe_pingpong_as_blocking() {
    let lab = Lab::new();
    let Some((e, stdout)) = explained(&lab, &["pipe_pingpong"], &["--explain"]) else {
        return;
    };
    // Every round trip blocks in a pipe read at every N: what grows may be anything, but the
    // blocked time is the pipe's, named with the workload's step as its caller.
    for p in e["points"].as_array().unwrap() {
        let top = p["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cause"]["source"] == "offcpu")
            .max_by(|a, b| {
                a["ns_per_op"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["ns_per_op"].as_f64().unwrap())
            })
            .unwrap_or_else(|| panic!("N={}: no off-CPU part: {}", p["n"], growth_summary(&e)));
        assert_eq!(top["cause"]["what"], "pipe", "N={}: {top}", p["n"]);
        assert_eq!(top["cause"]["object"], "pipe_read", "N={}: {top}", p["n"]);
    }
    // Each task and its echo partner take turns on one CPU every few microseconds. Without a
    // PMU the profile samples cpu-clock, and a sample lands in whichever of the two runs when
    // it fires (a timer interrupt held off during a switch is taken after it, in the next
    // thread; perf also swaps the two threads' inherited contexts at each switch): per trial,
    // a task's own samples read 0.94–1.10 of its CPU (1.216 once in CI), so that check is shown,
    // not promised. The pair's sum is exact, and the trial reads the partner's CPU for it:
    // 1.001 at N=1 and N=2 in both modes on this project's VM (release build), following the
    // tasks; 0.994–1.012 in six debug runs profiled on every CPU at 241 Hz (the default here).
    assert_the_traces_agree_within(&e, f64::INFINITY);
    for p in e["points"].as_array().unwrap() {
        assert!(
            p["cpu_profiled_ns"].as_f64().is_some_and(|c| c > 0.0)
                && p["cpu_profiled_trials_ns"]
                    .as_f64()
                    .is_some_and(|c| c > 0.0),
            "N={}: the agreement's two sides are not both there: {p}",
            p["n"]
        );
        let (pair, cpu) = (
            p["cpu_profiled_with_partners_ns"].as_f64(),
            p["cpu_with_partners_trials_ns"].as_f64(),
        );
        let (Some(pair), Some(cpu)) = (pair, cpu) else {
            panic!("N={}: no check over the task and its partner: {p}", p["n"]);
        };
        // The profile's cpu-clock timers run on the guest's wall clock, so time the host steals
        // while a task runs is sampled as the task's; schedstat's CPU leaves steal out (this
        // kernel accounts steal apart, PARAVIRT_TIME_ACCOUNTING). A CI run read 1.032 with the
        // fixed 3% bound alone.
        let steal = e[STEAL_BOUND].as_f64().unwrap_or(0.0);
        assert!(
            cpu > p["cpu_profiled_trials_ns"].as_f64().unwrap() * 1.5
                && (pair / cpu - 1.0).abs() <= 0.03 + steal,
            "N={}: task and partner: profile {pair:.1} ns/op vs their CPU {cpu:.1} (the host's \
             steal during the run, at most {:.1}% of the tasks' time)",
            p["n"],
            100.0 * steal
        );
        // The untraced trial run before the first traced one is measured and compared. Its
        // ratio is one pair of 300 ms trials, shown, not promised: with the off-CPU trace
        // sampling its chains in the kernel and the profile on every CPU at a low rate
        // (`--profile-scope auto`: these tasks switch ~250,000 times a second), six runs of this
        // test's debug build read ×0.69–×1.66 here, against ×3.4 when every switch was
        // recorded and the profile followed the tasks; bench/overhead/tracing-overhead measures it in
        // interleaved pairs. Its switches are the scope's evidence.
        let cost = &p["trace_cost"];
        assert!(
            cost["slowdown"].as_f64().is_some_and(|s| s > 0.0)
                && cost["untraced_ns"].as_f64().is_some_and(|u| u > 0.0)
                && cost["profiled"] == true
                && cost["switches_per_task_second"]
                    .as_f64()
                    .is_some_and(|r| r > 5_000.0),
            "N={}: the traces' measured cost: {cost}",
            p["n"]
        );
        // How often the tasks blocked, untraced and traced: here every round trip may block
        // in the pipe read, whatever measures it (0.44–0.56 blocking switches per op on this
        // VM, untraced and traced alike), so the measuring is not said to have made the tasks
        // block more.
        let blocking = &cost["blocking"];
        assert!(
            blocking["untraced_per_kop"]
                .as_f64()
                .is_some_and(|b| b > 0.0)
                && blocking["traced_per_kop"].as_f64().is_some_and(|b| b > 0.0)
                && blocking["untraced_offcpu_ns"].as_f64().is_some(),
            "N={}: the blocking per op of the pair: {blocking}",
            p["n"]
        );
    }
    assert!(
        stdout.contains("what the traces cost: N=")
            && !stdout.contains("the measuring made the tasks block more"),
        "{stdout}"
    );
}

#[test]
fn explain_says_what_evidence_is_missing_and_the_command_that_gets_it() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "spin",
        "--tasks",
        "1,2",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--warmup",
        "0",
        "--quiet",
    ]);
    let text = lab.ok(&["explain", "last"]);
    for needle in [
        "an op costs",
        "no profile: user and system time are not split by function — run with --profile",
        "no lock trace: lock waits and kernel spinning are not named — run with --locks",
        "— run with --offcpu",
        "one trial per N: the noise is not measured, causes are named unchecked — run with --runs 3 (or more)",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let e = lab.json(&["explain", "last", "--json"]);
    assert_parts_add_up(&e);
    assert_eq!(e["points"].as_array().unwrap().len(), 2);
}
