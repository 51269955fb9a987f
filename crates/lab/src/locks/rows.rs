//! From attributed waits to the report's rows, one per (lock, kind, caller): summed as they
//! are when every wait was traced (the perf tracer), estimated when the waits are a sample of
//! exact per-lock sums (the in-kernel tracer, `perf::BpfLockTracer`).
//!
//! The estimate: a lock's exact count and time (from the kernel) are shared out between its
//! callers in the proportions of its sampled waits, each weighted by the `k` it was sampled 1
//! in — the count by the weights (Horvitz-Thompson), the time by the weighted durations (a
//! ratio estimator scaled to the exact sum, as `--offcpu`'s sites are). When a lock has one
//! caller in the sample, its row is the lock's exact figures. A row's sampling error is its
//! share's (a ratio's linearised variance, Σ k(k-1)·e² over the lock's sampled waits, e a
//! wait's scaled time in this caller less the share of it) times the lock's exact time: 0 for
//! a lock with one caller. A lock that ended waits in the window but had none sampled gets one
//! row, `(no call chain sampled)`, with its exact figures.

use std::collections::HashMap;

use model::record::{LockContention, Nanos, SiteSample};

/// How many deeper call sites a row keeps.
const CALL_SITES: usize = 5;
/// The caller of a lock none of whose waits was sampled.
pub(crate) const NOT_SAMPLED: &str = "(no call chain sampled)";

/// One traced wait, named and attributed.
#[derive(Debug, Clone)]
pub(crate) struct Attributed {
    /// The lock as the kernel's sums know it: (process, address, futex op or lock flags).
    pub key: (u32, u64, u32),
    pub lock: String,
    pub kind: String,
    pub caller: String,
    pub site: String,
    pub wait: u64,
    /// Sampled 1 in `weight` (1: every wait traced).
    pub weight: u32,
}

/// A lock's exact sums, named (`perf::LockTotal` with its row's lock and kind).
#[derive(Debug, Clone)]
pub(crate) struct NamedTotal {
    pub total: perf::LockTotal,
    pub lock: String,
    pub kind: String,
}

/// Running totals of one (lock, kind, caller) row.
#[derive(Debug, Default)]
struct Row {
    contentions: u64,
    total: u64,
    max: u64,
    min: u64,
    sites: HashMap<String, u64>,
    /// Estimated from a sample: how many waits of it were sampled, and the variance of its
    /// time (ns²).
    estimated: Option<(u64, f64)>,
}

impl Row {
    fn add(&mut self, wait: u64, site: String) {
        self.min = if self.contentions == 0 {
            wait
        } else {
            self.min.min(wait)
        };
        self.contentions += 1;
        self.total += wait;
        self.max = self.max.max(wait);
        *self.sites.entry(site).or_default() += 1;
    }

    /// Adds another process's part of the same (lock, kind, caller).
    fn merge(&mut self, other: Row) {
        self.min = if self.contentions == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.contentions += other.contentions;
        self.total += other.total;
        self.max = self.max.max(other.max);
        for (site, n) in other.sites {
            *self.sites.entry(site).or_default() += n;
        }
        if let Some((n, v)) = other.estimated {
            let (mine, var) = self.estimated.get_or_insert((0, 0.0));
            *mine += n;
            *var += v;
        }
    }
}

type Rows = HashMap<(String, String, String), Row>;

/// The rows of waits that are every one traced.
pub(crate) fn exact(waits: &[Attributed]) -> Vec<LockContention> {
    let mut rows = Rows::new();
    for w in waits {
        rows.entry((w.lock.clone(), w.kind.clone(), w.caller.clone()))
            .or_default()
            .add(w.wait, w.site.clone());
    }
    to_contentions(rows)
}

