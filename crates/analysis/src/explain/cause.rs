//! The causes an op's cost is split into, and each cause's cost per op at one N, pooled over
//! the trials that carry its evidence and per trial (for the noise rule).
//!
//! Off-CPU time is split by the off-CPU trace's sites (`--offcpu`) when the point has one, else
//! by the lock trace's sleeping waits (futex, rwsem, mutex: `--locks`), never both (they see
//! the same blocked time). CPU time is split by the profile's self cost per function
//! (`--profile`, `cpu-clock` only: its period is in ns) and the lock trace's kernel spinning
//! (spinlock and rwlock waits, CPU time inside system time); with a lock trace, the kernel's
//! spin slow-path functions are left to the lock trace so no time is counted twice.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::profile::{FunctionRow, PointProfile};
use model::record::{LockContention, LockReport, OffCpuSite, TrialMeasurement};

/// What kind of cause, and so which part of the accounting it lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// Waiting for a user lock (futex), blocked.
    UserLock,
    /// Waiting for a kernel sleeping lock (rwsem, mutex), blocked.
    KernelLock,
    /// Blocked in another call chain (I/O, fsync, pipe, sleep).
    Blocking,
    /// Blocked, the cause not traced (no `--offcpu` and no lock wait explains it).
    Blocked,
    /// Spinning on a kernel spinlock or rwlock: CPU time inside system time.
    KernelSpin,
    /// CPU time in one function (self cost, from the profile).
    Function,
    /// User CPU, not split (no profile).
    UserCpu,
    /// System CPU, not split (no profile).
    SystemCpu,
    /// Runnable, waiting for a CPU.
    RunQueue,
    /// On a CPU that the hypervisor took from the guest (steal): the host's other work, not
    /// the workload's, measured by the in-kernel off-CPU tracer.
    Steal,
    /// CPU in the kernel's perf and tracing code: what the profile and the traces themselves
    /// cost the traced trials, not the workload.
    Measurement,
}

/// How a cause limits scaling, in the terms of the USL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// Waiting: one at a time (σ).
    Serialisation,
    /// CPU per op growing without waiting, e.g. cache lines bouncing (κ).
    Coherency,
    /// Neither (tasks waiting for CPUs: more tasks than CPUs, or the host's vCPUs than its
    /// CPUs).
    Oversubscription,
    /// Neither: the cost of observing (profiling and tracing).
    Observation,
}

impl CauseKind {
    /// The USL term this kind of cause feeds.
    pub fn mechanism(self) -> Mechanism {
        match self {
            CauseKind::UserLock
            | CauseKind::KernelLock
            | CauseKind::Blocking
            | CauseKind::Blocked
            | CauseKind::KernelSpin => Mechanism::Serialisation,
            CauseKind::Function | CauseKind::UserCpu | CauseKind::SystemCpu => Mechanism::Coherency,
            CauseKind::RunQueue | CauseKind::Steal => Mechanism::Oversubscription,
            CauseKind::Measurement => Mechanism::Observation,
        }
    }
    /// Where its evidence comes from: `locks`, `offcpu`, `profile` or `accounting`.
    fn source(self, from_offcpu: bool) -> &'static str {
        match self {
            CauseKind::UserLock | CauseKind::KernelLock | CauseKind::Blocking if from_offcpu => {
                "offcpu"
            }
            CauseKind::UserLock | CauseKind::KernelLock | CauseKind::KernelSpin => "locks",
            CauseKind::Blocking | CauseKind::Steal => "offcpu",
            CauseKind::Function => "profile",
            _ => "accounting",
        }
    }
}

