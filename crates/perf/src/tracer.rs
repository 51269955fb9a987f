//! [`Tracer`]: the one face of the four tracers, so that a caller holds whichever it opened
//! (`Box<dyn Tracer<Trace = …>>`) and never matches on the backend.
//!
//! The contract: a tracer is opened before the tasks it follows exist, drained while they run,
//! told when the measurement window opens and closes, and finished once. A call a backend has
//! no use for is a no-op (the defaults), never an error; what a backend cannot do is said by
//! its return value ([`Tracer::follow_processes`]). The trait changes no tracer's behaviour:
//! each method forwards to the tracer's own.

/// A tracer of the trial's threads: [`crate::LockTracer`] and [`crate::BpfLockTracer`]
/// (`Trace = LockTrace`), [`crate::OffCpuTracer`] and [`crate::BpfOffCpuTracer`]
/// (`Trace = OffCpuTrace`).
pub trait Tracer: std::fmt::Debug {
    /// What [`finish`](Tracer::finish) returns: a [`crate::LockTrace`] or an
    /// [`crate::OffCpuTrace`].
    type Trace;

    /// Empties the ring buffers (call it every 10 ms or so while the tasks run); returns how
    /// many records read carried a user stack copy, so that a busy trace is drained sooner
    /// (0 from a tracer whose records carry none).
    fn drain(&mut self) -> u64;

    /// The user call chains first seen (per process) since the last call, as
    /// `(pid, addresses)`: a command's processes may be gone by the end, so they are named
    /// after each drain, while they live.
    fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)>;

    /// Writes no call chains until [`sample_from`](Tracer::sample_from) while the trial sets
    /// up; a tracer that writes every chain ignores it.
    fn hold_samples(&mut self) {}

    /// Writes call chains from `at` (CLOCK_MONOTONIC ns, the tasks' release) on; a tracer
    /// that writes every chain ignores it.
    fn sample_from(&mut self, _at: u64) {}

    /// The measurement window opened at `at` (CLOCK_MONOTONIC ns): sums and accounting start.
    fn window_opens(&mut self, _at: u64) {}

    /// The measurement window closed at `at`: nothing later is summed or accounted.
    fn window_closes(&mut self, _at: u64) {}

    /// Follows processes `pids` too, from now on, and what they create; `false`, following
    /// none, where this tracer cannot follow processes outside the tree it was opened in.
    fn follow_processes(&mut self, _pids: &[u32]) -> bool {
        false
    }

    /// Stops tracing and returns the trace; `until` is the window's end (CLOCK_MONOTONIC ns),
    /// where an off-CPU tracer ends its threads' accounting (a lock tracer keeps every wait).
    fn finish(self: Box<Self>, until: u64) -> Self::Trace;
}
