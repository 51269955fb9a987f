//! `explain`: why a run stops scaling, as one accounted answer.
//!
//! At N tasks over a window W the tasks own N·W of time; per op that is `ns/op/task`. Per N it
//! is split into parts that add up exactly ([`accounting`]): user CPU, system CPU, run-queue
//! wait and off-CPU (the rest). Those are split further by the evidence the run carries
//! ([`cause`]): blocked time by off-CPU site (`--offcpu`) or lock wait (`--locks`), CPU by
//! function (`--profile`) and kernel spinning (`--locks`). The growth from the smallest to the
//! largest N is then attributed cause by cause ([`attribution`]), naming only causes beyond
//! trial-to-trial noise ([`noise`]: the rule is stated there and in [`NOISE_RULE`]), with the
//! rest shown as unexplained; with four or more N the USL's σ and κ are read beside the causes
//! ([`usl_reading`]).
//!
//! Trials: the accounting uses every successful trial of a point; the profile, lock and
//! off-CPU evidence comes from the trials that carry it (the first K of each point, as the
//! runner records them), listed per point.

pub mod accounting;
pub mod attribution;
pub mod cause;
pub mod noise;
mod point;
pub mod usl_reading;

#[cfg(test)]
mod tests;

use serde::Serialize;

pub use self::accounting::Accounting;
pub use self::attribution::{CauseGrowth, GrowthAccount};
pub use self::cause::{CallSite, Cause, CauseKind, EndedBy, Mechanism, Part};
pub use self::noise::{MATERIAL_SHARE, NOISE_RULE, NoiseRule, NoiseVerdict};
pub use self::point::{
    BLOCKING_CHANGE_NOTABLE, BlockingChange, ChainSample, PointExplain, TRACE_COST_NOTABLE,
    TraceCost,
};
pub use self::usl_reading::UslReading;

use crate::profile::PointProfile;
use crate::summary::{ScalesTo, summarize};
use model::record::{RunData, TrialMeasurement};

/// Evidence a run lacks, and the command that gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// What is missing and what it would have split.
    pub what: String,
    /// How to get it.
    pub fix: String,
}

/// The whole answer for one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The run's id.
    pub run_id: i64,
    /// The run's one-line description.
    pub description: String,
    /// What one op is.
    pub op_unit: String,
    /// What the costs are per: `op`, or for a command reporting a rate (`--metric`) one unit
    /// of it (`MB` for MB/sec): the work of a trial is then that rate times its window.
    pub per: String,
    /// How far the run scales, when N = 1 was measured.
    pub scales_to: Option<ScalesTo>,
    /// One per N, smallest first.
    pub points: Vec<PointExplain>,
    /// The growth from the smallest to the largest N (`None` with one N).
    pub growth: Option<GrowthAccount>,
    /// σ against κ, with four or more N.
    pub usl: Option<UslReading>,
    /// Evidence missing, each with its fix.
    pub missing: Vec<Missing>,
    /// How a cause is decided to be beyond noise.
    pub noise_rule: &'static str,
}