/// The rows of locks whose exact sums are `totals` and whose sampled waits are `waits`.
pub(crate) fn estimated(waits: &[Attributed], totals: &[NamedTotal]) -> Vec<LockContention> {
    let mut by_lock: HashMap<(u32, u64, u32), Vec<&Attributed>> = HashMap::new();
    for w in waits {
        by_lock.entry(w.key).or_default().push(w);
    }
    let mut rows = Rows::new();
    for t in totals {
        let exact = &t.total;
        let key = (exact.pid, exact.lock, exact.op);
        let sampled = by_lock.remove(&key).unwrap_or_default();
        for (caller, row) in share_out(exact, &sampled) {
            match rows.entry((t.lock.clone(), t.kind.clone(), caller)) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().merge(row),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(row);
                }
            }
        }
    }
    to_contentions(rows)
}

/// One lock's exact sums shared out between the callers of its sampled waits.
fn share_out(exact: &perf::LockTotal, sampled: &[&Attributed]) -> Vec<(String, Row)> {
    if sampled.is_empty() {
        let row = Row {
            contentions: exact.count,
            total: exact.sum,
            max: exact.max,
            min: exact.min,
            sites: HashMap::new(),
            estimated: Some((0, 0.0)),
        };
        return vec![(NOT_SAMPLED.to_string(), row)];
    }
    let weight = |w: &Attributed| f64::from(w.weight.max(1));
    let all_weight: f64 = sampled.iter().map(|w| weight(w)).sum();
    let all_time: f64 = sampled.iter().map(|w| weight(w) * w.wait as f64).sum();
    // Each sampled wait's time scaled so that the weighted sample sums to the exact time.
    let scale = if all_time > 0.0 {
        exact.sum as f64 / all_time
    } else {
        0.0
    };
    let mut callers: HashMap<&str, Vec<&Attributed>> = HashMap::new();
    for w in sampled {
        callers.entry(w.caller.as_str()).or_default().push(w);
    }
    let mut callers: Vec<(&str, Vec<&Attributed>)> = callers.into_iter().collect();
    callers.sort_by(|a, b| a.0.cmp(b.0));
    let one_caller = callers.len() == 1;
    let count_share = |ws: &[&Attributed]| ws.iter().map(|w| weight(w)).sum::<f64>() / all_weight;
    let time_share = |ws: &[&Attributed]| {
        if all_time > 0.0 {
            ws.iter().map(|w| weight(w) * w.wait as f64).sum::<f64>() / all_time
        } else {
            count_share(ws)
        }
    };
    let counts = apportion(
        exact.count,
        &callers
            .iter()
            .map(|(_, ws)| count_share(ws))
            .collect::<Vec<_>>(),
    );
    let times = apportion(
        exact.sum,
        &callers
            .iter()
            .map(|(_, ws)| time_share(ws))
            .collect::<Vec<_>>(),
    );
    callers
        .into_iter()
        .zip(counts.into_iter().zip(times))
        .map(|((caller, ws), (contentions, total))| {
            let time_share = time_share(&ws);
            let mut sites: HashMap<String, f64> = HashMap::new();
            for w in &ws {
                *sites.entry(w.site.clone()).or_default() += weight(w);
            }
            // The ratio's linearised variance: each sampled wait of the lock adds k(k-1)·e²,
            // e its scaled time in this caller less the caller's share of it (0 for every
            // wait when the lock has one caller: its row is the lock's exact sum).
            let variance = sampled
                .iter()
                .map(|w| {
                    let k = weight(w);
                    let t = w.wait as f64 * scale;
                    let mine = if w.caller == caller { t } else { 0.0 };
                    let e = mine - time_share * t;
                    k * (k - 1.0) * e * e
                })
                .sum();
            let (max, min) = if one_caller {
                (exact.max, exact.min)
            } else {
                (
                    ws.iter().map(|w| w.wait).max().unwrap_or(0),
                    ws.iter().map(|w| w.wait).min().unwrap_or(0),
                )
            };
            let per_weight = exact.count as f64 / all_weight;
            let row = Row {
                contentions,
                total,
                max,
                min,
                sites: sites
                    .into_iter()
                    .map(|(s, w)| (s, (w * per_weight).round() as u64))
                    .collect(),
                estimated: Some((ws.len() as u64, variance)),
            };
            (caller.to_string(), row)
        })
        .collect()
}

