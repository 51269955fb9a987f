//! [`InheritedCounters`]: hardware counters on the calling process that follow every thread and
//! child it creates afterwards, so a trial's counts cover all of its tasks.
//!
//! One group first ([`crate::counters::group`]), else one fd per event; an event that cannot be
//! counted carries its own reason, never a zero. Its fds close on drop. How inherited counts are
//! summed by the kernel: `docs/notes/perf-tracers.md`.

use std::sync::Mutex;

use perf_event::events::Event;
use perf_event::{Builder, Counter};

use crate::counters::event::{CounterReading, HwEvent};
use crate::counters::group::InheritedGroup;
use perf_read::error::{PerfError, kernel_exclusion_reason};

/// One inherited counter fd; `Drop` closes it.
#[derive(Debug)]
pub(crate) struct InheritedCounter {
    name: &'static str,
    /// perf-event2 reads through `&mut Counter`; the mutex lets `read` take `&self` (it is
    /// uncontended: one sampler reads a few times a second).
    counter: Mutex<Counter>,
}

impl InheritedCounter {
    /// Opens `event` on the calling process, inherited and already counting (user space, and
    /// the kernel unless `exclude_kernel`; never the hypervisor).
    pub(crate) fn open(
        name: &'static str,
        event: impl Event,
        exclude_kernel: bool,
    ) -> Result<InheritedCounter, PerfError> {
        let counter = Builder::new(event)
            .observe_self()
            .any_cpu()
            .inherit(true)
            .exclude_kernel(exclude_kernel)
            .exclude_hv(true)
            .enabled(true)
            .build()
            .map_err(|e| PerfError::open(name, &e))?;
        Ok(InheritedCounter {
            name,
            counter: Mutex::new(counter),
        })
    }

    /// The count so far of this process, its live inherited tasks and its exited ones.
    pub(crate) fn read(&self) -> Result<CounterReading, PerfError> {
        let mut counter = self
            .counter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match counter.read_count_and_time() {
            Ok(read) => Ok(CounterReading {
                value: read.count,
                time_enabled: read.time_enabled,
                time_running: read.time_running,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(PerfError::NotScheduled { event: self.name })
            }
            Err(source) => Err(PerfError::Read {
                event: self.name,
                source,
            }),
        }
    }
}

/// Hardware counters opened on the calling process with `inherit`, so every thread and forked
/// child created *after* [`open`](Self::open) is counted too. `Drop` closes the fds.
///
/// `pid = 0` means the *calling thread*: threads that already exist are not counted, nor are
/// threads they create later. Open the counters from the thread that then creates every task
/// (the trial's main thread), before creating them.
///
/// Counts user and kernel mode when permitted; when `kernel.perf_event_paranoid` forbids kernel
/// counting, every event falls back to user space only ([`excludes_kernel`](Self::excludes_kernel)).
#[derive(Debug)]
pub struct InheritedCounters {
    source: Source,
    kernel_exclusion: Option<String>,
}

/// How the events are counted.
#[derive(Debug)]
enum Source {
    /// All of them in one group, scheduled together.
    Group {
        events: Vec<HwEvent>,
        group: InheritedGroup,
    },
    /// One fd each, each with its reason when unavailable.
    Separate(Vec<(HwEvent, Result<InheritedCounter, PerfError>)>),
}

impl InheritedCounters {
    /// Opens one counter per event. Never fails as a whole: each event either counts or
    /// carries the reason it is unavailable, which [`read`](Self::read) reports.
    pub fn open(events: &[HwEvent]) -> InheritedCounters {
        if events.len() > 1 {
            for exclude_kernel in [false, true] {
                let members = events
                    .iter()
                    .map(|e| (e.name(), perf_event::Builder::new(e.hardware())))
                    .collect();
                match InheritedGroup::open(members, exclude_kernel) {
                    Ok(group) => {
                        return InheritedCounters {
                            source: Source::Group {
                                events: events.to_vec(),
                                group,
                            },
                            kernel_exclusion: exclude_kernel.then(kernel_exclusion_reason),
                        };
                    }
                    // Counting the kernel is forbidden: the group in user space only.
                    Err(e) if e.is_permission_denied() && !exclude_kernel => {}
                    // A member cannot be counted: each event on its own says which.
                    Err(_) => break,
                }
            }
        }
        let open_all =
            |exclude_kernel: bool| -> Vec<(HwEvent, Result<InheritedCounter, PerfError>)> {
                events
                    .iter()
                    .map(|&event| {
                        (
                            event,
                            InheritedCounter::open(event.name(), event.hardware(), exclude_kernel),
                        )
                    })
                    .collect()
            };
        let with_kernel = open_all(false);
        let denied = with_kernel
            .iter()
            .any(|(_, c)| matches!(c, Err(e) if e.is_permission_denied()));
        if !denied {
            return InheritedCounters {
                source: Source::Separate(with_kernel),
                kernel_exclusion: None,
            };
        }
        // One mode for all events, so that their counts stay comparable.
        drop(with_kernel);
        InheritedCounters {
            source: Source::Separate(open_all(true)),
            kernel_exclusion: Some(kernel_exclusion_reason()),
        }
    }

