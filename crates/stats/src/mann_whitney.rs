//! The Mann-Whitney U (Wilcoxon rank-sum) test for two samples, and the exact null
//! distribution of U that the Hodges-Lehmann interval also reads.
//!
//! Method: Mann & Whitney, "On a test of whether one of two random variables is stochastically
//! larger than the other", *Ann. Math. Statist.* 18 (1947); Hollander, Wolfe & Chicken,
//! *Nonparametric Statistical Methods*, 3rd ed., §4.1.
//! - Exact p-values when both samples have ≤ [`EXACT_MAX`] values. Without ties they count
//!   arrangements: the number of ways to get `U = u` is the coefficient of `q^u` in the
//!   Gaussian binomial `[m+n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i)` (Andrews,
//!   *The Theory of Partitions*, §3.3), computed in exact `i128` integer arithmetic
//!   (C(100, 50) ≈ 1e29 fits). With ties, the exact conditional distribution of the midrank
//!   sum over all `C(m+n, n)` relabellings ([`crate::permutation_null`]).
//! - Otherwise the normal approximation with the tie-corrected variance
//!   `mn/12 · ((N+1) − Σ(t³−t)/(N(N−1)))` and a continuity correction of ½, never below the
//!   smallest p the exact test can give, [`min_achievable_p`].
//! - Two-sided p: `2·min(P(U ≤ u), P(U ≥ u))`, at most 1.
//!
//! Hand-written: `statrs` has no rank tests, and no maintained crate gives the exact U
//! distribution needed for both the test and the Hodges-Lehmann interval.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::factorial::binomial;

use crate::permutation_null::{doubled_midranks, rank_sum_null};
use crate::sample::Sample;

/// Largest sample size (per side) for which the exact distribution is used.
pub(crate) const EXACT_MAX: usize = 50;

/// Result of a two-sided Mann-Whitney U test of A (baseline) against B (candidate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// Number of pairs `(a, b)` with `b > a`, ties counting ½: above `m·n/2` means B tends to
    /// be larger than A.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` comes from the exact distribution (both sides ≤ 50; with ties, the
    /// exact distribution conditional on them).
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test of `a` (baseline) against `b` (candidate).
pub fn mann_whitney_u(a: &Sample, b: &Sample) -> MannWhitney {
    let (m, n) = (a.len(), b.len());
    let ranks = RankSum::of(a.sorted(), b.sorted());
    let u = ranks.b_rank_sum - (n * (n + 1)) as f64 / 2.0;
    let mean = (m * n) as f64 / 2.0;

    if ranks.has_ties && m <= EXACT_MAX && n <= EXACT_MAX {
        // The pooled values in order, B's doubled midrank sum against every relabelling.
        let mut pooled: Vec<f64> = a.values().iter().chain(b.values()).copied().collect();
        pooled.sort_by(f64::total_cmp);
        let observed = (2.0 * ranks.b_rank_sum).round() as u64;
        return MannWhitney {
            u,
            p_value: rank_sum_null(&doubled_midranks(&pooled), n).two_sided_p(observed),
            exact: true,
        };
    }
    if m <= EXACT_MAX && n <= EXACT_MAX {
        let dist = UDistribution::new(m, n);
        // Without ties U is an integer.
        let u_int = u.round() as usize;
        let lower = dist.cdf(u_int);
        let upper = dist.cdf(m * n - u_int);
        let p_value = (2.0 * lower.min(upper)).min(1.0);
        return MannWhitney {
            u,
            p_value,
            exact: true,
        };
    }

    let total = (m + n) as f64;
    let variance =
        (m * n) as f64 / 12.0 * ((total + 1.0) - ranks.tie_term / (total * (total - 1.0)));
    let p_value = if variance <= 0.0 {
        // Every value is the same: no evidence of any difference.
        1.0
    } else {
        let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
        // The approximation's tail can fall below what any arrangement can give.
        (2.0 * standard_normal().sf(z)).clamp(min_achievable_p(m, n), 1.0)
    };
    MannWhitney {
        u,
        p_value,
        exact: false,
    }
}

/// Smallest two-sided p-value the exact test can give with `m` and `n` values:
/// `2 / C(m+n, m)` (3 vs 3 → 0.1). Above alpha, no difference can ever be significant.
pub fn min_achievable_p(m: usize, n: usize) -> f64 {
    // `binomial` is exact (rounded to an integer) while C(m+n, m) < 2^53.
    (2.0 / binomial((m + n) as u64, m as u64)).min(1.0)
}

/// The standard normal distribution.
pub(crate) fn standard_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("N(0, 1) is a valid distribution")
}

/// Rank sum of B in the pooled samples, with midranks for ties.
struct RankSum {
    b_rank_sum: f64,
    has_ties: bool,
    /// `Σ (t³ − t)` over groups of `t` tied values.
    tie_term: f64,
}

