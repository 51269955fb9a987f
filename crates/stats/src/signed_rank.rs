//! Paired differences: the Wilcoxon signed-rank test and the Hodges-Lehmann estimate of their
//! centre (the median of the Walsh averages) with its distribution-free interval. `scalelab ab`
//! runs A and B in back-to-back pairs, so a slow disturbance slows both trials of a pair alike:
//! the per-pair differences cancel it, where [`crate::mann_whitney`] counts it as noise.
//!
//! Methods:
//! - Test: Wilcoxon, "Individual comparisons by ranking methods", *Biometrics Bulletin* 1
//!   (1945); Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., §3.1.
//!   `T⁺` is the sum of the ranks of `|d|` over the positive differences, zeros dropped
//!   (Wilcoxon's convention), ties given midranks. Exact p-values for ≤ [`EXACT_MAX`] non-zero
//!   differences: without ties they count the subsets of `{1..n}` with each sum (the
//!   coefficients of `Π (1 + q^i)`, exact in `u64` up to n = 50); with ties, the exact
//!   distribution conditional on them, over all `2ⁿ` sign patterns of the midranks
//!   ([`crate::permutation_null`]). Otherwise the normal approximation with mean `n(n+1)/4`,
//!   the tie-corrected variance `n(n+1)(2n+1)/24 − Σ(t³−t)/48` and a continuity correction
//!   of ½, never below the smallest p the exact test can give, `2/2ⁿ`. Two-sided p:
//!   `2·min(P(T⁺ ≤ t), P(T⁺ ≥ t))`, at most 1.
//! - Estimate: the median of the `n(n+1)/2` Walsh averages `(d_i + d_j)/2, i ≤ j` (Hodges &
//!   Lehmann, "Estimates of location based on rank tests", *Ann. Math. Statist.* 34, 1963);
//!   its interval is `[W(k), W(M+1−k)]` over the ordered averages, `M = n(n+1)/2`, with `k`
//!   read from the null distribution of `T⁺` (exact for n ≤ [`EXACT_MAX`], else its normal
//!   approximation) so that the coverage `1 − 2·P(T⁺ ≤ k−1)` is at least the level (Tukey 1949;
//!   Hollander, Wolfe & Chicken §3.3). Memory and time are O(n² log n) in the pairs.
//!
//! Hand-written: no maintained crate gives the exact signed-rank distribution.

use serde::{Deserialize, Serialize};
use statrs::distribution::ContinuousCDF;

use crate::mann_whitney::standard_normal;
use crate::permutation_null::{doubled_midranks, signed_rank_null};
use crate::sample::{Estimate, median_of_sorted};

/// Largest number of non-zero differences for which the exact distribution is used.
pub(crate) const EXACT_MAX: usize = 50;

