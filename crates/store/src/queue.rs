//! The lab's job queue, kept in the team's PostgreSQL store: jobs submitted to a machine class
//! (`scalelab submit`), taken by the agents on the lab's machines (`scalelab agent`), read back
//! by `scalelab queue`. No server of its own: the store every agent already reaches is the
//! queue, as Compass-CI, Pinpoint and Bencher keep theirs in a database.
//!
//! Written here, not taken from a crate: the queue crates on PostgreSQL for Rust (`sqlxmq`,
//! `graphile_worker`, `apalis-sql`) are async, bring `sqlx` and their own schema and workers,
//! and know nothing of machine classes, leases judged against a host's lock, or a run's tags;
//! the pattern itself is a few statements.
//!
//! **Claiming** is `SELECT … FOR UPDATE SKIP LOCKED` on one candidate row at a time, in the
//! order submitted, inside one transaction: two agents never take the same job, and an agent
//! never waits for a row another is taking. Which job an agent may take (its class, its
//! allow-list) is its own judgement ([`Verdict`]), made on the candidates read first.
//!
//! **Leases**: a running job carries `lease_until` on the server's clock, renewed by its agent's
//! heartbeat ([`Store::heartbeat`]). Each agent holds, for its whole life, a session-level
//! advisory lock `(AGENT_LOCK_CLASS, agent id)` on its own connection: the server drops it the
//! moment that connection ends (kill -9, power loss), so [`Store::reap_jobs`] takes a job back
//! when its lease has run out *or* its agent's lock is gone, whichever comes first. A job taken
//! back is queued again for its next attempt, or failed with the reason once its attempts are
//! spent. The same lock keeps one agent per host.
//!
//! Every time is the server's (ms since the epoch, read once per transaction), so that agents
//! with skewed clocks judge leases alike. The queue needs PostgreSQL; on a SQLite file each call
//! says so.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::backend::{Row, Tx, vals};
use crate::error::StoreError;
use crate::handle::Store;
use crate::schema::APPLICATION_ID;
use model::record::RunStatus;
use model::schedule::Every;

/// The first key of every agent's lock; the second is its row id. (Run locks use
/// `APPLICATION_ID`; this class is the next one.)
const AGENT_LOCK_CLASS: i64 = APPLICATION_ID as i64 + 1;

/// The longest log a job keeps (bytes): past it, the oldest lines go.
const MAX_LOG_BYTES: usize = 64 * 1024;

/// Candidates read per claim at most: the oldest queued jobs, judged in order.
const CLAIM_WINDOW: i64 = 512;

/// Candidates read per page of a claim.
const CLAIM_PAGE: i64 = 64;

