//! The Universal Scalability Law: fit, parameter intervals, the peak N*, and predictions.
//!
//! Model (Gunther, *Guerrilla Capacity Planning*, Springer 2007, ch. 4–6):
//! `X(N) = λN / (1 + σ(N−1) + κN(N−1))`, with λ the throughput of one task, σ contention
//! (serialisation, as in Amdahl's law) and κ coherency (crosstalk). The peak is at
//! `N* = √((1−σ)/κ)`; with κ = 0 throughput saturates at the Amdahl ceiling `λ/σ`.
//!
//! Fitting follows Baron Schwartz, *Practical Scalability Analysis with the Universal
//! Scalability Law* (VividCortex, 2015): nonlinear least squares on X itself, over every trial
//! (not medians, so the residuals carry the noise), with σ, κ ∈ [0, 1] and λ > 0. The start is
//! Gunther's linearisation `λ₀N/X − 1 = σ(N−1) + κN(N−1)` with `λ₀ = max X/N`; the solver is
//! the hand-written projected Levenberg-Marquardt of [`crate::least_squares`] (no maintained
//! crate handles bounds). Standard errors are `√diag((JᵀJ)⁻¹·s²)`, `s² = SSE/(n−3)`; intervals
//! are `±t(0.975, n−3)·se` clipped to the parameter bounds (Bates & Watts, *Nonlinear Regression
//! Analysis and Its Applications*, Wiley 1988, §2.3). A prediction's band is the delta method
//! over the parameter covariance, `Var X̂(N) = ∇ᵀ Cov ∇`.

use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::StatsError;
use crate::least_squares::{self, Bounds, Model, P};
use crate::sample::Estimate;

/// Fewest distinct task counts a fit accepts (three parameters plus one to spare).
pub const USL_MIN_DISTINCT_N: usize = 4;

/// Coverage of the parameter intervals and prediction bands.
pub(crate) const LEVEL: f64 = 0.95;

/// Below this R² the fit gets a [`UslWarning::PoorFit`].
pub(crate) const POOR_FIT_R_SQUARED: f64 = 0.9;

/// A prediction past this multiple of the largest measured N is an extrapolation.
pub(crate) const EXTRAPOLATION_FACTOR: f64 = 2.0;

/// A fitted USL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention σ with its 95% interval.
    pub sigma: Estimate,
    /// Coherency κ with its 95% interval.
    pub kappa: Estimate,
    /// Single-task throughput λ with its 95% interval.
    pub lambda: Estimate,
    /// Standard error of σ.
    pub sigma_se: f64,
    /// Standard error of κ.
    pub kappa_se: f64,
    /// Standard error of λ.
    pub lambda_se: f64,
    /// `1 − SSE/SST` over all points.
    pub r_squared: f64,
    /// `√((1−σ)/κ)`, the N of peak throughput; `None` when κ = 0.
    pub n_star: Option<f64>,
    /// Modelled throughput at N*.
    pub x_at_n_star: Option<f64>,
    /// `λ/σ`, the throughput ceiling when κ = 0; `None` when σ = 0.
    pub amdahl_ceiling: Option<f64>,
    /// Number of (N, X) points fitted.
    pub points: usize,
    /// Number of distinct N among them.
    pub distinct_n: usize,
    /// Smallest N measured.
    pub min_n: f64,
    /// Largest N measured.
    pub max_n: f64,
    /// Residual sum of squares.
    pub sse: f64,
    /// Residual degrees of freedom, `points − 3`.
    pub dof: usize,
    /// Covariance of (σ, κ, λ), in that order: `(JᵀJ)⁻¹·s²`.
    pub covariance: [[f64; 3]; 3],
    /// What to be wary of in this fit.
    pub warnings: Vec<UslWarning>,
}

