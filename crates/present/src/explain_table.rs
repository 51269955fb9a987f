//! Terminal text for `scalelab explain`: the ranked answer first, then the accounting per N,
//! the growth by cause, the evidence behind the top causes, the USL reading, what evidence is
//! missing (with the command that gets it), and how noise was decided. Formats what
//! `analysis::explain` derived; computes nothing but shares and labels.

use std::io::{self, Write};

use analysis::explain::{
    BlockingChange, Cause, CauseGrowth, CauseKind, ChainSample, Explanation, GrowthAccount,
    Mechanism, NoiseRule, PointExplain, TRACE_COST_NOTABLE,
};
use model::safe_text::printable;

use crate::explain_threads;
use crate::grid::Grid;
use crate::number_format::duration;
use crate::printer::Printer;

/// Causes in the answer line and in the evidence.
const TOP: usize = 3;

/// A cause in words: what, on what, from where.
pub fn cause_label(c: &Cause) -> String {
    let from = |s: &str| match (s.is_empty(), c.call_sites.len()) {
        (true, _) => String::new(),
        (false, 0 | 1) => format!(" from {s}"),
        (false, 2) => format!(" from {s} and 1 other caller"),
        (false, n) => format!(" from {s} and {} other callers", n - 1),
    };
    let on = |o: &str| {
        if o.is_empty() {
            String::new()
        } else {
            format!(" on {o}")
        }
    };
    let text = match c.kind {
        CauseKind::UserLock => format!("{} wait{}{}", c.what, on(&c.object), from(&c.caller)),
        CauseKind::KernelLock => format!("{}{}{}", c.what, on(&c.object), from(&c.caller)),
        // The off-CPU tracer's time of threads none of whose waits was sampled: no chain, no
        // caller.
        CauseKind::Blocking if c.what == "unsampled" => format!("blocked in {}", c.object),
        // A server's time on or waiting for a CPU, that workers waited for.
        CauseKind::Blocking if c.what == model::record::SERVER_CPU => "its CPU".to_string(),
        CauseKind::Blocking if c.what == model::record::SERVER_RUNQ => {
            "its wait for a CPU".to_string()
        }
        CauseKind::Blocking => format!("blocked in {} ({}){}", c.object, c.what, from(&c.caller)),
        CauseKind::KernelSpin => {
            format!("spinning{} ({}){}", on(&c.object), c.what, from(&c.caller))
        }
        CauseKind::Function => format!("CPU in {} ({})", c.what, c.object),
        CauseKind::Measurement => format!("measuring: CPU in {} ({})", c.what, c.object),
        CauseKind::RunQueue => match held_by(c) {
            Some(held) => format!("{}, held by {held}", c.what),
            None => c.what.clone(),
        },
        _ => c.what.clone(),
    };
    let text = match c.mostly_ended_by() {
        Some((by, pct)) => format!("{text}, ended by {by} ({pct:.0}%)"),
        None => text,
    };
    let text = match &c.under {
        Some(under) => format!("{text} under {under}"),
        None => text,
    };
    // A wait followed into a server: whose work it is first.
    let text = match &c.via {
        Some(via) if via.kernel_thread => format!("the kernel thread {}: {text}", via.server),
        Some(via) => format!("the server ({}): {text}", via.server),
        None => text,
    };
    printable(&text).into_owned()
}

/// Who held the CPUs a wait for one waited for, the largest three of 1% or more with their
/// shares ("sh 97%, an idle CPU (waking up) 2%"); `None` where not traced.
fn held_by(c: &Cause) -> Option<String> {
    let total: f64 = c.held_by.iter().map(|h| h.ns).sum();
    let shown: Vec<String> = c
        .held_by
        .iter()
        .filter(|h| total > 0.0 && h.ns / total >= 0.01)
        .take(3)
        .map(|h| format!("{} {:.0}%", h.by, h.ns / total * 100.0))
        .collect();
    (!shown.is_empty()).then(|| shown.join(", "))
}

/// A grouped cause's callers with their shares ("callers: flock_lock_inode_wait 61%, …"),
/// `None` for a cause of one caller.
pub fn call_sites_line(c: &Cause) -> Option<String> {
    let total: f64 = c.call_sites.iter().map(|s| s.ns).sum();
    (c.call_sites.len() > 1 && total > 0.0).then(|| {
        let sites: Vec<String> = c
            .call_sites
            .iter()
            .take(6)
            .map(|s| format!("{} {:.0}%", s.site, s.ns / total * 100.0))
            .collect();
        let more = c.call_sites.len().saturating_sub(6);
        format!(
            "callers: {}{}",
            sites.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        )
    })
}

/// "an op", or "1 MB" for a unit of a reported rate.
fn one(per: &str) -> String {
    if per == "op" {
        "an op".into()
    } else {
        format!("1 {}", printable(per))
    }
}

fn signed(ns: f64) -> String {
    if ns >= 0.0 {
        format!("+{}", duration(ns))
    } else {
        format!("-{}", duration(-ns))
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), |p| format!("{p:.0}%"))
}

/// A cause's share of the growth with its 95% interval: `43% ±9`.
pub fn share_with_interval(c: &CauseGrowth, total_delta: f64) -> String {
    match (c.share_pct, c.share_interval_pct(total_delta)) {
        (Some(p), Some(i)) => format!("{p:.0}% ±{i:.0}"),
        (p, _) => pct(p),
    }
}

/// `1,234 of 56,789 blocking switches (1 in 46)`, or every one of them.
fn chain_sample(c: &ChainSample, what: &str) -> String {
    let lost = if c.lost > 0 {
        format!(", {} more picked but lost (ring buffer full)", c.lost)
    } else {
        String::new()
    };
    if c.with_chain >= c.episodes {
        return format!("all {} {what}{lost}", c.episodes);
    }
    let one_in = c.episodes as f64 / c.with_chain.max(1) as f64;
    let digits = if one_in < 10.0 { 1 } else { 0 };
    format!(
        "{} of {} {what} (1 in {one_in:.digits$}){lost}",
        c.with_chain, c.episodes
    )
}

