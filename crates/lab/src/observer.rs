//! The observer seam: what watches a trial's tasks implements, so that the runner opens,
//! drains and finishes every one of them through one list ([`crate::observer_list::Observers`])
//! without naming any: the profile (`--profile`), the lock trace (`--locks`) and the off-CPU
//! trace (`--offcpu`).
//!
//! Two ways to watch, one trait. A tracer is opened on the thread that then creates the tasks
//! (a built-in trial child before its tasks, a command's timed step just before its spawn),
//! so that its events are inherited from their first instruction; while they run it is
//! drained every few milliseconds, and it is told which processes are not the workload's. The
//! profile instead *wraps* the program that creates the tasks ([`Observer::wrap`]: `perf
//! record … -- program`), so it is opened by whatever spawns that program (the executor for a
//! trial child, the step for a command) and is never drained. When the window closes (or the
//! wrapped program has ended) each is finished, and leaves its report in [`Observed`], whose
//! fields are the trial record's (`TrialMeasurement::profile`, `::locks`, `::offcpu`).
//!
//! Adding an observer: its own module implements [`Observer`], [`Observed`] gets its report's
//! field, and [`crate::observer_list::Observers::open`] opens it from the trial's request; the
//! record type, the store's column and the renderer follow the report.

use std::path::{Path, PathBuf};

use model::record::{ClockWindow, LockReport, OffCpuReport, ProfileRef};

/// A tracer of a trial's tasks (see the module doc).
pub(crate) trait Observer: std::fmt::Debug {
    /// True when it records through rings this process must drain while the tasks run; false
    /// for one that needs none (the profile), and for a tracer that could not be opened here,
    /// whose report says why (the trial runs unobserved by it).
    fn needs_draining(&self) -> bool;

    /// Leaves out process `pid`'s events: it belongs to the harness (`perf record`).
    fn exclude(&mut self, pid: u32);

    /// The program to start instead of `program args…` when this observer wraps it (the
    /// profile: `perf record … -- program args…`); `None` (a tracer) leaves it as it is.
    fn wrap(&self, _program: &Path, _args: &[String]) -> Option<(PathBuf, Vec<String>)> {
        None
    }

    /// When the program it wrapped ran, by its own records: (exec, exit), CLOCK_MONOTONIC ns;
    /// asked once the wrapper has ended. `None`: it wraps nothing, or cannot tell.
    fn wrapped_span(&self) -> Option<(u64, u64)> {
        None
    }

    /// The trial's tasks were released at `at` (CLOCK_MONOTONIC ns), its warm-up beginning: a
    /// tracer that held back its call chains while the trial set up writes them from here on.
    fn tasks_released(&mut self, _at: u64) {}

    /// Follows processes `pids` too, from now on: the servers and attached processes of the
    /// system under test (`--server`, `--attach`), and what they start. An observer that
    /// cannot says so in its report. Returns the process it started for it, if any (the
    /// profile's `perf record -a` for the servers), which the other observers leave out as the
    /// harness's.
    fn follow_system(&mut self, _pids: &[u32]) -> Option<u32> {
        None
    }

    /// The measurement window opened at `at` (CLOCK_MONOTONIC ns): account from there on.
    fn window_opens(&mut self, _at: u64) {}

    /// The measurement window closed at `at`, just now, before the tasks stop: account up to
    /// there (what the tasks do once stopped is not the window's).
    fn window_closes(&mut self, _at: u64) {}

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
    /// `--profile`: the perf.data file, when perf wrote it.
    pub profile: Option<ProfileRef>,
    /// `--locks`.
    pub locks: Option<LockReport>,
    /// `--offcpu`.
    pub offcpu: Option<OffCpuReport>,
}
