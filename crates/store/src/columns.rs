//! How model values map onto SQL columns: u64 bit patterns, JSON text, enum names.
//!
//! SQLite integers are i64. Counts and nanoseconds are u64 and may in principle exceed i64::MAX
//! (a saturated `Nanos`), so they are stored as their two's complement bit pattern: exact round
//! trip, and every realistic value (below 2^63) reads the same in plain SQL.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use model::record::{Mode, Pin};

/// A u64 as the i64 with the same bits.
pub(crate) fn u64_to_sql(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// The inverse of [`u64_to_sql`].
pub(crate) fn u64_from_sql(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

pub(crate) fn to_json<T: Serialize + ?Sized>(
    what: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// Decodes a JSON column of run `id`; `corrupt` builds the error naming the database.
pub(crate) fn from_json<T: DeserializeOwned>(
    text: &str,
    what: &'static str,
    corrupt: &dyn Fn(&'static str, String) -> StoreError,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e.to_string()))
}

/// Like [`from_json`] for a nullable column: NULL reads as `None`.
pub(crate) fn optional_json<T: DeserializeOwned>(
    text: Option<String>,
    what: &'static str,
    corrupt: &dyn Fn(&'static str, String) -> StoreError,
) -> Result<Option<T>, StoreError> {
    text.map(|t| from_json(&t, what, corrupt)).transpose()
}

pub(crate) fn mode_from_sql(text: &str) -> Option<Mode> {
    match text {
        "threads" => Some(Mode::Threads),
        "processes" => Some(Mode::Processes),
        _ => None,
    }
}

/// The value for version 1's `pin` column, whose CHECK knows only `auto`, `core` and `none`:
/// the default strategy is `auto`, any other pinning `core` (`pin_placement` has the real one).
pub(crate) fn legacy_pin_name(pin: &Pin) -> &'static str {
    match pin {
        Pin::Cores => "auto",
        Pin::None => "none",
        Pin::Compact | Pin::SpreadNodes | Pin::Cpus(_) => "core",
    }
}

pub(crate) fn pin_from_sql(text: &str) -> Option<Pin> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn u64_round_trips_through_sql_integers(v: u64) {
            prop_assert_eq!(u64_from_sql(u64_to_sql(v)), v);
        }
    }

    #[test]
    fn small_values_read_the_same_in_sql() {
        assert_eq!(u64_to_sql(42), 42);
        assert_eq!(u64_to_sql(u64::MAX), -1);
    }

    #[test]
    fn enum_names_match_display() {
        for mode in [Mode::Threads, Mode::Processes] {
            assert_eq!(mode_from_sql(&mode.to_string()), Some(mode));
        }
        for pin in [
            Pin::Cores,
            Pin::Compact,
            Pin::SpreadNodes,
            Pin::None,
            Pin::Cpus(vec![0, 2, 4, 5, 6, 7, 1]),
        ] {
            assert_eq!(pin_from_sql(&pin.to_string()), Some(pin));
        }
        assert_eq!(
            Pin::Cpus(vec![0, 2, 4, 5, 6, 7, 1]).to_string(),
            "0,2,4-7,1"
        );
        // Runs stored before issue 16.
        assert_eq!(pin_from_sql("auto"), Some(Pin::Cores));
        assert_eq!(pin_from_sql("core"), Some(Pin::Cores));
        assert_eq!(pin_from_sql("0,0"), None);
        assert_eq!(pin_from_sql("cores,"), None);
        assert_eq!(mode_from_sql("Threads"), None);
    }
}