/// Which episodes' call chains named the causes, where the in-kernel tracers sampled them:
/// `None` where every episode was traced.
pub fn chain_note(e: &Explanation) -> Option<String> {
    let per_n = |what: &str, get: fn(&PointExplain) -> Option<ChainSample>| -> Vec<String> {
        e.points
            .iter()
            .filter_map(|p| get(p).map(|c| format!("N={} {}", p.n, chain_sample(&c, what))))
            .collect()
    };
    let mut parts = Vec::new();
    let offcpu = per_n("blocking switches", |p| p.offcpu_chains);
    if !offcpu.is_empty() {
        parts.push(format!("off-CPU {}", offcpu.join(", ")));
    }
    let locks = per_n("lock waits", |p| p.lock_chains);
    if !locks.is_empty() {
        parts.push(format!("locks {}", locks.join(", ")));
    }
    if parts.is_empty() {
        return None;
    }
    let every = e
        .points
        .iter()
        .flat_map(|p| [p.offcpu_chains, p.lock_chains])
        .flatten()
        .all(|c| c.with_chain >= c.episodes);
    Some(if every {
        format!(
            "call chains of every episode (--chain-every 1): {}",
            parts.join("; ")
        )
    } else {
        format!(
            "call chains of a sample: {} — every episode's time is summed, the chains share it out, so a share carries sampling error as well as the trials' noise; the ± on each share is its 95% interval from the trials' spread, both included",
            parts.join("; ")
        )
    })
}

/// The one-line answer: how far it scales, the cost per op at the two N, and the top causes'
/// shares of the growth, then the unexplained share.
pub fn answer(e: &Explanation) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &e.scales_to {
        parts.push(format!("scales to {s}"));
    }
    let Some(g) = &e.growth else {
        let p = &e.points[0];
        parts.push(format!(
            "{} costs {} at N={} (one N: no growth to explain)",
            one(&e.per),
            duration(p.accounting.ns_per_op_task),
            p.n
        ));
        return parts.join(" · ");
    };
    // A growth within the trials' own spread may be the machine's drift: say so beside it.
    let spread = if g.delta_ns > 0.0 && !g.noise.beyond && g.noise.rule != NoiseRule::Unmeasured {
        let cv = |n: u32| {
            e.points
                .iter()
                .find(|p| p.n == n)
                .and_then(|p| p.accounting.cv)
                .map_or_else(|| "—".into(), |cv| format!("{:.0}%", cv * 100.0))
        };
        format!(
            ", within the trials' spread: CV {} at N={}, {} at N={}",
            cv(g.from_n),
            g.from_n,
            cv(g.to_n),
            g.to_n
        )
    } else {
        String::new()
    };
    parts.push(format!(
        "{} costs {} of task time at N={} and {} at N={} ({}{spread})",
        one(&e.per),
        duration(g.from_ns),
        g.from_n,
        duration(g.to_ns),
        g.to_n,
        signed(g.delta_ns)
    ));
    // The servers' own CPU per op, which the task time leaves out, and the part of it in
    // threads that served no client (background work, in no cause).
    let servers = |n: u32| {
        e.points
            .iter()
            .find(|p| p.n == n)
            .and_then(|p| Some((p.servers_cpu_ns?, p.servers_background_cpu_ns)))
    };
    if let (Some((a, a_out)), Some((b, b_out))) = (servers(g.from_n), servers(g.to_n)) {
        let outside = match (a_out, b_out) {
            (Some(x), Some(y)) => format!(
                " ({} and {} of it background work: threads that served no client)",
                duration(x),
                duration(y)
            ),
            _ => String::new(),
        };
        parts.push(format!(
            "the servers' CPU besides: {} at N={} and {} at N={}{outside}",
            duration(a),
            g.from_n,
            duration(b),
            g.to_n
        ));
    }
    if g.delta_ns <= 0.0 {
        parts.push("the cost per op did not grow".into());
        return parts.join(" · ");
    }
    // The workload's causes first; what measuring it cost (the profiler's and tracers' own
    // kernel code, which grows where the traced events do) is said once, after them.
    let observing = |c: &&CauseGrowth| c.cause.kind.mechanism() == Mechanism::Observation;
    let growing: Vec<&CauseGrowth> = g.named.iter().filter(|c| c.delta_ns > 0.0).collect();
    let (measuring, workload): (Vec<&CauseGrowth>, Vec<&CauseGrowth>) =
        growing.into_iter().partition(observing);
    // A blocked cause at an N whose traced trial blocked far more often than its untraced
    // reference is said to be partly the measuring's making where it is read.
    let inflated = e
        .points
        .iter()
        .find(|p| p.n == g.to_n)
        .and_then(notable_blocking_change)
        .map(|b| match b.switches_ratio() {
            Some(r) => format!("blocked {r:.1}× as often per op as an untraced one"),
            None => "blocked where an untraced one did not".into(),
        });
    for (i, c) in workload.iter().take(TOP).enumerate() {
        let caveat = match &inflated {
            Some(how) if is_blocked_time(&c.cause) => {
                format!("; the traced run {how}: see `the measuring made the tasks block more`")
            }
            _ => String::new(),
        };
        parts.push(format!(
            "{}{} is {} ({}{caveat})",
            pct(c.share_pct),
            if i == 0 { " of that" } else { "" },
            cause_label(&c.cause),
            c.cause.source
        ));
    }
    if !measuring.is_empty() {
        let grew: f64 = measuring.iter().map(|c| c.delta_ns).sum();
        parts.push(format!(
            "{}{} is the measuring itself (`measuring: …`, the profiler's and traces' kernel code)",
            pct(Some(grew / g.delta_ns * 100.0)),
            if workload.is_empty() { " of that" } else { "" },
        ));
    }
    let shrinking: f64 = g
        .named
        .iter()
        .filter(|c| c.delta_ns < 0.0)
        .map(|c| c.delta_ns)
        .sum();
    if shrinking < 0.0 {
        parts.push(format!(
            "{} from causes that shrank",
            pct(Some(shrinking / g.delta_ns * 100.0))
        ));
    }
    parts.push(format!("{} unexplained", pct(g.unexplained_pct)));
    parts.join(" · ")
}

