//! `Sample`: one point's trials, checked when built, with its location, spread, a
//! distribution-free interval for the median, and MAD-based outliers.
//!
//! Methods:
//! - The confidence interval for the median is the classical order-statistic interval
//!   `[x(k), x(n+1-k)]`, whose coverage `1 - 2·P(B ≤ k-1)` with `B ~ Binomial(n, 1/2)` needs no
//!   assumption about the distribution (Conover, *Practical Nonparametric Statistics*, 3rd ed.,
//!   §3.2; Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, §3.6). The binomial
//!   CDF comes from `statrs`; the choice of `k` is hand-written (a binary search), as no
//!   maintained crate offers this interval.
//! - Outliers use the modified z-score `M = 0.6745·(x − median)/MAD` and the cut-off `|M| > 3.5`
//!   of Iglewicz & Hoaglin, *How to Detect and Handle Outliers* (ASQC, 1993). Hand-written: it
//!   is three lines over the median and MAD.
//!
//! Everything here is pure: no I/O, no clock, no randomness.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

use crate::error::StatsError;

/// Modified z-score above which a value is an outlier (Iglewicz & Hoaglin 1993).
pub(crate) const OUTLIER_CUTOFF: f64 = 3.5;

/// `Φ⁻¹(0.75)`: makes the MAD of a normal distribution estimate its standard deviation.
const MAD_TO_Z: f64 = 0.6745;

/// A point estimate with a confidence interval.
///
/// `level` is the coverage the interval was built for (0.95 = 95%). Distribution-free
/// intervals on few values cannot reach every level: then `level` is the coverage actually
/// achieved, which may be lower than asked (see [`Sample::median_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The estimate itself (a median, a shift, a parameter).
    pub point: f64,
    /// Lower end of the interval.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
    /// Coverage of the interval, in `[0, 1]`.
    pub level: f64,
}

impl Estimate {
    /// Whether `x` lies within `[lower, upper]`.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// `upper - lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }
}

/// A value flagged by [`Sample::outliers`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Position in the sample's original order ([`Sample::values`]).
    pub index: usize,
    /// The value.
    pub value: f64,
    /// Signed modified z-score, `0.6745·(value − median)/MAD`; `±∞` when the MAD is 0 (more
    /// than half the values are equal to the median) and the value differs from the median.
    pub score: f64,
}

/// A set of finite measurements (one per trial), kept in the order given and sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    values: Vec<f64>,
    sorted: Vec<f64>,
}

impl Sample {
    /// Builds a sample; fails on no values or on any NaN or infinite value.
    pub fn new(values: Vec<f64>) -> Result<Sample, StatsError> {
        if values.is_empty() {
            return Err(StatsError::EmptySample);
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NonFiniteValue { index, value });
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        Ok(Sample { values, sorted })
    }

    /// Number of values (always at least 1).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Always false: a `Sample` holds at least one value. Present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in the order given.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values in ascending order.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// Median (mean of the two middle values when the length is even).
    pub fn median(&self) -> f64 {
        median_of_sorted(&self.sorted)
    }

    /// The `p` quantile (0 ≤ p ≤ 1, clamped), interpolated linearly between the two nearest
    /// order statistics (R's type 7, NumPy's default): 0.5 is the median.
    pub fn quantile(&self, p: f64) -> f64 {
        let last = self.sorted.len() - 1;
        let position = p.clamp(0.0, 1.0) * last as f64;
        let below = position.floor() as usize;
        let above = (below + 1).min(last);
        let fraction = position - below as f64;
        self.sorted[below] + fraction * (self.sorted[above] - self.sorted[below])
    }

    /// Arithmetic mean.
    pub fn mean(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.len() as f64
    }

    /// Smallest value.
    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    /// Largest value.
    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// Sample standard deviation (divisor `n − 1`); `None` with fewer than 2 values.
    pub fn std_dev(&self) -> Option<f64> {
        let n = self.len();
        if n < 2 {
            return None;
        }
        let mean = self.mean();
        let ss: f64 = self.values.iter().map(|v| (v - mean) * (v - mean)).sum();
        Some((ss / (n - 1) as f64).sqrt())
    }

    /// Coefficient of variation `sd / |mean|`; `None` with fewer than 2 values or a zero mean.
    pub fn cv(&self) -> Option<f64> {
        let mean = self.mean();
        if mean == 0.0 {
            return None;
        }
        self.std_dev().map(|sd| sd / mean.abs())
    }

