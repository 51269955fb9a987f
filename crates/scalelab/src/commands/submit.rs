//! `scalelab submit [--class CLASS | --host HOST] JOB…`: checks the job as `scalelab JOB` would
//! parse it, then queues it in the team's PostgreSQL store for an agent of its class, recording
//! who submitted it. A plan that cannot end in time is refused here, before it is queued: one
//! longer than its `--timeout`, or than the `--max-job-time` of every registered agent of its
//! class.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use model::env::{AgentClass, ClassFilter};
use store::{NewJob, Store};

use super::agent::humantime;
use crate::arguments::SubmitArgs;
use crate::{db_path, job_args};

pub fn run(db: Option<&Path>, args: &SubmitArgs) -> Result<ExitCode> {
    let checked = job_args::check(&args.job)?;
    if args.check_history && checked.series.is_none() {
        anyhow::bail!(
            "--check-history follows a `run` job's series; an `ab` gives its own verdict (REGRESSED) — leave it out"
        );
    }
    let target = match (&args.host, &args.class) {
        (Some(host), _) => ClassFilter::host(host),
        (None, Some(class)) => class.clone(),
        (None, None) => ClassFilter::any(),
    };
    let location = db_path::resolve(db)?;
    let mut store = db_path::open_location(&location, true)?;
    let timeout = args.timeout.map(|t| t.as_duration());
    fits(&store, &checked, &target, timeout)?;
    let job = NewJob {
        args: args.job.clone(),
        target: target.to_string(),
        carries_cmd: !checked.commands.is_empty(),
        max_attempts: args.attempts,
        check_history: args.check_history,
        timeout_ms: timeout.map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX)),
        user: os_user(),
        host: host_name(),
    };
    let mut out = crate::stdout::stdout();
    if let Some(every) = &args.every {
        let (id, next) = store
            .schedule_job(&job, every)
            .with_context(|| format!("scheduling the job in {location}"))?;
        let next_text = model::timestamp::format_unix(next / 1000);
        if args.output.json() {
            model::safe_text::write_json(
                &mut out,
                &serde_json::json!({"schedule": id, "every": every.to_string(), "next": next_text,
                    "class": target.to_string(), "args": args.job}),
            )?;
        } else {
            writeln!(
                out,
                "scheduled {id}: scalelab {} for {}, {every} UTC; next {next_text}",
                model::safe_text::printable(&args.job.join(" ")),
                model::safe_text::printable(&target.to_string()),
            )?;
            writeln!(out, "(`scalelab queue unschedule {id}` stops it)")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let id = store
        .submit_job(&job)
        .with_context(|| format!("queueing the job in {location}"))?;
    if args.output.json() {
        model::safe_text::write_json(
            &mut out,
            &serde_json::json!({"id": id, "class": target.to_string(), "args": args.job}),
        )?;
    } else {
        writeln!(
            out,
            "queued job {id} for {}: scalelab {}",
            model::safe_text::printable(&target.to_string()),
            model::safe_text::printable(&args.job.join(" "))
        )?;
        writeln!(
            out,
            "(`scalelab queue` shows it; `scalelab queue wait {id}` waits for it)"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses a job whose plan cannot end in time: its least time (at the fewest CPUs its class
/// allows, 1 when it does not say) is longer than its `--timeout`, or than the `--max-job-time`
/// of every registered agent of its class.
fn fits(
    store: &Store,
    job: &job_args::CheckedJob,
    target: &ClassFilter,
    timeout: Option<Duration>,
) -> Result<()> {
    if timeout.is_some_and(|t| t.is_zero()) {
        bail!("--timeout 0 leaves the job no time: give its longest run, e.g. 2h");
    }
    let least = job.least_time(1);
    if let Some(timeout) = timeout
        && least > timeout
    {
        bail!(
            "the job's plan takes {} at least (its trials' warm-ups and windows), longer than --timeout {}: give more time, or fewer runs or task counts",
            humantime(least),
            humantime(timeout)
        );
    }
    let (agents, _) = store.agents()?;
    let caps: Vec<(String, Duration)> = agents
        .iter()
        .filter(|a| {
            serde_json::from_value::<AgentClass>(a.class.clone()).is_ok_and(|c| target.matches(&c))
        })
        .filter_map(|a| {
            let ms = u64::try_from(a.max_job_ms?).ok()?;
            Some((a.host.clone(), Duration::from_millis(ms)))
        })
        .collect();
    if let Some((host, longest)) = caps.iter().max_by_key(|(_, cap)| *cap)
        && least > *longest
    {
        bail!(
            "the job's plan takes {} at least, longer than any agent of class {target} runs a job (the longest, {host}'s --max-job-time, is {}): fewer runs or task counts, or an agent started with a longer --max-job-time",
            humantime(least),
            humantime(*longest)
        );
    }
    Ok(())
}

/// The submitting OS user: `$USER`, else the uid.
fn os_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata("/proc/self")
                .map_or_else(|_| "unknown user".into(), |m| format!("uid {}", m.uid()))
        })
}

/// This host's name, as the kernel has it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown host".into())
}