/// One named cause: what, on what, from where.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// The kind of cause.
    pub kind: CauseKind,
    /// The lock kind or blocking call (`futex`, `rwsem:write`, `fsync` …), the function, or the
    /// accounting part.
    pub what: String,
    /// The lock or object waited on (a symbol, `N addresses`), or the function's DSO.
    pub object: String,
    /// Who waited (the lock's caller, the blocking chain's first function), empty for CPU.
    pub caller: String,
    /// Where the evidence comes from: `locks`, `offcpu`, `profile` or `accounting`.
    pub source: &'static str,
    /// The evidence: the call sites (most waits first, each once across trials), a call chain
    /// (innermost first), the function and its DSO.
    pub evidence: Vec<String>,
    /// For a command's off-CPU site: what ended its waits (a lock hand-off, an I/O completion,
    /// a timer…) with their time, most first, summed over the trials; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ended_by: Vec<EndedBy>,
    /// For a kernel function: the system call most of its samples ran under, with its caller
    /// and share (`sched_yield() from sysbench+0x1a3f1, 63% of its samples`), when over half.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
    /// For waits grouped by what they wait on ([`key`]): the callers that reached it, with
    /// their time summed over the trials, most first; empty when one caller holds it all
    /// (`caller` is then the only one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub call_sites: Vec<CallSite>,
    /// For the wait for a CPU: who held the CPUs meanwhile, summed over the traced trials,
    /// most first (the in-kernel off-CPU tracer's; empty without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<EndedBy>,
    /// For workers' waits followed into a server of the system under test: the server whose
    /// work this cause is (`what`, `object` and `caller` are its), and where the workers
    /// waited for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<model::record::ChainVia>,
}

/// One caller of a cause grouped by what it waits on, and its part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSite {
    /// The caller (a user frame, or the kernel function that took the lock).
    pub site: String,
    /// Its waits' time, summed over the trials, in ns.
    pub ns: f64,
}

/// Part of a cause's waits, by what ended them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndedBy {
    /// What ended them.
    pub by: String,
    /// Their blocked time, summed over the trials, in ns.
    pub ns: f64,
}

impl Cause {
    /// What ended most of its waits and that part's share of them, in %, when known.
    pub fn mostly_ended_by(&self) -> Option<(&str, f64)> {
        let total: f64 = self.ended_by.iter().map(|e| e.ns).sum();
        let top = self.ended_by.first()?;
        (total > 0.0).then(|| (top.by.as_str(), top.ns / total * 100.0))
    }
}

/// A cause's cost at one N.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    /// The cause.
    pub cause: Cause,
    /// ns per op, pooled over the trials with its evidence (their total ÷ their ops).
    pub ns_per_op: f64,
    /// ns per op in each of those trials, in trial order (empty where only a merged value
    /// exists: a profile of one trial).
    #[serde(skip)]
    pub per_trial: Vec<f64>,
}

/// The key a cause is matched by across N, and its waits pooled by: heap locks have a new
/// address in every trial process, so an address is not part of it. Waits at one kernel wait
/// site (a blocking call's kernel function: `percpu_rwsem_wait`, `fsync`, `pipe_read`) or on
/// one named kernel lock (`mmap_lock`, a static lock's symbol) are one cause whoever called
/// it: the callers are its [`Cause::call_sites`], not causes of their own. A user lock and
/// an unnamed kernel lock are known only by who took them, so their caller stays in the key.
pub(crate) fn key(c: &Cause) -> CauseKey {
    let per_process = c.object.starts_with("0x") || c.object.ends_with(" addresses");
    let object = if per_process {
        String::new()
    } else {
        c.object.clone()
    };
    let by_what_it_waits_on = match c.kind {
        CauseKind::Blocking => true,
        CauseKind::KernelLock | CauseKind::KernelSpin => !per_process && !c.object.is_empty(),
        _ => false,
    };
    let (what, caller) = if by_what_it_waits_on {
        (lock_family(c).to_string(), String::new())
    } else {
        (c.what.clone(), c.caller.clone())
    };
    let server = c.via.as_ref().map(|v| v.server.clone()).unwrap_or_default();
    (c.kind, server, what, object, caller)
}

/// What makes two causes one: kind, server (for a followed wait), what, object, caller.
pub(crate) type CauseKey = (CauseKind, String, String, String, String);

/// What a grouped cause waits on without the mode of the wait: a named kernel lock's readers
/// and writers (`percpu-rwsem:read`, `percpu-rwsem:write` on the file locks' rwsem) wait on one
/// lock, and are one cause (`percpu-rwsem`); any other cause's `what` whole.
fn lock_family(c: &Cause) -> &str {
    match c.kind {
        CauseKind::KernelLock | CauseKind::KernelSpin => {
            c.what.split(':').next().unwrap_or(&c.what)
        }
        _ => &c.what,
    }
}

/// Whether a function cause is the kernel's (its DSO `[kernel]`, as the profile names it).
pub(crate) fn is_kernel_function(c: &Cause) -> bool {
    c.object.starts_with("[kernel")
}

/// Whether a kernel lock kind spins (CPU time) rather than sleeps.
pub(crate) fn spins(kind: &str) -> bool {
    kind == "spinlock" || kind.starts_with("rwlock:") || kind == "rwlock"
}