/// Something that weakens a USL fit, with what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UslWarning {
    /// σ ended on a bound (0 or 1).
    SigmaAtBound {
        /// The bound it sits on.
        sigma: f64,
    },
    /// κ ended on a bound (0 or 1).
    KappaAtBound {
        /// The bound it sits on.
        kappa: f64,
    },
    /// The modelled peak lies outside the measured range of N.
    NStarOutsideMeasured {
        /// The modelled peak.
        n_star: f64,
        /// Smallest measured N.
        min_n: f64,
        /// Largest measured N.
        max_n: f64,
    },
    /// The model explains little of the variation.
    PoorFit {
        /// The fit's R².
        r_squared: f64,
    },
    /// The solver stopped at its iteration cap.
    NotConverged {
        /// Iterations run.
        iterations: usize,
    },
}

impl fmt::Display for UslWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UslWarning::SigmaAtBound { sigma } if sigma <= 0.0 => write!(
                f,
                "σ is at its bound 0: throughput per task does not fall with N (super-linear \
                 scaling or noise at small N); check the N = 1 point and the pinning"
            ),
            UslWarning::SigmaAtBound { sigma } => write!(
                f,
                "σ is at its bound {sigma}: the work is fully serialised, or the data do not fit \
                 the USL"
            ),
            UslWarning::KappaAtBound { kappa } if kappa <= 0.0 => write!(
                f,
                "κ is at its bound 0: no retrograde throughput in the data, so there is no peak \
                 N*; measure at higher N to find one"
            ),
            UslWarning::KappaAtBound { kappa } => write!(
                f,
                "κ is at its bound {kappa}: throughput collapses beyond N = 1, or the data do \
                 not fit the USL"
            ),
            UslWarning::NStarOutsideMeasured {
                n_star,
                min_n,
                max_n,
            } => write!(
                f,
                "the peak N* = {n_star:.1} lies outside the measured N = {min_n}..{max_n}: it is \
                 an extrapolation; measure near it to confirm"
            ),
            UslWarning::PoorFit { r_squared } => write!(
                f,
                "poor fit (R² = {r_squared:.3}): the USL explains little of the variation; look \
                 for noisy trials or a workload that changes character with N"
            ),
            UslWarning::NotConverged { iterations } => write!(
                f,
                "the fit did not converge in {iterations} iterations: treat the parameters as \
                 rough"
            ),
        }
    }
}

/// Modelled throughput at some N, with its 95% band.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The task count.
    pub n: f64,
    /// Throughput with its delta-method band (lower end clipped at 0).
    pub x: Estimate,
    /// `n > 2 × max_n`: far beyond the data, trust the band less than its width suggests.
    pub extrapolated: bool,
}

impl UslFit {
    /// Throughput at `n` tasks with its band.
    pub fn predict(&self, n: f64) -> Prediction {
        let p = self.params();
        let (x, gradient) = Usl.eval(n, &p);
        let mut variance = 0.0;
        for i in 0..P {
            for j in 0..P {
                variance += gradient[i] * self.covariance[i][j] * gradient[j];
            }
        }
        let half = t_quantile(self.dof) * variance.max(0.0).sqrt();
        Prediction {
            n,
            x: Estimate {
                point: x,
                lower: (x - half).max(0.0),
                upper: x + half,
                level: LEVEL,
            },
            extrapolated: n > EXTRAPOLATION_FACTOR * self.max_n,
        }
    }

    /// `[σ, κ, λ]`.
    fn params(&self) -> [f64; P] {
        [self.sigma.point, self.kappa.point, self.lambda.point]
    }
}

/// The USL as a least-squares model over parameters `[σ, κ, λ]`.
struct Usl;

impl Model for Usl {
    fn eval(&self, n: f64, p: &[f64; P]) -> (f64, [f64; P]) {
        let [sigma, kappa, lambda] = *p;
        let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        let x = lambda * n / d;
        let dd = lambda * n / (d * d);
        (x, [-dd * (n - 1.0), -dd * n * (n - 1.0), n / d])
    }
}

const BOUNDS: Bounds = Bounds {
    lower: [0.0, 0.0, f64::MIN_POSITIVE],
    upper: [1.0, 1.0, f64::INFINITY],
};

