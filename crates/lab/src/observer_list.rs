//! The observers of one trial (or one timed step), as one list: opened together from the
//! trial's requests, drained together while the tasks run, finished together into
//! [`Observed`]. The runner holds an [`Observers`] and never names an observer.
//!
//! Where a list is opened follows from how each observer watches ([`crate::observer`]): a
//! command's timed step opens all of them on the thread that spawns the step (the profile
//! wraps its `sh -c`, the tracers inherit into it); a built-in trial opens the profile in the
//! executor that spawns the trial child (which it wraps) and the tracers inside that child,
//! before its tasks.

use std::path::{Path, PathBuf};

use crate::locks::LockRequest;
use crate::locks::collect::TraceSession;
use crate::observer::{Observed, Observer};
use crate::offcpu::OffCpuRequest;
use crate::offcpu::collect::OffCpuSession;
use crate::profile::ProfileRequest;
use crate::profile::session::ProfileSession;
use crate::traced_processes::Scope;
use model::record::ClockWindow;

/// What a trial (or a step) asks to have watched.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Requests<'a> {
    /// `--profile`: the request and the perf.data file to write.
    pub profile: Option<(&'a ProfileRequest, &'a Path)>,
    /// `--locks`.
    pub locks: Option<LockRequest>,
    /// `--offcpu`.
    pub offcpu: Option<OffCpuRequest>,
}

/// The open observers of a trial.
#[derive(Debug, Default)]
pub(crate) struct Observers(Vec<Box<dyn Observer>>);

impl Observers {
    /// Opens every observer asked for, on the calling thread (see [`crate::observer`]); a
    /// tracer that cannot be opened here says why in its report. `scope` is whose events the
    /// tracers keep.
    pub(crate) fn open(requests: Requests<'_>, scope: Scope) -> Observers {
        let mut list: Vec<Box<dyn Observer>> = Vec::new();
        if let Some((request, output)) = requests.profile {
            list.push(Box::new(ProfileSession::new(request, output)));
        }
        if let Some(r) = requests.locks {
            list.push(Box::new(TraceSession::start_scoped(r, scope)));
        }
        if let Some(r) = requests.offcpu {
            list.push(Box::new(OffCpuSession::start_scoped(r, scope)));
        }
        Observers(list)
    }

    /// True when any of them must be drained while the tasks run.
    pub(crate) fn needs_draining(&self) -> bool {
        self.0.iter().any(|o| o.needs_draining())
    }

    /// The program to start for `program args…`: wrapped by each observer that wraps it, in
    /// turn; `None` when none does.
    pub(crate) fn wrap(&self, program: &Path, args: &[String]) -> Option<(PathBuf, Vec<String>)> {
        let mut wrapped: Option<(PathBuf, Vec<String>)> = None;
        for o in &self.0 {
            let (p, a) = match &wrapped {
                Some((p, a)) => (p.as_path(), a.as_slice()),
                None => (program, args),
            };
            if let Some(w) = o.wrap(p, a) {
                wrapped = Some(w);
            }
        }
        wrapped
    }

    /// When the wrapped program ran, by the first observer that can tell (see
    /// [`Observer::wrapped_span`]).
    pub(crate) fn wrapped_span(&self) -> Option<(u64, u64)> {
        self.0.iter().find_map(|o| o.wrapped_span())
    }

    /// Leaves out process `pid` (the harness's) in every one.
    pub(crate) fn exclude(&mut self, pid: u32) {
        for o in &mut self.0 {
            o.exclude(pid);
        }
    }

    /// Has every one follow the system under test's processes `pids` too.
    pub(crate) fn follow_system(&mut self, pids: &[u32]) {
        if pids.is_empty() {
            return;
        }
        let started: Vec<u32> = self
            .0
            .iter_mut()
            .filter_map(|o| o.follow_system(pids))
            .collect();
        for pid in started {
            for o in &mut self.0 {
                o.exclude(pid);
            }
        }
    }

    /// Tells every one that the trial's tasks were released at `at`.
    pub(crate) fn tasks_released(&mut self, at: u64) {
        for o in &mut self.0 {
            o.tasks_released(at);
        }
    }

    /// Tells every one that the window opened at `at`.
    pub(crate) fn window_opens(&mut self, at: u64) {
        for o in &mut self.0 {
            o.window_opens(at);
        }
    }

    /// Tells every one that the window closed at `at`, just now.
    pub(crate) fn window_closes(&mut self, at: u64) {
        for o in &mut self.0 {
            o.window_closes(at);
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