fn offcpu_kind(kind: &str) -> CauseKind {
    if kind.starts_with("futex") {
        CauseKind::UserLock
    } else if kind.starts_with("rwsem")
        || kind.starts_with("mutex")
        || kind.starts_with("percpu-rwsem")
        || kind.starts_with("rt")
    {
        CauseKind::KernelLock
    } else {
        CauseKind::Blocking
    }
}

/// One cause's waits across the trials of a point, before pooling.
struct Acc {
    cause: Cause,
    objects: Vec<String>,
    /// Each caller's waits and evidence (its call chain), in the order first seen.
    callers: Vec<(String, u64, Vec<String>)>,
    per_trial: Vec<u64>,
}

/// Pools per-trial waits (`(trial position, cause, wait ns)`) into parts; `ops[i]` is trial
/// i's ops.
fn pool(rows: Vec<(usize, Cause, u64)>, ops: &[f64]) -> Vec<Part> {
    let mut accs: BTreeMap<CauseKey, Acc> = BTreeMap::new();
    for (i, cause, wait) in rows {
        let acc = accs.entry(key(&cause)).or_insert_with(|| Acc {
            cause: Cause {
                ended_by: Vec::new(),
                under: None,
                call_sites: Vec::new(),
                held_by: Vec::new(),
                ..cause.clone()
            },
            objects: Vec::new(),
            callers: Vec::new(),
            per_trial: vec![0; ops.len()],
        });
        if !acc.objects.contains(&cause.object) {
            acc.objects.push(cause.object.clone());
        }
        if acc.cause.what != cause.what {
            // Readers and writers of one lock.
            acc.cause.what = lock_family(&cause).to_string();
        }
        let caller = match acc.callers.iter().position(|(c, _, _)| *c == cause.caller) {
            Some(i) => i,
            None => {
                acc.callers.push((cause.caller.clone(), 0, Vec::new()));
                acc.callers.len() - 1
            }
        };
        let (_, waited, evidence) = &mut acc.callers[caller];
        *waited += wait;
        for e in cause.evidence {
            if !evidence.contains(&e) {
                evidence.push(e);
            }
        }
        for e in cause.ended_by {
            match acc.cause.ended_by.iter_mut().find(|a| a.by == e.by) {
                Some(a) => a.ns += e.ns,
                None => acc.cause.ended_by.push(e),
            }
        }
        acc.per_trial[i] += wait;
    }
    let total_ops: f64 = ops.iter().sum();
    let mut parts: Vec<Part> = accs
        .into_values()
        .map(|mut acc| {
            if acc.objects.len() > 1 {
                acc.cause.object = format!("{} addresses", acc.objects.len());
            }
            // The caller with the most waits names the cause; the others are its call sites.
            // Its evidence is that caller's (one call chain, not the lines of several mixed).
            acc.callers
                .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            if let Some((top, _, evidence)) = acc.callers.first_mut() {
                acc.cause.caller = top.clone();
                acc.cause.evidence = std::mem::take(evidence);
            }
            if acc.callers.len() > 1 {
                acc.cause.call_sites = acc
                    .callers
                    .iter()
                    .map(|(site, ns, _)| CallSite {
                        site: site.clone(),
                        ns: *ns as f64,
                    })
                    .collect();
            }
            acc.cause
                .ended_by
                .sort_by(|a, b| b.ns.total_cmp(&a.ns).then_with(|| a.by.cmp(&b.by)));
            acc.cause.evidence.truncate(8);
            let total: u64 = acc.per_trial.iter().sum();
            Part {
                ns_per_op: if total_ops > 0.0 {
                    total as f64 / total_ops
                } else {
                    0.0
                },
                per_trial: acc
                    .per_trial
                    .iter()
                    .zip(ops)
                    .map(|(&w, &o)| if o > 0.0 { w as f64 / o } else { 0.0 })
                    .collect(),
                cause: acc.cause,
            }
        })
        .collect();
    parts.sort_by(|a, b| b.ns_per_op.total_cmp(&a.ns_per_op));
    parts
}

fn lock_cause(kind: CauseKind, c: &LockContention) -> Cause {
    Cause {
        kind,
        what: c.kind.clone(),
        object: c.lock.clone(),
        caller: c.caller.clone(),
        source: kind.source(false),
        evidence: c.call_sites.iter().map(|(site, _)| site.clone()).collect(),
        ended_by: Vec::new(),
        under: None,
        call_sites: Vec::new(),
        held_by: Vec::new(),
        via: None,
    }
}