fn point(
    data: &RunData,
    n: u32,
    profile: Option<&PointProfile>,
    lock_names: &cause::RunLockNames,
) -> Option<PointExplain> {
    let trials = accounting::trials_at(data, n);
    let per_trial: Vec<accounting::TrialParts> = trials
        .iter()
        .filter_map(|(i, m)| accounting::trial_parts(n, *i, m))
        .collect();
    let acc = accounting::account(&per_trial)?;
    let mut parts = Vec::new();
    let (mut offcpu_source, mut offcpu_trials, mut traced, mut lock_trials) =
        (None, Vec::new(), None, Vec::new());
    let mut traced_at_median: Option<f64> = None;
    match cause::offcpu_parts(&trials, lock_names) {
        Some((source, idx, mut p, covered)) => {
            offcpu_source = Some(source);
            offcpu_trials = idx;
            traced = Some(covered);
            // The traces are pooled over their trials, the accounting is the median trial's:
            // like the profile's functions, each site is its share of the traced trials'
            // blocked time applied to the median (see `median_scale`).
            let scale = median_scale(acc.offcpu_ns, pooled_residual(n, &trials, Some(source)));
            for part in &mut p {
                part.ns_per_op *= scale;
            }
            // What the trace explains of the median's off-CPU time: its blocked time and the
            // steal it measured beside it.
            traced_at_median =
                Some((covered + pooled_stolen(&trials, Some(source)).unwrap_or(0.0)) * scale);
            parts.extend(p);
        }
        None => parts.push(cause::whole_part(
            CauseKind::Blocked,
            "blocked (cause not traced)",
            per_trial.iter().map(|t| t.offcpu()).collect(),
            acc.offcpu_ns,
        )),
    }
    if acc.runq_measured {
        let mut part = cause::whole_part(
            CauseKind::RunQueue,
            "waiting for a CPU (run queue)",
            per_trial.iter().filter_map(|t| t.runq).collect(),
            acc.runq_ns,
        );
        part.cause.held_by = cause::runq_holders(&trials);
        parts.push(part);
    }
    let spin = cause::spin_parts(&trials);
    if spin.is_some() {
        lock_trials = trials
            .iter()
            .filter(|(_, m)| m.locks.is_some())
            .map(|(i, _)| *i)
            .collect();
    }
    let spin_ns: f64 = spin.iter().flatten().map(|p| p.ns_per_op).sum();
    // Any event splits CPU by its shares (cycles on a machine with a PMU); only cpu-clock's
    // period is time, comparable with the accounting.
    let profile = profile.filter(|p| p.ops > 0.0 && p.period > 0);
    let cpu = acc.user_ns + acc.system_ns;
    let (mut profiled, mut profiled_trials, mut split_cpu, mut profile_files) =
        (None, None, None, Vec::new());
    let mut with_partners = None;
    let mut measuring_pct = None;
    // The in-kernel tracers' own programs, timed in the kernel: CPU of the tasks' that no
    // profile function holds, less what a profile sampled inside them (those samples are among
    // its measuring functions).
    let programs = pooled_programs(&trials).and_then(|(ns, per_trial)| {
        let seen = profile.map_or(0.0, cause::programs_share) * cpu;
        let unseen = ns - seen;
        // Seen whole, rounding aside: nothing left.
        (unseen > 1e-9 * ns).then(|| {
            let part = unseen / ns;
            let per_trial = per_trial.into_iter().map(|(i, v)| (i, v * part));
            (unseen, per_trial.collect::<Vec<_>>())
        })
    });
    let programs_ns = programs.as_ref().map_or(0.0, |(ns, _)| *ns);
    let programs_part = || {
        programs
            .as_ref()
            .filter(|(ns, _)| *ns > 0.0)
            .map(|(ns, per_trial)| cause::programs_part(*ns, per_trial.clone()))
    };
    match profile {
        Some(p) => {
            let own = p.period as f64 / p.ops;
            profiled_trials = pooled_cpu(&trials, |m| m.profile.is_some());
            // Only a cpu-clock profile's period is time, comparable with CPU time.
            with_partners = pooled_with_partners(&trials)
                .filter(|_| p.unit == "ns")
                .map(|cpu| ((p.period + p.partner_period) as f64 / p.ops, cpu));
            let measuring = cause::measuring_cost(p);
            measuring_pct = (own > 0.0).then(|| measuring / own * 100.0);
            let carried = carried_measuring(measuring, profiled_trials, cpu);
            let workload = own - measuring;
            // The functions share out the CPU the measuring left: the programs' time is in
            // the profile's samples somewhere (where interrupts came back on) or lost, so it
            // comes off the whole, not off a function.
            let scale = if workload > 0.0 {
                (cpu - carried - programs_ns).max(0.0) / workload
            } else {
                0.0
            };
            let mut f = cause::function_parts(p, spin.is_some(), scale);
            if measuring > 0.0 {
                f.extend(cause::measuring_parts(p, carried / measuring));
            }
            f.extend(programs_part());
            split_cpu = Some(f.iter().map(|p| p.ns_per_op).sum::<f64>() + spin_ns);
            profiled = (p.unit == "ns").then_some(own);
            profile_files = p.files.clone();
            parts.extend(f);
        }
        None => {
            parts.push(cause::whole_part(
                CauseKind::UserCpu,
                "user CPU (not split: no profile)",
                per_trial.iter().map(|t| t.user).collect(),
                acc.user_ns,
            ));
            // The programs' runs are system CPU the kernel charged to the tasks.
            let programs_of = |index: u32| {
                programs
                    .as_ref()
                    .and_then(|(_, p)| p.iter().find(|(i, _)| *i == index))
                    .map_or(0.0, |(_, ns)| *ns)
            };
            parts.push(cause::whole_part(
                CauseKind::SystemCpu,
                "system CPU (not split: no profile)",
                per_trial
                    .iter()
                    .map(|t| t.sys - programs_of(t.index))
                    .collect(),
                acc.system_ns - spin_ns - programs_ns,
            ));
            parts.extend(programs_part());
        }
    }
    parts.extend(spin.into_iter().flatten());
    if let Some(p) = profile {
        let calls = syscalls_of(p);
        for part in &mut parts {
            if part.cause.kind == CauseKind::Function && cause::is_kernel_function(&part.cause) {
                part.cause.under = mostly_under(calls.get(&part.cause.what));
            }
        }
    }
    // The blocked time the trace should have seen: the residual less the steal it measured.
    let stolen = traced.and_then(|_| pooled_stolen(&trials, offcpu_source));
    let residual = traced
        .and_then(|_| pooled_residual(n, &trials, offcpu_source))
        .map(|r| r - stolen.unwrap_or(0.0));
    let threads = trials
        .iter()
        .filter_map(|(_, m)| m.offcpu.as_ref())
        .map(|o| o.threads.clone())
        .find(|t| !t.is_empty())
        .unwrap_or_default();
    let servers = servers_cpu(&trials);
    // The servers' CPU, followed from the workers' waits, is shown by function where they
    // were profiled beside the command.
    if let Some(functions) = profile
        .and_then(|p| p.servers.as_deref())
        .map(server_functions)
    {
        for part in parts
            .iter_mut()
            .filter(|p| p.cause.via.is_some() && p.cause.what == model::record::SERVER_CPU)
        {
            part.cause.evidence.extend(functions.iter().cloned());
        }
    }
    Some(PointExplain {
        n,
        servers_cpu_ns: servers.map(|s| s.0),
        servers_background_cpu_ns: servers.map(|s| s.1),
        threads,
        trace_cost: trace_cost(&per_trial, &trials, n),
        offcpu_chains: offcpu_chains(&trials),
        lock_chains: lock_chains(&trials),
        offcpu_unexplained_ns: traced_at_median.map(|t| acc.offcpu_ns - t),
        offcpu_residual_ns: residual,
        offcpu_stolen_ns: stolen,
        offcpu_unwoken_ns: traced.and_then(|_| pooled_unwoken(&trials, offcpu_source)),
        offcpu_silent_idle_cpus: if traced.is_some() && offcpu_source == Some("offcpu") {
            silent_idle_cpus(&trials)
        } else {
            Vec::new()
        },
        cpu_unexplained_ns: split_cpu.map(|s| cpu - s),
        cpu_profiled_trials_ns: profiled_trials,
        cpu_profiled_with_partners_ns: with_partners.map(|(p, _)| p),
        cpu_with_partners_trials_ns: with_partners.map(|(_, c)| c),
        accounting: acc,
        parts,
        offcpu_source,
        offcpu_trials,
        offcpu_traced_ns: traced,
        lock_trials,
        profile_files,
        profile_trial_values: profile.map_or(0, cause::profile_trials),
        cpu_profiled_ns: profiled,
        measuring_pct,
        programs_pct: programs
            .as_ref()
            .filter(|_| cpu > 0.0)
            .map(|(ns, _)| ns / cpu * 100.0),
        trial_cpu: per_trial.iter().map(|t| (t.user, t.sys)).collect(),
        trial_total: per_trial.iter().map(|t| t.total).collect(),
        syscalls: profile.map(syscalls_of).unwrap_or_default(),
    })
}