/// `whole` split in proportion to `shares` (which sum to 1) into whole parts that add up to it:
/// each part rounded down, and what is left given one each to the largest remainders
/// (Hamilton's method). Rounded one by one, a lock's rows could miss its exact count by up to
/// half a wait per caller.
fn apportion(whole: u64, shares: &[f64]) -> Vec<u64> {
    let raw: Vec<f64> = shares.iter().map(|s| whole as f64 * s.max(0.0)).collect();
    let mut parts: Vec<u64> = raw.iter().map(|r| (r.floor() as u64).min(whole)).collect();
    let mut left = whole.saturating_sub(parts.iter().sum());
    let mut by_remainder: Vec<usize> = (0..raw.len()).collect();
    by_remainder.sort_by(|&a, &b| {
        let (ra, rb) = (raw[a] - raw[a].floor(), raw[b] - raw[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for i in by_remainder.into_iter().cycle().take(raw.len() * 2) {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

fn to_contentions(rows: Rows) -> Vec<LockContention> {
    let mut out: Vec<LockContention> = rows
        .into_iter()
        .map(|((lock, kind, caller), row)| {
            let mut sites: Vec<(String, u64)> = row.sites.into_iter().collect();
            sites.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            sites.truncate(CALL_SITES);
            LockContention {
                lock,
                kind,
                caller,
                contentions: row.contentions,
                wait_total: Nanos(row.total),
                wait_max: Nanos(row.max),
                wait_min: Nanos(row.min),
                call_sites: sites,
                sampled: row.estimated.map(|(waits, variance)| SiteSample {
                    episodes: waits,
                    error: Nanos((1.96 * variance.sqrt()).round() as u64),
                }),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.wait_total
            .cmp(&a.wait_total)
            .then_with(|| a.caller.cmp(&b.caller))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(caller: &str, wait: u64, weight: u32) -> Attributed {
        Attributed {
            key: (1, 0x10, 128),
            lock: "0x10".into(),
            kind: "futex".into(),
            caller: caller.into(),
            site: format!("{caller}+0x4"),
            wait,
            weight,
        }
    }

    fn total(count: u64, sum: u64, max: u64, min: u64) -> NamedTotal {
        NamedTotal {
            total: perf::LockTotal {
                pid: 1,
                kernel: false,
                lock: 0x10,
                op: 128,
                count,
                sum,
                max,
                min,
            },
            lock: "0x10".into(),
            kind: "futex".into(),
        }
    }

    #[test]
    fn exact_rows_keep_min_max_total_and_the_top_sites() {
        let mut waits = vec![wait("f", 30, 1), wait("f", 10, 1), wait("f", 20, 1)];
        waits[2].site = "f+0x8".into();
        let out = exact(&waits);
        assert_eq!(out.len(), 1);
        let c = &out[0];
        assert_eq!(
            (c.contentions, c.wait_total, c.wait_max, c.wait_min),
            (3, Nanos(60), Nanos(30), Nanos(10))
        );
        assert_eq!(c.call_sites[0], ("f+0x4".to_string(), 2));
        assert_eq!(c.sampled, None, "every wait traced: no estimate");
    }

    #[test]
    fn every_wait_sampled_gives_the_exact_rows() {
        let waits = vec![wait("a", 100, 1), wait("a", 300, 1), wait("b", 600, 1)];
        let rows = estimated(&waits, &[total(3, 1000, 600, 100)]);
        let by: HashMap<&str, &LockContention> =
            rows.iter().map(|r| (r.caller.as_str(), r)).collect();
        assert_eq!(by["a"].contentions, 2);
        assert_eq!(by["a"].wait_total, Nanos(400));
        assert_eq!(by["b"].wait_total, Nanos(600));
        assert_eq!(
            by["b"].sampled.map(|s| s.error),
            Some(Nanos(0)),
            "k = 1: no error"
        );
        assert_eq!(exact(&waits).len(), 2);
    }

    #[test]
    fn a_sample_shares_out_the_exact_sums_with_an_error() {
        // 1 in 10: 3 sampled of a lock that waited 30 times for 12,000 ns in all.
        let waits = vec![wait("a", 100, 10), wait("a", 300, 10), wait("b", 200, 10)];
        let rows = estimated(&waits, &[total(30, 12_000, 900, 50)]);
        let by: HashMap<&str, &LockContention> =
            rows.iter().map(|r| (r.caller.as_str(), r)).collect();
        assert_eq!((by["a"].contentions, by["b"].contentions), (20, 10));
        // Weighted time 4,000 of 6,000 for a: two thirds of the exact 12,000.
        assert_eq!(by["a"].wait_total, Nanos(8_000));
        assert_eq!(by["b"].wait_total, Nanos(4_000));
        // Two callers: each row's longest is its own sample's.
        assert_eq!(by["a"].wait_max, Nanos(300));
        // Scaled times (× 12,000 / 6,000) 200, 600 (a) and 400 (b), b's share 1/3: e = -200/3,
        // -200, 400 - 400/3; error 1.96·√(90·Σe²).
        let e2: f64 = [-200.0f64 / 3.0, -200.0, 400.0 - 400.0 / 3.0]
            .iter()
            .map(|e| e * e)
            .sum();
        let error = (1.96 * (90.0 * e2).sqrt()).round() as u64;
        assert_eq!(
            by["b"].sampled,
            Some(SiteSample {
                episodes: 1,
                error: Nanos(error)
            })
        );
    }

    #[test]
    fn one_caller_keeps_the_exact_extremes_and_an_unsampled_lock_keeps_its_sums() {
        let waits = vec![wait("a", 100, 4)];
        let mut other = total(7, 700, 300, 20);
        other.total.lock = 0x20;
        other.lock = "0x20".into();
        let rows = estimated(&waits, &[total(5, 900, 400, 10), other]);
        let a = rows.iter().find(|r| r.caller == "a").expect("a");
        assert_eq!(
            (a.contentions, a.wait_total, a.wait_max, a.wait_min),
            (5, Nanos(900), Nanos(400), Nanos(10))
        );
        let unseen = rows
            .iter()
            .find(|r| r.lock == "0x20")
            .expect("the other lock");
        assert_eq!(unseen.caller, NOT_SAMPLED);
        assert_eq!((unseen.contentions, unseen.wait_total), (7, Nanos(700)));
        assert_eq!(unseen.sampled.map(|s| s.episodes), Some(0));
    }

    #[test]
    fn a_locks_callers_add_up_to_its_exact_count_and_time() {
        assert_eq!(apportion(10, &[1.0 / 3.0; 3]), [4, 3, 3]);
        assert_eq!(apportion(7, &[0.5, 0.25, 0.25]), [3, 2, 2]);
        assert_eq!(apportion(0, &[0.5, 0.5]), [0, 0]);
        // Three callers sampled alike: rounded one by one each is 33,333.33 → 33,333 and the
        // rows missed one wait of 100,000.
        let waits: Vec<Attributed> = ["a", "b", "c"].iter().map(|c| wait(c, 1_000, 3)).collect();
        let rows = estimated(&waits, &[total(100_000, 300_000_001, 2_000, 500)]);
        let count: u64 = rows.iter().map(|r| r.contentions).sum();
        let time: u64 = rows.iter().map(|r| r.wait_total.0).sum();
        assert_eq!((count, time), (100_000, 300_000_001), "{rows:?}");
    }
}
