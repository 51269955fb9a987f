//! `scalelab queue`: the lab's jobs, recurring jobs and agents (`present::queue_table`, or
//! JSON), with why a queued job waits; `queue cancel ID`; `queue unschedule ID`; `queue wait ID`
//! (its exit status is the job's end).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use present::queue_table::write_queue;
use store::{JobState, Store};

use crate::arguments::{QueueAction, QueueArgs};
use crate::{db_path, queue_lines};

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

fn list(store: &Store, args: &QueueArgs) -> Result<ExitCode> {
    let read = app::queue::snapshot(store, args.limit)?;
    let mut out = crate::stdout::stdout();
    if args.output.json() {
        let jobs: Vec<serde_json::Value> = read
            .jobs
            .iter()
            .map(|j| {
                let mut v = serde_json::to_value(j).unwrap_or_default();
                v["why"] = serde_json::json!(app::queue::job_detail(j, &read.agents, read.now_ms));
                v
            })
            .collect();
        model::safe_text::write_json(
            &mut out,
            &serde_json::json!({"jobs": jobs, "schedules": read.schedules, "agents": read.agents, "now_ms": read.now_ms}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    write_queue(
        &mut out,
        &queue_lines::job_lines(&read),
        &queue_lines::schedule_lines(&read),
        &queue_lines::agent_lines(&read),
        &crate::output::stdout(),
    )?;
    Ok(ExitCode::SUCCESS)
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
                model::safe_text::printable(&outcome)
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
