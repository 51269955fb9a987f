//! [`HwEvent`], the generic hardware events scalelab counts, and [`CounterReading`], one read
//! of a counter with the enabled/running times that reveal multiplexing.

use std::fmt;

use perf_event::events::Hardware;

/// A generic hardware event, as `perf stat` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HwEvent {
    /// CPU cycles (`cycles`); frequency scaling makes this differ from wall time.
    Cycles,
    /// Instructions retired (`instructions`).
    Instructions,
    /// Last-level cache misses (`cache-misses`).
    CacheMisses,
    /// Mispredicted branches (`branch-misses`).
    BranchMisses,
}

impl HwEvent {
    /// Every event, in the order tables show them.
    pub const ALL: [HwEvent; 4] = [
        HwEvent::Cycles,
        HwEvent::Instructions,
        HwEvent::CacheMisses,
        HwEvent::BranchMisses,
    ];

    /// The name `perf stat` uses: `"cycles"`, `"instructions"`, `"cache-misses"`,
    /// `"branch-misses"`.
    pub fn name(self) -> &'static str {
        match self {
            HwEvent::Cycles => "cycles",
            HwEvent::Instructions => "instructions",
            HwEvent::CacheMisses => "cache-misses",
            HwEvent::BranchMisses => "branch-misses",
        }
    }

    /// Parses a name as [`name`](Self::name) prints it.
    #[cfg(test)]
    pub(crate) fn from_name(name: &str) -> Option<HwEvent> {
        HwEvent::ALL.into_iter().find(|event| event.name() == name)
    }

    pub(crate) fn hardware(self) -> Hardware {
        match self {
            HwEvent::Cycles => Hardware::CPU_CYCLES,
            HwEvent::Instructions => Hardware::INSTRUCTIONS,
            HwEvent::CacheMisses => Hardware::CACHE_MISSES,
            HwEvent::BranchMisses => Hardware::BRANCH_MISSES,
        }
    }
}

impl fmt::Display for HwEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One read of a counter: its raw value and, in nanoseconds, how long it was enabled and how
/// long it actually ran on the PMU (less than enabled when the kernel multiplexed it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterReading {
    /// The raw count.
    pub value: u64,
    /// Nanoseconds the counter was enabled (summed over the inherited tasks).
    pub time_enabled: u64,
    /// Nanoseconds the counter was actually scheduled on the PMU.
    pub time_running: u64,
}

impl CounterReading {
    /// True when the counter ran for less time than it was enabled, so the value is an
    /// extrapolation ([`scaled`](Self::scaled)) rather than a full count.
    pub fn multiplexed(&self) -> bool {
        self.time_running < self.time_enabled
    }

    /// The value extrapolated to the whole enabled time (`value × enabled / running`), as
    /// `perf stat` does; the raw value when not multiplexed, and 0 when the counter never ran.
    pub fn scaled(&self) -> f64 {
        if self.time_running == 0 {
            return 0.0;
        }
        if !self.multiplexed() {
            return self.value as f64;
        }
        self.value as f64 * (self.time_enabled as f64 / self.time_running as f64)
    }

    /// The reading for the interval since `earlier` (each field subtracts, saturating at 0), so
    /// that [`scaled`](Self::scaled) scales by that interval's own multiplexing.
    pub fn saturating_sub(&self, earlier: &CounterReading) -> CounterReading {
        CounterReading {
            value: self.value.saturating_sub(earlier.value),
            time_enabled: self.time_enabled.saturating_sub(earlier.time_enabled),
            time_running: self.time_running.saturating_sub(earlier.time_running),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for event in HwEvent::ALL {
            assert_eq!(HwEvent::from_name(event.name()), Some(event));
            assert_eq!(event.to_string(), event.name());
        }
        assert_eq!(HwEvent::from_name("bogus"), None);
    }

    #[test]
    fn scaling_follows_the_running_fraction() {
        let full = CounterReading {
            value: 100,
            time_enabled: 50,
            time_running: 50,
        };
        assert!(!full.multiplexed());
        assert_eq!(full.scaled(), 100.0);
        let half = CounterReading {
            value: 100,
            time_enabled: 50,
            time_running: 25,
        };
        assert!(half.multiplexed());
        assert_eq!(half.scaled(), 200.0);
        let never = CounterReading {
            value: 0,
            time_enabled: 50,
            time_running: 0,
        };
        assert_eq!(never.scaled(), 0.0);
    }

    #[test]
    fn interval_readings_subtract_each_field() {
        let a = CounterReading {
            value: 10,
            time_enabled: 100,
            time_running: 100,
        };
        let b = CounterReading {
            value: 70,
            time_enabled: 300,
            time_running: 200,
        };
        let d = b.saturating_sub(&a);
        assert_eq!(
            d,
            CounterReading {
                value: 60,
                time_enabled: 200,
                time_running: 100
            }
        );
        assert_eq!(d.scaled(), 120.0);
        assert_eq!(a.saturating_sub(&b), CounterReading::default());
    }
}
