//! The order of an A/B experiment: every (N, repetition) is a pair of trials, one per side, and
//! the pairs of one N come in ABBA blocks — the first pair of a block in a random order, the
//! second in the opposite one — so each side goes first equally often and a drift in the
//! machine (warming up, a background job ramping) lands on A and B alike, while no fixed
//! pattern can line up with a periodic disturbance. Points are visited round-robin, as `run`
//! does. The random choices come from SplitMix64 (Steele, Lea & Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014), seeded, so a seed repeats an order exactly;
//! eleven lines do not justify a dependency.
//!
//! Pure: no clock and no I/O here; the caller picks the seed.

use lab::report::compare_view::Side;

/// One trial of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub side: Side,
    pub n: u32,
    /// Repetition index within the point (the same for both trials of a pair).
    pub index: u32,
}

/// The trials of `runs` pairs at each of `points`, in execution order.
pub fn schedule(points: &[u32], runs: u32, seed: u64) -> Vec<Slot> {
    let mut rng = SplitMix64(seed);
    let mut a_first = vec![false; points.len()];
    let mut slots = Vec::with_capacity(points.len() * runs as usize * 2);
    for index in 0..runs {
        for (p, &n) in points.iter().enumerate() {
            a_first[p] = if index % 2 == 0 {
                rng.next() >> 63 == 0
            } else {
                !a_first[p]
            };
            let (first, second) = if a_first[p] {
                (Side::A, Side::B)
            } else {
                (Side::B, Side::A)
            };
            slots.push(Slot {
                side: first,
                n,
                index,
            });
            slots.push(Slot {
                side: second,
                n,
                index,
            });
        }
    }
    slots
}

/// The sides in execution order as letters, pairs separated by spaces: `AB BA BA AB`.
pub fn letters(slots: &[Slot]) -> String {
    slots
        .chunks(2)
        .map(|pair| pair.iter().map(|s| s.side.to_string()).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The side that went first in each pair, in execution order: `ABBA` for `AB BA BA AB`. Half
/// the length of [`letters`], for the stored tag.
pub fn firsts(slots: &[Slot]) -> String {
    slots
        .chunks(2)
        .map(|pair| pair[0].side.to_string())
        .collect()
}

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_has_both_sides_and_blocks_alternate() {
        let slots = schedule(&[1, 2], 6, 42);
        assert_eq!(slots.len(), 24);
        for pair in slots.chunks(2) {
            assert_ne!(pair[0].side, pair[1].side);
            assert_eq!((pair[0].n, pair[0].index), (pair[1].n, pair[1].index));
        }
        for n in [1, 2] {
            let firsts: Vec<Side> = slots
                .chunks(2)
                .filter(|p| p[0].n == n)
                .map(|p| p[0].side)
                .collect();
            // Within each ABBA block the second pair is the first reversed.
            for block in firsts.chunks(2) {
                assert_ne!(block[0], block[1]);
            }
            assert_eq!(firsts.iter().filter(|s| **s == Side::A).count(), 3);
        }
        // Round-robin over the points, repetitions in order.
        let order: Vec<(u32, u32)> = slots.chunks(2).map(|p| (p[0].n, p[0].index)).collect();
        assert_eq!(order[..4], [(1, 0), (2, 0), (1, 1), (2, 1)]);
    }

    #[test]
    fn a_seed_repeats_an_order_and_seeds_differ() {
        assert_eq!(schedule(&[1], 20, 7), schedule(&[1], 20, 7));
        let orders: std::collections::BTreeSet<String> = (0..20)
            .map(|seed| letters(&schedule(&[1], 20, seed)))
            .collect();
        assert!(orders.len() > 15, "{orders:?}");
        let two = schedule(&[1], 2, 7);
        assert_eq!(letters(&two).len(), 5);
        assert!(["AB BA", "BA AB"].contains(&letters(&two).as_str()));
        assert_eq!(
            firsts(&two),
            letters(&two)
                .split(' ')
                .map(|p| &p[..1])
                .collect::<String>()
        );
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // Reference values for seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
    }
}
