//! The ring-reading engine the lock tracer and the off-CPU tracer share: a [`Stream`] (one ring
//! buffer and what its records are), the loop that empties the streams ([`read_streams`]: a
//! bounded number of records per stream and drain, loss records counted, every other record
//! handed to the tracer's decoder), and the user call chains first seen since the last drain
//! ([`FreshChains`]), which a command's processes must have named while they live.
//!
//! What stays each tracer's own: decoding its tracepoints' fields, and pairing what was decoded
//! (lock waits: an enter with its exit; scheduler records: each thread's timeline), fed in
//! time order through [`crate::trace::pairing`].

use std::collections::HashSet;

use perf_event::Sampler;

use crate::trace::ring::lost_records;
use crate::trace::sample::ChainTable;

/// One ring buffer, and what its records are (`K`: the tracer's kind of stream).
pub(crate) struct Stream<K> {
    pub(crate) kind: K,
    pub(crate) sampler: Sampler,
}

impl<K: std::fmt::Debug> std::fmt::Debug for Stream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("kind", &self.kind).finish()
    }
}

impl<K> Stream<K> {
    /// Stops the ring's event: nothing more is written to it.
    pub(crate) fn disable(&mut self) {
        let _ = self.sampler.as_counter_mut().disable();
    }
}

/// One record read from a stream, as [`read_streams`] hands it over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawRecord<'a> {
    /// `PERF_RECORD_*`.
    pub(crate) ty: u32,
    /// The header's `misc` bits.
    pub(crate) misc: u16,
    /// The record's body, after its header.
    pub(crate) body: &'a [u8],
}

/// Reads up to `budget` records from each stream in turn, handing every one to `take` with its
/// stream's kind except the kernel's loss records, whose counts it returns summed. With a
/// budget, a drain ends however fast the traced tasks write: what does not fit waits for the
/// next drain, or is dropped by the kernel and counted as lost then.
pub(crate) fn read_streams<K: Copy>(
    streams: &mut [Stream<K>],
    budget: usize,
    mut take: impl FnMut(K, RawRecord<'_>),
) -> u64 {
    let mut lost = 0;
    for stream in streams {
        let kind = stream.kind;
        for _ in 0..budget {
            let Some(record) = stream.sampler.next_record() else {
                break;
            };
            let (ty, misc) = (record.ty(), record.misc());
            let body = record.to_contiguous();
            match lost_records(ty, &body) {
                0 => take(
                    kind,
                    RawRecord {
                        ty,
                        misc,
                        body: &body,
                    },
                ),
                n => lost += n,
            }
        }
    }
    lost
}

/// The user call chains seen, per process, and those first seen since they were last taken.
#[derive(Debug, Default)]
pub(crate) struct FreshChains {
    seen: HashSet<(u32, u32)>,
    fresh: Vec<(u32, u32)>,
}

impl FreshChains {
    /// Notes that process `pid` used user chain `chain` (an index into the tracer's
    /// [`ChainTable`]).
    pub(crate) fn note(&mut self, pid: u32, chain: u32) {
        if self.seen.insert((pid, chain)) {
            self.fresh.push((pid, chain));
        }
    }

    /// The chains first seen since the last call, as `(pid, addresses)`.
    pub(crate) fn take(&mut self, chains: &ChainTable) -> Vec<(u32, Vec<u64>)> {
        std::mem::take(&mut self.fresh)
            .into_iter()
            .filter_map(|(pid, i)| Some((pid, chains.get(i)?.to_vec())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_fresh_once_per_process() {
        let mut table = ChainTable::default();
        let a = table.intern([0x10, 0x20].into_iter());
        let b = table.intern([0x30].into_iter());
        let mut fresh = FreshChains::default();
        fresh.note(1, a);
        fresh.note(1, a);
        fresh.note(2, a);
        assert_eq!(
            fresh.take(&table),
            [(1, vec![0x10, 0x20]), (2, vec![0x10, 0x20])]
        );
        fresh.note(1, a);
        fresh.note(1, b);
        assert_eq!(fresh.take(&table), [(1, vec![0x30])]);
        assert!(fresh.take(&table).is_empty());
    }
}
