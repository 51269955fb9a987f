//! When `ab --max-runs` adds pairs: while some N cannot yet decide a change of ±threshold —
//! the noise hides it (the comparison's "runs needed") or its interval is wider than [`WIDE`]
//! thresholds. Both read only the spread of the pairs' changes, never the verdict or where the
//! interval lies, so looking again does not inflate false alarms.

use stats::Change;

use analysis::comparison::Comparison;

/// An interval wider than this many thresholds is too imprecise to decide a change of
/// ±threshold: a change the noise estimate (robust, so blind to a few wild pairs) says is
/// detectable can still leave a rank interval this wide when two of ten pairs are outliers.
/// 1.4 is the width of a 95% interval (2 × 1.96 standard errors) when the minimum detectable
/// effect at 80% power (2.8 standard errors) equals the threshold.
pub(crate) const WIDE: f64 = 1.4;

/// Pairs per point to grow to, at most `max_runs`, while some N cannot yet decide a change of
/// ±threshold ([`imprecise`]); `None` when every N can. Both tests read only the spread of the
/// pairs — `runs_needed` from their robust spread, the interval's width, which does not move
/// when every pair's change moves alike — never the verdict or where the interval lies.
pub(crate) fn extension(comparison: &Comparison, planned: u32, max_runs: u32) -> Option<u32> {
    let threshold = comparison.options.threshold;
    let want = comparison
        .points
        .iter()
        .filter_map(|p| p.change)
        .filter(|c| imprecise(c, threshold))
        .map(|c| {
            let needed = c
                .runs_needed
                .map_or(0, |k| u32::try_from(k).unwrap_or(u32::MAX));
            // Wide with enough runs by the noise estimate: half as many again, then look again.
            needed.max(planned.saturating_add(planned.div_ceil(2)))
        })
        .max()?;
    Some(want.max(planned + 1).min(max_runs))
}

/// Whether a point's pairs cannot yet decide a change of ±threshold: the noise hides it (runs
/// needed) or the interval is more than [`WIDE`] thresholds wide. Never with a threshold of 0.
pub(crate) fn imprecise(c: &Change, threshold: f64) -> bool {
    let r = c.relative_shift;
    threshold > 0.0 && (c.runs_needed.is_some() || r.upper - r.lower > WIDE * threshold)
}

/// The N that cannot yet decide a change of ±threshold.
pub(crate) fn undecided(comparison: &Comparison) -> Vec<u32> {
    comparison
        .points
        .iter()
        .filter(|p| {
            p.change
                .is_some_and(|c| imprecise(&c, comparison.options.threshold))
        })
        .map(|p| p.n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::{Estimate, Method, Verdict};

    fn change(lower: f64, upper: f64, runs_needed: Option<usize>) -> Change {
        Change {
            method: Method::SignedRank,
            median_a: 100.0,
            median_b: 97.0,
            relative: -0.03,
            shift: Estimate {
                point: -3.0,
                lower: lower * 100.0,
                upper: upper * 100.0,
                level: 0.95,
            },
            relative_shift: Estimate {
                point: -0.03,
                lower,
                upper,
                level: 0.95,
            },
            p_value: 0.002,
            exact: true,
            verdict: Verdict::Inconclusive,
            min_detectable: Some(0.005),
            runs_needed,
            min_achievable_p: 0.002,
        }
    }

    #[test]
    fn a_wide_interval_or_too_much_noise_is_imprecise_whatever_its_centre() {
        // Two wild pairs of ten: the robust noise says 1% is detectable, the interval disagrees.
        assert!(imprecise(&change(-0.0325, 0.0068, None), 0.01));
        // Tight, wherever it lies: decided (as REGRESSED, or as NO CHANGE).
        assert!(!imprecise(&change(-0.035, -0.025, None), 0.01));
        assert!(!imprecise(&change(-0.004, 0.004, None), 0.01));
        // The same width moved anywhere is judged alike: the rule never reads the centre.
        assert_eq!(
            imprecise(&change(-0.02, 0.0, None), 0.01),
            imprecise(&change(0.05, 0.07, None), 0.01)
        );
        assert!(imprecise(&change(-0.035, -0.025, Some(40)), 0.01));
        // A threshold of 0 has no precision to reach.
        assert!(!imprecise(&change(-0.5, 0.5, Some(40)), 0.0));
    }
}
