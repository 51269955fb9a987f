//! Exact permutation (conditional) null distributions of the two rank statistics, ties
//! included: the rank sum of one sample over every relabelling of the pooled values, and the
//! signed-rank sum over every sign pattern.
//!
//! With ties the rank tests give tied values their midrank, and the null distribution that
//! holds is the one conditional on the tie pattern: every one of the `C(N, k)` relabellings
//! (every one of the `2ⁿ` sign patterns) is equally likely, each with the midranks the data
//! actually have (Lehmann, *Nonparametrics: Statistical Methods Based on Ranks*, 1975, ch. 1
//! and 3; Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., §3.1 and
//! §4.1). It never gives a p-value below what the design can reach: `1/C(N, k)` (`1/2ⁿ`).
//!
//! Method: doubled midranks `2·midrank = 2·(values below) + t + 1` are integers, so the
//! distribution of a sum of scores is a polynomial in `q` counted exactly in `u128` by dynamic
//! programming over the scores — the shift algorithm of Streitberg & Röhmel ("Exact
//! distributions for permutation and rank tests: an introduction to some recently published
//! algorithms", *Statistical Software Newsletter* 12, 1986), which is the generating function
//! `Π_i (1 + x·q^{s_i})` read at `x^k` for the rank sum, and `Π_i (1 + q^{s_i})` for the
//! signed-rank sum. Cost: `N·k·Σs` steps for the rank sum (50 vs 50: about 4·10⁷ additions),
//! `n·Σs` for the signed-rank sum. Counts stay below `C(100, 50) ≈ 10²⁹` and `2¹²⁷`.
//!
//! Without ties the scores are `2, 4, …, 2N` and the distributions are those of
//! [`crate::mann_whitney`] and [`crate::signed_rank`] (checked by property tests).
//! Hand-written: no maintained crate offers exact conditional rank distributions.

/// Doubled midranks of `values` (ascending) in their own order: ties share
/// `2·(values below) + t + 1`.
pub(crate) fn doubled_midranks(sorted: &[f64]) -> Vec<u64> {
    let mut scores = Vec::with_capacity(sorted.len());
    let mut below = 0;
    while below < sorted.len() {
        let t = sorted[below..]
            .iter()
            .take_while(|&&v| v == sorted[below])
            .count();
        scores.extend(std::iter::repeat_n((2 * below + t + 1) as u64, t));
        below += t;
    }
    scores
}

/// The exact distribution of an integer statistic: `counts[s]` arrangements give `S = s`.
#[derive(Debug, Clone)]
pub(crate) struct NullCounts {
    counts: Vec<u128>,
}

impl NullCounts {
    /// Every arrangement counted once.
    pub(crate) fn total(&self) -> u128 {
        self.counts.iter().sum()
    }

    /// The two-sided p-value of the observed statistic `s`: `2·min(P(S ≤ s), P(S ≥ s))`,
    /// at most 1. Never below `2/total`.
    pub(crate) fn two_sided_p(&self, s: u64) -> f64 {
        let s = usize::try_from(s).unwrap_or(usize::MAX);
        let split = s.min(self.counts.len());
        let below: u128 = self.counts[..split].iter().sum();
        let at = self.counts.get(s).copied().unwrap_or(0);
        let total = self.total();
        let lower = below + at;
        let upper = total - below;
        let tail = lower.min(upper);
        (2.0 * (tail as f64 / total as f64)).min(1.0)
    }
}

