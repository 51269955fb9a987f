//! Property tests for the maths, through the public API: invariants that must hold for any
//! data (proptest), and coverage checks of the intervals on seeded simulated data.

use proptest::prelude::*;
use stats::{
    ChangePointOptions, CompareOptions, Direction, Sample, Verdict, change_points, compare,
    fit_usl, hodges_lehmann, mann_whitney_u, min_achievable_p,
};

/// Finite values of a measurement-like size.
fn values(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-1e6f64..1e6, len)
}

/// Distinct small integers (no ties), as f64.
fn distinct(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::hash_set(-1000i32..1000, len)
        .prop_map(|set| set.into_iter().map(f64::from).collect())
}

fn sample(v: &[f64]) -> Sample {
    Sample::new(v.to_vec()).unwrap()
}

/// Exact two-sided U p-value by enumerating every split of the pooled ranks (tiny n only).
fn brute_force_p(m: usize, n: usize, u: f64) -> f64 {
    let total = m + n;
    let (mut at_most, mut at_least, mut count) = (0u64, 0u64, 0u64);
    for mask in 0u32..(1 << total) {
        if mask.count_ones() as usize != n {
            continue;
        }
        // B holds the ranks in `mask`; U = rank sum of B − n(n+1)/2.
        let rank_sum: usize = (0..total)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| i + 1)
            .sum();
        let this_u = (rank_sum - n * (n + 1) / 2) as f64;
        count += 1;
        at_most += u64::from(this_u <= u);
        at_least += u64::from(this_u >= u);
    }
    (2.0 * at_most.min(at_least) as f64 / count as f64).min(1.0)
}

