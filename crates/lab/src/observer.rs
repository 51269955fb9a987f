//! The observer seam: what a tracer that watches a trial's tasks implements, so that the
//! runner opens, drains and finishes every one of them through one list
//! ([`crate::observers::Observers`]) without naming any.
//!
//! An observer is opened on the thread that then creates the tasks (a built-in trial child
//! before its tasks, a command's timed step just before its spawn), so that its events are
//! inherited from their first instruction. While they run it is drained every few
//! milliseconds; it is told which processes are not the workload's (a `perf record` wrapping
//! a command); when the window closes it is finished, and leaves its report in [`Observed`],
//! whose fields are the trial record's (`TrialMeasurement::locks`, `::offcpu`).
//!
//! Adding an observer: its own module implements [`Observer`], [`Observed`] gets its report's
//! field, and [`crate::observers::Observers::open`] opens it from the trial's request; the
//! record type, the store's column and the renderer follow the report.
//!
//! The profile is not one: `perf record` wraps the program that is spawned (the trial child,
//! or `sh -c CMD`) rather than being opened inside it, and its report is a file the parent
//! reads after the child exits (`runner::perf_record`).

use model::record::{ClockWindow, LockReport, OffCpuReport};

/// A tracer of a trial's tasks (see the module doc).
pub(crate) trait Observer: std::fmt::Debug {
    /// True when it records (and needs draining); false when it could not be opened here, in
    /// which case its report says why and the trial runs unobserved by it.
    fn is_observing(&self) -> bool;

    /// Leaves out process `pid`'s events: it belongs to the harness (`perf record`).
    fn exclude(&mut self, pid: u32);

    /// The measurement window opened at `at` (CLOCK_MONOTONIC ns): account from there on.
    fn window_opens(&mut self, _at: u64) {}

    /// Empties its buffers. Returns how many records it read that each carry a stack copy
    /// (futex waits): many of them call for the next drain sooner.
    fn drain(&mut self) -> u64;

    /// Stops, and leaves in `observed` its report of what happened inside `window` to the
    /// threads `tasks` (a built-in trial's task thread ids; `None`: every thread of the
    /// command not excluded).
    fn finish(self: Box<Self>, window: ClockWindow, tasks: Option<&[u32]>, observed: &mut Observed);
}

/// The reports the observers of a trial (or a step) left, one field per observer.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    /// `--locks`.
    pub locks: Option<LockReport>,
    /// `--offcpu`.
    pub offcpu: Option<OffCpuReport>,
}
