//! A run's lock reports, aggregated: the `lock_stat`-like table at one N ([`at_point`]) and
//! "what grows" — lock wait per op by lock and caller at every N, ranked by its growth from the
//! smallest to the largest N ([`what_grows`]). Pure: reads a `RunData`, runs nothing.
//!
//! Trials of a point are merged per (side, lock, type, caller). A lock that is a heap object
//! (an inode's `i_rwsem`, a futex word) has a new address in every trial process, so rows merge
//! on the caller and type for those, as `lock_stat` merges lock instances into classes; a
//! static kernel lock merges on its symbol. Wait per op is the point's total wait divided by its
//! total ops, over the trials that traced locks.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use model::record::{LockContention, RunData};

/// Which side of the kernel boundary a lock lives on: kernel locks, or user (futex) locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockSide {
    /// Kernel locks (`lock:contention_begin`/`end`).
    Kernel,
    /// User-space locks (futex waits).
    User,
}

impl LockSide {
    /// `kernel` or `user`, as the JSON and the tables spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LockSide::Kernel => "kernel",
            LockSide::User => "user",
        }
    }
}

/// Which sides an aggregate covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockSides {
    /// Include kernel locks.
    pub kernel: bool,
    /// Include user (futex) locks.
    pub user: bool,
}

impl LockSides {
    /// Kernel and user locks.
    pub const BOTH: LockSides = LockSides {
        kernel: true,
        user: true,
    };
    fn iter(self) -> impl Iterator<Item = LockSide> {
        [(self.kernel, LockSide::Kernel), (self.user, LockSide::User)]
            .into_iter()
            .filter_map(|(on, s)| on.then_some(s))
    }
}

/// One (lock, type, caller) at one N, summed over the point's traced trials.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LockRow {
    /// Kernel or user lock.
    pub side: LockSide,
    /// Static symbol, an address (one trial), or `N addresses` (heap locks across trials).
    pub lock: String,
    /// The lock's type: `spinlock`, `rwsem:read`, `mutex`, `futex` …
    pub kind: String,
    /// The first function outside the lock and scheduler code (kernel), or the call site (user).
    pub caller: String,
    /// Over all traced trials of the point.
    pub contentions: u64,
    /// Summed wait, in ns.
    pub wait_total_ns: u64,
    /// The longest single wait, in ns.
    pub wait_max_ns: u64,
    /// The shortest single wait, in ns.
    pub wait_min_ns: u64,
    /// Mean wait per contention, in ns.
    pub wait_avg_ns: f64,
    /// Per trial (mean over the traced trials).
    pub contentions_per_trial: f64,
    /// Wait per trial, in ns (mean over the traced trials).
    pub wait_per_trial_ns: f64,
    /// Total wait / total ops of the traced trials.
    pub wait_per_op_ns: f64,
    /// Further call sites with their contention counts, most frequent first (at most 5).
    pub call_sites: Vec<(String, u64)>,
    /// Estimated from a sample of the waits (the in-kernel tracer): the waits sampled with
    /// their chains, and half the 95% interval of `wait_total_ns` from sampling alone (the
    /// trials' errors added in quadrature). `None`: every wait was traced.
    pub sampled: Option<(u64, u64)>,
}

/// The lock table of one N.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PointLocks {
    /// The task count.
    pub n: u32,
    /// Trials that carry a lock report.
    pub trials: usize,
    /// Ops done in those trials' windows.
    pub ops: u64,
    /// Those trials' windows together, in seconds.
    pub window_s: f64,
    /// Most wait first.
    pub rows: Vec<LockRow>,
    /// Records the kernel dropped (ring buffer full), summed over the trials.
    pub lost_records: u64,
    /// Each distinct note of the point's trials once.
    pub notes: Vec<String>,
}

#[derive(Debug, Default)]
struct Acc {
    contentions: u64,
    total: u64,
    max: u64,
    min: Option<u64>,
    locks: BTreeSet<String>,
    sites: BTreeMap<String, u64>,
    /// Sampled waits and the variance of `total` (ns²), when estimated.
    sampled: Option<(u64, f64)>,
}

type Key = (LockSide, String, String, String);
/// (wait per op in ns, contentions per trial) at one N.
type PerN = (f64, f64);

fn merge_key(side: LockSide, c: &LockContention) -> Key {
    let lock = if c.lock.starts_with("0x") {
        String::new()
    } else {
        c.lock.clone()
    };
    (side, lock, c.kind.clone(), c.caller.clone())
}

