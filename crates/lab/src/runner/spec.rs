//! What one trial is asked to do, in one place: [`TrialSpec`] — the task count, the work (a
//! built-in workload run by a trial child, or an external command: [`Work`]) and what observes
//! it (lock tracing, a CPU profile).
//!
//! Pure data: the executors ([`ChildExecutor`](super::executor::ChildExecutor),
//! [`CommandExecutor`](super::command::CommandExecutor)) and the trial child read it; the plan writes it.
//! Nothing here imports them, so dependencies run one way. A built-in trial travels to its child
//! as JSON on stdin.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::locks::LockRequest;
use crate::offcpu::OffCpuRequest;
use crate::profile::ProfileRequest;
use model::record::{Membind, Mode, Nanos, Pin};

/// One trial: N tasks doing some work, maybe observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialSpec {
    /// The point's task count N.
    pub tasks: u32,
    /// What the tasks do.
    pub work: Work,
    /// `--locks`: trace kernel and/or user lock contention during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockRequest>,
    /// `--offcpu`: trace when the tasks block, with call chains, during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<OffCpuRequest>,
    /// `--profile`: record this trial under `perf record` (set only for the profiled trials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRequest>,
}

/// The work of a trial: a built-in workload or an external command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
// One per trial, moved once: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Work {
    /// A built-in workload, run in a fresh trial child.
    Builtin(BuiltinWork),
    /// An external command and its steps, run by `sh -c`.
    Command(CommandSpec),
}

/// A built-in workload's trial: which workload, how its tasks are made and placed, and the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltinWork {
    /// The workload's name.
    pub workload: String,
    /// Its validated parameters, defaults filled in.
    pub params: BTreeMap<String, String>,
    /// Tasks as threads of the trial child or as forked processes.
    pub mode: Mode,
    /// How tasks are pinned to CPUs.
    pub pin: Pin,
    /// Where the tasks' memory comes from (`first-touch` in specs from before it existed).
    #[serde(default)]
    pub membind: Membind,
    /// Time the tasks run before the window opens.
    pub warmup: Nanos,
    /// The measurement window.
    pub duration: Nanos,
    /// How often the sampler reads the tasks' op counters inside the window.
    pub sample_interval: Nanos,
    /// Whether to count cycles and instructions with hardware counters.
    pub counters: bool,
    /// The trial's scratch directory, for workloads that use files.
    pub workdir: Option<PathBuf>,
}

/// How a command trial counts its ops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsSource {
    /// One op per trial: throughput is 1 / wall.
    Completion,
    /// A known amount of work per trial.
    Fixed(u64),
    /// Read from the timed steps' stdout.
    Regex(String),
}

/// An external-command workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Timed steps in order, `(name, command)`; the first is `--cmd` itself, named `cmd`.
    pub steps: Vec<(String, String)>,
    /// `--prepare`: run before the timed steps, not timed.
    pub prepare: Option<String>,
    /// `--cleanup`: run after the timed steps (also after a failed one), not timed.
    pub cleanup: Option<String>,
    /// How the trial's ops are counted.
    pub ops: OpsSource,
    /// The directory every step runs in (`bisect` runs a build's own `./bench` in its
    /// worktree); `None`: scalelab's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// `--metric`s read from the output, the primary (X(N)) first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<model::metric::MetricSpec>,
    /// `--primary ops`: X(N) stays ops per second; the metrics are read and kept beside it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ops_primary: bool,
}

#[cfg(test)]
impl CommandSpec {
    /// One timed step, `cmd`, one op per trial; no prepare, cleanup or metric.
    pub(crate) fn one_step(cmd: &str) -> CommandSpec {
        CommandSpec {
            steps: vec![("cmd".into(), cmd.into())],
            prepare: None,
            cleanup: None,
            ops: OpsSource::Completion,
            dir: None,
            metrics: Vec::new(),
            ops_primary: false,
        }
    }
}

impl TrialSpec {
    /// The built-in workload, when this trial runs one.
    pub(crate) fn builtin(&self) -> Option<&BuiltinWork> {
        match &self.work {
            Work::Builtin(b) => Some(b),
            Work::Command(_) => None,
        }
    }

    /// The command, when this trial runs one.
    pub(crate) fn command(&self) -> Option<&CommandSpec> {
        match &self.work {
            Work::Command(c) => Some(c),
            Work::Builtin(_) => None,
        }
    }
}
