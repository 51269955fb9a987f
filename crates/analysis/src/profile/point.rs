//! One point's profile as the analysis reads it ([`PointProfile`]: its functions, DSOs and folded
//! stacks, and each merged trial's own), and which kernel functions are lock functions.

use std::collections::HashMap;

use serde::Serialize;

/// One function's cost at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionRow {
    /// The symbol name, or `[unknown]` when the address has no symbol.
    pub name: String,
    /// `[kernel]`, or the mapped file's name (`libc.so.6`, `scalelab`).
    pub dso: String,
    /// Whether the function is kernel code.
    pub kernel: bool,
    /// Share of all kept samples' period with this function as the leaf, in %.
    pub self_share: f64,
    /// Share with this function anywhere on the stack, in %.
    pub total_share: f64,
    /// Samples with this function as the leaf.
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack (once per sample).
    pub total_samples: u64,
    /// Self period ÷ ops (ns/op for cpu-clock, cycles/op for cycles); `None` without ops.
    pub cost_per_op: Option<f64>,
    /// Total (self + callees) period ÷ ops.
    pub total_cost_per_op: Option<f64>,
    /// Symbol size in bytes.
    pub size: Option<u64>,
    /// readprofile's normalized load: self samples ÷ function size in bytes.
    pub load: Option<f64>,
}

impl FunctionRow {
    /// The key functions are matched by across points and runs: the symbol name (perf diff's
    /// rule), with unnamed code kept apart per DSO.
    pub(crate) fn key(&self) -> String {
        function_key(&self.name, &self.dso)
    }
}

/// [`FunctionRow::key`] of a function named `name` in `dso`.
pub(crate) fn function_key(name: &str, dso: &str) -> String {
    if name == "[unknown]" {
        format!("[unknown] in {dso}")
    } else {
        name.to_owned()
    }
}

/// One DSO's self cost at one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DsoRow {
    /// `[kernel]`, or the mapped file's name.
    pub dso: String,
    /// Whether the DSO is the kernel.
    pub kernel: bool,
    /// Share of all kept samples' period whose leaf is in this DSO, in %.
    pub share: f64,
    /// Samples whose leaf is in this DSO.
    pub samples: u64,
}

/// Every profiled trial of one N, merged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointProfile {
    /// The task count.
    pub n: u32,
    /// `cpu-clock` or `cycles`.
    pub event: String,
    /// `ns` or `cycles`: the unit of cost per op.
    pub unit: String,
    /// The perf.data files merged here (`perf report -i` opens them).
    pub files: Vec<String>,
    /// Ops done in the profiled trials' windows (a command's reported units, `--metric`).
    pub ops: f64,
    /// Samples kept (inside the trials' windows).
    pub samples: u64,
    /// Their summed period (ns for cpu-clock, cycles for cycles).
    pub period: u64,
    /// Samples outside the windows, dropped.
    pub outside_window: u64,
    /// Samples in the windows of scalelab's own threads in a trial child (the sampler, the
    /// tracers' drains), dropped: only the tasks' samples are the workload's.
    pub other_threads: u64,
    /// The summed period of the tasks' partners' samples in the windows (threads a task keeps
    /// busy beside it, e.g. pipe_pingpong's echo partners), kept apart from the functions.
    pub partner_period: u64,
    /// Times the kernel lowered the sampling rate (PERF_RECORD_THROTTLE).
    pub throttled: u64,
    /// Samples the kernel lost (ring buffer full).
    pub lost: u64,
    /// Functions, most self period first.
    pub functions: Vec<FunctionRow>,
    /// DSOs, most self period first.
    pub dsos: Vec<DsoRow>,
    /// Folded call chains, root first (`a;b;c`), with their sample counts: flame graph input.
    #[serde(skip)]
    pub folded: Vec<(String, u64)>,
    /// Caveats from reading the files (no kernel symbols, unreadable mapped files), each once.
    pub notes: Vec<String>,
    /// Each merged file on its own, in the order merged (one per profiled trial for a run):
    /// the per-trial values `explain` judges a function's growth by.
    #[serde(skip)]
    pub trials: Vec<TrialProfile>,
    /// The system under test's servers at this N (`--server`, `--attach`), profiled beside
    /// the command in the same trials, per the command's ops; `None` without servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers: Option<Box<PointProfile>>,
}

/// One profiled trial's part of a [`PointProfile`]: its ops and each function's self period.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialProfile {
    /// Ops done in the trial's window (0 for a file read without its run).
    pub ops: f64,
    /// Self period by function, keyed as [`FunctionRow::key`] matches functions.
    pub self_period: HashMap<String, u64>,
}

impl TrialProfile {
    /// `key`'s self cost per op in this trial (0 where it took no sample); `None` without ops.
    pub fn cost_per_op(&self, key: &str) -> Option<f64> {
        (self.ops > 0.0).then(|| self.self_period.get(key).copied().unwrap_or(0) as f64 / self.ops)
    }
}

impl PointProfile {
    pub(crate) fn function(&self, key: &str) -> Option<&FunctionRow> {
        self.functions.iter().find(|f| f.key() == key)
    }
}

/// Kernel lock and spin functions, called out in "what grows": a whole part of the name (split
/// on `_` and `.`) is a lock word, so `_raw_spin_lock_irqsave` and `__mutex_lock.constprop.0`
/// are, and `find_get_block_common` ("block" holds "lock") or `clockevents_…` are not.
pub(crate) fn is_lock_function(name: &str) -> bool {
    const PARTS: [&str; 15] = [
        "spin",
        "spinlock",
        "qspinlock",
        "lock",
        "unlock",
        "trylock",
        "locked",
        "lockref",
        "rwlock",
        "seqlock",
        "mutex",
        "rwsem",
        "osq",
        "futex",
        "rcu",
    ];
    name.split(['_', '.'])
        .any(|part| PARTS.iter().any(|p| part.eq_ignore_ascii_case(p)))
}