/// The lock table at `n`, or `None` when no trial of that point traced locks.
pub fn at_point(data: &RunData, n: u32, sides: LockSides) -> Option<PointLocks> {
    let traced: Vec<_> = data
        .trials
        .iter()
        .filter(|t| t.n == n)
        .filter_map(|t| t.outcome.measurement())
        .filter(|m| m.locks.is_some())
        .collect();
    if traced.is_empty() {
        return None;
    }
    let mut accs: BTreeMap<Key, Acc> = BTreeMap::new();
    let mut notes: Vec<String> = Vec::new();
    let (mut ops, mut lost, mut window) = (0u64, 0u64, 0.0);
    for m in &traced {
        let Some(report) = &m.locks else { continue };
        ops += m.ops();
        window += m.window.as_secs_f64();
        lost += report.lost_records;
        for note in &report.notes {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
        for side in sides.iter() {
            let rows = match side {
                LockSide::Kernel => &report.kernel,
                LockSide::User => &report.user,
            };
            for c in rows {
                let acc = accs.entry(merge_key(side, c)).or_default();
                acc.contentions += c.contentions;
                acc.total += c.wait_total.0;
                acc.max = acc.max.max(c.wait_max.0);
                acc.min = Some(acc.min.map_or(c.wait_min.0, |m| m.min(c.wait_min.0)));
                acc.locks.insert(c.lock.clone());
                for (site, k) in &c.call_sites {
                    *acc.sites.entry(site.clone()).or_default() += k;
                }
                if let Some(s) = c.sampled {
                    let (n, var) = acc.sampled.get_or_insert((0, 0.0));
                    *n += s.episodes;
                    *var += (s.error.0 as f64 / 1.96).powi(2);
                }
            }
        }
    }
    let k = traced.len() as f64;
    let mut rows: Vec<LockRow> = accs
        .into_iter()
        .map(|((side, _, kind, caller), acc)| {
            let lock = if acc.locks.len() == 1 {
                acc.locks.iter().next().cloned().unwrap_or_default()
            } else {
                format!("{} addresses", acc.locks.len())
            };
            let mut sites: Vec<(String, u64)> = acc.sites.into_iter().collect();
            sites.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            sites.truncate(5);
            LockRow {
                side,
                lock,
                kind,
                caller,
                contentions: acc.contentions,
                wait_total_ns: acc.total,
                wait_max_ns: acc.max,
                wait_min_ns: acc.min.unwrap_or(0),
                wait_avg_ns: if acc.contentions > 0 {
                    acc.total as f64 / acc.contentions as f64
                } else {
                    0.0
                },
                contentions_per_trial: acc.contentions as f64 / k,
                wait_per_trial_ns: acc.total as f64 / k,
                wait_per_op_ns: if ops > 0 {
                    acc.total as f64 / ops as f64
                } else {
                    0.0
                },
                call_sites: sites,
                sampled: acc
                    .sampled
                    .map(|(n, var)| (n, (1.96 * var.sqrt()).round() as u64)),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.wait_total_ns
            .cmp(&a.wait_total_ns)
            .then_with(|| a.caller.cmp(&b.caller))
    });
    Some(PointLocks {
        n,
        trials: traced.len(),
        ops,
        window_s: window,
        rows,
        lost_records: lost,
        notes,
    })
}

/// One (lock, type, caller) across the points.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GrowthRow {
    /// Kernel or user lock.
    pub side: LockSide,
    /// Static symbol, an address, or `N addresses`, as in [`LockRow::lock`].
    pub lock: String,
    /// The lock's type.
    pub kind: String,
    /// The first function outside the lock code, or the call site.
    pub caller: String,
    /// (N, wait per op in ns) for every traced point, 0 where the row is absent.
    pub wait_per_op_ns: Vec<(u32, f64)>,
    /// (N, contentions per trial).
    pub contentions_per_trial: Vec<(u32, f64)>,
    /// Wait per op at the largest N minus at the smallest N (ns).
    pub growth_ns: f64,
}

/// "What grows": every row of every point, ranked by the growth of its wait per op.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LockGrowth {
    /// The run's task counts, in order.
    pub points: Vec<u32>,
    /// Ranked by `growth_ns`, largest first.
    pub rows: Vec<GrowthRow>,
    /// Total lock wait per op at each point, per side.
    pub totals: Vec<(LockSide, Vec<(u32, f64)>)>,
    /// Records the kernel dropped, summed over the points.
    pub lost_records: u64,
    /// Each distinct note of the run's trials once.
    pub notes: Vec<String>,
}

