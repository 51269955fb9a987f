//! Submitting and reading jobs and schedules: `submit` (once, or every occurrence of a
//! schedule), `queue` (jobs with their log and runs, schedules, cancelling, stopping), and the
//! due schedules each agent's loop queues.
//!
//! A schedule is queued once per occurrence however many agents see it due (a job per
//! `(schedule, occurrence)` is unique), and one active schedule per job and time (submitting the
//! same one twice is refused, naming the first). A schedule that does not parse is stopped with
//! the reason, never queued and never an error.

use std::collections::HashMap;

use super::events::{Writer, events_of, log_event};
use super::rows::{JOB_COLUMNS, SCHEDULE_COLUMNS, job_from_row, schedule_from_row};
use super::types::{Job, JobRun, JobState, NewJob, Schedule, now_ms};
use crate::backend::{Tx, vals};
use crate::error::StoreError;
use crate::handle::Store;
use model::record::RunStatus;
use model::schedule::Every;

/// What [`Store::queue_due`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueOutcome {
    /// `(schedule, job)` for each job queued.
    pub queued: Vec<(i64, i64)>,
    /// `(schedule, why)` for each schedule stopped as malformed.
    pub stopped: Vec<(i64, String)>,
}

fn encode_args(args: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(args).map_err(|source| StoreError::Encode {
        what: "a job's arguments",
        source,
    })
}

/// The submitter as stored (JSON: database role, OS user, host) and as shown. The server
/// stamps the role again (a trigger): a client cannot claim another.
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
             submitted_at, submitter, log, check_history, schedule_id, occurrence, timeout_ms)
         VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, '', ?7, ?8, ?9, ?10)
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
            occurrence.map(|o| o.1),
            job.timeout_ms
        ],
    )?;
    row.map(|r| r.int(0)).transpose()
}

