//! One N of an explanation ([`PointExplain`]): its accounting, its parts by cause, the traces
//! against the accounting on the same trials, and what tracing cost ([`TraceCost`]).

use serde::Serialize;

use super::accounting::Accounting;
use super::cause::{Cause, Part};

/// One N: its accounting and its parts by cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointExplain {
    /// The task count.
    pub n: u32,
    /// The servers' CPU per op, beside the command's task time (`--server`/`--attach` threads
    /// and what they started, pooled over the trials whose off-CPU trace followed them): what
    /// an op costs the system under test besides; `None` without servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_cpu_ns: Option<f64>,
    /// Of `servers_cpu_ns`, that of the server threads that ended no wait of the command's
    /// threads (their background work: a checkpointer, a WAL writer), in no cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_background_cpu_ns: Option<f64>,
    /// The parts of `ns/op/task`, adding up exactly.
    pub accounting: Accounting,
    /// The finest split by cause the evidence allows, most first within each source.
    pub parts: Vec<Part>,
    /// Where blocked time's split comes from: `offcpu`, `locks` (sleeping lock waits), or
    /// `None` (not split).
    pub offcpu_source: Option<&'static str>,
    /// The trials (0-based) that split blocked time.
    pub offcpu_trials: Vec<u32>,
    /// Blocked time the trace saw, per op, pooled over the traced trials.
    pub offcpu_traced_ns: Option<f64>,
    /// The same trials' residual, N·W − user − system − run-queue wait, less the steal the
    /// trace measured (`offcpu_stolen_ns`), per op, pooled: the blocked time the trace should
    /// have seen. `offcpu_traced_ns` against it is the trace's agreement with the accounting,
    /// measured on the same trials.
    pub offcpu_residual_ns: Option<f64>,
    /// The tasks' time on a CPU that the hypervisor took (steal), per op, pooled over the same
    /// trials, where the in-kernel tracer measured it (`None`: not measured). The kernel
    /// counts it neither as CPU time nor as a wait for a CPU, so it is in the accounting's
    /// off-CPU time; it is named as a cause of its own, never shared out to the blocked sites.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offcpu_stolen_ns: Option<f64>,
    /// The part of `offcpu_traced_ns` from episodes no wake-up record ended, per op, pooled over
    /// the same trials: they run to the switch-in, so they include the wait for a CPU after
    /// the wake-up, which the residual leaves out (`None` without such episodes).
    pub offcpu_unwoken_ns: Option<f64>,
    /// The CPUs that recorded nothing while idle in any of those trials
    /// ([`OffCpuReport::silent_idle_cpus`](model::record::OffCpuReport::silent_idle_cpus)):
    /// why episodes went unwoken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub offcpu_silent_idle_cpus: Vec<u32>,
    /// Blocked time no trace accounts for: `accounting.offcpu_ns` less the traced sites carried
    /// to the median trial (`offcpu_traced_ns × offcpu_ns ÷ offcpu_residual_ns`), i.e. the
    /// median's blocked time times `1 − traced/residual` (negative when the trace saw more than
    /// the residual).
    pub offcpu_unexplained_ns: Option<f64>,
    /// The trials (0-based) that traced locks.
    pub lock_trials: Vec<u32>,
    /// The perf.data files behind the CPU split.
    pub profile_files: Vec<String>,
    /// How many profiled trials give the functions per-trial values (0: one merged value).
    #[serde(skip)]
    pub(crate) profile_trial_values: usize,
    /// CPU per op the profile saw in its own trials (its tasks' samples × period ÷ those
    /// trials' ops); `None` for a `cycles` profile, whose period is not time (its shares still
    /// split the CPU).
    pub cpu_profiled_ns: Option<f64>,
    /// The same trials' user + system CPU per op, pooled: `cpu_profiled_ns` against it is the
    /// profile's agreement with the accounting, measured on the same trials (`None` for a
    /// profile read without its trials, e.g. merged from elsewhere).
    pub cpu_profiled_trials_ns: Option<f64>,
    /// Where the tasks keep partner threads busy on their CPUs (pipe_pingpong's echo partners),
    /// the tasks' and the partners' samples together, per op (`None` without partners): each
    /// cpu-clock sample lands in whichever of the two runs when it fires, so a thread's own
    /// share is a draw and the pair's sum is the exact check, against
    /// `cpu_with_partners_trials_ns`.
    pub cpu_profiled_with_partners_ns: Option<f64>,
    /// The same trials' user + system CPU per op plus their partners' CPU (schedstat over the
    /// window), pooled.
    pub cpu_with_partners_trials_ns: Option<f64>,
    /// User + system CPU per op (the medians) the split by function and spinning does not
    /// account for. The functions' shares of the profile are applied to the point's median
    /// CPU (a profiled trial runs beside `perf record` and may be slower or faster than the
    /// rest), so what is left is the spin functions' share against the lock trace's spinning.
    pub cpu_unexplained_ns: Option<f64>,
    /// The profile's share of samples in the kernel's perf and tracing functions, in %: the
    /// cost of measuring. The part of it the median trial carries too (the tracers', beyond the
    /// profiled trials' excess CPU) is a cause of kind `measurement`; `None` without a profile.
    pub measuring_pct: Option<f64>,
    /// The in-kernel tracers' own programs' time in the tasks' context (timed in the kernel),
    /// in % of the tasks' CPU per op: a cost of measuring no cpu-clock profile can see (the
    /// programs run with interrupts off), a cause of kind `measurement` of its own, less what
    /// a profile sampled inside them (that is among its perf and tracing functions); `None`
    /// where no trial timed it (the perf tracer, an older record), or the profile saw it all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub programs_pct: Option<f64>,
    /// How many of the blocking switches of the traced trials had their call chains recorded,
    /// when the in-kernel tracer sampled them (`None`: every one was, or no off-CPU trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offcpu_chains: Option<ChainSample>,
    /// The same for the lock waits of the lock-traced trials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_chains: Option<ChainSample>,
    /// What the lock and off-CPU traces cost, measured at this N (`None` for a run without
    /// them, a command, or one recorded before it was measured).
    pub trace_cost: Option<TraceCost>,
    /// A command's threads by role and name in its first traced trial at this N (empty for a
    /// built-in and an untraced command): who worked, who supervised.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<model::record::ThreadGroup>,
    /// Each trial's (user, system) CPU per op, for the noise rule of CPU spread over functions
    /// ([`attribution`]).
    #[serde(skip)]
    pub(crate) trial_cpu: Vec<(f64, f64)>,
    /// Each trial's `ns/op/task`, for the noise rule of the growth as a whole.
    #[serde(skip)]
    pub(crate) trial_total: Vec<f64>,
    /// Per kernel function of the profile, the system calls its samples were taken under
    /// (`None`: outside any), with their sample counts.
    #[serde(skip)]
    pub(crate) syscalls: std::collections::HashMap<String, Vec<(Option<String>, u64)>>,
}

