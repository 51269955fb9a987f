//! Tests that need a real `fork()`, which `fork_single_threaded` only allows in a
//! single-threaded process. libtest runs tests on worker threads, so this binary has
//! `harness = false` and its own `main`: it stays single-threaded, runs each check in order
//! (every fork happens from the one main thread) and exits non-zero if any check fails.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sys::{
    ExitKind, ForkResult, SharedRegion, children_usage, exit_immediately, fork_single_threaded,
    futex_wait, futex_wake, getppid, send_signal, set_child_subreaper, set_parent_death_signal,
    thread_count, thread_usage, try_wait_child, wait_child,
};

/// Forks; the child runs `body` and `_exit`s with its return value (101 if it panicked).
fn spawn_child(body: impl FnOnce() -> i32) -> i32 {
    match fork_single_threaded().expect("fork in a single-threaded test binary") {
        ForkResult::Parent { child } => child,
        ForkResult::Child => {
            let code = catch_unwind(AssertUnwindSafe(body)).unwrap_or(101);
            exit_immediately(code)
        }
    }
}

fn shared_region_written_by_child_is_seen_by_parent() {
    let region = SharedRegion::new(4096).unwrap();
    let child = spawn_child(|| {
        region.u64s()[5].store(0xfeed, Ordering::Release);
        0
    });
    let exit = wait_child(child).unwrap();
    assert_eq!(exit.status, ExitKind::Exited(0));
    assert_eq!(region.u64s()[5].load(Ordering::Acquire), 0xfeed);
}

fn private_memory_is_not_shared() {
    let mut map = sys::AnonMapping::new(4096).unwrap();
    map.write_byte(0, 1);
    let child = spawn_child(move || {
        map.write_byte(0, 2);
        i32::from(map.read_byte(0))
    });
    assert_eq!(wait_child(child).unwrap().status, ExitKind::Exited(2));
}