/// Functions the servers' profile shows under their CPU as evidence, at most.
const SERVER_FUNCTIONS: usize = 6;

/// The servers' profile as evidence lines: its top functions by self time, each with its share
/// of their samples and its cost per op.
fn server_functions(servers: &PointProfile) -> Vec<String> {
    let mut lines = vec![format!(
        "the servers' profile ({} samples): their CPU by function",
        servers.samples
    )];
    lines.extend(
        servers
            .functions
            .iter()
            .take(SERVER_FUNCTIONS)
            .map(|f| match f.cost_per_op {
                Some(c) => format!(
                    "{:.0}% {} ({}), {c:.0} {} per op",
                    f.self_share, f.name, f.dso, servers.unit
                ),
                None => format!("{:.0}% {} ({})", f.self_share, f.name, f.dso),
            }),
    );
    lines
}

/// The servers' CPU per op (`--server`/`--attach` threads, and what they started), and the
/// part of it in threads that ended no wait of the command's threads, pooled over the trials
/// whose off-CPU trace followed them; `None` where none did.
fn servers_cpu(trials: &[(u32, &TrialMeasurement)]) -> Option<(f64, f64)> {
    use model::thread_account::ThreadRole;
    let (mut cpu, mut serving, mut work) = (0u64, 0u64, 0.0);
    for (_, m) in trials {
        let Some(o) = &m.offcpu else { continue };
        let servers: Vec<_> = o
            .threads
            .iter()
            .filter(|g| g.role == ThreadRole::Server)
            .collect();
        if servers.is_empty() {
            continue;
        }
        cpu += servers.iter().map(|g| g.on_cpu.0).sum::<u64>();
        serving += servers.iter().map(|g| g.cpu_serving.0).sum::<u64>();
        work += m.work();
    }
    (work > 0.0).then(|| (cpu as f64 / work, cpu.saturating_sub(serving) as f64 / work))
}

