//! `compare`: two samples, A (baseline) and B (candidate), to a verdict with its evidence —
//! the U test, the Hodges-Lehmann shift and interval, and what these runs could have seen.
//!
//! Methods:
//! - Test and interval: see [`crate::mann_whitney`] and [`crate::hodges_lehmann`].
//! - Verdict (DESIGN.md, "Statistics"): REGRESSED / IMPROVED only when `p < alpha` *and* the
//!   relative interval lies entirely outside `±threshold`; NO CHANGE when it lies entirely
//!   inside; INCONCLUSIVE otherwise (run more).
//! - Minimum detectable effect and runs needed: the two-sample power formula for a location
//!   shift, `δ = (t₁₋α/₂,ν + t_power,ν) · σ · √((1/m + 1/n) · π/3)`, `ν = m + n − 2`, power
//!   [`POWER`] (Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed. 1988,
//!   ch. 2), where the factor `π/3` is the inverse of the U test's asymptotic relative efficiency
//!   3/π against the t-test under normal noise (Hodges & Lehmann, "The efficiency of some
//!   nonparametric competitors of the t-test", *Ann. Math. Statist.* 27, 1956): the U test needs
//!   about π/3 ≈ 1.05 times the runs. It is reported relative to the baseline median. `σ` is the
//!   pooled robust spread `1.4826·MAD` of both sides (the pooled sample standard deviation when
//!   both MADs are 0). The exact test's floor `2/C(m+n, m)` also counts: at or above alpha,
//!   nothing is detectable, and runs needed is at least the k with `2/C(2k, k) < alpha`.
//!
//! Hand-written: the formulas are short and no maintained crate bundles them; `statrs` gives
//! the t quantiles.

use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::StatsError;
use crate::hodges_lehmann::hodges_lehmann;
use crate::mann_whitney::{mann_whitney_u, min_achievable_p};
use crate::sample::{Estimate, Sample};

/// Statistical power assumed by the minimum detectable effect and the runs needed.
pub const POWER: f64 = 0.8;

/// Scales a MAD to estimate the standard deviation of normal data (`1/Φ⁻¹(¾)`).
const MAD_TO_SD: f64 = 1.4826;

/// Runs per side beyond which `runs_needed` stops counting (a threshold far below the noise).
pub const MAX_RUNS_NEEDED: usize = 1_000_000;

/// Which way is good for the metric compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput, ops/s: a lower B is a regression.
    HigherIsBetter,
    /// Latency, time, cycles per op: a higher B is a regression.
    LowerIsBetter,
}

/// How to judge a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Significance level of the U test, in (0, 1). Default 0.05.
    pub alpha: f64,
    /// Smallest relative change that matters (0.01 = 1%), ≥ 0. Default 0.01.
    pub threshold: f64,
    /// Which way is good. Default [`Direction::HigherIsBetter`] (throughput).
    pub direction: Direction,
    /// Coverage of the shift interval, in (0, 1). Default 0.95.
    pub level: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            alpha: 0.05,
            threshold: 0.01,
            direction: Direction::HigherIsBetter,
            level: 0.95,
        }
    }
}

/// The outcome of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is worse by more than the threshold, and significantly so.
    Regressed,
    /// B is better by more than the threshold, and significantly so.
    Improved,
    /// The whole interval lies within ±threshold: any change is too small to matter.
    NoChange,
    /// Neither: the data cannot tell. Run more.
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "IMPROVED",
            Verdict::NoChange => "NO CHANGE",
            Verdict::Inconclusive => "INCONCLUSIVE",
        })
    }
}