/// Fits the USL to `(N, X)` points — every trial, not per-N medians.
///
/// Refuses fewer than [`USL_MIN_DISTINCT_N`] distinct N, any N that is not finite and ≥ 1, and
/// any X that is not finite and > 0.
pub fn fit_usl(points: &[(f64, f64)]) -> Result<UslFit, StatsError> {
    for (index, &(n, x)) in points.iter().enumerate() {
        if !(n.is_finite() && n >= 1.0) {
            return Err(StatsError::InvalidTaskCount { index, n });
        }
        if !(x.is_finite() && x > 0.0) {
            return Err(StatsError::InvalidThroughput { index, n, x });
        }
    }
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if ns.len() < USL_MIN_DISTINCT_N {
        return Err(StatsError::TooFewTaskCounts {
            got: ns.len(),
            needed: USL_MIN_DISTINCT_N,
        });
    }
    let (min_n, max_n) = (ns[0], ns[ns.len() - 1]);

    let lambda0 = points.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    let starts = [
        linearised_start(points, lambda0),
        [0.0, 0.0, lambda0],
        [0.1, 1e-3, lambda0],
    ];
    let solution = starts
        .iter()
        .map(|&start| least_squares::fit(&Usl, points, start, &BOUNDS))
        .min_by(|a, b| a.sse.total_cmp(&b.sse))
        .expect("three starts");

    let p = solution.params;
    let dof = points.len() - P;
    let s2 = solution.sse / dof as f64;
    let (jtj, _) = least_squares::normal_equations(&Usl, points, &p);
    let inverse = least_squares::invert_spd(&jtj).ok_or_else(|| StatsError::FitFailed {
        reason: "the parameters are not identifiable from these points (singular JᵀJ); \
                 measure over a wider range of N"
            .to_string(),
    })?;
    let covariance = inverse.map(|row| row.map(|v| v * s2));
    let se: Vec<f64> = (0..P).map(|j| covariance[j][j].max(0.0).sqrt()).collect();
    let t = t_quantile(dof);
    let interval = |j: usize| Estimate {
        point: p[j],
        lower: (p[j] - t * se[j]).max(0.0),
        upper: (p[j] + t * se[j]).min(BOUNDS.upper[j]),
        level: LEVEL,
    };

    let [sigma, kappa, lambda] = p;
    let n_star = (kappa > 0.0).then(|| ((1.0 - sigma) / kappa).sqrt());
    let x_at_n_star = n_star.map(|n| Usl.eval(n, &p).0);
    let mean_x = points.iter().map(|q| q.1).sum::<f64>() / points.len() as f64;
    let sst: f64 = points.iter().map(|q| (q.1 - mean_x).powi(2)).sum();
    let r_squared = if sst > 0.0 {
        1.0 - solution.sse / sst
    } else if solution.sse == 0.0 {
        1.0
    } else {
        0.0
    };

    let mut warnings = Vec::new();
    if sigma <= BOUNDS.lower[0] || sigma >= BOUNDS.upper[0] {
        warnings.push(UslWarning::SigmaAtBound { sigma });
    }
    if kappa <= BOUNDS.lower[1] || kappa >= BOUNDS.upper[1] {
        warnings.push(UslWarning::KappaAtBound { kappa });
    }
    if let Some(n_star) = n_star.filter(|&v| v < min_n || v > max_n) {
        warnings.push(UslWarning::NStarOutsideMeasured {
            n_star,
            min_n,
            max_n,
        });
    }
    if r_squared < POOR_FIT_R_SQUARED {
        warnings.push(UslWarning::PoorFit { r_squared });
    }
    if !solution.converged {
        warnings.push(UslWarning::NotConverged {
            iterations: solution.iterations,
        });
    }

    Ok(UslFit {
        sigma: interval(0),
        kappa: interval(1),
        lambda: interval(2),
        sigma_se: se[0],
        kappa_se: se[1],
        lambda_se: se[2],
        r_squared,
        n_star,
        x_at_n_star,
        amdahl_ceiling: (sigma > 0.0).then(|| lambda / sigma),
        points: points.len(),
        distinct_n: ns.len(),
        min_n,
        max_n,
        sse: solution.sse,
        dof,
        covariance,
        warnings,
    })
}

