//! `queue`: what the lab's queue holds now — jobs, recurring jobs, agents, read in one go — and
//! where each job runs, what it stored, or why it waits. `scalelab queue` and the dashboard's
//! queue page both read theirs here.
//!
//! Invariant: reads only; the clock is the store's (`now_ms`), so ages agree across hosts.

use model::env::{AgentClass, ClassFilter};
use store::{AgentRow, Job, JobState, Schedule, Store};

use crate::error::AppError;

/// What the queue holds now.
#[derive(Debug, Clone)]
pub struct QueueSnapshot {
    /// The newest jobs asked for, oldest first.
    pub jobs: Vec<Job>,
    /// Every recurring job.
    pub schedules: Vec<Schedule>,
    /// Every agent that ever registered.
    pub agents: Vec<AgentRow>,
    /// The store's clock when read (ms since the epoch).
    pub now_ms: i64,
}

/// The newest `limit` jobs, every schedule and agent.
pub fn snapshot(store: &Store, limit: usize) -> Result<QueueSnapshot, AppError> {
    let jobs = store.jobs(Some(limit))?;
    let (agents, now_ms) = store.agents()?;
    let schedules = store.schedules()?;
    Ok(QueueSnapshot {
        jobs,
        schedules,
        agents,
        now_ms,
    })
}

/// The machine class an agent registered with (`None`: one this version cannot read).
pub fn agent_class(agent: &AgentRow) -> Option<AgentClass> {
    serde_json::from_value(agent.class.clone()).ok()
}

/// Where a job runs, what it stored, or why it waits or failed.
pub fn job_detail(job: &Job, agents: &[AgentRow], now: i64) -> String {
    let attempts = format!("attempt {} of {}", job.attempts, job.max_attempts);
    match job.state {
        JobState::Running => {
            let lease = job.lease_left_ms.map_or(String::new(), |l| {
                if l >= 0 {
                    format!(", lease {} left", age(l))
                } else {
                    format!(", lease ran out {} ago", age(-l))
                }
            });
            format!(
                "on {} for {}, {attempts}{lease}",
                job.agent.as_deref().unwrap_or("?"),
                age(now - job.started_at_ms.unwrap_or(now))
            )
        }
        JobState::Queued => why_waiting(job, agents, now),
        JobState::Done => {
            let complete: Vec<String> = job
                .runs
                .iter()
                .filter(|r| r.status == model::record::RunStatus::Complete)
                .map(|r| r.id.to_string())
                .collect();
            let partial = job.runs.len() - complete.len();
            let mut text = format!(
                "{}: run{} {}",
                job.outcome.as_deref().unwrap_or("ok"),
                if complete.len() == 1 { "" } else { "s" },
                if complete.is_empty() {
                    "none".into()
                } else {
                    complete.join(", ")
                }
            );
            if partial > 0 {
                text.push_str(&format!(" (+{partial} partial from a lost attempt)"));
            }
            if job.attempts > 1 {
                text.push_str(&format!(", {attempts}"));
            }
            text
        }
        JobState::Failed | JobState::Cancelled => job
            .outcome
            .clone()
            .unwrap_or_else(|| "no reason recorded".into()),
    }
}

/// Why nobody has taken a queued job: no live agent of its class (and when one was last seen),
/// or the agents of its class refuse it, or they are busy.
fn why_waiting(job: &Job, agents: &[AgentRow], now: i64) -> String {
    let waited = format!("waiting {}", age(now - job.submitted_at_ms));
    let Ok(filter) = ClassFilter::parse(&job.target) else {
        return format!("{waited}; its class `{}` does not parse here", job.target);
    };
    let matching: Vec<&AgentRow> = agents
        .iter()
        .filter(|a| agent_class(a).is_some_and(|c| filter.matches(&c)))
        .collect();
    let live: Vec<&&AgentRow> = matching.iter().filter(|a| a.alive).collect();
    if live.is_empty() {
        return match matching.iter().max_by_key(|a| a.heartbeat_at_ms) {
            Some(last) => format!(
                "{waited}; no live agent of class {} (last seen: {}, {} ago)",
                job.target,
                last.host,
                age(now - last.heartbeat_at_ms)
            ),
            None => format!(
                "{waited}; no agent of class {} has ever registered",
                job.target
            ),
        };
    }
    let refusals: Vec<&str> = job
        .log
        .iter()
        .map(|e| e.text.as_str())
        .filter(|t| t.starts_with("refused by "))
        .collect();
    let refused_by_all = live.iter().all(|a| {
        refusals
            .iter()
            .any(|r| r.starts_with(&format!("refused by {}:", a.host)))
    });
    if refused_by_all && let Some(last) = refusals.last() {
        return format!("{waited}; every live agent of its class refuses it ({last})");
    }
    format!(
        "{waited}; {} live agent{} of its class, busy",
        live.len(),
        if live.len() == 1 { "" } else { "s" }
    )
}

/// `ms` as a short duration: 12 s, 4 min, 3 h, 2 days.
pub fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172_800 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}
