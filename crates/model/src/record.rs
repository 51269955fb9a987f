//! The records scalelab measures and keeps: a run, its trials and their raw samples.
//!
//! These types are the single data model (the records; the USL model is an analysis) shared by
//! the runner (which produces them), the store (which persists them without loss), export and
//! import (which move them between machines) and the analysis (which derives every aggregate
//! from them). Aggregates are never stored alone: a point's median is always recomputed from its
//! trials.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::env::Fingerprint;
pub use crate::metric::{Direction, MetricSpec, OutputStream};
pub use crate::nanos::Nanos;
pub use crate::thread_account::{RoleTotals, ThreadGroup, ThreadRole};

/// A command run's parameter holding one `--metric`: `metric.NAME` = `[stderr:]higher:REGEX`.
pub const METRIC_PARAM: &str = "metric.";
/// A command run's parameter naming its primary metric (X(N)).
pub const PRIMARY_PARAM: &str = "primary";
/// `--primary ops`: X(N) stays ops per second, the `--metric`s are shown beside it.
pub const PRIMARY_OPS: &str = "ops";

mod outcome_json;

/// How tasks are created: threads of one process, or one process each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every task a thread of the trial child.
    Threads,
    /// Every task a process forked by the trial child.
    Processes,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Threads => "threads",
            Mode::Processes => "processes",
        })
    }
}

/// CPU placement policy for tasks: which CPU task i runs on (see `runner::placement`).
///
/// Stored and exported as its text (`cores`, `compact`, `spread-nodes`, `none`, or a CPU list
/// such as `0,2,4-7`); `auto` and `core`, found in older records, read as [`Pin::Cores`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Pin {
    /// One task per physical core, spread over sockets, NUMA nodes and L3 domains, SMT
    /// siblings last (the default).
    Cores,
    /// Fill a core's SMT siblings, then its L3 domain, then its node, then the next.
    Compact,
    /// Round-robin over NUMA nodes; within a node, physical cores first.
    SpreadNodes,
    /// Never pin.
    None,
    /// Task i on the i-th CPU of this list, wrapping past its end.
    Cpus(Vec<usize>),
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pin::Cores => f.write_str("cores"),
            Pin::Compact => f.write_str("compact"),
            Pin::SpreadNodes => f.write_str("spread-nodes"),
            Pin::None => f.write_str("none"),
            Pin::Cpus(cpus) => f.write_str(&cpus_text(cpus)),
        }
    }
}

/// A CPU list as written: runs collapsed, order kept (`0,2,4-7`).
fn cpus_text(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

impl std::str::FromStr for Pin {
    type Err = String;

    /// Reads a strategy name, an old stored name (`auto`, `core`), or a CPU list in the order
    /// given (`0,2,4-7`; a CPU may not repeat).
    fn from_str(text: &str) -> Result<Pin, String> {
        match text {
            "cores" | "auto" | "core" => return Ok(Pin::Cores),
            "compact" => return Ok(Pin::Compact),
            "spread-nodes" => return Ok(Pin::SpreadNodes),
            "none" => return Ok(Pin::None),
            _ => {}
        }
        let bad = || {
            format!(
                "`{text}` is neither a strategy (cores, compact, spread-nodes, none) nor a CPU \
                 list such as 0,2,4-7"
            )
        };
        let mut cpus = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            match part.split_once('-') {
                Some((first, last)) => {
                    let first: usize = first.trim().parse().map_err(|_| bad())?;
                    let last: usize = last.trim().parse().map_err(|_| bad())?;
                    if first > last {
                        return Err(bad());
                    }
                    cpus.extend(first..=last);
                }
                None => cpus.push(part.parse().map_err(|_| bad())?),
            }
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = cpus.iter().find(|&&cpu| !seen.insert(cpu)) {
            return Err(format!("CPU {twice} is listed twice in `{text}`"));
        }
        Ok(Pin::Cpus(cpus))
    }
}

impl From<Pin> for String {
    fn from(pin: Pin) -> String {
        pin.to_string()
    }
}

impl TryFrom<String> for Pin {
    type Error = String;

    fn try_from(text: String) -> Result<Pin, String> {
        text.parse()
    }
}

/// Where the tasks' memory comes from (`--membind`), for built-in workloads: each task sets it
/// right after it is pinned, before its workload touches memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Membind {
    /// The kernel's default: a page comes from the node of the CPU that first touches it, so a
    /// pinned task's own memory is on its node (the default).
    #[default]
    FirstTouch,
    /// Each task's pages only from its CPU's node (`MPOL_BIND`): as first touch, but a full
    /// node does not spill to another; needs pinned tasks.
    Node,
    /// Every task's pages round-robin over the nodes the run may use (`MPOL_INTERLEAVE`):
    /// bandwidth over all nodes, and the remote cost on every other page.
    Interleave,
}

