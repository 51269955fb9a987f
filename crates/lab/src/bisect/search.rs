//! The bisection itself, pure: positions `0..len` in first-parent order (0 the good end,
//! `len − 1` the bad end), the verdicts so far, and what to do next — test the commit halfway
//! between the last good and the first bad one, or stop with the answer.
//!
//! As git bisect does: a skipped commit is stepped around (the untested commit nearest the
//! middle is tested instead), and when only skipped commits lie between the last good and the
//! first bad commit, the first bad commit is one of them or the bad one, and no test can say
//! which. A bad verdict below a good one cannot happen with a single change; the search then
//! trusts the latest good and the first bad above it, and [`Search::contradictions`] names the
//! pairs so the answer can say so.

use std::collections::BTreeMap;

use store::{BisectRecord, StepVerdict};

/// What a step decided about a commit, as far as the search is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    Good,
    Bad,
    Skip,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Test the commit at this position.
    Test(u32),
    /// The first bad commit is at this position.
    Found(u32),
    /// Only skipped commits are left: the first bad commit is one of these positions (the
    /// skipped ones and the first bad one).
    OnlySkipped(Vec<u32>),
}

/// A bisection's verdicts by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Search {
    len: u32,
    marks: BTreeMap<u32, Mark>,
}

impl Search {
    /// A range of `len` commits (at least 2: the good and the bad end), the ends marked.
    pub(crate) fn new(len: u32) -> Search {
        let len = len.max(2);
        let mut marks = BTreeMap::new();
        marks.insert(0, Mark::Good);
        marks.insert(len - 1, Mark::Bad);
        Search { len, marks }
    }

    /// The search of a stored bisection, its decided steps replayed.
    pub(crate) fn of(record: &BisectRecord) -> Search {
        let mut search = Search::new(record.commits.len() as u32);
        for s in record.steps.iter().filter(|s| s.step > 0) {
            let mark = match s.verdict {
                StepVerdict::Good => Mark::Good,
                StepVerdict::Bad => Mark::Bad,
                StepVerdict::Skip => Mark::Skip,
                _ => continue,
            };
            search.mark(s.position, mark);
        }
        search
    }

    /// Records the verdict of the commit at `position` (an end's verdict cannot change).
    pub(crate) fn mark(&mut self, position: u32, mark: Mark) {
        if position > 0 && position < self.len - 1 {
            self.marks.insert(position, mark);
        }
    }

    /// The last good position and the first bad position above it.
    pub(crate) fn bounds(&self) -> (u32, u32) {
        let good = self
            .marks
            .iter()
            .filter(|(_, m)| **m == Mark::Good)
            .map(|(p, _)| *p)
            .max()
            .unwrap_or(0);
        let bad = self
            .marks
            .range(good + 1..)
            .find(|(_, m)| **m == Mark::Bad)
            .map_or(self.len - 1, |(p, _)| *p);
        (good, bad)
    }

    /// What to do next (see the module doc).
    pub(crate) fn next(&self) -> Next {
        let (good, bad) = self.bounds();
        if bad == good + 1 {
            return Next::Found(bad);
        }
        let untested: Vec<u32> = (good + 1..bad)
            .filter(|p| !self.marks.contains_key(p))
            .collect();
        if untested.is_empty() {
            return Next::OnlySkipped((good + 1..=bad).collect());
        }
        // Halfway, rounded down as git does; the nearest untested commit when that one is
        // skipped (the lower one on a tie).
        let middle = good + (bad - good) / 2;
        let nearest = untested
            .iter()
            .copied()
            .min_by_key(|&p| (p.abs_diff(middle), p))
            .unwrap_or(untested[0]);
        Next::Test(nearest)
    }

    /// Bad verdicts below a good one, as (bad position, good position): the range holds more
    /// than one change, or a step decided wrongly.
    pub(crate) fn contradictions(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (&bad, _) in self.marks.iter().filter(|(_, m)| **m == Mark::Bad) {
            if let Some((&good, _)) = self
                .marks
                .range(bad + 1..)
                .rfind(|(_, m)| **m == Mark::Good)
            {
                out.push((bad, good));
            }
        }
        out
    }

    /// Commits left to test at most, `⌈log₂(untested + 1)⌉`, as git bisect's "roughly N steps".
    pub(crate) fn steps_left(&self) -> u32 {
        let (good, bad) = self.bounds();
        let untested = (good + 1..bad)
            .filter(|p| !self.marks.contains_key(p))
            .count() as u32;
        u32::BITS - untested.leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects `len` commits whose first bad one is `first_bad`, skipping `skips`; returns the
    /// end and the positions tested in order.
    fn bisect(len: u32, first_bad: u32, skips: &[u32]) -> (Next, Vec<u32>) {
        let mut s = Search::new(len);
        let mut tested = Vec::new();
        loop {
            match s.next() {
                Next::Test(p) => {
                    tested.push(p);
                    let mark = if skips.contains(&p) {
                        Mark::Skip
                    } else if p >= first_bad {
                        Mark::Bad
                    } else {
                        Mark::Good
                    };
                    s.mark(p, mark);
                }
                end => return (end, tested),
            }
        }
    }

    #[test]
    fn sixty_four_commits_take_at_most_six_steps_wherever_the_change_is() {
        for k in 1..64 {
            let (end, tested) = bisect(64, k, &[]);
            assert_eq!(end, Next::Found(k));
            assert!(tested.len() <= 6, "k={k}: {tested:?}");
        }
        assert_eq!(Search::new(64).steps_left(), 6);
        assert_eq!(Search::new(2).next(), Next::Found(1));
        assert_eq!(Search::new(3).next(), Next::Test(1));
    }

    #[test]
    fn a_skipped_commit_is_stepped_around() {
        let (end, tested) = bisect(64, 40, &[31, 47]);
        assert_eq!(end, Next::Found(40));
        assert_eq!(tested[..2], [31, 30]);
        assert!(tested.len() <= 8, "{tested:?}");
    }

    #[test]
    fn only_skipped_commits_left_leave_a_set_of_candidates() {
        let (end, _) = bisect(64, 40, &[39]);
        assert_eq!(end, Next::OnlySkipped(vec![39, 40]));
        let (end, _) = bisect(5, 3, &[1, 2, 3]);
        assert_eq!(end, Next::OnlySkipped(vec![1, 2, 3, 4]));
    }

    #[test]
    fn a_bad_verdict_below_a_good_one_is_named() {
        let mut s = Search::new(10);
        s.mark(3, Mark::Bad);
        s.mark(6, Mark::Good);
        assert_eq!(s.bounds(), (6, 9));
        assert_eq!(s.contradictions(), vec![(3, 6)]);
        // The ends cannot be re-marked.
        s.mark(0, Mark::Bad);
        assert_eq!(s.bounds(), (6, 9));
    }
}
