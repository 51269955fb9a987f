//! Which run of a comparison a result is about: A, the baseline, or B, the candidate. Its own
//! module so that the comparison's results ([`super::curve`]) and its warnings
//! ([`super::warning`]) both name a side without importing each other.

use std::fmt;

use serde::Serialize;

/// Which run of the pair: A is the baseline, B the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The baseline run.
    A,
    /// The candidate run.
    B,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}
