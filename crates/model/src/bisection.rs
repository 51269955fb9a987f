//! A bisection as stored (`scalelab bisect`): its status, the commits of its range and each
//! step's verdict with the ids of the runs it measured. The store reads and writes these; the
//! analysis reads them into what `bisect` prints and `report --bisect` draws.

/// Where a bisection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BisectStatus {
    /// Steps remain (or its process was stopped: `--resume` continues it).
    Running,
    /// The first bad commit was found.
    Found,
    /// The bad end is not REGRESSED against the good end: nothing to bisect.
    NotRegression,
    /// Only skipped commits are left between the last good and the first bad commit.
    Unresolved,
    /// An error ended it (an end did not build, or measured nothing).
    Failed,
}

impl BisectStatus {
    /// The word it is stored as.
    pub fn as_str(self) -> &'static str {
        match self {
            BisectStatus::Running => "running",
            BisectStatus::Found => "found",
            BisectStatus::NotRegression => "not_regression",
            BisectStatus::Unresolved => "unresolved",
            BisectStatus::Failed => "failed",
        }
    }

    /// The status stored as `text`.
    pub fn parse(text: &str) -> Option<BisectStatus> {
        Some(match text {
            "running" => BisectStatus::Running,
            "found" => BisectStatus::Found,
            "not_regression" => BisectStatus::NotRegression,
            "unresolved" => BisectStatus::Unresolved,
            "failed" => BisectStatus::Failed,
            _ => return None,
        })
    }

    /// Whether the bisection has its answer (or its refusal) and no step remains.
    pub fn is_finished(self) -> bool {
        self != BisectStatus::Running
    }
}

impl std::fmt::Display for BisectStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str().replace('_', " "))
    }
}

/// What a step decided about its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// Being built or measured (a step left so by a crash is redone).
    Measuring,
    /// As fast as the good end (NO CHANGE against it).
    Good,
    /// As slow as the bad end (NO CHANGE against it, REGRESSED against the good end).
    Bad,
    /// Not decided: the build failed, or the measurements stayed undecided (git bisect's skip).
    Skip,
    /// Step 0: the bad end REGRESSED against the good end.
    Regressed,
    /// Step 0: the bad end did not REGRESS against the good end.
    NotRegressed,
}

impl StepVerdict {
    /// The word it is stored as.
    pub fn as_str(self) -> &'static str {
        match self {
            StepVerdict::Measuring => "measuring",
            StepVerdict::Good => "good",
            StepVerdict::Bad => "bad",
            StepVerdict::Skip => "skip",
            StepVerdict::Regressed => "regressed",
            StepVerdict::NotRegressed => "not_regressed",
        }
    }

    /// The verdict stored as `text`.
    pub fn parse(text: &str) -> Option<StepVerdict> {
        Some(match text {
            "measuring" => StepVerdict::Measuring,
            "good" => StepVerdict::Good,
            "bad" => StepVerdict::Bad,
            "skip" => StepVerdict::Skip,
            "regressed" => StepVerdict::Regressed,
            "not_regressed" => StepVerdict::NotRegressed,
            _ => return None,
        })
    }
}

impl std::fmt::Display for StepVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str().replace('_', " "))
    }
}

/// One commit of a bisection's range.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BisectCommit {
    /// 0 is the good end, the last the bad end (first-parent order, oldest first).
    pub position: u32,
    /// The full hash.
    pub hash: String,
    /// The first line of its message.
    pub subject: String,
}

/// One step of a bisection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BisectStep {
    /// 0 for the ends' confirmation, then 1, 2, … in the order commits were tested.
    pub step: u32,
    /// The position of the commit tested (the bad end's for step 0).
    pub position: u32,
    /// What was decided.
    pub verdict: StepVerdict,
    /// Why a commit was skipped or the range refused, in words; `None` otherwise.
    pub reason: Option<String>,
    /// The good end's run measured with this step.
    pub run_good: Option<i64>,
    /// The commit's run (`None` for step 0 and for a commit that did not build).
    pub run_commit: Option<i64>,
    /// The bad end's run measured with this step.
    pub run_bad: Option<i64>,
    /// The build's log, kept (`None` without a build).
    pub build_log: Option<String>,
    /// How long the build took, in nanoseconds.
    pub build_ns: Option<u64>,
    /// How long the whole step took (build and measurements), in nanoseconds.
    pub elapsed_ns: Option<u64>,
    /// When the step began, RFC 3339 UTC.
    pub started_at: String,
    /// When it was decided.
    pub finished_at: Option<String>,
}

/// A bisection as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BisectRecord {
    /// Its id.
    pub id: i64,
    /// Its settings, as the JSON the bisection wrote.
    pub spec: String,
    /// The good end's full hash.
    pub good: String,
    /// The bad end's full hash.
    pub bad: String,
    /// Where it stands.
    pub status: BisectStatus,
    /// When it began, RFC 3339 UTC.
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
    /// Whether the process driving it still runs (a `running` bisection whose owner is gone
    /// was stopped: `--resume` continues it).
    pub owner_alive: bool,
    /// The range, good end first.
    pub commits: Vec<BisectCommit>,
    /// The steps, in order.
    pub steps: Vec<BisectStep>,
}

/// A hash shortened as git shows it.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(10)]
}
