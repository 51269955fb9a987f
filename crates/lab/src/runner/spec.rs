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
    /// The system under test beyond the command's tree: `--server`s and `--attach`ed processes.
    #[serde(default, skip_serializing_if = "SystemSpec::is_empty")]
    pub system: SystemSpec,
}

/// What the command drives, traced with it (`--server`, `--ready`, `--attach`,
/// `--server-cpus`): started and stopped by scalelab, or already running.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SystemSpec {
    /// `--server CMD`: started (by `sh -c`) before the first trial, or before each point when
    /// one holds `{n}`; stopped after the last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// `--ready CMD`: run until it exits 0 once the servers started, before any trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    /// `--attach SPEC`: processes already running, found again at each trial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach: Vec<AttachSpec>,
    /// Where the servers run.
    #[serde(default)]
    pub server_cpus: ServerCpus,
}

impl SystemSpec {
    /// No server and nothing attached: the command's tree is the whole system.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.attach.is_empty()
    }
}

/// A process (or processes) `--attach` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachSpec {
    /// `pid:1234`: that process.
    Pid(u32),
    /// `comm:postgres`: every process of that name (its `comm`, at most 15 bytes).
    Comm(String),
    /// `cgroup:system.slice/postgresql.service`: every process in that cgroup (v2, under
    /// /sys/fs/cgroup) and the cgroups below it.
    Cgroup(String),
}

impl std::str::FromStr for AttachSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<AttachSpec, String> {
        let usage = "give pid:PID, comm:NAME or cgroup:PATH (e.g. pid:1234, comm:postgres, cgroup:system.slice/postgresql.service)";
        let Some((kind, value)) = text.split_once(':') else {
            return Err(format!("`{text}`: {usage}"));
        };
        if value.is_empty() {
            return Err(format!("`{text}`: nothing after `{kind}:`; {usage}"));
        }
        match kind {
            "pid" => match value.parse::<u32>() {
                Ok(pid) if pid > 0 => Ok(AttachSpec::Pid(pid)),
                _ => Err(format!("`{text}`: `{value}` is not a process id; {usage}")),
            },
            "comm" if value.len() > 15 => Err(format!(
                "`{text}`: a process name (comm) is at most 15 bytes; the kernel cuts longer ones, so give its first 15 (`{}`)",
                value.chars().take(15).collect::<String>()
            )),
            "comm" => Ok(AttachSpec::Comm(value.to_string())),
            "cgroup" if value.split('/').any(|c| c == "..") => {
                Err(format!("`{text}`: a cgroup path may not hold `..`"))
            }
            "cgroup" => Ok(AttachSpec::Cgroup(value.trim_matches('/').to_string())),
            _ => Err(format!("`{text}`: unknown kind `{kind}`; {usage}")),
        }
    }
}

impl std::fmt::Display for AttachSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttachSpec::Pid(p) => write!(f, "pid:{p}"),
            AttachSpec::Comm(c) => write!(f, "comm:{c}"),
            AttachSpec::Cgroup(c) => write!(f, "cgroup:{c}"),
        }
    }
}

/// Where `--server`s run, against the command's N CPUs (`--server-cpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerCpus {
    /// On the command's N CPUs, sharing them (a machine of N CPUs running both).
    #[default]
    Same,
    /// On the CPUs the command does not use (all of them when it uses every one).
    Rest,
    /// On every CPU scalelab may use.
    All,
}

impl ServerCpus {
    /// The CPUs a server runs on when the command has `command` of `usable`.
    pub fn cpus(self, command: &[usize], usable: &[usize]) -> Vec<usize> {
        match self {
            ServerCpus::Same => command.to_vec(),
            ServerCpus::All => usable.to_vec(),
            ServerCpus::Rest => {
                let rest: Vec<usize> = usable
                    .iter()
                    .copied()
                    .filter(|c| !command.contains(c))
                    .collect();
                if rest.is_empty() {
                    usable.to_vec()
                } else {
                    rest
                }
            }
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ServerCpus::Same => "same",
            ServerCpus::Rest => "rest",
            ServerCpus::All => "all",
        }
    }
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
            system: SystemSpec::default(),
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
