//! The words of an explanation, shared by the terminal (`explain_table`) and the HTML report
//! (`html::run_section`): the answer line, each cause's label and share, the traces' agreement
//! rows, and the notes under the tables in their two lengths ([`Note`], [`Detail`]).
//!
//! Formats what `analysis::explain` derived; computes nothing but shares and labels; writes
//! nothing (the callers do).

use analysis::explain::{
    BlockingChange, Cause, CauseGrowth, CauseKind, ChainSample, Explanation, Mechanism, NoiseRule,
    PointExplain, TRACE_COST_NOTABLE,
};
use model::safe_text::printable;

use crate::number_format::duration;

/// Causes in the answer line and in the evidence.
pub(crate) const TOP: usize = 3;

/// How much of each note the terminal prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// One line per note: what was seen, with its figures.
    #[default]
    Brief,
    /// Each note whole: also why it matters and how to read it (`--verbose`).
    Full,
}

/// A note under a table, in its two lengths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// One line: what was seen, with its figures.
    pub brief: String,
    /// The whole note: also why it matters and how to read it.
    pub full: String,
}

impl Note {
    /// A note that is one line at any length.
    pub fn one_line(text: String) -> Note {
        Note {
            brief: text.clone(),
            full: text,
        }
    }

    /// The note at `detail`.
    pub fn text(&self, detail: Detail) -> &str {
        match detail {
            Detail::Brief => &self.brief,
            Detail::Full => &self.full,
        }
    }
}

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
pub(crate) fn held_by(c: &Cause) -> Option<String> {
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
pub(crate) fn one(per: &str) -> String {
    if per == "op" {
        "an op".into()
    } else {
        format!("1 {}", printable(per))
    }
}

pub(crate) fn signed(ns: f64) -> String {
    if ns >= 0.0 {
        format!("+{}", duration(ns))
    } else {
        format!("-{}", duration(-ns))
    }
}

pub(crate) fn pct(x: Option<f64>) -> String {
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
pub(crate) fn chain_sample(c: &ChainSample, what: &str) -> String {
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
pub fn chain_note(e: &Explanation) -> Option<Note> {
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
        Note::one_line(format!(
            "call chains of every episode (--chain-every 1): {}",
            parts.join("; ")
        ))
    } else {
        let brief = format!("call chains of a sample: {}", parts.join("; "));
        Note {
            full: format!(
                "{brief} — every episode's time is summed, the chains share it out, so a share carries sampling error as well as the trials' noise; the ± on each share is its 95% interval from the trials' spread, both included"
            ),
            brief,
        }
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

pub(crate) fn mechanism(m: Mechanism) -> &'static str {
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
pub(crate) fn ratio(num: Option<f64>, den: Option<f64>, scale: f64) -> String {
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

pub(crate) fn trial_list(trials: &[u32]) -> String {
    let v: Vec<String> = trials.iter().map(|i| (i + 1).to_string()).collect();
    v.join(",")
}

/// The cost of measuring per N: what the profiled trials spent in the kernel's perf and tracing
/// functions, how it was split between the profiler and the tracers, and the in-kernel tracers'
/// own programs' time, which no cpu-clock profile sees. `None` when nothing was spent there.
pub fn measuring_note(e: &Explanation) -> Option<Note> {
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
        let brief = format!(
            "the profiled trials spent {shares} of their samples in the kernel's perf and tracing functions"
        );
        let full = format!(
            "{brief}; as much of it as their CPU per op exceeds the median trial's is the profiler's alone, left out, and the rest every trial carries — the tracers', and the profiler's where every trial was profiled"
        );
        (brief, full)
    });
    let programs = at(|p| p.programs_pct).map(|shares| {
        let brief = format!(
            "the in-kernel tracers' programs ran {shares} of the tasks' CPU time, timed in the kernel"
        );
        let full = format!(
            "{brief} (they run with interrupts off, so a cpu-clock profile counts that time where interrupts come back on — finish_task_switch, _raw_spin_unlock_irqrestore — or loses it: it comes off the functions' whole, and is named apart)"
        );
        (brief, full)
    });
    let parts: Vec<(String, String)> = [profile, programs].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| {
        let join = |pick: fn(&(String, String)) -> &str| {
            format!(
                "the cost of measuring: {} (`measuring: …`)",
                parts.iter().map(pick).collect::<Vec<_>>().join("; ")
            )
        };
        Note {
            brief: join(|p| &p.0),
            full: join(|p| &p.1),
        }
    })
}

/// What the traces cost, measured per N against an untraced trial run just before the first
/// traced one, and what that means for reading the answer when it is large. `None` without
/// such references (no traces, a command, an older run).
pub fn trace_cost_note(e: &Explanation) -> Option<Note> {
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
    let brief = format!("what the traces cost: {}", costs.join("; "));
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
    Some(Note { brief, full: note })
}

/// Per N, the profile against the accounting over the tasks and the partner threads they keep
/// busy on their CPUs (pipe_pingpong's echo partners): the check that is exact where a
/// thread's own share of the samples is a draw. `None` without partners.
pub fn partner_note(e: &Explanation) -> Option<Note> {
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
        let brief = format!(
            "with the partner threads the tasks keep busy on their CPUs, the profile against their CPU — {}",
            parts.join("; ")
        );
        Note {
            full: format!(
                "{brief}: a cpu-clock sample lands in whichever of a task and its partner runs when it fires, so the pair's sum is the exact check and each one's share a draw"
            ),
            brief,
        }
    })
}

