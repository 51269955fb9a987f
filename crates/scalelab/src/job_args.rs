//! A queued job's arguments, read as the CLI reads them: what `submit` checks before it queues
//! a job, and what an agent checks again before it runs one (it never trusts the queue: anyone
//! who can insert a row there can write any arguments).
//!
//! A job is `run …` or `ab …` — the commands that store runs — without `--db` (the agent stores
//! its runs in the queue's store) and without the tags the agent adds (`job`, `job_attempt`).

use anyhow::{Result, bail};
use clap::FromArgMatches;

use crate::cli::{Cli, Command};
use crate::command_line;

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
    /// Every shell command it carries (`--cmd`, `--step`, `--prepare`, `--cleanup`, `--a`,
    /// `--b`); empty for a built-in workload.
    pub commands: Vec<String>,
    /// The complete runs a finished job has stored: 1 for `run`, 2 for `ab` (A and B).
    pub runs: usize,
    /// The `history` arguments that follow a `run` job's series (its workload and parameters,
    /// or its command); `None` for an `ab`, which gives its own verdict.
    pub series: Option<Vec<String>>,
}

/// Parses `args` (what follows `scalelab`) as the CLI would, and keeps only what may be queued.
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
    let matches = match command_line::command().try_get_matches_from(argv) {
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
    let (kind, commands, tags) = match &cli.command {
        Command::Run(run) => {
            let mut commands: Vec<String> = run.cmd.iter().cloned().collect();
            commands.extend(run.steps.iter().map(|(_, c)| c.clone()));
            commands.extend(run.prepare.iter().cloned());
            commands.extend(run.cleanup.iter().cloned());
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
            ("run", commands, &run.tags)
        }
        Command::Ab(ab) => {
            let mut commands = vec![ab.a.clone(), ab.b.clone()];
            commands.extend(ab.prepare.iter().cloned());
            commands.extend(ab.cleanup.iter().cloned());
            ("ab", commands, &ab.tags)
        }
        _ => bail!(
            "only `run …` and `ab …` can be queued (they store runs); `{}` cannot",
            args.first().map_or("", String::as_str)
        ),
    };
    if let Some((key, _)) = tags.iter().find(|(k, _)| k == JOB_TAG || k == ATTEMPT_TAG) {
        bail!("the tag `{key}` is the agent's (it names the job and its attempt); use another key");
    }
    Ok(CheckedJob {
        kind,
        commands,
        runs: if kind == "ab" { 2 } else { 1 },
        series,
    })
}

/// Which commands an agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Built-in workloads only.
    BuiltIns,
    /// Commands starting with one of these prefixes too.
    Prefixes(Vec<String>),
    /// Any command.
    Any,
}

impl Allow {
    /// Why this agent will not run `job`, or `None` when it will.
    pub fn refusal(&self, job: &CheckedJob) -> Option<String> {
        let first = job.commands.first()?;
        match self {
            Allow::Any => None,
            Allow::BuiltIns => Some(format!(
                "it carries a command (`{}`) and this agent runs built-in workloads only — start it with --allow-cmd PREFIX or --allow-any-cmd",
                short(first)
            )),
            Allow::Prefixes(prefixes) => {
                if let Some(c) = job.commands.iter().find(|c| c.contains(SHELL_SYNTAX)) {
                    return Some(format!(
                        "its command `{}` uses the shell's syntax ({}), which a prefix cannot vouch for — only an agent with --allow-any-cmd runs it",
                        short(c),
                        SHELL_SYNTAX.iter().collect::<String>()
                    ));
                }
                job.commands
                .iter()
                .find(|c| !prefixes.iter().any(|p| c.starts_with(p.as_str())))
                .map(|c| {
                    format!(
                        "its command `{}` starts with none of this agent's --allow-cmd prefixes ({})",
                        short(c),
                        prefixes.join(", ")
                    )
                })
            }
        }
    }
}

impl std::fmt::Display for Allow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allow::BuiltIns => f.write_str("built-ins"),
            Allow::Any => f.write_str("any command"),
            Allow::Prefixes(p) => write!(f, "built-ins, commands under {}", p.join(" ")),
        }
    }
}

/// What lets a command run more than the program it starts with: `sh -c` would run
/// `/opt/bench/x; rm -rf ~` although it starts with `/opt/bench/`.
const SHELL_SYNTAX: &[char] = &[
    ';', '|', '&', '$', '`', '<', '>', '(', ')', '\n', '\\', '*', '?', '~',
];

/// A command cut to a line's worth, for a message.
fn short(command: &str) -> String {
    let mut text: String = command.chars().take(80).collect();
    if text.len() < command.len() {
        text.push('…');
    }
    text
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
        assert_eq!(ab.commands, ["/bin/true", "/bin/false"]);
        assert_eq!(ab.runs, 2);
        let cmd = check(&args("run --cmd /opt/b/x --prepare /opt/b/p --tasks 1")).unwrap();
        assert_eq!(cmd.commands, ["/opt/b/x", "/opt/b/p"]);
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
    fn the_allow_list_is_checked_against_every_command_a_job_carries() {
        let job = check(&args("run --cmd /opt/b/x --cleanup /usr/bin/rm --tasks 1")).unwrap();
        let builtin = check(&args("run atomic")).unwrap();
        assert!(Allow::BuiltIns.refusal(&builtin).is_none());
        assert!(
            Allow::BuiltIns
                .refusal(&job)
                .unwrap()
                .contains("--allow-cmd")
        );
        let some = Allow::Prefixes(vec!["/opt/b/".into()]);
        assert!(some.refusal(&job).unwrap().contains("/usr/bin/rm"));
        let both = Allow::Prefixes(vec!["/opt/b/".into(), "/usr/bin/".into()]);
        assert!(both.refusal(&job).is_none());
        let chained = check(&["run".into(), "--cmd".into(), "/opt/b/x; rm -rf ~".into()]).unwrap();
        assert!(both.refusal(&chained).unwrap().contains("shell"));
        assert!(Allow::Any.refusal(&chained).is_none());
        assert!(Allow::Any.refusal(&job).is_none());
    }
}