fn mechanism(m: Mechanism) -> &'static str {
    match m {
        Mechanism::Serialisation => "serialisation (σ: waiting, locks)",
        Mechanism::Coherency => "coherency (κ: CPU per op growing without waiting)",
        Mechanism::Oversubscription => "oversubscription (waiting for a CPU)",
        Mechanism::Observation => "observation (the profile's and traces' own cost)",
    }
}

/// A ratio of two measured per-op figures, `—` when the denominator is too small to judge
/// (under 5% of the point's ns/op/task: a workload that hardly blocks, whose residual is
/// within the rounding of the accounting's parts).
fn ratio(num: Option<f64>, den: Option<f64>, scale: f64) -> String {
    match (num, den) {
        (Some(a), Some(b)) if b > 0.05 * scale => format!("{:.3}", a / b),
        (Some(_), Some(_)) => "—".into(),
        _ => String::new(),
    }
}

/// The agreement table: per N, blocked time the trace saw against the same trials' residual,
/// and the profile's CPU per op against the same trials' user + system. Empty without traces
/// or profiles. Shared by the terminal and the HTML report.
pub fn agreement_rows(e: &Explanation) -> (Vec<String>, Vec<Vec<String>>) {
    let opt = |x: Option<f64>| x.map_or_else(String::new, duration);
    let any_blocked = e.points.iter().any(|p| p.offcpu_traced_ns.is_some());
    let any_cpu = e.points.iter().any(|p| p.cpu_profiled_ns.is_some());
    if !any_blocked && !any_cpu {
        return (Vec::new(), Vec::new());
    }
    let mut headers = vec!["N".to_string()];
    if any_blocked {
        headers.extend(["blocked, traced", "residual", "traced/residual"].map(String::from));
    }
    if any_cpu {
        headers.extend(["CPU, profile", "user+sys", "profile/accounting"].map(String::from));
    }
    let rows = e
        .points
        .iter()
        .map(|p| {
            let scale = p.accounting.ns_per_op_task;
            let mut row = vec![p.n.to_string()];
            if any_blocked {
                row.extend([
                    opt(p.offcpu_traced_ns),
                    opt(p.offcpu_residual_ns),
                    ratio(p.offcpu_traced_ns, p.offcpu_residual_ns, scale),
                ]);
            }
            if any_cpu {
                row.extend([
                    opt(p.cpu_profiled_ns),
                    opt(p.cpu_profiled_trials_ns),
                    ratio(p.cpu_profiled_ns, p.cpu_profiled_trials_ns, scale),
                ]);
            }
            row
        })
        .collect();
    (headers, rows)
}

fn trial_list(trials: &[u32]) -> String {
    let v: Vec<String> = trials.iter().map(|i| (i + 1).to_string()).collect();
    v.join(",")
}

/// The cost of measuring per N: what the profiled trials spent in the kernel's perf and tracing
/// functions, how it was split between the profiler and the tracers, and the in-kernel tracers'
/// own programs' time, which no cpu-clock profile sees. `None` when nothing was spent there.
pub fn measuring_note(e: &Explanation) -> Option<String> {
    let at = |pct: fn(&PointExplain) -> Option<f64>| -> Option<String> {
        let any = e.points.iter().any(|p| pct(p).is_some_and(|v| v >= 0.05));
        let shares: Vec<String> = e
            .points
            .iter()
            .filter_map(|p| pct(p).map(|v| format!("{v:.1}% at N={}", p.n)))
            .collect();
        any.then(|| shares.join(", "))
    };
    let profile = at(|p| p.measuring_pct).map(|shares| {
        format!(
            "the profiled trials spent {shares} of their samples in the kernel's perf and tracing functions; as much of it as their CPU per op exceeds the median trial's is the profiler's alone, left out, and the rest every trial carries — the tracers', and the profiler's where every trial was profiled"
        )
    });
    let programs = at(|p| p.programs_pct).map(|shares| {
        format!(
            "the in-kernel tracers' programs ran {shares} of the tasks' CPU time, timed in the kernel (they run with interrupts off, so a cpu-clock profile counts that time where interrupts come back on — finish_task_switch, _raw_spin_unlock_irqrestore — or loses it: it comes off the functions' whole, and is named apart)"
        )
    });
    let parts: Vec<String> = [profile, programs].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| {
        format!(
            "the cost of measuring: {} (`measuring: …`)",
            parts.join("; ")
        )
    })
}

/// What the traces cost, measured per N against an untraced trial run just before the first
/// traced one, and what that means for reading the answer when it is large. `None` without
/// such references (no traces, a command, an older run).
pub fn trace_cost_note(e: &Explanation) -> Option<String> {
    let costs: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let c = p.trace_cost?;
            Some(format!(
                "N={}: {} untraced, {} traced{} (×{:.2})",
                p.n,
                duration(c.untraced_ns),
                duration(c.traced_ns),
                match (c.profiled, c.profiled_every_cpu) {
                    (true, true) => " and profiled on every CPU",
                    (true, false) => " and profiled",
                    (false, _) => "",
                },
                c.slowdown
            ))
        })
        .collect();
    if costs.is_empty() {
        return None;
    }
    let notable = e.points.iter().any(|p| {
        p.trace_cost
            .is_some_and(|c| c.slowdown > TRACE_COST_NOTABLE)
    });
    let mut note = format!(
        "what the traces cost, measured: time per op per task of an untraced trial and of the traced trial run just after it, at each N (one pair: read it against the CV above) — {}",
        costs.join("; ")
    );
    if notable {
        note.push_str(&format!(
            "; above ×{TRACE_COST_NOTABLE:.1}, the times per op above and their split describe the traced run, which records every blocking switch or lock wait: the workload's own throughput is that of a run without --explain, --offcpu and --locks"
        ));
    }
    let every_cpu: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let c = p.trace_cost?;
            c.profiled_every_cpu
                .then(|| match c.switches_per_task_second {
                    Some(rate) => format!("N={}: {rate:.0} switches a second per task", p.n),
                    None => format!("N={}", p.n),
                })
        })
        .collect();
    if !every_cpu.is_empty() {
        note.push_str(&format!(
            "; profiled on every CPU where the untraced tasks switched often ({}): a profile that follows the tasks is stopped and restarted at each of their switches, one on every CPU samples at a steady rate whoever runs (--profile-scope)",
            every_cpu.join(", ")
        ));
    }
    Some(note)
}