/// Result of a two-sided Wilcoxon signed-rank test of "the differences are centred on 0".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct SignedRank {
    /// Sum of the ranks of the positive differences: above `n(n+1)/4` means the differences
    /// tend to be positive.
    pub t_plus: f64,
    /// Non-zero differences the test used (zeros carry no sign and are dropped).
    pub used: usize,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` is exact (`used` ≤ 50; with ties among `|d|`, the exact
    /// distribution conditional on them).
    pub exact: bool,
}

/// Two-sided Wilcoxon signed-rank test of the differences `d` against a centre of 0. No
/// non-zero difference at all gives p = 1 (no evidence of any change).
pub(crate) fn wilcoxon_signed_rank(d: &[f64]) -> SignedRank {
    let mut magnitudes: Vec<(f64, bool)> = d
        .iter()
        .filter(|x| **x != 0.0)
        .map(|&x| (x.abs(), x > 0.0))
        .collect();
    magnitudes.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = magnitudes.len();
    let (mut t_plus, mut tie_term, mut i) = (0.0, 0.0, 0);
    while i < n {
        let t = magnitudes[i..]
            .iter()
            .take_while(|m| m.0 == magnitudes[i].0)
            .count();
        // Midrank of ranks i+1 ..= i+t.
        let midrank = i as f64 + (t as f64 + 1.0) / 2.0;
        t_plus += midrank * magnitudes[i..i + t].iter().filter(|m| m.1).count() as f64;
        if t > 1 {
            let t = t as f64;
            tie_term += t * t * t - t;
        }
        i += t;
    }
    if n == 0 {
        return SignedRank {
            t_plus: 0.0,
            used: 0,
            p_value: 1.0,
            exact: true,
        };
    }
    let total = (n * (n + 1) / 2) as f64;
    if tie_term > 0.0 && n <= EXACT_MAX {
        let sorted: Vec<f64> = magnitudes.iter().map(|m| m.0).collect();
        return SignedRank {
            t_plus,
            used: n,
            p_value: signed_rank_null(&doubled_midranks(&sorted))
                .two_sided_p((2.0 * t_plus).round() as u64),
            exact: true,
        };
    }
    if n <= EXACT_MAX {
        let dist = TDistribution::new(n);
        let t = t_plus.round() as usize;
        let lower = dist.cdf(t);
        let upper = dist.cdf(n * (n + 1) / 2 - t);
        return SignedRank {
            t_plus,
            used: n,
            p_value: (2.0 * lower.min(upper)).min(1.0),
            exact: true,
        };
    }
    let nf = n as f64;
    let variance = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    let p_value = if variance <= 0.0 {
        1.0
    } else {
        let z = ((t_plus - total / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
        // The approximation's tail can fall below what any sign pattern can give.
        (2.0 * standard_normal().sf(z)).clamp(min_achievable_p_paired(n), 1.0)
    };
    SignedRank {
        t_plus,
        used: n,
        p_value,
        exact: false,
    }
}

/// Smallest two-sided p-value the exact test can give with `n` differences, `2 / 2ⁿ` (4 pairs
/// → 0.125, 5 → 0.0625, 6 → 0.03125): above alpha, no change can ever be significant.
pub(crate) fn min_achievable_p_paired(n: usize) -> f64 {
    (2.0 * 0.5f64.powi(n.min(2000) as i32)).min(1.0)
}

/// The Hodges-Lehmann centre of the differences `d` (the median of their Walsh averages) with
/// its distribution-free interval at `level`.
///
/// When too few differences make `level` unreachable, the interval is `[min, max]` of the
/// averages and `level` is the coverage achieved (`1 − 2/2ⁿ`: 3 pairs → 0.75, 1 → 0).
///
/// # Panics
/// When `d` is empty.
pub(crate) fn hodges_lehmann_paired(d: &[f64], level: f64) -> Estimate {
    assert!(!d.is_empty(), "Hodges-Lehmann of no differences");
    let n = d.len();
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        walsh.extend(d[i..].iter().map(|&x| (d[i] + x) / 2.0));
    }
    walsh.sort_by(f64::total_cmp);
    let (k, achieved) = walsh_rank(n, level);
    Estimate {
        point: median_of_sorted(&walsh),
        lower: walsh[k - 1],
        upper: walsh[walsh.len() - k],
        level: achieved,
    }
}

/// The 1-based rank `k` of the lower end among the `n(n+1)/2` ordered Walsh averages, and the
/// level to report.
fn walsh_rank(n: usize, level: f64) -> (usize, f64) {
    let total = n * (n + 1) / 2;
    let widest = (1.0 - min_achievable_p_paired(n)).max(0.0);
    if level.is_nan() || widest < level || level >= 1.0 {
        return (1, widest);
    }
    let tail = (1.0 - level) / 2.0;
    let k = if n <= EXACT_MAX {
        exact_rank(n, tail)
    } else {
        normal_rank(n, tail)
    };
    (k.clamp(1, total.div_ceil(2)), level)
}

/// Largest `k` with `P(T⁺ ≤ k−1) ≤ tail`: the count of `t` with `P(T⁺ ≤ t) ≤ tail`.
fn exact_rank(n: usize, tail: f64) -> usize {
    let dist = TDistribution::new(n);
    (0..n * (n + 1) / 2)
        .take_while(|&t| dist.cdf(t) <= tail)
        .count()
}

/// The same rank from the normal approximation of `T⁺` with a continuity correction.
fn normal_rank(n: usize, tail: f64) -> usize {
    let nf = n as f64;
    let z = standard_normal().inverse_cdf(1.0 - tail);
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    (nf * (nf + 1.0) / 4.0 + 0.5 - z * sd).floor().max(1.0) as usize
}

/// Exact null distribution of `T⁺` for `n` differences without ties or zeros: every sign
/// pattern is equally likely, so `P(T⁺ = t)` is the number of subsets of `{1..n}` summing to
/// `t`, over `2ⁿ`.
struct TDistribution {
    /// `cumulative[t] = P(T⁺ ≤ t)` for `t` in `0..=n(n+1)/2`.
    cumulative: Vec<f64>,
}

impl TDistribution {
    /// `n` ≤ 63, so that the counts fit a `u64`.
    fn new(n: usize) -> TDistribution {
        assert!(n < 64, "exact signed-rank distribution for n = {n}");
        let total = n * (n + 1) / 2;
        let mut counts = vec![0u64; total + 1];
        counts[0] = 1;
        for i in 1..=n {
            // Multiply by (1 + q^i), in place from the top.
            for t in (i..=i * (i + 1) / 2).rev() {
                counts[t] += counts[t - i];
            }
        }
        let all = 2f64.powi(n as i32);
        let mut running = 0u64;
        let cumulative = counts
            .iter()
            .map(|&c| {
                running += c;
                running as f64 / all
            })
            .collect();
        TDistribution { cumulative }
    }

    fn cdf(&self, t: usize) -> f64 {
        self.cumulative[t.min(self.cumulative.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_distribution_matches_small_tables() {
        // n = 3: subsets of {1,2,3} by sum: 0:1 1:1 2:1 3:2 4:1 5:1 6:1, over 8.
        let d = TDistribution::new(3);
        let expect = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0].map(|c| c / 8.0);
        assert_eq!(d.cumulative, expect);
        // n = 10: P(T⁺ ≤ 8) = 25/1024 ≈ 0.0244, P(T⁺ ≤ 9) = 33/1024 (table A.4 of Hollander,
        // Wolfe & Chicken: the two-sided 5% critical value is 8).
        let d = TDistribution::new(10);
        assert!((d.cdf(8) - 25.0 / 1024.0).abs() < 1e-15);
        assert!((d.cdf(9) - 33.0 / 1024.0).abs() < 1e-15);
        assert_eq!(*d.cumulative.last().unwrap(), 1.0);
    }

    #[test]
    #[expect(clippy::approx_constant, reason = "3.14 is a patient's score, not π")]
    fn test_on_known_data() {
        // Hollander, Wolfe & Chicken example 3.1 (Hamilton depression scale, 9 patients):
        // T⁺ = 5, exact two-sided p = 2·P(T⁺ ≤ 5) = 2·10/512 = 0.0391.
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| b - a).collect();
        let r = wilcoxon_signed_rank(&d);
        assert_eq!((r.t_plus, r.used, r.exact), (5.0, 9, true));
        assert!((r.p_value - 20.0 / 512.0).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn zeros_are_dropped_and_ties_are_counted_exactly() {
        let r = wilcoxon_signed_rank(&[0.0, 0.0, 0.0]);
        assert_eq!((r.used, r.p_value), (0, 1.0));
        let r = wilcoxon_signed_rank(&[0.0, 1.0, 2.0, 3.0]);
        assert_eq!((r.used, r.t_plus), (3, 6.0));
        let r = wilcoxon_signed_rank(&[1.0, 1.0, -1.0, 2.0]);
        assert!(r.exact);
        // Ranks of |d|: 1,1,1 -> 2 each; 2 -> 4; positives 2 + 2 + 4. Of the 16 sign patterns,
        // 8 give T⁺ ≥ 8 and 10 give T⁺ ≤ 8: p = 2·8/16.
        assert_eq!(r.t_plus, 8.0);
        assert!((r.p_value - 0.5).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn ties_five_equal_changes_never_go_below_the_exact_floor() {
        // The normal approximation gave p = 0.037 here, below the 2/2⁵ that 5 pairs can reach.
        let r = wilcoxon_signed_rank(&[-0.02; 5]);
        assert!(r.exact);
        assert_eq!((r.t_plus, r.used), (0.0, 5));
        assert!((r.p_value - 0.0625).abs() < 1e-12, "{r:?}");
        // Ten changes in five tie groups: 2·47/1024 by counting the sign patterns (Python).
        let d = [1.0, 2.0, 2.0, -3.0, 3.0, 3.0, 4.0, 4.0, -5.0, 6.0];
        let r = wilcoxon_signed_rank(&d);
        assert!(r.exact);
        assert_eq!(r.t_plus, 41.0);
        assert!((r.p_value - 47.0 / 256.0).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn walsh_interval_matches_the_table_rank() {
        // n = 10 at 95%: k − 1 = 8, so the interval is [W(9), W(47)] of 55 averages.
        assert_eq!(walsh_rank(10, 0.95), (9, 0.95));
        // Three pairs cannot reach 95%: the widest interval covers 1 − 2/8 = 0.75.
        assert_eq!(walsh_rank(3, 0.95), (1, 0.75));
        let e = hodges_lehmann_paired(&[1.0, 2.0, 4.0], 0.95);
        // Walsh averages 1, 1.5, 2, 2.5, 3, 4: median 2.25.
        assert_eq!((e.point, e.lower, e.upper, e.level), (2.25, 1.0, 4.0, 0.75));
    }

    #[test]
    fn normal_rank_is_close_to_exact_at_the_switch() {
        for n in [20, 35, 50] {
            let (exact, approx) = (exact_rank(n, 0.025), normal_rank(n, 0.025));
            assert!(
                approx.abs_diff(exact) <= 1,
                "n={n}: exact {exact}, normal {approx}"
            );
        }
    }

    #[test]
    fn minimum_p_halves_with_each_pair() {
        assert_eq!(min_achievable_p_paired(0), 1.0);
        assert_eq!(min_achievable_p_paired(1), 1.0);
        assert_eq!(min_achievable_p_paired(5), 0.0625);
        assert_eq!(min_achievable_p_paired(6), 0.03125);
        assert!(min_achievable_p_paired(100_000) >= 0.0);
    }

    proptest! {
        #[test]
        fn negating_the_differences_keeps_p_and_mirrors_the_centre(
            d in prop::collection::vec(-100.0f64..100.0, 1..80)
        ) {
            let neg: Vec<f64> = d.iter().map(|x| -x).collect();
            let (r, s) = (wilcoxon_signed_rank(&d), wilcoxon_signed_rank(&neg));
            prop_assert!((r.p_value - s.p_value).abs() < 1e-9);
            prop_assert!((0.0..=1.0).contains(&r.p_value));
            let (e, f) = (hodges_lehmann_paired(&d, 0.95), hodges_lehmann_paired(&neg, 0.95));
            prop_assert!((e.point + f.point).abs() < 1e-9);
            prop_assert!((e.lower + f.upper).abs() < 1e-9);
            prop_assert!(e.lower <= e.point && e.point <= e.upper);
        }

        #[test]
        fn a_constant_shift_moves_the_centre_by_that_shift(
            d in prop::collection::vec(-10.0f64..10.0, 1..60),
            shift in -50.0f64..50.0
        ) {
            let moved: Vec<f64> = d.iter().map(|x| x + shift).collect();
            let (e, f) = (hodges_lehmann_paired(&d, 0.9), hodges_lehmann_paired(&moved, 0.9));
            prop_assert!((f.point - e.point - shift).abs() < 1e-6);
            prop_assert!((f.lower - e.lower - shift).abs() < 1e-6);
        }
    }

    /// Two-sided p by listing every sign pattern of the non-zero differences, with midranks of
    /// `|d|` from their definition, `#{v < x} + (#{v = x} + 1)/2`.
    fn brute_force_p(d: &[f64]) -> f64 {
        let d: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
        let size: Vec<f64> = d.iter().map(|x| x.abs()).collect();
        let midrank = |x: f64| {
            let below = size.iter().filter(|&&v| v < x).count() as f64;
            let equal = size.iter().filter(|&&v| v == x).count() as f64;
            below + (equal + 1.0) / 2.0
        };
        let ranks: Vec<f64> = size.iter().map(|&x| midrank(x)).collect();
        let observed: f64 = (0..d.len()).filter(|&i| d[i] > 0.0).map(|i| ranks[i]).sum();
        let (mut at_most, mut at_least) = (0u64, 0u64);
        for signs in 0u32..1 << d.len() {
            let sum: f64 = (0..d.len())
                .filter(|i| signs & (1 << i) != 0)
                .map(|i| ranks[i])
                .sum();
            at_most += u64::from(sum <= observed);
            at_least += u64::from(sum >= observed);
        }
        (2.0 * at_most.min(at_least) as f64 / f64::from(1u32 << d.len())).min(1.0)
    }

    /// Differences on a coarse grid, so that ties (and zeros) are common.
    fn tied(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec((-3i8..=3).prop_map(f64::from), 1..=max_len)
    }

    proptest! {
        #[test]
        fn tied_exact_p_equals_brute_force_enumeration(d in tied(12)) {
            let r = wilcoxon_signed_rank(&d);
            prop_assert!(r.exact);
            let want = brute_force_p(&d);
            prop_assert!((r.p_value - want).abs() < 1e-12, "{} vs {want}", r.p_value);
        }

        #[test]
        fn tie_aware_distribution_without_ties_equals_the_subset_counts(
            n in 1usize..=50, t in 0usize..=1275
        ) {
            let t = t.min(n * (n + 1) / 2);
            let old = TDistribution::new(n);
            let want = (2.0 * old.cdf(t).min(old.cdf(n * (n + 1) / 2 - t))).min(1.0);
            let scores: Vec<u64> = (1..=n as u64).map(|r| 2 * r).collect();
            let got = signed_rank_null(&scores).two_sided_p(2 * t as u64);
            prop_assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }

        #[test]
        fn p_is_never_below_the_design_minimum_of_the_changed_pairs(d in tied(80)) {
            let r = wilcoxon_signed_rank(&d);
            let floor = min_achievable_p_paired(r.used);
            prop_assert!(r.p_value >= floor, "p {} < floor {floor}", r.p_value);
            prop_assert!(r.p_value <= 1.0);
        }
    }
}
