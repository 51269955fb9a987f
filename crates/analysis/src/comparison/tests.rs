//! The comparison's tests; how a comparison reads as text is tested beside the `present`
//! crate's comparison table, on the same runs.

use super::*;
use model::record::TrialOutcome;
use model::test_runs::{ab_runs, around, run};

fn opts() -> CompareOptions {
    CompareOptions::default()
}

#[test]
fn a_clear_drop_at_one_point_is_a_regression_and_the_worst_point() {
    let a = run(
        1,
        "spin",
        &[
            (1, &around(1000.0, 0.01, 10)),
            (2, &around(2000.0, 0.01, 10)),
        ],
    );
    let b = run(
        2,
        "spin",
        &[
            (1, &around(1000.0, 0.01, 10)),
            (2, &around(1800.0, 0.01, 10)),
        ],
    );
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert!(comparison.mismatches.is_empty());
    assert_eq!(comparison.points.len(), 2);
    assert_eq!(comparison.points[0].verdict(), Some(Verdict::NoChange));
    assert_eq!(comparison.points[1].verdict(), Some(Verdict::Regressed));
    assert!(comparison.regressed);
    assert_eq!(comparison.summary.verdict, Verdict::Regressed);
    assert_eq!(comparison.summary.regressed, vec![2]);
    let worst = comparison.summary.worst.unwrap();
    assert_eq!(worst.n, 2);
    assert!((worst.shift.point + 0.1).abs() < 0.005, "{worst:?}");
    assert_eq!(comparison.summary.ahead_everywhere, None);
    // S(2) of A is 2.0, of B 1.8.

    assert!((comparison.a.scales_to.unwrap().speedup - 2.0).abs() < 1e-3);
    assert!((comparison.b.scales_to.unwrap().speedup - 1.8).abs() < 1e-3);
}

#[test]
fn curves_that_change_order_are_reported_as_a_crossing() {
    let a = run(
        1,
        "spin",
        &[
            (1, &around(1000.0, 0.01, 10)),
            (4, &around(3000.0, 0.01, 10)),
        ],
    );
    let b = run(
        2,
        "spin",
        &[
            (1, &around(1100.0, 0.01, 10)),
            (4, &around(2700.0, 0.01, 10)),
        ],
    );
    let comparison = compare_runs(&a, &b, &opts(), true);
    let c = comparison.summary.crossings.as_slice();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0].from_n, c[0].to_n, c[0].ahead_below), (1, 4, Side::B));
    // d(1) = +100, d(4) = -300: the medians meet a quarter of the way, at N = 1.75.
    assert!((c[0].at_n - 1.75).abs() < 0.01, "{c:?}");
    assert!(c[0].significant);
    assert_eq!(comparison.summary.improved, vec![1]);
    assert_eq!(comparison.summary.regressed, vec![4]);
}

#[test]
fn three_runs_a_side_warn_that_alpha_is_out_of_reach() {
    let a = run(1, "spin", &[(1, &[100.0, 101.0, 102.0])]);
    let b = run(2, "spin", &[(1, &[80.0, 81.0, 82.0])]);
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert_eq!(comparison.points[0].verdict(), Some(Verdict::Inconclusive));
    assert!(!comparison.regressed);
    let w = comparison
        .warnings
        .iter()
        .find(|w| matches!(w, ComparisonWarning::TooFewRuns { .. }))
        .expect("too few runs");
    let shown = w.to_string();
    assert!(
        shown.contains("3 vs 3 runs") && shown.contains("0.100"),
        "{shown}"
    );
}

#[test]
fn noisy_points_ask_for_more_runs_and_name_the_outlier() {
    let mut noisy = around(1000.0, 0.2, 9);
    noisy[4] = 1000.0;
    let mut a_values = around(1000.0, 0.01, 9);
    a_values[6] = 2000.0; // trial #6 of A is far off.
    let a = run(1, "spin", &[(1, &a_values)]);
    let b = run(2, "spin", &[(1, &noisy)]);
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert_eq!(comparison.points[0].verdict(), Some(Verdict::Inconclusive));
    assert!(
        comparison.warnings.iter().any(
            |w| matches!(w, ComparisonWarning::RunMore { runs_needed, .. } if *runs_needed > 9)
        ),
        "{:?}",
        comparison.warnings
    );
    let outlier = comparison
        .warnings
        .iter()
        .find(|w| matches!(w, ComparisonWarning::Outlier { .. }))
        .expect("outlier");
    assert!(matches!(
        outlier,
        ComparisonWarning::Outlier {
            side: Side::A,
            trial: 6,
            n: 1,
            ..
        }
    ));
    assert!(
        outlier
            .to_string()
            .contains("trial #6 (started 2025-01-01T00:00:06Z)"),
        "{outlier}"
    );
    assert!(
        comparison
            .warnings
            .iter()
            .any(|w| matches!(w, ComparisonWarning::HighVariance { side: Side::B, .. }))
    );
}