    /// Median absolute deviation from the median, unscaled (multiply by 1.4826 to estimate
    /// the standard deviation of normal data).
    pub fn mad(&self) -> f64 {
        let median = self.median();
        let mut deviations: Vec<f64> = self.sorted.iter().map(|v| (v - median).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        median_of_sorted(&deviations)
    }

    /// Distribution-free confidence interval for the median from order statistics.
    ///
    /// Returns `[x(k), x(n+1−k)]` for the largest `k` whose coverage
    /// `1 − 2·P(Binomial(n, ½) ≤ k − 1)` is at least `level`, with `level` reported as asked.
    /// When even `[min, max]` (`k = 1`) covers less than `level` — too few values — the result
    /// is `[min, max]` with `level` set to the coverage achieved, `1 − 2^(1−n)` (n = 3 → 0.75,
    /// n = 1 → 0, a degenerate interval at the single value). A `level` of NaN or ≥ 1 is
    /// treated as unreachable, giving `[min, max]` with the coverage achieved.
    pub fn median_interval(&self, level: f64) -> Estimate {
        let (k, achieved) = order_statistic_rank(self.len(), level);
        let n = self.len();
        Estimate {
            point: self.median(),
            lower: self.sorted[k - 1],
            upper: self.sorted[n - k],
            level: achieved,
        }
    }

    /// Values whose modified z-score exceeds 3.5 in magnitude (Iglewicz & Hoaglin), with
    /// their index into [`Sample::values`], in that order.
    ///
    /// When the MAD is 0 (more than half the values equal the median) every value that
    /// differs from the median is returned, with an infinite score.
    pub fn outliers(&self) -> Vec<Outlier> {
        let median = self.median();
        let mad = self.mad();
        self.values
            .iter()
            .enumerate()
            .filter_map(|(index, &value)| {
                let deviation = value - median;
                let score = if mad > 0.0 {
                    MAD_TO_Z * deviation / mad
                } else if deviation != 0.0 {
                    f64::INFINITY.copysign(deviation)
                } else {
                    0.0
                };
                (score.abs() > OUTLIER_CUTOFF).then_some(Outlier {
                    index,
                    value,
                    score,
                })
            })
            .collect()
    }
}

/// Median of an ascending, non-empty slice.
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    debug_assert!(n > 0, "median of an empty slice");
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// For `n` values and a wanted coverage, the 1-based rank `k` of the lower order statistic
/// and the level to report (the asked level, or the coverage achieved by `k = 1` when the
/// asked level is out of reach).
fn order_statistic_rank(n: usize, level: f64) -> (usize, f64) {
    let binomial = Binomial::new(0.5, n as u64).expect("p = 0.5 is a valid probability");
    // Coverage of [x(k), x(n+1-k)]; falls as k grows.
    let coverage = |k: usize| 1.0 - 2.0 * binomial.cdf((k - 1) as u64);
    // Coverage of [min, max], 1 − 2^(1−n), computed exactly (n = 1 → 0, n = 3 → 0.75).
    let widest = 1.0 - 0.5f64.powi(i32::try_from(n - 1).unwrap_or(i32::MAX));
    if level.is_nan() || widest < level || level >= 1.0 {
        return (1, widest);
    }
    // Largest k in [1, (n+1)/2] with coverage(k) >= level; coverage(1) >= level holds.
    let (mut good, mut bad) = (1usize, n.div_ceil(2) + 1);
    while bad - good > 1 {
        let mid = (good + bad) / 2;
        if coverage(mid) >= level {
            good = mid;
        } else {
            bad = mid;
        }
    }
    (good, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Type 7 quantiles, as R's `quantile(c(4, 1, 3, 2), c(0, .25, .5, .75, 1))` gives them:
    /// 1, 1.75, 2.5, 3.25, 4.
    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let s = Sample::new(vec![4.0, 1.0, 3.0, 2.0]).unwrap();
        let q: Vec<f64> = [0.0, 0.25, 0.5, 0.75, 1.0, 2.0]
            .iter()
            .map(|&p| s.quantile(p))
            .collect();
        assert_eq!(q, [1.0, 1.75, 2.5, 3.25, 4.0, 4.0]);
        assert_eq!(s.quantile(0.5), s.median());
        assert_eq!(Sample::new(vec![7.0]).unwrap().quantile(0.25), 7.0);
    }

    fn sample(values: &[f64]) -> Sample {
        Sample::new(values.to_vec()).unwrap()
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        assert_eq!(Sample::new(vec![]), Err(StatsError::EmptySample));
        let err = Sample::new(vec![1.0, f64::NAN]).unwrap_err();
        assert!(matches!(err, StatsError::NonFiniteValue { index: 1, .. }));
        assert!(err.to_string().contains("#1"));
        assert!(Sample::new(vec![f64::INFINITY]).is_err());
    }

    #[test]
    fn keeps_original_order_and_sorts() {
        let s = sample(&[3.0, 1.0, 2.0]);
        assert_eq!(s.values(), &[3.0, 1.0, 2.0]);
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0]);
        assert_eq!((s.min(), s.max(), s.len()), (1.0, 3.0, 3));
        assert!(!s.is_empty());
    }

    #[test]
    fn location_and_spread() {
        let s = sample(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.median(), 4.5);
        assert_eq!(s.mean(), 5.0);
        // Sum of squared deviations is 32, n - 1 = 7.
        assert!((s.std_dev().unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.cv().unwrap() - (32.0f64 / 7.0).sqrt() / 5.0).abs() < 1e-12);
        // |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> median 0.5
        assert_eq!(s.mad(), 0.5);
    }

    #[test]
    fn single_value_has_no_spread() {
        let s = sample(&[7.0]);
        assert_eq!(s.std_dev(), None);
        assert_eq!(s.cv(), None);
        assert_eq!(s.mad(), 0.0);
        let ci = s.median_interval(0.95);
        assert_eq!(
            (ci.point, ci.lower, ci.upper, ci.level),
            (7.0, 7.0, 7.0, 0.0)
        );
    }

    #[test]
    fn median_interval_small_n_reports_achieved_level() {
        let ci = sample(&[3.0, 1.0, 2.0]).median_interval(0.95);
        assert_eq!((ci.lower, ci.point, ci.upper), (1.0, 2.0, 3.0));
        assert_eq!(ci.level, 0.75);
        // n = 5: widest interval covers 1 - 2/32 = 0.9375 < 0.95.
        let ci = sample(&[1.0, 2.0, 3.0, 4.0, 5.0]).median_interval(0.95);
        assert!((ci.level - 0.9375).abs() < 1e-12);
        // n = 6: 1 - 2/64 = 0.96875 >= 0.95, so the asked level stands.
        let ci = sample(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).median_interval(0.95);
        assert_eq!((ci.lower, ci.upper, ci.level), (1.0, 6.0, 0.95));
    }

    #[test]
    fn median_interval_matches_tables() {
        // Conover's table: n = 20, 95% -> k = 6 (coverage 0.9586), n = 10 -> k = 2 (0.9785).
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = sample(&values).median_interval(0.95);
        assert_eq!((ci.lower, ci.upper, ci.level), (6.0, 15.0, 0.95));
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = sample(&values).median_interval(0.95);
        assert_eq!((ci.lower, ci.upper), (2.0, 9.0));
    }

    #[test]
    fn median_interval_unreachable_levels() {
        let s = sample(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        for level in [f64::NAN, 1.0, 2.0] {
            let ci = s.median_interval(level);
            assert_eq!((ci.lower, ci.upper), (1.0, 8.0));
            assert!((ci.level - (1.0 - 2.0 / 256.0)).abs() < 1e-12);
        }
        // A level of 0 gives the narrowest central interval.
        let ci = s.median_interval(0.0);
        assert_eq!((ci.lower, ci.upper), (4.0, 5.0));
    }

    #[test]
    fn flags_a_far_value_with_its_original_index() {
        let s = sample(&[10.0, 10.2, 9.9, 10.1, 30.0, 9.8, 10.0]);
        let out = s.outliers();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].index, out[0].value), (4, 30.0));
        assert!(out[0].score > OUTLIER_CUTOFF);
    }

    #[test]
    fn zero_mad_flags_only_values_off_the_median() {
        assert!(sample(&[5.0, 5.0, 5.0]).outliers().is_empty());
        let out = sample(&[5.0, 5.0, 1.0, 5.0]).outliers();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].index, 2);
        assert_eq!(out[0].score, f64::NEG_INFINITY);
    }

    #[test]
    fn estimate_round_trips_through_json() {
        let e = Estimate {
            point: 1.5,
            lower: 1.0,
            upper: 2.0,
            level: 0.95,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Estimate>(&json).unwrap(), e);
        assert!(e.contains(1.0) && !e.contains(2.5));
        assert_eq!(e.width(), 1.0);
    }
}
