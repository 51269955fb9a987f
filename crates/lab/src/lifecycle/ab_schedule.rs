//! The order of an A/B experiment: every (N, repetition) is a pair of trials, one per side, run
//! back to back, and each pair's order (AB or BA) is drawn at random on its own — so a drift in
//! the machine (warming up, a background job ramping) lands on A and B alike in expectation, no
//! fixed pattern can line up with a periodic disturbance, and a slowdown that spans the boundary
//! between two pairs hits the same side of both (AB|BA) as often as opposite sides (AB|AB).
//!
//! Why not ABBA blocks (the second pair of a block the reverse of the first)? They balance the
//! order exactly, but every block then has a same-side boundary (A B|B A): on a 2-vCPU KVM guest
//! adjacent trials share short slowdowns, which made the changes of the two pairs of a block
//! correlate (+0.05 to +0.14, against −0.19 to −0.22 across an opposite-side boundary; 1 320
//! pairs), so intervals that treat pairs as independent covered the true change in 90% of
//! comparisons instead of 95%. Random orders make those correlations cancel on average.
//!
//! Points are visited round-robin, as `run` does. The random choices come from SplitMix64 (Steele, Lea & Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014), seeded, so a seed repeats an order exactly;
//! eleven lines do not justify a dependency.
//!
//! Pure: no clock and no I/O here; the caller picks the seed.

use crate::analysis::comparison::Side;

/// One trial of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub side: Side,
    pub n: u32,
    /// Repetition index within the point (the same for both trials of a pair).
    pub index: u32,
}

/// The trials of `runs` pairs at each of `points`, in execution order.
pub(crate) fn schedule(points: &[u32], runs: u32, seed: u64) -> Vec<Slot> {
    let mut rng = SplitMix64(seed);
    let mut slots = Vec::with_capacity(points.len() * runs as usize * 2);
    for index in 0..runs {
        for &n in points {
            let (first, second) = if rng.next() >> 63 == 0 {
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
pub(crate) fn letters(slots: &[Slot]) -> String {
    slots
        .chunks(2)
        .map(|pair| pair.iter().map(|s| s.side.to_string()).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The side that went first in each pair, in execution order: `ABBA` for `AB BA BA AB`. Half
/// the length of [`letters`], for the stored tag.
pub(crate) fn firsts(slots: &[Slot]) -> String {
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
    fn every_pair_has_both_sides_in_a_random_order() {
        let slots = schedule(&[1, 2], 500, 42);
        assert_eq!(slots.len(), 2000);
        for pair in slots.chunks(2) {
            assert_ne!(pair[0].side, pair[1].side);
            assert_eq!((pair[0].n, pair[0].index), (pair[1].n, pair[1].index));
        }
        let firsts: Vec<Side> = slots.chunks(2).map(|p| p[0].side).collect();
        // Each side goes first about half the time (500 ± 3σ = ±47 of 1000) ...
        let a_first = firsts.iter().filter(|s| **s == Side::A).count();
        assert!(a_first.abs_diff(500) < 48, "{a_first}");
        // ... and the order of one pair says nothing about the next: same-side boundaries
        // (the second trial of a pair and the first of the next on one side) about half.
        let same = slots
            .chunks(2)
            .zip(slots.chunks(2).skip(1))
            .filter(|(p, q)| p[1].side == q[0].side)
            .count();
        assert!(same.abs_diff(500) < 48, "{same} of 999");
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
        assert!(["AB AB", "AB BA", "BA AB", "BA BA"].contains(&letters(&two).as_str()));
        assert_eq!(
            firsts(&two),
            letters(&two)
                .split(' ')
                .map(|p| &p[..1])
                .collect::<String>()
        );
    }

    #[test]
    fn a_longer_schedule_of_one_seed_extends_the_shorter() {
        // `ab --max-runs` relies on this: the trials already run stay the start of the order.
        let short = schedule(&[1, 2, 4], 4, 99);
        let long = schedule(&[1, 2, 4], 10, 99);
        assert_eq!(long[..short.len()], short[..]);
        assert!(firsts(&long).starts_with(&firsts(&short)));
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // Reference values for seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
    }
}