fn futex_wakes_a_waiter_in_another_process() {
    let region = SharedRegion::new(4096).unwrap();
    let words = region.u32s();
    let (gate, waiting, seen) = (&words[0], &words[1], &words[2]);
    let child = spawn_child(|| {
        waiting.store(1, Ordering::Release);
        futex_wake(waiting, i32::MAX).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while gate.load(Ordering::Acquire) == 0 {
            if Instant::now() > deadline {
                return 3;
            }
            futex_wait(gate, 0, Some(Duration::from_secs(1))).unwrap();
        }
        seen.store(gate.load(Ordering::Acquire), Ordering::Release);
        0
    });
    // Wait (also with a futex) until the child is about to sleep, then open the gate.
    while waiting.load(Ordering::Acquire) == 0 {
        futex_wait(waiting, 0, Some(Duration::from_secs(1))).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    gate.store(7, Ordering::Release);
    let woken = futex_wake(gate, i32::MAX).unwrap();
    let exit = wait_child(child).unwrap();
    assert_eq!(
        exit.status,
        ExitKind::Exited(0),
        "child timed out waiting for the wake"
    );
    assert_eq!(seen.load(Ordering::Acquire), 7);
    assert!(woken <= 1, "woke {woken}");
}

fn wait_reports_exit_code_and_child_cpu_time() {
    let before = children_usage().unwrap();
    let child = spawn_child(|| {
        // Fixed work (not a wall-clock interval), so its CPU time holds up on a busy machine:
        // about 100 ms optimised (this crate is, even in dev builds), far more unoptimised.
        let mut acc = 0u64;
        for i in 0..100_000_000u64 {
            acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
        }
        42
    });
    let exit = wait_child(child).unwrap();
    assert_eq!(exit.status, ExitKind::Exited(42));
    assert!(
        exit.usage.cpu() >= Duration::from_millis(20),
        "{:?}",
        exit.usage
    );
    let grown = children_usage().unwrap().saturating_sub(&before);
    assert!(grown.cpu() >= Duration::from_millis(20), "{grown:?}");
}

fn try_wait_then_kill_reports_the_signal() {
    let region = SharedRegion::new(4096).unwrap();
    let never = &region.u32s()[0];
    let child = spawn_child(|| {
        loop {
            futex_wait(never, 0, None).unwrap();
        }
    });
    assert_eq!(try_wait_child(child).unwrap(), None);
    send_signal(child, libc::SIGKILL).unwrap();
    let exit = wait_child(child).unwrap();
    assert_eq!(exit.status, ExitKind::Signaled(libc::SIGKILL, false));
    assert_eq!(exit.status.to_string(), "killed by SIGKILL");
}

fn parent_death_signal_kills_an_orphan() {
    set_child_subreaper(true).unwrap();
    let region = SharedRegion::new(4096).unwrap();
    let words = region.u32s();
    let (ready, grandchild_pid, never) = (&words[0], &words[1], &words[2]);
    let child = spawn_child(|| {
        let me = std::process::id() as i32;
        let grandchild = spawn_child(|| {
            set_parent_death_signal(libc::SIGKILL).unwrap();
            if getppid() != me {
                return 4; // the parent already died: the documented race check
            }
            ready.store(1, Ordering::Release);
            futex_wake(ready, i32::MAX).unwrap();
            loop {
                futex_wait(never, 0, None).unwrap();
            }
        });
        grandchild_pid.store(grandchild as u32, Ordering::Release);
        while ready.load(Ordering::Acquire) == 0 {
            futex_wait(ready, 0, Some(Duration::from_secs(1))).unwrap();
        }
        0 // exiting orphans the grandchild, whose death signal fires
    });
    assert_eq!(wait_child(child).unwrap().status, ExitKind::Exited(0));
    let grandchild = grandchild_pid.load(Ordering::Acquire) as i32;
    // As subreaper we inherited the orphan and can reap it.
    let exit = wait_child(grandchild).unwrap();
    assert_eq!(exit.status, ExitKind::Signaled(libc::SIGKILL, false));
    set_child_subreaper(false).unwrap();
}

fn fork_is_refused_once_a_thread_exists() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let helper = std::thread::spawn(move || rx.recv());
    let refused = fork_single_threaded();
    drop(tx);
    helper.join().unwrap().ok();
    let err = refused.expect_err("fork must be refused with two threads");
    assert!(
        err.to_string()
            .starts_with("fork: refused because the process has 2 threads"),
        "{err}"
    );
    // Back to one thread (the helper was joined), so forking is allowed again.
    let child = spawn_child(|| 0);
    assert_eq!(wait_child(child).unwrap().status, ExitKind::Exited(0));
}

fn thread_usage_is_per_thread() {
    let main_before = thread_usage().unwrap();
    std::thread::spawn(|| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(40) {
            std::hint::black_box(0u64);
        }
    })
    .join()
    .unwrap();
    let main_delta = thread_usage().unwrap().saturating_sub(&main_before);
    assert!(
        main_delta.cpu() < Duration::from_millis(30),
        "{main_delta:?}"
    );
}

const TESTS: &[(&str, fn())] = &[
    (
        "shared_region_written_by_child_is_seen_by_parent",
        shared_region_written_by_child_is_seen_by_parent,
    ),
    ("private_memory_is_not_shared", private_memory_is_not_shared),
    (
        "futex_wakes_a_waiter_in_another_process",
        futex_wakes_a_waiter_in_another_process,
    ),
    (
        "wait_reports_exit_code_and_child_cpu_time",
        wait_reports_exit_code_and_child_cpu_time,
    ),
    (
        "try_wait_then_kill_reports_the_signal",
        try_wait_then_kill_reports_the_signal,
    ),
    (
        "parent_death_signal_kills_an_orphan",
        parent_death_signal_kills_an_orphan,
    ),
    (
        "fork_is_refused_once_a_thread_exists",
        fork_is_refused_once_a_thread_exists,
    ),
    ("thread_usage_is_per_thread", thread_usage_is_per_thread),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in TESTS {
            println!("{name}: test");
        }
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    assert_eq!(
        thread_count().unwrap(),
        1,
        "the fork tests must start single-threaded"
    );
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, test) in TESTS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let ok = catch_unwind(test).is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(*name);
        }
    }
    println!("\n{} passed; {} failed", ran - failed.len(), failed.len());
    if !failed.is_empty() {
        eprintln!("failed: {failed:?}");
        std::process::exit(1);
    }
}
