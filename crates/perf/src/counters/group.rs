//! [`InheritedGroup`]: hardware events opened as one perf event group on the calling process, with
//! `inherit`, so that the PMU schedules them together (their ratios stay exact under
//! multiplexing) and every thread and child created afterwards is counted.
//!
//! It opens as a whole or not at all: where one member cannot be counted, the caller
//! ([`crate::InheritedCounters`]) counts event by event. Its fds close on drop. How the kernel
//! reads an inherited group: `docs/notes/perf-tracers.md`.

use std::sync::Mutex;

use perf_event::{Builder, Counter, Group, ReadFormat};

use crate::counters::event::CounterReading;
use perf_read::error::PerfError;

/// One group of inherited counters; `Drop` closes the fds.
pub(crate) struct InheritedGroup {
    /// perf-event2 reads through `&mut Group`; uncontended (one sampler).
    group: Mutex<Group>,
    members: Vec<(&'static str, Counter)>,
}

impl std::fmt::Debug for InheritedGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|(n, _)| *n).collect();
        f.debug_struct("InheritedGroup")
            .field("members", &names)
            .finish()
    }
}

impl InheritedGroup {
    /// Opens `members` (name, a builder with its event set) as one group on the calling
    /// process, inherited, counting user space and (unless `exclude_kernel`) the kernel, and
    /// enables it. The error names the first member that failed.
    pub(crate) fn open(
        members: Vec<(&'static str, Builder<'_>)>,
        exclude_kernel: bool,
    ) -> Result<InheritedGroup, PerfError> {
        let mut leader = Group::builder();
        leader
            .observe_self()
            .any_cpu()
            .inherit(true)
            .exclude_kernel(exclude_kernel)
            .exclude_hv(true)
            .read_format(
                ReadFormat::GROUP
                    | ReadFormat::ID
                    | ReadFormat::TOTAL_TIME_ENABLED
                    | ReadFormat::TOTAL_TIME_RUNNING,
            )
            .enabled(false);
        let mut group = leader
            .build_group()
            .map_err(|e| PerfError::open("group leader (dummy)", &e))?;
        let mut counters = Vec::with_capacity(members.len());
        for (name, mut builder) in members {
            builder
                .observe_self()
                .any_cpu()
                .inherit(true)
                .exclude_kernel(exclude_kernel)
                .exclude_hv(true)
                .enabled(true);
            let counter = group.add(&builder).map_err(|e| PerfError::open(name, &e))?;
            counters.push((name, counter));
        }
        group
            .enable()
            .map_err(|e| PerfError::open("group leader (dummy)", &e))?;
        Ok(InheritedGroup {
            group: Mutex::new(group),
            members: counters,
        })
    }

    /// Every member's count so far, in the order opened, each with the group's enabled and
    /// running times (one schedule for all).
    pub(crate) fn read(&self) -> Result<Vec<CounterReading>, PerfError> {
        let mut group = self
            .group
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let data = group.read().map_err(|source| PerfError::Read {
            event: "group",
            source,
        })?;
        let time_enabled = data.time_enabled().map_or(0, |d| d.as_nanos() as u64);
        let time_running = data.time_running().map_or(0, |d| d.as_nanos() as u64);
        self.members
            .iter()
            .map(|(name, counter)| {
                let entry = data
                    .get(counter)
                    .ok_or(PerfError::NotScheduled { event: name })?;
                Ok(CounterReading {
                    value: entry.value(),
                    time_enabled,
                    time_running,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use perf_event::events::Software;

    use super::*;

    /// The group machinery with software events, which every kernel has: task-clock and
    /// page faults counted together over a new thread's work.
    #[test]
    fn an_inherited_group_counts_a_thread_created_after_it_opened() {
        let open = |exclude_kernel| {
            InheritedGroup::open(
                vec![
                    ("task-clock", Builder::new(Software::TASK_CLOCK)),
                    ("page-faults", Builder::new(Software::PAGE_FAULTS)),
                ],
                exclude_kernel,
            )
        };
        let group = match open(false).or_else(|_| open(true)) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skipped: perf_event_open refused a software group here: {e}");
                return;
            }
        };
        let before = group.read().unwrap();
        std::thread::spawn(|| {
            // Touch fresh pages for a while: CPU time and page faults.
            let mut pages: Vec<Vec<u8>> = Vec::new();
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_millis(50) {
                let mut p = vec![0u8; 1 << 20];
                p[4096] = 1;
                pages.push(std::hint::black_box(p));
            }
        })
        .join()
        .unwrap();
        let after = group.read().unwrap();
        assert_eq!(after.len(), 2);
        let clock = after[0].value - before[0].value;
        assert!(
            clock >= 20_000_000,
            "task-clock {clock} ns for 50 ms of work"
        );
        assert!(after[1].value > before[1].value, "no page fault counted");
        // One schedule for the group: the members share their times.
        assert_eq!(after[0].time_enabled, after[1].time_enabled);
        assert_eq!(after[0].time_running, after[1].time_running);
    }
}
