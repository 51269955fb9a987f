//! What a bisection found, as `scalelab bisect` prints it and `report --bisect` draws it: the
//! answer (`first bad commit: <hash> <subject>`, as git bisect says it), the change measured at
//! it with its interval, its neighbours' verdicts, and every step with its comparisons against
//! both ends — each recomputed from the stored runs with the bisection's threshold and alpha
//! (paired where the runs were measured together), never stored as figures.
//!
//! The types, and each step's verdict from its comparisons ([`decide`], pure); the engine's
//! `bisect` drives the search, loads the bisection and its runs and builds the view.

pub mod decide;

use serde::Serialize;
use stats::Change;

use model::bisection::{BisectCommit, BisectStatus, StepVerdict};

/// A bisection, read.
#[derive(Debug, Clone, Serialize)]
pub struct BisectView {
    /// Its id.
    pub id: i64,
    /// The repository.
    pub repo: String,
    /// `--good` as given, and the commit it named.
    pub good_spec: String,
    /// `--bad` as given.
    pub bad_spec: String,
    /// The range, good end first.
    pub commits: Vec<BisectCommit>,
    /// Where it stands.
    pub status: BisectStatus,
    /// The build command (`None`: `--no-build`).
    pub build: Option<String>,
    /// What was measured: the command, or the built-in workload.
    pub measured: String,
    /// What each trial contributes (`ops_per_cpu_sec`, `throughput`).
    pub metric: String,
    /// Smallest change that matters (a fraction): the ends are judged at it.
    pub threshold: f64,
    /// The threshold the steps judged commits at: `threshold`, or half the gap between the ends
    /// when larger.
    pub step_threshold: f64,
    /// Significance level.
    pub alpha: f64,
    /// The N bisected: where the bad end REGRESSED.
    pub at: Vec<u32>,
    /// Step 0: the ends' comparison (the bad end against the good end).
    pub ends: Option<StepView>,
    /// The commits tested, in order.
    pub steps: Vec<StepView>,
    /// The first bad commit, when found.
    pub first_bad: Option<Answer>,
    /// When only skipped commits were left: the first bad commit is one of these.
    pub candidates: Vec<BisectCommit>,
    /// Bad verdicts below a good one, as (bad, good) positions: more than one change, or a
    /// wrong step.
    pub contradictions: Vec<(u32, u32)>,
    /// Commits skipped.
    pub skips: usize,
    /// Time spent building and measuring, over every step (nanoseconds).
    pub elapsed_ns: u64,
    /// When it began and ended, RFC 3339 UTC.
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
}

/// One step: the commit, its verdict and its comparisons at each bisected N.
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    /// The step's number (0: the ends).
    pub step: u32,
    /// The commit tested (the bad end for step 0).
    pub commit: BisectCommit,
    /// What was decided.
    pub verdict: StepVerdict,
    /// Why skipped or refused.
    pub reason: Option<String>,
    /// The commit against the good end, per N (step 0: the bad end against the good end).
    pub vs_good: Vec<PointChange>,
    /// The commit against the bad end, per N (empty for step 0).
    pub vs_bad: Vec<PointChange>,
    /// Groups (trials per side) measured at each N.
    pub runs: u32,
    /// The runs: good end, commit, bad end.
    pub run_good: Option<i64>,
    /// The commit's run.
    pub run_commit: Option<i64>,
    /// The bad end's run.
    pub run_bad: Option<i64>,
    /// The build's log.
    pub build_log: Option<String>,
    /// The whole step's time (nanoseconds).
    pub elapsed_ns: Option<u64>,
}

/// A comparison at one N.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PointChange {
    /// The task count.
    pub n: u32,
    /// The statistics (`None` when a side had no successful trial).
    pub change: Option<Change>,
    /// Whether the trials were judged in back-to-back groups.
    pub paired: bool,
}

/// The first bad commit and what surrounds it.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// The commit.
    pub commit: BisectCommit,
    /// The step that judged it bad (step 0 when it is the bad end).
    pub judged: Option<StepView>,
    /// The commit before it, judged good (step 0 when it is the good end).
    pub parent: Option<StepView>,
    /// The nearest commit after it that was tested, when one was.
    pub after: Option<StepView>,
}
