//! The Hodges-Lehmann estimate of the shift between two samples, with its distribution-free
//! confidence interval.
//!
//! Method: the shift B − A is the median of all `m·n` differences `b_j − a_i` (Hodges &
//! Lehmann, "Estimates of location based on rank tests", *Ann. Math. Statist.* 34, 1963). Its
//! interval is `[D(k), D(mn+1−k)]` over the ordered differences, with `k` read from the null
//! distribution of the Mann-Whitney U so that `P(k ≤ U ≤ mn−k) ≥ level` (Moses, in Walker &
//! Lev, *Statistical Inference*, 1953; Bauer, "Constructing confidence sets using rank
//! statistics", *JASA* 67, 1972; Hollander, Wolfe & Chicken, §4.3). `k` comes from the exact
//! distribution when both sides have ≤ 50 values, else from its normal approximation.
//!
//! Hand-written (no maintained crate has it). Memory and time are O(m·n log(m·n)); fine for
//! trial counts (1 000 per side is 10⁶ differences).

use statrs::distribution::ContinuousCDF;

use crate::mann_whitney::{EXACT_MAX, UDistribution, min_achievable_p, standard_normal};
use crate::sample::{Estimate, Sample, median_of_sorted};

/// Hodges-Lehmann shift of `b` relative to `a` (positive when B is larger), in the samples'
/// units, with its distribution-free interval.
///
/// Like [`Sample::median_interval`], when too few values make `level` unreachable the
/// interval is `[min, max]` of the differences and `level` is the coverage achieved
/// (`1 − 2/C(m+n, m)`: 3 vs 3 → 0.9, 1 vs 1 → 0).
pub fn hodges_lehmann(a: &Sample, b: &Sample, level: f64) -> Estimate {
    let (m, n) = (a.len(), b.len());
    let mut diffs = Vec::with_capacity(m * n);
    for &y in b.values() {
        diffs.extend(a.values().iter().map(|&x| y - x));
    }
    diffs.sort_by(f64::total_cmp);
    let (k, achieved) = shift_rank(m, n, level);
    Estimate {
        point: median_of_sorted(&diffs),
        lower: diffs[k - 1],
        upper: diffs[m * n - k],
        level: achieved,
    }
}

/// The 1-based rank `k` of the lower end among the `m·n` ordered differences, and the level
/// to report.
fn shift_rank(m: usize, n: usize, level: f64) -> (usize, f64) {
    let mn = m * n;
    let widest = (1.0 - min_achievable_p(m, n)).max(0.0);
    if level.is_nan() || widest < level || level >= 1.0 {
        return (1, widest);
    }
    let tail = (1.0 - level) / 2.0;
    let k = if m <= EXACT_MAX && n <= EXACT_MAX {
        exact_rank(m, n, tail)
    } else {
        normal_rank(m, n, tail)
    };
    (k.clamp(1, mn.div_ceil(2)), level)
}

/// Largest `k` with `P(U ≤ k−1) ≤ tail` under the exact distribution: the count of `u` with
/// `P(U ≤ u) ≤ tail`, since the coverage of rank `k` is `1 − 2·P(U ≤ k−1)`.
fn exact_rank(m: usize, n: usize, tail: f64) -> usize {
    let dist = UDistribution::new(m, n);
    (0..m * n).take_while(|&u| dist.cdf(u) <= tail).count()
}

/// The same rank from the normal approximation of U with a continuity correction.
fn normal_rank(m: usize, n: usize, tail: f64) -> usize {
    let mn = (m * n) as f64;
    let z = standard_normal().inverse_cdf(1.0 - tail);
    let sd = (mn * (m + n + 1) as f64 / 12.0).sqrt();
    (mn / 2.0 + 0.5 - z * sd).floor().max(1.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values: &[f64]) -> Sample {
        Sample::new(values.to_vec()).unwrap()
    }

    #[test]
    fn shift_of_a_translated_sample_is_exact() {
        let a = sample(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let b = sample(&[11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0]);
        let e = hodges_lehmann(&a, &b, 0.95);
        assert_eq!(e.point, 10.0);
        assert!(e.lower < 10.0 && e.upper > 10.0);
        assert_eq!(e.level, 0.95);
    }

    #[test]
    fn three_vs_three_reports_achieved_level() {
        let a = sample(&[1.0, 2.0, 3.0]);
        let b = sample(&[5.0, 6.0, 8.0]);
        let e = hodges_lehmann(&a, &b, 0.95);
        assert!((e.level - 0.9).abs() < 1e-12);
        assert_eq!((e.lower, e.upper), (2.0, 7.0));
        let one = hodges_lehmann(&sample(&[1.0]), &sample(&[4.0]), 0.95);
        assert_eq!(
            (one.point, one.lower, one.upper, one.level),
            (3.0, 3.0, 3.0, 0.0)
        );
    }

    #[test]
    fn matches_moses_table_rank() {
        // m = n = 10, 95%: the critical value of U is 23 (P(U ≤ 23) = 0.0216,
        // P(U ≤ 24) = 0.0262 > 0.025), so the interval is [D(24), D(77)].
        assert_eq!(shift_rank(10, 10, 0.95), (24, 0.95));
        // m = n = 5: P(U ≤ 2) = 4/252 ≈ 0.0159 ≤ 0.025, P(U ≤ 3) = 7/252 > 0.025 -> k = 3.
        assert_eq!(shift_rank(5, 5, 0.95), (3, 0.95));
    }

    #[test]
    fn normal_rank_is_close_to_exact_at_the_switch() {
        for (m, n) in [(50, 50), (30, 50), (20, 20)] {
            let (exact, approx) = (exact_rank(m, n, 0.025), normal_rank(m, n, 0.025));
            assert!(
                approx.abs_diff(exact) <= 1,
                "{m}x{n}: exact {exact}, normal {approx}"
            );
        }
    }
}
