//! Seeded byte mutations for the parsers' robustness tests (test-only; CI's fuzzing).
//!
//! Every case has its own generator seeded from (seed, case), so a failing case is named by
//! its number and reproduces alone, on any machine (ChaCha8 is portable). A case applies one
//! to four edits: bit flips, random bytes, "interesting" integers (0, all ones, 2^40, the
//! input's length…) written over 1, 2, 4 or 8 bytes in either byte order, truncation, and
//! chunks copied or inserted elsewhere. Half the edits land in the `hot` ranges the caller
//! names (headers, tables of sizes), where a random position rarely falls.

use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Integers that break size arithmetic: zero, one, off-by-one around widths, huge.
const INTERESTING: [u64; 16] = [
    0,
    1,
    7,
    8,
    0x7f,
    0xff,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0xffff_ffff,
    1 << 32,
    1 << 40,
    (1 << 63) - 1,
    1 << 63,
    u64::MAX - 7,
    u64::MAX,
];

/// The mutated inputs of one seeded campaign.
#[derive(Debug, Clone, Copy)]
pub struct Mutator {
    seed: u64,
}

impl Mutator {
    /// The mutator of run `seed`: every case is seeded from (seed, case).
    pub fn new(seed: u64) -> Mutator {
        Mutator { seed }
    }

    /// Case `case`'s mutated copy of `input`.
    pub fn mutate(&self, case: u64, input: &[u8], hot: &[Range<usize>]) -> Vec<u8> {
        let mut rng =
            ChaCha8Rng::seed_from_u64(self.seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut data = input.to_vec();
        for _ in 0..rng.random_range(1..=4) {
            if data.is_empty() {
                break;
            }
            let at = position(&mut rng, data.len(), hot);
            match rng.random_range(0..10) {
                0 | 1 => data[at] ^= 1 << rng.random_range(0..8),
                2 => data[at] = rng.random(),
                3..=6 => {
                    let width = [1, 2, 4, 8][rng.random_range(0..4)];
                    let value = match rng.random_range(0..4) {
                        0 => input.len() as u64 + rng.random_range(0..16),
                        1 => rng.random(),
                        _ => INTERESTING[rng.random_range(0..INTERESTING.len())],
                    };
                    let bytes = if rng.random() {
                        value.to_le_bytes()
                    } else {
                        value.to_be_bytes()
                    };
                    let end = (at + width).min(data.len());
                    let skip = if rng.random::<bool>() { 0 } else { 8 - width };
                    data[at..end].copy_from_slice(&bytes[skip..skip + end - at]);
                }
                7 => data.truncate(at),
                8 => {
                    let from = rng.random_range(0..data.len());
                    let len = rng
                        .random_range(1..=64)
                        .min(data.len() - from)
                        .min(data.len() - at);
                    data.copy_within(from..from + len, at);
                }
                _ => {
                    let from = rng.random_range(0..data.len());
                    let len = rng.random_range(1..=64).min(data.len() - from);
                    let chunk = data[from..from + len].to_vec();
                    data.splice(at..at, chunk);
                }
            }
        }
        data
    }
}

/// A position in `0..len`: in one of the `hot` ranges half the time.
fn position(rng: &mut ChaCha8Rng, len: usize, hot: &[Range<usize>]) -> usize {
    let hot: Vec<&Range<usize>> = hot
        .iter()
        .filter(|r| r.start < len && !r.is_empty())
        .collect();
    if !hot.is_empty() && rng.random() {
        let r = hot[rng.random_range(0..hot.len())];
        return rng.random_range(r.start..r.end.min(len));
    }
    rng.random_range(0..len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_mutates_the_same_way_every_time_and_cases_differ() {
        let input: Vec<u8> = (0..=255).collect();
        let m = Mutator::new(42);
        assert_eq!(m.mutate(7, &input, &[]), m.mutate(7, &input, &[]));
        let distinct: std::collections::HashSet<Vec<u8>> = (0..100)
            .map(|c| m.mutate(c, &input, &[0..8, 200..256]))
            .collect();
        assert!(distinct.len() > 90, "{}", distinct.len());
        assert!(distinct.iter().all(|d| *d != input));
    }
}
