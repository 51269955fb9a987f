//! The pairing engine's front, shared by the lock tracer and the off-CPU tracer: records read
//! from per-CPU ring buffers arrive in order per CPU but not across CPUs, so each drain holds
//! back the newest ones and releases, in time order, only those older than the drain minus
//! [`HOLD_BACK_NS`] — by then every CPU has committed what it stamped earlier.
//!
//! Each tracer feeds what is released into its own pairing (lock waits: enter with exit;
//! scheduler records: switch-out with wake-up and switch-in).

/// Records newer than this (relative to the drain) wait for the next drain, so that a record
/// another CPU has stamped but not yet committed can still be merged in order.
pub(crate) const HOLD_BACK_NS: u64 = 2_000_000;

/// A record with the CLOCK_MONOTONIC time the kernel stamped on it.
pub(crate) trait Stamped {
    /// The record's time, in ns.
    fn time(&self) -> u64;
}

/// Records read but not yet released to the pairing.
#[derive(Debug)]
pub(crate) struct HeldBack<E> {
    pending: Vec<E>,
}

impl<E> Default for HeldBack<E> {
    fn default() -> Self {
        HeldBack {
            pending: Vec::new(),
        }
    }
}

impl<E: Stamped> HeldBack<E> {
    /// Keeps `record` until a drain releases it.
    pub(crate) fn push(&mut self, record: E) {
        self.pending.push(record);
    }

    /// The records held now, in the order they were read.
    pub(crate) fn held(&self) -> &[E] {
        &self.pending
    }

    /// Releases, oldest first, every record stamped before `now - HOLD_BACK_NS` (a drain).
    pub(crate) fn release_settled(&mut self, now: u64, feed: impl FnMut(&E)) {
        self.release_before(now.saturating_sub(HOLD_BACK_NS), feed);
    }

    /// Releases, oldest first, every record stamped before `cutoff` (`u64::MAX`: all, at the
    /// end of a trace).
    pub(crate) fn release_before(&mut self, cutoff: u64, mut feed: impl FnMut(&E)) {
        self.pending.sort_by_key(Stamped::time);
        let ready = self.pending.partition_point(|e| e.time() < cutoff);
        for e in self.pending.drain(..ready) {
            feed(&e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Stamped for (u64, char) {
        fn time(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn records_from_several_cpus_are_released_in_time_order_once_settled() {
        let mut held = HeldBack::default();
        // CPU 0's records, then CPU 1's older ones: read out of order across CPUs.
        for r in [(10, 'a'), (30, 'c'), (20, 'b'), (2_000_025, 'd')] {
            held.push(r);
        }
        let mut out = Vec::new();
        held.release_settled(2_000_021, |e| out.push(e.1));
        assert_eq!(out, ['a', 'b']);
        assert_eq!(held.held().len(), 2, "30 and 2,000,025 are too new");
        held.release_before(u64::MAX, |e| out.push(e.1));
        assert_eq!(out, ['a', 'b', 'c', 'd']);
        assert!(held.held().is_empty());
    }
}
