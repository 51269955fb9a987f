//! The USL fit's tests; how the fit reads as text is tested beside the `present` crate's model
//! table.

use super::*;
use model::test_runs::{cisco_csv, run};

#[test]
fn the_cisco_rows_reproduce_the_book() {
    let points = parse_csv(&cisco_csv()).unwrap();
    assert_eq!(points.len(), 32);
    let model = fit_csv("cisco.csv", &points, &[32.0, 64.0, 100.0]).unwrap();
    let f = &model.fit;
    for (got, want) in [
        (f.sigma.point, 0.026_715_91),
        (f.kappa.point, 7.690_945e-4),
        (f.lambda.point, 995.648_6),
    ] {
        assert!((got - want).abs() / want < 1e-3, "{got} vs {want}");
    }
    assert_eq!(model.measured.len(), 32);
    assert_eq!(model.predictions.len(), 3);
    assert!(!model.predictions[1].extrapolated && model.predictions[2].extrapolated);
    assert!(model.warnings.contains(&ModelWarning::Extrapolated {
        n: 100.0,
        max_n: 32.0
    }));
}

#[test]
fn csv_headers_comments_and_separators_are_accepted() {
    let points = parse_csv("\u{feff}# from a spreadsheet\nN;X\n1; 10\n\n2\t19\n4 35\n").unwrap();
    assert_eq!(points, vec![(1.0, 10.0), (2.0, 19.0), (4.0, 35.0)]);
    assert_eq!(parse_csv("1,10\n2,19\n").unwrap().len(), 2);
}

#[test]
fn a_bad_csv_row_is_named_by_its_line() {
    let cases = [
        (
            "N,X\n1,10\n2,abc\n",
            "line 3: `2,abc`: throughput `abc` is not a number",
        ),
        ("1,10\nx,19\n", "line 2: `x,19`: N `x` is not a number"),
        ("1,10,3\n", "line 1: `1,10,3`: 3 fields, expected 2"),
        ("1,10\n0,5\n", "line 2: `0,5`: N = 0"),
        ("1,10\n2,-5\n", "line 2: `2,-5`: throughput = -5"),
        ("N,X\n", "no data rows"),
    ];
    for (input, want) in cases {
        let err = parse_csv(input).unwrap_err().to_string();
        assert!(err.contains(want), "{input:?}: {err}");
    }
}

#[test]
fn a_two_cpu_default_sweep_is_refused_with_an_explanation() {
    let mut data = run(
        1,
        "spin",
        &[(1, &[100.0, 101.0, 99.0]), (2, &[190.0, 191.0, 189.0])],
    );
    data.meta.env.online_cpus = 2;
    let err = fit_run(&data, &[], false).unwrap_err().to_string();
    for needle in [
        "at least 4 distinct task counts",
        "these data have 2 (N=1,2)",
        "2 online CPUs",
        "default sweep (N=1,2)",
        "--csv",
        "time-sharing",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    // A bigger machine where the user swept too few points is told to sweep more.
    data.meta.env.online_cpus = 16;
    let err = fit_run(&data, &[], false).unwrap_err().to_string();
    assert!(err.contains("--tasks 1,2,4,8"), "{err}");
}

#[test]
fn a_run_is_fitted_over_every_trial() {
    // X = 100 N / (1 + 0.05 (N − 1) + 0.002 N (N − 1)), two trials at ±0.5%.
    let usl = |n: f64| 100.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
    let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8, 16]
        .iter()
        .map(|&n| {
            (
                n,
                vec![
                    usl(f64::from(n)) * 1.005 * 1000.0,
                    usl(f64::from(n)) * 0.995 * 1000.0,
                ],
            )
        })
        .collect();
    let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
    let mut data = run(1, "spin", &points);
    data.trials[0].outcome = model::record::TrialOutcome::Ok(model::test_runs::measurement(0.0));
    let model = fit_run(&data, &[], false).unwrap();
    assert_eq!(model.fit.points, 9, "the zero-throughput trial is left out");
    assert!(
        model
            .warnings
            .iter()
            .any(|w| matches!(w, ModelWarning::Dropped { trials: 1, .. }))
    );
    assert!(
        (model.fit.sigma.point - 0.05).abs() < 0.01,
        "{:?}",
        model.fit.sigma
    );
    assert_eq!(model.predictions.len(), 1);
    assert_eq!(model.predictions[0].n, 32.0);
    assert_eq!(
        model.measured.iter().map(|m| m.count).collect::<Vec<_>>(),
        vec![1, 2, 2, 2, 2]
    );
    let json = serde_json::to_value(&model).unwrap();
    assert_eq!(json["source"]["kind"], "run");
    assert!(
        json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "dropped")
    );
    assert!(json["fit"]["sigma"]["lower"].is_number());
}

/// A run of `spin` over `ns`, two trials each at ±0.5% around the USL with σ = 0.05,
/// κ = 0.002, λ = 100k, on a machine with `cpus` online CPUs.
fn usl_run(ns: &[u32], cpus: usize) -> RunData {
    let usl = |n: f64| 100.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
    let rows: Vec<(u32, Vec<f64>)> = ns
        .iter()
        .map(|&n| {
            let x = usl(f64::from(n)) * 1000.0;
            (n, vec![x * 1.005, x * 0.995])
        })
        .collect();
    let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
    let mut data = run(1, "spin", &points);
    data.meta.env.online_cpus = cpus;
    data
}

/// Issue 13: `model` fitted N past the CPUs without a word, although its own refusal says such
/// N measure time-sharing and mislead the fit.
#[test]
fn task_counts_past_the_cpus_are_left_out_unless_all_n() {
    let data = usl_run(&[1, 2, 4, 8, 16], 8);
    let model = fit_run(&data, &[], false).unwrap();
    assert_eq!((model.fit.distinct_n, model.fit.max_n), (4, 8.0));
    assert_eq!(model.measured.len(), 4);
    let left_out = ModelWarning::Oversubscribed {
        n: vec![16],
        cpus: 8,
        included: false,
    };
    assert!(model.warnings.contains(&left_out), "{:?}", model.warnings);
    let text = left_out.to_string();
    for needle in [
        "N=16 left out of the fit",
        "8 online CPUs",
        "time-sharing",
        "--all-n",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let all = fit_run(&data, &[], true).unwrap();
    assert_eq!((all.fit.distinct_n, all.fit.max_n), (5, 16.0));
    let included = ModelWarning::Oversubscribed {
        n: vec![16],
        cpus: 8,
        included: true,
    };
    assert!(all.warnings.contains(&included), "{:?}", all.warnings);
    assert!(included.to_string().contains("N=16 fitted"), "{included}");
    // Within the CPUs, or with the CPUs unknown (an old export), nothing is said.
    for cpus in [16, 0] {
        let model = fit_run(&usl_run(&[1, 2, 4, 8, 16], cpus), &[], false).unwrap();
        assert_eq!(model.fit.distinct_n, 5);
        assert!(
            !model
                .warnings
                .iter()
                .any(|w| matches!(w, ModelWarning::Oversubscribed { .. })),
            "{:?}",
            model.warnings
        );
    }
    // Too few N left: the refusal says which were left out and how to keep them.
    let err = fit_run(&usl_run(&[1, 2, 3, 4, 8], 2), &[], false)
        .unwrap_err()
        .to_string();
    for needle in [
        "(N=1,2)",
        "N=3,4,8 are past the run's 2 online CPUs",
        "--all-n",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(
        fit_run(&usl_run(&[1, 2, 3, 4, 8], 2), &[], true)
            .unwrap()
            .fit
            .distinct_n,
        5
    );
}