/// Scheduler frames: on every blocked chain, they say nothing about the cause.
fn is_scheduler_frame(frame: &str) -> bool {
    ["schedule", "__schedule", "io_schedule", "preempt_schedule"]
        .iter()
        .any(|s| frame.starts_with(s) && frame[s.len()..].starts_with(['+', '_', ' ']))
}

/// A site's call chain as evidence, innermost first, scheduler frames left out: for a kernel
/// lock the kernel frames (where the lock is taken), for the rest the user frames first (who
/// blocked), then the kernel path into the wait.
fn site_evidence(kind: CauseKind, s: &OffCpuSite) -> Vec<String> {
    let kernel = s.stack.iter().filter(|f| !is_scheduler_frame(f));
    let (first, then): (Vec<&String>, Vec<&String>) = if kind == CauseKind::KernelLock {
        (
            kernel.take(6).collect(),
            s.user_stack.iter().take(2).collect(),
        )
    } else {
        (
            s.user_stack.iter().take(5).collect(),
            kernel.take(3).collect(),
        )
    };
    let mut out: Vec<String> = first.into_iter().cloned().collect();
    if !then.is_empty() {
        let label = if kind == CauseKind::KernelLock {
            "user"
        } else {
            "kernel"
        };
        out.push(format!(
            "{label}: {}",
            then.iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(" ← ")
        ));
    }
    out
}

/// The kernel locks a run's lock traces named (a symbol, a static address, `mmap_lock`; not a
/// per-process address), by the waits' kind and kernel caller: the lock with the most wait.
pub(crate) type RunLockNames = HashMap<(String, String), String>;

/// The kernel lock waits the lock traces of a run's trials recorded.
fn kernel_lock_waits(data: &model::record::RunData) -> impl Iterator<Item = &LockContention> {
    data.trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .filter_map(|m| m.locks.as_ref())
        .flat_map(|r| &r.kernel)
}

/// [`RunLockNames`] of a run's trials.
pub(crate) fn run_lock_names(data: &model::record::RunData) -> RunLockNames {
    let mut waited: HashMap<(String, String), HashMap<&str, u64>> = HashMap::new();
    let kernel =
        kernel_lock_waits(data).filter(|c| !c.lock.is_empty() && !c.lock.starts_with("0x"));
    for c in kernel {
        *waited
            .entry((c.kind.clone(), c.caller.clone()))
            .or_default()
            .entry(c.lock.as_str())
            .or_default() += c.wait_total.0;
    }
    waited
        .into_iter()
        .filter_map(|(k, locks)| {
            let (lock, _) = locks
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
            Some((k, lock.to_string()))
        })
        .collect()
}

/// An off-CPU site as a cause. A switch event does not say which lock a task waited for:
/// with the same trial's lock trace, a lock wait of the same kind from the same caller names
/// it (the futex's address, the kernel lock's symbol or address); without one, only the kind
/// and the caller name it.
///
/// A kernel lock the trial's lock trace did not see taken there keeps the name the run's other
/// trials gave it ([`RunLockNames`]): a writer of the file locks' per-CPU rwsem waits first for
/// a grace period, which is no contention event, and a trial whose writer never found the lock
/// held named no lock for it.
fn site_cause(s: &OffCpuSite, locks: Option<&LockReport>, names: &RunLockNames) -> Cause {
    let kind = offcpu_kind(&s.kind);
    let object = match kind {
        CauseKind::UserLock | CauseKind::KernelLock => locks
            .into_iter()
            .flat_map(|r| r.user.iter().chain(&r.kernel))
            .filter(|c| c.kind == s.kind && c.caller == s.caller)
            .max_by_key(|c| c.wait_total)
            .map(|c| c.lock.clone())
            .or_else(|| {
                (kind == CauseKind::KernelLock)
                    .then(|| names.get(&(s.kind.clone(), s.caller.clone())).cloned())
                    .flatten()
            })
            .unwrap_or_default(),
        _ => s.object.clone(),
    };
    Cause {
        kind,
        what: s.kind.clone(),
        object,
        caller: s.caller.clone(),
        source: kind.source(true),
        evidence: site_evidence(kind, s),
        ended_by: s
            .woken_by
            .iter()
            .map(|w| EndedBy {
                by: w.by.clone(),
                ns: w.total.0 as f64,
            })
            .collect(),
        under: None,
        call_sites: Vec::new(),
        held_by: Vec::new(),
        via: s.via.clone(),
    }
}