/// The runs tagged `job=ID`, per job id, with derived status and the attempt that stored them.
fn job_runs(tx: &mut Tx<'_, '_>) -> Result<HashMap<i64, Vec<JobRun>>, StoreError> {
    let alive = crate::liveness::live_runs(tx)?;
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
        let status = if stored == RunStatus::Running && !alive.contains(&id) {
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

/// `jobs` with their logs and runs filled in.
fn with_logs_and_runs(tx: &mut Tx<'_, '_>, mut jobs: Vec<Job>) -> Result<Vec<Job>, StoreError> {
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let mut events = events_of(tx, &ids)?;
    let mut runs = job_runs(tx)?;
    for job in &mut jobs {
        job.log = events.remove(&job.id).unwrap_or_default();
        job.runs = runs.remove(&job.id).unwrap_or_default();
    }
    Ok(jobs)
}

impl Store {
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
            log_event(
                tx,
                id,
                now,
                &format!("submitted by {who}"),
                Writer::Submitter,
            )?;
            Ok(id)
        })
    }

    /// Queues `job` at every occurrence of `every` (UTC), from the next one on; returns the
    /// schedule's id and its next occurrence. Any agent's loop queues each occurrence once it
    /// is due ([`Store::queue_due`]). The same job on the same schedule and class while one is
    /// active is refused, naming it.
    pub fn schedule_job(&mut self, job: &NewJob, every: &Every) -> Result<(i64, i64), StoreError> {
        let args = encode_args(&job.args)?;
        let every_text = every.to_string();
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let (submitter, _) = submitter(tx, job)?;
            let next = every.next_after(now);
            let inserted = tx.query_opt(
                "INSERT INTO schedules (every, args, target, carries_cmd, max_attempts,
                     check_history, submitter, created_at, next_at, active, timeout_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10)
                 ON CONFLICT (every, args, target) WHERE active = 1 DO NOTHING RETURNING id",
                vals![
                    every_text.as_str(),
                    args.as_str(),
                    job.target.as_str(),
                    i64::from(job.carries_cmd),
                    job.max_attempts,
                    i64::from(job.check_history),
                    submitter,
                    now,
                    next,
                    job.timeout_ms
                ],
            )?;
            match inserted {
                Some(row) => Ok((row.int(0)?, next)),
                None => {
                    let first = tx
                        .query_one(
                            "SELECT id FROM schedules
                             WHERE active = 1 AND every = ?1 AND args = ?2 AND target = ?3",
                            vals![every_text.as_str(), args.as_str(), job.target.as_str()],
                        )?
                        .int(0)?;
                    Err(StoreError::DuplicateSchedule { id: first })
                }
            }
        })
    }

    /// Queues one job for each active schedule whose next occurrence is at or before `now`
    /// (ms since the epoch; `None`: the server's clock), and moves it to its first occurrence
    /// after `now` (occurrences missed while no agent looked are queued once, not each). A
    /// schedule that does not parse is stopped, with why. Safe from every agent at once: a
    /// schedule another agent is queuing is skipped, and a job per occurrence is unique.
    pub fn queue_due(&mut self, now: Option<i64>) -> Result<DueOutcome, StoreError> {
        self.queue_write(|tx| {
            let now = match now {
                Some(now) => now,
                None => now_ms(tx)?,
            };
            let due = tx.query(
                &format!(
                    "SELECT {SCHEDULE_COLUMNS}, carries_cmd FROM schedules
                     WHERE active = 1 AND next_at <= ?1 ORDER BY id FOR UPDATE SKIP LOCKED"
                ),
                vals![now],
            )?;
            let mut outcome = DueOutcome::default();
            for r in &due {
                let s = schedule_from_row(r)?;
                let Ok(every) = Every::parse(&s.every) else {
                    // `malformed` says so; stopped below.
                    let why = s.malformed.clone().unwrap_or_default();
                    stop_malformed(tx, s.id, &why)?;
                    outcome.stopped.push((s.id, why));
                    continue;
                };
                if let Some(why) = s.malformed.clone() {
                    stop_malformed(tx, s.id, &why)?;
                    outcome.stopped.push((s.id, why));
                    continue;
                }
                let occurrence = s.next_at_ms;
                tx.execute(
                    "UPDATE schedules SET next_at = ?2 WHERE id = ?1",
                    vals![s.id, every.next_after(now.max(occurrence))],
                )?;
                let job = NewJob {
                    args: s.args.clone(),
                    target: s.target.clone(),
                    carries_cmd: r.int(11)? != 0,
                    max_attempts: r.int(10)? as u32,
                    check_history: s.check_history,
                    timeout_ms: s.timeout_ms,
                    user: String::new(),
                    host: String::new(),
                };
                let Some(id) = insert_job(
                    tx,
                    &job,
                    &r.text(2)?,
                    &r.text(7)?,
                    now,
                    Some((s.id, occurrence)),
                )?
                else {
                    continue;
                };
                log_event(
                    tx,
                    id,
                    now,
                    &format!(
                        "queued by schedule {} ({every} UTC), occurrence {occurrence}",
                        s.id
                    ),
                    Writer::Agent,
                )?;
                outcome.queued.push((s.id, id));
            }
            Ok(outcome)
        })
    }

    /// Every schedule, oldest first, with the jobs it queued (newest last).
    pub fn schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.queue_read(|tx| {
            let rows = tx.query(
                &format!("SELECT {SCHEDULE_COLUMNS} FROM schedules ORDER BY id"),
                &[],
            )?;
            let mut out = Vec::new();
            for r in &rows {
                let mut schedule = schedule_from_row(r)?;
                schedule.jobs = tx
                    .query(
                        "SELECT id FROM jobs WHERE schedule_id = ?1 ORDER BY id",
                        vals![schedule.id],
                    )?
                    .iter()
                    .map(|j| j.int(0))
                    .collect::<Result<_, _>>()?;
                out.push(schedule);
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

    /// Every job, oldest first, each with its log and the runs it stored; `limit`: only the
    /// newest so many.
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
            let jobs = rows
                .iter()
                .map(|r| job_from_row(r, now))
                .collect::<Result<Vec<_>, _>>()?;
            with_logs_and_runs(tx, jobs)
        })
    }

    /// Job `id`, with its log and runs; `None` when there is none.
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
            let job = job_from_row(&row, now)?;
            Ok(with_logs_and_runs(tx, vec![job])?.pop())
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
            let state = JobState::parse(&row.text(0)?).unwrap_or(JobState::Failed);
            if !state.is_final() {
                let role = tx.query_one("SELECT current_user::text", &[])?.text(0)?;
                let why = format!("cancelled by {role}");
                tx.execute(
                    "UPDATE jobs SET state = 'cancelled', outcome = ?2, finished_at = ?3,
                         lease_until = NULL WHERE id = ?1",
                    vals![id, why.as_str(), now],
                )?;
                log_event(tx, id, now, &why, Writer::Submitter)?;
            }
            Ok(Some(state))
        })
    }
}

/// Stops schedule `id` as malformed (`why`).
fn stop_malformed(tx: &mut Tx<'_, '_>, id: i64, why: &str) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE schedules SET active = 0, stopped_why = ?2 WHERE id = ?1",
        vals![id, format!("malformed: {why}")],
    )?;
    Ok(())
}