#[test]
fn different_workloads_params_and_points_are_mismatches() {
    let mut a = run(1, "spin", &[(1, &[1.0, 2.0]), (2, &[1.0, 2.0])]);
    let mut b = run(2, "clock", &[(1, &[1.0, 2.0]), (4, &[1.0, 2.0])]);
    a.meta.params.insert("size".into(), "1M".into());
    b.meta.params.insert("size".into(), "2M".into());
    b.meta.params.insert("shared".into(), "true".into());
    let m = mismatches(&a.meta, &b.meta);
    assert_eq!(m.len(), 4, "{m:?}");
    let shown: Vec<String> = m.iter().map(ToString::to_string).collect();
    assert_eq!(shown[0], "different workloads: A is `spin`, B is `clock`");
    assert_eq!(
        shown[1],
        "parameter `shared` differs: A has `(not set)`, B has `true`"
    );
    assert!(
        shown[3].contains("A swept N=1,2, B swept N=1,4"),
        "{}",
        shown[3]
    );
    // Forced: only N=1 is compared, and the rest is said.
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert_eq!(
        comparison.points.iter().map(|p| p.n).collect::<Vec<_>>(),
        vec![1]
    );
    assert!(comparison.warnings.contains(&ComparisonWarning::OnlyInOne {
        side: Side::A,
        points: vec![2]
    }));
    assert!(comparison.warnings.contains(&ComparisonWarning::OnlyInOne {
        side: Side::B,
        points: vec![4]
    }));
}

#[test]
fn a_kernel_difference_is_a_note_and_a_governor_difference_a_warning() {
    let mut a = run(1, "spin", &[(1, &[1.0, 2.0])]);
    let mut b = run(2, "spin", &[(1, &[1.0, 2.0])]);
    a.meta.env.kernel_release = "6.8.0".into();
    b.meta.env.kernel_release = "6.9.1".into();
    a.meta.env.governor = Some("performance".into());
    b.meta.env.governor = Some("powersave".into());
    let comparison = compare_runs(&a, &b, &opts(), true);
    let env: Vec<&ComparisonWarning> = comparison
        .warnings
        .iter()
        .filter(|w| matches!(w, ComparisonWarning::Environment { .. }))
        .collect();
    assert_eq!(env.len(), 2, "{env:?}");
    assert!(env[0].is_note() && !env[1].is_note());
}

#[test]
fn a_side_without_successful_trials_is_not_compared() {
    let a = run(1, "spin", &[(1, &[1.0, 2.0])]);
    let mut b = run(2, "spin", &[(1, &[1.0])]);
    b.trials[0].outcome = TrialOutcome::Failed {
        reason: "boom".into(),
    };
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert!(comparison.points[0].change.is_none());
    assert_eq!(
        comparison.points[0].note.as_deref(),
        Some("no successful trial in B")
    );
    assert_eq!(comparison.summary.verdict, Verdict::Inconclusive);
    assert!(comparison.warnings.iter().any(|w| matches!(
        w,
        ComparisonWarning::FailedTrials {
            side: Side::B,
            failed: 1,
            ..
        }
    )));
}

#[test]
fn the_comparison_serialises_with_tagged_warnings() {
    let a = run(1, "spin", &[(1, &[100.0, 101.0, 102.0])]);
    let b = run(2, "spin", &[(1, &[80.0, 81.0, 82.0])]);
    let json = serde_json::to_value(compare_runs(&a, &b, &opts(), true)).unwrap();
    assert_eq!(json["metric"]["direction"], "higher_is_better");
    assert_eq!(json["points"][0]["change"]["verdict"], "inconclusive");
    assert_eq!(json["warnings"][0]["kind"], "too_few_runs");
    assert_eq!(json["summary"]["verdict"], "inconclusive");
    assert_eq!(json["regressed"], false);
}