/// The blocked time of a point's trials split by cause, and the time that split covers per op
/// (pooled), from the off-CPU trace when the point has one, else from the lock trace's
/// sleeping waits. `None` when neither was recorded. The `&str` is the source.
pub(crate) fn offcpu_parts(
    trials: &[(u32, &TrialMeasurement)],
    names: &RunLockNames,
) -> Option<(&'static str, Vec<u32>, Vec<Part>, f64)> {
    let traced: Vec<&(u32, &TrialMeasurement)> =
        trials.iter().filter(|(_, m)| m.offcpu.is_some()).collect();
    if !traced.is_empty() {
        let ops: Vec<f64> = traced.iter().map(|(_, m)| m.work()).collect();
        let mut rows = Vec::new();
        let mut total = 0u64;
        for (i, (_, m)) in traced.iter().enumerate() {
            let Some(r) = &m.offcpu else { continue };
            total += r.total.0;
            let locks = m.locks.as_ref();
            rows.extend(
                r.sites
                    .iter()
                    .map(|s| (i, site_cause(s, locks, names), s.total.0)),
            );
            if let Some(stolen) = r.stolen {
                rows.push((i, steal_cause(), stolen.0));
            }
        }
        let all_ops: f64 = ops.iter().sum();
        let covered = if all_ops > 0.0 {
            total as f64 / all_ops
        } else {
            0.0
        };
        let idx = traced.iter().map(|(i, _)| *i).collect();
        return Some(("offcpu", idx, pool(rows, &ops), covered));
    }
    let traced: Vec<&(u32, &TrialMeasurement)> =
        trials.iter().filter(|(_, m)| m.locks.is_some()).collect();
    if traced.is_empty() {
        return None;
    }
    let ops: Vec<f64> = traced.iter().map(|(_, m)| m.work()).collect();
    let mut rows = Vec::new();
    for (i, (_, m)) in traced.iter().enumerate() {
        let Some(r) = &m.locks else { continue };
        for c in &r.user {
            rows.push((i, lock_cause(CauseKind::UserLock, c), c.wait_total.0));
        }
        for c in r.kernel.iter().filter(|c| !spins(&c.kind)) {
            rows.push((i, lock_cause(CauseKind::KernelLock, c), c.wait_total.0));
        }
    }
    let parts = pool(rows, &ops);
    let covered = parts.iter().map(|p| p.ns_per_op).sum();
    let idx = traced.iter().map(|(i, _)| *i).collect();
    Some(("locks", idx, parts, covered))
}

/// The hypervisor's steal as a cause: the tasks' time on a CPU that the host took (their
/// wall-clock time on a CPU less their CPU time), in the off-CPU residual, never blocked time.
pub(crate) fn steal_cause() -> Cause {
    Cause {
        source: CauseKind::Steal.source(true),
        ..whole_part(
            CauseKind::Steal,
            "stolen by the hypervisor (steal: the vCPU taken while a task ran)",
            Vec::new(),
            0.0,
        )
        .cause
    }
}

/// Kernel spinning per op from the lock trace, `None` without one.
pub(crate) fn spin_parts(trials: &[(u32, &TrialMeasurement)]) -> Option<Vec<Part>> {
    let traced: Vec<&(u32, &TrialMeasurement)> =
        trials.iter().filter(|(_, m)| m.locks.is_some()).collect();
    if traced.is_empty() {
        return None;
    }
    let ops: Vec<f64> = traced.iter().map(|(_, m)| m.work()).collect();
    let mut rows = Vec::new();
    for (i, (_, m)) in traced.iter().enumerate() {
        let Some(r) = &m.locks else { continue };
        for c in r.kernel.iter().filter(|c| spins(&c.kind)) {
            rows.push((i, lock_cause(CauseKind::KernelSpin, c), c.wait_total.0));
        }
    }
    Some(pool(rows, &ops))
}