/// Episodes (blocking switches, lock waits) of a point's traced trials and how many of them the
/// in-kernel tracer recorded with their call chains: the time of every one is summed exactly,
/// the chains (which name the causes) are a sample, each standing for `episodes ÷ with_chain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ChainSample {
    /// Episodes, summed over the trials (off-CPU: over the whole trace, warm-up included).
    pub episodes: u64,
    /// Of them, those recorded with their call chains.
    pub with_chain: u64,
    /// Those picked for a chain that the ring buffer had no room for: the sample is smaller,
    /// the sums are whole.
    pub lost: u64,
    /// The trials summed.
    pub trials: u32,
}

impl ChainSample {
    /// Adds one trial's counts.
    pub(crate) fn add(&mut self, episodes: u64, with_chain: u64, lost: u64) {
        self.episodes += episodes;
        self.with_chain += with_chain;
        self.lost += lost;
        self.trials += 1;
    }
}

/// A traced trial's time per op against the untraced trial run at the same N just before it
/// ([`model::record::HarnessCost::untraced`]): one pair, adjacent in time, so the run's drift
/// between them is small, but not its trial-to-trial noise (read it against the point's CV).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceCost {
    /// The traced trial (0-based).
    pub trial: u32,
    /// Its ns/op/task.
    pub traced_ns: f64,
    /// The untraced reference's ns/op/task.
    pub untraced_ns: f64,
    /// `traced_ns ÷ untraced_ns`: 1.00 when tracing cost nothing measurable.
    pub slowdown: f64,
    /// Whether the traced trial was also profiled (every trial of the point was): then the
    /// slowdown is the profiler's and the traces' together.
    pub profiled: bool,
    /// Whether that profile sampled every CPU rather than following the tasks
    /// (`--profile-scope`; `auto` decides it from `switches_per_task_second`).
    pub profiled_every_cpu: bool,
    /// The untraced reference's context switches a second per task (`None`: not kept).
    pub switches_per_task_second: Option<f64>,
    /// The profile's samples a second (per task, or per CPU on every CPU) in the traced
    /// trial, where it was profiled.
    pub profile_frequency: Option<u32>,
    /// How often the tasks blocked, and how long they were off a CPU, per op, untraced and
    /// traced (`None`: the reference's usage was not kept, or a trial had no ops).
    pub blocking: Option<BlockingChange>,
}

