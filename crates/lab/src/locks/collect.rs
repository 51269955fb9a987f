//! The tracing side of `--locks`: open the tracer before the tasks exist
//! ([`TraceSession::start`]), drain it while the sampler runs, and at the end keep the waits
//! that ended inside the measurement window, attribute each to its caller and summarize them
//! per (lock, caller) as a [`LockReport`].
//!
//! Whose waits are kept and where user addresses are named: [`crate::traced_processes`].
//!
//! A kernel wait's caller is the first call-chain frame outside the lock and scheduler text
//! (kallsyms' `__lock_text_*`, `__sched_text_*`), not a fixed number of skipped frames. A futex
//! wait's caller is the first user frame outside the C library and the lock and futex wrappers
//! of Rust's std, parking_lot and rustix (`std::sync::…`, `std::sys::…`, `rustix::…`,
//! `…futex_wait…`): the function that took the lock. User chains are unwound by the tracer
//! from a copy of the user stack with the binaries' unwind information, so they go on through
//! a C library built without frame pointers; they are named through each process's mappings
//! as the tracer recorded them, so a process that has exited is still named.

use std::collections::HashMap;

use super::rows::{self, Attributed, NamedTotal};
use super::{LockRequest, futex_kind, kernel_lock_kind, task_lock_name};
use crate::observer::{Observed, Observer};
use crate::traced_processes::{ResolvedFrames, Scope, TracedProcesses};
use crate::tracer_choice::OpenNotes;
use model::record::{ClockWindow, LockReport, LockSampling, Nanos};

/// Frames in a call-site path (the caller and its callers).
const PATH_FRAMES: usize = 3;

/// Lock tracing for one trial: the open tracer, or why there is none.
#[derive(Debug)]
pub(crate) struct TraceSession {
    tracer: Option<Tracer>,
    request: LockRequest,
    notes: Vec<String>,
    processes: TracedProcesses,
}

/// The tracer `--tracer` chose (or the perf one it fell back to).
type Tracer = Box<dyn perf::Tracer<Trace = perf::LockTrace>>;

/// Opens the chosen tracer; the kernel one falls back to perf's, with a note saying why.
fn open_tracer(request: LockRequest, notes: &mut Vec<String>) -> Option<Tracer> {
    request.tracer.open(
        || perf::BpfLockTracer::open(&request.bpf_config()),
        || perf::LockTracer::open(&request.trace_config()),
        OpenNotes {
            fallback: "locks: traced through perf's ring buffers (every wait with its chain, at several times the cost), not in the kernel",
            unavailable: "lock tracing unavailable",
        },
        notes,
    )
}

impl TraceSession {
    /// Opens the tracer on the calling thread (inherited by the tasks it creates next). Never
    /// fails: when tracing is unavailable the report says why and the trial runs untraced.
    #[cfg(test)]
    pub(crate) fn start(request: LockRequest) -> TraceSession {
        Self::start_scoped(request, Scope::Own)
    }

    /// [`start`](Self::start) with a scope: [`Scope::Command`] before spawning a command step.
    pub(crate) fn start_scoped(request: LockRequest, scope: Scope) -> TraceSession {
        let mut notes = Vec::new();
        let mut tracer = open_tracer(request, &mut notes);
        // A built-in trial's child sets up (its other tracer, its tasks) before its tasks
        // start: no chain of that time is used, and a slow machine's setup filled the ring
        // before the first drain.
        if let (Scope::Own, Some(t)) = (scope, &mut tracer)
            && !crate::tracer_choice::cold_for_tests()
        {
            t.hold_samples();
        }
        TraceSession {
            tracer,
            request,
            notes,
            processes: TracedProcesses::new(scope),
        }
    }

