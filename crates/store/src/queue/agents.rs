//! The agents: registering one per host (its lock, which says it is alive), heartbeats that
//! renew a job's lease, and reaping the jobs of agents that are gone.
//!
//! An agent is alive while the server process its row names holds its lock — a random key no
//! other session can take ahead of it, and whose holder must be a role that may write `agents`
//! (`liveness::alive_rows`): a reader holding advisory locks neither blocks an agent nor keeps
//! a dead one alive.

use std::collections::{HashMap, HashSet};

use super::events::{Writer, log_event};
use super::rows::decode_count;
use super::types::{AGENT_LOCK_CLASS, AgentRow, JobState, Reaped, now_ms};
use crate::backend::{Tx, vals};
use crate::error::StoreError;
use crate::handle::Store;

/// The agents alive now in this database (their row ids).
fn live_agents(tx: &mut Tx<'_, '_>) -> Result<HashSet<i64>, StoreError> {
    crate::liveness::alive_rows(tx, AGENT_LOCK_CLASS, "agents")
}

/// Takes job `id` back from its lost agent (`why`): queued for its next attempt, or failed once
/// `attempts` reached `max`. Returns where it is now.
pub(crate) fn take_back(
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
    log_event(
        tx,
        id,
        now,
        &format!("{why}; now {}", state.as_str()),
        Writer::Agent,
    )?;
    Ok(state)
}

impl Store {
    /// Registers this process as the agent of `host` (class, allow-list as shown, the longest
    /// job it runs) and takes its lock for the life of this connection. Refused while another
    /// agent of that host is alive.
    pub fn register_agent(
        &mut self,
        host: &str,
        class_json: &str,
        allow: &str,
        max_job_ms: i64,
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
                "SELECT id, pid, heartbeat_at FROM agents WHERE host = ?1 FOR UPDATE",
                vals![host],
            )?;
            let id = row.int(0)?;
            if live_agents(tx)?.contains(&id) {
                return Err(StoreError::AgentRunning {
                    host: host.to_owned(),
                    pid: row.int(1)?,
                    seen_ms_ago: now - row.int(2)?,
                });
            }
            let (key, server_pid) = crate::liveness::take_lock(tx, AGENT_LOCK_CLASS)?;
            tx.execute(
                "UPDATE agents SET class = ?2, allow = ?3, pid = ?4, started_at = ?5,
                     heartbeat_at = ?5, job_id = NULL, max_job_ms = ?6, lock_key = ?7,
                     lock_pid = ?8 WHERE id = ?1",
                vals![id, class_json, allow, pid, now, max_job_ms, key, server_pid],
            )?;
            // One agent per host: a job still running under this host's name was its previous
            // process's, which is gone (its lock was free). Retried now, not at its lease's end.
            let orphans = tx.query(
                "SELECT id, attempts, max_attempts FROM jobs
                 WHERE state = 'running' AND agent = ?1 FOR UPDATE",
                vals![host],
            )?;
            for r in &orphans {
                let job = r.int(0)?;
                let attempts = decode_count(r.int(1)?, 0, "attempt count").unwrap_or(u32::MAX);
                let max = decode_count(r.int(2)?, 1, "attempt limit").unwrap_or(1);
                let why = format!(
                    "attempt {attempts} lost: the agent on {host} restarted (its previous process is gone)"
                );
                take_back(tx, job, attempts, max, &why, now)?;
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
    /// once its attempts are spent (at once when its counts are malformed). Safe to run from
    /// every agent at once: a job another reaper holds is skipped.
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
                let lease_until = r.opt_int(2)?;
                let (attempts, max) = (r.int(3)?, r.int(4)?);
                let counts = decode_count(attempts, 0, "attempt count")
                    .and_then(|a| Ok((a, decode_count(max, 1, "attempt limit")?)));
                let alive = agents.get(&agent).is_some_and(|a| live.contains(a));
                let (attempts, max, why) = match counts {
                    Err(problem) => (1, 1, format!("malformed: {problem}")),
                    Ok((attempts, max)) if !alive => (
                        attempts,
                        max,
                        format!(
                            "attempt {attempts} lost: the agent on {agent} is gone (its connection ended)"
                        ),
                    ),
                    Ok((attempts, max)) if lease_until.is_some_and(|u| u < now) => (
                        attempts,
                        max,
                        format!(
                            "attempt {attempts} lost: the agent on {agent} stopped renewing its lease"
                        ),
                    ),
                    Ok(_) => continue,
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

    /// Every agent that ever registered, with whether it is alive now, and the server's clock.
    pub fn agents(&self) -> Result<(Vec<AgentRow>, i64), StoreError> {
        self.queue_read(|tx| {
            let now = now_ms(tx)?;
            let live = live_agents(tx)?;
            let rows = tx.query(
                "SELECT id, host, class, allow, pid, started_at, heartbeat_at, job_id, max_job_ms
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
                        max_job_ms: r.opt_int(8)?,
                    })
                })
                .collect::<Result<_, StoreError>>()?;
            Ok((agents, now))
        })
    }
}