/// Acceptable candidates that end the reading: one of them is free unless as many agents are
/// claiming at this very moment.
const ENOUGH_CANDIDATES: usize = 32;

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

    fn parse(text: &str) -> Result<JobState, StoreError> {
        Ok(match text {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            other => {
                return Err(StoreError::Column {
                    index: 0,
                    detail: format!("job state {other:?}, which scalelab never writes"),
                });
            }
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
    /// The submitting OS user and host (the database role is the server's `current_user`).
    pub user: String,
    /// The submitting host.
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
    /// The scalelab arguments it runs.
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
    /// Who submitted it: database role, OS user, host.
    pub submitter: serde_json::Value,
    /// Done: `ok` or `regressed`; failed or cancelled: why.
    pub outcome: Option<String>,
    /// What happened to it, one line per event (`<ms> text`).
    pub log: Vec<String>,
    /// Whether `history --check` follows it.
    pub check_history: bool,
    /// The recurring job that queued it.
    pub schedule_id: Option<i64>,
    /// The runs it stored.
    pub runs: Vec<JobRun>,
}

/// A recurring job (`submit --every`).
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// Schedule id.
    pub id: i64,
    /// When it comes due (`mon 03:00`, UTC).
    pub every: String,
    /// The scalelab arguments each job runs.
    pub args: Vec<String>,
    /// Its machine class filter.
    pub target: String,
    /// Whether `history --check` follows each job.
    pub check_history: bool,
    /// Its next occurrence (ms since the epoch).
    pub next_at_ms: i64,
    /// False once stopped.
    pub active: bool,
    /// Who submitted it.
    pub submitter: serde_json::Value,
    /// The jobs it queued, oldest first.
    pub jobs: Vec<i64>,
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
const NOW_MS: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";

fn now_ms(tx: &mut Tx<'_, '_>) -> Result<i64, StoreError> {
    tx.query_one(NOW_MS, &[])?.int(0)
}

/// The agents whose lock is held now in this database (their row ids; another database's agent
/// of the same id is not this one).
fn live_agents(tx: &mut Tx<'_, '_>) -> Result<HashSet<i64>, StoreError> {
    let rows = tx.query(
        "SELECT objid::bigint FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid::bigint = ?1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        vals![AGENT_LOCK_CLASS],
    )?;
    rows.iter().map(|r| r.int(0)).collect()
}

/// Appends `line` (stamped `now`) to job `id`'s log, dropping its oldest lines past the bound.
fn log_line(tx: &mut Tx<'_, '_>, id: i64, now: i64, line: &str) -> Result<(), StoreError> {
    let old = tx
        .query_opt("SELECT log FROM jobs WHERE id = ?1", vals![id])?
        .map(|r| r.text(0))
        .transpose()?
        .unwrap_or_default();
    let mut log = old + &format!("{now} {line}\n");
    while log.len() > MAX_LOG_BYTES {
        match log.find('\n') {
            Some(end) => log.drain(..=end),
            None => break,
        };
    }
    tx.execute("UPDATE jobs SET log = ?2 WHERE id = ?1", vals![id, log])?;
    Ok(())
}

/// Takes job `id` back from its lost agent (`why`): queued for its next attempt, or failed once
/// `attempts` reached `max`. Returns where it is now.
fn take_back(
    tx: &mut Tx<'_, '_>,
    id: i64,
    attempts: u32,
    max: u32,
    why: &str,
    now: i64,
) -> Result<JobState, StoreError> {
    let state = if attempts >= max {
        let outcome = format!("{why}; {attempts} of {max} attempts spent");
        tx.execute(
            "UPDATE jobs SET state = 'failed', outcome = ?2, finished_at = ?3, lease_until = NULL
             WHERE id = ?1",
            vals![id, outcome, now],
        )?;
        JobState::Failed
    } else {
        tx.execute(
            "UPDATE jobs SET state = 'queued', lease_until = NULL WHERE id = ?1",
            vals![id],
        )?;
        JobState::Queued
    };
    log_line(tx, id, now, &format!("{why}; now {}", state.as_str()))?;
    Ok(state)
}

fn encode_args(args: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(args).map_err(|source| StoreError::Encode {
        what: "a job's arguments",
        source,
    })
}

/// The submitter as stored (JSON: database role, OS user, host) and as shown.
fn submitter(tx: &mut Tx<'_, '_>, job: &NewJob) -> Result<(String, String), StoreError> {
    let role = tx.query_one("SELECT current_user::text", &[])?.text(0)?;
    let stored = serde_json::json!({"role": role, "user": job.user, "host": job.host}).to_string();
    Ok((stored, format!("{role} ({}@{})", job.user, job.host)))
}

/// Inserts a queued job; `None` when its schedule's occurrence is already queued.
fn insert_job(
    tx: &mut Tx<'_, '_>,
    job: &NewJob,
    args: &str,
    submitter: &str,
    now: i64,
    occurrence: Option<(i64, i64)>,
) -> Result<Option<i64>, StoreError> {
    let row = tx.query_opt(
        "INSERT INTO jobs (args, target, carries_cmd, state, attempts, max_attempts,
             submitted_at, submitter, log, check_history, schedule_id, occurrence)
         VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, '', ?7, ?8, ?9)
         ON CONFLICT (schedule_id, occurrence) DO NOTHING RETURNING id",
        vals![
            args,
            job.target.as_str(),
            i64::from(job.carries_cmd),
            job.max_attempts,
            now,
            submitter,
            i64::from(job.check_history),
            occurrence.map(|o| o.0),
            occurrence.map(|o| o.1)
        ],
    )?;
    row.map(|r| r.int(0)).transpose()
}