/// Per N, the profile against the accounting over the tasks and the partner threads they keep
/// busy on their CPUs (pipe_pingpong's echo partners): the check that is exact where a
/// thread's own share of the samples is a draw. `None` without partners.
pub fn partner_note(e: &Explanation) -> Option<String> {
    let parts: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let (profiled, cpu) = (
                p.cpu_profiled_with_partners_ns?,
                p.cpu_with_partners_trials_ns?,
            );
            (cpu > 0.0).then(|| {
                format!(
                    "N={}: {} against {} ({:.3})",
                    p.n,
                    duration(profiled),
                    duration(cpu),
                    profiled / cpu
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "with the partner threads the tasks keep busy on their CPUs, the profile against their CPU — {}: a cpu-clock sample lands in whichever of a task and its partner runs when it fires, so the pair's sum is the exact check and each one's share a draw",
            parts.join("; ")
        )
    })
}

/// Per N, the hypervisor's steal the in-kernel tracer measured, where it is 0.1% of the
/// tasks' time or more: the residual leaves it out, the accounting's off-CPU time holds it,
/// and it is a cause of its own. `None` otherwise.
pub fn steal_note(e: &Explanation) -> Option<String> {
    let parts: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let stolen = p.offcpu_stolen_ns?;
            let task = p.accounting.ns_per_op_task;
            // Worth a word at 0.1% of the tasks' time.
            (task > 0.0 && stolen >= 0.001 * task).then(|| {
                format!(
                    "N={}: {} per op ({:.1}% of the tasks' time)",
                    p.n,
                    duration(stolen),
                    stolen / task * 100.0
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "the hypervisor took the vCPUs while tasks ran (steal, measured per thread: its time on a CPU less its CPU time) — {}: the kernel counts it neither as CPU nor as a wait for a CPU, so it is in the off-CPU column; the residual above leaves it out, and it is named as `stolen by the hypervisor`, not shared out to the waits. It is the host's other work: measure on a quieter host, or read it as noise",
            parts.join(", ")
        )
    })
}

/// Whether `c` is time a task spent blocked (a lock's or a call's wait), which the measuring's
/// interruptions can lengthen: not CPU, run-queue wait, steal or the measuring's own code.
fn is_blocked_time(c: &Cause) -> bool {
    matches!(
        c.kind,
        CauseKind::UserLock | CauseKind::KernelLock | CauseKind::Blocking | CauseKind::Blocked
    )
}

/// `p`'s blocking change when the traced trial blocked notably more than its untraced
/// reference ([`analysis::explain::BlockingChange::notable`]).
fn notable_blocking_change(p: &PointExplain) -> Option<BlockingChange> {
    let c = p.trace_cost?;
    c.blocking.filter(|b| b.notable(c.traced_ns))
}

/// Per N where the traced trial blocked notably more often per op than the untraced trial
/// run just before it: by how much, and what that means for the blocked causes. `None`
/// where nowhere (or without untraced references).
pub fn blocking_change_note(e: &Explanation) -> Option<String> {
    let mut profiled = None;
    let parts: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let b = notable_blocking_change(p)?;
            let c = p.trace_cost?;
            if let (true, Some(hz)) = (c.profiled, c.profile_frequency) {
                profiled = Some((hz, c.profiled_every_cpu));
            }
            let often = match b.switches_ratio() {
                Some(r) => format!("{r:.1}× as often per op as the untraced trial before it"),
                None => "where the untraced trial before it never did".into(),
            };
            let (lo, hi) = b.traced_per_kop_range;
            let long = match (b.untraced_offcpu_ns, b.traced_offcpu_ns) {
                (Some(u), Some(t)) => format!(
                    "; off a CPU, steal included, {} against {} per op",
                    duration(t),
                    duration(u)
                ),
                _ => String::new(),
            };
            Some(format!(
                "N={}: the traced trial blocked {often} ({:.2} against {:.2} blocking switches per 1000 ops, {lo:.2}–{hi:.2} over the traced trials{long})",
                p.n, b.traced_per_kop, b.untraced_per_kop
            ))
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let most = match profiled {
        Some((hz, every_cpu)) => format!(
            " (the profile's samples among them, {hz} a second per {})",
            if every_cpu { "CPU" } else { "task" }
        ),
        None => String::new(),
    };
    Some(format!(
        "the measuring made the tasks block more, not only run slower — {} (one untraced trial per N; every traced trial blocked at least twice as often). Each of the measuring's interruptions{most} lengthens whatever it lands in, a lock's hold too, so other tasks find the lock held and wait: the blocked causes named here are that much larger than the workload's own. A lower --profile-frequency perturbs less; compare the blocked causes with such a run",
        parts.join("; ")
    ))
}