/// A comparison of B (candidate) against A (baseline).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Median of A.
    pub median_a: f64,
    /// Median of B.
    pub median_b: f64,
    /// `(median_b − median_a) / |median_a|` (the contract's `/ median_a` for the positive
    /// metrics scalelab measures; `|·|` keeps the sign of the change for a negative baseline).
    pub relative: f64,
    /// Hodges-Lehmann shift B − A with its distribution-free interval, in the samples' units.
    pub shift: Estimate,
    /// `shift / |median_a|`.
    pub relative_shift: Estimate,
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: f64,
    /// Whether `p_value` is exact (no ties, both sides ≤ 50) or a normal approximation.
    pub exact: bool,
    /// The verdict (see the module doc).
    pub verdict: Verdict,
    /// Smallest relative change these runs would detect with power [`POWER`] at this alpha
    /// (see the module doc for the formula). `None` when nothing is detectable: the exact test
    /// cannot reach alpha with these n (3 vs 3 at 0.05), or one value per side.
    pub min_detectable: Option<f64>,
    /// Runs per side that would make a change of `threshold` detectable with power
    /// [`POWER`]; `None` when these runs already suffice or the threshold is 0. With one value
    /// per side the noise is unknown and this is only the exact test's floor.
    pub runs_needed: Option<usize>,
    /// Smallest p-value the exact test can reach with these n, `2/C(m+n, m)` (3 vs 3 → 0.1):
    /// above alpha, too few runs to ever call a change.
    pub min_achievable_p: f64,
}

/// Compares candidate `b` against baseline `a`.
///
/// Fails when an option is out of range or A's median is 0 (no relative change exists).
pub fn compare(a: &Sample, b: &Sample, opts: &CompareOptions) -> Result<Change, StatsError> {
    check_options(opts)?;
    let (median_a, median_b) = (a.median(), b.median());
    if median_a == 0.0 {
        return Err(StatsError::ZeroBaseline);
    }
    let scale = median_a.abs();
    let test = mann_whitney_u(a, b);
    let shift = hodges_lehmann(a, b, opts.level);
    let relative_shift = Estimate {
        point: shift.point / scale,
        lower: shift.lower / scale,
        upper: shift.upper / scale,
        level: shift.level,
    };
    let (m, n) = (a.len(), b.len());
    let floor = min_achievable_p(m, n);
    let noise = noise_sd(a, b);
    let min_detectable = if floor >= opts.alpha {
        None
    } else {
        noise.and_then(|sd| detectable_shift(m, n, sd, opts.alpha).map(|d| d / scale))
    };
    let runs_needed = runs_needed(opts, scale, noise, min_detectable);
    Ok(Change {
        median_a,
        median_b,
        relative: (median_b - median_a) / scale,
        shift,
        relative_shift,
        p_value: test.p_value,
        exact: test.exact,
        verdict: verdict(test.p_value, &relative_shift, opts),
        min_detectable,
        runs_needed,
        min_achievable_p: floor,
    })
}

fn check_options(opts: &CompareOptions) -> Result<(), StatsError> {
    let unit = |name, value: f64| {
        if value > 0.0 && value < 1.0 {
            Ok(())
        } else {
            Err(StatsError::InvalidOption {
                name,
                value,
                expected: "strictly between 0 and 1",
            })
        }
    };
    unit("alpha", opts.alpha)?;
    unit("level", opts.level)?;
    if !(opts.threshold.is_finite() && opts.threshold >= 0.0) {
        return Err(StatsError::InvalidOption {
            name: "threshold",
            value: opts.threshold,
            expected: "a finite relative change >= 0 (0.01 = 1%)",
        });
    }
    Ok(())
}

/// The verdict rule of DESIGN.md over the relative interval.
fn verdict(p_value: f64, relative: &Estimate, opts: &CompareOptions) -> Verdict {
    let t = opts.threshold;
    let above = relative.lower > t;
    let below = relative.upper < -t;
    if p_value < opts.alpha && (above || below) {
        match (opts.direction, above) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => {
                Verdict::Improved
            }
            _ => Verdict::Regressed,
        }
    } else if relative.lower >= -t && relative.upper <= t {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    }
}

