//! A bisection's settings — the repository and its ends, the build, what is measured and how
//! the verdicts are reached — stored as JSON with the bisection, so that `resume`, `next` and
//! `mark` go on exactly as it started; and the run plans each side of a step is measured with.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use stats::{CompareOptions, Direction};

use super::error::BisectError;
use crate::plan::{Plan, RunConfig};
use crate::runner::CommandSpec;
use analysis::comparison::{Comparison, TrialMetric, against_midpoint, compare_runs_on};
use model::record::Nanos;
use model::record::RunData;
use model::task_spec::TaskSpec;

/// What a bisection is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectSpec {
    /// The repository (its top folder, absolute).
    pub repo: PathBuf,
    /// The good end, as given (`--good`).
    pub good: String,
    /// The bad end, as given (`--bad`).
    pub bad: String,
    /// The build command, run by `sh -c` in a worktree; `None` with `--no-build`.
    pub build: Option<String>,
    /// A build still running after this long fails (and its commit is skipped).
    pub build_timeout: Nanos,
    /// What each side of a step measures.
    pub measure: Measure,
    /// Groups (one trial per side) at each N before the first look.
    pub runs: u32,
    /// Groups per N to grow to while a verdict is imprecise.
    pub max_runs: u32,
    /// Smallest relative change that matters (0.01 = 1%).
    pub threshold: f64,
    /// Significance level of the tests.
    pub alpha: f64,
    /// Seed of the random orders (each step draws from its own seed derived from it).
    pub seed: u64,
    /// The per-trial value compared.
    #[serde(default)]
    pub metric: TrialMetric,
}

/// What is measured at each side of a step: an external command (run in the side's worktree)
/// or a built-in workload, at the given task counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// The built-in workload; ignored with `command`.
    pub workload: String,
    /// The built-in workload's `-p KEY=VAL` parameters.
    pub params: Vec<(String, String)>,
    /// The external command (`--cmd`, `--prepare`, `--cleanup`, `--ops…`).
    pub command: Option<CommandSpec>,
    /// `--tasks`, as written.
    pub tasks: Option<String>,
    /// A command trial's limit.
    pub timeout: Option<Nanos>,
    /// A built-in trial's measured time.
    pub duration: Option<Nanos>,
    /// A built-in trial's warm-up.
    pub warmup: Option<Nanos>,
    /// `--tag KEY=VAL`, stored with every run.
    pub tags: Vec<(String, String)>,
}

/// Which side of a step a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Good,
    Commit,
    Bad,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Good => "good",
            Role::Commit => "commit",
            Role::Bad => "bad",
        }
    }
}

/// One side of a step: which role, which commit, where its build is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SideOf<'a> {
    pub role: Role,
    pub hash: &'a str,
    pub dir: Option<&'a Path>,
}

impl BisectSpec {
    /// The options the ends are judged with (higher is better for both metrics).
    pub fn options(&self) -> CompareOptions {
        self.options_at(self.threshold)
    }

    /// The options at `threshold` (a step's, which may be wider than `--threshold`).
    pub(crate) fn options_at(&self, threshold: f64) -> CompareOptions {
        CompareOptions {
            alpha: self.alpha,
            threshold,
            direction: Direction::HigherIsBetter,
            ..CompareOptions::default()
        }
    }

    /// Candidate `b` against baseline `a` as the bisection judges it: its metric and alpha,
    /// at `threshold`, paired when the runs were measured together.
    pub(crate) fn compare(&self, a: &RunData, b: &RunData, threshold: f64) -> Comparison {
        compare_runs_on(a, b, &self.options_at(threshold), true, self.metric.clone())
    }

    /// `candidate` against the midpoint of `good` and `bad` in each group they were measured
    /// in, N by N (see [`against_midpoint`]).
    pub(crate) fn midpoint(
        &self,
        good: &RunData,
        bad: &RunData,
        candidate: &RunData,
    ) -> Vec<(u32, Option<stats::Change>)> {
        against_midpoint(good, bad, candidate, &self.options_at(0.0), &self.metric)
    }

    /// The settings as stored.
    pub(crate) fn to_json(&self) -> Result<String, BisectError> {
        serde_json::to_string(self).map_err(|e| BisectError::Invalid(format!("encoding: {e}")))
    }

    /// The settings of bisection `id` from their stored JSON.
    pub(crate) fn from_json(id: i64, text: &str) -> Result<BisectSpec, BisectError> {
        serde_json::from_str(text).map_err(|e| BisectError::BadSpec {
            id,
            detail: e.to_string(),
        })
    }

    /// The seed of step `step`'s order: distinct per step, so two steps' runs never pass for
    /// partners of one experiment.
    pub(crate) fn step_seed(&self, step: u32) -> u64 {
        self.seed ^ u64::from(step).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// The plan of one side of step `step` of bisection `id`, at the N in `points` (all of
    /// `--tasks` when `None`), tagged so that `history`, `compare` and `ls --tag` find it.
    pub(crate) fn plan(
        &self,
        id: i64,
        step: u32,
        side: SideOf<'_>,
        points: Option<&[u32]>,
    ) -> Result<Plan, crate::error::LabError> {
        let m = &self.measure;
        let mut cfg = match &m.command {
            Some(command) => {
                let mut cfg = RunConfig::new("cmd");
                cfg.command = Some(CommandSpec {
                    dir: side.dir.map(Path::to_path_buf),
                    ..command.clone()
                });
                cfg.warmup = Nanos(0);
                cfg.timeout = m.timeout;
                cfg
            }
            None => {
                let mut cfg = RunConfig::new(&m.workload);
                cfg.params = m.params.clone();
                if let Some(d) = m.duration {
                    cfg.duration = d;
                }
                if let Some(w) = m.warmup {
                    cfg.warmup = w;
                }
                cfg
            }
        };
        let tasks = match points {
            Some(ns) => Some(model::number_text::comma_list(ns)),
            None => m.tasks.clone(),
        };
        cfg.tasks = tasks.map(|t| t.parse::<TaskSpec>()).transpose()?;
        cfg.trials_per_point = self.runs;
        cfg.variant = Some(side.role.name().to_string());
        cfg.tags = m.tags.clone();
        cfg.tags.extend([
            ("bisect".to_string(), id.to_string()),
            ("bisect_step".to_string(), step.to_string()),
            ("bisect_role".to_string(), side.role.name().to_string()),
            ("commit".to_string(), side.hash.to_string()),
        ]);
        cfg.name = Some(format!(
            "bisect {id} step {step} {}",
            model::bisection::short(side.hash)
        ));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Plan::new(cfg, cpus)
    }
}
