//! A step's verdict from its comparisons, pure: whether the ends differ (the bad end REGRESSED
//! against the good end at some N — only those N are bisected), and whether a commit measured
//! against both ends is good, bad, undecided or unstable at every bisected N.
//!
//! - good: NO CHANGE against the good end (its interval within ±threshold), or IMPROVED against
//!   the bad end (wholly on the good side of the midpoint) while INCONCLUSIVE against the good
//!   end with its estimate within ±threshold of it;
//! - bad: REGRESSED against the good end, and NO CHANGE against the bad end or INCONCLUSIVE with
//!   its estimate within ±threshold of it (never REGRESSED or IMPROVED against it: a third level);
//! - or, when the three were measured in groups, by the commit against each group's midpoint (the
//!   geometric mean of its two ends' trials): wholly on the bad side (REGRESSED at a threshold of
//!   0) is bad when it is REGRESSED or INCONCLUSIVE against good and, against bad, as above; good
//!   likewise on the good side;
//! - undecided otherwise; the step is skipped once `--max-runs` cannot decide it;
//! - unstable, skipped at once whatever its verdicts: its trials spread (interquartile range over
//!   the median) [`UNSTABLE_SPREAD`]× as wide as either end's and wider than the gap, at every
//!   bisected N, after [`UNSTABLE_MIN_TRIALS`] trials a side.
//!
//! The threshold is `--threshold`, or half the gap between the ends when larger
//! ([`Bisected::threshold`]), so good and bad cannot both hold and an interval across the
//! midpoint is undecided. Every verdict is `stats::compare`'s (the midpoint's from
//! [`crate::comparison::against_midpoint`]); nothing here looks at a figure but the gap's size,
//! the estimates' distance from an end and the sides' spreads. Why this design (the half-gap
//! band, the midpoint groups, the instability rule): docs/notes/bisect.md.

use stats::{Change, Verdict};

use crate::comparison::{Comparison, TrialMetric};
use model::number_text::{comma_list, signed_percent};

/// A commit's class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// At the good end's level at every bisected N.
    Good,
    /// At the bad end's level at every bisected N.
    Bad,
    /// Neither, and why, in words.
    Undecided(String),
    /// At no one level (its trials spread far wider than the ends'), and why: skipped at once.
    Unstable(String),
}

/// A commit spread this many times as wide as the wider end is unstable ([`unstable`]). Why 2
/// and not 3: docs/notes/bisect.md.
const UNSTABLE_SPREAD: f64 = 2.0;

/// Trials each side needs before its spread is judged.
const UNSTABLE_MIN_TRIALS: usize = 10;

/// What the steps bisect: the N at which the bad end REGRESSED, and the threshold the steps
/// judge commits with.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisected {
    /// The N at which the bad end REGRESSED against the good end.
    pub at: Vec<u32>,
    /// The threshold the steps are judged with: `--threshold`, or half the gap when wider.
    pub threshold: f64,
}

/// A commit within this fraction of the gap from an end is that end: the midpoint.
pub const GAP_FRACTION: f64 = 0.5;

/// What `ends` (the bad end against the good end, judged at `--threshold`) leaves to bisect,
/// the steps judged at half the gap (the smallest over the N) when that is wider; `None` when
/// it did not REGRESS at any N.
pub fn bisected(ends: &Comparison) -> Option<Bisected> {
    let regressed: Vec<(u32, f64)> = ends
        .points
        .iter()
        .filter_map(|p| p.change.map(|c| (p.n, c)))
        .filter(|(_, c)| c.verdict == Verdict::Regressed)
        .map(|(n, c)| (n, c.relative_shift.point.abs()))
        .collect();
    let gap = regressed.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    (!regressed.is_empty()).then(|| Bisected {
        at: regressed.iter().map(|r| r.0).collect(),
        threshold: ends.options.threshold.max(gap * GAP_FRACTION),
    })
}