proptest! {
    #[test]
    fn sample_order_and_location(v in values(1..=40)) {
        let s = sample(&v);
        prop_assert_eq!(s.values(), &v[..]);
        prop_assert!(s.sorted().windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(s.min() <= s.median() && s.median() <= s.max());
        prop_assert!(s.min() <= s.mean() + 1e-9 && s.mean() <= s.max() + 1e-9);
        prop_assert!(s.mad() >= 0.0);
        prop_assert_eq!(s.std_dev().is_some(), v.len() >= 2);
    }

    #[test]
    fn median_interval_is_nested_and_made_of_values(v in values(1..=60), level in 0.5f64..0.999) {
        let s = sample(&v);
        let ci = s.median_interval(level);
        prop_assert!(ci.lower <= ci.point && ci.point <= ci.upper);
        prop_assert!(s.sorted().contains(&ci.lower) && s.sorted().contains(&ci.upper));
        prop_assert!(ci.level >= 0.0 && ci.level <= level);
        // A higher level never gives a narrower interval.
        let wider = s.median_interval((level + 1.0) / 2.0);
        prop_assert!(wider.lower <= ci.lower && ci.upper <= wider.upper);
    }

    #[test]
    fn median_and_mad_follow_translation(v in values(1..=30), shift in -1e3f64..1e3) {
        let s = sample(&v);
        let moved = sample(&v.iter().map(|x| x + shift).collect::<Vec<_>>());
        prop_assert!((moved.median() - s.median() - shift).abs() < 1e-6);
        prop_assert!((moved.mad() - s.mad()).abs() < 1e-6);
    }

    #[test]
    fn outliers_are_far_and_indexed_in_original_order(v in values(1..=40)) {
        let s = sample(&v);
        let out = s.outliers();
        prop_assert!(out.windows(2).all(|w| w[0].index < w[1].index));
        for o in out {
            prop_assert_eq!(v[o.index], o.value);
            prop_assert!(o.score.abs() > 3.5);
            prop_assert!(o.value != s.median());
        }
    }

    #[test]
    fn exact_u_test_matches_enumeration(a in distinct(1..=6), b in distinct(1..=6)) {
        prop_assume!(a.iter().all(|x| !b.contains(x)));
        let t = mann_whitney_u(&sample(&a), &sample(&b));
        prop_assert!(t.exact);
        let want = brute_force_p(a.len(), b.len(), t.u);
        prop_assert!((t.p_value - want).abs() < 1e-12, "{} vs {}", t.p_value, want);
        prop_assert!(t.p_value >= min_achievable_p(a.len(), b.len()) - 1e-15);
    }

    #[test]
    fn u_test_is_symmetric(a in values(1..=60), b in values(1..=60)) {
        let (sa, sb) = (sample(&a), sample(&b));
        let ab = mann_whitney_u(&sa, &sb);
        let ba = mann_whitney_u(&sb, &sa);
        prop_assert!((ab.u + ba.u - (a.len() * b.len()) as f64).abs() < 1e-9);
        prop_assert!((ab.p_value - ba.p_value).abs() < 1e-12);
        prop_assert!(ab.p_value > 0.0 && ab.p_value <= 1.0);
    }

    #[test]
    fn hodges_lehmann_is_equivariant(a in values(1..=25), b in values(1..=25), c in -1e3f64..1e3) {
        let (sa, sb) = (sample(&a), sample(&b));
        let e = hodges_lehmann(&sa, &sb, 0.95);
        prop_assert!(e.lower <= e.point && e.point <= e.upper);
        let moved = sample(&b.iter().map(|x| x + c).collect::<Vec<_>>());
        let m = hodges_lehmann(&sa, &moved, 0.95);
        prop_assert!((m.point - e.point - c).abs() < 1e-6);
        prop_assert!((m.lower - e.lower - c).abs() < 1e-6);
        let r = hodges_lehmann(&sb, &sa, 0.95);
        prop_assert_eq!((r.point, r.lower, r.upper), (-e.point, -e.upper, -e.lower));
    }

    #[test]
    fn verdict_follows_the_rule(
        a in prop::collection::vec(900f64..1100.0, 2..=30),
        b in prop::collection::vec(850f64..1150.0, 2..=30),
        threshold in 0.0f64..0.1,
    ) {
        let opts = CompareOptions { threshold, ..CompareOptions::default() };
        let c = compare(&sample(&a), &sample(&b), &opts).unwrap();
        let ci = c.relative_shift;
        let decisive = c.p_value < opts.alpha && (ci.lower > threshold || ci.upper < -threshold);
        let inside = ci.lower >= -threshold && ci.upper <= threshold;
        match c.verdict {
            Verdict::Regressed => prop_assert!(decisive && ci.upper < -threshold),
            Verdict::Improved => prop_assert!(decisive && ci.lower > threshold),
            Verdict::NoChange => prop_assert!(inside),
            Verdict::Inconclusive => prop_assert!(!(decisive || inside)),
        }
        // Flipping the direction swaps the two decisive verdicts and nothing else.
        let flipped = CompareOptions { direction: Direction::LowerIsBetter, ..opts };
        let f = compare(&sample(&a), &sample(&b), &flipped).unwrap().verdict;
        let expected = match c.verdict {
            Verdict::Regressed => Verdict::Improved,
            Verdict::Improved => Verdict::Regressed,
            other => other,
        };
        prop_assert_eq!(f, expected);
        if c.min_achievable_p >= opts.alpha {
            prop_assert_eq!(c.min_detectable, None);
        }
    }

    #[test]
    fn compare_is_scale_free(
        a in prop::collection::vec(1f64..100.0, 1..=20),
        b in prop::collection::vec(1f64..100.0, 1..=20),
        power in -8i32..8,
    ) {
        let k = 2f64.powi(power); // exact in floating point
        let scale = |v: &[f64]| sample(&v.iter().map(|x| x * k).collect::<Vec<_>>());
        let opts = CompareOptions::default();
        let plain = compare(&sample(&a), &sample(&b), &opts).unwrap();
        let scaled = compare(&scale(&a), &scale(&b), &opts).unwrap();
        prop_assert_eq!(plain.verdict, scaled.verdict);
        prop_assert_eq!(plain.p_value, scaled.p_value);
        prop_assert_eq!(plain.relative_shift, scaled.relative_shift);
        prop_assert_eq!(plain.runs_needed, scaled.runs_needed);
    }

    #[test]
    fn usl_recovers_noise_free_curves(
        sigma in 0.0f64..0.3,
        kappa in 0.0f64..0.01,
        lambda in 1.0f64..1e5,
    ) {
        let model = |n: f64| lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0));
        let points: Vec<(f64, f64)> =
            [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0].iter().map(|&n| (n, model(n))).collect();
        let fit = fit_usl(&points).unwrap();
        for &(n, x) in &points {
            let got = fit.predict(n).x.point;
            prop_assert!(((got - x) / x).abs() < 1e-6, "N = {}: {} vs {} ({:?})", n, got, x, fit);
        }
        prop_assert!((fit.lambda.point / lambda - 1.0).abs() < 1e-6);
        prop_assert!((fit.sigma.point - sigma).abs() < 1e-6);
        prop_assert!((fit.kappa.point - kappa).abs() < 1e-8);
    }

    #[test]
    fn usl_throughput_scale_only_moves_lambda(power in -10i32..10) {
        let k = 2f64.powi(power);
        let base: Vec<(f64, f64)> = (1..=12)
            .map(|n| {
                let n = f64::from(n);
                let wobble = 1.0 + 0.01 * (n * 1.7).sin();
                (n, wobble * 300.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0)))
            })
            .collect();
        let scaled: Vec<(f64, f64)> = base.iter().map(|&(n, x)| (n, x * k)).collect();
        let (f1, f2) = (fit_usl(&base).unwrap(), fit_usl(&scaled).unwrap());
        prop_assert!((f2.lambda.point / (f1.lambda.point * k) - 1.0).abs() < 1e-6);
        prop_assert!((f2.sigma.point - f1.sigma.point).abs() < 1e-7);
        prop_assert!((f2.kappa.point - f1.kappa.point).abs() < 1e-9);
        prop_assert!((f2.r_squared - f1.r_squared).abs() < 1e-9);
    }

    #[test]
    fn change_points_are_ordered_spaced_and_significant(
        v in prop::collection::vec(90f64..110.0, 0..=120),
        min_segment in 1usize..6,
    ) {
        let opts = ChangePointOptions { min_segment, ..ChangePointOptions::default() };
        let found = change_points(&v, &opts);
        let floor = min_segment.max(2);
        let mut previous = 0;
        for cp in &found {
            prop_assert!(cp.index >= previous + floor, "{:?}", found);
            prop_assert!(cp.p_value <= opts.max_p);
            previous = cp.index;
        }
        if !found.is_empty() {
            prop_assert!(v.len() - previous >= floor);
        }
        // Scaling the series by a power of two changes nothing but the means.
        let doubled: Vec<f64> = v.iter().map(|x| x * 2.0).collect();
        let again: Vec<usize> = change_points(&doubled, &opts).iter().map(|c| c.index).collect();
        prop_assert_eq!(again, found.iter().map(|c| c.index).collect::<Vec<_>>());
    }
}