/// Kernel functions that run because scalelab observes: the sampling interrupt's and the
/// tracepoints' perf code (`perf_swevent_event`, `perf_tp_event`, `perf_syscall_enter` …), the
/// system-call tracing hooks the futex tracepoints switch on, the trace event filters the
/// perf tracer sets (`filter_match_preds`, else read as the workload's), and the in-kernel
/// tracers' BPF programs with the tracepoints' calls into them (`bpf_trace_run4`,
/// `__bpf_trace_sched_switch`), where a profile samples inside them (the figures:
/// docs/notes/explain.md).
pub(crate) fn is_observation(kernel: bool, name: &str) -> bool {
    kernel
        && (name.starts_with("perf_")
            || name.starts_with("__perf_")
            || name.starts_with("trace_")
            || name.starts_with("tracing_")
            || name.starts_with("filter_pred_")
            || name == "filter_match_preds"
            || name == "syscall_trace_enter"
            || name == "syscall_exit_work"
            || name.starts_with("bpf_trace_run")
            || name.starts_with("__bpf_trace_")
            || is_tracer_program(name))
}

/// The in-kernel tracers' BPF programs, as the kernel names them once compiled
/// (`bpf_prog_<tag>_<name>`): their runs, as profile functions, where a profile samples inside
/// them (a PMU's interrupts reach code that runs with interrupts off; cpu-clock's do not).
const TRACER_PROGRAMS: &[&str] = &[
    "_on_switch",
    "_on_waking",
    "_on_fork",
    "_on_exit",
    "_on_contention_begin",
    "_on_contention_end",
    "_on_sys_enter",
    "_on_sys_exit",
];

/// Whether `name` is one of the in-kernel tracers' programs (not a BPF program of the
/// workload's own, such as a seccomp filter), or a helper they call.
fn is_tracer_program(name: &str) -> bool {
    (name.starts_with("bpf_prog_") && TRACER_PROGRAMS.iter().any(|p| name.ends_with(p)))
        || BPF_HELPERS.iter().any(|p| name.starts_with(p))
}

/// The kernel's helpers and map code that the tracers' programs call, which run inside the
/// programs' runs: seen on cpu-clock where a program runs with interrupts on (`--locks` at a
/// system call's entry: `bpf_get_current_pid_tgid`). A seccomp filter (classic BPF) calls none
/// of them.
const BPF_HELPERS: &[&str] = &[
    "bpf_get_current_",
    "bpf_get_stack",
    "bpf_get_task_stack",
    "bpf_get_prandom_u32",
    "bpf_ktime_get_",
    "bpf_ringbuf_",
    "bpf_probe_read_",
    "bpf_task_pt_regs",
    "htab_map_",
    "__htab_map_",
];

/// The share of profile `p`'s samples inside the in-kernel tracers' programs and the helpers
/// they call: what it saw of their time (all of it with a PMU; a program that runs with
/// interrupts on, as at a system call's entry, even on cpu-clock), which their timed runs must
/// not count again.
pub(crate) fn programs_share(p: &PointProfile) -> f64 {
    let own = p.period as f64 / p.ops;
    if own <= 0.0 {
        return 0.0;
    }
    p.functions
        .iter()
        .filter(|f| f.kernel && is_tracer_program(&f.name))
        .filter_map(|f| f.cost_per_op)
        .sum::<f64>()
        / own
}

/// The in-kernel tracers' own programs as a cause of kind [`CauseKind::Measurement`]: `ns` per
/// op, pooled, and each timing trial's `(index, per op)`.
pub(crate) fn programs_part(ns: f64, per_trial: Vec<(u32, f64)>) -> Part {
    let mut part = whole_part(
        CauseKind::Measurement,
        "the in-kernel tracers' programs",
        per_trial.into_iter().map(|(_, v)| v).collect(),
        ns,
    );
    part.cause.object = "BPF, timed in the kernel".into();
    part.cause.evidence = vec![
        "their runs in the tasks' context, timed in the kernel (system CPU; a cpu-clock profile counts it where interrupts come back on, as in finish_task_switch)".into(),
    ];
    part
}

/// CPU per op of a profile's own trials spent in the kernel's perf and tracing functions:
/// the cost of measuring, which the profiled trials carry and the others do not (or less).
pub(crate) fn measuring_cost(p: &PointProfile) -> f64 {
    p.functions
        .iter()
        .filter(|f| is_observation(f.kernel, &f.name))
        .filter_map(|f| f.cost_per_op)
        .fold(0.0, |sum, c| sum + c)
}