/// The off-CPU chain sample summed over the trials whose in-kernel tracer sampled chains.
fn offcpu_chains(trials: &[(u32, &TrialMeasurement)]) -> Option<ChainSample> {
    summed_sample(trials.iter().filter_map(|(_, m)| {
        let s = m.offcpu.as_ref()?.sampling?;
        Some((s.blocking_switches, s.sampled, s.lost))
    }))
}

/// The lock-wait chain sample summed over the trials whose in-kernel tracer sampled chains.
fn lock_chains(trials: &[(u32, &TrialMeasurement)]) -> Option<ChainSample> {
    summed_sample(trials.iter().filter_map(|(_, m)| {
        let s = m.locks.as_ref()?.sampling?;
        Some((s.waits, s.sampled, s.lost))
    }))
}

/// Trials' (episodes, with a chain, lost) summed; `None` without any.
fn summed_sample(counts: impl Iterator<Item = (u64, u64, u64)>) -> Option<ChainSample> {
    counts.fold(None, |acc, (episodes, with_chain, lost)| {
        let mut c = acc.unwrap_or_default();
        c.add(episodes, with_chain, lost);
        Some(c)
    })
}

/// The first trial at `n` that carries an untraced reference, against it.
fn trace_cost(
    per_trial: &[accounting::TrialParts],
    trials: &[(u32, &model::record::TrialMeasurement)],
    n: u32,
) -> Option<TraceCost> {
    trials.iter().find_map(|(index, m)| {
        let untraced = m.harness?.untraced?;
        let untraced_ns = untraced.ns_per_op_task(n)?;
        let traced = per_trial.iter().find(|t| t.index == *index)?;
        let traced_ns = traced.total;
        Some(TraceCost {
            trial: *index,
            traced_ns,
            untraced_ns,
            slowdown: traced_ns / untraced_ns,
            profiled: m.profile.is_some(),
            profiled_every_cpu: m.profile.as_ref().is_some_and(|p| p.every_cpu),
            switches_per_task_second: untraced.switches_per_task_second(n),
            profile_frequency: m.profile.as_ref().map(|p| p.frequency),
            blocking: blocking_change(n, &untraced, (m, traced), trials),
        })
    })
}

