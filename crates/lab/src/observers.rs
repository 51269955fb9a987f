//! The observers of one trial (or one timed step), as one list: opened together from the
//! trial's requests, drained together while the tasks run, finished together into
//! [`Observed`]. The runner holds an [`Observers`] and never names a tracer.

use crate::locks::LockRequest;
use crate::locks::collect::TraceSession;
use crate::observer::{Observed, Observer};
use crate::offcpu::OffCpuRequest;
use crate::offcpu::collect::OffCpuSession;
use crate::traced_processes::Scope;
use model::record::ClockWindow;

/// The open observers of a trial.
#[derive(Debug, Default)]
pub(crate) struct Observers(Vec<Box<dyn Observer>>);

impl Observers {
    /// Opens every observer the trial asks for, on the calling thread (see
    /// [`crate::observer`]); one that cannot be opened here says why in its report.
    pub(crate) fn open(
        locks: Option<LockRequest>,
        offcpu: Option<OffCpuRequest>,
        scope: Scope,
    ) -> Observers {
        let mut list: Vec<Box<dyn Observer>> = Vec::new();
        if let Some(r) = locks {
            list.push(Box::new(TraceSession::start_scoped(r, scope)));
        }
        if let Some(r) = offcpu {
            list.push(Box::new(OffCpuSession::start_scoped(r, scope)));
        }
        Observers(list)
    }

    /// True when any of them records (and so needs draining).
    pub(crate) fn is_observing(&self) -> bool {
        self.0.iter().any(|o| o.is_observing())
    }

    /// True when the trial asked for none.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Leaves out process `pid` (the harness's) in every one.
    pub(crate) fn exclude(&mut self, pid: u32) {
        for o in &mut self.0 {
            o.exclude(pid);
        }
    }

    /// Tells every one that the window opened at `at`.
    pub(crate) fn window_opens(&mut self, at: u64) {
        for o in &mut self.0 {
            o.window_opens(at);
        }
    }

    /// Drains every one; returns the records read that each carry a stack copy.
    pub(crate) fn drain(&mut self) -> u64 {
        self.0.iter_mut().map(|o| o.drain()).sum()
    }

    /// Finishes every one with the window and the task threads (see [`Observer::finish`]).
    pub(crate) fn finish(self, window: ClockWindow, tasks: Option<&[u32]>) -> Observed {
        let mut observed = Observed::default();
        for o in self.0 {
            o.finish(window, tasks, &mut observed);
        }
        observed
    }
}