/// One profile function as a cause of `kind`, its self cost per op × `scale`, and the same in
/// each of the profile's trials when it merged two or more, each with its own ops.
fn profile_part(p: &PointProfile, f: &FunctionRow, kind: CauseKind, scale: f64) -> Option<Part> {
    let key = f.key();
    let per_trial = match profile_trials(p) {
        0 => Vec::new(),
        _ => p
            .trials
            .iter()
            .filter_map(|t| t.cost_per_op(&key))
            .map(|c| c * scale)
            .collect(),
    };
    Some(Part {
        cause: Cause {
            kind,
            what: f.key(),
            object: f.dso.clone(),
            caller: String::new(),
            source: "profile",
            evidence: vec![format!(
                "{} ({}), {:.1}% of samples",
                f.name, f.dso, f.self_share
            )],
            ended_by: Vec::new(),
            under: None,
            call_sites: Vec::new(),
            held_by: Vec::new(),
            via: None,
        },
        ns_per_op: f.cost_per_op? * scale,
        per_trial,
    })
}

/// How many per-trial values a profile's functions carry: its trials when it merged two or
/// more, each with ops; else 0 (one value per N, judged against the whole's noise).
pub(crate) fn profile_trials(p: &PointProfile) -> usize {
    let k = p.trials.len();
    if k >= 2 && p.trials.iter().all(|t| t.ops > 0.0) {
        k
    } else {
        0
    }
}

/// The kernel's perf and tracing functions of a profile as causes of kind
/// [`CauseKind::Measurement`], each its cost per op × `carried` (the share of the profiled
/// trials' cost of measuring that the median trial carries too).
pub(crate) fn measuring_parts(p: &PointProfile, carried: f64) -> Vec<Part> {
    p.functions
        .iter()
        .filter(|f| is_observation(f.kernel, &f.name))
        .filter_map(|f| profile_part(p, f, CauseKind::Measurement, carried))
        .collect()
}

/// CPU per op by function from a profile (self cost × `scale`: the point's median CPU per op,
/// less the cost of measuring it carries, over the profile's own less its cost of measuring,
/// so that the functions split the workload's CPU by their shares of the samples the workload
/// itself took), most first. The perf and tracing functions are left out ([`measuring_parts`]
/// has them); with `skip_spin`, so are the kernel's spinlock and rwlock slow paths (the lock
/// trace has them). Optimistic spinning on a sleeping lock's owner is a cause of kind
/// [`CauseKind::KernelSpin`] (waiting on CPU), its function the object.
pub(crate) fn function_parts(p: &PointProfile, skip_spin: bool, scale: f64) -> Vec<Part> {
    p.functions
        .iter()
        .filter(|f| !(skip_spin && f.kernel && lock_trace_measures(&f.name)))
        .filter(|f| !is_observation(f.kernel, &f.name))
        .filter_map(|f| {
            let spun = OPTIMISTIC_SPIN.iter().find(|(name, _)| *name == f.name);
            if let (true, Some((name, on))) = (f.kernel, spun) {
                let mut part = profile_part(p, f, CauseKind::KernelSpin, scale)?;
                part.cause.object = (*on).into();
                part.cause.what = format!("optimistic spin, CPU in {name}");
                Some(part)
            } else {
                profile_part(p, f, CauseKind::Function, scale)
            }
        })
        .collect()
}

/// The kernel's spinlock and rwlock slow paths: the lock trace's contention events time their
/// spinning (a profile function of these names would count it twice).
fn lock_trace_measures(name: &str) -> bool {
    name.contains("spin_lock_slowpath")
        || name.contains("read_lock_slowpath")
        || name.contains("write_lock_slowpath")
}

/// Where a task spins on CPU waiting for a sleeping lock's owner before it sleeps (rwsem and
/// mutex optimistic spinning): waiting, though not blocked, and not seen by the lock trace,
/// whose contention events begin only when the spinning gives up (a writer's handoff spin
/// after that is inside the lock's wait too, which counts only when no off-CPU trace splits
/// blocked time). Seen in `create_unlink -p shared=true` (`rwsem_spin_on_owner` on the
/// directory's `i_rwsem`); the figures: docs/notes/explain.md.
/// (function, what it spins on).
const OPTIMISTIC_SPIN: &[(&str, &str)] = &[
    ("rwsem_spin_on_owner", "an rwsem's owner"),
    ("rwsem_optimistic_spin", "an rwsem's owner"),
    ("mutex_spin_on_owner", "a mutex's owner"),
    ("mutex_optimistic_spin", "a mutex's owner"),
    ("rt_mutex_spin_on_owner", "an rt-mutex's owner"),
    ("osq_lock", "the spinners' queue of an rwsem or mutex"),
];

