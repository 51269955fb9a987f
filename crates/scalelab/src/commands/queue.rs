//! `scalelab queue`: the lab's jobs, recurring jobs and agents (`present::queue_table`, or
//! JSON), with why a queued job waits; `queue cancel ID`; `queue unschedule ID`; `queue wait ID`
//! (its exit status is the job's end).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use lab::env::{AgentClass, ClassFilter};
use lab::store::{AgentRow, Job, JobState, Schedule, Store};
use present::queue_table::{AgentLine, JobLine, ScheduleLine, write_queue};

use crate::cli::{QueueAction, QueueArgs};
use crate::db_path;

pub fn run(db: Option<&Path>, args: &QueueArgs) -> Result<ExitCode> {
    let location = db_path::resolve(db)?;
    let mut store = db_path::open_location(&location, false)?;
    match &args.action {
        None => list(&store, args),
        Some(QueueAction::Cancel { id }) => cancel(&mut store, *id),
        Some(QueueAction::Unschedule { id }) => {
            if !store.unschedule(*id)? {
                bail!("no active schedule {id} (`scalelab queue` lists the recurring jobs)");
            }
            println!("schedule {id} stopped; the jobs it queued stay");
            Ok(ExitCode::SUCCESS)
        }
        Some(QueueAction::Wait { id, timeout }) => {
            wait(&store, *id, timeout.map(|t| t.as_duration()))
        }
    }
}

/// What the queue holds now, read in one go, and as the lines `queue` and the dashboard show.
pub struct QueueRead {
    pub jobs: Vec<Job>,
    pub schedules: Vec<Schedule>,
    pub agents: Vec<AgentRow>,
    /// The server's clock when read (ms since the epoch).
    pub now: i64,
}

impl QueueRead {
    /// The newest `limit` jobs, every schedule and agent.
    pub fn from(store: &Store, limit: usize) -> Result<QueueRead> {
        let jobs = store.jobs(Some(limit))?;
        let (agents, now) = store.agents()?;
        let schedules = store.schedules()?;
        Ok(QueueRead {
            jobs,
            schedules,
            agents,
            now,
        })
    }

    pub fn job_lines(&self) -> Vec<JobLine> {
        self.jobs
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
                detail: detail(j, &self.agents, self.now),
            })
            .collect()
    }

    pub fn agent_lines(&self) -> Vec<AgentLine> {
        self.agents
            .iter()
            .map(|a| AgentLine {
                host: a.host.clone(),
                state: if a.alive { "alive" } else { "gone" }.into(),
                class: class_of(a).map_or_else(|| "?".into(), |c| c.to_string()),
                allow: a.allow.clone(),
                heartbeat: format!("{} ago", age(self.now - a.heartbeat_at_ms)),
                job: a
                    .job_id
                    .filter(|_| a.alive)
                    .map_or_else(|| "-".into(), |id| id.to_string()),
            })
            .collect()
    }

    pub fn schedule_lines(&self) -> Vec<ScheduleLine> {
        let state_of = |id: i64| {
            self.jobs
                .iter()
                .find(|j| j.id == id)
                .map_or("not shown", |j| j.state.as_str())
        };
        self.schedules
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
                    lab::timestamp::format_unix(r.next_at_ms / 1000)
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
}

fn list(store: &Store, args: &QueueArgs) -> Result<ExitCode> {
    let read = QueueRead::from(store, args.limit)?;
    let mut out = crate::stdout::stdout();
    if args.output.json() {
        let jobs: Vec<serde_json::Value> = read
            .jobs
            .iter()
            .map(|j| {
                let mut v = serde_json::to_value(j).unwrap_or_default();
                v["why"] = serde_json::json!(detail(j, &read.agents, read.now));
                v
            })
            .collect();
        lab::safe_text::write_json(
            &mut out,
            &serde_json::json!({"jobs": jobs, "schedules": read.schedules, "agents": read.agents, "now_ms": read.now}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    write_queue(
        &mut out,
        &read.job_lines(),
        &read.schedule_lines(),
        &read.agent_lines(),
        &crate::output::stdout(),
    )?;
    Ok(ExitCode::SUCCESS)
}

fn class_of(agent: &AgentRow) -> Option<AgentClass> {
    serde_json::from_value(agent.class.clone()).ok()
}

/// Where a job runs, what it stored, or why it waits or failed.
fn detail(job: &Job, agents: &[AgentRow], now: i64) -> String {
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
                .filter(|r| r.status == lab::record::RunStatus::Complete)
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
        .filter(|a| class_of(a).is_some_and(|c| filter.matches(&c)))
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
fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172_800 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

fn cancel(store: &mut Store, id: i64) -> Result<ExitCode> {
    match store.cancel_job(id)? {
        None => bail!("no job {id} in the queue (`scalelab queue` lists them)"),
        Some(state) if state.is_final() => {
            bail!(
                "job {id} already ended ({}); nothing to cancel",
                state.as_str()
            )
        }
        Some(JobState::Running) => println!(
            "cancelled job {id}; its agent stops it at its next heartbeat (its finished trials are kept)"
        ),
        Some(_) => println!("cancelled job {id}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn wait(store: &Store, id: i64, timeout: Option<Duration>) -> Result<ExitCode> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(200);
    loop {
        let job = store
            .job(id)?
            .with_context(|| format!("no job {id} in the queue (`scalelab queue` lists them)"))?;
        if job.state.is_final() {
            let outcome = job.outcome.clone().unwrap_or_default();
            let mut out = crate::stdout::stdout();
            writeln!(
                out,
                "job {id} {}: {}",
                job.state.as_str(),
                lab::safe_text::printable(&outcome)
            )?;
            return Ok(match job.state {
                JobState::Done if outcome == "regressed" => ExitCode::from(1),
                JobState::Done => ExitCode::SUCCESS,
                _ => ExitCode::from(2),
            });
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            bail!(
                "job {id} is still {} after --timeout; it goes on (`scalelab queue` shows it)",
                job.state.as_str()
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}
