//! `scalelab agent`: one lab machine's worker. It registers its host and machine class in the
//! team's store (one agent per host: its lock), then loops: renew its heartbeat, take back the
//! jobs of agents that died (`Store::reap_jobs`), take the oldest job its class matches and its
//! allow-list permits, wait for the machine to be quiet ([`quiet`]), run the job as the CLI
//! would (`job_process`: `scalelab JOB --tag job=ID --tag job_attempt=K`, a child that dies with
//! the agent), renewing the job's lease while it runs, and record how it ended. An empty queue
//! is looked at again after a pause that doubles up to `--poll`.
//!
//! Stopped by SIGTERM or Ctrl-C: the job in hand is stopped as `scalelab run` is by SIGTERM
//! (its finished trials kept, the run marked interrupted) and given back to the queue.
//!
//! Each loop also queues the recurring jobs that came due (`Store::queue_due`: once per
//! occurrence, however many agents see it due), and a done job submitted with
//! `--check-history` is followed by `history --check` on its series.
//!
//! Its identity is its fingerprint's host name and machine class. Debug builds (the tests'
//! only) read `SCALELAB_TEST_AGENT_IDENTITY` (`host=a1,cpus=32,…`) over it, so that one
//! machine can play a lab of many, and `SCALELAB_TEST_CLOCK_FILE` (ms since the epoch) as the
//! schedules' clock; a release build has neither.

mod job_process;
mod quiet;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use lab::env::{AgentClass, ClassFilter, Fingerprint};
use lab::store::{Candidate, Claimed, JobState, Store, Verdict};

use self::job_process::{Ended, JobProcess};
use crate::cli::AgentArgs;
use crate::db_path;
use crate::job_args::{self, Allow};

/// The first pause after an empty look at the queue; it doubles up to `--poll`.
const FIRST_PAUSE: Duration = Duration::from_millis(200);

/// What an agent is and how it works, fixed at its start.
struct Agent {
    store: Store,
    me: AgentClass,
    allow: Allow,
    /// The `--db` the job's process is given (the agent's own, as typed: a URL may carry its
    /// password, so it travels in the environment, never on a command line).
    db: std::ffi::OsString,
    lease: Duration,
    busy_wait: Duration,
    ignore_load: bool,
    stop: Arc<AtomicBool>,
}

