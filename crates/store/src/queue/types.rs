//! The queue's types (jobs, schedules, agents, what a claim and a reaping return), the server's
//! clock and the transaction helpers that every file of the queue shares. No SQL of a use case
//! here: each lives in the file of its concern.

use serde::Serialize;

use super::events::JobEvent;
use crate::backend::Tx;
use crate::error::StoreError;
use crate::handle::Store;
use crate::schema::APPLICATION_ID;
use model::record::RunStatus;

/// The first key of every agent's lock; the second is random, recorded in its row. (Run locks
/// use `APPLICATION_ID`; this class is the next one.)
pub(super) const AGENT_LOCK_CLASS: i32 = APPLICATION_ID + 1;

/// The most attempts a job may allow (`submit --attempts` allows 100).
pub(super) const MAX_ATTEMPTS: i64 = 10_000;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for an agent of its class.
    Queued,
    /// An agent holds it (under a lease).
    Running,
    /// Its agent ran it to the end; its runs are stored.
    Done,
    /// It failed, or its attempts were spent; `outcome` says why.
    Failed,
    /// Cancelled by `scalelab queue cancel`.
    Cancelled,
}

impl JobState {
    /// The state as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub(super) fn parse(text: &str) -> Option<JobState> {
        Some(match text {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }

    /// Whether nothing will happen to it any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

/// A job to submit.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// The scalelab arguments an agent runs (`run page_fault --tasks all …`), already checked
    /// to parse.
    pub args: Vec<String>,
    /// The machine class filter's canonical text (`any`, `host=NAME`, `cpus>=32,arch=x86_64`).
    pub target: String,
    /// Whether the arguments carry a shell command (`run --cmd`, `ab`).
    pub carries_cmd: bool,
    /// Attempts before a job whose agents keep dying is failed.
    pub max_attempts: u32,
    /// Run `history --check` on the job's series after it (`submit --check-history`).
    pub check_history: bool,
    /// `submit --timeout` in ms; `None`: the agent derives one from the plan.
    pub timeout_ms: Option<i64>,
    /// The submitting OS user (the client's word; the database role is the server's).
    pub user: String,
    /// The submitting host (the client's word).
    pub host: String,
}

/// A run a job stored (tagged `job=ID`), with its derived status.
#[derive(Debug, Clone, Serialize)]
pub struct JobRun {
    /// Run id.
    pub id: i64,
    /// Its status as a reader sees it (`incomplete` when its writer is gone).
    pub status: RunStatus,
    /// The attempt that stored it (its `job_attempt` tag).
    pub attempt: Option<u32>,
}

/// A job as `queue` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// Job id.
    pub id: i64,
    /// The scalelab arguments it runs (empty when they are malformed).
    pub args: Vec<String>,
    /// Its machine class filter.
    pub target: String,
    /// Whether it carries a shell command.
    pub carries_cmd: bool,
    /// Where it is.
    pub state: JobState,
    /// Times an agent took it.
    pub attempts: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// Its `submit --timeout` in ms, if it has one.
    pub timeout_ms: Option<i64>,
    /// The host of the agent that holds (or last held) it.
    pub agent: Option<String>,
    /// While running: ms left on its lease (negative: run out, not yet taken back).
    pub lease_left_ms: Option<i64>,
    /// When it was submitted (server clock, ms since the epoch).
    pub submitted_at_ms: i64,
    /// When its last attempt started.
    pub started_at_ms: Option<i64>,
    /// When it ended.
    pub finished_at_ms: Option<i64>,
    /// Who submitted it: the database role (the server's), OS user and host (the client's).
    pub submitter: serde_json::Value,
    /// Done: `ok` or `regressed`; failed or cancelled: why.
    pub outcome: Option<String>,
    /// What happened to it, oldest first (the newest [`events::SHOWN_EVENTS`]).
    pub log: Vec<JobEvent>,
    /// Whether `history --check` follows it.
    pub check_history: bool,
    /// The recurring job that queued it.
    pub schedule_id: Option<i64>,
    /// The runs it stored.
    pub runs: Vec<JobRun>,
    /// What makes the row one scalelab would never write (its arguments are not a JSON list
    /// of strings, an attempt count out of range, …); `None` for a sound row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

/// A recurring job (`submit --every`).
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// Schedule id.
    pub id: i64,
    /// When it comes due (`mon 03:00`, UTC), as stored.
    pub every: String,
    /// The scalelab arguments each job runs (empty when malformed).
    pub args: Vec<String>,
    /// Its machine class filter.
    pub target: String,
    /// Whether `history --check` follows each job.
    pub check_history: bool,
    /// Each job's `--timeout` in ms, if any.
    pub timeout_ms: Option<i64>,
    /// Its next occurrence (ms since the epoch).
    pub next_at_ms: i64,
    /// False once stopped.
    pub active: bool,
    /// Why an agent stopped it (a malformed row, a duplicate); `None` when it was not.
    pub stopped_why: Option<String>,
    /// Who submitted it.
    pub submitter: serde_json::Value,
    /// The jobs it queued, oldest first.
    pub jobs: Vec<i64>,
    /// What makes the row one scalelab would never write; `None` for a sound row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

/// An agent as `queue` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    /// Its host (the name jobs are targeted with by `--host`).
    pub host: String,
    /// Its machine class (JSON `AgentClass`).
    pub class: serde_json::Value,
    /// Which commands it runs.
    pub allow: String,
    /// Its process id on its host.
    pub pid: i64,
    /// When it started (server ms).
    pub started_at_ms: i64,
    /// Its last heartbeat (server ms).
    pub heartbeat_at_ms: i64,
    /// The job it runs now.
    pub job_id: Option<i64>,
    /// The longest it lets a job run (`agent --max-job-time`), ms.
    pub max_job_ms: Option<i64>,
    /// Whether its connection (and so the agent) is alive: it holds its lock.
    pub alive: bool,
}

