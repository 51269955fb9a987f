//! Run against run at one N, function by function, with `perf diff` semantics: functions are
//! matched by symbol name; for each, the change in self share (percentage points) and in cost
//! per op, plus the functions new in the second run and those that vanished from it.

use std::collections::BTreeSet;

use serde::Serialize;

use super::point::PointProfile;

/// Whether a function is in both profiles or only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    /// In both profiles.
    Both,
    /// Only in the second (B) profile.
    New,
    /// Only in the first (A) profile.
    Vanished,
}

/// One function across the two profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDiff {
    /// The symbol name, or `[unknown]`.
    pub name: String,
    /// `[kernel]`, or the mapped file's name.
    pub dso: String,
    /// Whether the function is kernel code.
    pub kernel: bool,
    /// Self share in A's profile, in % (0 when absent).
    pub share_a: f64,
    /// Self share in B's profile, in % (0 when absent).
    pub share_b: f64,
    /// share_b − share_a, in percentage points (perf diff's "Delta").
    pub delta_share: f64,
    /// Cost per op in A (ns or cycles per op); `None` when absent or without ops.
    pub cost_a: Option<f64>,
    /// Cost per op in B; `None` when absent or without ops.
    pub cost_b: Option<f64>,
    /// (cost_b − cost_a) ÷ cost_a, in %.
    pub cost_change_pct: Option<f64>,
    /// In both profiles, only in B, or only in A.
    pub presence: Presence,
}

/// Matches the functions of `a` and `b`, largest |Δ share| first.
pub fn diff(a: &PointProfile, b: &PointProfile) -> Vec<FunctionDiff> {
    let keys: BTreeSet<String> = a
        .functions
        .iter()
        .chain(&b.functions)
        .map(|f| f.key())
        .collect();
    let mut rows: Vec<FunctionDiff> = keys
        .into_iter()
        .filter_map(|key| {
            let (fa, fb) = (a.function(&key), b.function(&key));
            let any = fb.or(fa)?;
            let share_a = fa.map_or(0.0, |f| f.self_share);
            let share_b = fb.map_or(0.0, |f| f.self_share);
            let cost_a = fa.and_then(|f| f.cost_per_op);
            let cost_b = fb.and_then(|f| f.cost_per_op);
            Some(FunctionDiff {
                name: any.name.clone(),
                dso: any.dso.clone(),
                kernel: any.kernel,
                share_a,
                share_b,
                delta_share: share_b - share_a,
                cost_a,
                cost_b,
                cost_change_pct: match (cost_a, cost_b) {
                    (Some(x), Some(y)) if x > 0.0 => Some(100.0 * (y - x) / x),
                    _ => None,
                },
                presence: match (fa, fb) {
                    (Some(_), Some(_)) => Presence::Both,
                    (None, _) => Presence::New,
                    (_, None) => Presence::Vanished,
                },
            })
        })
        .collect();
    rows.sort_by(|x, y| {
        y.delta_share
            .abs()
            .total_cmp(&x.delta_share.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::FunctionRow;

    fn point(funcs: &[(&str, f64, f64)]) -> PointProfile {
        PointProfile {
            n: 2,
            event: "cpu-clock".into(),
            unit: "ns".into(),
            files: vec![],
            ops: 10.0,
            samples: 10,
            period: 10,
            outside_window: 0,
            other_threads: 0,
            partner_period: 0,
            throttled: 0,
            lost: 0,
            functions: funcs
                .iter()
                .map(|(name, share, cost)| FunctionRow {
                    name: (*name).into(),
                    dso: "[kernel]".into(),
                    kernel: true,
                    self_share: *share,
                    total_share: *share,
                    self_samples: 1,
                    total_samples: 1,
                    cost_per_op: Some(*cost),
                    total_cost_per_op: Some(*cost),
                    size: None,
                    load: None,
                })
                .collect(),
            dsos: vec![],
            folded: vec![],
            notes: vec![],
            trials: vec![],
            servers: None,
        }
    }

    #[test]
    fn matches_by_name_and_flags_new_and_vanished() {
        let a = point(&[("f", 50.0, 100.0), ("gone", 10.0, 20.0)]);
        let b = point(&[("f", 30.0, 50.0), ("fresh", 20.0, 40.0)]);
        let d = diff(&a, &b);
        assert_eq!(d[0].name, "f");
        assert_eq!(d[0].delta_share, -20.0);
        assert_eq!(d[0].cost_change_pct, Some(-50.0));
        let fresh = d.iter().find(|r| r.name == "fresh").unwrap();
        assert_eq!(fresh.presence, Presence::New);
        let gone = d.iter().find(|r| r.name == "gone").unwrap();
        assert_eq!(gone.presence, Presence::Vanished);
    }
}
