//! Which parts of an explanation's cost per op the report's pictures draw, and in what colour:
//! the same parts and numbers as `scalelab explain --json`, fewer of them named.
//!
//! Per N the parts are the explanation's causes (`points[].parts`) and its two unexplained
//! rests (`cpu_unexplained_ns`, `offcpu_unexplained_ns`); they add up to that N's
//! `ns/op/task`. The [`NAMED`] causes largest at any N are drawn each on its own; the rest of
//! each kind is drawn as one part (`other functions`), the cost of measuring always as one.
//! Nothing here computes a figure: a folded part is the sum of the explanation's own values.
//! Colours are the report's palette ([`super::plot::palette_rgb`]), lightened for lesser
//! parts of the same kind.

use std::collections::HashMap;

use analysis::explain::{Cause, CauseKind, Explanation};

use super::legend::escape;
use super::plot::palette_rgb;
use crate::explain_text::cause_label;

/// How many causes are drawn on their own; the rest are folded by kind.
pub(super) const NAMED: usize = 8;

/// What one drawn part is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Identity {
    /// One cause of the explanation.
    Cause {
        kind: CauseKind,
        what: String,
        object: String,
        caller: String,
    },
    /// Every cause of `kind` not drawn on its own.
    Rest(CauseKind),
    /// CPU the split by function and spinning leaves (`cpu_unexplained_ns`).
    CpuUnexplained,
    /// Blocked time no trace accounts for (`offcpu_unexplained_ns`).
    BlockedUnexplained,
}

/// One part of the legend: what it is, its name and colour.
#[derive(Debug, Clone)]
pub(super) struct PartKey {
    pub(super) identity: Identity,
    pub(super) label: String,
    pub(super) rgb: (u8, u8, u8),
}

impl PartKey {
    /// Whether it is an unexplained rest (drawn as an outline).
    pub(super) fn unexplained(&self) -> bool {
        matches!(
            self.identity,
            Identity::CpuUnexplained | Identity::BlockedUnexplained
        )
    }

    /// Its data attributes: `data-part`, `data-kind`, and for one cause its `what`, `object`
    /// and `caller`, the fields `explain --json` names it by. Values escaped.
    pub(super) fn data_attributes(&self) -> String {
        let mut a = format!(" data-part=\"{}\"", escape(&self.label));
        match &self.identity {
            Identity::Cause {
                kind,
                what,
                object,
                caller,
            } => a.push_str(&names(*kind, what, object, caller)),
            Identity::Rest(kind) => {
                a.push_str(&format!(
                    " data-kind=\"{}\" data-rest=\"true\"",
                    kind_name(*kind)
                ));
            }
            Identity::CpuUnexplained => a.push_str(" data-kind=\"cpu_unexplained\""),
            Identity::BlockedUnexplained => a.push_str(" data-kind=\"offcpu_unexplained\""),
        }
        a
    }
}

/// The parts of every N: the legend (bottom of a stack first) and each N's values.
#[derive(Debug, Clone)]
pub(super) struct CostParts {
    pub(super) keys: Vec<PartKey>,
    pub(super) points: Vec<PointParts>,
}

/// One N's bar.
#[derive(Debug, Clone)]
pub(super) struct PointParts {
    pub(super) n: u32,
    /// Its `ns/op/task`.
    pub(super) total: f64,
    /// (key index, ns per op), in legend order; a part not seen at this N is absent.
    pub(super) values: Vec<(usize, f64)>,
}

/// One cause's data attributes: `data-part` (its label) and the names of
/// [`PartKey::data_attributes`].
pub(super) fn cause_attributes(label: &str, c: &Cause) -> String {
    format!(
        " data-part=\"{}\"{}",
        escape(label),
        names(c.kind, &c.what, &c.object, &c.caller)
    )
}

fn names(kind: CauseKind, what: &str, object: &str, caller: &str) -> String {
    format!(
        " data-kind=\"{}\" data-what=\"{}\" data-object=\"{}\" data-caller=\"{}\"",
        kind_name(kind),
        escape(what),
        escape(object),
        escape(caller)
    )
}