    /// Stops tracing and summarizes the waits that ended inside `window`; the programs' own
    /// time is that of a built-in's `tasks` (thread ids) where given, else of every thread.
    pub(crate) fn report(self, window: ClockWindow, tasks: Option<&[u32]>) -> LockReport {
        let Some(tracer) = self.tracer else {
            return LockReport {
                notes: self.notes,
                ..LockReport::default()
            };
        };
        let mut trace = tracer.finish(window.end.0);
        trace.kernel.retain(|w| !self.processes.is_excluded(w.pid));
        trace.futex.retain(|w| !self.processes.is_excluded(w.pid));
        if let Some(totals) = &mut trace.totals {
            totals.retain(|t| !self.processes.is_excluded(t.pid));
        }
        let mut report = summarize(&trace, window, self.request, self.processes.resolved());
        // The tasks' share only: pipe_pingpong's echo partners switch as often as its tasks,
        // and their runs of the futex-sleep program, counted as the tasks', doubled it.
        if let (Some(tasks), Some(sampling)) = (tasks, &mut report.sampling)
            && !trace.thread_programs_ns.is_empty()
        {
            sampling.programs_time = sampling.programs_time.map(|_| {
                Nanos(
                    tasks
                        .iter()
                        .filter_map(|t| trace.thread_programs_ns.get(t))
                        .sum(),
                )
            });
        }
        report.notes.splice(0..0, self.notes);
        report
    }
}

impl Observer for TraceSession {
    fn needs_draining(&self) -> bool {
        self.tracer.is_some()
    }

    /// Drops the waits of process `pid` (a `perf record` wrapping the command).
    fn exclude(&mut self, pid: u32) {
        self.processes.exclude(pid);
    }

    /// The in-kernel tracer writes call chains from here on.
    fn tasks_released(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.sample_from(at);
        }
    }

    /// The in-kernel tracer sums the waits that end from here on.
    fn window_opens(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.window_opens(at);
        }
    }

    /// The in-kernel tracer sums no wait that ends after this.
    fn window_closes(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.window_closes(at);
        }
    }

    /// Empties the ring buffers; returns the futex waits read with their stacks (see
    /// `perf::LockTracer::drain`). With [`Scope::Command`], the new user call chains are
    /// symbolised in their (live) process.
    fn drain(&mut self) -> u64 {
        let Some(t) = &mut self.tracer else { return 0 };
        let read = t.drain();
        self.processes.name_new_chains(t.new_user_chains());
        read
    }

    /// The lock report of every traced thread (the waits are the process's, not per task).
    fn finish(
        self: Box<Self>,
        window: ClockWindow,
        tasks: Option<&[u32]>,
        observed: &mut Observed,
    ) {
        observed.locks = Some(self.report(window, tasks));
    }
}

fn in_window(end: u64, window: ClockWindow) -> bool {
    end >= window.start.0 && end <= window.end.0
}

/// The function part of `name+0xoff`.
pub(crate) fn function_of(described: &str) -> &str {
    described.rsplit_once("+0x").map_or(described, |(f, _)| f)
}