/// Pooled noise of both sides: robust (`1.4826·MAD`) when that is non-zero, else the pooled
/// sample standard deviation. `None` with one value per side.
fn noise_sd(a: &Sample, b: &Sample) -> Option<f64> {
    let (m, n) = (a.len() as f64, b.len() as f64);
    let df = m + n - 2.0;
    if df < 1.0 {
        return None;
    }
    let pooled = |sa: f64, sb: f64| (((m - 1.0) * sa * sa + (n - 1.0) * sb * sb) / df).sqrt();
    let robust = pooled(MAD_TO_SD * a.mad(), MAD_TO_SD * b.mad());
    if robust > 0.0 {
        return Some(robust);
    }
    Some(pooled(
        a.std_dev().unwrap_or(0.0),
        b.std_dev().unwrap_or(0.0),
    ))
}

/// Smallest absolute shift detectable with power [`POWER`] by the U test with `m` and `n`
/// values of noise `sd` (see the module doc). `None` with fewer than 3 values in all.
fn detectable_shift(m: usize, n: usize, sd: f64, alpha: f64) -> Option<f64> {
    let dof = (m + n).checked_sub(2).filter(|&d| d > 0)? as f64;
    let t = StudentsT::new(0.0, 1.0, dof).expect("dof > 0 is valid");
    let quantiles = t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(POWER);
    let (m, n) = (m as f64, n as f64);
    Some(quantiles * sd * ((1.0 / m + 1.0 / n) * std::f64::consts::PI / 3.0).sqrt())
}