impl Membind {
    /// The name as written and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Membind::FirstTouch => "first-touch",
            Membind::Node => "node",
            Membind::Interleave => "interleave",
        }
    }
}

impl fmt::Display for Membind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Membind {
    type Err = String;

    fn from_str(text: &str) -> Result<Membind, String> {
        match text {
            "first-touch" => Ok(Membind::FirstTouch),
            "node" => Ok(Membind::Node),
            "interleave" => Ok(Membind::Interleave),
            _ => Err(format!(
                "`{text}` is not a memory placement: first-touch, node or interleave"
            )),
        }
    }
}

/// The lifecycle of a run as stored. `Incomplete` is derived when reading: a run still marked
/// `Running` whose owning process is gone (killed, crashed, machine rebooted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being measured (or its owner has not been seen to die).
    Running,
    /// Every planned trial ran.
    Complete,
    /// Stopped early (Ctrl-C, SIGTERM, an error); the finished trials are kept.
    Interrupted,
    /// Marked running, but the process measuring it is gone (killed, crashed, rebooted).
    Incomplete,
}

impl RunStatus {
    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Incomplete => "incomplete",
        }
    }
    /// The status stored as `text`, or `None` for a word no status is stored as.
    pub fn parse(text: &str) -> Option<RunStatus> {
        Some(match text {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "incomplete" => RunStatus::Incomplete,
            _ => return None,
        })
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that describes a run, fixed when it starts (status and end time aside).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Store id; 0 before the run is stored. Not preserved by export/import (the importing store
    /// assigns its own), but `origin_id` keeps the exporting store's id.
    pub id: i64,
    /// The exporting store's id, for an imported run.
    pub origin_id: Option<i64>,
    /// The run's identity across stores: made when the run is recorded, kept by export and
    /// import (an export without one, from an older scalelab, gets a fresh one). Its profiles
    /// live in a folder of this name.
    #[serde(default = "uuid::Uuid::new_v4")]
    pub uuid: uuid::Uuid,
    /// `--name`, when given.
    pub name: Option<String>,
    /// Built-in workload name, or `cmd` for an external command.
    pub workload: String,
    /// Workload parameters with defaults filled in, so two runs compare on every key.
    pub params: BTreeMap<String, String>,
    /// What one op is, from the workload's documentation (e.g. "one page faulted in").
    pub op_unit: String,
    /// Threads or processes.
    pub mode: Mode,
    /// How tasks were pinned.
    pub pin: Pin,
    /// Where the tasks' memory came from (`first-touch` when absent from the record).
    #[serde(default)]
    pub membind: Membind,
    /// The task counts of the sweep, in execution order.
    pub points: Vec<u32>,
    /// Trials per point.
    pub runs: u32,
    /// Each trial's measurement window.
    pub duration: Nanos,
    /// Each trial's warm-up before the window.
    pub warmup: Nanos,
    /// `--variant`: which build or setting this run is, when given.
    pub variant: Option<String>,
    /// `--tag KEY=VAL` labels.
    pub tags: BTreeMap<String, String>,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// When the run ended, RFC 3339 UTC; `None` while it runs or when it never ended.
    pub finished_at: Option<String>,
    /// Running, complete, interrupted or incomplete.
    pub status: RunStatus,
    /// The machine and build the run measured on.
    pub env: Fingerprint,
    /// Warnings recorded with the run (environment checks, oversubscription, counters), each one
    /// line with its hint.
    pub warnings: Vec<String>,
    /// The full command line that produced the run.
    pub command_line: String,
}

impl RunMeta {
    /// The run's `--metric`s, the primary (X(N)) first, as its parameters keep them
    /// (`metric.NAME`, `primary`); empty for a built-in or a command without them.
    pub fn metrics(&self) -> Vec<MetricSpec> {
        let mut out: Vec<MetricSpec> = self
            .params
            .iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(METRIC_PARAM)?;
                let (from, rest) = match v.strip_prefix("stderr:") {
                    Some(rest) => (OutputStream::Stderr, rest),
                    None => (OutputStream::Stdout, v.as_str()),
                };
                MetricSpec::parse(&format!("{name}={rest}"), from).ok()
            })
            .collect();
        if let Some(primary) = self.params.get(PRIMARY_PARAM)
            && let Some(i) = out.iter().position(|m| &m.name == primary)
        {
            let p = out.remove(i);
            out.insert(0, p);
        }
        out
    }

    /// The run's X(N) when a `--metric` is it: the first of [`RunMeta::metrics`], unless
    /// `--primary ops` kept ops per second.
    pub fn primary_metric(&self) -> Option<MetricSpec> {
        if self.params.get(PRIMARY_PARAM).map(String::as_str) == Some(PRIMARY_OPS) {
            return None;
        }
        self.metrics().into_iter().next()
    }

    /// The one line that names the run wherever it is shown — the heading of `scalelab show`,
    /// `RunRef::description` and `ModelSource::Run` in the JSON of `compare` and `model`: id,
    /// name, workload and parameters, mode and pinning (for a command: `command, affinity N
    /// CPUs`), trials, variant, tags, status; printable (control characters escaped,
    /// [`crate::safe_text::printable`]).
    pub fn description(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut parts = vec![format!("run {}", self.id)];
        if let Some(name) = &self.name {
            parts.push(format!("\"{name}\""));
        }
        parts.push(if params.is_empty() {
            self.workload.clone()
        } else {
            format!("{} {}", self.workload, params.join(" "))
        });
        if self.workload == "cmd" {
            // Mode and pinning do not apply: the command runs as it is, with its affinity
            // limited to N CPUs at each N.
            parts.push("command, affinity N CPUs".into());
            parts.push(format!(
                "{} per point",
                crate::number_text::plural(self.runs as usize, "trial")
            ));
        } else {
            parts.push(format!("{}, pin {}", self.mode, self.pin));
            if self.membind != Membind::FirstTouch {
                parts.push(format!("membind {}", self.membind));
            }
            parts.push(format!(
                "{}×{:.3}s (warm-up {:.3}s)",
                self.runs,
                self.duration.as_secs_f64(),
                self.warmup.as_secs_f64()
            ));
        }
        if let Some(v) = &self.variant {
            parts.push(format!("variant {v}"));
        }
        for (k, v) in &self.tags {
            parts.push(format!("{k}={v}"));
        }
        parts.push(self.status.to_string());
        crate::safe_text::printable(&parts.join(" · ")).into_owned()
    }
}

