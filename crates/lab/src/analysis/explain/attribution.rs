//! The growth from the smallest to the largest N, attributed: every ns of extra cost per op
//! goes to a named cause (ranked, largest first) or to **unexplained**, never dropped.
//!
//! The causes at each N are the finest split the evidence allows: blocked time by off-CPU site
//! or lock wait, CPU time by function and kernel spinning, run-queue wait; an accounting part
//! with no split (no profile, no trace) is a cause of its own. What the splits leave over (the
//! part of blocked time no trace saw, the part of CPU no function holds) and the causes within
//! the noise make up the unexplained rest.

use serde::Serialize;

use super::PointExplain;
use super::cause::{Cause, Part, key};
use super::noise::{NoiseVerdict, decide, whole_noise};

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
    /// The noise decision.
    pub noise: NoiseVerdict,
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
    /// Growth no named cause accounts for: `delta_ns − Σ named`.
    pub unexplained_ns: f64,
    /// Its share of the growth, in % (`None` when the total did not grow).
    pub unexplained_pct: Option<f64>,
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
            noise: decide(d, delta, &from_trials, &to_trials, (noise_a, noise_b)),
        });
    }
    all.sort_by(|x, y| y.delta_ns.total_cmp(&x.delta_ns));
    let (named, mut within): (Vec<_>, Vec<_>) = all.into_iter().partition(|g| g.noise.beyond);
    within.retain(|g| g.delta_ns != 0.0);
    within.sort_by(|x, y| y.delta_ns.abs().total_cmp(&x.delta_ns.abs()));
    within.truncate(10);
    let unexplained = delta - named.iter().map(|g| g.delta_ns).sum::<f64>();
    GrowthAccount {
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