/// Runs per side (balanced) for a relative change of `threshold` to be detectable, or `None`
/// when these runs already suffice or the threshold is 0.
fn runs_needed(
    opts: &CompareOptions,
    scale: f64,
    noise: Option<f64>,
    min_detectable: Option<f64>,
) -> Option<usize> {
    if opts.threshold <= 0.0 || min_detectable.is_some_and(|d| d <= opts.threshold) {
        return None;
    }
    let target = opts.threshold * scale;
    let enough = |k: usize| {
        min_achievable_p(k, k) < opts.alpha
            && noise.is_none_or(|sd| {
                detectable_shift(k, k, sd, opts.alpha).is_some_and(|d| d <= target)
            })
    };
    // `enough` is monotone in k: double to bracket, then bisect.
    let mut high = 2;
    while !enough(high) {
        if high >= MAX_RUNS_NEEDED {
            return Some(MAX_RUNS_NEEDED);
        }
        high = (high * 2).min(MAX_RUNS_NEEDED);
    }
    let mut low = high / 2; // not enough (or 1, which never is)
    while high - low > 1 {
        let mid = (low + high) / 2;
        if enough(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    Some(high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values: &[f64]) -> Sample {
        Sample::new(values.to_vec()).unwrap()
    }

    /// Deterministic pseudo-noise in [-1, 1].
    fn wobble(i: usize) -> f64 {
        ((i as f64 * 12.9898).sin() * 43_758.545_3).fract()
    }

    fn noisy(center: f64, spread: f64, n: usize, seed: usize) -> Sample {
        sample(
            &(0..n)
                .map(|i| center * (1.0 + spread * wobble(i + 1000 * seed)))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn verdict_display() {
        let shown: Vec<String> = [
            Verdict::Regressed,
            Verdict::Improved,
            Verdict::NoChange,
            Verdict::Inconclusive,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            ["REGRESSED", "IMPROVED", "NO CHANGE", "INCONCLUSIVE"]
        );
    }

    #[test]
    fn throughput_drop_is_a_regression_and_latency_drop_an_improvement() {
        let a = noisy(1000.0, 0.005, 20, 1);
        let b = noisy(900.0, 0.005, 20, 2);
        let change = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(change.verdict, Verdict::Regressed);
        assert!((change.relative + 0.1).abs() < 0.01);
        assert!(change.relative_shift.upper < -0.01);
        assert!(change.p_value < 1e-6);
        let opts = CompareOptions {
            direction: Direction::LowerIsBetter,
            ..CompareOptions::default()
        };
        assert_eq!(compare(&a, &b, &opts).unwrap().verdict, Verdict::Improved);
        assert_eq!(compare(&b, &a, &opts).unwrap().verdict, Verdict::Regressed);
    }

    #[test]
    fn tiny_change_within_threshold_is_no_change() {
        let a = noisy(1000.0, 0.001, 30, 3);
        let b = noisy(1001.0, 0.001, 30, 4);
        let change = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(change.verdict, Verdict::NoChange, "{change:?}");
        assert_eq!(change.runs_needed, None);
        assert!(change.min_detectable.unwrap() < 0.01);
    }

    #[test]
    fn three_runs_each_cannot_reach_significance() {
        let a = sample(&[100.0, 101.0, 102.0]);
        let b = sample(&[80.0, 81.0, 82.0]);
        let change = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert!((change.min_achievable_p - 0.1).abs() < 1e-12);
        assert!((change.p_value - 0.1).abs() < 1e-12);
        assert_eq!(change.verdict, Verdict::Inconclusive);
        assert_eq!(change.min_detectable, None);
        // At least 4 per side are needed for 2/C(2k, k) < 0.05.
        assert!(change.runs_needed.unwrap() >= 4);
    }

    #[test]
    fn noisy_small_samples_ask_for_more_runs() {
        let a = noisy(1000.0, 0.05, 5, 5);
        let b = noisy(1000.0, 0.05, 5, 6);
        let change = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(change.verdict, Verdict::Inconclusive);
        let mde = change.min_detectable.unwrap();
        assert!(mde > 0.01, "mde {mde}");
        let k = change.runs_needed.unwrap();
        assert!(k > 5, "runs needed {k}");
        // Running k per side with the same noise would make 1% detectable.
        let sd = noise_sd(&a, &b).unwrap();
        let d = detectable_shift(k, k, sd, 0.05).unwrap() / a.median();
        assert!(d <= 0.01 + 1e-12, "{d}");
    }

    #[test]
    fn detectable_shift_matches_hand_computation() {
        // 10 vs 10, alpha 0.05, power 0.8, ν = 18: t quantiles 2.1009 + 0.8621 = 2.9630,
        // √(0.2 · π/3) = 0.45769, δ = 1.3561 σ.
        let d = detectable_shift(10, 10, 1.0, 0.05).unwrap();
        assert!((d - 1.3561).abs() < 1e-3, "{d}");
        assert_eq!(detectable_shift(1, 1, 1.0, 0.05), None);
    }

    #[test]
    fn rejects_bad_options_and_zero_baseline() {
        let a = sample(&[1.0, 2.0]);
        let bad = CompareOptions {
            alpha: 1.5,
            ..CompareOptions::default()
        };
        let err = compare(&a, &a, &bad).unwrap_err();
        assert!(err.to_string().contains("alpha = 1.5"), "{err}");
        let bad = CompareOptions {
            threshold: f64::NAN,
            ..CompareOptions::default()
        };
        assert!(compare(&a, &a, &bad).is_err());
        let zero = sample(&[-1.0, 0.0, 1.0]);
        assert_eq!(
            compare(&zero, &a, &CompareOptions::default()),
            Err(StatsError::ZeroBaseline)
        );
    }

    #[test]
    fn one_value_each_is_inconclusive_with_a_floor_on_runs() {
        let change = compare(
            &sample(&[10.0]),
            &sample(&[12.0]),
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(change.verdict, Verdict::Inconclusive);
        assert_eq!(change.p_value, 1.0);
        assert_eq!(change.runs_needed, Some(4));
        assert_eq!(change.shift.point, 2.0);
    }

    #[test]
    fn verdict_serialises_in_snake_case() {
        let json = serde_json::to_string(&Verdict::NoChange).unwrap();
        assert_eq!(json, "\"no_change\"");
        let back: Direction = serde_json::from_str("\"lower_is_better\"").unwrap();
        assert_eq!(back, Direction::LowerIsBetter);
    }
}