/// One repetition of a point, in a fresh child process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// The point's task count.
    pub n: u32,
    /// 0-based repetition index within the point.
    pub index: u32,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// The measurement, or why there is none.
    pub outcome: TrialOutcome,
}

/// What became of a trial. Read from JSON by `outcome_json`, without buffering the object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
// One per trial, moved a few times: boxing the measurement would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum TrialOutcome {
    /// The trial measured.
    Ok(TrialMeasurement),
    /// The trial failed.
    Failed {
        /// Why, in one line (an exit status and the tail of stderr, a timeout …).
        reason: String,
    },
}

impl TrialOutcome {
    /// The measurement, when the trial has one.
    pub fn measurement(&self) -> Option<&TrialMeasurement> {
        match self {
            TrialOutcome::Ok(m) => Some(m),
            TrialOutcome::Failed { .. } => None,
        }
    }

    /// The measurement, when the trial has one, to change (a profile's path, read elsewhere).
    pub fn measurement_mut(&mut self) -> Option<&mut TrialMeasurement> {
        match self {
            TrialOutcome::Ok(m) => Some(m),
            TrialOutcome::Failed { .. } => None,
        }
    }
}

/// The raw measurement of one trial's window (warm-up excluded).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TrialMeasurement {
    /// Length of the measurement window, from the sampler's monotonic clock.
    pub window: Nanos,
    /// Ops done by each task inside the window.
    pub task_ops: Vec<u64>,
    /// Resource usage of all tasks inside the window (each task's own getrusage deltas, summed).
    pub usage: Usage,
    /// Hardware counters over the window, or why they are missing.
    pub counters: Vec<CounterValue>,
    /// Workload-specific counts (e.g. `clock`'s `time_backwards`), summed over tasks.
    pub extras: BTreeMap<String, u64>,
    /// The CPU each task was pinned to (`None`: not pinned).
    pub placement: Vec<Option<usize>>,
    /// Per-interval readings inside the window, cumulative per task since the window start.
    pub samples: Vec<SampleRecord>,
    /// For external commands: each timed step's own accounting, in order (empty for built-ins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRecord>,
    /// CLOCK_MONOTONIC at the window's edges: the clock `perf record -k CLOCK_MONOTONIC` and the
    /// lock tracer stamp their records with, so they can keep exactly the window's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_window: Option<ClockWindow>,
    /// The CPU profile recorded for this trial (`--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRef>,
    /// Lock contention seen during the window (`--locks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockReport>,
    /// Time the tasks spent blocked during the window, by cause (`--offcpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<OffCpuReport>,
    /// What the harness itself cost in this trial (built-in workloads; `None` for commands and
    /// when absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessCost>,
    /// The command's own figures (`--metric`), and which of them is X(N); `None` for a
    /// built-in, a command without `--metric`, and when absent from the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
}