/// Why the ends do not make a regression to bisect: each N's verdict and interval, and what to
/// try when CPU time was compared.
pub fn not_regressed_reason(ends: &Comparison, metric: &TrialMetric) -> String {
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
    let hint = match metric {
        TrialMetric::CpuThroughput => {
            "; CPU time was compared: if the slowdown is waiting (locks, I/O, sleep), bisect \
             with --metric throughput"
        }
        TrialMetric::Throughput | TrialMetric::MaxRss | TrialMetric::Reported(_) => "",
    };
    // An interval that spans the threshold is not "no change": the noise hid it.
    let hidden: Vec<String> = ends
        .points
        .iter()
        .filter(|p| p.verdict() == Some(Verdict::Inconclusive))
        .map(|p| match p.pairs {
            Some(k) => format!("N={} after {k} groups", p.n),
            None => format!("N={} after {} and {} trials", p.n, p.runs_a, p.runs_b),
        })
        .collect();
    let noise = if hidden.is_empty() {
        String::new()
    } else {
        format!(
            "; the noise hid whether it changed by more than {} at {}: measure more groups (a \
             larger --max-runs) or longer trials, on a quieter machine, and bisect again",
            model::number_text::percent(ends.options.threshold),
            hidden.join(", ")
        )
    };
    format!(
        "the bad end is not REGRESSED against the good end beyond ±{} ({}){noise}{hint}",
        model::number_text::percent(ends.options.threshold),
        points.join("; ")
    )
}

