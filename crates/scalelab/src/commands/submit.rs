//! `scalelab submit [--class CLASS | --host HOST] JOB…`: checks the job as `scalelab JOB` would
//! parse it, then queues it in the team's PostgreSQL store for an agent of its class, recording
//! who submitted it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use lab::env::ClassFilter;
use lab::store::NewJob;

use crate::cli::SubmitArgs;
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
    let job = NewJob {
        args: args.job.clone(),
        target: target.to_string(),
        carries_cmd: !checked.commands.is_empty(),
        max_attempts: args.attempts,
        check_history: args.check_history,
        user: os_user(),
        host: host_name(),
    };
    let mut out = crate::stdout::stdout();
    if let Some(every) = &args.every {
        let (id, next) = store
            .schedule_job(&job, every)
            .with_context(|| format!("scheduling the job in {location}"))?;
        let next_text = lab::timestamp::format_unix(next / 1000);
        if args.output.json() {
            lab::safe_text::write_json(
                &mut out,
                &serde_json::json!({"schedule": id, "every": every.to_string(), "next": next_text,
                    "class": target.to_string(), "args": args.job}),
            )?;
        } else {
            writeln!(
                out,
                "scheduled {id}: scalelab {} for {}, {every} UTC; next {next_text}",
                lab::safe_text::printable(&args.job.join(" ")),
                lab::safe_text::printable(&target.to_string()),
            )?;
            writeln!(out, "(`scalelab queue unschedule {id}` stops it)")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let id = store
        .submit_job(&job)
        .with_context(|| format!("queueing the job in {location}"))?;
    if args.output.json() {
        lab::safe_text::write_json(
            &mut out,
            &serde_json::json!({"id": id, "class": target.to_string(), "args": args.job}),
        )?;
    } else {
        writeln!(
            out,
            "queued job {id} for {}: scalelab {}",
            lab::safe_text::printable(&target.to_string()),
            lab::safe_text::printable(&args.job.join(" "))
        )?;
        writeln!(
            out,
            "(`scalelab queue` shows it; `scalelab queue wait {id}` waits for it)"
        )?;
    }
    Ok(ExitCode::SUCCESS)
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