/// Per N, the traced blocked time from episodes no wake-up record ended, when it is over 1%
/// of what the trace saw: why `traced/residual` can read above 1. `None` otherwise.
pub fn unwoken_note(e: &Explanation) -> Option<String> {
    let parts: Vec<String> = e
        .points
        .iter()
        .filter_map(|p| {
            let (unwoken, traced) = (p.offcpu_unwoken_ns?, p.offcpu_traced_ns?);
            (unwoken > 0.01 * traced).then(|| {
                format!(
                    "N={}: {} per op ({:.0}%)",
                    p.n,
                    duration(unwoken),
                    unwoken / traced * 100.0
                )
            })
        })
        .collect();
    let mut silent: Vec<u32> = e
        .points
        .iter()
        .flat_map(|p| p.offcpu_silent_idle_cpus.iter().copied())
        .collect();
    silent.sort_unstable();
    silent.dedup();
    let cause = match silent.as_slice() {
        [] => String::new(),
        cpus => format!(
            "; the cause: {} recorded nothing while idle (went idle again and again, and not one wake-up was recorded in the idle task's context), so the wake-ups taken there while idle (by the interrupts handled there) are missing, whichever CPU the woken task ran on",
            cpus.iter()
                .map(|c| format!("CPU {c}"))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    };
    (!parts.is_empty()).then(|| {
        format!(
            "blocked, traced includes episodes that no wake-up record ended (the kernel traced none for them) — {}; they run to the switch-in, so they also hold the wait for a CPU after the wake-up, which the residual leaves out: a traced/residual above 1 there is that wait{cause}",
            parts.join(", ")
        )
    })
}

/// The whole explanation as terminal text: the answer, the accounting per N, the traces
/// against it, the growth by cause with its evidence, the USL reading, what evidence is
/// missing, and which trials each part came from.
pub fn write(out: &mut Printer<'_>, e: &Explanation) -> io::Result<()> {
    writeln!(out, "{}", e.description)?;
    writeln!(out, "{}", answer(e))?;
    writeln!(out)?;
    write_accounting(out, e)?;
    explain_threads::write(out, e)?;
    write_agreement(out, e)?;
    if let Some(g) = &e.growth {
        write_growth(out, e, g)?;
    }
    if let Some(u) = &e.usl {
        writeln!(out)?;
        let agree = match u.agrees {
            Some(true) => "the top named cause agrees",
            Some(false) => "the top named cause does NOT agree: read the causes with care",
            None => "no cause was named to compare",
        };
        writeln!(
            out,
            "USL: σ = {:.4}, κ = {:.5}; at N={} σ(N−1) = {:.3} vs κN(N−1) = {:.3}: {} dominates; {agree}",
            u.sigma,
            u.kappa,
            e.points.last().map_or(0, |p| p.n),
            u.sigma_term,
            u.kappa_term,
            mechanism(u.dominant)
        )?;
    }

    if !e.missing.is_empty() {
        writeln!(out)?;
        writeln!(out, "missing evidence")?;
        for m in &e.missing {
            writeln!(out, "  {} — {}", m.what, m.fix)?;
        }
    }

    write_sources(out, e)
}

/// The accounting table: ns per op per task, split into user, system, run queue and off-CPU
/// (and supervising/workers for a command's threads), with the trials' spread.
fn write_accounting(out: &mut Printer<'_>, e: &Explanation) -> io::Result<()> {
    writeln!(out, "{}", explain_threads::accounting_header(e))?;
    let threads = e.points.iter().any(|p| !p.accounting.workers.is_empty());
    let mut headers = vec!["N", "ns/op/task", "user", "system", "run queue", "off-CPU"];
    if threads {
        headers.extend(["supervising", "workers"]);
    }
    headers.extend(["CV", "trials"]);
    let mut t = Grid::plain(&headers, headers.len(), &["CV"], None);
    for p in &e.points {
        let a = &p.accounting;
        let mut row = vec![
            p.n.to_string(),
            duration(a.ns_per_op_task),
            duration(a.user_ns),
            duration(a.system_ns),
            if a.runq_measured {
                duration(a.runq_ns)
            } else {
                "—".into()
            },
            duration(a.offcpu_ns),
        ];
        if threads {
            row.push(a.supervising_ns.map_or_else(String::new, duration));
            row.push(explain_threads::workers_cell(&a.workers));
        }
        row.push(a.cv.map_or_else(|| "—".into(), |c| format!("{:.1}%", c * 100.0)));
        row.push(a.trials.len().to_string());
        t.add_row(row);
    }
    out.table(&t)
}

/// The traces against the accounting on the same trials, and the notes on what the traces
/// cost and missed.
fn write_agreement(out: &mut Printer<'_>, e: &Explanation) -> io::Result<()> {
    let (headers, rows) = agreement_rows(e);
    if !rows.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "the traces against the accounting, on the same trials (per op; a ratio of 1.00 is full agreement)"
        )?;
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut t = Grid::plain(&headers, headers.len(), &[], None);
        for r in rows {
            t.add_row(r);
        }
        out.table(&t)?;
    }
    if let Some(note) = measuring_note(e) {
        writeln!(out, "{note}")?;
    }
    if let Some(note) = partner_note(e) {
        writeln!(out, "{note}")?;
    }
    if let Some(note) = unwoken_note(e) {
        writeln!(out, "{note}")?;
    }
    if let Some(note) = steal_note(e) {
        writeln!(out, "{note}")?;
    }
    if let Some(note) = trace_cost_note(e) {
        writeln!(out, "{note}")?;
    }
    if let Some(note) = blocking_change_note(e) {
        writeln!(out, "{note}")?;
    }

    Ok(())
}