/// Per N, the hypervisor's steal the in-kernel tracer measured, where it is 0.1% of the
/// tasks' time or more: the residual leaves it out, the accounting's off-CPU time holds it,
/// and it is a cause of its own. `None` otherwise.
pub fn steal_note(e: &Explanation) -> Option<Note> {
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
    (!parts.is_empty()).then(|| Note {
        brief: format!(
            "the hypervisor took the vCPUs while tasks ran (steal) — {}",
            parts.join(", ")
        ),
        full: format!(
            "the hypervisor took the vCPUs while tasks ran (steal, measured per thread: its time on a CPU less its CPU time) — {}: the kernel counts it neither as CPU nor as a wait for a CPU, so it is in the off-CPU column; the residual above leaves it out, and it is named as `stolen by the hypervisor`, not shared out to the waits. It is the host's other work: measure on a quieter host, or read it as noise",
            parts.join(", ")
        ),
    })
}

/// Whether `c` is time a task spent blocked (a lock's or a call's wait), which the measuring's
/// interruptions can lengthen: not CPU, run-queue wait, steal or the measuring's own code.
pub(crate) fn is_blocked_time(c: &Cause) -> bool {
    matches!(
        c.kind,
        CauseKind::UserLock | CauseKind::KernelLock | CauseKind::Blocking | CauseKind::Blocked
    )
}

/// `p`'s blocking change when the traced trial blocked notably more than its untraced
/// reference ([`analysis::explain::BlockingChange::notable`]).
pub(crate) fn notable_blocking_change(p: &PointExplain) -> Option<BlockingChange> {
    let c = p.trace_cost?;
    c.blocking.filter(|b| b.notable(c.traced_ns))
}

/// Per N where the traced trial blocked notably more often per op than the untraced trial
/// run just before it: by how much, and what that means for the blocked causes. `None`
/// where nowhere (or without untraced references).
pub fn blocking_change_note(e: &Explanation) -> Option<Note> {
    let mut profiled = None;
    let mut briefs = Vec::new();
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
            briefs.push(format!("N={}: {often}", p.n));
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
    Some(Note {
        brief: format!(
            "the measuring made the tasks block more, so the blocked causes are larger than the workload's own — {}",
            briefs.join("; ")
        ),
        full: format!(
            "the measuring made the tasks block more, not only run slower — {} (one untraced trial per N; every traced trial blocked at least twice as often). Each of the measuring's interruptions{most} lengthens whatever it lands in, a lock's hold too, so other tasks find the lock held and wait: the blocked causes named here are that much larger than the workload's own. A lower --profile-frequency perturbs less; compare the blocked causes with such a run",
            parts.join("; ")
        ),
    })
}

/// Per N, the traced blocked time from episodes no wake-up record ended, when it is over 1%
/// of what the trace saw: why `traced/residual` can read above 1. `None` otherwise.
pub fn unwoken_note(e: &Explanation) -> Option<Note> {
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
    (!parts.is_empty()).then(|| Note {
        brief: format!(
            "blocked, traced includes episodes that no wake-up record ended — {}",
            parts.join(", ")
        ),
        full: format!(
            "blocked, traced includes episodes that no wake-up record ended (the kernel traced none for them) — {}; they run to the switch-in, so they also hold the wait for a CPU after the wake-up, which the residual leaves out: a traced/residual above 1 there is that wait{cause}",
            parts.join(", ")
        ),
    })
}
