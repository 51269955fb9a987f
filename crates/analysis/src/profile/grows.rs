//! "What grows": functions ranked by cost per op at the largest N over N=1 — the core answer to
//! "what stops scaling". A function whose cost per op stays flat scales; one whose cost per op
//! grows with N (a lock, a shared cache line, a global list) is where the extra time goes.

use std::collections::BTreeSet;

use serde::Serialize;

use super::point::{PointProfile, is_lock_function};

/// Below this share at the largest N a function is noise, left out of the ratio ranking.
pub const MIN_SHARE: f64 = 0.5;

/// One function's growth between the first and the last profiled point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Growth {
    /// The symbol name, or `[unknown]`.
    pub name: String,
    /// `[kernel]`, or the mapped file's name.
    pub dso: String,
    /// Whether the function is kernel code.
    pub kernel: bool,
    /// A kernel lock or spin function (called out).
    pub lock: bool,
    /// Cost per op at the first N (`None`: not seen there).
    pub cost_first: Option<f64>,
    /// Cost per op at the last N.
    pub cost_last: f64,
    /// cost_last ÷ cost_first (`None` when it appears only at higher N).
    pub ratio: Option<f64>,
    /// cost_last − cost_first (absolute growth per op).
    pub growth: f64,
    /// Self share at the last N, in %.
    pub share_last: f64,
    /// Cost per op at every profiled N, in point order (`None` where absent).
    pub by_n: Vec<Option<f64>>,
    /// Seen only at N above the first.
    pub only_at_higher: bool,
}

/// The ranking for one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrowthReport {
    /// The profiled task counts, in order.
    pub points: Vec<u32>,
    /// `ns` or `cycles`: the unit of cost per op.
    pub unit: String,
    /// Ranked by ratio (new functions first), then by growth.
    pub rows: Vec<Growth>,
}

/// Ranks functions by cost per op at the last point over the first; `None` with fewer than two
/// profiled points or without ops.
pub fn what_grows(points: &[PointProfile]) -> Option<GrowthReport> {
    let (first, last) = (points.first()?, points.last()?);
    if points.len() < 2 || first.ops <= 0.0 || last.ops <= 0.0 {
        return None;
    }
    let keys: BTreeSet<String> = last.functions.iter().map(|f| f.key()).collect();
    let mut rows = Vec::new();
    for key in keys {
        let Some(l) = last.function(&key) else {
            continue;
        };
        let cost_last = l.cost_per_op.unwrap_or(0.0);
        if cost_last <= 0.0 {
            continue;
        }
        let cost_first = first.function(&key).and_then(|f| f.cost_per_op);
        let by_n: Vec<Option<f64>> = points
            .iter()
            .map(|p| p.function(&key).and_then(|f| f.cost_per_op))
            .collect();
        rows.push(Growth {
            name: l.name.clone(),
            dso: l.dso.clone(),
            kernel: l.kernel,
            lock: l.kernel && is_lock_function(&l.name),
            cost_first,
            cost_last,
            ratio: cost_first.filter(|&c| c > 0.0).map(|c| cost_last / c),
            growth: cost_last - cost_first.unwrap_or(0.0),
            share_last: l.self_share,
            only_at_higher: cost_first.is_none(),
            by_n,
        });
    }
    rows.sort_by(|a, b| {
        let noise = |g: &Growth| g.share_last < MIN_SHARE;
        let r = |g: &Growth| g.ratio.unwrap_or(f64::INFINITY);
        noise(a)
            .cmp(&noise(b))
            .then(r(b).total_cmp(&r(a)))
            .then(b.growth.total_cmp(&a.growth))
            .then_with(|| a.name.cmp(&b.name))
    });
    Some(GrowthReport {
        points: points.iter().map(|p| p.n).collect(),
        unit: last.unit.clone(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::FunctionRow;

    fn point(n: u32, funcs: &[(&str, f64)]) -> PointProfile {
        PointProfile {
            n,
            event: "cpu-clock".into(),
            unit: "ns".into(),
            files: vec![],
            ops: 100.0,
            samples: 100,
            period: 100,
            outside_window: 0,
            other_threads: 0,
            partner_period: 0,
            throttled: 0,
            lost: 0,
            functions: funcs
                .iter()
                .map(|(name, cost)| FunctionRow {
                    name: (*name).into(),
                    dso: "[kernel]".into(),
                    kernel: true,
                    self_share: 10.0,
                    total_share: 10.0,
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
    fn new_functions_rank_first_then_by_ratio() {
        let pts = [
            point(1, &[("clear_page_erms", 100.0), ("lru_add", 10.0)]),
            point(
                2,
                &[
                    ("clear_page_erms", 110.0),
                    ("lru_add", 40.0),
                    ("native_queued_spin_lock_slowpath", 30.0),
                ],
            ),
        ];
        let r = what_grows(&pts).unwrap();
        let names: Vec<&str> = r.rows.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "native_queued_spin_lock_slowpath",
                "lru_add",
                "clear_page_erms"
            ]
        );
        assert!(r.rows[0].only_at_higher && r.rows[0].lock);
        assert_eq!(r.rows[1].ratio, Some(4.0));
        assert!(what_grows(&pts[..1]).is_none());
    }
}
