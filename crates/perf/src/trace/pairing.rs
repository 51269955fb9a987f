//! The pairing engine, shared by the lock tracer and the off-CPU tracer: what turns records read
//! from the rings ([`crate::trace::stream`]) into episodes. Records from per-CPU ring buffers
//! arrive in order per CPU but not across CPUs, so each drain holds back the newest ones and
//! releases, in time order, only those older than the drain minus [`HOLD_BACK_NS`] — by then
//! every CPU has committed what it stamped earlier — into the tracer's [`Pairing`], its
//! grammar of records: lock waits pair begin with end per (thread, lock) and a futex entry
//! with the thread's exit (`locks::events::Pairing`); scheduler records pair a switch-out with
//! its wake-up and switch-in, per thread, through its life (`offcpu::timeline::Timeline`).
//!
//! The grammars stay each tracer's own (they share no state machine); the order, the cut-off
//! and the end of a trace are the engine's, once.

/// Records newer than this (relative to the drain) wait for the next drain, so that a record
/// another CPU has stamped but not yet committed can still be merged in order.
pub(crate) const HOLD_BACK_NS: u64 = 2_000_000;

/// A record with the CLOCK_MONOTONIC time the kernel stamped on it.
pub(crate) trait Stamped {
    /// The record's time, in ns.
    fn time(&self) -> u64;
}

/// A tracer's grammar: what it makes of its records, fed in time order.
pub(crate) trait Pairing: Default {
    /// The record it pairs.
    type Record: Stamped;

    /// Takes the next record in time order.
    fn feed(&mut self, record: &Self::Record);
}

/// Records read but not yet released, and the pairing they are released into.
#[derive(Debug)]
pub(crate) struct PairingEngine<P: Pairing> {
    held: HeldBack<P::Record>,
    /// What the released records made so far.
    pub(crate) pairing: P,
}

impl<P: Pairing> Default for PairingEngine<P> {
    fn default() -> Self {
        PairingEngine {
            held: HeldBack::default(),
            pairing: P::default(),
        }
    }
}

impl<P: Pairing> PairingEngine<P> {
    /// Keeps `record` until a drain releases it.
    pub(crate) fn push(&mut self, record: P::Record) {
        self.held.push(record);
    }

    /// The records held now, in the order they were read.
    pub(crate) fn held(&self) -> &[P::Record] {
        self.held.held()
    }

    /// A drain at `now`: pairs, in time order, every record stamped before `now -
    /// HOLD_BACK_NS`.
    pub(crate) fn settle(&mut self, now: u64) {
        let pairing = &mut self.pairing;
        self.held.release_settled(now, |r| pairing.feed(r));
    }

    /// The end of a trace at `until` (`u64::MAX`: everything read): pairs every record stamped
    /// before it and hands over the pairing, the engine left empty.
    pub(crate) fn finish(&mut self, until: u64) -> P {
        let pairing = &mut self.pairing;
        self.held.release_before(until, |r| pairing.feed(r));
        std::mem::take(&mut self.pairing)
    }
}

/// Records read but not yet released to the pairing.
#[derive(Debug)]
struct HeldBack<E> {
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
    fn push(&mut self, record: E) {
        self.pending.push(record);
    }

    /// The records held now, in the order they were read.
    fn held(&self) -> &[E] {
        &self.pending
    }

    /// Releases, oldest first, every record stamped before `now - HOLD_BACK_NS` (a drain).
    fn release_settled(&mut self, now: u64, feed: impl FnMut(&E)) {
        self.release_before(now.saturating_sub(HOLD_BACK_NS), feed);
    }

    /// Releases, oldest first, every record stamped before `cutoff` (`u64::MAX`: all, at the
    /// end of a trace).
    fn release_before(&mut self, cutoff: u64, mut feed: impl FnMut(&E)) {
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

    /// Pairs each 'b'egin with the next 'e'nd, in the order fed.
    #[derive(Debug, Default)]
    struct Spans {
        open: Option<u64>,
        spans: Vec<(u64, u64)>,
    }

    impl Pairing for Spans {
        type Record = (u64, char);
        fn feed(&mut self, r: &(u64, char)) {
            match r.1 {
                'b' => self.open = Some(r.0),
                _ => self.spans.extend(self.open.take().map(|b| (b, r.0))),
            }
        }
    }

    #[test]
    fn the_engine_pairs_what_another_cpu_read_late_in_time_order() {
        let mut engine = PairingEngine::<Spans>::default();
        // The end (CPU 1) is read before the begin (CPU 0) that came first.
        engine.push((50, 'e'));
        engine.push((40, 'b'));
        engine.settle(1_000_000);
        assert!(
            engine.pairing.spans.is_empty(),
            "both are inside the hold-back"
        );
        engine.settle(3_000_000);
        assert_eq!(engine.pairing.spans, [(40, 50)]);
        engine.push((3_500_000, 'b'));
        engine.push((3_600_000, 'e'));
        let spans = engine.finish(3_550_000);
        assert_eq!(
            spans.spans,
            [(40, 50)],
            "the end after the cut-off is not paired"
        );
        assert!(engine.pairing.spans.is_empty(), "handed over");
    }
}
