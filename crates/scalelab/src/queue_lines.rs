//! The lines `scalelab queue` prints and the dashboard's queue page shows, from one snapshot of
//! the queue (`app::queue`).

use app::queue::{QueueSnapshot, age, agent_class, job_detail};
use present::queue_table::{AgentLine, JobLine, ScheduleLine};
use store::JobState;

/// One line per job.
pub fn job_lines(q: &QueueSnapshot) -> Vec<JobLine> {
    q.jobs
        .iter()
        .map(|j| JobLine {
            id: j.id,
            state: match (&j.state, j.outcome.as_deref()) {
                (JobState::Done, Some("regressed")) => "done: REGRESSED".into(),
                (state, _) => state.as_str().into(),
            },
            class: j.target.clone(),
            job: match &j.malformed {
                Some(why) => format!("malformed: {why}"),
                None => j.args.join(" "),
            },
            detail: job_detail(j, &q.agents, q.now_ms),
        })
        .collect()
}

/// One line per agent.
pub fn agent_lines(q: &QueueSnapshot) -> Vec<AgentLine> {
    q.agents
        .iter()
        .map(|a| AgentLine {
            host: a.host.clone(),
            state: if a.alive { "alive" } else { "gone" }.into(),
            class: agent_class(a).map_or_else(|| "?".into(), |c| c.to_string()),
            allow: a.allow.clone(),
            heartbeat: format!("{} ago", age(q.now_ms - a.heartbeat_at_ms)),
            job: a
                .job_id
                .filter(|_| a.alive)
                .map_or_else(|| "-".into(), |id| id.to_string()),
        })
        .collect()
}

/// One line per recurring job.
pub fn schedule_lines(q: &QueueSnapshot) -> Vec<ScheduleLine> {
    let state_of = |id: i64| {
        q.jobs
            .iter()
            .find(|j| j.id == id)
            .map_or("not shown", |j| j.state.as_str())
    };
    q.schedules
        .iter()
        .map(|r| ScheduleLine {
            id: r.id,
            every: match (&r.stopped_why, r.active) {
                (_, true) => format!("{} UTC", r.every),
                (Some(why), false) => format!("stopped: {why}"),
                (None, false) => "stopped".into(),
            },
            class: r.target.clone(),
            job: match &r.malformed {
                Some(why) => format!("malformed: {why}"),
                None => r.args.join(" "),
            },
            next: if r.active {
                model::timestamp::format_unix(r.next_at_ms / 1000)
            } else {
                "-".into()
            },
            jobs: match r.jobs.last() {
                Some(&last) => format!("{} (last: {last}, {})", r.jobs.len(), state_of(last)),
                None => "none yet".into(),
            },
        })
        .collect()
}
