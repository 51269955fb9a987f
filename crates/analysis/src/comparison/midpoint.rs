//! A candidate against the midpoint of two runs measured with it in groups — `bisect`'s step,
//! whose question is which of the two ends (the good build and the bad one) a commit is nearer
//! to.
//!
//! Per group (one trial of each run at the same N and index, back to back), the midpoint is the
//! geometric mean of the two ends' values (their arithmetic mean when one is not positive), and
//! the candidate's value is compared with it pair by pair, as [`stats::compare_paired`] does,
//! with a threshold of 0: REGRESSED when the candidate's interval lies wholly on the bad end's
//! side of the midpoint, IMPROVED when wholly on the good end's, INCONCLUSIVE otherwise.
//!
//! Why a third comparison: the commit against either end alone must clear half the gap that the
//! ends' own comparison measured, before the step, with the noise of two trials in every pair
//! (variance 2σ²). The midpoint of the same group is the gap measured in that very group, and
//! the candidate against it carries 1.5σ²; a commit whose build sits a little off its end's level
//! (code layout moves a build by half a percent) is still on one side of the midpoint. The case
//! that showed it: docs/notes/bisect.md.

use stats::{Change, CompareOptions};

use super::trials::{TrialMetric, trials_at};
use model::record::RunData;

/// The candidate against the midpoint of `good` and `bad` at each N all three measured, in
/// ascending N; `None` at an N without a complete group or where the comparison cannot be made
/// (a midpoint of 0). `opts`' threshold is ignored (0); a reported figure is judged in its own
/// direction, as [`super::compare_runs_on`] does.
pub fn against_midpoint(
    good: &RunData,
    bad: &RunData,
    candidate: &RunData,
    opts: &CompareOptions,
    metric: &TrialMetric,
) -> Vec<(u32, Option<Change>)> {
    let (_, own_direction) = metric.unit_and_direction(&good.meta);
    let opts = CompareOptions {
        direction: own_direction.unwrap_or(opts.direction),
        threshold: 0.0,
        ..*opts
    };
    let mut ns: Vec<u32> = candidate.trials.iter().map(|t| t.n).collect();
    ns.sort_unstable();
    ns.dedup();
    ns.into_iter()
        .map(|n| {
            let (mid, at) = groups(good, bad, candidate, n, metric);
            let change = (!mid.is_empty())
                .then(|| stats::compare_paired(&mid, &at, &opts).ok())
                .flatten();
            (n, change)
        })
        .collect()
}

/// The midpoints and the candidate's values of the complete groups at `n`, by trial index.
fn groups(
    good: &RunData,
    bad: &RunData,
    candidate: &RunData,
    n: u32,
    metric: &TrialMetric,
) -> (Vec<f64>, Vec<f64>) {
    let by_index = |data: &RunData| {
        let t = trials_at(data, n, metric);
        t.index
            .into_iter()
            .zip(t.values)
            .collect::<std::collections::BTreeMap<u32, f64>>()
    };
    let (g, b, c) = (by_index(good), by_index(bad), by_index(candidate));
    c.iter()
        .filter_map(|(i, &x)| {
            let (&y, &z) = (g.get(i)?, b.get(i)?);
            let mid = if y > 0.0 && z > 0.0 {
                (y * z).sqrt()
            } else {
                (y + z) / 2.0
            };
            Some((mid, x))
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::test_runs::run;
    use stats::Verdict;

    /// A run of `values` at N=1, trial i at index i.
    fn one_point(id: i64, values: &[f64]) -> RunData {
        run(id, "spin", &[(1, values)])
    }

    /// Group i's common drift: every run's trial i moves with it, as a VM's speed does.
    fn drift(i: usize) -> f64 {
        1.0 + 0.02 * ((i * 7 % 11) as f64 / 10.0 - 0.5)
    }

    fn level(x: f64, k: usize) -> Vec<f64> {
        (0..k).map(|i| x * drift(i)).collect()
    }

    #[test]
    fn a_commit_off_its_ends_level_is_still_on_its_side_of_the_midpoint() {
        let good = one_point(1, &level(100_000.0, 20));
        let bad = one_point(2, &level(97_000.0, 20));
        // Bad, but its build 1% better than the bad end's: 98% of good, past the midpoint.
        let near_bad = one_point(3, &level(98_000.0, 20));
        let near_good = one_point(4, &level(99_200.0, 20));
        let halfway = one_point(5, &level(98_500.0, 20));
        let opts = CompareOptions::default();
        let verdict = |c: &RunData| {
            let got = against_midpoint(&good, &bad, c, &opts, &TrialMetric::Throughput);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0, 1);
            got[0].1.as_ref().map(|ch| ch.verdict)
        };
        assert_eq!(verdict(&near_bad), Some(Verdict::Regressed));
        assert_eq!(verdict(&near_good), Some(Verdict::Improved));
        // The geometric midpoint of 100 000 and 97 000 is 98 488.6: 98 500 is 0.01% above it
        // in every group, a real but tiny difference, on the good side.
        assert_eq!(verdict(&halfway), Some(Verdict::Improved));
    }

    #[test]
    fn only_complete_groups_count_and_an_n_without_one_is_none() {
        let good = run(1, "spin", &[(1, &level(100.0, 6)), (2, &level(200.0, 6))]);
        let bad = run(2, "spin", &[(1, &level(90.0, 3))]);
        let candidate = run(3, "spin", &[(1, &level(91.0, 6)), (2, &level(180.0, 6))]);
        let got = against_midpoint(
            &good,
            &bad,
            &candidate,
            &CompareOptions::default(),
            &TrialMetric::Throughput,
        );
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 2]);
        // Three groups at N=1 (the bad run's trials 0..3): too few for the signed-rank test
        // to reach alpha, but compared; none at N=2.
        let at_1 = got[0]
            .1
            .as_ref()
            .expect("three complete groups are compared");
        assert_eq!(at_1.verdict, Verdict::Inconclusive);
        assert!(got[1].1.is_none());
    }
}