/// The growth from the first to the last N by cause, what stayed within noise, and the top
/// causes' evidence.
fn write_growth(out: &mut Printer<'_>, e: &Explanation, g: &GrowthAccount) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "growth from N={} to N={}: {} per op, by cause (named only beyond trial-to-trial noise)",
        g.from_n,
        g.to_n,
        signed(g.delta_ns)
    )?;
    let h_from = format!("N={}", g.from_n);
    let h_to = format!("N={}", g.to_n);
    let mut t = Grid::plain(
        &[&h_from, &h_to, "growth", "share", "source", "cause"],
        4,
        &[],
        Some("cause"),
    );
    for c in &g.named {
        t.add_row(vec![
            duration(c.from_ns),
            duration(c.to_ns),
            signed(c.delta_ns),
            share_with_interval(c, g.delta_ns),
            c.cause.source.into(),
            cause_label(&c.cause),
        ]);
    }
    t.add_row(vec![
        String::new(),
        String::new(),
        signed(g.unexplained_ns),
        pct(g.unexplained_pct),
        String::new(),
        "unexplained".into(),
    ]);
    out.table(&t)?;
    let runq_first = g
        .named
        .first()
        .is_some_and(|c| c.cause.kind == CauseKind::RunQueue && c.delta_ns > 0.0);
    // A command's workers at the larger N, where more than N: they queue among themselves.
    let workers = e
        .points
        .iter()
        .find(|p| p.n == g.to_n)
        .and_then(|p| p.accounting.workers.iter().max().copied())
        .filter(|&w| w > g.to_n);
    if let (true, Some(w)) = (runq_first, workers) {
        writeln!(
            out,
            "  note: the command ran {w} worker threads at N={}, more than N: waiting for a CPU is first their own queueing for the CPUs they share",
            g.to_n
        )?;
    } else if runq_first
        && e.scales_to
            .and_then(|s| s.cpus)
            .is_some_and(|cpus| g.to_n <= cpus)
    {
        writeln!(
            out,
            "  note: waiting for a CPU is not the workload's own cost while N fits the CPUs — other work competed (see `scalelab doctor`, rerun on a quiet machine); the causes below it are the workload's"
        )?;
    }
    if !g.within_noise.is_empty() {
        let sum: f64 = g.within_noise.iter().map(|c| c.delta_ns).sum();
        writeln!(
            out,
            "  within noise (in unexplained): {} ({} in all{})",
            g.within_noise
                .iter()
                .take(TOP)
                .map(|c| format!("{} {}", cause_label(&c.cause), signed(c.delta_ns)))
                .collect::<Vec<_>>()
                .join("; "),
            signed(sum),
            if g.within_noise.len() > TOP {
                ", …"
            } else {
                ""
            }
        )?;
    }
    let top: Vec<&CauseGrowth> = g
        .named
        .iter()
        .filter(|c| c.delta_ns > 0.0 && !c.cause.evidence.is_empty())
        .take(TOP)
        .collect();
    if !top.is_empty() {
        writeln!(out)?;
        writeln!(out, "evidence")?;
        for c in top {
            writeln!(out, "  {} ({}):", cause_label(&c.cause), c.cause.source)?;
            if let Some(via) = &c.cause.via {
                writeln!(
                    out,
                    "    followed from the workers' wait in {}, which {} ended",
                    printable(&via.waited_in),
                    printable(&via.server)
                )?;
            }
            if let Some(line) = call_sites_line(&c.cause) {
                writeln!(out, "    {}", printable(&line))?;
            }
            for line in &c.cause.evidence {
                writeln!(out, "    {}", printable(line))?;
            }
        }
    }
    Ok(())
}