/// Ranks lock wait per op by its growth from the smallest to the largest traced N.
pub fn what_grows(data: &RunData, sides: LockSides) -> Option<LockGrowth> {
    let mut ns: Vec<u32> = data.trials.iter().map(|t| t.n).collect();
    ns.sort_unstable();
    ns.dedup();
    let points: Vec<PointLocks> = ns
        .iter()
        .filter_map(|&n| at_point(data, n, sides))
        .collect();
    if points.is_empty() {
        return None;
    }
    let ns: Vec<u32> = points.iter().map(|p| p.n).collect();
    // Per key: the lock as first shown, and (wait per op, contentions per trial) by N.
    let mut table: BTreeMap<Key, (String, BTreeMap<u32, PerN>)> = BTreeMap::new();
    for p in &points {
        for r in &p.rows {
            let key = (
                r.side,
                if r.lock.starts_with("0x") || r.lock.ends_with(" addresses") {
                    String::new()
                } else {
                    r.lock.clone()
                },
                r.kind.clone(),
                r.caller.clone(),
            );
            let entry = table
                .entry(key)
                .or_insert_with(|| (r.lock.clone(), BTreeMap::new()));
            entry
                .1
                .insert(p.n, (r.wait_per_op_ns, r.contentions_per_trial));
        }
    }
    let mut rows: Vec<GrowthRow> = table
        .into_iter()
        .map(|((side, _, kind, caller), (lock, by_n))| {
            let per_op: Vec<(u32, f64)> = ns
                .iter()
                .map(|&n| (n, by_n.get(&n).map_or(0.0, |v| v.0)))
                .collect();
            let per_trial: Vec<(u32, f64)> = ns
                .iter()
                .map(|&n| (n, by_n.get(&n).map_or(0.0, |v| v.1)))
                .collect();
            let growth = per_op.last().map_or(0.0, |l| l.1) - per_op.first().map_or(0.0, |f| f.1);
            GrowthRow {
                side,
                lock,
                kind,
                caller,
                wait_per_op_ns: per_op,
                contentions_per_trial: per_trial,
                growth_ns: growth,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.growth_ns
            .total_cmp(&a.growth_ns)
            .then_with(|| a.caller.cmp(&b.caller))
    });
    let totals = sides
        .iter()
        .map(|side| {
            let per_n = points
                .iter()
                .map(|p| {
                    let wait: u64 = p
                        .rows
                        .iter()
                        .filter(|r| r.side == side)
                        .map(|r| r.wait_total_ns)
                        .sum();
                    (
                        p.n,
                        if p.ops > 0 {
                            wait as f64 / p.ops as f64
                        } else {
                            0.0
                        },
                    )
                })
                .collect();
            (side, per_n)
        })
        .collect();
    let mut notes = Vec::new();
    for p in &points {
        for note in &p.notes {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
    }
    Some(LockGrowth {
        points: ns,
        rows,
        totals,
        lost_records: points.iter().map(|p| p.lost_records).sum(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::{LockReport, Nanos, TrialOutcome, TrialRecord};
    use model::test_runs;

    fn contention(lock: &str, caller: &str, k: u64, total: u64) -> LockContention {
        LockContention {
            lock: lock.into(),
            kind: "rwsem:write".into(),
            caller: caller.into(),
            contentions: k,
            wait_total: Nanos(total),
            wait_max: Nanos(total / k.max(1) * 2),
            wait_min: Nanos(1),
            call_sites: vec![(format!("{caller}+0x10"), k)],
            sampled: None,
        }
    }

    fn trial(n: u32, ops: u64, kernel: Vec<LockContention>) -> TrialRecord {
        TrialRecord {
            n,
            index: 0,
            started_at: String::new(),
            outcome: TrialOutcome::Ok({
                let mut m = test_runs::measurement(ops as f64);
                m.locks = Some(LockReport {
                    kernel,
                    ..LockReport::default()
                });
                m
            }),
        }
    }

    fn run(trials: Vec<TrialRecord>) -> RunData {
        let mut data = test_runs::run(1, "create_unlink", &[]);
        data.trials = trials;
        data
    }

    #[test]
    fn heap_locks_of_different_trials_merge_on_caller_and_type() {
        let data = run(vec![
            trial(
                2,
                1000,
                vec![contention("0xffff1", "do_unlinkat", 10, 5000)],
            ),
            trial(
                2,
                1000,
                vec![contention("0xffff2", "do_unlinkat", 30, 15000)],
            ),
        ]);
        let p = at_point(&data, 2, LockSides::BOTH).unwrap();
        assert_eq!(p.rows.len(), 1);
        let r = &p.rows[0];
        assert_eq!(r.lock, "2 addresses");
        assert_eq!((r.contentions, r.wait_total_ns), (40, 20000));
        assert_eq!(r.contentions_per_trial, 20.0);
        assert_eq!(r.wait_per_op_ns, 10.0);
        assert_eq!(r.wait_avg_ns, 500.0);
        assert!(at_point(&data, 4, LockSides::BOTH).is_none());
        let user_only = at_point(
            &data,
            2,
            LockSides {
                kernel: false,
                user: true,
            },
        )
        .unwrap();
        assert!(user_only.rows.is_empty());
    }

    #[test]
    fn growth_ranks_the_row_whose_wait_per_op_grows_most() {
        let data = run(vec![
            trial(
                1,
                1000,
                vec![contention("inode_hash_lock", "evict", 1, 1000)],
            ),
            trial(
                2,
                1000,
                vec![
                    contention("inode_hash_lock", "evict", 2, 2000),
                    contention("0xffff9", "do_unlinkat", 50, 90000),
                ],
            ),
        ]);
        let g = what_grows(&data, LockSides::BOTH).unwrap();
        assert_eq!(g.points, vec![1, 2]);
        assert_eq!(g.rows[0].caller, "do_unlinkat");
        assert_eq!(g.rows[0].wait_per_op_ns, vec![(1, 0.0), (2, 90.0)]);
        assert_eq!(g.rows[0].growth_ns, 90.0);
        assert_eq!(g.rows[1].lock, "inode_hash_lock");
        assert_eq!(g.rows[1].growth_ns, 1.0);
        assert_eq!(g.totals[0].1, vec![(1, 1.0), (2, 92.0)]);
    }
}