/// Gunther's linearisation: with λ₀ fixed, `λ₀N/X − 1 = σ(N−1) + κN(N−1)` is linear in σ
/// and κ (no intercept); solved by least squares and clamped into the bounds.
fn linearised_start(points: &[(f64, f64)], lambda0: f64) -> [f64; P] {
    let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in points {
        let (u, v) = (n - 1.0, n * (n - 1.0));
        let y = lambda0 * n / x - 1.0;
        s11 += u * u;
        s12 += u * v;
        s22 += v * v;
        b1 += u * y;
        b2 += v * y;
    }
    let det = s11 * s22 - s12 * s12;
    let (sigma, kappa) = if det.abs() > 1e-12 * s11 * s22 {
        ((b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det)
    } else {
        (0.01, 1e-4)
    };
    [sigma.clamp(0.0, 1.0), kappa.clamp(0.0, 1.0), lambda0]
}

/// Two-sided 95% quantile of Student's t with `dof` degrees of freedom.
fn t_quantile(dof: usize) -> f64 {
    StudentsT::new(0.0, 1.0, dof.max(1) as f64)
        .expect("dof >= 1 is valid")
        .inverse_cdf(0.5 + LEVEL / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Baron Schwartz, *Practical Scalability Analysis with the USL*: Cisco, N = 1..32.
    const CISCO: [f64; 32] = [
        955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
        8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
        11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
        12118.04, 12140.4, 12074.39,
    ];

    fn cisco() -> Vec<(f64, f64)> {
        CISCO
            .iter()
            .enumerate()
            .map(|(i, &x)| ((i + 1) as f64, x))
            .collect()
    }

    fn relative_error(got: f64, want: f64) -> f64 {
        (got - want).abs() / want.abs()
    }

    #[test]
    fn reproduces_the_cisco_reference_fit() {
        let fit = fit_usl(&cisco()).unwrap();
        for (name, got, want) in [
            ("sigma", fit.sigma.point, 0.026_715_91),
            ("kappa", fit.kappa.point, 7.690_945e-4),
            ("lambda", fit.lambda.point, 995.648_6),
        ] {
            let err = relative_error(got, want);
            assert!(
                err < 1e-3,
                "{name}: got {got}, book {want}, off by {:.4}%",
                err * 100.0
            );
        }
        let n_star = fit.n_star.unwrap();
        assert_eq!(n_star.floor(), 35.0, "N* = {n_star}");
        let x_star = fit.x_at_n_star.unwrap();
        assert!(relative_error(x_star, 12341.0) < 1e-3, "X(N*) = {x_star}");
        assert!(fit.r_squared > 0.99);
        assert_eq!((fit.points, fit.distinct_n, fit.max_n), (32, 32, 32.0));
        assert_eq!(
            fit.warnings,
            vec![UslWarning::NStarOutsideMeasured {
                n_star,
                min_n: 1.0,
                max_n: 32.0
            }]
        );
    }

    #[test]
    fn standard_errors_match_scipy_curve_fit() {
        // scipy.optimize.curve_fit on the same data (bounded, trf): se = √diag(pcov) =
        // [4.49384356e-03, 8.64552940e-05, 2.86984075e+01].
        let fit = fit_usl(&cisco()).unwrap();
        assert!(
            relative_error(fit.sigma_se, 4.493_843_56e-3) < 1e-3,
            "{}",
            fit.sigma_se
        );
        assert!(
            relative_error(fit.kappa_se, 8.645_529_40e-5) < 1e-3,
            "{}",
            fit.kappa_se
        );
        assert!(
            relative_error(fit.lambda_se, 28.698_407_5) < 1e-3,
            "{}",
            fit.lambda_se
        );
        assert_eq!(fit.dof, 29);
        assert!(fit.sigma.contains(0.026_715_91) && fit.sigma.lower > 0.0);
    }

    #[test]
    fn predicts_with_a_band_and_flags_extrapolation() {
        let fit = fit_usl(&cisco()).unwrap();
        // scipy: X(35) = 12341.7457 with the fitted parameters.
        let at35 = fit.predict(35.0);
        assert!(
            relative_error(at35.x.point, 12_341.745_7) < 1e-5,
            "{at35:?}"
        );
        assert!(at35.x.lower < at35.x.point && at35.x.point < at35.x.upper);
        assert!(!at35.extrapolated);
        let far = fit.predict(65.0);
        assert!(far.extrapolated);
        // The band widens away from the data.
        let near = fit.predict(16.0);
        assert!(far.x.width() > near.x.width());
        assert!(fit.amdahl_ceiling.unwrap() > fit.x_at_n_star.unwrap());
    }

    #[test]
    fn refuses_too_few_task_counts_and_bad_points() {
        let three = [(1.0, 10.0), (2.0, 19.0), (4.0, 35.0), (4.0, 36.0)];
        let err = fit_usl(&three).unwrap_err();
        assert_eq!(err, StatsError::TooFewTaskCounts { got: 3, needed: 4 });
        assert!(err.to_string().contains("got 3"), "{err}");
        let bad_n = [(0.5, 10.0), (2.0, 19.0), (4.0, 35.0), (8.0, 60.0)];
        assert!(matches!(
            fit_usl(&bad_n),
            Err(StatsError::InvalidTaskCount { index: 0, .. })
        ));
        let bad_x = [(1.0, 10.0), (2.0, 0.0), (4.0, 35.0), (8.0, 60.0)];
        assert!(matches!(
            fit_usl(&bad_x),
            Err(StatsError::InvalidThroughput { index: 1, .. })
        ));
        assert!(fit_usl(&[(1.0, f64::NAN)]).is_err());
    }

    #[test]
    fn linear_scaling_puts_both_terms_at_their_bound() {
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0]
            .iter()
            .flat_map(|&n| [(n, 100.0 * n * 0.999), (n, 100.0 * n * 1.001)])
            .collect();
        let fit = fit_usl(&points).unwrap();
        assert!(relative_error(fit.lambda.point, 100.0) < 1e-3, "{fit:?}");
        assert_eq!(fit.n_star, None);
        assert_eq!(fit.amdahl_ceiling, None);
        assert!(
            fit.warnings
                .contains(&UslWarning::SigmaAtBound { sigma: 0.0 })
        );
        assert!(
            fit.warnings
                .contains(&UslWarning::KappaAtBound { kappa: 0.0 })
        );
        let shown = fit.warnings[0].to_string();
        assert!(shown.contains("bound 0"), "{shown}");
    }

    #[test]
    fn amdahl_data_gives_kappa_zero_and_a_ceiling() {
        // X = 50 N / (1 + 0.1 (N - 1)): ceiling 500.
        let points: Vec<(f64, f64)> = (1..=12)
            .map(|n| {
                let n = f64::from(n);
                (n, 50.0 * n / (1.0 + 0.1 * (n - 1.0)))
            })
            .collect();
        let fit = fit_usl(&points).unwrap();
        assert!((fit.sigma.point - 0.1).abs() < 1e-6, "{fit:?}");
        assert!(fit.kappa.point < 1e-9);
        assert!(relative_error(fit.amdahl_ceiling.unwrap(), 500.0) < 1e-5);
    }

    #[test]
    fn warnings_carry_a_hint() {
        let w = UslWarning::NStarOutsideMeasured {
            n_star: 35.57,
            min_n: 1.0,
            max_n: 32.0,
        };
        assert_eq!(
            w.to_string(),
            "the peak N* = 35.6 lies outside the measured N = 1..32: it is an extrapolation; \
             measure near it to confirm"
        );
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["kind"], "n_star_outside_measured");
    }
}