/// A queued job shown to an agent deciding whether to take it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Job id.
    pub id: i64,
    /// The arguments it runs.
    pub args: Vec<String>,
    /// Its machine class filter.
    pub target: String,
    /// Whether it carries a shell command.
    pub carries_cmd: bool,
    /// Its `submit --timeout` in ms, if any.
    pub timeout_ms: Option<i64>,
}

/// An agent's judgement of a queued job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It may run it: take it.
    Take,
    /// Not for this agent (another class): leave it.
    Skip,
    /// Its class, but this agent will not run it (a command it does not allow): note why in the
    /// job's log, and fail the job when it was sent to this host alone.
    Refuse(String),
}

/// A job an agent took.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// Job id.
    pub id: i64,
    /// The arguments to run.
    pub args: Vec<String>,
    /// Which attempt this is (1 for the first).
    pub attempt: u32,
    /// Whether `history --check` follows it.
    pub check_history: bool,
    /// Its `submit --timeout` in ms, if any.
    pub timeout_ms: Option<i64>,
}

/// What [`Store::reap_jobs`] did to a job whose agent was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Job id.
    pub id: i64,
    /// Queued again (`Queued`) or failed (`Failed`).
    pub now: JobState,
    /// Why its agent was judged lost.
    pub why: String,
}

/// The server's clock, ms since the epoch.
pub(super) fn now_ms(tx: &mut Tx<'_, '_>) -> Result<i64, StoreError> {
    tx.query_one(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
        &[],
    )?
    .int(0)
}

impl Store {
    /// Runs `f` in one write transaction on the queue, refused on a SQLite file.
    pub(super) fn queue_write<T>(
        &mut self,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.require_postgres()?;
        self.db.write(&self.location, f)
    }

    pub(super) fn queue_read<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.require_postgres()?;
        self.db.read(&self.location, f)
    }

    pub(super) fn require_postgres(&self) -> Result<(), StoreError> {
        if self.location.is_postgres() {
            Ok(())
        } else {
            Err(StoreError::QueueNeedsPostgres {
                db: self.location.to_string(),
            })
        }
    }
}