/// A command trial's own figures, read from its output (`--metric`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    /// Each metric's value as the command printed it (86.58 for `86.58 MB/sec`), by name.
    pub values: BTreeMap<String, f64>,
    /// The run's primary metric: X(N), as a rate ([`MetricSpec::as_rate`]); `None` with
    /// `--primary ops` (X(N) stays ops per second, the metrics are shown beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<MetricSpec>,
}

impl Reported {
    /// X(N) of the trial: the primary metric as a rate; `None` without one, when it has no
    /// value, or for a lower-is-better value of 0.
    pub fn rate(&self) -> Option<f64> {
        let p = self.primary.as_ref()?;
        p.as_rate(*self.values.get(&p.name)?)
    }
}

/// What measuring cost, per trial: the trial child's sampler thread (it opens the gate, reads
/// the tasks' op counters every interval, checks that task processes live and drains tracers)
/// competes with the tasks for CPUs when every CPU has a task; and starting and stopping many
/// tasks takes time that is not in the window but is in the run's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HarnessCost {
    /// CPU time the sampler thread used inside the window (`CLOCK_THREAD_CPUTIME_ID`).
    pub sampler_cpu: Nanos,
    /// From creating the first task to the gate opening with every task ready (includes the
    /// workload's per-task set-up).
    pub start: Nanos,
    /// From the window's end to the last task joined or reaped.
    pub stop: Nanos,
    /// Whether the sampler ran at real-time priority (`SCHED_FIFO`), so that it opened and
    /// closed the window on time however many tasks were runnable; `None` when absent from
    /// the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_realtime: Option<bool>,
    /// For the first trial at each N of a run with lock or off-CPU traces (built-in workloads):
    /// a trial of the same N run just before it without any trace or profile, so that what the
    /// traces cost is measured, not guessed. `None` otherwise and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<UntracedReference>,
}

/// An untraced trial's window and ops, kept with the traced trial it ran just before
/// ([`HarnessCost::untraced`]); not a trial of the run (no statistics include it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntracedReference {
    /// Its measurement window.
    pub window: Nanos,
    /// Ops of all its tasks inside the window.
    pub ops: u64,
    /// Context switches of its tasks inside the window, voluntary and forced (`None` when
    /// absent from the record): how often a per-task profile would have been
    /// stopped and restarted, which decides where the traced trials' profile samples
    /// (`--profile-scope auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches: Option<u64>,
    /// Its tasks' usage over the window (`None` when absent from the record): how often
    /// they blocked (voluntary switches) and how long they were off a CPU without the
    /// measuring, which the traced trials' are read against (the measuring's interruptions can
    /// lengthen a lock's hold and so make the tasks wait more, not only run slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl UntracedReference {
    /// Time per op per task, `N·W ÷ ops`, in ns (`None` without ops).
    pub fn ns_per_op_task(&self, n: u32) -> Option<f64> {
        (self.ops > 0).then(|| f64::from(n) * self.window.0 as f64 / self.ops as f64)
    }

    /// Context switches per second per task, `switches ÷ (N·W)` (`None` without a count or a
    /// window).
    pub fn switches_per_task_second(&self, n: u32) -> Option<f64> {
        let task_seconds = f64::from(n) * self.window.0 as f64 / 1e9;
        (task_seconds > 0.0)
            .then_some(self.switches?)
            .map(|s| s as f64 / task_seconds)
    }
}

/// CLOCK_MONOTONIC nanoseconds at the start and end of a trial's measurement window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockWindow {
    /// At the window's start.
    pub start: Nanos,
    /// At the window's end.
    pub end: Nanos,
}

/// Where a trial's perf.data lives and how it was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProfileRef {
    /// Absolute path of the perf.data file (kept beside the database; `perf report -i` opens it).
    pub path: String,
    /// The sampled event: `cycles`, or `cpu-clock` where the PMU is unavailable.
    pub event: String,
    /// Sampling frequency asked of perf (Hz).
    pub frequency: u32,
    /// The thread ids of a built-in trial's tasks: the profile keeps their samples only (the
    /// trial child's sampler and tracer threads are scalelab's). Empty for a command's profile
    /// (its whole process tree is the workload) and when absent from the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<u32>,
    /// The thread ids of the tasks' partners (pipe_pingpong's echo threads or processes), which
    /// share the tasks' CPUs: their samples are counted apart, not as the workload's functions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partner_threads: Vec<u32>,
    /// The partners' CPU time over the window (their schedstat at its edges): with the tasks'
    /// own, what the tasks' and the partners' samples together are checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner_on_cpu: Option<Nanos>,
    /// Sampled on every CPU (`perf record -a`), the program's own samples kept when reading,
    /// rather than following its tasks (`--profile-scope`); false when absent from the record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_cpu: bool,
    /// The servers' profile beside it, in the same folder: `perf record -a` (every CPU, the
    /// same event, at most 241 Hz) while the system under test's processes ran; `None`
    /// without servers, and where perf wrote nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_path: Option<String>,
    /// Those processes (`--server`, `--attach`, and what they had started) when it began:
    /// reading keeps their samples and their descendants', no one else's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers_pids: Vec<u32>,
}