/// The blocking per op of the untraced reference, of the traced trial after it and of every
/// trial of the point (`None` without the reference's usage or without ops).
fn blocking_change(
    n: u32,
    untraced: &model::record::UntracedReference,
    paired: (&TrialMeasurement, &accounting::TrialParts),
    trials: &[(u32, &TrialMeasurement)],
) -> Option<BlockingChange> {
    let usage = untraced.usage?;
    let untraced_ops = untraced.ops as f64;
    let per_kop = |m: &TrialMeasurement| {
        let ops = m.work();
        (ops > 0.0).then(|| m.usage.voluntary_switches as f64 * 1e3 / ops)
    };
    let (traced_m, traced) = paired;
    let traced_per_kop = per_kop(traced_m)?;
    if untraced_ops <= 0.0 {
        return None;
    }
    let range = trials
        .iter()
        .filter_map(|(_, m)| per_kop(m))
        .fold((traced_per_kop, traced_per_kop), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let untraced_offcpu = usage.run_delay.map(|delay| {
        let life = f64::from(n) * untraced.window.0 as f64;
        (life - usage.cpu().0 as f64 - delay.0 as f64) / untraced_ops
    });
    Some(BlockingChange {
        untraced_switches: usage.voluntary_switches,
        untraced_per_kop: usage.voluntary_switches as f64 * 1e3 / untraced_ops,
        traced_switches: traced_m.usage.voluntary_switches,
        traced_per_kop,
        traced_per_kop_range: range,
        untraced_offcpu_ns: untraced_offcpu,
        traced_offcpu_ns: traced.runq.map(|_| traced.offcpu()),
    })
}

/// Per kernel leaf function of `p`'s call chains, the system calls (`__x64_sys_NAME`,
/// `__do_sys_NAME`, `__se_sys_NAME` frames) its samples were under, each as `NAME() from
/// CALLER` (the nearest user frame that is not a wrapper), with their counts.
fn syscalls_of(p: &PointProfile) -> std::collections::HashMap<String, Vec<(Option<String>, u64)>> {
    let mut out: std::collections::HashMap<String, Vec<(Option<String>, u64)>> =
        std::collections::HashMap::new();
    for (stack, count) in &p.folded {
        let frames: Vec<&str> = stack.split(';').collect();
        let Some(leaf) = frames.last().and_then(|f| f.strip_suffix("_[k]")) else {
            continue;
        };
        let syscall = frames.iter().find_map(|f| {
            let f = f.strip_suffix("_[k]")?;
            SYSCALL_ENTRIES
                .iter()
                .find_map(|prefix| f.strip_prefix(prefix))
        });
        // The caller: the nearest user frame above the kernel's that is not a wrapper.
        let first_kernel = frames.iter().position(|f| f.ends_with("_[k]"));
        let caller = first_kernel.and_then(|k| {
            frames[..k]
                .iter()
                .rev()
                .find(|f| !is_syscall_wrapper(f))
                .copied()
        });
        let syscall = syscall.map(|call| match caller {
            Some(c) => format!("{call}() from {c}"),
            None => format!("{call}()"),
        });
        let calls = out.entry(leaf.to_owned()).or_default();
        match calls.iter_mut().find(|(s, _)| *s == syscall) {
            Some((_, c)) => *c += count,
            None => calls.push((syscall, *count)),
        }
    }
    out
}

/// The system call (with its caller) most of a kernel function's samples ran under, when it
/// holds more than half of them: `sched_yield() from sysbench+0x1a3f1, 63% of its samples`.
fn mostly_under(calls: Option<&Vec<(Option<String>, u64)>>) -> Option<String> {
    let calls = calls?;
    let total: u64 = calls.iter().map(|(_, c)| c).sum();
    let (label, count) = calls.iter().max_by_key(|(_, c)| *c)?;
    let label = label.as_ref()?;
    (2 * count > total).then(|| {
        format!(
            "{label}, {:.0}% of its samples",
            100.0 * *count as f64 / total as f64
        )
    })
}

/// The prefixes of a system call's entry function in the kernel, before its name.
const SYSCALL_ENTRIES: &[&str] = &[
    "__x64_sys_",
    "__do_sys_",
    "__se_sys_",
    "__ia32_sys_",
    "__arm64_sys_",
];

/// A user frame between a system call and the code that made it: the C library's and Rust's
/// wrappers (by name: a call chain's folded frames carry no file), futex helpers, unnamed code.
fn is_syscall_wrapper(name: &str) -> bool {
    // Unnamed code is a caller when it is a program's own (a stripped binary's), not the C
    // library's or the loader's.
    let unnamed_library = name.strip_prefix("[unknown] in ").is_none_or(|dso| {
        dso.starts_with("libc")
            || dso.starts_with("libpthread")
            || dso.starts_with("ld-")
            || dso.starts_with('[')
    });
    name.starts_with("__")
        || name.starts_with("syscall")
        || (name.starts_with('[') && unnamed_library)
        || name.contains("::futex::")
        || [
            "std::",
            "<std::",
            "core::",
            "<core::",
            "rustix::",
            "<rustix::",
        ]
        .iter()
        .any(|p| name.starts_with(p))
}

/// How much of the profiled trials' cost of measuring (`measuring`, CPU per op in the kernel's
/// perf and tracing functions) the median trial carries too. The profiled trials' CPU per op
/// above the median's (`profiled_trials` against `median`) is taken as the profiler's own:
/// what is left of `measuring` every trial carries: the tracers' of a traced run, and the
/// profiler's too where every trial was profiled (then the excess is about 0). Both cases
/// have been seen (docs/notes/explain.md).
fn carried_measuring(measuring: f64, profiled_trials: Option<f64>, median: f64) -> f64 {
    let excess = profiled_trials.map_or(0.0, |p| (p - median).max(0.0));
    (measuring - excess).clamp(0.0, measuring.max(0.0))
}

/// User + system CPU per op, pooled over the trials `which` selects; `None` when none is.
fn pooled_cpu(
    trials: &[(u32, &TrialMeasurement)],
    which: impl Fn(&TrialMeasurement) -> bool,
) -> Option<f64> {
    let (mut cpu, mut ops) = (0u64, 0f64);
    for (_, m) in trials.iter().filter(|(_, m)| which(m)) {
        cpu += m.usage.user.0 + m.usage.sys.0;
        ops += m.work();
    }
    (ops > 0.0).then(|| cpu as f64 / ops)
}

/// The in-kernel tracers' own programs' time per op (their runs in the tasks' context, which
/// the kernel charges to the tasks as system CPU: `programs_time` of the off-CPU and lock
/// traces), pooled over the trials that timed it, with each such trial's `(index, per op)`;
/// `None` where none did (the perf tracer, or an older record).
fn pooled_programs(trials: &[(u32, &TrialMeasurement)]) -> Option<(f64, Vec<(u32, f64)>)> {
    let (mut ns, mut ops, mut per_trial) = (0u64, 0f64, Vec::new());
    for (index, m) in trials {
        let offcpu = m.offcpu.as_ref().and_then(|r| r.sampling?.programs_time);
        let locks = m.locks.as_ref().and_then(|r| r.sampling?.programs_time);
        if offcpu.is_none() && locks.is_none() {
            continue;
        }
        let trial = offcpu.map_or(0, |t| t.0) + locks.map_or(0, |t| t.0);
        let work = m.work();
        if work > 0.0 {
            per_trial.push((*index, trial as f64 / work));
        }
        ns += trial;
        ops += work;
    }
    (ops > 0.0).then(|| (ns as f64 / ops, per_trial))
}

/// The profiled trials' user + system CPU plus their partners' CPU per op, pooled; `None`
/// unless every profiled trial read its partners' CPU.
fn pooled_with_partners(trials: &[(u32, &TrialMeasurement)]) -> Option<f64> {
    let profiled = || {
        trials
            .iter()
            .filter_map(|(_, m)| Some((m, m.profile.as_ref()?)))
    };
    let partners: u64 = profiled()
        .map(|(_, p)| p.partner_on_cpu.map(|c| c.0))
        .sum::<Option<u64>>()?;
    let ops: f64 = profiled().map(|(m, _)| m.work()).sum();
    let own = pooled_cpu(trials, |m| m.profile.is_some())?;
    Some(own + partners as f64 / ops)
}

/// The residual N·W − user − system − run-queue wait per op, pooled over the trials whose
/// trace split blocked time (`source`: `offcpu` or `locks`).
fn pooled_residual(
    n: u32,
    trials: &[(u32, &TrialMeasurement)],
    source: Option<&'static str>,
) -> Option<f64> {
    let (mut rest, mut ops) = (0f64, 0f64);
    for (_, m) in trials.iter().filter(|(_, m)| match source {
        Some("offcpu") => m.offcpu.is_some(),
        Some(_) => m.locks.is_some(),
        None => false,
    }) {
        let run_delay = accounting::run_delay(m).unwrap_or(0);
        rest += accounting::task_time(n, m) - (m.usage.user.0 + m.usage.sys.0 + run_delay) as f64;
        ops += m.work();
    }
    (ops > 0.0).then(|| rest / ops)
}

/// The steal the in-kernel off-CPU tracer measured per op, pooled over the traced trials;
/// `None` where it measured none (the perf tracer, lock traces, older records).
fn pooled_stolen(trials: &[(u32, &TrialMeasurement)], source: Option<&'static str>) -> Option<f64> {
    if source != Some("offcpu") {
        return None;
    }
    let (mut stolen, mut ops, mut measured) = (0u64, 0f64, false);
    for (_, m) in trials {
        if let Some(r) = &m.offcpu {
            measured |= r.stolen.is_some();
            stolen += r.stolen.map_or(0, |s| s.0);
            ops += m.work();
        }
    }
    (measured && ops > 0.0).then(|| stolen as f64 / ops)
}

/// The factor that carries a trace's per-op figures, pooled over the traced trials, to the
/// accounting's median trial: its blocked time per op over the traced trials' pooled blocked
/// time per op (`residual`). Pooling weighs a slow trial by its length while the median does
/// not, so on a skewed point unscaled sites would leave part of the blocked time as "not
/// traced" although the trace saw it (an example: docs/notes/explain.md). 1 where either is not
/// positive.
fn median_scale(median: f64, residual: Option<f64>) -> f64 {
    match residual {
        Some(r) if r > 0.0 && median > 0.0 => median / r,
        _ => 1.0,
    }
}

/// The off-CPU trace's time in episodes without a wake-up record per op, pooled over the
/// traced trials; `None` when there were none (or blocked time was split by locks).
fn pooled_unwoken(
    trials: &[(u32, &TrialMeasurement)],
    source: Option<&'static str>,
) -> Option<f64> {
    if source != Some("offcpu") {
        return None;
    }
    let (mut unwoken, mut ops) = (0u64, 0f64);
    for (_, m) in trials {
        if let Some(r) = &m.offcpu {
            unwoken += r.unwoken.map_or(0, |u| u.total.0);
            ops += m.work();
        }
    }
    (unwoken > 0 && ops > 0.0).then(|| unwoken as f64 / ops)
}

/// Every CPU any traced trial found silent while idle, in order.
fn silent_idle_cpus(trials: &[(u32, &TrialMeasurement)]) -> Vec<u32> {
    let mut cpus: Vec<u32> = trials
        .iter()
        .filter_map(|(_, m)| m.offcpu.as_ref())
        .flat_map(|r| r.silent_idle_cpus.iter().copied())
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

fn missing(data: &RunData, points: &[PointExplain], profiles: &[PointProfile]) -> Vec<Missing> {
    let ms: Vec<_> = data
        .trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .collect();
    let mut out = Vec::new();
    let mut add = |what: &str, fix: &str| {
        out.push(Missing {
            what: what.into(),
            fix: fix.into(),
        })
    };
    if !ms.iter().any(|m| m.profile.is_some()) {
        add(
            "no profile: user and system time are not split by function",
            "run with --profile",
        );
    } else if profiles.is_empty() {
        add(
            "the run's profiles could not be read: CPU time is not split by function",
            "see `scalelab profile RUN` for why",
        );
    }
    if !ms.iter().any(|m| m.locks.is_some()) {
        add(
            "no lock trace: lock waits and kernel spinning are not named",
            "run with --locks",
        );
    }
    if !ms.iter().any(|m| m.offcpu.is_some()) {
        add(
            "no off-CPU trace: blocked time other than lock waits is not split by call chain",
            "run with --offcpu",
        );
    }
    if points.iter().any(|p| !p.accounting.runq_measured) {
        if data.meta.workload == model::record::COMMAND_WORKLOAD {
            add(
                "run-queue wait not measured: it is counted inside off-CPU, and every thread of the command is task time (the shell wrapper's and a main thread's waiting for their workers too)",
                "run with --offcpu (or --explain): the command's threads are traced, each accounted, supervisors apart",
            );
        } else {
            add(
                "run-queue wait not measured: it is counted inside off-CPU",
                "a kernel with CONFIG_SCHED_INFO",
            );
        }
    }
    if points.len() < 2 {
        add(
            "one N: there is no growth to explain",
            "run with --tasks 1,2 (or more)",
        );
    } else if points.len() < stats::USL_MIN_DISTINCT_N {
        add(
            "fewer than 4 N: no USL reading (σ against κ)",
            "run with --tasks 1,2,3,4 (or more)",
        );
    }
    if points.iter().any(|p| p.accounting.trials.len() < 2) {
        add(
            "one trial per N: the noise is not measured, causes are named unchecked",
            "run with --runs 3 (or more)",
        );
    }
    out
}

/// Explains `data` with its profiles as [`crate::profile::load_run`] reads them
/// (empty when the run has none or they cannot be read); `None` without a measured trial.
pub fn explain(data: &RunData, profiles: &[PointProfile]) -> Option<Explanation> {
    let mut ns = data.meta.points.clone();
    ns.sort_unstable();
    ns.dedup();
    let lock_names = cause::run_lock_names(data);
    let mut points: Vec<PointExplain> = ns
        .iter()
        .filter_map(|&n| point(data, n, profiles.iter().find(|p| p.n == n), &lock_names))
        .collect();
    if points.is_empty() {
        return None;
    }
    let mut parts: Vec<&mut Vec<cause::Part>> = points.iter_mut().map(|p| &mut p.parts).collect();
    cause::name_spun_locks(&mut parts, data);
    let growth = match (points.first(), points.last()) {
        (Some(a), Some(b)) if a.n != b.n => Some(attribution::attribute(a, b)),
        _ => None,
    };
    // Waiting for a CPU is neither σ nor κ: the reading compares the top cause after it.
    let top = growth.as_ref().and_then(|g| {
        g.named
            .iter()
            .filter(|c| c.delta_ns > 0.0)
            .map(|c| c.cause.kind.mechanism())
            .find(|m| !matches!(m, Mechanism::Oversubscription | Mechanism::Observation))
    });
    Some(Explanation {
        run_id: data.meta.id,
        description: data.meta.description(),
        op_unit: data.meta.op_unit.clone(),
        per: match data.meta.primary_metric() {
            Some(m) if m.direction == model::record::Direction::Higher => m.unit_of_work(),
            _ => "op".into(),
        },
        scales_to: summarize(data).scales_to,
        usl: usl_reading::read(data, top),
        missing: missing(data, &points, profiles),
        points,
        growth,
        noise_rule: NOISE_RULE,
    })
}
