//! The accounting of one N: the time the tasks own per op (`ns/op/task` = N·W ÷ ops) split
//! into user CPU, system CPU, run-queue wait and off-CPU (the rest), from every successful
//! trial's own usage.
//!
//! A command whose threads were traced (`--offcpu`, [`model::record::ThreadGroup`]) owns not
//! N·W but its threads' time: every worker's life inside the window, and the supervising
//! threads' CPU and run-queue wait — their waiting for what they started is shown apart
//! (`supervising`), never task time. Its run-queue wait is the threads' own, from the trace.
//! Where the workers are not N (a program with helpers, a pool not sized by `{n}`), the
//! figures are still per worker time, and the worker count is shown.
//!
//! Each part is the median over the point's trials of that part per op; off-CPU is the median
//! total minus the other medians, so the four parts add up to the median total exactly (a
//! negative off-CPU says the medians came from different trials, and is shown as it is).

use serde::Serialize;

use model::record::{RoleTotals, RunData, TrialMeasurement};

/// One trial's accounting per op, in ns (of task time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TrialParts {
    /// The trial's index within its point.
    pub(crate) index: u32,
    /// N·W ÷ ops.
    pub(crate) total: f64,
    /// User CPU ÷ ops.
    pub(crate) user: f64,
    /// System CPU ÷ ops.
    pub(crate) sys: f64,
    /// Run-queue delay ÷ ops, where measured.
    pub(crate) runq: Option<f64>,
    /// A command's threads that worked, where they were traced.
    pub(crate) workers: Option<u32>,
    /// A command's supervising threads' waiting ÷ ops (not task time), where traced.
    pub(crate) supervising: Option<f64>,
}

impl TrialParts {
    /// What is left once CPU and run-queue wait are taken out: blocked time per op.
    pub(crate) fn offcpu(&self) -> f64 {
        self.total - self.user - self.sys - self.runq.unwrap_or(0.0)
    }
}

/// The accounting of one trial, `None` without ops.
pub(crate) fn trial_parts(n: u32, index: u32, m: &TrialMeasurement) -> Option<TrialParts> {
    let ops = m.work();
    if ops <= 0.0 || m.window.0 == 0 {
        return None;
    }
    let per_op = |ns: u64| ns as f64 / ops;
    let threads = thread_totals(m);
    Some(TrialParts {
        index,
        total: task_time(n, m) / ops,
        user: per_op(m.usage.user.0),
        sys: per_op(m.usage.sys.0),
        runq: run_delay(m).map(per_op),
        workers: threads.map(|t| t.workers),
        supervising: threads.map(|t| per_op(t.other_life - t.other_busy)),
    })
}

/// A command trial's threads summed by role, when they were traced.
pub(crate) fn thread_totals(m: &TrialMeasurement) -> Option<RoleTotals> {
    let groups = &m.offcpu.as_ref()?.threads;
    (!groups.is_empty()).then(|| RoleTotals::of(groups))
}

/// The time a trial's tasks own, in ns: N·W, or a traced command's threads' task time.
pub(crate) fn task_time(n: u32, m: &TrialMeasurement) -> f64 {
    match thread_totals(m) {
        Some(t) => t.task_time() as f64,
        None => f64::from(n) * m.window.0 as f64,
    }
}

/// A trial's run-queue wait in ns: its tasks' schedstat delay, or a traced command's threads'.
pub(crate) fn run_delay(m: &TrialMeasurement) -> Option<u64> {
    match thread_totals(m) {
        Some(t) => Some(t.runq),
        None => m.usage.run_delay.map(|d| d.0),
    }
}

/// Every measured trial of `n`, with its measurement.
pub(crate) fn trials_at(data: &RunData, n: u32) -> Vec<(u32, &TrialMeasurement)> {
    data.trials
        .iter()
        .filter(|t| t.n == n)
        .filter_map(|t| t.outcome.measurement().map(|m| (t.index, m)))
        .collect()
}

/// The parts of one N's cost per op, in ns; they add up to `ns_per_op_task` exactly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accounting {
    /// Median over the trials of N·W ÷ ops: the time the tasks own per op.
    pub ns_per_op_task: f64,
    /// Median user CPU per op.
    pub user_ns: f64,
    /// Median system CPU per op.
    pub system_ns: f64,
    /// Median run-queue wait per op (runnable, waiting for a CPU); 0 where not measured.
    pub runq_ns: f64,
    /// Whether run-queue wait was measured (else it is inside `offcpu_ns`).
    pub runq_measured: bool,
    /// Blocked per op: the total minus the other parts.
    pub offcpu_ns: f64,
    /// Coefficient of variation of the trials' `ns/op/task` (`None` with one trial).
    pub cv: Option<f64>,
    /// The trials (0-based indices) the medians are over.
    pub trials: Vec<u32>,
    /// A traced command's threads that worked, per trial (empty for a built-in, whose tasks
    /// are N, and for an untraced command).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<u32>,
    /// A traced command's supervising threads' waiting per op, the median over trials: shown
    /// apart, not part of `ns_per_op_task` (`None` for a built-in or an untraced command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supervising_ns: Option<f64>,
}

impl Accounting {
    /// The sum of the parts (equal to `ns_per_op_task` up to rounding).
    pub fn parts_sum(&self) -> f64 {
        self.user_ns + self.system_ns + self.runq_ns + self.offcpu_ns
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let k = v.len();
    if k == 0 {
        0.0
    } else if k % 2 == 1 {
        v[k / 2]
    } else {
        (v[k / 2 - 1] + v[k / 2]) / 2.0
    }
}

/// The accounting of one N over `parts` (one per trial), `None` without trials.
pub(crate) fn account(parts: &[TrialParts]) -> Option<Accounting> {
    if parts.is_empty() {
        return None;
    }
    let total = median(parts.iter().map(|p| p.total).collect());
    let user = median(parts.iter().map(|p| p.user).collect());
    let sys = median(parts.iter().map(|p| p.sys).collect());
    let runq_measured = parts.iter().all(|p| p.runq.is_some());
    let runq = if runq_measured {
        median(parts.iter().filter_map(|p| p.runq).collect())
    } else {
        0.0
    };
    let cv = stats::Sample::new(parts.iter().map(|p| p.total).collect())
        .ok()
        .and_then(|s| s.cv());
    let traced = parts.iter().all(|p| p.workers.is_some());
    Some(Accounting {
        ns_per_op_task: total,
        user_ns: user,
        system_ns: sys,
        runq_ns: runq,
        runq_measured,
        offcpu_ns: total - user - sys - runq,
        cv,
        trials: parts.iter().map(|p| p.index).collect(),
        workers: if traced {
            parts.iter().filter_map(|p| p.workers).collect()
        } else {
            Vec::new()
        },
        supervising_ns: traced
            .then(|| median(parts.iter().filter_map(|p| p.supervising).collect())),
    })
}