/// Lock contention of one trial's window, kernel locks and user (futex) locks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LockReport {
    /// Kernel lock contention, most wait first.
    pub kernel: Vec<LockContention>,
    /// User (futex) lock contention, most wait first.
    pub user: Vec<LockContention>,
    /// Records the kernel dropped (ring buffer full); a report with losses says so.
    pub lost_records: u64,
    /// Futex wait entries the trace read over the whole trace, of every traced process
    /// (`None`: no user-lock trace, or absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub futex_waits_seen: Option<u64>,
    /// The same the kernel counted (a counting event no full ring buffer can lose): with
    /// `futex_waits_seen`, the share of the waits the trace saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub futex_waits_counted: Option<u64>,
    /// Caveats: missing tracepoints, lost frames in user stacks, permission limits.
    pub notes: Vec<String>,
    /// How the in-kernel tracer counted and sampled (`None`: the perf tracer, every wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<LockSampling>,
}

/// The in-kernel lock tracer's counts: every wait in the window summed, a sample with chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LockSampling {
    /// Waits that ended inside the window, summed exactly.
    pub waits: u64,
    /// Of them, those recorded with their call chains.
    pub sampled: u64,
    /// Waits picked for a chain that the ring buffer had no room for (the sample is smaller;
    /// the sums are whole).
    pub lost: u64,
    /// Waits inside the window not summed (the kernel's table of locks was full): missing
    /// from every row.
    pub unsummed: u64,
    /// Threads created by traced ones that went untraced (the kernel's table was full).
    pub threads_untraced: u64,
    /// The tracer's own BPF programs' time in the trial's threads' context inside the window,
    /// summed (estimated from a timed sample of their runs; the kernel counts it as the
    /// threads' system CPU, and a cpu-clock profile cannot see it): the measuring's cost
    /// (`None` when absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_time: Option<Nanos>,
    /// The lowest sampled waits a second per CPU the tracer was lowered to because its drain
    /// fell behind (a slow or overloaded machine): fewer chains instead of lost ones (`None`:
    /// it kept up at the rate set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_lowered_to: Option<u64>,
}

/// Contention on one lock from one caller, as close to `lock_stat` columns as the events allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockContention {
    /// Symbol for a static kernel lock, else the address in hex (futex: the user address).
    pub lock: String,
    /// `spinlock`, `rwsem:read`, `rwsem:write`, `mutex`, `percpu`, `rt`, `futex` …
    pub kind: String,
    /// The first function outside the lock and scheduler code (kernel) or the call site (user).
    pub caller: String,
    /// Waits seen inside the window.
    pub contentions: u64,
    /// Summed wait.
    pub wait_total: Nanos,
    /// The longest single wait.
    pub wait_max: Nanos,
    /// The shortest single wait.
    pub wait_min: Nanos,
    /// Further call sites with their contention counts, most frequent first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_sites: Vec<(String, u64)>,
    /// Estimated from a sample of the lock's waits (the in-kernel tracer: the lock's sums are
    /// exact, its callers' shares sampled): how many of this row's waits had their chain, and
    /// the sampling error of `wait_total`. `None`: every wait was traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SiteSample>,
}