    /// True when the events are counted as one group (scheduled on the PMU together).
    pub fn grouped(&self) -> bool {
        matches!(self.source, Source::Group { .. })
    }

    /// Every event asked for, in order, with its reading or the reason it is unavailable, e.g.
    /// `"cycles: perf_event_open: No such file or directory (ENOENT) — the PMU does not expose
    /// this event; common in VMs without a virtual PMU"`.
    pub fn read(&self) -> Vec<(HwEvent, Result<CounterReading, String>)> {
        match &self.source {
            Source::Group { events, group } => match group.read() {
                Ok(readings) => events
                    .iter()
                    .copied()
                    .zip(readings.into_iter().map(Ok))
                    .collect(),
                Err(e) => events.iter().map(|&ev| (ev, Err(e.to_string()))).collect(),
            },
            Source::Separate(counters) => counters
                .iter()
                .map(|(event, counter)| {
                    let reading = match counter {
                        Ok(counter) => counter.read().map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    (*event, reading)
                })
                .collect(),
        }
    }

    /// True when kernel-mode events are not counted (perf_event_paranoid forbade them).
    pub fn excludes_kernel(&self) -> bool {
        self.kernel_exclusion.is_some()
    }

    /// Why kernel-mode events are not counted, with the fix; `None` when they are.
    #[cfg(test)]
    pub(crate) fn kernel_exclusion_reason(&self) -> Option<&str> {
        self.kernel_exclusion.as_deref()
    }

    /// The events that opened and are counting.
    pub fn available(&self) -> Vec<HwEvent> {
        match &self.source {
            Source::Group { events, .. } => events.clone(),
            Source::Separate(counters) => counters
                .iter()
                .filter(|(_, c)| c.is_ok())
                .map(|(e, _)| *e)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;
    use std::time::{Duration, Instant};

    use perf_event::events::Software;

    use super::*;

    /// Iterations of the busy loop; each costs at least one instruction (in practice ~4).
    const ITERATIONS: u64 = 10_000_000;
    /// Set in the environment of the child this test binary spawns of itself.
    const CHILD_ENV: &str = "SCALELAB_PERF_TEST_BUSY_CHILD";

    fn busy_loop(iterations: u64) -> u64 {
        let mut acc = 0u64;
        for i in 0..iterations {
            acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
        }
        acc
    }

    /// Spins until the calling thread has used `at_least` CPU time (not wall time: the machine
    /// may be busy with other tests and builds).
    fn burn_cpu(at_least: Duration) {
        let start = sys::thread_usage().unwrap().cpu();
        let deadline = Instant::now() + Duration::from_secs(30);
        while sys::thread_usage().unwrap().cpu() - start < at_least && Instant::now() < deadline {
            busy_loop(10_000);
        }
    }

    /// Not a test of its own: when spawned by `run_busy_child` it runs the loop and burns
    /// CPU; in a normal test run it returns at once.
    #[test]
    fn busy_child_helper() {
        if std::env::var_os(CHILD_ENV).is_some() {
            busy_loop(ITERATIONS);
            burn_cpu(Duration::from_millis(100));
        }
    }

    /// Runs `busy_child_helper` in a new process (fork + exec of this test binary) and waits.
    fn run_busy_child() {
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "counters::inherited::tests::busy_child_helper",
                "--test-threads=1",
                "-q",
            ])
            .env(CHILD_ENV, "1")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "busy child failed: {status}");
    }