#[test]
fn different_commands_are_the_comparison_but_a_different_op_count_is_a_mismatch() {
    let mut a = run(1, "cmd", &[(1, &[1.0, 2.0])]);
    let mut b = run(2, "cmd", &[(1, &[1.0, 2.0])]);
    a.meta.params.insert("cmd".into(), "./old/bench".into());
    b.meta.params.insert("cmd".into(), "./new/bench".into());
    assert!(mismatches(&a.meta, &b.meta).is_empty());
    let comparison = compare_runs(&a, &b, &opts(), true);
    let note = comparison
        .warnings
        .iter()
        .find(|w| matches!(w, ComparisonWarning::CommandDiffers { .. }))
        .expect("the commands are named");
    assert!(note.is_note());
    assert_eq!(
        note.to_string(),
        "cmd: A ran `./old/bench`, B ran `./new/bench`"
    );
    b.meta.params.insert("ops".into(), "1000".into());
    assert!(
        matches!(mismatches(&a.meta, &b.meta).as_slice(), [Mismatch::Param { key, .. }] if key == "ops")
    );
    // A built-in workload's parameters are never "command text".
    let mut c = run(3, "spin", &[(1, &[1.0, 2.0])]);
    c.meta.params.insert("cmd".into(), "x".into());
    assert!(!mismatches(&run(4, "spin", &[(1, &[1.0, 2.0])]).meta, &c.meta).is_empty());
}

#[test]
fn the_two_runs_of_one_ab_are_judged_pair_by_pair() {
    let (a, b) = ab_runs();
    assert!(ab_partners(&a.meta, &b.meta));
    let comparison = compare_runs(&a, &b, &opts(), true);
    assert!(comparison.paired);
    let p = &comparison.points[0];
    assert_eq!((p.pairs, p.runs_a, p.runs_b), (Some(11), 12, 11));
    let c = p.change.unwrap();
    assert_eq!(c.method, stats::Method::SignedRank);
    assert_eq!(c.verdict, Verdict::Regressed, "{c:?}");
    assert!(c.relative_shift.lower < -0.029 && c.relative_shift.upper > -0.031);
    assert!(
        comparison
            .warnings
            .iter()
            .any(|w| matches!(w, ComparisonWarning::Unpartnered { n: 1, a: 1, b: 0 }))
    );

    // The same trials as independent samples: the swings drown the 3%.
    let unpaired = compare_runs(&a, &b, &opts(), false);
    assert!(!unpaired.paired);
    let c = unpaired.points[0].change.unwrap();
    assert_eq!(c.method, stats::Method::MannWhitney);
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
}

#[test]
fn runs_are_partners_only_with_the_same_seed_and_order() {
    let (a, mut b) = ab_runs();
    assert!(!ab_partners(&a.meta, &a.meta));
    b.meta.tags.insert("ab_order".into(), "BAAB".into());
    assert!(!ab_partners(&a.meta, &b.meta));
    let (x, y) = (run(3, "cmd", &[(1, &[1.0])]), run(4, "cmd", &[(1, &[1.0])]));
    assert!(!ab_partners(&x.meta, &y.meta));
    assert!(!compare_runs(&a, &b, &opts(), true).paired);
}

/// Issue 13: an A/A `ab` said `B is ahead at the one N compared` although nothing differed
/// significantly: a lead within the noise is no lead.
#[test]
fn a_lead_within_the_noise_is_not_ahead() {
    let a = run(1, "spin", &[(1, &around(1000.0, 0.02, 10))]);
    let b = run(2, "spin", &[(1, &around(1002.0, 0.02, 10))]);
    let same = compare_runs(&a, &b, &opts(), false);
    let change = same.points[0].change.unwrap();
    assert!(change.median_b > change.median_a);
    assert!(!matches!(
        change.verdict,
        Verdict::Regressed | Verdict::Improved
    ));
    assert_eq!(same.summary.ahead_everywhere, None);
    let faster = run(2, "spin", &[(1, &around(1200.0, 0.02, 10))]);
    let better = compare_runs(&a, &faster, &opts(), false);
    assert_eq!(better.summary.improved, vec![1]);
    assert_eq!(better.summary.ahead_everywhere, Some(Side::B));
}

/// A command's high-variance advice names flags `ab` accepts (a command has no --duration),
/// as a run's own warning does (`model::warnings`).
#[test]
fn high_variance_advice_for_a_compared_command_names_flags_it_accepts() {
    let compared = ComparisonWarning::HighVariance {
        side: Side::B,
        run: 7,
        n: 2,
        metric: "throughput".into(),
        cv: 0.2,
        command: true,
    }
    .to_string();
    assert!(!compared.contains("--duration"), "{compared}");
    assert!(compared.contains("--max-runs"), "{compared}");
}