/// Time a trial's tasks spent off CPU and not runnable (blocked) inside the window, from the
/// scheduler's switch events (`--offcpu`). Waiting for a CPU (preempted, runnable) is not in
/// here: that is [`Usage::run_delay`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OffCpuReport {
    /// Blocked time of all the trial's tasks inside the window, summed over tasks (clipped to
    /// the window's edges).
    pub total: Nanos,
    /// Blocked time by cause, most first; the sites' `total`s add up to [`OffCpuReport::total`].
    pub sites: Vec<OffCpuSite>,
    /// Records the kernel dropped (ring buffer full); a report with losses says so.
    pub lost_records: u64,
    /// The part of [`OffCpuReport::total`] from episodes no wake-up record ended (`None`: every
    /// episode's wake-up was traced, or absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwoken: Option<UnwokenEpisodes>,
    /// CPUs whose kernel recorded nothing while they idled ([`perf::IdleCpu::silent`]: they went
    /// idle again and again, and not one wake-up was recorded in their idle task's context),
    /// named when episodes went [`unwoken`](OffCpuReport::unwoken): the wake-ups they took
    /// while idle are missing, whichever CPU the woken task ran on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub silent_idle_cpus: Vec<u32>,
    /// A command's threads by role and name over the window (empty for a built-in, whose
    /// tasks are its workers, and when absent from the record). With them,
    /// [`OffCpuReport::total`] and the sites are the workers' alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadGroup>,
    /// How the call chains were sampled, when the in-kernel tracer recorded a sample of the
    /// episodes (`None`: every episode was recorded, or absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<OffCpuSampling>,
    /// The tasks' (a command's workers') time on a CPU that the hypervisor took (steal) inside
    /// the window, summed: the kernel counts it neither as CPU time nor as a wait for a CPU, so
    /// the accounting's off-CPU residual holds it, and it is not blocked time (not in
    /// [`OffCpuReport::total`]). Read by the in-kernel tracer (each thread's wall-clock time on
    /// a CPU less its CPU time); `None` from the perf tracer and when absent from the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stolen: Option<Nanos>,
    /// Who held the CPUs while the counted threads waited for one, inside the window, most
    /// first (the in-kernel tracer; empty from the perf tracer and when absent from the record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runq_holders: Vec<RunqHolder>,
    /// Caveats: missing tracepoints, truncated stacks, permission limits.
    pub notes: Vec<String>,
}

/// A process that held a CPU while the traced threads waited for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunqHolder {
    /// Its process id (0: the idle task: a CPU coming out of idle).
    pub pid: u32,
    /// Its name (`comm`).
    pub comm: String,
    /// True for a kernel thread (a kworker, ksoftirqd, jbd2).
    #[serde(default)]
    pub kernel_thread: bool,
    /// True when it is traced itself (the system under test: a built-in's process, the
    /// command's own processes).
    #[serde(default)]
    pub traced: bool,
    /// True for a process of a server of the system under test (`--server`, `--attach`, or
    /// started by one): traced, but not the command's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server: bool,
    /// The traced threads' wait for a CPU while it ran.
    pub ns: Nanos,
}

/// The in-kernel tracer's sampling over a trial: every thread's time is summed exactly; the
/// call chains (which name the sites) are those of a sample of the blocking switches, each
/// standing for as many as it was sampled from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuSampling {
    /// Blocking switches of the traced threads from the tasks' release on (warm-up included;
    /// the set-up before it, whose switches are never sampled, is not).
    pub blocking_switches: u64,
    /// Of them, those recorded with their call chains.
    pub sampled: u64,
    /// Sampled episodes whose record (or whose wake-up's) the kernel could not write: their
    /// share is missing from the sites and widens their intervals.
    pub lost: u64,
    /// Threads created by traced ones that went untraced (the kernel's table was full).
    #[serde(default)]
    pub threads_untraced: u64,
    /// Unsampled episodes of 50 ms or more, recorded whole all the same (every episode that
    /// long is in the trace, standing for itself).
    #[serde(default)]
    pub long: u64,
    /// The tracer's own BPF programs' time in the trial's threads' context inside the window,
    /// summed (estimated from a timed sample of their runs; the kernel counts it as the
    /// threads' system CPU, and a cpu-clock profile cannot see it): the measuring's cost
    /// (`None` when absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_time: Option<Nanos>,
    /// The lowest sampled episodes a second per CPU the tracer was lowered to because its
    /// drain fell behind (a slow or overloaded machine): fewer chains instead of lost ones
    /// (`None`: it kept up at the rate set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_lowered_to: Option<u64>,
}

/// A site's sampled part: how many of its episodes were recorded, and the sampling error of its
/// blocked time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSample {
    /// Episodes recorded with their chains.
    pub episodes: u64,
    /// Half the 95% interval of [`OffCpuSite::total`] from sampling alone (the time ± this).
    pub error: Nanos,
}

/// Blocking episodes whose wake-up the kernel traced no `sched_wakeup` record of (such as I/O
/// waits of a task on a CPU that takes the disk's interrupts; docs/notes/tracing.md): they
/// end at the task's switch-in, so their time includes the wait for a CPU after the wake-up,
/// which the run-queue delay counts too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnwokenEpisodes {
    /// How many.
    pub count: u64,
    /// Their time inside the window.
    pub total: Nanos,
}

