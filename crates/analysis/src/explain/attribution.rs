//! The growth from the smallest to the largest N, attributed: every ns of extra cost per op
//! goes to a named cause (ranked, largest first) or to **unexplained**, never dropped.
//!
//! The causes at each N are the finest split the evidence allows: blocked time by off-CPU site
//! or lock wait, CPU time by function and kernel spinning, run-queue wait; an accounting part
//! with no split (no profile, no trace) is a cause of its own. What the splits leave over (the
//! part of blocked time no trace saw, the part of CPU no function holds) and the causes within
//! the noise make up the unexplained rest.
//!
//! CPU spread thin: a function's growth is judged per profiled trial (or against the whole op's
//! noise with one profiled trial per N), so CPU that grows a little in many functions (cache lines
//! bouncing) stays within noise function by function. Where the accounting's system (or user) CPU
//! per op itself grew beyond noise — its trials at the larger N all above those at the smaller, a
//! per-trial test — the growth of that side's functions that are each within noise is named as one
//! cause, "system CPU spread over functions", with its largest functions as evidence and, for
//! system CPU, the system calls its growth ran under (from the profile's call chains); one function
//! holding half of that growth or more is named by itself, on the same per-trial verdict. Only what
//! even that leaves is unexplained.
//!
//! Each cause's growth carries its 95% interval from the per-trial values at the two N
//! (Welch's interval of the difference of means): the trials' run-to-run noise and, where the
//! in-kernel tracers recorded the call chains of a sample of the episodes, the sampling error
//! of each trial's split, together. Two runs of the same workload agree where their shares
//! differ by less than their intervals.

use serde::Serialize;

use super::cause::{Cause, CauseKind, Part, is_kernel_function, key};
use super::noise::{NoiseRule, NoiseVerdict, decide, is_material, whole_noise};
use super::point::PointExplain;

/// One cause's growth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CauseGrowth {
    /// The cause.
    pub cause: Cause,
    /// ns per op at the smallest N (0 when not seen there).
    pub from_ns: f64,
    /// ns per op at the largest N.
    pub to_ns: f64,
    /// `to_ns − from_ns`.
    pub delta_ns: f64,
    /// Share of the total growth, in % (`None` when the total did not grow).
    pub share_pct: Option<f64>,
    /// Half the 95% interval of `delta_ns` from the trials' spread (Welch's interval of the
    /// difference of the per-trial means): the run-to-run noise and, where call chains were
    /// sampled, the sampling error, both. `None` with fewer than two values at either N (one
    /// profiled or traced trial).
    pub interval_ns: Option<f64>,
    /// The noise decision.
    pub noise: NoiseVerdict,
}

impl CauseGrowth {
    /// Half the 95% interval of [`CauseGrowth::share_pct`], in percentage points.
    pub fn share_interval_pct(&self, total_delta: f64) -> Option<f64> {
        self.interval_ns
            .filter(|_| total_delta > 0.0)
            .map(|i| i / total_delta * 100.0)
    }
}

/// The confidence of [`CauseGrowth::interval_ns`].
pub const GROWTH_CONFIDENCE: f64 = 0.95;

/// Half the [`GROWTH_CONFIDENCE`] interval of a growth from per-trial values at the two N.
fn growth_interval(from: &[f64], to: &[f64]) -> Option<f64> {
    stats::mean_difference_interval(from, to, GROWTH_CONFIDENCE)
}

/// The growth of an op's cost from the smallest to the largest N.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrowthAccount {
    /// The smallest N.
    pub from_n: u32,
    /// The largest N.
    pub to_n: u32,
    /// ns/op/task at the smallest N.
    pub from_ns: f64,
    /// ns/op/task at the largest N.
    pub to_ns: f64,
    /// The growth.
    pub delta_ns: f64,
    /// Causes beyond noise, largest growth first.
    pub named: Vec<CauseGrowth>,
    /// Causes whose growth is within noise (counted in `unexplained_ns`), largest first, at
    /// most 10.
    pub within_noise: Vec<CauseGrowth>,
    /// Whether the growth as a whole is beyond the trials' noise, by the rule causes are
    /// named by (per-trial `ns/op/task` at the two N): a growth within it may be the VM's
    /// drift, and the answer says so.
    pub noise: NoiseVerdict,
    /// Growth no named cause accounts for: `delta_ns − Σ named`.
    pub unexplained_ns: f64,
    /// Its share of the growth, in % (`None` when the total did not grow).
    pub unexplained_pct: Option<f64>,
}

/// The share of a side's spread growth one function must hold to be named on its own.
const DOMINANT_SHARE: f64 = 0.5;