fn summarize(
    trace: &perf::LockTrace,
    window: ClockWindow,
    request: LockRequest,
    frames: Option<&ResolvedFrames>,
) -> LockReport {
    let mut report = LockReport::default();
    let kallsyms = if request.kernel {
        match perf::Kallsyms::load() {
            Ok(k) => k,
            Err(e) => {
                report
                    .notes
                    .push(format!("kernel locks: callers unnamed: {e}"));
                perf::Kallsyms::default()
            }
        }
    } else {
        perf::Kallsyms::default()
    };
    let mut namer = KernelLockNames {
        kallsyms: &kallsyms,
        unnamed_static: false,
    };
    if request.kernel {
        let waits = kernel_waits(trace, window, &mut namer, &mut report.notes);
        report.kernel = match &trace.totals {
            None => rows::exact(&waits),
            Some(totals) => {
                let named: Vec<NamedTotal> = totals
                    .iter()
                    .filter(|t| t.kernel)
                    .map(|t| NamedTotal {
                        total: *t,
                        lock: namer.name(t.lock, t.op),
                        kind: kernel_lock_kind(t.op),
                    })
                    .collect();
                rows::estimated(&waits, &named)
            }
        };
        if namer.unnamed_static && !kallsyms.has_data_symbols() {
            report.notes.push(
                "kernel locks: static locks are shown as `static 0x…`: this kernel's kallsyms lists no \
                 data objects (CONFIG_KALLSYMS_ALL is off), so they cannot be named"
                    .into(),
            );
        }
    }
    if request.user {
        let waits = user_waits(trace, window, frames, &mut report.notes);
        report.user = match &trace.totals {
            None => rows::exact(&waits),
            Some(totals) => {
                let named: Vec<NamedTotal> = totals
                    .iter()
                    .filter(|t| !t.kernel)
                    .map(|t| NamedTotal {
                        total: *t,
                        lock: format!("{:#x}", t.lock),
                        kind: futex_kind(t.op).to_string(),
                    })
                    .collect();
                rows::estimated(&waits, &named)
            }
        };
    }
    report.lost_records = trace.lost;
    if request.user && trace.sampling.is_none() {
        report.futex_waits_seen = Some(trace.futex_seen);
        report.futex_waits_counted = trace.futex_counted;
    }
    if let Some(tally) = trace.sampling {
        let in_window = |w: u64| in_window(w, window);
        let sampled = trace.kernel.iter().filter(|w| in_window(w.end)).count()
            + trace.futex.iter().filter(|w| in_window(w.end)).count();
        let sampling = LockSampling {
            waits: trace.totals.iter().flatten().map(|t| t.count).sum(),
            sampled: sampled as u64,
            lost: tally.sample_lost,
            unsummed: tally.totals_full,
            threads_untraced: tally.threads_untraced,
            programs_time: trace.programs_ns.map(Nanos),
            rate_lowered_to: tally.rate_lowered_to,
        };
        report.notes.extend(sampling_notes(&sampling, &tally));
        if request.user && request.futex == super::FutexWaits::Sleeps {
            report.notes.push(
                "user locks: the futex waits that slept (--futex-waits sleeps), each from its blocking switch to its switch back in; a call that returned at once (the word had changed) is not counted (`--futex-waits calls` times every call, entry to exit, at a cost where a program makes many other system calls)".to_string(),
            );
        }
        report.sampling = Some(sampling);
        return report;
    }
    match (request.user, trace.futex_counted) {
        (true, Some(counted)) if trace.futex_seen < counted => {
            report.notes.push(format!(
                "user locks: the trace saw {} of the {} futex waits the kernel counted ({:.1}%; the rest were lost in full ring buffers): waits, their totals and the share of each call site are from those seen",
                trace.futex_seen,
                counted,
                100.0 * trace.futex_seen as f64 / counted as f64
            ));
        }
        _ if trace.lost > 0 => {
            report.notes.push(format!(
                "{} trace records were lost (ring buffer full): contention counts are low",
                trace.lost
            ));
        }
        _ => {}
    }
    report
}

/// What the in-kernel tracer's counts say about the report: the sample and any loss.
fn sampling_notes(s: &LockSampling, tally: &perf::LockSamplingTally) -> Vec<String> {
    let nested_full = tally.nested_full;
    let mut notes = Vec::new();
    if s.waits > s.sampled {
        notes.push(format!(
            "locks: every wait counted and timed in the kernel ({}); call chains for a sample of {} ({:.2}%), so each caller's share is an estimate (± its sampling error)",
            s.waits,
            s.sampled,
            100.0 * s.sampled as f64 / s.waits.max(1) as f64
        ));
    }
    if s.lost > 0 {
        notes.push(format!(
            "locks: {} sampled waits lost their chain (ring buffer full): the sample is smaller, the sums are whole",
            s.lost
        ));
    }
    if let Some(rate) = s.rate_lowered_to {
        notes.push(format!(
            "locks: the drain fell behind, so the sampling rate was lowered (to {rate} a second per CPU at the least): fewer chains, none lost to it"
        ));
    }
    if s.unsummed > 0 {
        notes.push(format!(
            "locks: {} waits ({:.1}% of those seen) are missing from every row: the kernel's table of locks was full",
            s.unsummed,
            100.0 * s.unsummed as f64 / (s.waits + s.unsummed) as f64
        ));
    }
    if nested_full > 0 {
        notes.push(format!(
            "kernel locks: {nested_full} waits untimed: a thread waited on more locks at once than the tracer keeps"
        ));
    }
    if s.threads_untraced > 0 {
        notes.push(format!(
            "locks: {} threads went untraced: the kernel's table of threads was full",
            s.threads_untraced
        ));
    }
    if tally.stale_spins > 0 {
        notes.push(format!(
            "kernel locks: {} spinning waits left out: their thread switched between the begin and the end the tracer saw, so the two were not one wait (the kernel runs no tracer inside another on a CPU, so an interrupt's contention while one ran went unseen)",
            tally.stale_spins
        ));
    }
    notes
}