/// Blocked time spent at one cause: what the task blocked in, on what, from where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuSite {
    /// What the task blocked in: `futex` (a user lock or condition), `rwsem:read`,
    /// `rwsem:write`, `mutex` (kernel sleeping locks), `io`, `pipe`, `sleep`, `other` …
    pub kind: String,
    /// What it waited for: the kernel lock (symbol or address), the futex's user address, or
    /// the blocking call (`fsync`, `pipe_read`, `nanosleep`, …).
    pub object: String,
    /// Who blocked: the first user frame outside the C library's locking code for a futex,
    /// else the first kernel function outside the scheduler and lock code.
    pub caller: String,
    /// The kernel part of a representative call chain (the longest episode's), innermost
    /// first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The user part of the same chain, innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_stack: Vec<String>,
    /// Blocking episodes seen inside the window.
    pub count: u64,
    /// Summed blocked time.
    pub total: Nanos,
    /// The longest single episode.
    pub max: Nanos,
    /// What ended these waits (a command's: a lock hand-off, an I/O completion, a timer, an
    /// exit…), most time first; empty for a built-in and when absent from the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub woken_by: Vec<WokenShare>,
    /// With sampled call chains: the episodes recorded and the sampling error of `total`
    /// (`count` and `total` are then estimates; `None`: every episode was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SiteSample>,
    /// For workers' waits followed into a server of the system under test (`--server`,
    /// `--attach`): the server whose work this site is, and where the workers waited for it
    /// (`kind`, `object` and `caller` are then the server's: its wait, or `server-cpu` /
    /// `server-runq` for its time on or waiting for a CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<ChainVia>,
}

/// The `kind` of a followed site where the server's thread was on a CPU.
pub const SERVER_CPU: &str = "server-cpu";
/// The `kind` of a followed site where the server's thread waited for a CPU.
pub const SERVER_RUNQ: &str = "server-runq";

/// Where a site's waits were followed from: a server, and the workers' own wait.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChainVia {
    /// The name (`comm`) of the thread where the chain ended: a server's (`postgres`), or a
    /// kernel thread's (`jbd2/loop0-8`).
    pub server: String,
    /// The thread is a kernel thread that woke the workers (traced from then on), not a
    /// server's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_thread: bool,
    /// Where the workers waited for it: their own wait's blocking call and caller
    /// (`poll_schedule_timeout (other) from pgbench+0x11466`).
    pub waited_in: String,
}

/// Part of a site's blocked time, by what ended it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WokenShare {
    /// What ended the waits ("an I/O completion", "a futex wake by another thread (lock
    /// hand-off)"…).
    pub by: String,
    /// Their blocked time.
    pub total: Nanos,
}

/// One timed step of an external-command trial, accounted like a `time` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step's name (`cmd` for `--cmd` itself).
    pub name: String,
    /// Its wall time: from the command's start to its exit. Under `--profile`, the command's
    /// own, from its exec to its exit as `perf record` saw them (see
    /// [`StepRecord::wrapper_wall`]).
    pub wall: Nanos,
    /// Under `--profile`: the wall time of the `perf record` that wrapped the step, its
    /// start-up and write-out included (`None`: not profiled, or perf's records did not give
    /// the command's own span, and [`StepRecord::wall`] is this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapper_wall: Option<Nanos>,
    /// The step's whole process tree (wait4), not just the shell; under `--profile` without
    /// the `perf record` that wrapped it ([`StepRecord::perf_record_cpu`]).
    pub usage: Usage,
    /// What the `perf record` wrapping a profiled step used itself, taken out of
    /// [`StepRecord::usage`] (`None`: not profiled, or not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_record_cpu: Option<Nanos>,
    /// The CPU profile of this step's process tree (`--profile`, profiled trials only). The
    /// main command's is also the trial's [`TrialMeasurement::profile`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRef>,
    /// Lock contention of this step's process tree (`--locks`). The main command's is also the
    /// trial's [`TrialMeasurement::locks`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockReport>,
    /// Blocked time of this step's process tree (`--offcpu`). The main command's is also the
    /// trial's [`TrialMeasurement::offcpu`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<OffCpuReport>,
}

impl TrialMeasurement {
    /// Operations done by all tasks together.
    pub fn ops(&self) -> u64 {
        self.task_ops.iter().sum()
    }
    /// The work the trial did, in the units its X(N) counts: its ops, or for a command that
    /// reports a rate (`--metric`, higher is better) the rate times the window (MB for MB/sec).
    /// What `explain` and `profile` divide by for a cost per op (per MB). A lower-is-better
    /// figure (a time) is not a rate of work: such a trial's work is its ops (completions).
    pub fn work(&self) -> f64 {
        match self
            .reported
            .as_ref()
            .and_then(|r| Some((r, r.primary.as_ref()?)))
        {
            Some((r, p)) if p.direction == Direction::Higher => r
                .values
                .get(&p.name)
                .map_or(0.0, |v| v * self.window.as_secs_f64()),
            _ => self.ops() as f64,
        }
    }
    /// The trial's X: the command's primary `--metric` as a rate when it reported one (see
    /// [`Reported`]), else throughput over the window, total ops / window seconds.
    pub fn ops_per_sec(&self) -> f64 {
        if let Some(rate) = self.reported.as_ref().and_then(Reported::rate) {
            return rate;
        }
        self.ops_over_window()
    }
    /// Total ops / window seconds, whatever the command reported (the CSV's `ops_per_sec`).
    pub fn ops_over_window(&self) -> f64 {
        let secs = self.window.as_secs_f64();
        if secs > 0.0 {
            self.ops() as f64 / secs
        } else {
            0.0
        }
    }
    /// The total of counter `event` over the trial, where it was counted.
    pub fn counter(&self, event: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.event == event)
            .and_then(|c| c.value)
    }
}

