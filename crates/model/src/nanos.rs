//! [`Nanos`], the unit of every duration and timestamp in the data model (re-exported as
//! `record::Nanos`, where the records use it).

use serde::{Deserialize, Serialize};

/// Nanoseconds, the unit of every duration and timestamp in the data model.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
    pub fn from_duration(d: std::time::Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
    /// The duration in seconds, as a float (for rates and display).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// As a [`std::time::Duration`].
    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
}