/// Which trials each part came from, and the noise rule the causes were judged by.
fn write_sources(out: &mut Printer<'_>, e: &Explanation) -> io::Result<()> {
    let opts = *out.options();
    let pal = opts.palette;
    writeln!(out)?;
    let mut sources = Vec::new();
    for p in &e.points {
        let mut s = format!(
            "N={}: accounting trials {}",
            p.n,
            trial_list(&p.accounting.trials)
        );
        if !p.lock_trials.is_empty() {
            s.push_str(&format!(", locks {}", trial_list(&p.lock_trials)));
        }
        if let Some(src) = p.offcpu_source {
            s.push_str(&format!(
                ", blocked time split by {src} ({})",
                trial_list(&p.offcpu_trials)
            ));
        }
        if !p.profile_files.is_empty() {
            s.push_str(&format!(", {} profile file(s)", p.profile_files.len()));
        }
        sources.push(s);
    }
    writeln!(out, "trials: {}", sources.join("; "))?;
    if let Some(note) = chain_note(e) {
        writeln!(out, "{note}")?;
    }
    let unmeasured = e.growth.as_ref().is_some_and(|g| {
        g.named
            .iter()
            .any(|c| c.noise.rule == NoiseRule::Unmeasured)
    });
    writeln!(out, "noise: {}", e.noise_rule)?;
    if unmeasured {
        writeln!(
            out,
            "{} one trial per N — the causes above were not checked against noise (--runs 3)",
            pal.warning()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use analysis::explain::explain;
    use lab::test_runs::explained_run;

    use super::*;
    use crate::printer::{Format, printed};

    fn text() -> String {
        let e = explain(&explained_run(), &[]).expect("an explanation");
        printed(Format::Text, |o| write(o, &e))
    }

    #[test]
    fn blocked_time_with_no_chain_sampled_is_named_as_such_and_a_blocking_call_by_its_call() {
        let cause = |what: &str, object: &str, caller: &str| Cause {
            kind: CauseKind::Blocking,
            what: what.into(),
            object: object.into(),
            caller: caller.into(),
            source: "offcpu",
            evidence: Vec::new(),
            ended_by: Vec::new(),
            under: None,
            call_sites: Vec::new(),
            held_by: Vec::new(),
            via: None,
        };
        assert_eq!(
            cause_label(&cause("unsampled", "waits with no call chain sampled", "")),
            "blocked in waits with no call chain sampled"
        );
        assert_eq!(
            cause_label(&cause("io", "fsync", "flush")),
            "blocked in fsync (io) from flush"
        );
    }

    #[test]
    fn episodes_without_a_wake_up_are_named_where_they_are_over_1_percent() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(unwoken_note(&e), None);
        let traced = e.points[1].offcpu_traced_ns.expect("traced");
        e.points[0].offcpu_unwoken_ns = e.points[0].offcpu_traced_ns.map(|t| t * 0.005);
        e.points[1].offcpu_unwoken_ns = Some(traced * 0.5);
        let note = unwoken_note(&e).expect("a note");
        assert!(!note.contains("N=1"), "under 1% is not named: {note}");
        assert!(
            note.contains(&format!("N=2: {} per op (50%)", duration(traced * 0.5))),
            "{note}"
        );
        assert!(!note.contains("idle"), "no silent CPU, no cause: {note}");
        assert!(printed(Format::Text, |o| write(o, &e)).contains(&note));
        e.points[1].offcpu_silent_idle_cpus = vec![1];
        let note = unwoken_note(&e).expect("a note");
        assert!(
            note.ends_with("; the cause: CPU 1 recorded nothing while idle (went idle again and again, and not one wake-up was recorded in the idle task's context), so the wake-ups taken there while idle (by the interrupts handled there) are missing, whichever CPU the woken task ran on"),
            "{note}"
        );
    }

    #[test]
    fn steal_is_named_per_n_where_measured_and_worth_a_word() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(steal_note(&e), None, "not measured, no note");
        let task = e.points[1].accounting.ns_per_op_task;
        e.points[0].offcpu_stolen_ns = Some(e.points[0].accounting.ns_per_op_task * 0.0005);
        e.points[1].offcpu_stolen_ns = Some(task * 0.08);
        let note = steal_note(&e).expect("a note");
        assert!(!note.contains("N=1"), "under 0.1% is not named: {note}");
        assert!(
            note.contains(&format!(
                "N=2: {} per op (8.0% of the tasks' time)",
                duration(task * 0.08)
            )),
            "{note}"
        );
        assert!(note.contains("`stolen by the hypervisor`"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e)).contains(&note));
    }

    #[test]
    fn the_check_over_tasks_and_partners_is_shown_per_n_where_measured() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(partner_note(&e), None, "no partners, no note");
        e.points[1].cpu_profiled_with_partners_ns = Some(24_024.0);
        e.points[1].cpu_with_partners_trials_ns = Some(24_000.0);
        let note = partner_note(&e).expect("a note");
        assert!(
            note.contains("— N=2: 24.0µs against 24.0µs (1.001): a cpu-clock sample lands"),
            "{note}"
        );
        assert!(!note.contains("N=1"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e)).contains(&note));
    }

    #[test]
    fn the_traces_cost_is_shown_per_n_and_read_as_a_caveat_above_the_bound() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(trace_cost_note(&e), None, "no reference, no note");
        let cost = |slowdown: f64| analysis::explain::TraceCost {
            trial: 1,
            traced_ns: 2000.0 * slowdown,
            untraced_ns: 2000.0,
            slowdown,
            profiled: false,
            profiled_every_cpu: false,
            switches_per_task_second: Some(120.0),
            profile_frequency: None,
            blocking: None,
        };
        e.points[0].trace_cost = Some(cost(1.05));
        e.points[1].trace_cost = Some(cost(1.2));
        let mild = trace_cost_note(&e).expect("a note");
        assert!(
            mild.contains("N=1: 2.00µs untraced, 2.10µs traced (×1.05); N=2: 2.00µs untraced, 2.40µs traced (×1.20)"),
            "{mild}"
        );
        assert!(!mild.contains("describe the traced run"), "{mild}");
        e.points[1].trace_cost = Some(cost(2.9));
        let heavy = trace_cost_note(&e).expect("a note");
        assert!(heavy.contains("(×2.90); above ×1.3, the times per op above and their split describe the traced run"), "{heavy}");
        assert!(printed(Format::Text, |o| write(o, &e)).contains(&heavy));
        assert!(!heavy.contains("every CPU"), "{heavy}");
        // A point profiled on every CPU (--profile-scope auto, a blocking workload) says so
        // and why, with the rate its untraced tasks switched at.
        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            profiled: true,
            profiled_every_cpu: true,
            switches_per_task_second: Some(25_507.4),
            ..cost(1.02)
        });
        let scoped = trace_cost_note(&e).expect("a note");
        assert!(
            scoped.contains("2.04µs traced and profiled on every CPU (×1.02)")
                && scoped.contains("profiled on every CPU where the untraced tasks switched often (N=2: 25507 switches a second per task)"),
            "{scoped}"
        );
    }

    #[test]
    fn blocking_the_measuring_caused_is_named_in_the_answer_and_a_note() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(blocking_change_note(&e), None, "no reference, no note");
        // N=2 traced: 1.6 µs per op, 5% of it off a CPU, blocking 0.81 times per 1000 ops
        // (0.72–1.01 over its trials) against 0.25 in the untraced trial before it.
        let change = BlockingChange {
            untraced_switches: 250,
            untraced_per_kop: 0.25,
            traced_switches: 1013,
            traced_per_kop: 0.81,
            traced_per_kop_range: (0.72, 1.01),
            untraced_offcpu_ns: Some(8.4),
            traced_offcpu_ns: Some(80.0),
        };
        let cost = analysis::explain::TraceCost {
            trial: 0,
            traced_ns: 1600.0,
            untraced_ns: 1500.0,
            slowdown: 1600.0 / 1500.0,
            profiled: true,
            profiled_every_cpu: false,
            switches_per_task_second: Some(250.0),
            profile_frequency: Some(4000),
            blocking: Some(BlockingChange {
                traced_per_kop_range: (0.3, 1.01),
                ..change
            }),
        };
        // One traced trial blocked under twice the untraced trial's rate: nothing is said.
        e.points[1].trace_cost = Some(cost);
        assert_eq!(blocking_change_note(&e), None);
        assert!(!answer(&e).contains("as often per op"), "{}", answer(&e));

        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            blocking: Some(change),
            ..cost
        });
        let note = blocking_change_note(&e).expect("a note");
        assert!(
            note.starts_with("the measuring made the tasks block more, not only run slower — N=2: the traced trial blocked 3.2× as often per op as the untraced trial before it (0.81 against 0.25 blocking switches per 1000 ops, 0.72–1.01 over the traced trials; off a CPU, steal included, 80.0ns against 8.40ns per op)"),
            "{note}"
        );
        assert!(
            note.contains(
                "Each of the measuring's interruptions (the profile's samples among them, 4000 a second per task) lengthens"
            ),
            "{note}"
        );
        assert!(!note.contains("N=1"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e)).contains(&note));
        // The answer says it beside the blocked cause (the futex from worker_lock), not beside
        // CPU.
        let line = answer(&e);
        let futex = line.find("worker_lock").expect("the futex wait leads");
        let caveat = line
            .find("the traced run blocked 3.2× as often per op as an untraced one")
            .expect("the caveat");
        assert!(caveat > futex, "{line}");
        assert_eq!(line.matches("as often per op").count(), 1, "{line}");

        // An untraced trial that never blocked: no ratio, said as such.
        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            blocking: Some(BlockingChange {
                untraced_switches: 0,
                untraced_per_kop: 0.0,
                ..change
            }),
            ..cost
        });
        assert!(
            answer(&e).contains("the traced run blocked where an untraced one did not"),
            "{}",
            answer(&e)
        );
        let note = blocking_change_note(&e).expect("a note");
        assert!(
            note.contains("N=2: the traced trial blocked where the untraced trial before it never did (0.81 against 0.00"),
            "{note}"
        );
    }

    #[test]
    fn the_answer_names_the_workloads_causes_before_the_cost_of_measuring_it() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        let g = e.growth.as_mut().expect("a growth");
        let mut measuring = g.named[0].clone();
        measuring.cause.kind = analysis::explain::CauseKind::Measurement;
        measuring.cause.what = "measuring: CPU in perf_swevent_event".into();
        measuring.delta_ns = 2.0 * g.named[0].delta_ns;
        measuring.share_pct = measuring.share_pct.map(|p| 2.0 * p);
        g.named.insert(0, measuring);
        let line = answer(&e);
        let first = line.find("futex wait from worker_lock").expect("the lock");
        let then = line.find("is the measuring itself").expect("the measuring");
        assert!(first < then, "{line}");
        assert!(line.contains("% of that is futex wait"), "{line}");
        assert!(!line.contains("perf_swevent_event"), "{line}");
    }

    #[test]
    fn a_reported_rate_is_explained_per_unit_and_a_wait_by_what_ended_it() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        e.per = "MB".into();
        let g = e.growth.as_mut().expect("growth");
        g.named[0].cause.ended_by = vec![
            analysis::explain::EndedBy {
                by: "the journal (jbd2)".into(),
                ns: 90.0,
            },
            analysis::explain::EndedBy {
                by: "an I/O completion".into(),
                ns: 10.0,
            },
        ];
        let line = answer(&e);
        assert!(
            line.contains("1 MB costs 1.00µs of task time at N=1 and 1.60µs at N=2"),
            "{line}"
        );
        assert!(
            line.contains("from worker_lock, ended by the journal (jbd2) (90%)"),
            "{line}"
        );
    }

    #[test]
    fn a_commands_threads_by_role_are_shown_once() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        e.points[0].threads = vec![model::thread_account::ThreadGroup {
            role: model::thread_account::ThreadRole::Supervisor,
            comm: "dbench".into(),
            threads: 1,
            life: model::record::Nanos(3_000_000_000),
            on_cpu: model::record::Nanos(3_000_000),
            runq: model::record::Nanos(1_000_000),
            blocked: model::record::Nanos(2_996_000_000),
            stolen: model::record::Nanos(0),
            waiting_for_started: model::record::Nanos(2_990_000_000),
            cpu_serving: model::record::Nanos(0),
            tids: vec![42],
        }];
        let text = printed(Format::Text, |o| write(o, &e));
        assert!(
            !text.contains("stolen"),
            "no steal measured, no column: {text}"
        );
        assert_eq!(text.matches("threads by role").count(), 1, "{text}");
        assert_eq!(
            text.matches("supervising: started threads").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn the_answer_comes_first_and_names_the_top_cause_with_its_share() {
        let t = text();
        let second = t.lines().nth(1).expect("an answer line");
        assert!(
            second.starts_with("scales to 1.25 out of 2 tasks · an op costs 1.00µs of task time at N=1 and 1.60µs at N=2 (+600ns) · 93% of that is futex wait from worker_lock (offcpu)"),
            "{t}"
        );
        assert!(second.ends_with("· 11% unexplained"), "{second}");
    }

    #[test]
    fn the_text_shows_the_table_the_evidence_the_missing_evidence_and_the_noise_rule() {
        let t = text();
        for needle in [
            "ns/op/task",
            "unexplained",
            "evidence",
            "futex_wait",
            "no profile: user and system time are not split by function — run with --profile",
            "no lock trace",
            "noise: A cause is named only when",
            "blocked time split by offcpu (1,2,3)",
            "the traces against the accounting, on the same trials",
            "traced/residual",
        ] {
            assert!(t.contains(needle), "{needle} missing from\n{t}");
        }
        assert!(!t.contains("no off-CPU trace"), "{t}");
    }

    #[test]
    fn each_share_shows_its_interval_and_a_sample_of_chains_is_counted_per_n() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(chain_note(&e), None, "every episode traced, no note");
        let g = e.growth.as_ref().expect("a growth");
        let top = g.named[0].clone();
        let total = g.delta_ns;
        let interval = top.interval_ns.expect("three trials a side");
        assert_eq!(
            share_with_interval(&top, total),
            format!(
                "{:.0}% ±{:.0}",
                top.share_pct.unwrap(),
                interval / total * 100.0
            )
        );
        let mut one = top.clone();
        one.interval_ns = None;
        assert_eq!(
            share_with_interval(&one, total),
            format!("{:.0}%", top.share_pct.unwrap()),
            "one trial per N: no interval"
        );
        e.points[1].offcpu_chains = Some(ChainSample {
            episodes: 123_456,
            with_chain: 2_345,
            lost: 0,
            trials: 3,
        });
        e.points[0].lock_chains = Some(ChainSample {
            episodes: 40,
            with_chain: 40,
            lost: 0,
            trials: 3,
        });
        e.points[1].lock_chains = Some(ChainSample {
            episodes: 5_000,
            with_chain: 1_000,
            lost: 2,
            trials: 3,
        });
        let note = chain_note(&e).expect("a note");
        assert!(
            note.starts_with("call chains of a sample: off-CPU N=2 2345 of 123456 blocking switches (1 in 53); locks N=1 all 40 lock waits, N=2 1000 of 5000 lock waits (1 in 5.0), 2 more picked but lost (ring buffer full) — "),
            "{note}"
        );
        let text = printed(Format::Text, |o| write(o, &e));
        assert!(text.contains(&note), "{text}");
        assert!(
            text.contains(&format!("±{:.0}", interval / total * 100.0)),
            "{text}"
        );
    }
}