/// How often the tasks blocked and how long they were off a CPU, per op, in the untraced
/// reference and in the traced trials. The measuring's interruptions (a profile's samples above
/// all: each a timer interrupt, a VM exit in a guest, and a call chain) lengthen whatever they
/// land in, a lock's hold too, so that the other tasks find it held and wait: a traced run can
/// block more, not only run slower, and then its blocked causes are partly the measuring's
/// making (the figures: docs/notes/explain.md).
///
/// The blocking switches are the figure to read: the time off a CPU holds the hypervisor's
/// steal too, which the untraced trial does not measure apart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BlockingChange {
    /// The untraced trial's voluntary (blocking) context switches.
    pub untraced_switches: u64,
    /// The untraced trial's blocking switches per 1000 ops.
    pub untraced_per_kop: f64,
    /// The paired traced trial's voluntary context switches.
    pub traced_switches: u64,
    /// The paired traced trial's blocking switches per 1000 ops.
    pub traced_per_kop: f64,
    /// The fewest and the most blocking switches per 1000 ops over the point's traced trials.
    pub traced_per_kop_range: (f64, f64),
    /// The untraced trial's time off a CPU per op of task time (N·W − CPU − run-queue wait,
    /// ÷ ops; steal included), `None` without its run-queue wait.
    pub untraced_offcpu_ns: Option<f64>,
    /// The paired traced trial's, the same way (steal included; `None` without its run-queue
    /// wait).
    pub traced_offcpu_ns: Option<f64>,
}

/// From this many times the untraced trial's blocking per op, in every traced trial of the
/// point, the traced run's blocked causes are read as largely the measuring's. One untraced
/// trial scatters (0.04–0.66 blocking switches per 1000 ops over 24 untraced trials of
/// `futex_mutex -p shared=true` at N=2; 1.3–15 on `create_unlink -p shared=true`), so the rule
/// asks it of the traced trial that blocked least, and says it is one pair.
pub const BLOCKING_CHANGE_NOTABLE: f64 = 2.0;

/// Fewer traced blocking switches than this are too few to read a change of rate from.
const BLOCKING_CHANGE_MIN_SWITCHES: u64 = 100;

/// Below this share of the traced cost per op, blocked time too small to change the answer.
const BLOCKING_CHANGE_MIN_SHARE: f64 = 0.01;

impl BlockingChange {
    /// The paired traced trial's blocking per op against the untraced trial's (`None` when
    /// the untraced trial never blocked).
    pub fn switches_ratio(&self) -> Option<f64> {
        (self.untraced_per_kop > 0.0).then(|| self.traced_per_kop / self.untraced_per_kop)
    }

    /// The least-blocking traced trial's blocking per op against the untraced trial's.
    fn least_ratio(&self) -> Option<f64> {
        (self.untraced_per_kop > 0.0).then(|| self.traced_per_kop_range.0 / self.untraced_per_kop)
    }

    /// Whether the traced trials blocked notably more than the untraced one: the paired
    /// trial on at least [`BLOCKING_CHANGE_MIN_SWITCHES`] blocking switches, every traced trial
    /// [`BLOCKING_CHANGE_NOTABLE`] times as often per op or more, and the paired trial's time
    /// off a CPU (where measured) at least 1% of `traced_ns`, its cost per op.
    pub fn notable(&self, traced_ns: f64) -> bool {
        self.traced_switches >= BLOCKING_CHANGE_MIN_SWITCHES
            && self
                .least_ratio()
                .is_none_or(|r| r >= BLOCKING_CHANGE_NOTABLE)
            && self
                .traced_offcpu_ns
                .is_none_or(|t| t >= BLOCKING_CHANGE_MIN_SHARE * traced_ns)
    }
}

/// Above this slowdown the explanation describes the traced run more than the workload: the
/// issue's bound for the off-CPU trace (1.3×).
pub const TRACE_COST_NOTABLE: f64 = 1.3;

impl PointExplain {
    /// How many trials carry the evidence of `cause` at this point.
    pub(crate) fn trace_trials(&self, cause: &Cause) -> usize {
        match cause.source {
            "offcpu" => self.offcpu_trials.len(),
            "locks" => self.lock_trials.len(),
            "accounting" => self.accounting.trials.len(),
            "profile" => self.profile_trial_values,
            _ => 0,
        }
    }
}