/// Distribution of the sum of `k` of the `scores` chosen at random, every `k`-subset equally
/// likely (the rank sum of a sample of `k` under relabelling).
///
/// # Panics
/// When `k` exceeds the number of scores or the counts could overflow (`scores.len()` > 127).
pub(crate) fn rank_sum_null(scores: &[u64], k: usize) -> NullCounts {
    assert!(
        k <= scores.len() && scores.len() <= 127,
        "rank sum of {k} of {}",
        scores.len()
    );
    let mut largest = scores.to_vec();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    let width = largest[..k].iter().sum::<u64>() as usize + 1;
    // rows[j·width + s]: subsets of j of the scores seen so far with sum s.
    let mut rows = vec![0u128; (k + 1) * width];
    rows[0] = 1;
    // Largest sum reachable by row j so far.
    let mut top = vec![0usize; k + 1];
    for (seen, &score) in scores.iter().enumerate() {
        let score = score as usize;
        for j in (1..=k.min(seen + 1)).rev() {
            let (lower, upper) = rows.split_at_mut(j * width);
            let src = &lower[(j - 1) * width..j * width];
            let dst = &mut upper[..width];
            let reach = (top[j - 1] + score).min(width - 1);
            for s in score..=reach {
                dst[s] += src[s - score];
            }
            top[j] = top[j].max(reach);
        }
    }
    NullCounts {
        counts: rows[k * width..].to_vec(),
    }
}

/// Distribution of the sum of the scores that carry a `+` sign, every sign pattern equally
/// likely (the signed-rank sum `T⁺`).
///
/// # Panics
/// When the counts could overflow (more than 127 scores).
pub(crate) fn signed_rank_null(scores: &[u64]) -> NullCounts {
    assert!(
        scores.len() <= 127,
        "signed-rank sum of {} scores",
        scores.len()
    );
    let top = scores.iter().sum::<u64>() as usize;
    let mut counts = vec![0u128; top + 1];
    counts[0] = 1;
    let mut reach = 0;
    for &score in scores {
        let score = score as usize;
        reach += score;
        // Multiply by (1 + q^score), in place from the top.
        for s in (score..=reach).rev() {
            counts[s] += counts[s - score];
        }
    }
    NullCounts { counts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_midranks_share_the_middle_of_a_tie() {
        assert_eq!(doubled_midranks(&[1.0, 2.0, 3.0]), [2, 4, 6]);
        // Ranks 2,3,4 tie at 3; ranks 5,6 at 5.5.
        assert_eq!(
            doubled_midranks(&[0.5, 2.0, 2.0, 2.0, 7.0, 7.0]),
            [2, 6, 6, 6, 11, 11]
        );
        assert!(doubled_midranks(&[]).is_empty());
    }

    #[test]
    fn rank_sum_of_three_of_six_in_two_tie_groups() {
        // Doubled scores 4,4,4 and 10,10,10: j low values chosen in C(3,j)·C(3,3−j) ways.
        let d = rank_sum_null(&[4, 4, 4, 10, 10, 10], 3);
        assert_eq!(d.total(), 20);
        for (s, ways) in [(12, 1), (18, 9), (24, 9), (30, 1)] {
            assert_eq!(d.counts[s], ways, "sum {s}");
        }
        assert!((d.two_sided_p(12) - 0.1).abs() < 1e-15);
        assert!((d.two_sided_p(30) - 0.1).abs() < 1e-15);
        assert_eq!(d.two_sided_p(18), 1.0);
        assert_eq!(d.two_sided_p(0), 0.0);
    }

    #[test]
    fn signed_rank_of_equal_scores_is_binomial() {
        let d = signed_rank_null(&[6; 5]);
        assert_eq!(d.total(), 32);
        for (j, ways) in [1u128, 5, 10, 10, 5, 1].iter().enumerate() {
            assert_eq!(d.counts[6 * j], *ways);
        }
        assert!((d.two_sided_p(0) - 0.0625).abs() < 1e-15);
    }

    #[test]
    fn largest_sizes_fit_and_sum_to_the_number_of_arrangements() {
        let scores: Vec<u64> = (1..=100).map(|r| 2 * r).collect();
        let d = rank_sum_null(&scores, 50);
        // C(100, 50)
        assert_eq!(d.total(), 100_891_344_545_564_193_334_812_497_256);
        let d = signed_rank_null(&scores[..50]);
        assert_eq!(d.total(), 1 << 50);
    }
}
