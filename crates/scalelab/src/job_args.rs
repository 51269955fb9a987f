//! A queued job's arguments, read as the CLI reads them: what `submit` checks before it queues
//! a job, and what an agent checks again before it runs one (it never trusts the queue: anyone
//! who can insert a row there can write any arguments).
//!
//! A job is `run …` or `ab …` — the commands that store runs — without `--db` (the agent stores
//! its runs in the queue's store) and without the tags the agent adds (`job`, `job_attempt`).

use std::time::Duration;

use anyhow::{Result, bail};
use clap::FromArgMatches;
use model::task_spec::TaskSpec;

use crate::arguments::{Cli, Command};
use crate::clap_command;

/// The tags an agent puts on a job's runs.
pub const JOB_TAG: &str = "job";
/// The attempt that stored a run.
pub const ATTEMPT_TAG: &str = "job_attempt";

/// `submit`'s own options, which a user may write after the job by mistake.
const SUBMIT_OPTIONS: &[&str] = &[
    "--every",
    "--check-history",
    "--class",
    "--host",
    "--attempts",
];

/// A job's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedJob {
    /// `run` or `ab`.
    pub kind: &'static str,
    /// Every shell command it carries, with the option that carries it (`--cmd`, `--step`,
    /// `--prepare`, `--cleanup`, `--a`, `--b`); empty for a built-in workload.
    pub commands: Vec<(&'static str, String)>,
    /// The complete runs a finished job has stored: 1 for `run`, 2 for `ab` (A and B).
    pub runs: usize,
    /// The `history` arguments that follow a `run` job's series (its workload and parameters,
    /// or its command); `None` for an `ab`, which gives its own verdict.
    pub series: Option<Vec<String>>,
    /// What its length is made of.
    length: PlanLength,
}

/// What a job's length is made of: its task counts, trials per point and the least a trial
/// lasts (a built-in's warm-up and window; a command's length is unknown: 0).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PlanLength {
    tasks: Option<TaskSpec>,
    trials: u32,
    trial: Duration,
    sides: u32,
}

impl CheckedJob {
    /// The least time the job takes on a machine of `cpus` CPUs: every trial's warm-up and
    /// window (0 for a command, whose trials last as long as it runs).
    pub fn least_time(&self, cpus: u32) -> Duration {
        let l = &self.length;
        let points = match &l.tasks {
            Some(spec) => spec.points(cpus).map_or(1, |p| p.len()),
            None => model::task_spec::default_points(cpus).len(),
        };
        l.trial
            .saturating_mul(l.trials)
            .saturating_mul(u32::try_from(points).unwrap_or(u32::MAX))
            .saturating_mul(l.sides)
    }
}