/// Notes in `job`'s log that the agent of `host` refuses it (once per agent: a job already
/// carrying the line, or locked by another agent now, is left alone), and fails it when it was
/// sent to `host` alone.
fn refuse(
    tx: &mut Tx<'_, '_>,
    job: &Candidate,
    host: &str,
    why: &str,
    now: i64,
) -> Result<(), StoreError> {
    let line = format!("refused by {host}: {why}");
    let alone = job.target == format!("host={host}");
    let fresh = tx.query_opt(
        "SELECT id FROM jobs WHERE id = ?1 AND state = 'queued' AND (?3 = 1 OR strpos(log, ?2) = 0)
         FOR UPDATE SKIP LOCKED",
        vals![job.id, line.as_str(), i64::from(alone)],
    )?;
    if fresh.is_none() {
        return Ok(());
    }
    if alone {
        tx.execute(
            "UPDATE jobs SET state = 'failed', outcome = ?2, finished_at = ?3 WHERE id = ?1",
            vals![job.id, line.as_str(), now],
        )?;
    }
    log_line(tx, job.id, now, &line)
}

fn json_args(text: &str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Column {
        index: 0,
        detail: format!("a job's arguments are not a JSON list of strings: {e}"),
    })
}

const JOB_COLUMNS: &str = "id, args, target, carries_cmd, state, attempts, max_attempts, agent,
    lease_until, submitted_at, started_at, finished_at, submitter, outcome, log, check_history,
    schedule_id";

fn job_from_row(r: &Row, now: i64) -> Result<Job, StoreError> {
    let state = JobState::parse(&r.text(4)?)?;
    Ok(Job {
        id: r.int(0)?,
        args: json_args(&r.text(1)?)?,
        target: r.text(2)?,
        carries_cmd: r.int(3)? != 0,
        state,
        attempts: r.u32(5)?,
        max_attempts: r.u32(6)?,
        agent: r.opt_text(7)?,
        lease_left_ms: r
            .opt_int(8)?
            .filter(|_| state == JobState::Running)
            .map(|until| until - now),
        submitted_at_ms: r.int(9)?,
        started_at_ms: r.opt_int(10)?,
        finished_at_ms: r.opt_int(11)?,
        submitter: serde_json::from_str(&r.text(12)?).unwrap_or(serde_json::Value::Null),
        outcome: r.opt_text(13)?,
        log: r.text(14)?.lines().map(str::to_owned).collect(),
        check_history: r.int(15)? != 0,
        schedule_id: r.opt_int(16)?,
        runs: Vec::new(),
    })
}

impl Store {
    /// Runs `f` in one write transaction on the queue, refused on a SQLite file.
    fn queue_write<T>(
        &mut self,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.require_postgres()?;
        self.db.write(&self.location, f)
    }

