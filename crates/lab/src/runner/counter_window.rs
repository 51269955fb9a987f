//! The hardware counts of one trial's window, from a reading of every counted event when the
//! window opens and one when it closes: deltas, scaled by enabled ÷ running time where the
//! PMU multiplexed them (`perf stat`'s estimate, flagged), or the reason there is no value.

use model::record::CounterValue;

/// The hardware events a trial counts, as one group where the PMU allows.
pub(crate) const COUNTED: [perf::HwEvent; 3] = [
    perf::HwEvent::Cycles,
    perf::HwEvent::Instructions,
    perf::HwEvent::CacheMisses,
];

/// One event's reading, or why it has none.
pub(crate) type CounterSnapshot = (perf::HwEvent, Result<perf::CounterReading, String>);

/// A reading of every counted event (empty without counters).
pub(crate) fn snapshot(counters: Option<&perf::InheritedCounters>) -> Vec<CounterSnapshot> {
    counters.map(|c| c.read()).unwrap_or_default()
}

/// The window's counts from its opening and closing readings; `None` counters (`--no-counters`)
/// store every event as disabled.
pub(crate) fn counter_values(
    start: &[CounterSnapshot],
    end: &[CounterSnapshot],
    counters: Option<&perf::InheritedCounters>,
) -> Vec<CounterValue> {
    match counters {
        None => disabled_counters(),
        Some(c) => counter_deltas(start, end, c.excludes_kernel()),
    }
}

/// What `--no-counters` stores: every counted event, each with the reason it has no value.
fn disabled_counters() -> Vec<CounterValue> {
    COUNTED
        .iter()
        .map(|e| CounterValue {
            event: e.name().into(),
            value: None,
            multiplexed: false,
            note: Some("counters disabled (--no-counters)".into()),
        })
        .collect()
}

/// The counts over the window, from two readings of each event: scaled by enabled ÷ running
/// time when the PMU multiplexed them (`perf stat`'s estimate, flagged `multiplexed`), `None`
/// with the reason when the event is unavailable or never got on the PMU.
fn counter_deltas(
    start: &[CounterSnapshot],
    end: &[CounterSnapshot],
    user_only: bool,
) -> Vec<CounterValue> {
    let kernel_note = user_only.then(|| "user space only: perf_event_paranoid forbids counting the kernel; set kernel.perf_event_paranoid <= 1 or run with CAP_PERFMON".to_string());
    start
        .iter()
        .zip(end)
        .map(|((event, a), (_, b))| match (a, b) {
            (Ok(a), Ok(b)) => {
                let value = b.value.saturating_sub(a.value);
                let enabled = b.time_enabled.saturating_sub(a.time_enabled);
                let running = b.time_running.saturating_sub(a.time_running);
                let multiplexed = running < enabled;
                let scaled = if multiplexed && running > 0 {
                    (value as f64 * enabled as f64 / running as f64) as u64
                } else {
                    value
                };
                CounterValue {
                    event: event.name().to_string(),
                    value: (running > 0 || value > 0).then_some(scaled),
                    multiplexed,
                    note: if running == 0 && enabled > 0 {
                        Some("never scheduled on the PMU (all counters busy)".into())
                    } else {
                        kernel_note.clone()
                    },
                }
            }
            (Err(reason), _) | (_, Err(reason)) => CounterValue {
                event: event.name().to_string(),
                value: None,
                multiplexed: false,
                note: Some(reason.clone()),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use perf::{CounterReading, HwEvent};

    use super::*;

    fn reading(value: u64, enabled: u64, running: u64) -> Result<CounterReading, String> {
        Ok(CounterReading {
            value,
            time_enabled: enabled,
            time_running: running,
        })
    }

    /// Readings as a PMU with room for every event gives them: running = enabled.
    #[test]
    fn counts_on_a_pmu_with_room_are_plain_deltas() {
        let start = [
            (HwEvent::Cycles, reading(1_000, 10, 10)),
            (HwEvent::Instructions, reading(500, 10, 10)),
        ];
        let end = [
            (HwEvent::Cycles, reading(3_001_000, 1_000_010, 1_000_010)),
            (
                HwEvent::Instructions,
                reading(6_000_500, 1_000_010, 1_000_010),
            ),
        ];
        let v = counter_deltas(&start, &end, false);
        assert_eq!(v[0].event, "cycles");
        assert_eq!(v[0].value, Some(3_000_000));
        assert_eq!(v[1].value, Some(6_000_000));
        assert!(v.iter().all(|c| !c.multiplexed && c.note.is_none()));
    }

    /// A multiplexed group ran 40% of the window: the counts are scaled by 2.5 and flagged,
    /// as `perf stat` scales them.
    #[test]
    fn multiplexed_counts_are_scaled_by_enabled_over_running_and_flagged() {
        let start = [(HwEvent::CacheMisses, reading(0, 0, 0))];
        let end = [(HwEvent::CacheMisses, reading(40_000, 1_000_000, 400_000))];
        let v = counter_deltas(&start, &end, false);
        assert_eq!(v[0].event, "cache-misses");
        assert_eq!(v[0].value, Some(100_000));
        assert!(v[0].multiplexed);
    }

    #[test]
    fn a_counter_never_on_the_pmu_has_no_value_and_says_why() {
        let start = [(HwEvent::Cycles, reading(0, 0, 0))];
        let end = [(HwEvent::Cycles, reading(0, 1_000_000, 0))];
        let v = counter_deltas(&start, &end, false);
        assert_eq!(v[0].value, None);
        assert!(v[0].note.as_deref().unwrap().contains("never scheduled"));
    }

    /// The reasons a VM without a PMU gives, and user-space-only counting, reach the record.
    #[test]
    fn unavailable_counters_carry_their_reason_and_user_only_counts_say_so() {
        let enoent = "cycles: perf_event_open: No such file or directory (ENOENT) — the PMU does not expose this event; common in VMs without a virtual PMU".to_string();
        let start = [
            (HwEvent::Cycles, Err(enoent.clone())),
            (HwEvent::Instructions, reading(0, 0, 0)),
        ];
        let end = [
            (HwEvent::Cycles, Err(enoent.clone())),
            (HwEvent::Instructions, reading(10, 5, 5)),
        ];
        let v = counter_deltas(&start, &end, true);
        assert_eq!(v[0].value, None);
        assert_eq!(v[0].note.as_deref(), Some(enoent.as_str()));
        assert_eq!(v[1].value, Some(10));
        assert!(
            v[1].note
                .as_deref()
                .unwrap()
                .contains("perf_event_paranoid")
        );
    }

    #[test]
    fn no_counters_lists_every_counted_event_as_disabled() {
        let v = counter_values(&[], &[], None);
        let names: Vec<&str> = v.iter().map(|c| c.event.as_str()).collect();
        assert_eq!(names, ["cycles", "instructions", "cache-misses"]);
        assert!(v.iter().all(|c| c.value.is_none()));
    }
}
