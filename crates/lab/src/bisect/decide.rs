//! A step's verdict from its comparisons, pure: whether the ends differ (the bad end REGRESSED
//! against the good end at some N — only those N are bisected), and whether a commit measured
//! against both ends is good, bad or undecided at every bisected N.
//!
//! - good: NO CHANGE against the good end (its interval lies within ±threshold);
//! - bad: NO CHANGE against the bad end, and REGRESSED against the good end;
//! - anything else is undecided, and the step is skipped once `--max-runs` cannot decide it.
//!
//! Every verdict is `stats::compare`'s (paired when the runs were measured together): the
//! threshold and alpha are the bisection's, and nothing here looks at a figure directly.

use stats::Verdict;

use crate::analysis::comparison::Comparison;
use crate::number_text::{comma_list, signed_percent};

/// A commit's class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Class {
    Good,
    Bad,
    /// Neither, and why, in words.
    Undecided(String),
}

/// The N at which `ends` (the bad end against the good end) REGRESSED.
pub(crate) fn regressed_points(ends: &Comparison) -> Vec<u32> {
    ends.points
        .iter()
        .filter(|p| p.change.is_some_and(|c| c.verdict == Verdict::Regressed))
        .map(|p| p.n)
        .collect()
}

/// Why the ends do not make a regression to bisect: each N's verdict and interval.
pub(crate) fn not_regressed_reason(ends: &Comparison) -> String {
    let points: Vec<String> = ends
        .points
        .iter()
        .map(|p| match p.change {
            Some(c) => format!(
                "N={}: {} {} [{}, {}]",
                p.n,
                c.verdict,
                signed_percent(c.relative_shift.point),
                signed_percent(c.relative_shift.lower),
                signed_percent(c.relative_shift.upper)
            ),
            None => format!(
                "N={}: not compared ({})",
                p.n,
                p.note.as_deref().unwrap_or("no data")
            ),
        })
        .collect();
    format!(
        "the bad end is not REGRESSED against the good end beyond ±{} ({})",
        crate::number_text::percent(ends.options.threshold),
        points.join("; ")
    )
}

/// The class of a commit from its comparison against the good end (`vs_good`: the commit as B,
/// the good end as A) and against the bad end (`vs_bad`), at the N in `at`.
pub(crate) fn classify(vs_good: &Comparison, vs_bad: &Comparison, at: &[u32]) -> Class {
    let verdict = |c: &Comparison, n: u32| {
        c.points
            .iter()
            .find(|p| p.n == n)
            .and_then(|p| p.change)
            .map(|c| c.verdict)
    };
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let mut neither = Vec::new();
    for &n in at {
        match (verdict(vs_good, n), verdict(vs_bad, n)) {
            (Some(Verdict::NoChange), _) => good.push(n),
            (Some(Verdict::Regressed), Some(Verdict::NoChange)) => bad.push(n),
            (g, b) => neither.push(format!(
                "N={n}: {} against good, {} against bad",
                g.map_or("not compared".into(), |v| v.to_string()),
                b.map_or("not compared".into(), |v| v.to_string()),
            )),
        }
    }
    if !neither.is_empty() {
        return Class::Undecided(neither.join("; "));
    }
    match (good.is_empty(), bad.is_empty()) {
        (false, true) => Class::Good,
        (true, false) => Class::Bad,
        _ => Class::Undecided(format!(
            "good at N={}, bad at N={}",
            comma_list(&good),
            comma_list(&bad)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::comparison::compare_runs;
    use stats::CompareOptions;

    /// A run of ten trials per N around `level` thousand ops/s, each within ±0.2%.
    fn run(id: i64, levels: &[(u32, f64)]) -> crate::record::RunData {
        let spread = [0.1, -0.2, 0.05, -0.1, 0.2, 0.0, -0.05, 0.15, -0.15, 0.1];
        let points: Vec<(u32, Vec<f64>)> = levels
            .iter()
            .map(|&(n, x)| {
                let values = spread.iter().map(|s| 1e3 * x * (1.0 + s / 100.0));
                (n, values.collect())
            })
            .collect();
        let borrowed: Vec<(u32, &[f64])> = points.iter().map(|(n, v)| (*n, &v[..])).collect();
        crate::test_runs::run(id, "spin", &borrowed)
    }

    #[test]
    fn a_commit_is_good_bad_or_undecided_by_its_two_verdicts() {
        let opts = CompareOptions::default();
        let good = run(1, &[(1, 1000.0), (2, 2000.0)]);
        let bad = run(2, &[(1, 970.0), (2, 1940.0)]);
        let ends = compare_runs(&good, &bad, &opts, false);
        assert_eq!(regressed_points(&ends), [1, 2]);
        let at = [1, 2];
        let like_good = run(3, &[(1, 1000.5), (2, 1999.0)]);
        let like_bad = run(4, &[(1, 969.0), (2, 1941.0)]);
        let between = run(5, &[(1, 985.0), (2, 1970.0)]);
        let class = |c: &crate::record::RunData| {
            classify(
                &compare_runs(&good, c, &opts, false),
                &compare_runs(&bad, c, &opts, false),
                &at,
            )
        };
        assert_eq!(class(&like_good), Class::Good);
        assert_eq!(class(&like_bad), Class::Bad);
        let Class::Undecided(why) = class(&between) else {
            panic!("a commit halfway is neither");
        };
        assert!(
            why.contains("N=1: REGRESSED against good, IMPROVED against bad"),
            "{why}"
        );
        // Good at one N and bad at the other: two changes, undecided.
        let mixed = run(6, &[(1, 1000.0), (2, 1940.0)]);
        assert!(
            matches!(class(&mixed), Class::Undecided(w) if w.contains("good at N=1, bad at N=2"))
        );
    }

    #[test]
    fn ends_that_do_not_differ_are_no_regression_with_their_intervals() {
        let opts = CompareOptions::default();
        let good = run(1, &[(1, 1000.0)]);
        let same = run(2, &[(1, 1000.2)]);
        let ends = compare_runs(&good, &same, &opts, false);
        assert!(regressed_points(&ends).is_empty());
        let why = not_regressed_reason(&ends);
        assert!(why.contains("N=1: NO CHANGE"), "{why}");
        assert!(why.contains("beyond ±1%"), "{why}");
    }
}