pub fn run(db: Option<&Path>, args: &AgentArgs) -> Result<ExitCode> {
    let Some(db) = db else {
        bail!(
            "an agent needs the team's store: pass --db postgres://USER@HOST/DB (or set SCALELAB_DB)"
        );
    };
    let location = db_path::resolve(Some(db))?;
    let mut store = db_path::open_location(&location, true)?;
    let me = identity()?;
    let allow = if args.allow_any_cmd {
        Allow::Any
    } else if args.allow_cmd.is_empty() {
        Allow::BuiltIns
    } else {
        Allow::Prefixes(args.allow_cmd.clone())
    };
    let lease = args.lease.as_duration();
    if lease < Duration::from_secs(1) {
        bail!(
            "--lease {} is too short to renew over a network: give 1s or more",
            humantime(lease)
        );
    }
    let shown = if args.ignore_load {
        format!("{allow}; measures on a busy machine (--ignore-load)")
    } else {
        allow.to_string()
    };
    store
        .register_agent(&me.host, &serde_json::to_string(&me)?, &shown)
        .with_context(|| format!("registering this agent in {location}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the SIGTERM handler")?;
    }
    eprintln!(
        "agent {} ({me}) on {location}: runs {allow}; waiting for jobs",
        me.host
    );
    let mut agent = Agent {
        store,
        me,
        allow,
        db: db.as_os_str().to_owned(),
        lease,
        busy_wait: args.busy_wait.as_duration(),
        ignore_load: args.ignore_load,
        stop,
    };
    let poll = args.poll.as_duration().max(FIRST_PAUSE);
    let mut pause = FIRST_PAUSE;
    let mut ran = 0u64;
    while !agent.stopping() && args.max_jobs.is_none_or(|max| ran < max) {
        agent
            .store
            .heartbeat(&agent.me.host, None, agent.lease_ms())?;
        for reaped in agent.store.reap_jobs()? {
            eprintln!(
                "job {}: {}; now {}",
                reaped.id,
                reaped.why,
                reaped.now.as_str()
            );
        }
        for (schedule, job) in agent.store.queue_due(test_clock())? {
            eprintln!("schedule {schedule} came due: queued job {job}");
        }
        let me = agent.me.clone();
        let allow = agent.allow.clone();
        let lease_ms = agent.lease_ms();
        match agent
            .store
            .claim_job(&me.host, lease_ms, |c| judge(c, &me, &allow))?
        {
            Some(job) => {
                pause = FIRST_PAUSE;
                agent.run_job(&job)?;
                ran += 1;
            }
            None => {
                agent.sleep(pause);
                pause = (pause * 2).min(poll);
            }
        }
    }
    agent.store.heartbeat(&agent.me.host, None, 0)?;
    eprintln!(
        "agent {} stopped after {ran} job{}",
        agent.me.host,
        if ran == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}

/// This machine's identity: its fingerprint's host and class (and, in a debug build, the
/// tests' override).
fn identity() -> Result<AgentClass> {
    let fp = Fingerprint::capture(&std::env::current_dir().unwrap_or_else(|_| "/".into()));
    let me = AgentClass::of(&fp, std::env::consts::ARCH);
    #[cfg(debug_assertions)]
    if let Ok(text) = std::env::var("SCALELAB_TEST_AGENT_IDENTITY") {
        return me
            .with_overrides(&text)
            .context("SCALELAB_TEST_AGENT_IDENTITY");
    }
    Ok(me)
}

/// The clock schedules are judged by: the server's, except in a debug build whose
/// `SCALELAB_TEST_CLOCK_FILE` holds ms since the epoch (the tests' fake clock).
fn test_clock() -> Option<i64> {
    #[cfg(debug_assertions)]
    if let Some(path) = std::env::var_os("SCALELAB_TEST_CLOCK_FILE") {
        return std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
    }
    None
}

/// Whether the agent of class `me`, allowing `allow`, takes `job`.
fn judge(job: &Candidate, me: &AgentClass, allow: &Allow) -> Verdict {
    let Ok(filter) = ClassFilter::parse(&job.target) else {
        return Verdict::Refuse(format!(
            "its class `{}` does not parse here (an older scalelab?)",
            job.target
        ));
    };
    if !filter.matches(me) {
        return Verdict::Skip;
    }
    match job_args::check(&job.args) {
        Err(e) => Verdict::Refuse(format!("its arguments do not parse here: {e:#}")),
        Ok(checked) => match allow.refusal(&checked) {
            Some(why) => Verdict::Refuse(why),
            None => Verdict::Take,
        },
    }
}

impl Agent {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// How often a running job's lease is renewed.
    fn beat(&self) -> Duration {
        self.lease / 4
    }

    /// Sleeps `d`, waking early when stopped.
    fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stopping() && Instant::now() < end {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
        }
    }

    /// Renews `job`'s lease; false when it is no longer this agent's.
    fn renew(&mut self, job: &Claimed) -> Result<bool> {
        Ok(self
            .store
            .heartbeat(&self.me.host, Some((job.id, job.attempt)), self.lease_ms())?)
    }

    fn run_job(&mut self, job: &Claimed) -> Result<()> {
        let host = self.me.host.clone();
        let checked = job_args::check(&job.args)?;
        if job.attempt > 1
            && let Some(attempt) = self.stored_by_earlier_attempt(job, checked.runs)?
        {
            let outcome =
                format!("ok (its runs were stored by attempt {attempt} before its agent was lost)");
            self.store
                .finish_job(&host, job.id, job.attempt, JobState::Done, &outcome)?;
            return Ok(());
        }
        if !self.wait_until_quiet(job)? {
            return Ok(());
        }
        let started = Instant::now();
        eprintln!(
            "job {} (attempt {}): scalelab {}",
            job.id,
            job.attempt,
            job.args.join(" ")
        );
        let mut process = JobProcess::start(job, &self.db)?;
        let mut last_beat = Instant::now();
        let ended = loop {
            if let Some(ended) = process.ended()? {
                break ended;
            }
            if self.stopping() {
                process.stop();
                let why = format!(
                    "the agent was stopped during attempt {}; its finished trials are kept",
                    job.attempt
                );
                self.store.release_job(&host, job.id, job.attempt, &why)?;
                eprintln!("job {}: given back ({why})", job.id);
                return Ok(());
            }
            if last_beat.elapsed() >= self.beat() {
                last_beat = Instant::now();
                if !self.renew(job)? {
                    process.stop();
                    self.store.note_job(
                        job.id,
                        &format!("attempt {} stopped on {host}: the job is no longer this agent's (cancelled, or taken back)", job.attempt),
                    )?;
                    eprintln!("job {}: stopped, no longer this agent's", job.id);
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (state, outcome) = match ended {
            Ended::Exit(0) if job.check_history => match &checked.series {
                Some(series) => self.check_history(job, series)?,
                None => (JobState::Done, "ok".to_owned()),
            },
            Ended::Exit(0) => (JobState::Done, "ok".to_owned()),
            Ended::Exit(1) if checked.kind == "ab" => (JobState::Done, "regressed".to_owned()),
            Ended::Exit(code) => (
                JobState::Failed,
                format!("exit {code}: {}", process.last_error()),
            ),
            Ended::Signal(name) => (
                JobState::Failed,
                format!("killed by {name}: {}", process.last_error()),
            ),
        };
        let recorded = self
            .store
            .finish_job(&host, job.id, job.attempt, state, &outcome)?;
        eprintln!(
            "job {} (attempt {}): {} in {:.1} s: {outcome}{}",
            job.id,
            job.attempt,
            state.as_str(),
            started.elapsed().as_secs_f64(),
            if recorded {
                ""
            } else {
                " (not recorded: no longer this agent's)"
            }
        );
        Ok(())
    }

    /// `history SERIES --host HOST --check` on the job's series, as measured on this host:
    /// a new change point (exit 1) makes the job `regressed`; a history that cannot be judged
    /// (too few runs) leaves it `ok`, with why in its log.
    fn check_history(&mut self, job: &Claimed, series: &[String]) -> Result<(JobState, String)> {
        let mut args = vec!["history".to_owned()];
        args.extend(series.iter().cloned());
        args.extend([
            "--host".to_owned(),
            job_process::runs_host(),
            "--check".to_owned(),
        ]);
        let (code, last) = job_process::run_to_end(&args, &self.db)?;
        Ok(match code {
            Some(0) => (JobState::Done, "ok".to_owned()),
            Some(1) => {
                self.store
                    .note_job(job.id, &format!("history --check: {last}"))?;
                (JobState::Done, "regressed".to_owned())
            }
            _ => {
                self.store.note_job(
                    job.id,
                    &format!("history --check could not judge the series: {last}"),
                )?;
                (JobState::Done, "ok".to_owned())
            }
        })
    }

    /// The earlier attempt that stored every run `job` makes (`runs` complete ones), if any:
    /// its agent was lost after the runs were stored and before it recorded the end.
    fn stored_by_earlier_attempt(&self, job: &Claimed, runs: usize) -> Result<Option<u32>> {
        let Some(stored) = self.store.job(job.id)? else {
            return Ok(None);
        };
        let mut complete: std::collections::BTreeMap<u32, usize> = Default::default();
        for r in stored
            .runs
            .iter()
            .filter(|r| r.status == lab::record::RunStatus::Complete)
        {
            *complete.entry(r.attempt.unwrap_or(0)).or_default() += 1;
        }
        Ok(complete
            .into_iter()
            .find(|&(_, n)| n >= runs)
            .map(|(a, _)| a))
    }

    /// Waits (renewing the lease) for the machine to be quiet, up to `--busy-wait`; gives the
    /// job back and returns false when it stays busy, the agent is stopped, or the job is no
    /// longer this agent's.
    fn wait_until_quiet(&mut self, job: &Claimed) -> Result<bool> {
        let host = self.me.host.clone();
        if self.ignore_load {
            return Ok(true);
        }
        let start = Instant::now();
        loop {
            let busy = quiet::busy_findings();
            if busy.is_empty() {
                if start.elapsed() >= Duration::from_secs(2) {
                    self.store.note_job(
                        job.id,
                        &format!(
                            "waited {} on {host} for the machine to be quiet",
                            humantime(start.elapsed())
                        ),
                    )?;
                }
                return Ok(true);
            }
            if self.stopping() || start.elapsed() >= self.busy_wait {
                let why = format!(
                    "the machine stayed busy for {}: {}",
                    humantime(start.elapsed()),
                    busy.join("; ")
                );
                self.store.release_job(&host, job.id, job.attempt, &why)?;
                eprintln!("job {}: given back ({why})", job.id);
                self.sleep(self.beat());
                return Ok(false);
            }
            if !self.renew(job)? {
                return Ok(false);
            }
            self.sleep(self.beat().min(Duration::from_secs(5)));
        }
    }
}

/// A duration as `12 s` or `3.5 min`.
fn humantime(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}
