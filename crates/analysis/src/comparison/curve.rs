//! The results of a comparison: one [`PointComparison`] per N both runs measured, and the
//! [`CurveSummary`] of the whole curve (verdict, worst point, which side is ahead, where the
//! curves cross).

use serde::Serialize;
use stats::{Change, Direction, Estimate, Verdict};

use super::side::Side;

/// One N measured by both runs.
#[derive(Debug, Clone, Serialize)]
pub struct PointComparison {
    /// The task count.
    pub n: u32,
    /// Successful trials of A at this N.
    pub runs_a: usize,
    /// Successful trials of B at this N.
    pub runs_b: usize,
    /// Pairs compared when the comparison is paired (both trials of the pair succeeded).
    pub pairs: Option<usize>,
    /// Failed trials of A at this N.
    pub failed_a: usize,
    /// Failed trials of B at this N.
    pub failed_b: usize,
    /// Coefficient of variation of A's per-trial throughputs.
    pub cv_a: Option<f64>,
    /// Coefficient of variation of B's per-trial throughputs.
    pub cv_b: Option<f64>,
    /// A's interquartile range over its median: a spread one outlier does not move, and two
    /// levels (a flaky build: half its trials slow) do, each with a quarter of the trials or more.
    #[serde(skip)]
    pub spread_a: Option<f64>,
    /// B's interquartile range over its median.
    #[serde(skip)]
    pub spread_b: Option<f64>,
    /// The statistics, B against A; `None` when one side has no successful trial or A's median
    /// is 0 (then `note` says which).
    pub change: Option<Change>,
    /// Why there is no `change` at this N, when there is none.
    pub note: Option<String>,
}

impl PointComparison {
    /// The verdict at this N, or `None` where there is no `change` (`note` says why).
    pub fn verdict(&self) -> Option<Verdict> {
        self.change.map(|c| c.verdict)
    }
}

/// The point where B fares worst against A (by the Hodges-Lehmann shift).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WorstPoint {
    /// The task count.
    pub n: u32,
    /// Relative shift with its interval.
    pub shift: Estimate,
    /// The verdict at that N.
    pub verdict: Verdict,
}

/// Where the two curves (medians) change order between consecutive common N.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Crossing {
    /// The lower of the two consecutive common N.
    pub from_n: u32,
    /// The higher of the two.
    pub to_n: u32,
    /// Linear interpolation of where the medians meet.
    pub at_n: f64,
    /// The side with the better median at `from_n` (higher; lower for a lower-is-better metric).
    pub ahead_below: Side,
    /// Whether both neighbouring points have a significant verdict (else the crossing may be
    /// noise).
    pub significant: bool,
}

/// The whole curve in a few lines.
#[derive(Debug, Clone, Serialize)]
pub struct CurveSummary {
    /// REGRESSED if any point regressed, else IMPROVED if any improved, else NO CHANGE if every
    /// point shows none, else INCONCLUSIVE.
    pub verdict: Verdict,
    /// The N whose verdict is REGRESSED.
    pub regressed: Vec<u32>,
    /// The N whose verdict is IMPROVED.
    pub improved: Vec<u32>,
    /// The N whose verdict is NO CHANGE.
    pub no_change: Vec<u32>,
    /// The N whose verdict is INCONCLUSIVE.
    pub inconclusive: Vec<u32>,
    /// Where B fares worst against A, when any N has a change.
    pub worst: Option<WorstPoint>,
    /// The side ahead at every compared N, when one is: its median is better at each N
    /// (higher, or lower for a lower-is-better metric such as a latency or `max_rss`) and the
    /// difference is significant there (REGRESSED or IMPROVED). A better median within the
    /// noise is no lead.
    pub ahead_everywhere: Option<Side>,
    /// Where the median curves change order, in N order.
    pub crossings: Vec<Crossing>,
}

pub(super) fn curve_summary(points: &[PointComparison], direction: Direction) -> CurveSummary {
    let at = |v: Verdict| -> Vec<u32> {
        points
            .iter()
            .filter(|p| p.verdict() == Some(v))
            .map(|p| p.n)
            .collect()
    };
    let (regressed, improved, no_change) = (
        at(Verdict::Regressed),
        at(Verdict::Improved),
        at(Verdict::NoChange),
    );
    let inconclusive: Vec<u32> = points
        .iter()
        .filter(|p| matches!(p.verdict(), Some(Verdict::Inconclusive) | None))
        .map(|p| p.n)
        .collect();
    let verdict = if !regressed.is_empty() {
        Verdict::Regressed
    } else if !improved.is_empty() {
        Verdict::Improved
    } else if !points.is_empty() && no_change.len() == points.len() {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    };
    // "Badness" of B: a lower throughput is worse when higher is better.
    let sign = match direction {
        Direction::HigherIsBetter => -1.0,
        Direction::LowerIsBetter => 1.0,
    };
    let worst = points
        .iter()
        .filter_map(|p| p.change.map(|c| (p.n, c)))
        .max_by(|(_, x), (_, y)| {
            (sign * x.relative_shift.point).total_cmp(&(sign * y.relative_shift.point))
        })
        .map(|(n, c)| WorstPoint {
            n,
            shift: c.relative_shift,
            verdict: c.verdict,
        });

    let decided: Vec<(u32, &Change)> = points
        .iter()
        .filter_map(|p| p.change.as_ref().map(|c| (p.n, c)))
        .collect();
    // The side with the better median: the higher one, or the lower where lower is better.
    let ahead = |c: &Change| {
        let (a, b) = (-sign * c.median_a, -sign * c.median_b);
        if b > a {
            Some(Side::B)
        } else if a > b {
            Some(Side::A)
        } else {
            None
        }
    };
    let significant = |c: &Change| matches!(c.verdict, Verdict::Regressed | Verdict::Improved);
    let mut crossings = Vec::new();
    for pair in decided.windows(2) {
        let ((n0, c0), (n1, c1)) = (pair[0], pair[1]);
        if let (Some(s0), Some(s1)) = (ahead(c0), ahead(c1)) {
            if s0 != s1 {
                let (d0, d1) = (c0.median_b - c0.median_a, c1.median_b - c1.median_a);
                let at_n = f64::from(n0) + (f64::from(n1) - f64::from(n0)) * d0 / (d0 - d1);
                crossings.push(Crossing {
                    from_n: n0,
                    to_n: n1,
                    at_n,
                    ahead_below: s0,
                    significant: significant(c0) && significant(c1),
                });
            }
        }
    }
    let sides: Vec<Option<Side>> = decided
        .iter()
        .map(|(_, c)| ahead(c).filter(|_| significant(c)))
        .collect();
    let ahead_everywhere = match sides.first() {
        Some(&Some(first)) if sides.iter().all(|s| *s == Some(first)) => Some(first),
        _ => None,
    };
    CurveSummary {
        verdict,
        regressed,
        improved,
        no_change,
        inconclusive,
        worst,
        ahead_everywhere,
        crossings,
    }
}