/// `kind` as `explain --json` writes it (`user_lock`, `function` …).
pub(super) fn kind_name(kind: CauseKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn identity(c: &Cause) -> Identity {
    Identity::Cause {
        kind: c.kind,
        what: c.what.clone(),
        object: c.object.clone(),
        caller: c.caller.clone(),
    }
}

/// Stacking order of the kinds: CPU at the bottom, then measuring, the wait for a CPU, steal,
/// and the waits on top.
fn rank(kind: CauseKind) -> u8 {
    match kind {
        CauseKind::Function => 0,
        CauseKind::UserCpu => 1,
        CauseKind::SystemCpu => 2,
        CauseKind::KernelSpin => 3,
        CauseKind::Measurement => 5,
        CauseKind::RunQueue => 6,
        CauseKind::Steal => 7,
        CauseKind::UserLock => 8,
        CauseKind::KernelLock => 9,
        CauseKind::Blocking => 10,
        CauseKind::Blocked => 11,
    }
}

/// The palette colour of a kind: CPU blue, spinning purple, waits red, the run queue orange,
/// steal green, measuring grey.
fn base(kind: CauseKind) -> usize {
    match kind {
        CauseKind::Function | CauseKind::UserCpu | CauseKind::SystemCpu => 0,
        CauseKind::UserLock | CauseKind::KernelLock | CauseKind::Blocking | CauseKind::Blocked => 1,
        CauseKind::Steal => 2,
        CauseKind::KernelSpin => 3,
        CauseKind::RunQueue => 4,
        CauseKind::Measurement => 5,
    }
}

/// The palette colour `i` mixed with white by `t` (0: itself, 1: white).
fn tint(i: usize, t: f64) -> (u8, u8, u8) {
    let (r, g, b) = palette_rgb(i);
    let mix = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * t).round() as u8;
    (mix(r), mix(g), mix(b))
}

/// How much lighter the `k`-th part of one colour is drawn.
fn lightness(k: usize) -> f64 {
    [0.0, 0.2, 0.35, 0.47, 0.57, 0.65, 0.72, 0.78, 0.83, 0.87][k.min(9)]
}

fn rest_label(kind: CauseKind) -> &'static str {
    match kind {
        CauseKind::Function => "other functions",
        CauseKind::KernelSpin => "other kernel spinning",
        CauseKind::Measurement => "measuring (profile and traces)",
        CauseKind::UserLock => "other user-lock waits",
        CauseKind::KernelLock => "other kernel-lock waits",
        CauseKind::Blocking => "other blocking",
        CauseKind::Blocked => "other blocked time",
        CauseKind::Steal => "other steal",
        CauseKind::RunQueue => "other run-queue wait",
        CauseKind::UserCpu => "other user CPU",
        CauseKind::SystemCpu => "other system CPU",
    }
}