/// Where the accounting's user or system CPU grew beyond noise (per trial), the growth of its
/// functions that are each within noise becomes one named cause (see the module doc); returns
/// the causes still within noise.
fn spread_cpu(
    a: &PointExplain,
    b: &PointExplain,
    delta: f64,
    noise: (Option<f64>, Option<f64>),
    within: Vec<CauseGrowth>,
    named: &mut Vec<CauseGrowth>,
) -> Vec<CauseGrowth> {
    let mut left = within;
    for (system, kind, what) in [
        (
            true,
            CauseKind::SystemCpu,
            "system CPU spread over functions, each within noise",
        ),
        (
            false,
            CauseKind::UserCpu,
            "user CPU spread over functions, each within noise",
        ),
    ] {
        let side = |p: &PointExplain| -> (f64, Vec<f64>) {
            let per_trial = p
                .trial_cpu
                .iter()
                .map(|&(u, s)| if system { s } else { u })
                .collect();
            let median = if system {
                p.accounting.system_ns
            } else {
                p.accounting.user_ns
            };
            (median, per_trial)
        };
        let ((from_cpu, from_trials), (to_cpu, to_trials)) = (side(a), side(b));
        let verdict = decide(to_cpu - from_cpu, delta, &from_trials, &to_trials, noise);
        if verdict.rule != NoiseRule::TrialsSeparate || !verdict.beyond {
            continue;
        }
        let (mut mine, rest): (Vec<_>, Vec<_>) = left.into_iter().partition(|g| {
            g.cause.kind == CauseKind::Function && is_kernel_function(&g.cause) == system
        });
        left = rest;
        // One function holding most of the side's growth is named itself, on the accounting's
        // per-trial verdict: the CPU grew, and the profile puts it there.
        let grew = to_cpu - from_cpu;
        let moved: f64 = mine
            .iter()
            .filter(|g| g.delta_ns.signum() == grew.signum())
            .map(|g| g.delta_ns)
            .sum();
        if let Some(k) = mine.iter().position(|g| {
            g.delta_ns.signum() == grew.signum()
                && g.delta_ns.abs() >= DOMINANT_SHARE * moved.abs()
                && is_material(g.delta_ns, delta, noise)
        }) {
            let mut one = mine.remove(k);
            one.noise = verdict;
            named.push(one);
        }
        let (from, to): (f64, f64) = mine
            .iter()
            .fold((0.0, 0.0), |(f, t), g| (f + g.from_ns, t + g.to_ns));
        let d = to - from;
        let material = is_material(d, delta, noise);
        // Named only when it moves the way the accounting's CPU did, and matters.
        if !material || d.signum() != (to_cpu - from_cpu).signum() {
            left.extend(mine);
            continue;
        }
        let what = match system {
            true => match under_syscalls(b, &mine) {
                Some(calls) => format!("{what} (under {calls})"),
                None => what.to_owned(),
            },
            false => what.to_owned(),
        };
        let mut top = mine.clone();
        top.sort_by(|x, y| y.delta_ns.abs().total_cmp(&x.delta_ns.abs()));
        let evidence = top
            .iter()
            .take(8)
            .map(|g| {
                format!(
                    "{} ({}) {:+.0} ns",
                    g.cause.what, g.cause.object, g.delta_ns
                )
            })
            .collect();
        named.push(CauseGrowth {
            cause: Cause {
                kind,
                what,
                object: String::new(),
                caller: String::new(),
                source: "profile",
                evidence,
                ended_by: Vec::new(),
                under: None,
                call_sites: Vec::new(),
                held_by: Vec::new(),
                via: None,
            },
            from_ns: from,
            to_ns: to,
            delta_ns: d,
            share_pct: (delta > 0.0).then(|| d / delta * 100.0),
            interval_ns: growth_interval(&from_trials, &to_trials),
            noise: verdict,
        });
    }
    left
}

