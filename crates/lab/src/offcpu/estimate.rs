//! [`Estimator`]: what one traced episode stands for in a site's count and blocked time.
//!
//! The perf tracer records every episode: each stands for itself. The in-kernel tracer sums
//! every thread's blocked time exactly and records the chains of 1 in `k` blocking switches
//! ([`perf::BlockedEpisode::weight`]). Each sampled episode stands for `k` in the counts
//! (Horvitz-Thompson: sampled with probability 1/k). For the time, the sampled episodes only
//! share out their thread's exact blocked time: a thread's sampled episodes, each weighted `k`,
//! are scaled to its exact sum (a ratio estimator). Weighting the durations alone overstates:
//! recording a chain makes the sampled episode itself a little longer (the copies and walks
//! evict the caches the partner runs in; docs/notes/tracing.md), and the ratio cancels that out
//! per thread, leaving only its effect on how the thread's time is shared between its sites.
//!
//! The sampling error of a site's time: Σ k(k-1)·t² over its sampled episodes (t scaled as
//! above), the variance of the Horvitz-Thompson sum, which the ratio's own error is not added
//! to.

use std::collections::HashMap;

use model::record::ClockWindow;

/// What each episode of one trace stands for.
#[derive(Debug, Default)]
pub(crate) struct Estimator {
    /// Per thread, its exact blocked time in the window over its sampled episodes' time each
    /// weighted; `None` when every episode was traced (the perf tracer).
    scale: Option<HashMap<u32, f64>>,
}

impl Estimator {
    /// The estimator for `trace` over `window`.
    pub(crate) fn new(trace: &perf::OffCpuTrace, window: ClockWindow) -> Estimator {
        if trace.sampling.is_none() {
            return Estimator { scale: None };
        }
        let mut weighted: HashMap<u32, f64> = HashMap::new();
        for e in &trace.episodes {
            let t = e.blocked_within(window.start.0, window.end.0) as f64;
            *weighted.entry(e.tid).or_default() += t * f64::from(e.weight.max(1));
        }
        let scale = trace
            .threads
            .iter()
            .filter_map(|life| {
                let sampled = *weighted.get(&life.tid)?;
                (sampled > 0.0).then(|| (life.tid, life.blocked as f64 / sampled))
            })
            .collect();
        Estimator { scale: Some(scale) }
    }

    fn factor(&self, e: &perf::BlockedEpisode) -> f64 {
        match &self.scale {
            None => 1.0,
            // A thread whose life was not summed (its exit record lost): weights alone.
            Some(s) => f64::from(e.weight.max(1)) * s.get(&e.tid).copied().unwrap_or(1.0),
        }
    }

    /// The blocked time `e` stands for, given its own `blocked` inside the window.
    pub(crate) fn blocked(&self, e: &perf::BlockedEpisode, blocked: u64) -> u64 {
        match &self.scale {
            None => blocked,
            Some(_) => (blocked as f64 * self.factor(e)).round() as u64,
        }
    }

    /// How many episodes `e` stands for.
    pub(crate) fn count(&self, e: &perf::BlockedEpisode) -> u64 {
        match &self.scale {
            None => 1,
            Some(_) => u64::from(e.weight.max(1)),
        }
    }

    /// The sampling variance `e` adds to its site's time (ns²): 0 when it was not sampled.
    pub(crate) fn variance(&self, e: &perf::BlockedEpisode, blocked: u64) -> f64 {
        let k = f64::from(e.weight.max(1));
        if self.scale.is_none() || k <= 1.0 {
            return 0.0;
        }
        let t = self.blocked(e, blocked) as f64 / k;
        k * (k - 1.0) * t * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::Nanos;

    fn episode(tid: u32, begin: u64, end: u64, weight: u32) -> perf::BlockedEpisode {
        perf::BlockedEpisode {
            pid: 1,
            tid,
            state: 1,
            begin,
            end,
            woken: true,
            waker: None,
            kernel_chain: 0,
            user_chain: 0,
            weight,
        }
    }

    fn life(tid: u32, blocked: u64) -> perf::ThreadLife {
        perf::ThreadLife {
            pid: 1,
            tid,
            blocked,
            ..perf::ThreadLife::default()
        }
    }

    const WINDOW: ClockWindow = ClockWindow {
        start: Nanos(0),
        end: Nanos(1_000_000),
    };

    #[test]
    fn every_episode_stands_for_itself_when_every_one_was_traced() {
        let trace = perf::OffCpuTrace {
            episodes: vec![episode(7, 100, 400, 1)],
            threads: vec![life(7, 9_999)],
            ..perf::OffCpuTrace::default()
        };
        let est = Estimator::new(&trace, WINDOW);
        let e = &trace.episodes[0];
        assert_eq!((est.blocked(e, 300), est.count(e)), (300, 1));
        assert_eq!(est.variance(e, 300), 0.0);
    }

    #[test]
    fn sampled_episodes_share_out_their_threads_exact_blocked_time() {
        // Thread 7 blocked 10,000 ns in all; two sampled episodes of 100 and 300 ns, 1 in 10:
        // weighted 4,000 ns, so each stands for 2.5x its weighted time (the sampled ones ran
        // long), and the two shares stay 1:3.
        let trace = perf::OffCpuTrace {
            episodes: vec![episode(7, 0, 100, 10), episode(7, 200, 500, 10)],
            threads: vec![life(7, 10_000)],
            sampling: Some(perf::SamplingTally::default()),
            ..perf::OffCpuTrace::default()
        };
        let est = Estimator::new(&trace, WINDOW);
        let (a, b) = (&trace.episodes[0], &trace.episodes[1]);
        assert_eq!(est.blocked(a, 100), 2_500);
        assert_eq!(est.blocked(b, 300), 7_500);
        assert_eq!(est.count(a), 10);
        // k(k-1)·t² with t = 2,500 / 10 ns.
        assert!((est.variance(a, 100) - 90.0 * 250.0 * 250.0).abs() < 1e-6);
    }

    #[test]
    fn a_thread_without_a_summed_life_keeps_the_weights_alone() {
        let trace = perf::OffCpuTrace {
            episodes: vec![episode(8, 0, 100, 4)],
            sampling: Some(perf::SamplingTally::default()),
            ..perf::OffCpuTrace::default()
        };
        let est = Estimator::new(&trace, WINDOW);
        assert_eq!(est.blocked(&trace.episodes[0], 100), 400);
    }
}