/// Names kernel lock addresses: the waiter's own `mmap_lock`, `siglock` or `file_lock` as the
/// in-kernel tracer named them, a static lock by its symbol.
struct KernelLockNames<'a> {
    kallsyms: &'a perf::Kallsyms,
    /// A static lock was left unnamed (no data symbols).
    unnamed_static: bool,
}

impl KernelLockNames<'_> {
    fn name(&mut self, lock: u64, flags: u32) -> String {
        if let Some(name) = task_lock_name(flags) {
            return name.to_string();
        }
        match self.kallsyms.static_object(lock) {
            Some((name, 0)) => name.to_string(),
            Some((name, off)) => format!("{name}+{off:#x}"),
            None if self.kallsyms.in_image(lock) => {
                self.unnamed_static = true;
                format!("static {lock:#x}")
            }
            None => format!("{lock:#x}"),
        }
    }
}

fn kernel_waits(
    trace: &perf::LockTrace,
    window: ClockWindow,
    namer: &mut KernelLockNames<'_>,
    notes: &mut Vec<String>,
) -> Vec<Attributed> {
    let kallsyms = namer.kallsyms;
    if !kallsyms.has_lock_ranges() {
        notes.push(
            "kernel locks: kallsyms has no __lock_text/__sched_text ranges: callers may be lock functions".into(),
        );
    }
    let mut out = Vec::new();
    for w in trace.kernel.iter().filter(|w| in_window(w.end, window)) {
        let chain = trace
            .chains
            .get(w.chain as usize)
            .map_or(&[][..], Vec::as_slice);
        let first = chain
            .iter()
            .position(|&ip| !kallsyms.in_lock_or_sched_text(ip));
        let (caller, site) = match first {
            Some(i) => {
                let path: Vec<String> = chain[i..]
                    .iter()
                    .take(PATH_FRAMES)
                    .map(|&ip| kallsyms.describe(ip))
                    .collect();
                (function_of(&path[0]).to_string(), path.join(" ← "))
            }
            None => ("(no frame outside lock code)".to_string(), String::new()),
        };
        out.push(Attributed {
            key: (w.pid, w.lock, w.flags),
            lock: namer.name(w.lock, w.flags),
            kind: kernel_lock_kind(w.flags),
            caller,
            site,
            wait: w.wait(),
            weight: w.weight,
        });
    }
    out
}

/// True for frames of the futex wrappers a user lock goes through before its call site.
pub(crate) fn is_wrapper(frame: &perf::UserFrame) -> bool {
    if frame.in_system_library() {
        return true;
    }
    frame.function.as_deref().is_some_and(|f| {
        f.contains("futex_wait")
            || f.contains("::futex::")
            || f.contains("lock_contended")
            || f.starts_with("std::sys::")
            || f.starts_with("<std::sys::")
            || f.starts_with("std::sync::")
            || f.starts_with("<std::sync::")
            || f.starts_with("parking_lot")
            || f.starts_with("rustix::")
            || f.starts_with("syscall")
    })
}

