//! `compare`: two samples, A (baseline) and B (candidate), to a verdict with its evidence —
//! the test, the Hodges-Lehmann shift and interval, and what these runs could have seen.
//! [`compare`] treats the samples as independent; [`compare_paired`] takes trials that ran in
//! back-to-back pairs and judges the per-pair changes, which cancels whatever slows both
//! trials of a pair alike.
//!
//! Methods:
//! - Independent samples, test and interval: see [`crate::mann_whitney`] and
//!   [`crate::hodges_lehmann`].
//! - Paired samples: the per-pair log ratio `ln(b_i/a_i)` when every value is positive (a
//!   disturbance that slows a pair by some factor cancels exactly), else the difference
//!   `(b_i − a_i)/|median_a|`; the Wilcoxon signed-rank test and the Walsh-average centre with
//!   its interval of [`crate::signed_rank`]; a log-ratio centre `c` is reported as the relative
//!   change `eᶜ − 1`.
//! - Verdict (DESIGN.md, "Statistics"): REGRESSED / IMPROVED only when `p < alpha` *and* the
//!   relative interval lies entirely outside `±threshold`; NO CHANGE when it lies entirely
//!   inside; INCONCLUSIVE otherwise (run more).
//! - Minimum detectable effect and runs needed: the power formula for a location shift at power
//!   [`POWER`] (Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed. 1988,
//!   ch. 2) scaled by the rank tests' asymptotic relative efficiency 3/π (Hodges & Lehmann,
//!   *Ann. Math. Statist.* 27, 1956), with a robust spread, and never below the exact test's
//!   floor; the formulas are on `detectable_shift` and `detectable_paired`.
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
use crate::signed_rank::{hodges_lehmann_paired, min_achievable_p_paired, wilcoxon_signed_rank};

/// Statistical power assumed by the minimum detectable effect and the runs needed.
pub(crate) const POWER: f64 = 0.8;

/// Scales a MAD to estimate the standard deviation of normal data (`1/Φ⁻¹(¾)`).
const MAD_TO_SD: f64 = 1.4826;

/// Runs per side beyond which `runs_needed` stops counting (a threshold far below the noise).
pub(crate) const MAX_RUNS_NEEDED: usize = 1_000_000;

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

/// Which test and interval a [`Change`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Independent samples: the Mann-Whitney U test and the two-sample Hodges-Lehmann shift.
    #[default]
    MannWhitney,
    /// Back-to-back pairs: the Wilcoxon signed-rank test on per-pair changes and their
    /// Walsh-average centre.
    SignedRank,
}