    fn queue_read<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.require_postgres()?;
        self.db.read(&self.location, f)
    }

    fn require_postgres(&self) -> Result<(), StoreError> {
        if self.location.is_postgres() {
            Ok(())
        } else {
            Err(StoreError::QueueNeedsPostgres {
                db: self.location.to_string(),
            })
        }
    }

    /// Queues `job`; returns its id.
    pub fn submit_job(&mut self, job: &NewJob) -> Result<i64, StoreError> {
        let args = encode_args(&job.args)?;
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let (submitter, who) = submitter(tx, job)?;
            // Only a schedule's occurrence can conflict: a plain job always goes in.
            let id = insert_job(tx, job, &args, &submitter, now, None)?.ok_or_else(|| {
                StoreError::Column {
                    index: 0,
                    detail: "a job without a schedule was refused as a duplicate".into(),
                }
            })?;
            log_line(tx, id, now, &format!("submitted by {who}"))?;
            Ok(id)
        })
    }

    /// Queues `job` at every occurrence of `every` (UTC), from the next one on; returns the
    /// schedule's id. Any agent's loop queues each occurrence once it is due
    /// ([`Store::queue_due`]).
    pub fn schedule_job(&mut self, job: &NewJob, every: &Every) -> Result<(i64, i64), StoreError> {
        let args = encode_args(&job.args)?;
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let (submitter, _) = submitter(tx, job)?;
            let next = every.next_after(now);
            let id = tx
                .query_one(
                    "INSERT INTO schedules (every, args, target, carries_cmd, max_attempts,
                         check_history, submitter, created_at, next_at, active)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1) RETURNING id",
                    vals![
                        every.to_string(),
                        args,
                        job.target.as_str(),
                        i64::from(job.carries_cmd),
                        job.max_attempts,
                        i64::from(job.check_history),
                        submitter,
                        now,
                        next
                    ],
                )?
                .int(0)?;
            Ok((id, next))
        })
    }

    /// Queues one job for each active schedule whose next occurrence is at or before `now`
    /// (ms since the epoch; `None`: the server's clock), and moves it to its first occurrence
    /// after `now` (occurrences missed while no agent looked are queued once, not each).
    /// Safe from every agent at once: a schedule another agent is queuing is skipped, and a
    /// job per occurrence is unique. Returns `(schedule, job)` for each job queued.
    pub fn queue_due(&mut self, now: Option<i64>) -> Result<Vec<(i64, i64)>, StoreError> {
        self.queue_write(|tx| {
            let now = match now {
                Some(now) => now,
                None => now_ms(tx)?,
            };
            let due = tx.query(
                "SELECT id, every, args, target, carries_cmd, max_attempts, check_history,
                     submitter, next_at FROM schedules
                 WHERE active = 1 AND next_at <= ?1 ORDER BY id FOR UPDATE SKIP LOCKED",
                vals![now],
            )?;
            let mut queued = Vec::new();
            for r in &due {
                let schedule = r.int(0)?;
                let every = Every::parse(&r.text(1)?).map_err(|e| StoreError::Column {
                    index: 1,
                    detail: format!("schedule {schedule}: {e}"),
                })?;
                let occurrence = r.int(8)?;
                tx.execute(
                    "UPDATE schedules SET next_at = ?2 WHERE id = ?1",
                    vals![schedule, every.next_after(now.max(occurrence))],
                )?;
                let job = NewJob {
                    args: json_args(&r.text(2)?)?,
                    target: r.text(3)?,
                    carries_cmd: r.int(4)? != 0,
                    max_attempts: r.u32(5)?,
                    check_history: r.int(6)? != 0,
                    user: String::new(),
                    host: String::new(),
                };
                let Some(id) = insert_job(
                    tx,
                    &job,
                    &r.text(2)?,
                    &r.text(7)?,
                    now,
                    Some((schedule, occurrence)),
                )?
                else {
                    continue;
                };
                log_line(
                    tx,
                    id,
                    now,
                    &format!(
                        "queued by schedule {schedule} ({every} UTC), occurrence {occurrence}"
                    ),
                )?;
                queued.push((schedule, id));
            }
            Ok(queued)
        })
    }

    /// Every schedule, oldest first, with the jobs it queued (newest last).
    pub fn schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.queue_read(|tx| {
            let rows = tx.query(
                "SELECT id, every, args, target, check_history, next_at, active, submitter
                 FROM schedules ORDER BY id",
                &[],
            )?;
            let mut out = Vec::new();
            for r in &rows {
                let id = r.int(0)?;
                let jobs = tx
                    .query(
                        "SELECT id FROM jobs WHERE schedule_id = ?1 ORDER BY id",
                        vals![id],
                    )?
                    .iter()
                    .map(|j| j.int(0))
                    .collect::<Result<_, _>>()?;
                out.push(Schedule {
                    id,
                    every: r.text(1)?,
                    args: json_args(&r.text(2)?)?,
                    target: r.text(3)?,
                    check_history: r.int(4)? != 0,
                    next_at_ms: r.int(5)?,
                    active: r.int(6)? != 0,
                    submitter: serde_json::from_str(&r.text(7)?).unwrap_or(serde_json::Value::Null),
                    jobs,
                });
            }
            Ok(out)
        })
    }

    /// Stops schedule `id` (its queued jobs stay); false when there is no active one.
    pub fn unschedule(&mut self, id: i64) -> Result<bool, StoreError> {
        self.queue_write(|tx| {
            Ok(tx.execute(
                "UPDATE schedules SET active = 0 WHERE id = ?1 AND active = 1",
                vals![id],
            )? == 1)
        })
    }

    /// Every job, oldest first, each with the runs it stored; `limit`: only the newest so many.
    pub fn jobs(&self, limit: Option<usize>) -> Result<Vec<Job>, StoreError> {
        self.queue_read(|tx| {
            let now = now_ms(tx)?;
            let limit = limit.map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
            let rows = tx.query(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM (SELECT * FROM jobs ORDER BY id DESC LIMIT ?1) j
                     ORDER BY id"
                ),
                vals![limit],
            )?;
            let mut jobs: Vec<Job> = rows
                .iter()
                .map(|r| job_from_row(r, now))
                .collect::<Result<_, _>>()?;
            let mut runs = job_runs(tx)?;
            for job in &mut jobs {
                job.runs = runs.remove(&job.id).unwrap_or_default();
            }
            Ok(jobs)
        })
    }

    /// Job `id`, with its runs; `None` when there is none.
    pub fn job(&self, id: i64) -> Result<Option<Job>, StoreError> {
        self.queue_read(|tx| {
            let now = now_ms(tx)?;
            let Some(row) = tx.query_opt(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                vals![id],
            )?
            else {
                return Ok(None);
            };
            let mut job = job_from_row(&row, now)?;
            job.runs = job_runs(tx)?.remove(&id).unwrap_or_default();
            Ok(Some(job))
        })
    }

    /// Cancels job `id` if it has not ended; returns the state it was in (`None`: no such
    /// job). A running job's agent sees it at its next heartbeat and stops it.
    pub fn cancel_job(&mut self, id: i64) -> Result<Option<JobState>, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let Some(row) =
                tx.query_opt("SELECT state FROM jobs WHERE id = ?1 FOR UPDATE", vals![id])?
            else {
                return Ok(None);
            };
            let state = JobState::parse(&row.text(0)?)?;
            if !state.is_final() {
                let role = tx.query_one("SELECT current_user::text", &[])?.text(0)?;
                let why = format!("cancelled by {role}");
                tx.execute(
                    "UPDATE jobs SET state = 'cancelled', outcome = ?2, finished_at = ?3,
                         lease_until = NULL WHERE id = ?1",
                    vals![id, why.as_str(), now],
                )?;
                log_line(tx, id, now, &why)?;
            }
            Ok(Some(state))
        })
    }

    /// Registers this process as the agent of `host` and takes its lock for the life of this
    /// connection. Refused while another agent of that host is alive (holds the lock).
    pub fn register_agent(
        &mut self,
        host: &str,
        class_json: &str,
        allow: &str,
    ) -> Result<(), StoreError> {
        let pid = i64::from(std::process::id());
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            tx.execute(
                "INSERT INTO agents (host, class, allow, pid, started_at, heartbeat_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (host) DO NOTHING",
                vals![host, class_json, allow, pid, now],
            )?;
            let row = tx.query_one(
                "SELECT id, pid, heartbeat_at FROM agents WHERE host = ?1",
                vals![host],
            )?;
            let id = row.int(0)?;
            let got = tx
                .query_one(
                    "SELECT pg_try_advisory_lock(?1::integer, ?2::integer)::int",
                    vals![AGENT_LOCK_CLASS, id],
                )?
                .int(0)?;
            if got != 1 {
                return Err(StoreError::AgentRunning {
                    host: host.to_owned(),
                    pid: row.int(1)?,
                    seen_ms_ago: now - row.int(2)?,
                });
            }
            tx.execute(
                "UPDATE agents SET class = ?2, allow = ?3, pid = ?4, started_at = ?5,
                     heartbeat_at = ?5, job_id = NULL WHERE id = ?1",
                vals![id, class_json, allow, pid, now],
            )?;
            // One agent per host: a job still running under this host's name was its previous
            // process's, which is gone (its lock was free). Retried now, not at its lease's end.
            let orphans = tx.query(
                "SELECT id, attempts, max_attempts FROM jobs
                 WHERE state = 'running' AND agent = ?1 FOR UPDATE",
                vals![host],
            )?;
            for r in &orphans {
                let (job, attempts) = (r.int(0)?, r.u32(1)?);
                let why = format!(
                    "attempt {attempts} lost: the agent on {host} restarted (its previous process is gone)"
                );
                take_back(tx, job, attempts, r.u32(2)?, &why, now)?;
            }
            Ok(())
        })
    }

    /// The agent of `host` is alive, running `job` (id and attempt) or none: renews its
    /// heartbeat and, for a job, its lease by `lease_ms`. Returns false when the job is no
    /// longer this agent's (cancelled, or taken back after its lease ran out): stop it.
    pub fn heartbeat(
        &mut self,
        host: &str,
        job: Option<(i64, u32)>,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            tx.execute(
                "UPDATE agents SET heartbeat_at = ?2, job_id = ?3 WHERE host = ?1",
                vals![host, now, job.map(|(id, _)| id)],
            )?;
            let Some((id, attempt)) = job else {
                return Ok(true);
            };
            let renewed = tx.execute(
                "UPDATE jobs SET lease_until = ?4 WHERE id = ?1 AND agent = ?2 AND attempts = ?3
                     AND state = 'running'",
                vals![id, host, attempt, now + lease_ms],
            )?;
            Ok(renewed == 1)
        })
    }

    /// Takes back every running job whose agent is lost: its lease ran out, or its agent's
    /// connection ended (its lock is gone). Each is queued for its next attempt, or failed
    /// once its attempts are spent. Safe to run from every agent at once: a job another
    /// reaper holds is skipped.
    pub fn reap_jobs(&mut self) -> Result<Vec<Reaped>, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let live = live_agents(tx)?;
            let agents: HashMap<String, i64> = tx
                .query("SELECT host, id FROM agents", &[])?
                .iter()
                .map(|r| Ok((r.text(0)?, r.int(1)?)))
                .collect::<Result<_, StoreError>>()?;
            let running = tx.query(
                "SELECT id, agent, lease_until, attempts, max_attempts FROM jobs
                 WHERE state = 'running' ORDER BY id FOR UPDATE SKIP LOCKED",
                &[],
            )?;
            let mut reaped = Vec::new();
            for r in &running {
                let (id, agent) = (r.int(0)?, r.opt_text(1)?.unwrap_or_default());
                let (lease_until, attempts, max) = (r.opt_int(2)?, r.u32(3)?, r.u32(4)?);
                let alive = agents.get(&agent).is_some_and(|a| live.contains(a));
                let why = if !alive {
                    format!("attempt {attempts} lost: the agent on {agent} is gone (its connection ended)")
                } else if lease_until.is_some_and(|u| u < now) {
                    format!("attempt {attempts} lost: the agent on {agent} stopped renewing its lease")
                } else {
                    continue;
                };
                let now_state = take_back(tx, id, attempts, max, &why, now)?;
                reaped.push(Reaped {
                    id,
                    now: now_state,
                    why,
                });
            }
            Ok(reaped)
        })
    }

    /// Takes the oldest queued job `judge` accepts, for the agent of `host`, under a lease of
    /// `lease_ms`; `None` when there is none. Jobs `judge` refuses get a line in their log
    /// (once per agent), and fail when they were sent to `host` alone.
    pub fn claim_job(
        &mut self,
        host: &str,
        lease_ms: i64,
        mut judge: impl FnMut(&Candidate) -> Verdict,
    ) -> Result<Option<Claimed>, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            // Judged all at once, without locking (the partial index `jobs_queued` keeps this
            // read to the queued rows); then one statement locks the oldest acceptable one no
            // other agent is taking. Locking candidates one by one cost a round trip per job
            // another agent had taken: 41 per claim with 50 agents (bench/queue-claim).
            // Read a page at a time, oldest first, until enough are acceptable (or the window
            // is read): a queue of one class's jobs is judged a page at a time, not 500 rows.
            let mut acceptable: Vec<(i64, Vec<String>, bool)> = Vec::new();
            let (mut after, mut read) = (0i64, 0i64);
            while read < CLAIM_WINDOW && acceptable.len() < ENOUGH_CANDIDATES {
                let rows = tx.query(
                    "SELECT id, args, target, carries_cmd, check_history FROM jobs
                     WHERE state = 'queued' AND id > ?1 ORDER BY id LIMIT ?2",
                    vals![after, CLAIM_PAGE],
                )?;
                for r in &rows {
                    let candidate = Candidate {
                        id: r.int(0)?,
                        args: json_args(&r.text(1)?)?,
                        target: r.text(2)?,
                        carries_cmd: r.int(3)? != 0,
                    };
                    after = candidate.id;
                    match judge(&candidate) {
                        Verdict::Skip => {}
                        Verdict::Take => {
                            acceptable.push((candidate.id, candidate.args, r.int(4)? != 0));
                        }
                        Verdict::Refuse(why) => refuse(tx, &candidate, host, &why, now)?,
                    }
                }
                read += rows.len() as i64;
                if (rows.len() as i64) < CLAIM_PAGE {
                    break;
                }
            }
            if acceptable.is_empty() {
                return Ok(None);
            }
            let ids =
                serde_json::to_string(&acceptable.iter().map(|(id, _, _)| *id).collect::<Vec<_>>())
                    .map_err(|source| StoreError::Encode {
                        what: "job ids",
                        source,
                    })?;
            let Some(locked) = tx.query_opt(
                "SELECT id, attempts FROM jobs
                 WHERE id IN (SELECT value::bigint FROM json_array_elements_text(?1::text::json))
                   AND state = 'queued'
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                vals![ids],
            )?
            else {
                return Ok(None);
            };
            let (id, attempt) = (locked.int(0)?, locked.u32(1)? + 1);
            let Some((_, args, check_history)) =
                acceptable.into_iter().find(|(job, _, _)| *job == id)
            else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE jobs SET state = 'running', agent = ?2, attempts = ?3,
                     lease_until = ?4, started_at = ?5 WHERE id = ?1",
                vals![id, host, attempt, now + lease_ms, now],
            )?;
            tx.execute(
                "UPDATE agents SET job_id = ?2, heartbeat_at = ?3 WHERE host = ?1",
                vals![host, id, now],
            )?;
            log_line(tx, id, now, &format!("attempt {attempt} taken by {host}"))?;
            Ok(Some(Claimed {
                id,
                args,
                attempt,
                check_history,
            }))
        })
    }

    /// Ends attempt `attempt` of job `id` held by `host` as `state` (done or failed) with
    /// `outcome`; false when the job is no longer this agent's (cancelled, or taken back).
    pub fn finish_job(
        &mut self,
        host: &str,
        id: i64,
        attempt: u32,
        state: JobState,
        outcome: &str,
    ) -> Result<bool, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let ended = tx.execute(
                "UPDATE jobs SET state = ?4, outcome = ?5, finished_at = ?6, lease_until = NULL
                 WHERE id = ?1 AND agent = ?2 AND attempts = ?3 AND state = 'running'",
                vals![id, host, attempt, state.as_str(), outcome, now],
            )?;
            if ended == 1 {
                let line = format!("attempt {attempt} {} on {host}: {outcome}", state.as_str());
                log_line(tx, id, now, &line)?;
            }
            Ok(ended == 1)
        })
    }

    /// Gives attempt `attempt` of job `id` back to the queue without counting it (the agent
    /// did not start measuring: its machine stayed busy), with `why` in its log.
    pub fn release_job(
        &mut self,
        host: &str,
        id: i64,
        attempt: u32,
        why: &str,
    ) -> Result<bool, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let released = tx.execute(
                "UPDATE jobs SET state = 'queued', attempts = attempts - 1, lease_until = NULL
                 WHERE id = ?1 AND agent = ?2 AND attempts = ?3 AND state = 'running'",
                vals![id, host, attempt],
            )?;
            if released == 1 {
                log_line(tx, id, now, &format!("given back by {host}: {why}"))?;
            }
            Ok(released == 1)
        })
    }

    /// Adds `line` to job `id`'s log.
    pub fn note_job(&mut self, id: i64, line: &str) -> Result<(), StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            log_line(tx, id, now, line)
        })
    }

    /// Every agent that ever registered, with whether it is alive now, and the server's clock.
    pub fn agents(&self) -> Result<(Vec<AgentRow>, i64), StoreError> {
        self.queue_read(|tx| {
            let now = now_ms(tx)?;
            let live = live_agents(tx)?;
            let rows = tx.query(
                "SELECT id, host, class, allow, pid, started_at, heartbeat_at, job_id
                 FROM agents ORDER BY host",
                &[],
            )?;
            let agents = rows
                .iter()
                .map(|r| {
                    Ok(AgentRow {
                        alive: live.contains(&r.int(0)?),
                        host: r.text(1)?,
                        class: serde_json::from_str(&r.text(2)?).unwrap_or(serde_json::Value::Null),
                        allow: r.text(3)?,
                        pid: r.int(4)?,
                        started_at_ms: r.int(5)?,
                        heartbeat_at_ms: r.int(6)?,
                        job_id: r.opt_int(7)?,
                    })
                })
                .collect::<Result<_, StoreError>>()?;
            Ok((agents, now))
        })
    }
}