/// The system calls the growing functions of `group` ran under at `b`, each with its share of
/// their growth and its main caller (`futex() 63% from futex_mutex_lock`): the calls of at least
/// a fifth of the growth, at most three, each function's calls weighted by its growth; `None`
/// when none reaches a fifth.
fn under_syscalls(b: &PointExplain, group: &[CauseGrowth]) -> Option<String> {
    // (system call, or None outside any) -> (weight, weight per caller)
    type Tally = (f64, Vec<(Option<String>, f64)>);
    let mut calls: Vec<(Option<String>, Tally)> = Vec::new();
    for g in group.iter().filter(|g| g.delta_ns > 0.0) {
        let Some(seen) = b.syscalls.get(&g.cause.what) else {
            continue;
        };
        let samples: u64 = seen.iter().map(|(_, c)| c).sum();
        for (label, count) in seen {
            let w = g.delta_ns * *count as f64 / samples.max(1) as f64;
            let (call, caller) = match label.as_deref().map(|l| l.split_once("() from ")) {
                Some(Some((call, caller))) => (Some(call.to_owned()), Some(caller.to_owned())),
                Some(None) => (
                    label
                        .as_deref()
                        .map(|l| l.trim_end_matches("()").to_owned()),
                    None,
                ),
                None => (None, None),
            };
            let k = match calls.iter().position(|(c, _)| *c == call) {
                Some(k) => k,
                None => {
                    calls.push((call, (0.0, Vec::new())));
                    calls.len() - 1
                }
            };
            let (sum, callers) = &mut calls[k].1;
            *sum += w;
            match callers.iter_mut().find(|(c, _)| *c == caller) {
                Some((_, cw)) => *cw += w,
                None => callers.push((caller, w)),
            }
        }
    }
    let total: f64 = calls.iter().map(|(_, (w, _))| w).sum();
    calls.sort_by(|x, y| y.1.0.total_cmp(&x.1.0));
    let named: Vec<String> = calls
        .iter()
        .filter(|(_, (w, _))| total > 0.0 && *w / total >= 0.2)
        .take(3)
        .map(|(call, (w, callers))| {
            let share = format!("{:.0}%", w / total * 100.0);
            let Some(call) = call else {
                return format!("no system call {share}");
            };
            let main = callers
                .iter()
                .max_by(|x, y| x.1.total_cmp(&y.1))
                .and_then(|(c, _)| c.as_deref());
            match main {
                Some(c) => format!("{call}() {share} from {c}"),
                None => format!("{call}() {share}"),
            }
        })
        .collect();
    (!named.is_empty()).then(|| named.join(", "))
}

fn find<'a>(parts: &'a [Part], c: &Cause) -> Option<&'a Part> {
    let k = key(c);
    parts.iter().find(|p| key(&p.cause) == k)
}

/// The growth from `a` to `b` (the smallest and the largest N).
pub(crate) fn attribute(a: &PointExplain, b: &PointExplain) -> GrowthAccount {
    let delta = b.accounting.ns_per_op_task - a.accounting.ns_per_op_task;
    let noise_a = whole_noise(a.accounting.cv, a.accounting.ns_per_op_task);
    let noise_b = whole_noise(b.accounting.cv, b.accounting.ns_per_op_task);
    let mut seen = Vec::new();
    let mut all = Vec::new();
    for p in b.parts.iter().chain(&a.parts) {
        let k = key(&p.cause);
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let pa = find(&a.parts, &p.cause);
        let pb = find(&b.parts, &p.cause);
        let from = pa.map_or(0.0, |p| p.ns_per_op);
        let to = pb.map_or(0.0, |p| p.ns_per_op);
        // A cause absent from a trace's trials was 0 in each of them.
        let zeros = |k: usize| vec![0.0; k];
        let from_trials =
            pa.map_or_else(|| zeros(a.trace_trials(&p.cause)), |p| p.per_trial.clone());
        let to_trials = pb.map_or_else(|| zeros(b.trace_trials(&p.cause)), |p| p.per_trial.clone());
        let d = to - from;
        all.push(CauseGrowth {
            cause: pb
                .or(pa)
                .map_or_else(|| p.cause.clone(), |p| p.cause.clone()),
            from_ns: from,
            to_ns: to,
            delta_ns: d,
            share_pct: (delta > 0.0).then(|| d / delta * 100.0),
            interval_ns: growth_interval(&from_trials, &to_trials),
            noise: decide(d, delta, &from_trials, &to_trials, (noise_a, noise_b)),
        });
    }
    let (mut named, within): (Vec<_>, Vec<_>) = all.into_iter().partition(|g| g.noise.beyond);
    let mut within = spread_cpu(a, b, delta, (noise_a, noise_b), within, &mut named);
    named.sort_by(|x, y| y.delta_ns.total_cmp(&x.delta_ns));
    within.retain(|g| g.delta_ns != 0.0);
    within.sort_by(|x, y| y.delta_ns.abs().total_cmp(&x.delta_ns.abs()));
    within.truncate(10);
    let unexplained = delta - named.iter().map(|g| g.delta_ns).sum::<f64>();
    let noise = decide(
        delta,
        delta,
        &a.trial_total,
        &b.trial_total,
        (noise_a, noise_b),
    );
    GrowthAccount {
        noise,
        from_n: a.n,
        to_n: b.n,
        from_ns: a.accounting.ns_per_op_task,
        to_ns: b.accounting.ns_per_op_task,
        delta_ns: delta,
        named,
        within_noise: within,
        unexplained_ns: unexplained,
        unexplained_pct: (delta > 0.0).then(|| unexplained / delta * 100.0),
    }
}