/// The share of a run's sleeping waits on one kind of lock (rwsem, mutex) that one named lock
/// must hold for the optimistic spinning on that kind to be named after it.
pub const SPUN_LOCK_SHARE: f64 = 0.5;

/// Names what the optimistic spinning of a run spun on, from its lock trace: the spinning is
/// not traced (see [`OPTIMISTIC_SPIN`]), but the waits that slept on the same kind of lock
/// were, and where one named lock (the waiter's `mmap_lock`, a static lock's symbol) holds at
/// least [`SPUN_LOCK_SHARE`] of their time over the whole run, the spinning is said to be on
/// it (`mmap_lock's owner`), in every point alike, with the share as evidence. An inference,
/// said as one: a run whose spinning and sleeping are on different locks of one kind keeps
/// the kind's generic name unless one lock holds most of the sleeping.
/// `parts` are each point's parts.
pub(crate) fn name_spun_locks(parts: &mut [&mut Vec<Part>], data: &model::record::RunData) {
    for (generic, kind) in [("an rwsem's owner", "rwsem"), ("a mutex's owner", "mutex")] {
        let mut by_lock: BTreeMap<&str, u64> = BTreeMap::new();
        let mut all = 0u64;
        let waits = kernel_lock_waits(data)
            .filter(|c| c.kind == kind || c.kind.starts_with(&format!("{kind}:")));
        for c in waits {
            all += c.wait_total.0;
            let per_process = c.lock.starts_with("0x") || c.lock.starts_with("static 0x");
            if !per_process {
                *by_lock.entry(c.lock.as_str()).or_default() += c.wait_total.0;
            }
        }
        let Some((name, ns)) = by_lock.into_iter().max_by_key(|(_, ns)| *ns) else {
            continue;
        };
        let share = ns as f64 / all as f64;
        if share < SPUN_LOCK_SHARE {
            continue;
        }
        let evidence = format!(
            "named by the lock trace: {:.0}% of this run's {kind} waits that slept were on {name} \
             (the spinning itself is not traced)",
            share * 100.0
        );
        for part in parts.iter_mut().flat_map(|p| p.iter_mut()) {
            if part.cause.kind == CauseKind::KernelSpin && part.cause.object == generic {
                part.cause.object = format!("{name}'s owner");
                part.cause.evidence.insert(0, evidence.clone());
            }
        }
    }
}

/// Who held the CPUs while a point's traced threads waited for one, pooled over its trials by
/// name (a command's processes have new ids in every trial), most first.
pub(crate) fn runq_holders(trials: &[(u32, &TrialMeasurement)]) -> Vec<EndedBy> {
    let mut by: Vec<EndedBy> = Vec::new();
    let holders = trials
        .iter()
        .filter_map(|(_, m)| m.offcpu.as_ref())
        .flat_map(|r| &r.runq_holders);
    for h in holders {
        let name = if h.pid == 0 {
            "an idle CPU (waking up)".to_string()
        } else if h.traced {
            format!("the traced threads ({})", h.comm)
        } else if h.server {
            format!("the server ({})", h.comm)
        } else if h.kernel_thread {
            format!("kernel thread {}", h.comm)
        } else {
            h.comm.clone()
        };
        match by.iter_mut().find(|e| e.by == name) {
            Some(e) => e.ns += h.ns.0 as f64,
            None => by.push(EndedBy {
                by: name,
                ns: h.ns.0 as f64,
            }),
        }
    }
    by.sort_by(|a, b| b.ns.total_cmp(&a.ns).then_with(|| a.by.cmp(&b.by)));
    by
}

/// An accounting part as a cause of its own (`user CPU`, `system CPU`, `run-queue wait`,
/// `blocked`), with its per-trial values.
pub(crate) fn whole_part(kind: CauseKind, what: &str, per_trial: Vec<f64>, pooled: f64) -> Part {
    Part {
        cause: Cause {
            kind,
            what: what.into(),
            object: String::new(),
            caller: String::new(),
            source: "accounting",
            evidence: Vec::new(),
            ended_by: Vec::new(),
            under: None,
            call_sites: Vec::new(),
            held_by: Vec::new(),
            via: None,
        },
        ns_per_op: pooled,
        per_trial,
    }
}