/// The parts of `e` to draw.
pub(super) fn cost_parts(e: &Explanation) -> CostParts {
    // Each cause's largest cost per op at any N, to pick the ones named; its label is the
    // largest N's, as in the growth table (a wait for a CPU names who held them there).
    let mut largest: Vec<(Identity, CauseKind, String, f64)> = Vec::new();
    for p in e.points.iter().rev() {
        for part in &p.parts {
            let id = identity(&part.cause);
            match largest.iter_mut().find(|l| l.0 == id) {
                Some(l) => l.3 = l.3.max(part.ns_per_op),
                None => largest.push((
                    id,
                    part.cause.kind,
                    cause_label(&part.cause),
                    part.ns_per_op,
                )),
            }
        }
    }
    let mut by_size: Vec<usize> = (0..largest.len())
        .filter(|&i| largest[i].1 != CauseKind::Measurement)
        .collect();
    by_size.sort_by(|&a, &b| largest[b].3.total_cmp(&largest[a].3));
    let named: Vec<usize> = by_size.into_iter().take(NAMED).collect();

    let mut keys: Vec<(u8, PartKey)> = Vec::new();
    for &i in &named {
        let (id, kind, label, _) = &largest[i];
        keys.push((
            rank(*kind),
            PartKey {
                identity: id.clone(),
                label: label.clone(),
                rgb: (0, 0, 0),
            },
        ));
    }
    let folded: Vec<CauseKind> = {
        let mut kinds: Vec<CauseKind> = (0..largest.len())
            .filter(|i| !named.contains(i))
            .map(|i| largest[i].1)
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    };
    for kind in folded {
        keys.push((
            rank(kind),
            PartKey {
                identity: Identity::Rest(kind),
                label: rest_label(kind).into(),
                rgb: (0, 0, 0),
            },
        ));
    }
    if e.points.iter().any(|p| p.cpu_unexplained_ns.is_some()) {
        keys.push((
            4,
            PartKey {
                identity: Identity::CpuUnexplained,
                label: "CPU unexplained".into(),
                rgb: (0, 0, 0),
            },
        ));
    }
    if e.points.iter().any(|p| p.offcpu_unexplained_ns.is_some()) {
        keys.push((
            12,
            PartKey {
                identity: Identity::BlockedUnexplained,
                label: "blocked, unexplained".into(),
                rgb: (0, 0, 0),
            },
        ));
    }
    // Stable: within a kind, named causes (largest first) before the rest.
    keys.sort_by_key(|k| k.0);
    let mut shade: HashMap<usize, usize> = HashMap::new();
    let keys: Vec<PartKey> = keys
        .into_iter()
        .map(|(_, mut k)| {
            k.rgb = match &k.identity {
                Identity::Cause { kind, .. } | Identity::Rest(kind) => {
                    let colour = base(*kind);
                    let n = shade.entry(colour).or_insert(0);
                    let rgb = tint(colour, lightness(*n));
                    *n += 1;
                    rgb
                }
                Identity::CpuUnexplained => tint(0, 0.9),
                Identity::BlockedUnexplained => tint(1, 0.9),
            };
            k
        })
        .collect();

    let points = e
        .points
        .iter()
        .map(|p| {
            let mut values: Vec<(usize, f64)> = Vec::new();
            let mut add = |k: usize, ns: f64| match values.iter_mut().find(|v| v.0 == k) {
                Some(v) => v.1 += ns,
                None => values.push((k, ns)),
            };
            for part in &p.parts {
                let id = identity(&part.cause);
                let k = keys.iter().position(|k| k.identity == id).or_else(|| {
                    keys.iter()
                        .position(|k| k.identity == Identity::Rest(part.cause.kind))
                });
                if let Some(k) = k {
                    add(k, part.ns_per_op);
                }
            }
            for (value, id) in [
                (p.cpu_unexplained_ns, Identity::CpuUnexplained),
                (p.offcpu_unexplained_ns, Identity::BlockedUnexplained),
            ] {
                if let (Some(ns), Some(k)) = (value, keys.iter().position(|k| k.identity == id)) {
                    add(k, ns);
                }
            }
            values.sort_by_key(|v| v.0);
            PointParts {
                n: p.n,
                total: p.accounting.ns_per_op_task,
                values,
            }
        })
        .collect();
    CostParts { keys, points }
}

/// The colour `parts` gives `cause` (its own, else its kind's folded part's), or its kind's.
pub(super) fn colour_of(parts: &CostParts, cause: &Cause) -> (u8, u8, u8) {
    let id = identity(cause);
    parts
        .keys
        .iter()
        .find(|k| k.identity == id)
        .or_else(|| {
            parts
                .keys
                .iter()
                .find(|k| k.identity == Identity::Rest(cause.kind))
        })
        .map_or_else(|| tint(base(cause.kind), 0.0), |k| k.rgb)
}

#[cfg(test)]
mod tests {
    use analysis::explain::explain;
    use lab::test_runs::explained_run;

    use super::*;

    #[test]
    fn the_parts_of_each_n_add_up_to_its_time_per_op_and_fold_beyond_the_named() {
        let e = explain(&explained_run(), &[]).unwrap();
        let parts = cost_parts(&e);
        assert_eq!(parts.points.len(), e.points.len());
        for PointParts { n, total, values } in &parts.points {
            let sum: f64 = values.iter().map(|v| v.1).sum();
            assert!(
                (sum - total).abs() <= 1e-6 * total,
                "N={n}: {sum} ≠ {total}"
            );
        }
        let causes = parts
            .keys
            .iter()
            .filter(|k| matches!(k.identity, Identity::Cause { .. }))
            .count();
        assert!((1..=NAMED).contains(&causes), "{:?}", parts.keys);
        // Every colour tells its part apart.
        let mut colours: Vec<_> = parts.keys.iter().map(|k| k.rgb).collect();
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), parts.keys.len(), "{:?}", parts.keys);
    }
}