    fn read_ok(counter: &InheritedCounter) -> u64 {
        counter.read().unwrap().value
    }

    /// The inherit machinery itself, with the software `task-clock` event (CPU nanoseconds),
    /// which works even where the PMU is not exposed (VMs).
    #[test]
    fn software_counter_follows_new_threads_and_children() {
        let clock = InheritedCounter::open("task-clock", Software::TASK_CLOCK, false)
            .or_else(|_| InheritedCounter::open("task-clock", Software::TASK_CLOCK, true))
            .expect("software events are always available");
        let start = read_ok(&clock);
        std::thread::spawn(|| burn_cpu(Duration::from_millis(80)))
            .join()
            .unwrap();
        let after_thread = read_ok(&clock);
        let thread_ns = after_thread - start;
        assert!(
            thread_ns >= 60_000_000,
            "thread CPU time not counted: {thread_ns} ns"
        );

        run_busy_child();
        let child_ns = read_ok(&clock) - after_thread;
        assert!(
            child_ns >= 80_000_000,
            "child CPU time not counted: {child_ns} ns"
        );
        let reading = clock.read().unwrap();
        assert!(
            reading.time_enabled > 0 && reading.time_running > 0,
            "{reading:?}"
        );
    }

    /// Checks one hardware reading: a count above `floor`, or an error that says why.
    fn check(event: HwEvent, reading: &Result<CounterReading, String>, floor: u64) -> Option<u64> {
        match reading {
            Ok(r) => {
                if event == HwEvent::Instructions {
                    assert!(r.value > floor, "{event}: {} <= {floor}", r.value);
                }
                Some(r.value)
            }
            Err(text) => {
                assert!(text.starts_with(&format!("{event}: ")), "{text}");
                assert!(
                    text.contains("perf_event_open: ") && text.contains(" — "),
                    "an unavailable counter must name the call and the fix: {text}"
                );
                eprintln!("{event} unavailable here: {text}");
                None
            }
        }
    }

    #[test]
    fn hardware_counters_count_a_thread_created_after_open() {
        let counters = InheritedCounters::open(&HwEvent::ALL);
        let before = counters.read();
        std::thread::spawn(|| busy_loop(ITERATIONS)).join().unwrap();
        let after = counters.read();
        assert_eq!(after.len(), HwEvent::ALL.len());
        for ((event, b), (_, a)) in before.iter().zip(&after) {
            let delta = match (b, a) {
                (Ok(b), Ok(a)) => Ok(a.saturating_sub(b)),
                (_, other) => other.clone(),
            };
            if let Some(count) = check(*event, &delta, ITERATIONS) {
                eprintln!("{event}: {count} for a {ITERATIONS}-iteration loop in a new thread");
            }
        }
        if counters.excludes_kernel() {
            let reason = counters.kernel_exclusion_reason().unwrap();
            assert!(reason.contains("perf_event_paranoid"), "{reason}");
        }
    }

    #[test]
    fn hardware_counters_count_a_child_process_after_it_exits() {
        let counters = InheritedCounters::open(&[HwEvent::Instructions, HwEvent::Cycles]);
        let before = counters.read();
        run_busy_child();
        let after = counters.read();
        for ((event, b), (_, a)) in before.iter().zip(&after) {
            let delta = match (b, a) {
                (Ok(b), Ok(a)) => Ok(a.saturating_sub(b)),
                (_, other) => other.clone(),
            };
            if let Some(count) = check(*event, &delta, ITERATIONS) {
                eprintln!("{event}: {count} for a child running a {ITERATIONS}-iteration loop");
            }
        }
    }

    #[test]
    fn counters_can_move_to_a_sampler_thread() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<InheritedCounters>();
    }

    #[test]
    fn available_lists_only_counting_events() {
        let counters = InheritedCounters::open(&HwEvent::ALL);
        let readings = counters.read();
        let ok: Vec<HwEvent> = readings
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(e, _)| *e)
            .collect();
        assert_eq!(counters.available(), ok);
        assert!(InheritedCounters::open(&[]).read().is_empty());
    }
}
