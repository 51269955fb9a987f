//! The lock tracer and the perf.data reader on a real C program built as programs are built
//! (`gcc -O2 -g -pthread`, no frame pointers) with one hot `pthread_mutex_t` taken in
//! `take_the_lock`: futex waits are unwound through Debian's frame-pointer-less glibc to the
//! function that took the lock, and a `--call-graph dwarf` profile names the hot function, the
//! C library's functions (from libc6-dbg's build-id debug file) and the PLT stubs.
//!
//! Needs root (or CAP_PERFMON), tracefs, gcc and perf; says which is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/hot_mutex.c");

/// Compiles the program into `dir`; panics naming the fix when gcc is missing.
fn compile(dir: &Path) -> PathBuf {
    let exe = dir.join("hot_mutex");
    let out = Command::new("gcc")
        .args(["-O2", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(SOURCE)
        .output()
        .expect("gcc is needed to build the test program: apt-get install gcc");
    assert!(
        out.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Traces futex waits of `hot_mutex 2 SECONDS` with `stack_size` bytes of stack per wait.
fn trace_hot_mutex(exe: &Path, stack_size: u32) -> Option<(u32, perf::LockTrace)> {
    let config = perf::LockTraceConfig {
        kernel: false,
        user: true,
        stack_size,
        ..perf::LockTraceConfig::default()
    };
    let mut tracer = match perf::LockTracer::open(&config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("skipped: lock tracing unavailable here (run as root with tracefs): {e}");
            return None;
        }
    };
    let mut child = Command::new(exe)
        .args(["2", "0.6"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "hot_mutex did not finish in 60 s"
        );
        tracer.drain();
        std::thread::sleep(Duration::from_millis(10));
    }
    Some((pid, tracer.finish()))
}

/// The named frames of each of `pid`'s futex wait chains.
fn named_chains(trace: &perf::LockTrace, pid: u32) -> Vec<Vec<String>> {
    let maps = trace.maps.get(&pid).map_or(&[][..], Vec::as_slice);
    let waits: Vec<&perf::FutexWait> = trace.futex.iter().filter(|w| w.pid == pid).collect();
    let addrs: Vec<u64> = waits
        .iter()
        .flat_map(|w| trace.chains[w.chain as usize].iter().copied())
        .collect();
    let syms = perf::UserSymbols::resolve_mapped(maps, &addrs);
    waits
        .iter()
        .map(|w| {
            trace.chains[w.chain as usize]
                .iter()
                .map(|&a| syms.frame(a).function.unwrap_or_else(|| "?".into()))
                .collect()
        })
        .collect()
}

/// Was: frame-pointer chains stopped in glibc's `__lll_lock_wait`, so the function that took
/// a contended pthread mutex was lost.
#[test]
fn futex_waits_of_a_program_without_frame_pointers_unwind_to_the_function_taking_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let Some((pid, trace)) = trace_hot_mutex(&exe, perf::DEFAULT_STACK_SIZE) else {
        return;
    };
    let chains = named_chains(&trace, pid);
    assert!(!chains.is_empty(), "no futex waits of hot_mutex traced");
    assert!(
        trace.maps.contains_key(&pid),
        "the tracer kept no mappings of pid {pid}"
    );
    let through = chains
        .iter()
        .filter(|c| c.iter().any(|f| f == "take_the_lock"))
        .count();
    // The main thread's pthread_join waits too; the mutex waits are most of the rest.
    assert!(
        through * 2 >= chains.len().saturating_sub(1),
        "{through} of {} chains reach take_the_lock; e.g. {:?}",
        chains.len(),
        chains
            .iter()
            .find(|c| !c.iter().any(|f| f == "take_the_lock"))
    );
    let chain = chains
        .iter()
        .find(|c| c.iter().any(|f| f == "take_the_lock"))
        .unwrap();
    let at = chain.iter().position(|f| f == "take_the_lock").unwrap();
    assert_eq!(
        chain.get(at + 1).map(String::as_str),
        Some("worker"),
        "the caller of take_the_lock: {chain:?}"
    );
    // A debug build on a busy 2-CPU machine may not drain 16 KiB records as fast as the
    // program waits: losses are counted, never silent.
    eprintln!(
        "{} futex waits traced, {} records lost",
        chains.len(),
        trace.lost
    );
}

/// Was: a process's mappings were read from `/proc/PID/maps` at its first drained sample, so a
/// command that ended before the tracer drained (a short one, or any on a loaded machine
/// where the draining thread ran late: CI saw every wait "unwinding stopped") unwound
/// nothing. Now its exec and mmap records give its mappings: here nothing is drained until
/// the program has exited and been reaped.
#[test]
fn futex_waits_of_a_program_gone_before_the_first_drain_still_unwind() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let config = perf::LockTraceConfig {
        kernel: false,
        user: true,
        ..perf::LockTraceConfig::default()
    };
    let tracer = match perf::LockTracer::open(&config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("skipped: lock tracing unavailable here (run as root with tracefs): {e}");
            return;
        }
    };
    // Short: 0.2 s of contention fits the ring buffers without a drain.
    let status = Command::new(&exe)
        .args(["2", "0.2"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let trace = tracer.finish();
    let pids: std::collections::BTreeSet<u32> = trace.futex.iter().map(|w| w.pid).collect();
    assert_eq!(pids.len(), 1, "one traced process expected: {pids:?}");
    let pid = *pids.iter().next().unwrap();
    assert!(
        std::fs::metadata(format!("/proc/{pid}")).is_err(),
        "the program should be gone"
    );
    let chains = named_chains(&trace, pid);
    let through = chains
        .iter()
        .filter(|c| c.iter().any(|f| f == "take_the_lock"))
        .count();
    assert!(
        through * 2 >= chains.len().saturating_sub(1) && through > 0,
        "{through} of {} chains reach take_the_lock after the program exited ({} records lost); e.g. {:?}",
        chains.len(),
        trace.lost,
        chains.first()
    );
}

/// Records `hot_mutex 2 0.8` with `perf record --call-graph dwarf`, or `None` when perf is
/// missing (CI installs it) or cannot record here.
fn record_dwarf(exe: &Path, dir: &Path) -> Option<PathBuf> {
    let data = dir.join("hot_mutex.perf.data");
    let out = match Command::new("perf")
        .args([
            "record",
            "-q",
            "--call-graph=dwarf,16384",
            "-e",
            "cpu-clock",
        ])
        .args(["-F", "2000", "-k", "CLOCK_MONOTONIC", "-o"])
        .arg(&data)
        .arg("--")
        .arg(exe)
        .args(["2", "0.8"])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: perf is not installed ({e}): apt-get install linux-perf");
            return None;
        }
    };
    if !out.status.success() {
        eprintln!(
            "skipped: perf record failed here: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(data)
}

fn share(p: &perf::Profile, period: u64) -> f64 {
    100.0 * period as f64 / p.tally.period.max(1) as f64
}

/// Was: user chains of a DWARF perf.data were not unwound (the hot function's callers were
/// lost), 38% of the C library's samples were `[unknown]` (its symbols are in libc6-dbg's
/// build-id debug file), and PLT stubs were named `_init`.
#[test]
fn a_dwarf_profile_of_a_program_without_frame_pointers_names_its_callers_and_libc() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let Some(data) = record_dwarf(&exe, dir.path()) else {
        return;
    };
    let p = perf::read_profile(&data, &perf::ProfileOptions::default()).unwrap();
    let find = |name: &str| p.functions.iter().find(|f| f.name.starts_with(name));
    let hot = find("private_work").unwrap_or_else(|| panic!("{:#?}", &p.functions[..5]));
    assert_eq!(hot.dso, "hot_mutex");
    let top_own = p
        .functions
        .iter()
        .filter(|f| f.dso == "hot_mutex")
        .max_by_key(|f| f.self_period)
        .unwrap();
    assert_eq!(
        top_own.name, hot.name,
        "the hot function is not the top one"
    );
    // Unwound through private_work (a leaf without a frame) to the thread's function.
    let worker = find("worker").expect("worker is on the unwound stacks");
    assert!(
        share(&p, worker.total_period) > 80.0,
        "worker is on only {:.1}% of the stacks",
        share(&p, worker.total_period)
    );
    let taker = find("take_the_lock").expect("take_the_lock on the stacks");
    assert!(taker.total_period > taker.self_period, "{taker:?}");
    // The C library's functions are named from its debug file, as perf report names them.
    let libc: Vec<&perf::FunctionCost> = p
        .functions
        .iter()
        .filter(|f| f.dso == "libc.so.6")
        .collect();
    let libc_total: u64 = libc.iter().map(|f| f.self_period).sum();
    let unknown: u64 = libc
        .iter()
        .filter(|f| f.name == "[unknown]")
        .map(|f| f.self_period)
        .sum();
    assert!(libc_total > 0, "no C library samples");
    if Path::new("/usr/lib/debug/.build-id").is_dir() {
        assert!(
            unknown * 50 <= libc_total,
            "{unknown} of {libc_total} libc.so.6 self period is [unknown] (libc6-dbg installed)"
        );
        // Named as perf names them: of a function's aliases, the one perf picks.
        assert!(
            libc.iter()
                .any(|f| f.name == "pthread_mutex_lock@@GLIBC_2.2.5"
                    || f.name == "__GI___pthread_mutex_unlock_usercnt"),
            "{libc:#?}"
        );
        assert!(
            !libc.iter().any(|f| f.name == "___pthread_mutex_lock"),
            "an alias perf does not show: {libc:#?}"
        );
    } else {
        eprintln!("libc6-dbg is not installed: libc names not checked (apt-get install libc6-dbg)");
    }
}

/// Was: PLT stubs were named `_init` (the symbol before them); perf and objdump name them
/// `pthread_mutex_lock@plt`.
#[test]
fn plt_stubs_are_named_func_at_plt_as_objdump_names_them() {
    use object::{Object, ObjectSegment};
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let out = Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec"])
        .arg(&exe)
        .output()
        .expect("objdump (binutils, with gcc) is needed: apt-get install binutils");
    // `0000000000001030 <pthread_mutex_lock@plt>:`
    let stubs: Vec<(u64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            name.ends_with("@plt")
                .then(|| Some((u64::from_str_radix(addr, 16).ok()?, name.to_string())))?
        })
        .collect();
    assert!(
        stubs.iter().any(|(_, n)| n == "pthread_mutex_lock@plt"),
        "{stubs:?}"
    );
    let data = std::fs::read(&exe).unwrap();
    let elf = object::File::parse(&*data).unwrap();
    let offset_of = |addr: u64| {
        elf.segments().find_map(|s| {
            let (off, size) = s.file_range();
            (addr >= s.address() && addr < s.address() + size).then(|| addr - s.address() + off)
        })
    };
    // A mapping of the whole file at address 0: addresses are file offsets.
    let whole = perf::MappedFile {
        start: 0,
        end: data.len() as u64,
        offset: 0,
        path: exe.display().to_string(),
    };
    let offsets: Vec<u64> = stubs
        .iter()
        .map(|(a, _)| offset_of(*a).unwrap() + 4)
        .collect();
    let syms = perf::UserSymbols::resolve_mapped(std::slice::from_ref(&whole), &offsets);
    for ((_, name), off) in stubs.iter().zip(&offsets) {
        let frame = syms.frame(*off);
        assert_eq!(frame.function.as_deref(), Some(name.as_str()), "{frame:?}");
        assert_eq!(frame.offset, 4);
    }
}

/// Was: a fixed-period recording (`perf record -c N`, as scalelab records cpu-clock) carries no
/// period in its samples, and each was counted as 1 ns: the profile's CPU per op read ~0.
#[test]
fn a_fixed_period_cpu_clock_profile_counts_each_sample_as_its_period() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path());
    let data = dir.path().join("fixed.perf.data");
    let out = match Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c", "250000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .args(["2", "0.3"])
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "skipped: perf record failed here: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: perf is not installed ({e})");
            return;
        }
    };
    drop(out);
    let p = perf::read_profile(&data, &perf::ProfileOptions::default()).unwrap();
    assert!(p.tally.samples > 100, "{} samples", p.tally.samples);
    assert_eq!(p.tally.period, p.tally.samples * 250_000);
}