/// A comparison of B (candidate) against A (baseline).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// How the samples were compared.
    #[serde(default)]
    pub method: Method,
    /// Median of A.
    pub median_a: f64,
    /// Median of B.
    pub median_b: f64,
    /// `(median_b − median_a) / |median_a|` (the contract's `/ median_a` for the positive
    /// metrics scalelab measures; `|·|` keeps the sign of the change for a negative baseline).
    pub relative: f64,
    /// Hodges-Lehmann shift B − A with its distribution-free interval, in the samples' units
    /// (paired: the relative shift times `|median_a|`).
    pub shift: Estimate,
    /// `shift / |median_a|`.
    pub relative_shift: Estimate,
    /// Two-sided p-value of the test [`Change::method`] names.
    pub p_value: f64,
    /// Whether `p_value` is exact (≤ 50 values a side or changed pairs; with ties, conditional
    /// on them) or a normal approximation (never below `min_achievable_p`).
    pub exact: bool,
    /// The verdict (see the module doc).
    pub verdict: Verdict,
    /// Smallest relative change these runs would detect with power 0.8 at this alpha
    /// (the formula is on `detectable_shift`). `None` when nothing is detectable: the exact test
    /// cannot reach alpha with these n (3 vs 3 at 0.05), or one value per side.
    pub min_detectable: Option<f64>,
    /// Runs per side that would make a change of `threshold` detectable with power
    /// 0.8; `None` when these runs already suffice or the threshold is 0. With one value
    /// per side the noise is unknown and this is only the exact test's floor.
    pub runs_needed: Option<usize>,
    /// Smallest p-value the exact test can reach with these n, `2/C(m+n, m)` (3 vs 3 → 0.1;
    /// paired `2/2ⁿ` over the pairs whose change is not 0, 4 pairs → 0.125): above alpha, too
    /// few runs to ever call a change. `p_value` is never below it.
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
    let target = opts.threshold * scale;
    let runs_needed = runs_needed(opts, min_detectable, |k| {
        min_achievable_p(k, k) < opts.alpha
            && noise.is_none_or(|sd| {
                detectable_shift(k, k, sd, opts.alpha).is_some_and(|d| d <= target)
            })
    });
    Ok(Change {
        method: Method::MannWhitney,
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

/// Compares candidate `b` against baseline `a` where `a[i]` and `b[i]` ran as a pair, back to
/// back (see the module doc).
///
/// Fails when the sides differ in length, a value is not finite, an option is out of range or
/// A's median is 0.
pub fn compare_paired(a: &[f64], b: &[f64], opts: &CompareOptions) -> Result<Change, StatsError> {
    check_options(opts)?;
    if a.len() != b.len() {
        return Err(StatsError::UnpairedLengths {
            a: a.len(),
            b: b.len(),
        });
    }
    let (sa, sb) = (Sample::new(a.to_vec())?, Sample::new(b.to_vec())?);
    let (median_a, median_b) = (sa.median(), sb.median());
    if median_a == 0.0 {
        return Err(StatsError::ZeroBaseline);
    }
    let scale = median_a.abs();
    let ratios = a.iter().chain(b).all(|v| *v > 0.0);
    let changes: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            if ratios {
                (y / x).ln()
            } else {
                (y - x) / scale
            }
        })
        .collect();
    let test = wilcoxon_signed_rank(&changes);
    let centre = hodges_lehmann_paired(&changes, opts.level);
    let relative = |c: f64| if ratios { c.exp_m1() } else { c };
    let relative_shift = Estimate {
        point: relative(centre.point),
        lower: relative(centre.lower),
        upper: relative(centre.upper),
        level: centre.level,
    };
    let n = changes.len();
    // Zero changes carry no sign: only the pairs that changed count towards the floor.
    let floor = min_achievable_p_paired(test.used);
    let noise = Sample::new(changes).ok().and_then(|s| robust_sd(&s));
    let min_detectable = if floor >= opts.alpha {
        None
    } else {
        noise.and_then(|sd| detectable_paired(n, sd, opts.alpha))
    };
    let runs_needed = runs_needed(opts, min_detectable, |k| {
        min_achievable_p_paired(k) < opts.alpha
            && noise.is_none_or(|sd| {
                detectable_paired(k, sd, opts.alpha).is_some_and(|d| d <= opts.threshold)
            })
    });
    Ok(Change {
        method: Method::SignedRank,
        median_a,
        median_b,
        relative: (median_b - median_a) / scale,
        shift: Estimate {
            point: relative_shift.point * scale,
            lower: relative_shift.lower * scale,
            upper: relative_shift.upper * scale,
            level: relative_shift.level,
        },
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

/// The spread of one sample: `1.4826·MAD`, or the sample standard deviation when the MAD is
/// 0; `None` for one value.
fn robust_sd(s: &Sample) -> Option<f64> {
    let robust = MAD_TO_SD * s.mad();
    if robust > 0.0 {
        Some(robust)
    } else {
        s.std_dev()
    }
}

/// Smallest absolute shift detectable with power [`POWER`] by the U test with `m` and `n`
/// values of noise `sd`. `None` with fewer than 3 values in all.
///
/// The two-sample power formula for a location shift,
/// `δ = (t₁₋α/₂,ν + t_power,ν) · σ · √((1/m + 1/n) · π/3)`, `ν = m + n − 2` (Cohen,
/// *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed. 1988, ch. 2), where the
/// factor `π/3` is the inverse of the U test's asymptotic relative efficiency 3/π against the
/// t-test under normal noise (Hodges & Lehmann, "The efficiency of some nonparametric
/// competitors of the t-test", *Ann. Math. Statist.* 27, 1956): the U test needs about
/// π/3 ≈ 1.05 times the runs. It is reported relative to the baseline median. `σ` is the pooled
/// robust spread `1.4826·MAD` of both sides (the pooled sample standard deviation when both
/// MADs are 0). The exact test's floor `2/C(m+n, m)` also counts: at or above alpha, nothing is
/// detectable, and runs needed is at least the k with `2/C(2k, k) < alpha`.
fn detectable_shift(m: usize, n: usize, sd: f64, alpha: f64) -> Option<f64> {
    let (mf, nf) = (m as f64, n as f64);
    let standard_error = sd * ((1.0 / mf + 1.0 / nf) * std::f64::consts::PI / 3.0).sqrt();
    detectable((m + n).checked_sub(2)?, standard_error, alpha)
}

/// Smallest centre of `n` paired changes of spread `sd` that the signed-rank test detects
/// with power [`POWER`]. `None` with fewer than 2 pairs.
///
/// [`detectable_shift`]'s formula in its one-sample form,
/// `δ = (t₁₋α/₂,ν + t_power,ν) · σ_d · √(π/(3n))`, `ν = n − 1`, where `σ_d` is the robust spread
/// of the per-pair changes (the signed-rank test has the same efficiency 3/π against the paired
/// t-test, ibid.), and the exact floor `2/2ⁿ` over the pairs that changed (the test drops zero
/// changes). The minimum detectable effect is in log-ratio units, which differ from relative
/// change by under 2% of the figure for changes below 4%.
fn detectable_paired(n: usize, sd: f64, alpha: f64) -> Option<f64> {
    let standard_error = sd * (std::f64::consts::PI / (3.0 * n as f64)).sqrt();
    detectable(n.checked_sub(1)?, standard_error, alpha)
}

/// `(t₁₋α/₂,ν + t_power,ν) · standard_error`; `None` for `ν = 0`.
fn detectable(dof: usize, standard_error: f64, alpha: f64) -> Option<f64> {
    if dof == 0 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, dof as f64).expect("dof > 0 is valid");
    Some((t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(POWER)) * standard_error)
}

/// Runs per side (balanced; pairs when paired) for a change of `threshold` to be detectable,
/// the smallest `k` that is `enough`, or `None` when these runs already suffice (`current`
/// minimum detectable effect ≤ threshold) or the threshold is 0.
fn runs_needed(
    opts: &CompareOptions,
    current: Option<f64>,
    enough: impl Fn(usize) -> bool,
) -> Option<usize> {
    if opts.threshold <= 0.0 || current.is_some_and(|d| d <= opts.threshold) {
        return None;
    }
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

    /// A machine whose speed wanders by ±20% from pair to pair, B 3% slower within each pair
    /// (with 0.3% noise of its own).
    fn drifting_pairs(n: usize) -> (Vec<f64>, Vec<f64>) {
        let speed = |i: usize| 1000.0 * (1.0 + 0.2 * wobble(i + 7000));
        let a: Vec<f64> = (0..n)
            .map(|i| speed(i) * (1.0 + 0.003 * wobble(i + 8000)))
            .collect();
        let b: Vec<f64> = (0..n)
            .map(|i| speed(i) * 0.97 * (1.0 + 0.003 * wobble(i + 9000)))
            .collect();
        (a, b)
    }

    #[test]
    fn pairing_cancels_what_slows_both_trials_of_a_pair() {
        let (a, b) = drifting_pairs(30);
        let opts = CompareOptions::default();
        let unpaired = compare(&sample(&a), &sample(&b), &opts).unwrap();
        assert_eq!(unpaired.verdict, Verdict::Inconclusive, "{unpaired:?}");
        assert_eq!(unpaired.method, Method::MannWhitney);
        let paired = compare_paired(&a, &b, &opts).unwrap();
        assert_eq!(paired.method, Method::SignedRank);
        assert_eq!(paired.verdict, Verdict::Regressed, "{paired:?}");
        let r = paired.relative_shift;
        assert!(r.lower < -0.03 && -0.03 < r.upper, "{r:?}");
        assert!((r.point + 0.03).abs() < 0.002, "{r:?}");
        assert!((paired.shift.point / paired.median_a - r.point).abs() < 1e-12);
        assert!(paired.min_detectable.unwrap() < unpaired.min_detectable.unwrap() / 10.0);
        assert_eq!(paired.runs_needed, None);
        // 30 pairs without ties: the exact distribution, and all 30 changes negative.
        assert!(paired.exact);
        assert!((paired.p_value - 2.0 * 0.5f64.powi(30)).abs() < 1e-15);
    }

    #[test]
    fn paired_runs_needed_reaches_the_threshold() {
        let a: Vec<f64> = (0..8).map(|i| 1000.0 * (1.0 + 0.06 * wobble(i))).collect();
        let b: Vec<f64> = (0..8)
            .map(|i| 1000.0 * (1.0 + 0.06 * wobble(i + 50)))
            .collect();
        let opts = CompareOptions::default();
        let c = compare_paired(&a, &b, &opts).unwrap();
        let k = c.runs_needed.unwrap_or_else(|| panic!("{c:?}"));
        assert!(k > 8, "{k}");
        let changes: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (y / x).ln()).collect();
        let sd = robust_sd(&sample(&changes)).unwrap();
        assert!(detectable_paired(k, sd, 0.05).unwrap() <= 0.01);
        assert!(detectable_paired(k - 1, sd, 0.05).unwrap() > 0.01);
    }

    #[test]
    fn four_pairs_cannot_reach_significance() {
        let c = compare_paired(
            &[100.0, 101.0, 102.0, 103.0],
            &[80.0, 81.0, 82.0, 83.0],
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(c.min_achievable_p, 0.125);
        assert_eq!(c.p_value, 0.125);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert_eq!(c.min_detectable, None);
        // 2/2⁶ = 0.031 is the first floor below 0.05.
        assert_eq!(c.runs_needed, Some(6));
    }

    #[test]
    fn paired_floor_does_not_count_zero_differences() {
        // Six pairs, two of them unchanged: the signed-rank test drops the zeros, so only four
        // signs are free and the smallest p is 2/2⁴, not 2/2⁶.
        let a = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0];
        let b = [80.0, 81.0, 82.0, 83.0, 104.0, 105.0];
        let c = compare_paired(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(c.min_achievable_p, 0.125, "{c:?}");
        assert!(c.p_value >= c.min_achievable_p, "{c:?}");
        assert_eq!(c.min_detectable, None);
        assert_ne!(c.verdict, Verdict::Regressed);
    }

    #[test]
    fn tied_samples_are_judged_on_the_exact_conditional_p() {
        // 3 × 1000 against 3 × 980: the normal approximation said p = 0.047, REGRESSED.
        let opts = CompareOptions::default();
        let c = compare(&sample(&[1000.0; 3]), &sample(&[980.0; 3]), &opts).unwrap();
        assert!((c.p_value - 0.1).abs() < 1e-12, "{c:?}");
        assert_eq!(c.verdict, Verdict::Inconclusive);
        // Five pairs, every B 2% below its A: the normal approximation said p = 0.037.
        let a = [1000.0, 1100.0, 1200.0, 1300.0, 1400.0];
        let b = a.map(|x| x * 0.98);
        let c = compare_paired(&a, &b, &opts).unwrap();
        assert!((c.p_value - 0.0625).abs() < 1e-12, "{c:?}");
        assert_eq!(c.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn paired_input_errors_and_non_positive_values() {
        let opts = CompareOptions::default();
        let err = compare_paired(&[1.0, 2.0], &[1.0], &opts).unwrap_err();
        assert_eq!(err, StatsError::UnpairedLengths { a: 2, b: 1 });
        assert!(err.to_string().contains("2 A and 1 B"), "{err}");
        assert!(compare_paired(&[1.0, f64::NAN], &[1.0, 2.0], &opts).is_err());
        assert_eq!(
            compare_paired(&[0.0, 0.0, 1.0], &[1.0, 1.0, 1.0], &opts),
            Err(StatsError::ZeroBaseline)
        );
        // A value ≤ 0 rules out ratios: differences relative to A's median instead.
        let c = compare_paired(&[-1.0, 2.0, 3.0], &[0.0, 3.0, 4.0], &opts).unwrap();
        assert_eq!(c.relative_shift.point, 0.5);
    }

    #[test]
    fn verdict_serialises_in_snake_case() {
        let json = serde_json::to_string(&Verdict::NoChange).unwrap();
        assert_eq!(json, "\"no_change\"");
        let back: Direction = serde_json::from_str("\"lower_is_better\"").unwrap();
        assert_eq!(back, Direction::LowerIsBetter);
    }
}
