//! The interval of a difference of two means from two small samples of unequal spread (Welch's
//! t interval): half-width `t₁₋α/₂,ν · √(s_a²/m + s_b²/n)` with the Welch–Satterthwaite degrees
//! of freedom `ν = (s_a²/m + s_b²/n)² / ((s_a²/m)²/(m−1) + (s_b²/n)²/(n−1))` (B. L. Welch, "The
//! generalization of 'Student's' problem when several different population variances are
//! involved", *Biometrika* 34, 1947).
//!
//! Hand-written: two lines of arithmetic; `statrs` gives the t quantile.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Half the `confidence` interval (0.95 for 95%) of `mean(b) − mean(a)`; `None` with fewer
/// than two values on either side or a confidence outside (0, 1). Two sides without spread
/// give 0.
pub fn mean_difference_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (va, vb) = (variance_of_mean(a), variance_of_mean(b));
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(0.0);
    }
    let dof = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let t = StudentsT::new(0.0, 1.0, dof).ok()?;
    Some(t.inverse_cdf(0.5 + confidence / 2.0) * se2.sqrt())
}

/// `s²/n`: the variance of the sample's mean.
fn variance_of_mean(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_welch_interval_computed_by_hand() {
        // a: mean 2, s² = 1 (1, 2, 3); b: mean 6, s² = 4 (4, 6, 8).
        // s²/n: 1/3 and 4/3; SE = √(5/3) = 1.29099; ν = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 2.9412.
        // t(0.975, 2.9412) = 3.21876 (the t CDF's regularized incomplete beta solved with
        // mpmath), so ±4.15540.
        let h = mean_difference_interval(&[1.0, 2.0, 3.0], &[4.0, 6.0, 8.0], 0.95).unwrap();
        assert!((h - 4.1554).abs() < 1e-3, "{h}");
    }

    #[test]
    fn equal_spreads_and_sizes_give_the_pooled_t_interval() {
        // Equal s² and n: ν = 2(n − 1) = 4, the pooled interval; s² = 1, n = 3: SE = √(2/3).
        let h = mean_difference_interval(&[1.0, 2.0, 3.0], &[11.0, 12.0, 13.0], 0.95).unwrap();
        let t4 = 2.776_445; // t(0.975, 4)
        assert!((h - t4 * (2.0f64 / 3.0).sqrt()).abs() < 1e-4, "{h}");
    }

    #[test]
    fn no_spread_gives_zero_and_one_value_gives_none() {
        assert_eq!(
            mean_difference_interval(&[5.0, 5.0], &[7.0, 7.0], 0.95),
            Some(0.0)
        );
        assert_eq!(mean_difference_interval(&[5.0], &[7.0, 8.0], 0.95), None);
        assert_eq!(
            mean_difference_interval(&[5.0, 6.0], &[7.0, 8.0], 1.0),
            None
        );
    }
}
