//! Taking a job and ending it: an agent claims the oldest queued job of its class that it
//! accepts, renews it while it runs (`agents`), and records how it ended — done, failed, given
//! back, or refused.
//!
//! The agent says which class filters (`target`s) it matches; only the queued jobs of those
//! targets are read, a page at a time and oldest first, until enough acceptable ones are found:
//! thousands of jobs for machines that are gone never hide the one job it can take. A queued
//! row that is malformed is failed with the reason as it is met.

use super::events::{Writer, has_event, json_list, log_event};
use super::rows::{decode_args, decode_count, decode_timeout};
use super::types::{Candidate, Claimed, JobState, Verdict, now_ms};
use crate::backend::{Tx, vals};
use crate::error::StoreError;
use crate::handle::Store;

/// Candidates read per page of a claim.
const CLAIM_PAGE: i64 = 64;

/// Acceptable candidates that end the reading: one of them is free unless as many agents are
/// claiming at this very moment.
const ENOUGH_CANDIDATES: usize = 32;

/// The distinct class filters of the queued jobs, one index probe each on `jobs_queued_target`
/// (a loose index scan: `SELECT DISTINCT` reads every queued row).
const QUEUED_TARGETS: &str = "WITH RECURSIVE t (target) AS (
        (SELECT target FROM jobs WHERE state = 'queued' ORDER BY target LIMIT 1)
        UNION ALL
        SELECT (SELECT j.target FROM jobs j
                WHERE j.state = 'queued' AND j.target > t.target ORDER BY j.target LIMIT 1)
        FROM t WHERE t.target IS NOT NULL)
    SELECT target FROM t WHERE target IS NOT NULL";

/// What one look at the queue did.
#[derive(Debug, Clone, Default)]
pub struct ClaimOutcome {
    /// The job taken, if any.
    pub claimed: Option<Claimed>,
    /// `(job, why)` for each queued job failed as malformed on the way.
    pub malformed: Vec<(i64, String)>,
}

/// Notes in `job`'s log that the agent of `host` refuses it (once per agent: a job already
/// carrying the event, or locked by another agent now, is left alone), and fails it when it was
/// sent to `host` alone.
fn refuse(
    tx: &mut Tx<'_, '_>,
    job: &Candidate,
    host: &str,
    why: &str,
    now: i64,
) -> Result<(), StoreError> {
    let text = format!("refused by {host}: {why}");
    let alone = job.target == format!("host={host}");
    let free = tx.query_opt(
        "SELECT id FROM jobs WHERE id = ?1 AND state = 'queued' FOR UPDATE SKIP LOCKED",
        vals![job.id],
    )?;
    if free.is_none() || (!alone && has_event(tx, job.id, &text)?) {
        return Ok(());
    }
    if alone {
        tx.execute(
            "UPDATE jobs SET state = 'failed', outcome = ?2, finished_at = ?3 WHERE id = ?1",
            vals![job.id, text.as_str(), now],
        )?;
    }
    log_event(tx, job.id, now, &text, Writer::Agent)
}

/// Fails queued job `id` as malformed (`why`), unless another agent holds it now; true when
/// this call failed it.
fn fail_malformed(tx: &mut Tx<'_, '_>, id: i64, why: &str, now: i64) -> Result<bool, StoreError> {
    let free = tx.query_opt(
        "SELECT id FROM jobs WHERE id = ?1 AND state = 'queued' FOR UPDATE SKIP LOCKED",
        vals![id],
    )?;
    if free.is_none() {
        return Ok(false);
    }
    let outcome = format!("malformed: {why}");
    tx.execute(
        "UPDATE jobs SET state = 'failed', outcome = ?2, finished_at = ?3, lease_until = NULL
         WHERE id = ?1",
        vals![id, outcome.as_str(), now],
    )?;
    log_event(tx, id, now, &outcome, Writer::Agent)?;
    Ok(true)
}

