//! The order of an A/B experiment: every (N, repetition) is a pair of trials, one per side, run
//! back to back, and each pair's order (AB or BA) is drawn at random on its own — so a drift in
//! the machine (warming up, a background job ramping) lands on A and B alike in expectation, no
//! fixed pattern can line up with a periodic disturbance, and a slowdown that spans the boundary
//! between two pairs hits the same side of both (AB|BA) as often as opposite sides (AB|AB).
//!
//! Not ABBA blocks (the second pair of a block the reverse of the first): they balance the
//! order exactly, but every block then has a same-side boundary (A B|B A), and adjacent trials
//! share short slowdowns; random orders make those correlations cancel on average. The
//! evidence: docs/notes/ab-order.md.
//!
//! More than two sides (`bisect` measures a commit between the good and the bad builds) go the
//! same way in groups: every (N, repetition) is one trial of each side, back to back, in an
//! order drawn at random (Fisher-Yates) for each group on its own. Two sides keep the one draw
//! per pair they always had, so a stored `ab_seed` still repeats its order.
//!
//! Points are visited round-robin, as `run` does. The random choices come from SplitMix64
//! (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), seeded,
//! so a seed repeats an order exactly; eleven lines do not justify a dependency.
//!
//! Pure: no clock and no I/O here; the caller picks the seed.

/// The letters of an A/B experiment's two sides.
pub(crate) const AB_LETTERS: [char; 2] = ['A', 'B'];

/// One trial of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Which side (0 = A, 1 = B, … in the order the plans were given).
    pub side: usize,
    pub n: u32,
    /// Repetition index within the point (the same for both trials of a pair).
    pub index: u32,
}

/// The trials of `runs` pairs at each of `points`, in execution order.
#[cfg(test)]
pub(crate) fn schedule(points: &[u32], runs: u32, seed: u64) -> Vec<Slot> {
    groups(points, runs, seed, 2)
}

/// The trials of `runs` groups of `sides` trials (one per side) at each of `points`, in
/// execution order; each group's order drawn on its own.
pub(crate) fn groups(points: &[u32], runs: u32, seed: u64, sides: usize) -> Vec<Slot> {
    let mut rng = SplitMix64(seed);
    let mut slots = Vec::with_capacity(points.len() * runs as usize * sides);
    for index in 0..runs {
        for &n in points {
            for side in permutation(&mut rng, sides) {
                slots.push(Slot { side, n, index });
            }
        }
    }
    slots
}

/// A random order of `0..k`: one draw for two sides (the order `ab` has always drawn), a
/// Fisher-Yates shuffle for more (the modulo's bias is below 2⁻⁶⁰ for a handful of sides).
fn permutation(rng: &mut SplitMix64, k: usize) -> Vec<usize> {
    if k == 2 {
        return if rng.next() >> 63 == 0 {
            vec![0, 1]
        } else {
            vec![1, 0]
        };
    }
    let mut order: Vec<usize> = (0..k).collect();
    for i in (1..k).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The sides in execution order as letters, groups separated by spaces: `AB BA BA AB`.
pub(crate) fn letters(slots: &[Slot], names: &[char]) -> String {
    slots
        .chunks(names.len().max(1))
        .map(|group| group.iter().map(|s| names[s.side]).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The side that went first in each pair, in execution order: `ABBA` for `AB BA BA AB`. Half
/// the length of [`letters`], for the stored tag.
#[cfg(test)]
pub(crate) fn firsts(slots: &[Slot]) -> String {
    slots
        .chunks(2)
        .map(|pair| AB_LETTERS[pair[0].side])
        .collect()
}

/// The stored `ab_order` tag: [`firsts`] for two sides (the second follows), every letter of
/// every group for more.
pub(crate) fn order_tag(slots: &[Slot], names: &[char]) -> String {
    if names.len() == 2 {
        slots.chunks(2).map(|pair| names[pair[0].side]).collect()
    } else {
        slots.iter().map(|s| names[s.side]).collect()
    }
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
        let firsts: Vec<usize> = slots.chunks(2).map(|p| p[0].side).collect();
        // Each side goes first about half the time (500 ± 3σ = ±47 of 1000) ...
        let a_first = firsts.iter().filter(|s| **s == 0).count();
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
            .map(|seed| letters(&schedule(&[1], 20, seed), &AB_LETTERS))
            .collect();
        assert!(orders.len() > 15, "{orders:?}");
        let two = schedule(&[1], 2, 7);
        let text = letters(&two, &AB_LETTERS);
        assert_eq!(text.len(), 5);
        assert!(["AB AB", "AB BA", "BA AB", "BA BA"].contains(&text.as_str()));
        assert_eq!(order_tag(&two, &AB_LETTERS), firsts(&two));
        assert_eq!(
            firsts(&two),
            text.split(' ').map(|p| &p[..1]).collect::<String>()
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
    fn groups_of_three_hold_each_side_once_in_every_order_about_as_often() {
        let slots = groups(&[1], 600, 5, 3);
        let mut seen = std::collections::BTreeMap::new();
        for group in slots.chunks(3) {
            let mut sides: Vec<usize> = group.iter().map(|s| s.side).collect();
            *seen
                .entry(letters(group, &['G', 'C', 'B']))
                .or_insert(0usize) += 1;
            sides.sort_unstable();
            assert_eq!(sides, [0, 1, 2]);
            assert!(group.iter().all(|s| s.index == group[0].index));
        }
        // Six orders, 100 each expected (± 3σ ≈ ±28).
        assert_eq!(seen.len(), 6, "{seen:?}");
        assert!(seen.values().all(|k| k.abs_diff(100) < 30), "{seen:?}");
        // Two sides are still drawn as before: a stored seed repeats its order.
        assert_eq!(groups(&[1, 2], 9, 3, 2), schedule(&[1, 2], 9, 3));
        let three = groups(&[1], 2, 3, 3);
        assert_eq!(order_tag(&three, &['G', 'C', 'B']).len(), 6);
        // A longer schedule of one seed extends the shorter, as with two sides.
        assert_eq!(groups(&[1], 9, 3, 3)[..6], three[..]);
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // Reference values for seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64(1_234_567);
        assert_eq!(r.next(), 6_457_827_717_110_365_317);
        assert_eq!(r.next(), 3_203_168_211_198_807_973);
    }
}