impl RankSum {
    /// Both inputs ascending.
    fn of(a: &[f64], b: &[f64]) -> RankSum {
        let (mut i, mut j) = (0, 0);
        let mut rank = 0usize; // ranks used so far
        let mut rs = RankSum {
            b_rank_sum: 0.0,
            has_ties: false,
            tie_term: 0.0,
        };
        while i < a.len() || j < b.len() {
            let next = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(&y)) => y,
                (None, None) => unreachable!("loop condition"),
            };
            let from_a = a[i..].iter().take_while(|&&v| v == next).count();
            let from_b = b[j..].iter().take_while(|&&v| v == next).count();
            let t = from_a + from_b;
            // Midrank of ranks rank+1 ..= rank+t.
            let midrank = rank as f64 + (t as f64 + 1.0) / 2.0;
            rs.b_rank_sum += midrank * from_b as f64;
            if t > 1 {
                rs.has_ties = true;
                let t = t as f64;
                rs.tie_term += t * t * t - t;
            }
            rank += t;
            i += from_a;
            j += from_b;
        }
        rs
    }
}

/// Exact null distribution of U for sample sizes `m` and `n` (no ties).
#[derive(Debug, Clone)]
pub(crate) struct UDistribution {
    /// `cumulative[u] = P(U ≤ u)` for `u` in `0..=m·n`.
    cumulative: Vec<f64>,
}

impl UDistribution {
    /// Both sizes must be small enough for `i128` (each ≤ 50 is; 60 vs 60 is too).
    pub(crate) fn new(m: usize, n: usize) -> UDistribution {
        let (m, n) = (m.min(n), m.max(n));
        let top = m * n;
        let mut counts = vec![0i128; top + 1];
        counts[0] = 1;
        for i in 1..=m {
            // Multiply by (1 - q^(n+i)), truncated at degree m·n.
            let s = n + i;
            for k in (s..=top).rev() {
                counts[k] -= counts[k - s];
            }
            // Divide by (1 - q^i): a power series, exact below the truncation.
            for k in i..=top {
                counts[k] += counts[k - i];
            }
        }
        let total: i128 = counts.iter().sum();
        let mut running = 0i128;
        let cumulative = counts
            .iter()
            .map(|&c| {
                running += c;
                running as f64 / total as f64
            })
            .collect();
        UDistribution { cumulative }
    }