/// The runs tagged `job=ID`, per job id, with derived status and the attempt that stored them.
fn job_runs(tx: &mut Tx<'_, '_>) -> Result<HashMap<i64, Vec<JobRun>>, StoreError> {
    let held = crate::liveness::held_run_locks(tx)?;
    let rows = tx.query(
        "SELECT t.value, r.id, r.status, a.value FROM run_tags t
         JOIN runs r ON r.id = t.run_id
         LEFT JOIN run_tags a ON a.run_id = r.id AND a.key = 'job_attempt'
         WHERE t.key = 'job' ORDER BY r.id",
        &[],
    )?;
    let mut out: HashMap<i64, Vec<JobRun>> = HashMap::new();
    for r in &rows {
        let Ok(job) = r.text(0)?.parse::<i64>() else {
            continue;
        };
        let id = r.int(1)?;
        let stored = RunStatus::parse(&r.text(2)?).unwrap_or(RunStatus::Incomplete);
        let status = if stored == RunStatus::Running && !crate::liveness::is_locked(&held, id) {
            RunStatus::Incomplete
        } else {
            stored
        };
        let attempt = r.opt_text(3)?.and_then(|a| a.parse().ok());
        out.entry(job).or_default().push(JobRun {
            id,
            status,
            attempt,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_as_written() {
        for s in [
            JobState::Queued,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
            JobState::Cancelled,
        ] {
            assert_eq!(JobState::parse(s.as_str()).unwrap(), s);
        }
        assert!(JobState::parse("lost").is_err());
    }

    #[test]
    fn the_queue_on_a_sqlite_file_says_it_needs_postgresql() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let err = store.jobs(None).unwrap_err().to_string();
        assert!(err.contains("PostgreSQL"), "{err}");
        let job = NewJob {
            args: vec!["run".into(), "atomic".into()],
            target: "any".into(),
            carries_cmd: false,
            max_attempts: 3,
            check_history: false,
            user: "u".into(),
            host: "h".into(),
        };
        assert!(store.submit_job(&job).is_err());
    }
}
