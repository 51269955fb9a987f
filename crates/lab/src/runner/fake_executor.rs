//! [`FakeExecutor`]: deterministic measurements instead of trials, for the tests of everything
//! above the executor (the lifecycle, the analysis) and for `test_runs`' synthetic runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::executor::{Execution, Executor};
use super::spec::{BuiltinWork, TrialSpec};
use model::record::{CounterValue, Nanos, SampleRecord, TrialMeasurement, TrialOutcome, Usage};

/// Deterministic measurements for tests: throughput `base × N / (1 + contention × (N − 1))`,
/// perturbed by a fixed pattern per trial index, and optional failures.
#[derive(Debug, Clone)]
pub(crate) struct FakeExecutor {
    pub base_ops_per_sec: f64,
    pub contention: f64,
    /// Relative noise of trial k is `noise × pattern[k % 5]`.
    pub noise: f64,
    /// Fail the trial with this (n, index).
    pub fail: Option<(u32, u32)>,
    /// Executions so far.
    pub calls: usize,
    /// Whether the measurements carry a (zero) harness cost, as a built-in trial child's do.
    pub harness: bool,
    /// Whether each execution was traced (lock or off-CPU trace asked for), in order.
    pub traced: Vec<bool>,
    /// Each execution's task count, in order.
    pub tasks: Vec<u32>,
}

impl FakeExecutor {
    pub(crate) fn new(base_ops_per_sec: f64, contention: f64) -> FakeExecutor {
        FakeExecutor {
            base_ops_per_sec,
            contention,
            noise: 0.0,
            fail: None,
            calls: 0,
            harness: false,
            traced: Vec::new(),
            tasks: Vec::new(),
        }
    }
}

impl Executor for FakeExecutor {
    fn execute(&mut self, spec: &TrialSpec, _: Duration, stop: &AtomicBool) -> Execution {
        const PATTERN: [f64; 5] = [0.0, 1.0, -1.0, 0.5, -0.5];
        let index = self.calls;
        self.calls += 1;
        self.traced
            .push(spec.locks.is_some() || spec.offcpu.is_some());
        self.tasks.push(spec.tasks);
        if stop.load(Ordering::SeqCst) {
            return Execution::Interrupted;
        }
        if self
            .fail
            .is_some_and(|(n, k)| n == spec.tasks && k as usize == index)
        {
            return Execution::Finished(TrialOutcome::Failed {
                reason: "planted failure".into(),
            });
        }
        let n = f64::from(spec.tasks);
        let rate = self.base_ops_per_sec * n / (1.0 + self.contention * (n - 1.0))
            * (1.0 + self.noise * PATTERN[index % 5]);
        // A command trial has no window of its own: the fake makes it one second.
        let window = spec
            .builtin()
            .map_or(Nanos(1_000_000_000), |b: &BuiltinWork| b.duration);
        let secs = window.as_secs_f64();
        let per_task = (rate * secs / n) as u64;
        let task_ops = vec![per_task; spec.tasks as usize];
        Execution::Finished(TrialOutcome::Ok(TrialMeasurement {
            reported: None,
            window,
            task_ops: task_ops.clone(),
            usage: Usage {
                user: Nanos((secs * n * 0.5e9) as u64),
                sys: Nanos((secs * n * 0.5e9) as u64),
                ..Usage::default()
            },
            counters: vec![CounterValue {
                event: "cycles".into(),
                value: Some(per_task * 100 * u64::from(spec.tasks)),
                multiplexed: false,
                note: None,
            }],
            extras: Default::default(),
            placement: vec![None; spec.tasks as usize],
            samples: vec![SampleRecord {
                t: window,
                task_ops,
            }],
            steps: Vec::new(),
            clock_window: None,
            offcpu: None,
            harness: self.harness.then(model::record::HarnessCost::default),
            profile: None,
            locks: None,
        }))
    }
}