    /// `P(U ≤ u)`; 1 beyond the support.
    pub(crate) fn cdf(&self, u: usize) -> f64 {
        self.cumulative.get(u).copied().unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(values: &[f64]) -> Sample {
        Sample::new(values.to_vec()).unwrap()
    }

    #[test]
    fn exact_distribution_small_case() {
        // m = n = 2: U takes 0,1,2,2,3,4 over the 6 arrangements -> counts 1,1,2,1,1.
        let d = UDistribution::new(2, 2);
        let expected = [1.0, 2.0, 4.0, 5.0, 6.0].map(|c| c / 6.0);
        for (u, want) in expected.iter().enumerate() {
            assert!((d.cdf(u) - want).abs() < 1e-15, "u = {u}");
        }
        assert_eq!(d.cdf(99), 1.0);
    }

    #[test]
    fn exact_distribution_largest_size_is_a_distribution() {
        let d = UDistribution::new(50, 50);
        assert_eq!(d.cdf(2500), 1.0);
        // Symmetric about m·n/2: P(U <= 1249) = P(U >= 1251) = 1 - P(U <= 1250).
        assert!((d.cdf(1249) - (1.0 - d.cdf(1250))).abs() < 1e-12);
        // Only one arrangement gives U = 0.
        let one = 1.0 / binomial(100, 50);
        assert!((d.cdf(0) / one - 1.0).abs() < 1e-9);
    }

    #[test]
    fn complete_separation_three_vs_three() {
        let a = sample(&[1.0, 2.0, 3.0]);
        let b = sample(&[4.0, 5.0, 6.0]);
        let t = mann_whitney_u(&a, &b);
        assert_eq!(t.u, 9.0);
        assert!(t.exact);
        assert!((t.p_value - 0.1).abs() < 1e-12);
        assert!((min_achievable_p(3, 3) - 0.1).abs() < 1e-12);
        // Reversed roles: U counts B above A, so it is 0.
        let t = mann_whitney_u(&b, &a);
        assert_eq!(t.u, 0.0);
        assert!((t.p_value - 0.1).abs() < 1e-12);
    }

    #[test]
    fn matches_scipy_exact() {
        // Reference: scipy.stats.mannwhitneyu(x, y, method="exact") -> U(x) = 58,
        // p = 0.13591114767585355. scipy's U counts x above y, so with A = y, B = x, U = 58.
        let x = sample(&[1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]);
        let y = sample(&[0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.061, 3.17, 1.291]);
        let t = mann_whitney_u(&y, &x);
        assert!(t.exact);
        assert_eq!(t.u, 58.0);
        assert!(
            (t.p_value - 0.135_911_147_675_853_55).abs() < 1e-12,
            "p = {}",
            t.p_value
        );
    }

    #[test]
    fn ties_three_against_three_never_go_below_the_exact_floor() {
        // The normal approximation gave p = 0.047 here, below the 0.1 that 3 vs 3 can reach.
        // The exact conditional p: B takes the 3 lowest of 6 places in 1 of 20 relabellings.
        let t = mann_whitney_u(&sample(&[1000.0; 3]), &sample(&[980.0; 3]));
        assert!(t.exact);
        assert_eq!(t.u, 0.0);
        assert!((t.p_value - 0.1).abs() < 1e-12, "p = {}", t.p_value);
        assert!(t.p_value >= min_achievable_p(3, 3));
    }

    #[test]
    fn ties_use_the_exact_conditional_distribution() {
        // All C(10, 5) = 252 relabellings of the pooled midranks counted by hand (Python,
        // fractions): P(R_B >= 34.5) = 28/252, two-sided p = 2/9.
        let a = sample(&[1.0, 2.0, 2.0, 3.0, 4.0]);
        let b = sample(&[2.0, 3.0, 4.0, 4.0, 5.0]);
        let t = mann_whitney_u(&a, &b);
        assert!(t.exact);
        assert_eq!(t.u, 19.5);
        assert!((t.p_value - 2.0 / 9.0).abs() < 1e-12, "p = {}", t.p_value);
    }

    #[test]
    fn identical_samples_give_p_one() {
        let a = sample(&[5.0, 5.0, 5.0]);
        let t = mann_whitney_u(&a, &a);
        assert_eq!(t.p_value, 1.0);
        assert_eq!(t.u, 4.5);
    }

    /// Two-sided p by listing every relabelling of the pooled values: B takes each `n`-subset
    /// of the places in turn, with midranks from their definition,
    /// `#{v < x} + (#{v = x} + 1)/2`.
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let midrank = |x: f64| {
            let below = pooled.iter().filter(|&&v| v < x).count() as f64;
            let equal = pooled.iter().filter(|&&v| v == x).count() as f64;
            below + (equal + 1.0) / 2.0
        };
        let ranks: Vec<f64> = pooled.iter().map(|&x| midrank(x)).collect();
        let observed: f64 = ranks[a.len()..].iter().sum();
        let (mut at_most, mut at_least, mut all) = (0u64, 0u64, 0u64);
        for mask in 0u32..1 << pooled.len() {
            if mask.count_ones() as usize != b.len() {
                continue;
            }
            let sum: f64 = (0..pooled.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| ranks[i])
                .sum();
            all += 1;
            at_most += u64::from(sum <= observed);
            at_least += u64::from(sum >= observed);
        }
        (2.0 * at_most.min(at_least) as f64 / all as f64).min(1.0)
    }

    /// Values on a coarse grid, so that ties are common.
    fn tied(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec((0u8..5).prop_map(|v| 10.0 * f64::from(v)), 1..=max_len)
    }

    proptest! {
        #[test]
        fn tied_exact_p_equals_brute_force_enumeration(a in tied(7), b in tied(7)) {
            let t = mann_whitney_u(&sample(&a), &sample(&b));
            prop_assert!(t.exact);
            let want = brute_force_p(&a, &b);
            prop_assert!((t.p_value - want).abs() < 1e-12, "{} vs {want}", t.p_value);
        }

        #[test]
        fn tie_aware_distribution_without_ties_equals_the_gaussian_binomial(
            m in 1usize..=25, n in 1usize..=25, u in 0usize..=625
        ) {
            let u = u.min(m * n);
            let old = UDistribution::new(m, n);
            let want = (2.0 * old.cdf(u).min(old.cdf(m * n - u))).min(1.0);
            // Untied doubled ranks 2, 4, …, 2(m+n); U = u is a doubled rank sum of B of
            // 2u + n(n+1).
            let scores: Vec<u64> = (1..=(m + n) as u64).map(|r| 2 * r).collect();
            let got = rank_sum_null(&scores, n).two_sided_p((2 * u + n * (n + 1)) as u64);
            prop_assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn p_is_never_below_the_design_minimum(a in tied(60), b in tied(60)) {
            let t = mann_whitney_u(&sample(&a), &sample(&b));
            let floor = min_achievable_p(a.len(), b.len());
            prop_assert!(t.p_value >= floor, "p {} < floor {floor}", t.p_value);
            prop_assert!(t.p_value <= 1.0);
        }
    }
}