/// getrusage-style accounting, in the units `time` printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// CPU time in user mode.
    pub user: Nanos,
    /// CPU time in the kernel.
    pub sys: Nanos,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Context switches the task asked for (blocking).
    pub voluntary_switches: u64,
    /// Context switches forced on the task (preemption).
    pub involuntary_switches: u64,
    /// Blocks read by the file system.
    pub block_in: u64,
    /// Blocks written by the file system.
    pub block_out: u64,
    /// Time the tasks spent runnable but waiting for a CPU over the window (run-queue delay:
    /// each task's share of its own span, from `/proc/thread-self/schedstat`, times the window;
    /// at most N × window); `None` where it was not measured (external commands, kernels
    /// without CONFIG_SCHED_INFO, or absent from the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay: Option<Nanos>,
    /// The largest resident set one process reached, in KiB (the kernel's `ru_maxrss`, as GNU
    /// `time` prints it): a high-water mark, not a counter, so two usages combine by the larger.
    /// A built-in task's reading is its process's peak since it started (in threads mode, the
    /// trial child's, scalelab's own few MiB included); a command step's is its process tree's
    /// largest process. `None` where not measured (a step `perf record` ran, whose own memory
    /// would be counted) or absent from the record (runs before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<u64>,
}

impl Usage {
    /// CPU time: user plus system.
    pub fn cpu(&self) -> Nanos {
        Nanos(self.user.0 + self.sys.0)
    }
    /// The sum of two usages, field by field (`max_rss_kib`, a high-water mark: the larger).
    pub fn add(&self, o: &Usage) -> Usage {
        Usage {
            user: Nanos(self.user.0 + o.user.0),
            sys: Nanos(self.sys.0 + o.sys.0),
            minor_faults: self.minor_faults + o.minor_faults,
            major_faults: self.major_faults + o.major_faults,
            voluntary_switches: self.voluntary_switches + o.voluntary_switches,
            involuntary_switches: self.involuntary_switches + o.involuntary_switches,
            block_in: self.block_in + o.block_in,
            block_out: self.block_out + o.block_out,
            run_delay: match (self.run_delay, o.run_delay) {
                (Some(a), Some(b)) => Some(Nanos(a.0 + b.0)),
                _ => None,
            },
            max_rss_kib: match (self.max_rss_kib, o.max_rss_kib) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// One hardware counter over a trial window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterValue {
    /// `cycles`, `instructions`, …
    pub event: String,
    /// Scaled count (value × enabled/running when multiplexed); `None` when unavailable.
    pub value: Option<u64>,
    /// True when the PMU time-shared the counter, so `value` is an estimate.
    pub multiplexed: bool,
    /// Why the value is missing, or a caveat (e.g. user space only).
    pub note: Option<String>,
}

/// One sampler reading: time since the window start and cumulative ops per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Time since the window's start.
    pub t: Nanos,
    /// Ops per task since the window's start.
    pub task_ops: Vec<u64>,
}

/// A run with all its trials: the unit of `show`, `export` and `import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// The run's description, fixed when it started.
    pub meta: RunMeta,
    /// Its trials, in execution order.
    pub trials: Vec<TrialRecord>,
}

/// The exported file: a versioned envelope around one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunExport {
    /// [`EXPORT_SCHEMA_VERSION`] of the scalelab that wrote the file.
    pub schema_version: u32,
    /// The scalelab version that wrote the file.
    pub tool_version: String,
    /// The run and every trial.
    pub run: RunData,
}

/// The file name of the `/proc/kallsyms` snapshot kept beside a profiled trial's perf.data
/// (kernel symbols are read from it, not from the machine that reads the profile).
pub const KALLSYMS: &str = "kallsyms";

/// The workload name of a run that measured an external command (`run --cmd`).
pub const COMMAND_WORKLOAD: &str = "cmd";

/// Version of the export JSON layout; bump on any incompatible change and teach `import` the old one.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;
