//! [`DrainPace`]: keeps an in-kernel tracer's sampling rate within what its drain keeps up with.
//!
//! A drain reads a quarter of the ring at most ([`DrainPace::drain_budget`]); one that read that
//! much halves the rate, and a run of drains that found the ring nearly empty climbs it back
//! towards the rate set at open. Sampled records still stand for the events they were picked
//! from, so the sums and shares stay unbiased: fewer chains, never lost ones. Pure: the tracers
//! write its answers to their `rate_target` map. Why: `docs/notes/perf-tracers.md`.

/// A drain that found more of the ring filled than this is behind: the rate halves.
const BEHIND: f64 = 0.25;
/// A drain that found less than this is comfortable.
const CALM: f64 = 0.05;
/// Comfortable drains in a row (at 10 ms, half a second) before the rate doubles back.
const CALM_DRAINS: u32 = 50;

/// The rate a tracer samples at, and how low its drains had it go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DrainPace {
    ring_bytes: u64,
    /// Sampled records a second per CPU set at open: never exceeded.
    full: u64,
    /// The rate in force now.
    now: u64,
    calm: u32,
    /// The lowest rate it went to, when it was lowered.
    lowest: Option<u64>,
}

impl DrainPace {
    /// A tracer with a ring of `ring_bytes` sampling `per_s` records a second per CPU.
    pub(crate) fn new(ring_bytes: u32, per_s: u64) -> DrainPace {
        DrainPace {
            ring_bytes: u64::from(ring_bytes).max(1),
            full: per_s.max(1),
            now: per_s.max(1),
            calm: 0,
            lowest: None,
        }
    }

    /// After a drain that read `bytes` of records: the rate to set now, if it changes.
    pub(crate) fn after_drain(&mut self, bytes: u64) -> Option<u64> {
        let filled = bytes as f64 / self.ring_bytes as f64;
        if filled >= BEHIND {
            self.calm = 0;
            let next = (self.now / 2).max(1);
            if next == self.now {
                return None;
            }
            self.now = next;
            self.lowest = Some(self.lowest.map_or(next, |l| l.min(next)));
            return Some(next);
        }
        if filled >= CALM || self.now >= self.full {
            self.calm = 0;
            return None;
        }
        self.calm += 1;
        if self.calm < CALM_DRAINS {
            return None;
        }
        self.calm = 0;
        self.now = (self.now * 2).min(self.full);
        Some(self.now)
    }

    /// The most bytes one drain reads: a quarter of the ring. A drain that stopped there is
    /// behind, and returns so that the rate is lowered at once (one that read on while records
    /// kept coming took 3 s in a 16-vCPU guest, and the ring filled meanwhile).
    pub(crate) fn drain_budget(&self) -> u64 {
        (self.ring_bytes as f64 * BEHIND) as u64
    }

    /// The lowest rate a second per CPU the drains lowered it to; `None` when it never was.
    pub(crate) fn lowest(&self) -> Option<u64> {
        self.lowest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_that_falls_behind_halves_the_rate_and_calm_ones_bring_it_back() {
        let ring = 32 << 20;
        let mut pace = DrainPace::new(ring, 62);
        assert_eq!(pace.after_drain(1 << 20), None, "3% filled: comfortable");
        assert_eq!(pace.lowest(), None);
        assert_eq!(pace.after_drain(16 << 20), Some(31), "half filled: behind");
        assert_eq!(pace.after_drain(9 << 20), Some(15));
        assert_eq!(pace.lowest(), Some(15));
        for _ in 0..CALM_DRAINS - 1 {
            assert_eq!(pace.after_drain(0), None);
        }
        assert_eq!(
            pace.after_drain(0),
            Some(30),
            "climbs back after calm drains"
        );
        for _ in 0..CALM_DRAINS {
            pace.after_drain(0);
        }
        assert_eq!(pace.now, 60);
        for _ in 0..CALM_DRAINS {
            pace.after_drain(0);
        }
        assert_eq!(pace.now, 62, "never past the rate set at open");
        assert_eq!(pace.lowest(), Some(15));
    }

    #[test]
    fn the_rate_never_goes_below_one() {
        let mut pace = DrainPace::new(8 << 20, 2);
        assert_eq!(pace.after_drain(8 << 20), Some(1));
        assert_eq!(pace.after_drain(8 << 20), None);
        assert_eq!(pace.lowest(), Some(1));
    }
}