impl Store {
    /// Takes the oldest queued job of a target `matches` accepts and `judge` takes, for the
    /// agent of `host`, under a lease of `lease_ms`. `matches` sees each distinct target of the
    /// queue once (say true for one that does not parse, so that `judge` refuses it with the
    /// reason); `judge` sees each candidate of a matching target. Jobs `judge` refuses get an
    /// event in their log (once per agent), and fail when they were sent to `host` alone;
    /// malformed jobs fail.
    pub fn claim_job(
        &mut self,
        host: &str,
        lease_ms: i64,
        mut matches: impl FnMut(&str) -> bool,
        mut judge: impl FnMut(&Candidate) -> Verdict,
    ) -> Result<ClaimOutcome, StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            let mut outcome = ClaimOutcome::default();
            let targets: Vec<String> = tx
                .query(QUEUED_TARGETS, &[])?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<_, _>>()?;
            let mine: Vec<String> = targets.into_iter().filter(|t| matches(t)).collect();
            if mine.is_empty() {
                return Ok(outcome);
            }
            let mine = json_list(&mine)?;
            // Judged without locking, a page at a time; then one statement locks the oldest
            // acceptable one no other agent is taking (locking candidates one by one cost a
            // round trip per job another agent had taken: bench/speed/queue-claim).
            let mut acceptable: Vec<Claimed> = Vec::new();
            let mut after = 0i64;
            loop {
                let rows = tx.query(
                    // Each target's next page through its own index range, then merged: an
                    // id-ordered scan of every queued job would wade through the others.
                    "SELECT j.id, j.args, j.target, j.carries_cmd, j.check_history, j.attempts,
                         j.max_attempts, j.timeout_ms
                     FROM json_array_elements_text(?2::text::json) AS m (target)
                     CROSS JOIN LATERAL (
                         SELECT * FROM jobs
                         WHERE state = 'queued' AND target = m.target AND id > ?1
                         ORDER BY id LIMIT ?3) j
                     ORDER BY j.id LIMIT ?3",
                    vals![after, mine.as_str(), CLAIM_PAGE],
                )?;
                for r in &rows {
                    let id = r.int(0)?;
                    after = id;
                    let args = decode_args(&r.text(1)?);
                    let (attempts, max, timeout) = (r.int(5)?, r.int(6)?, r.opt_int(7)?);
                    let sound = args.as_ref().err().cloned().or_else(|| {
                        decode_count(attempts, 0, "attempt count")
                            .and_then(|_| decode_count(max, 1, "attempt limit"))
                            .and_then(|_| decode_timeout(timeout))
                            .err()
                    });
                    if let Some(why) = sound {
                        if fail_malformed(tx, id, &why, now)? {
                            outcome.malformed.push((id, why));
                        }
                        continue;
                    }
                    let candidate = Candidate {
                        id,
                        args: args.unwrap_or_default(),
                        target: r.text(2)?,
                        carries_cmd: r.int(3)? != 0,
                        timeout_ms: r.opt_int(7)?,
                    };
                    match judge(&candidate) {
                        Verdict::Skip => {}
                        Verdict::Take => acceptable.push(Claimed {
                            id,
                            args: candidate.args,
                            attempt: 0,
                            check_history: r.int(4)? != 0,
                            timeout_ms: candidate.timeout_ms,
                        }),
                        Verdict::Refuse(why) => refuse(tx, &candidate, host, &why, now)?,
                    }
                }
                if acceptable.len() >= ENOUGH_CANDIDATES || (rows.len() as i64) < CLAIM_PAGE {
                    break;
                }
            }
            if acceptable.is_empty() {
                return Ok(outcome);
            }
            let ids = json_list(&acceptable.iter().map(|c| c.id).collect::<Vec<_>>())?;
            let Some(locked) = tx.query_opt(
                "SELECT id, attempts FROM jobs
                 WHERE id IN (SELECT value::bigint FROM json_array_elements_text(?1::text::json))
                   AND state = 'queued'
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                vals![ids],
            )?
            else {
                return Ok(outcome);
            };
            let (id, attempt) = (locked.int(0)?, locked.u32(1)? + 1);
            let Some(mut claimed) = acceptable.into_iter().find(|c| c.id == id) else {
                return Ok(outcome);
            };
            claimed.attempt = attempt;
            tx.execute(
                "UPDATE jobs SET state = 'running', agent = ?2, attempts = ?3,
                     lease_until = ?4, started_at = ?5 WHERE id = ?1",
                vals![id, host, attempt, now + lease_ms, now],
            )?;
            tx.execute(
                "UPDATE agents SET job_id = ?2, heartbeat_at = ?3 WHERE host = ?1",
                vals![host, id, now],
            )?;
            log_event(
                tx,
                id,
                now,
                &format!("attempt {attempt} taken by {host}"),
                Writer::Agent,
            )?;
            outcome.claimed = Some(claimed);
            Ok(outcome)
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
                let text = format!("attempt {attempt} {} on {host}: {outcome}", state.as_str());
                log_event(tx, id, now, &text, Writer::Agent)?;
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
                log_event(
                    tx,
                    id,
                    now,
                    &format!("given back by {host}: {why}"),
                    Writer::Agent,
                )?;
            }
            Ok(released == 1)
        })
    }

    /// Adds `text` to job `id`'s log (an agent's note: a wait, a history check).
    pub fn note_job(&mut self, id: i64, text: &str) -> Result<(), StoreError> {
        self.queue_write(|tx| {
            let now = now_ms(tx)?;
            log_event(tx, id, now, text, Writer::Agent)
        })
    }

    /// Marks the runs of attempt `attempt` of job `id` that did not complete as `incomplete`,
    /// each with `why` among its warnings (a job its agent stopped at its timeout). Returns
    /// their ids.
    pub fn mark_job_runs_incomplete(
        &mut self,
        id: i64,
        attempt: u32,
        why: &str,
    ) -> Result<Vec<i64>, StoreError> {
        let runs = self.queue_write(|tx| {
            let rows = tx.query(
                "SELECT r.id FROM runs r
                 JOIN run_tags t ON t.run_id = r.id AND t.key = 'job' AND t.value = ?1
                 JOIN run_tags a ON a.run_id = r.id AND a.key = 'job_attempt' AND a.value = ?2
                 WHERE r.status <> 'complete' ORDER BY r.id",
                vals![id.to_string(), attempt.to_string()],
            )?;
            let ids: Vec<i64> = rows.iter().map(|r| r.int(0)).collect::<Result<_, _>>()?;
            for run in &ids {
                tx.execute(
                    "UPDATE runs SET status = 'incomplete' WHERE id = ?1",
                    vals![*run],
                )?;
            }
            Ok(ids)
        })?;
        for run in &runs {
            self.add_warnings(*run, &[why.to_owned()])?;
        }
        Ok(runs)
    }
}