/// The class of a commit from its comparison against the good end (`vs_good`: the commit as B,
/// the good end as A), against the bad end (`vs_bad`) and, when the three were measured in
/// groups, against the midpoint of the ends in each group (`midpoint`, from
/// [[`crate::comparison::against_midpoint`]]; empty for a `--no-build` mark), at the N in `at`.
pub fn classify(
    vs_good: &Comparison,
    vs_bad: &Comparison,
    midpoint: &[(u32, Option<Change>)],
    at: &[u32],
) -> Class {
    if let Some(why) = unstable(vs_good, vs_bad, at) {
        return Class::Unstable(why);
    }
    if let Some(why) = spread_to_judge(vs_good, vs_bad, at) {
        return Class::Undecided(why);
    }
    let change = |c: &Comparison, n: u32| c.points.iter().find(|p| p.n == n).and_then(|p| p.change);
    let verdict = |c: &Comparison, n: u32| change(c, n).map(|c| c.verdict);
    let side = |n: u32| {
        midpoint
            .iter()
            .find(|m| m.0 == n)
            .and_then(|m| m.1.map(|c| c.verdict))
    };
    // The estimate against that end lies within the band around it.
    let near = |c: &Comparison, n: u32| {
        change(c, n).is_some_and(|ch| ch.relative_shift.point.abs() <= c.options.threshold)
    };
    use Verdict::{Improved, Inconclusive, NoChange, Regressed};
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let mut neither = Vec::new();
    for &n in at {
        match (verdict(vs_good, n), verdict(vs_bad, n), side(n)) {
            (Some(NoChange), _, _) => good.push(n),
            (Some(Inconclusive), Some(Improved | Inconclusive), Some(Improved))
                if near(vs_good, n) =>
            {
                good.push(n)
            }
            (Some(Inconclusive), Some(Improved), _) if near(vs_good, n) => good.push(n),
            (Some(Regressed), Some(NoChange), _) => bad.push(n),
            (Some(Regressed | Inconclusive), Some(Inconclusive), Some(Regressed))
                if near(vs_bad, n) =>
            {
                bad.push(n)
            }
            (Some(Inconclusive), Some(NoChange), Some(Regressed)) => bad.push(n),
            (Some(Regressed), Some(Inconclusive), _) if near(vs_bad, n) => bad.push(n),
            (g, b, m) => neither.push(format!(
                "N={n}: {} against good, {} against bad{}",
                g.map_or("not compared".into(), |v| v.to_string()),
                b.map_or("not compared".into(), |v| v.to_string()),
                match m {
                    Some(Improved) => ", on the good side of the midpoint",
                    Some(Regressed) => ", on the bad side of the midpoint",
                    Some(_) => ", across the midpoint",
                    None => "",
                }
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

/// Why the commit is at no one level — at every N in `at` its trials spread (interquartile
/// range over the median) [`UNSTABLE_SPREAD`]× as wide as the wider end's and wider than the
/// gap (twice the steps' threshold), each side with [`UNSTABLE_MIN_TRIALS`] trials — or
/// `None`.
fn unstable(vs_good: &Comparison, vs_bad: &Comparison, at: &[u32]) -> Option<String> {
    let gap = 2.0 * vs_good.options.threshold;
    let mut why = Vec::new();
    for &n in at {
        let g = vs_good.points.iter().find(|p| p.n == n)?;
        let b = vs_bad.points.iter().find(|p| p.n == n)?;
        if g.runs_a.min(g.runs_b).min(b.runs_a) < UNSTABLE_MIN_TRIALS {
            return None;
        }
        let (own, ends) = (g.spread_b?, g.spread_a?.max(b.spread_a?));
        if own < UNSTABLE_SPREAD * ends || own < gap {
            return None;
        }
        why.push(format!(
            "N={n}: the middle half of its trials spans {} of the median, {:.0}× the ends' \
             ({}), wider than the gap",
            model::number_text::percent(own),
            own / ends.max(f64::MIN_POSITIVE),
            model::number_text::percent(ends)
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "unstable, at no one level (a flaky build?): {}",
            why.join("; ")
        )
    })
}

/// Why a commit whose trials already spread as an unstable one's do ([`unstable`]'s rule)
/// gets no verdict before each side has [`UNSTABLE_MIN_TRIALS`] trials, or `None`: else a
/// flaky commit whose mean falls on one end's level would be judged from its first few groups
/// (docs/notes/bisect.md). Undecided, it is measured in more groups until its spread can be
/// judged (or skipped at `--max-runs`).
fn spread_to_judge(vs_good: &Comparison, vs_bad: &Comparison, at: &[u32]) -> Option<String> {
    let gap = 2.0 * vs_good.options.threshold;
    at.iter().find_map(|&n| {
        let g = vs_good.points.iter().find(|p| p.n == n)?;
        let b = vs_bad.points.iter().find(|p| p.n == n)?;
        if g.runs_a.min(g.runs_b).min(b.runs_a) >= UNSTABLE_MIN_TRIALS {
            return None;
        }
        let (own, ends) = (g.spread_b?, g.spread_a?.max(b.spread_a?));
        (own >= UNSTABLE_SPREAD * ends && own >= gap).then(|| {
            format!(
                "N={n}: the middle half of its {} trials spans {} of the median, {:.0}× the \
                 ends' ({}): judged once each side has {UNSTABLE_MIN_TRIALS}",
                g.runs_b,
                model::number_text::percent(own),
                own / ends.max(f64::MIN_POSITIVE),
                model::number_text::percent(ends)
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::compare_runs;
    use stats::CompareOptions;

    /// A run of ten trials per N around `level` thousand ops/s, each within ±0.2%.
    fn run(id: i64, levels: &[(u32, f64)]) -> model::record::RunData {
        noisy_run(id, levels, 1.0)
    }

    /// [`run`] with its trials' spread times `scale`.
    fn noisy_run(id: i64, levels: &[(u32, f64)], scale: f64) -> model::record::RunData {
        let spread = [0.1, -0.2, 0.05, -0.1, 0.2, 0.0, -0.05, 0.15, -0.15, 0.1];
        let points: Vec<(u32, Vec<f64>)> = levels
            .iter()
            .map(|&(n, x)| {
                let values = spread.iter().map(|s| 1e3 * x * (1.0 + scale * s / 100.0));
                (n, values.collect())
            })
            .collect();
        let borrowed: Vec<(u32, &[f64])> = points.iter().map(|(n, v)| (*n, &v[..])).collect();
        model::test_runs::run(id, "spin", &borrowed)
    }

    #[test]
    fn a_commit_is_good_bad_or_undecided_by_its_two_verdicts() {
        let opts = CompareOptions::default();
        let good = run(1, &[(1, 1000.0), (2, 2000.0)]);
        let bad = run(2, &[(1, 970.0), (2, 1940.0)]);
        let ends = compare_runs(&good, &bad, &opts, false);
        let b = bisected(&ends).unwrap();
        assert_eq!(b.at, [1, 2]);
        // A 3% gap: commits are judged at half of it; a 1.6% gap: at --threshold, 1%.
        assert!((b.threshold - 0.015).abs() < 0.0005, "{b:?}");
        let near = run(9, &[(1, 984.0)]);
        let small = bisected(&compare_runs(&good, &near, &opts, false)).unwrap();
        assert_eq!(small.threshold, 0.01);
        let at = [1, 2];
        let opts = stats::CompareOptions {
            threshold: b.threshold,
            ..opts
        };
        let like_good = run(3, &[(1, 1000.5), (2, 1999.0)]);
        let like_bad = run(4, &[(1, 969.0), (2, 1941.0)]);
        let between = run(5, &[(1, 985.0), (2, 1970.0)]);
        let class = |c: &model::record::RunData| {
            classify(
                &compare_runs(&good, c, &opts, false),
                &compare_runs(&bad, c, &opts, false),
                &[],
                &at,
            )
        };
        assert_eq!(class(&like_good), Class::Good);
        assert_eq!(class(&like_bad), Class::Bad);
        let Class::Undecided(why) = class(&between) else {
            panic!("a commit halfway (its interval across the midpoint) is neither");
        };
        assert!(
            why.contains("N=1: INCONCLUSIVE against good, INCONCLUSIVE against bad"),
            "{why}"
        );
        // Good at one N and bad at the other: two changes, undecided.
        let mixed = run(6, &[(1, 1000.0), (2, 1940.0)]);
        assert!(
            matches!(class(&mixed), Class::Undecided(w) if w.contains("good at N=1, bad at N=2"))
        );
    }

    /// Either comparison decides a commit when its interval lies wholly on one side of the
    /// midpoint and the other does not contradict it: a noisy commit near the bad end is bad
    /// though its interval against the bad end crosses the band, one near the good end is good
    /// though its interval against the good end does, and one worse than the bad end by more
    /// than half the gap (a third level) is neither.
    #[test]
    fn one_decisive_comparison_decides_a_noisy_commit_unless_the_other_contradicts_it() {
        let opts = CompareOptions::default();
        let good = run(1, &[(1, 1000.0)]);
        let bad = run(2, &[(1, 970.0)]);
        let b = bisected(&compare_runs(&good, &bad, &opts, false)).unwrap();
        let opts = stats::CompareOptions {
            threshold: b.threshold,
            ..opts
        };
        let verdicts = |c: &model::record::RunData| {
            let v = |end: &model::record::RunData| {
                let cmp = compare_runs(end, c, &opts, false);
                cmp.points[0].change.unwrap().verdict
            };
            (v(&good), v(&bad))
        };
        let class = |c: &model::record::RunData| {
            classify(
                &compare_runs(&good, c, &opts, false),
                &compare_runs(&bad, c, &opts, false),
                &[],
                &[1],
            )
        };
        let near_bad = noisy_run(3, &[(1, 958.0)], 4.0);
        assert_eq!(
            verdicts(&near_bad),
            (Verdict::Regressed, Verdict::Inconclusive)
        );
        assert_eq!(class(&near_bad), Class::Bad);
        let near_good = noisy_run(4, &[(1, 1012.0)], 4.0);
        assert_eq!(
            verdicts(&near_good),
            (Verdict::Inconclusive, Verdict::Improved)
        );
        assert_eq!(class(&near_good), Class::Good);
        let worse = noisy_run(5, &[(1, 930.0)], 4.0);
        assert_eq!(verdicts(&worse), (Verdict::Regressed, Verdict::Regressed));
        assert!(matches!(class(&worse), Class::Undecided(w)
            if w.contains("REGRESSED against good, REGRESSED against bad")));
    }

    /// A bad commit INCONCLUSIVE against the good end (its interval crosses half the gap the
    /// ends measured before the step) is bad when, group by group, it lies wholly on the bad
    /// side of the midpoint of the ends measured with it — the gap in the step was smaller, as
    /// the VM's speed drifts — and not when the midpoint cannot tell.
    #[test]
    fn the_midpoint_of_each_group_decides_a_commit_the_ends_leave_inconclusive() {
        let opts = CompareOptions::default();
        // Independent noise of ±2% per trial, from a fixed sequence.
        let mut state = 0x2545_f491_u64;
        let mut noise = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            1.0 + 0.04 * ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5)
        };
        let mut side = |id: i64, level: f64| {
            let v: Vec<f64> = (0..40).map(|_| level * noise()).collect();
            model::test_runs::run(id, "spin", &[(1, &v[..])])
        };
        // The ends before the step: 3% apart, commits judged at ±1.5%.
        let b = bisected(&compare_runs(
            &side(1, 1000.0),
            &side(2, 970.0),
            &opts,
            false,
        ))
        .unwrap();
        let opts = stats::CompareOptions {
            threshold: b.threshold,
            ..opts
        };
        // The ends in the step: 2.4% apart.
        let (good, bad) = (side(3, 1000.0), side(4, 976.0));
        let judged = |c: &model::record::RunData, with_midpoint: bool| {
            let v = |end: &model::record::RunData| {
                compare_runs(end, c, &opts, false).points[0]
                    .change
                    .unwrap()
                    .verdict
            };
            let midpoint = crate::comparison::against_midpoint(
                &good,
                &bad,
                c,
                &opts,
                &crate::comparison::TrialMetric::Throughput,
            );
            let class = classify(
                &compare_runs(&good, c, &opts, false),
                &compare_runs(&bad, c, &opts, false),
                if with_midpoint { &midpoint } else { &[] },
                &[1],
            );
            (v(&good), v(&bad), midpoint[0].1.unwrap().verdict, class)
        };
        let near_bad = side(5, 983.0);
        let (g, bd, m, class) = judged(&near_bad, true);
        assert_eq!(g, Verdict::Inconclusive);
        assert_ne!(bd, Verdict::Regressed);
        assert_eq!(m, Verdict::Regressed);
        assert_eq!(class, Class::Bad);
        // Without the groups' midpoint (a `--no-build` mark), the same commit is undecided.
        let (.., alone) = judged(&near_bad, false);
        assert!(matches!(alone, Class::Undecided(_)), "{alone:?}");
        let halfway = side(6, 988.0);
        let (_, _, m, class) = judged(&halfway, true);
        assert_eq!(m, Verdict::Inconclusive);
        assert!(
            matches!(&class, Class::Undecided(w) if w.contains("across the midpoint")),
            "{class:?}"
        );
    }

    /// `count` trials at N=1 from `values`, repeated in order.
    fn trials(id: i64, values: &[f64], count: usize) -> model::record::RunData {
        let v: Vec<f64> = values.iter().copied().cycle().take(count).collect();
        model::test_runs::run(id, "spin", &[(1, &v[..])])
    }

    /// A commit at two levels (half its trials doing 50% more work) is unstable whatever its
    /// mean, and said so with the spreads; one outlier trial, or too few trials, is not.
    #[test]
    fn a_commit_at_two_levels_is_unstable_and_one_outlier_is_not() {
        let opts = CompareOptions::default();
        let spread = [1.0, 0.998, 1.002, 0.999, 1.001, 1.0005, 0.9995];
        let good: Vec<f64> = spread.iter().map(|s| 1000.0 * s).collect();
        let bad: Vec<f64> = spread.iter().map(|s| 900.0 * s).collect();
        let (good, bad) = (trials(1, &good, 14), trials(2, &bad, 14));
        let b = bisected(&compare_runs(&good, &bad, &opts, false)).unwrap();
        let opts = stats::CompareOptions {
            threshold: b.threshold,
            ..opts
        };
        let class = |c: &model::record::RunData| {
            classify(
                &compare_runs(&good, c, &opts, false),
                &compare_runs(&bad, c, &opts, false),
                &[],
                &[1],
            )
        };
        let flaky = trials(3, &[1000.0, 667.0, 1001.0, 668.0, 999.0, 666.0, 1000.5], 14);
        let Class::Unstable(why) = class(&flaky) else {
            panic!("two levels: {:?}", class(&flaky));
        };
        assert!(
            why.contains("N=1: the middle half of its trials spans "),
            "{why}"
        );
        // Its mean on the bad level does not make it bad.
        let on_bad_level = trials(4, &[1000.0, 800.0, 1001.0, 801.0, 999.0, 799.0, 1000.5], 14);
        assert!(matches!(class(&on_bad_level), Class::Unstable(_)));
        let mut hiccup: Vec<f64> = spread.iter().map(|s| 900.0 * s).collect();
        hiccup[3] = 600.0;
        assert_eq!(class(&trials(5, &hiccup, 14)), Class::Bad);
        assert!(!matches!(
            class(&trials(6, &[1000.0, 667.0], 8)),
            Class::Unstable(_)
        ));
        // Too few trials to judge its spread, yet already spread as a flaky commit's: no
        // verdict yet, though its mean is on the bad level (it is measured further).
        let early = trials(7, &[1000.0, 800.0, 1001.0, 801.0, 999.0, 799.0], 6);
        let Class::Undecided(why) = class(&early) else {
            panic!("a flaky commit's first six trials: {:?}", class(&early));
        };
        assert!(
            why.contains("N=1: the middle half of its 6 trials spans ")
                && why.contains("judged once each side has 10"),
            "{why}"
        );
        // A steady commit on the bad level is bad after as few.
        let steady: Vec<f64> = spread.iter().map(|s| 900.0 * s).collect();
        assert_eq!(class(&trials(8, &steady, 6)), Class::Bad);
    }

    #[test]
    fn ends_that_do_not_differ_are_no_regression_with_their_intervals() {
        let opts = CompareOptions::default();
        let good = run(1, &[(1, 1000.0)]);
        let same = run(2, &[(1, 1000.2)]);
        let ends = compare_runs(&good, &same, &opts, false);
        assert!(bisected(&ends).is_none());
        let why = not_regressed_reason(&ends, &TrialMetric::Throughput);
        assert!(why.contains("N=1: NO CHANGE"), "{why}");
        assert!(why.contains("beyond ±1%"), "{why}");
        assert!(!why.contains("noise hid"), "NO CHANGE is an answer: {why}");
    }

    /// Ends whose interval spans the threshold are not said to be unchanged: the reason says the
    /// noise hid it, after how many trials, and what to do.
    #[test]
    fn ends_the_noise_hides_say_so_and_how_to_tell() {
        let opts = CompareOptions::default();
        let good = noisy_run(1, &[(1, 1000.0)], 8.0);
        let bad = noisy_run(2, &[(1, 985.0)], 8.0);
        let ends = compare_runs(&good, &bad, &opts, false);
        assert!(bisected(&ends).is_none());
        assert_eq!(
            ends.points[0].change.unwrap().verdict,
            Verdict::Inconclusive
        );
        let why = not_regressed_reason(&ends, &TrialMetric::CpuThroughput);
        assert!(why.contains("N=1: INCONCLUSIVE"), "{why}");
        assert!(
            why.contains(
                "the noise hid whether it changed by more than 1% at N=1 after 10 and 10 trials"
            ),
            "{why}"
        );
        assert!(why.contains("a larger --max-runs"), "{why}");
        assert!(why.ends_with("bisect with --metric throughput"), "{why}");
    }
}