fn user_waits(
    trace: &perf::LockTrace,
    window: ClockWindow,
    resolved: Option<&ResolvedFrames>,
    notes: &mut Vec<String>,
) -> Vec<Attributed> {
    let waits: Vec<&perf::FutexWait> = trace
        .futex
        .iter()
        .filter(|w| in_window(w.end, window))
        .collect();
    // Each process's addresses are named through the mappings the tracer recorded for it (so a
    // process that has exited is still named); a process without recorded mappings falls back
    // to the frames resolved while it lived (a command's) or to this process (a built-in
    // trial's tasks run scalelab's own code).
    let mut per_pid: HashMap<u32, Vec<u64>> = HashMap::new();
    for w in &waits {
        let chain = trace.chains.get(w.chain as usize).into_iter().flatten();
        per_pid.entry(w.pid).or_default().extend(chain);
    }
    let symbols: HashMap<u32, perf::UserSymbols> = per_pid
        .into_iter()
        .filter_map(|(pid, addrs)| match (trace.maps.get(&pid), resolved) {
            (Some(maps), _) => Some((pid, perf::UserSymbols::resolve_mapped(maps, &addrs))),
            (None, Some(_)) => None,
            (None, None) => Some((pid, perf::UserSymbols::resolve(0, &addrs))),
        })
        .collect();
    let frame_of = |pid: u32, addr: u64| match symbols.get(&pid) {
        Some(symbols) => symbols.frame(addr),
        None => resolved
            .and_then(|frames| frames.get(&(pid, addr)).cloned())
            .unwrap_or(perf::UserFrame {
                function: None,
                offset: 0,
                module: None,
                address: None,
            }),
    };
    let mut out = Vec::new();
    let mut unattributed = 0u64;
    let mut stopped_in: HashMap<String, u64> = HashMap::new();
    for w in &waits {
        let chain = trace
            .chains
            .get(w.chain as usize)
            .map_or(&[][..], Vec::as_slice);
        let frames: Vec<perf::UserFrame> = chain.iter().map(|&a| frame_of(w.pid, a)).collect();
        let first = frames.iter().position(|f| !is_wrapper(f));
        // A caller without a symbol (a static function of a stripped binary) is named by its
        // file and the file's own address (`sysbench+0x1a421`), as perf prints it.
        let (caller, site) = match first.and_then(|i| Some((i, frames[i].name()?))) {
            Some((i, name)) => {
                let path: Vec<String> = chain[i..]
                    .iter()
                    .zip(&frames[i..])
                    .take(PATH_FRAMES)
                    .map(|(&a, f)| f.describe(a))
                    .collect();
                let caller = if frames[i].function.is_some() {
                    function_of(&path[0]).to_string()
                } else {
                    name
                };
                (caller, path.join(" ← "))
            }
            _ => {
                unattributed += 1;
                let last = chain
                    .last()
                    .zip(frames.last())
                    .map_or("no user frame".to_string(), |(&a, f)| f.describe(a));
                *stopped_in.entry(last.clone()).or_default() += 1;
                (format!("(unknown: unwinding stopped at {last})"), last)
            }
        };
        out.push(Attributed {
            key: (w.pid, w.uaddr, w.op),
            lock: format!("{:#x}", w.uaddr),
            kind: futex_kind(w.op).to_string(),
            caller,
            site,
            wait: w.wait(),
            weight: w.weight,
        });
    }
    if unattributed > 0 {
        let mut worst: Vec<(String, u64)> = stopped_in.into_iter().collect();
        worst.sort_by_key(|w| std::cmp::Reverse(w.1));
        let sampled = if trace.totals.is_some() {
            "sampled "
        } else {
            ""
        };
        notes.push(format!(
            "user locks: {unattributed} of {} {sampled}futex waits have no call site: unwinding stopped at {} \
             (a stack deeper than --stack-size, or code with neither unwind tables nor frame pointers)",
            waits.len(),
            worst.first().map_or("?", |w| w.0.as_str())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contends on a Rust std `Mutex` from two threads; never inlined, so it is the call site.
    #[inline(never)]
    fn contend_on_a_std_mutex(m: &std::sync::Mutex<u64>) {
        for _ in 0..2000 {
            let mut g = m.lock().unwrap();
            *g += 1;
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }

    /// Needs root (or CAP_PERFMON) and tracefs; says why it skipped otherwise.
    #[test]
    fn std_mutex_waits_are_attributed_to_the_function_taking_the_lock() {
        let session = TraceSession::start(LockRequest::ALL);
        if !session.needs_draining() {
            eprintln!("skipped: {:?}", session.notes);
            return;
        }
        let mut session = session;
        let start = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        // As a trial's runner does once its tasks are set up: chains are written from here.
        session.tasks_released(start);
        let m = std::sync::Mutex::new(0u64);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..2)
                .map(|_| s.spawn(|| contend_on_a_std_mutex(&m)))
                .collect();
            // Drained while they contend, as a trial's runner drains: read once at the end, the
            // in-kernel tracer's samples (16 KiB each) outgrew its 8 MiB ring in a CI run (163
            // lost).
            while !workers.iter().all(|w| w.is_finished()) {
                session.drain();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            session.drain();
        });
        let end = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let report = session.report(
            ClockWindow {
                start: Nanos(start),
                end: Nanos(end),
            },
            None,
        );
        // The most frequent waiter is the mutex (the scope's join is one long wait).
        let top = report
            .user
            .iter()
            .max_by_key(|c| c.contentions)
            .expect("no futex waits traced");
        assert!(
            top.caller.ends_with("contend_on_a_std_mutex"),
            "std Mutex waits attributed to {:?}; all: {:?}",
            top.caller,
            report.user
        );
        assert_eq!(report.lost_records, 0);
    }

    /// Was: a contended `pthread_mutex_lock` in a program built without frame pointers was
    /// attributed to nothing (`unwinding stopped at 0x0`): the frame-pointer chain stops in
    /// the C library. Needs root, tracefs and gcc; says which is missing.
    #[test]
    fn a_pthread_mutex_in_a_program_without_frame_pointers_is_attributed_to_its_caller() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("hot_mutex");
        let source = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../perf/tests/programs/hot_mutex.c"
        );
        let gcc = std::process::Command::new("gcc")
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
        let request = LockRequest {
            kernel: false,
            ..LockRequest::ALL
        };
        let mut session = TraceSession::start(request);
        if !session.needs_draining() {
            eprintln!("skipped: {:?}", session.notes);
            return;
        }
        let start = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        session.tasks_released(start);
        let mut child = std::process::Command::new(&exe)
            .args(["2", "0.6"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "hot_mutex hung");
            session.drain();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let end = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let report = session.report(
            ClockWindow {
                start: Nanos(start),
                end: Nanos(end),
            },
            None,
        );
        let top = report
            .user
            .iter()
            .max_by_key(|c| c.contentions)
            .expect("no futex waits traced");
        assert_eq!(
            top.caller, "take_the_lock",
            "the hot mutex's waits: {top:?}; all: {:?}",
            report.user
        );
        assert!(
            top.call_sites[0].0.contains("take_the_lock+0x")
                && top.call_sites[0].0.contains("worker"),
            "{:?}",
            top.call_sites
        );
    }

    #[test]
    fn only_waits_ending_inside_the_window_count() {
        let w = ClockWindow {
            start: Nanos(100),
            end: Nanos(200),
        };
        assert!(!in_window(99, w));
        assert!(in_window(100, w) && in_window(200, w));
        assert!(!in_window(201, w));
    }

    #[test]
    fn wrappers_are_skipped_and_callers_are_not() {
        let libc = perf::UserFrame {
            function: Some("syscall".into()),
            offset: 0x1d,
            module: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
            address: None,
        };
        let std_futex = perf::UserFrame {
            function: Some("std::sys::pal::unix::futex::futex_wait".into()),
            offset: 4,
            module: Some("/x/scalelab".into()),
            address: None,
        };
        let ours = perf::UserFrame {
            function: Some("lab::workloads::futex_mutex::futex_mutex_lock".into()),
            offset: 0x4a,
            module: Some("/x/scalelab".into()),
            address: None,
        };
        let std_lock = perf::UserFrame {
            function: Some("std::sync::poison::mutex::Mutex<T>::lock".into()),
            offset: 0x6a,
            module: Some("/x/scalelab".into()),
            address: None,
        };
        assert!(is_wrapper(&libc) && is_wrapper(&std_futex) && is_wrapper(&std_lock));
        // rustix's raw system call layer (scalelab's own futex calls go through it).
        let rustix_futex = perf::UserFrame {
            function: Some("rustix::backend::thread::syscalls::futex_timeout".into()),
            offset: 0x130,
            module: Some("/x/scalelab".into()),
            address: None,
        };
        assert!(is_wrapper(&rustix_futex));
        assert!(!is_wrapper(&ours));
        assert_eq!(function_of("do_unlinkat+0x134"), "do_unlinkat");
        assert_eq!(function_of("plain"), "plain");
    }
}