/// Parses `args` (what follows `scalelab`) as the CLI would, and keeps only what may be queued.
/// A plan no run may have (more trials than a run holds, a window past the longest) is refused
/// here, before it is queued.
pub fn check(args: &[String]) -> Result<CheckedJob> {
    if args.iter().any(|a| a == "--db" || a.starts_with("--db=")) {
        bail!(
            "a job cannot name --db: the agent stores its runs in the queue's store — leave it out"
        );
    }
    if let Some(first) = args.first()
        && first.starts_with('-')
    {
        bail!("a job starts with its command (`run` or `ab`), not with the option `{first}`");
    }
    let argv = std::iter::once("scalelab".to_owned()).chain(args.iter().cloned());
    let matches = match clap_command::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            let misplaced = args
                .iter()
                .filter_map(|a| a.split('=').next())
                .find(|a| SUBMIT_OPTIONS.contains(a));
            match misplaced {
                Some(option) => bail!(
                    "`{option}` is submit's, not the job's: put it before the job (`scalelab submit {option} … {} …`)",
                    args[0]
                ),
                None => bail!(
                    "the job does not parse as `scalelab {}`: {}",
                    args.join(" "),
                    e.render().to_string().trim()
                ),
            }
        }
    };
    let cli = Cli::from_arg_matches(&matches)?;
    let mut series = None;
    let (kind, commands, tags, length) = match &cli.command {
        Command::Run(run) => {
            let mut commands: Vec<(&'static str, String)> =
                run.cmd.iter().map(|c| ("--cmd", c.clone())).collect();
            commands.extend(run.steps.iter().map(|(_, c)| ("--step", c.clone())));
            commands.extend(run.prepare.iter().map(|c| ("--prepare", c.clone())));
            commands.extend(run.cleanup.iter().map(|c| ("--cleanup", c.clone())));
            commands.extend(run.servers.iter().map(|c| ("--server", c.clone())));
            commands.extend(run.ready.iter().map(|c| ("--ready", c.clone())));
            // Attaching traces another program's threads: only an agent that runs any
            // command (--allow-any-cmd) takes it; no directory can allow it.
            commands.extend(run.attach.iter().map(|a| ("--attach", a.to_string())));
            series = Some(match (&run.workload, &run.cmd) {
                (_, Some(cmd)) => vec!["--cmd".to_owned(), cmd.clone()],
                (Some(w), None) => std::iter::once(w.clone())
                    .chain(
                        run.params
                            .iter()
                            .flat_map(|(k, v)| ["-p".to_owned(), format!("{k}={v}")]),
                    )
                    .collect(),
                (None, None) => Vec::new(),
            });
            let trial = if run.cmd.is_some() {
                Duration::ZERO
            } else {
                let defaults = lab::RunConfig::new("");
                run.warmup.unwrap_or(defaults.warmup).as_duration()
                    + run.duration.unwrap_or(defaults.duration).as_duration()
            };
            let length = PlanLength {
                tasks: run.tasks.clone(),
                trials: run.runs,
                trial,
                sides: 1,
            };
            ("run", commands, &run.tags, length)
        }
        Command::Ab(ab) => {
            let mut commands = vec![("--a", ab.a.clone()), ("--b", ab.b.clone())];
            commands.extend(ab.prepare.iter().map(|c| ("--prepare", c.clone())));
            commands.extend(ab.cleanup.iter().map(|c| ("--cleanup", c.clone())));
            let length = PlanLength {
                tasks: ab.tasks.clone(),
                trials: ab.runs,
                trial: Duration::ZERO,
                sides: 2,
            };
            ("ab", commands, &ab.tags, length)
        }
        _ => bail!(
            "only `run …` and `ab …` can be queued (they store runs); `{}` cannot",
            args.first().map_or("", String::as_str)
        ),
    };
    if let Some((key, _)) = tags.iter().find(|(k, _)| k == JOB_TAG || k == ATTEMPT_TAG) {
        bail!("the tag `{key}` is the agent's (it names the job and its attempt); use another key");
    }
    let points = match &length.tasks {
        Some(spec) => spec.points(1).map_err(anyhow::Error::msg)?.len(),
        None => 1,
    };
    lab::check_runs(lab::Field::Runs, length.trials, points)?;
    if length.trial > model::limits::MAX_DURATION.as_duration() * 2 {
        bail!(
            "a trial of the job lasts longer than a run may (--duration and --warmup: 1 week each at most)"
        );
    }
    Ok(CheckedJob {
        kind,
        commands,
        runs: if kind == "ab" { 2 } else { 1 },
        series,
        length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_built_in_run_carries_no_command_and_an_ab_carries_both() {
        let run = check(&args("run atomic --tasks 1 --runs 1")).unwrap();
        assert_eq!((run.kind, run.runs), ("run", 1));
        assert!(run.commands.is_empty());
        let ab = check(&args("ab --a /bin/true --b /bin/false --tasks 1")).unwrap();
        assert_eq!(ab.kind, "ab");
        assert_eq!(
            ab.commands,
            [("--a", "/bin/true".into()), ("--b", "/bin/false".into())]
        );
        assert_eq!(ab.runs, 2);
        let cmd = check(&args("run --cmd /opt/b/x --prepare /opt/b/p --tasks 1")).unwrap();
        assert_eq!(
            cmd.commands,
            [
                ("--cmd", "/opt/b/x".into()),
                ("--prepare", "/opt/b/p".into())
            ]
        );
        assert_eq!(cmd.series.unwrap(), ["--cmd", "/opt/b/x"]);
        let params = check(&args("run create_unlink -p shared=true --tasks 1")).unwrap();
        assert_eq!(
            params.series.unwrap(),
            ["create_unlink", "-p", "shared=true"]
        );
        assert!(ab.series.is_none());
    }

    #[test]
    fn what_cannot_be_queued_is_refused_with_the_reason() {
        for (job, needle) in [
            ("ls", "only `run …` and `ab …`"),
            ("run atomic --db /tmp/x.db", "--db"),
            ("run atomic --db=/tmp/x.db", "--db"),
            ("run atomic --tag job=3", "the tag `job`"),
            ("run atomic --tag job_attempt=3", "the tag `job_attempt`"),
            ("run no_such_flag --bogus", "does not parse"),
            ("--json run atomic", "starts with its command"),
            ("run atomic --check-history", "put it before the job"),
            ("run atomic --every=mon 03:00", "`--every` is submit's"),
        ] {
            let err = check(&args(job)).unwrap_err().to_string();
            assert!(err.contains(needle), "{job}: {err}");
        }
    }

    #[test]
    fn a_plan_no_run_may_have_is_refused_and_the_least_time_is_its_windows() {
        let err = check(&args("run atomic --duration 168h --runs 4294967295"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("runs"), "{err}");
        let job = check(&args(
            "run spin --tasks 1,2 --runs 3 --duration 2s --warmup 1s",
        ))
        .unwrap();
        assert_eq!(job.least_time(2), Duration::from_secs(18));
        let default = check(&args("run spin --runs 1")).unwrap();
        assert_eq!(default.least_time(1), Duration::from_secs(6));
        assert_eq!(default.least_time(4), Duration::from_secs(18));
        let cmd = check(&args("run --cmd /opt/b/x --tasks 1,2")).unwrap();
        assert_eq!(cmd.least_time(2), Duration::ZERO);
    }
}
