//! `scalelab agent`: one lab machine's worker. It takes the machine's agent lock (one agent per
//! machine, whatever its host name says) and registers its host and machine class in the team's
//! store (one agent per host), then loops: renew its heartbeat, take back the jobs of agents
//! that died (`Store::reap_jobs`), take the oldest job its class matches and its allow-list
//! ([`allow_list`]) permits, wait for the machine to be quiet ([`quiet`]), run the job as the
//! CLI would (`job_process`: `scalelab JOB --tag job=ID --tag job_attempt=K`, a child that dies
//! with the agent), renewing the job's lease while it runs, and record how it ended. An empty
//! queue is looked at again after a pause that doubles up to `--poll`.
//!
//! No row stops it: a malformed job is failed and a malformed schedule stopped, each said once.
//! No job runs for ever: past its timeout (its own, or derived from its plan, never past
//! `--max-job-time`) its process tree is killed, its partial runs are kept as incomplete and the
//! job fails "timed out".
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

mod allow_list;
mod job_process;
mod quiet;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use model::env::{AgentClass, ClassFilter, Fingerprint};
use store::{Candidate, Claimed, JobState, Store, Verdict};

pub use self::allow_list::Allow;
use self::job_process::{Ended, JobProcess};
use crate::arguments::AgentArgs;
use crate::db_path;
use crate::job_args::{self, CheckedJob};

/// What a job whose plan gives no length (a command's) may run for at most, below the agent's
/// `--max-job-time`: the plan's least time three times over, plus this.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(600);

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
    /// `--max-job-time`.
    max_job_time: Duration,
    /// This machine's online CPUs (a plan's length depends on its task counts).
    cpus: u32,
    stop: Arc<AtomicBool>,
}

pub fn run(db: Option<&Path>, args: &AgentArgs) -> Result<ExitCode> {
    let Some(db) = db else {
        bail!(
            "an agent needs the team's store: pass --db postgres://USER@HOST/DB (or set SCALELAB_DB)"
        );
    };
    let location = db_path::resolve(Some(db))?;
    let me = identity()?;
    let (allow, warnings) = Allow::from_args(&args.allow_cmd, args.allow_any_cmd)?;
    let lease = args.lease.as_duration();
    if lease < Duration::from_secs(1) {
        bail!(
            "--lease {} is too short to renew over a network: give 1s or more",
            humantime(lease)
        );
    }
    let max_job_time = args.max_job_time.as_duration();
    if max_job_time < Duration::from_secs(1) {
        bail!(
            "--max-job-time {} leaves no time to measure: give 1s or more",
            humantime(max_job_time)
        );
    }
    let _machine = machine_lock(&me)?;
    for warning in &warnings {
        eprintln!("{} {warning}", crate::output::stderr().warning());
    }
    let mut store = db_path::open_location(&location, true)?;
    let shown = if args.ignore_load {
        format!("{allow}; measures on a busy machine (--ignore-load)")
    } else {
        allow.to_string()
    };
    let max_job_ms = i64::try_from(max_job_time.as_millis()).unwrap_or(i64::MAX);
    store
        .register_agent(&me.host, &serde_json::to_string(&me)?, &shown, max_job_ms)
        .with_context(|| format!("registering this agent in {location}"))?;
    let stop = crate::stop_signal::install(store.interrupter())?;
    eprintln!(
        "agent {} ({me}) on {location}: runs {allow}, each job {} at most; waiting for jobs",
        me.host,
        humantime(max_job_time)
    );
    let mut agent = Agent {
        store,
        me,
        allow,
        db: db.as_os_str().to_owned(),
        lease,
        busy_wait: args.busy_wait.as_duration(),
        ignore_load: args.ignore_load,
        max_job_time,
        cpus: crate::measure::online_cpus(),
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
        let due = agent.store.queue_due(test_clock())?;
        for (schedule, job) in due.queued {
            eprintln!("schedule {schedule} came due: queued job {job}");
        }
        for (schedule, why) in due.stopped {
            eprintln!(
                "schedule {schedule} stopped: malformed: {}",
                model::safe_text::printable(&why)
            );
        }
        let me = agent.me.clone();
        let allow = agent.allow.clone();
        let (cpus, cap) = (agent.cpus, agent.max_job_time);
        let lease_ms = agent.lease_ms();
        let look = agent.store.claim_job(
            &me.host,
            lease_ms,
            |target| match ClassFilter::parse(target) {
                Ok(filter) => filter.matches(&me),
                Err(_) => true,
            },
            |c| judge(c, &me, &allow, cpus, cap),
        )?;
        for (job, why) in look.malformed {
            eprintln!(
                "job {job}: failed as malformed: {}",
                model::safe_text::printable(&why)
            );
        }
        match look.claimed {
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

/// This machine's agent lock (one agent per machine, whatever its host name; in a debug
/// build playing another host, one per played host).
fn machine_lock(me: &AgentClass) -> Result<sys::MachineLock> {
    let name =
        if cfg!(debug_assertions) && std::env::var_os("SCALELAB_TEST_AGENT_IDENTITY").is_some() {
            let host: String = me
                .host
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("agent-{host}.lock")
        } else {
            "agent.lock".to_owned()
        };
    sys::MachineLock::take(&name).map_err(|e| match e {
        sys::MachineLockError::Held { path, holder } => anyhow::anyhow!(
            "an agent already runs on this machine ({}, lock {}), under whatever host name — one agent per machine measures; stop it first",
            holder.map_or_else(|| "another process".to_owned(), |p| format!("pid {p}")),
            path.display()
        ),
        other => anyhow::Error::new(other).context("taking this machine's agent lock"),
    })
}

/// Whether the agent of class `me`, allowing `allow`, with `cpus` CPUs and jobs of `cap` at
/// most, takes `job`.
fn judge(job: &Candidate, me: &AgentClass, allow: &Allow, cpus: u32, cap: Duration) -> Verdict {
    let Ok(filter) = ClassFilter::parse(&job.target) else {
        return Verdict::Refuse(format!(
            "its class `{}` does not parse here (an older scalelab?)",
            model::safe_text::printable(&job.target)
        ));
    };
    if !filter.matches(me) {
        return Verdict::Skip;
    }
    match job_args::check(&job.args) {
        Err(e) => Verdict::Refuse(format!(
            "its arguments do not parse here: {}",
            model::safe_text::printable(&format!("{e:#}"))
        )),
        Ok(checked) => {
            if let Some(why) = allow.refusal(&checked) {
                return Verdict::Refuse(why);
            }
            let least = checked.least_time(cpus);
            if least > cap {
                return Verdict::Refuse(format!(
                    "its plan takes {} at least, longer than this agent's --max-job-time {}",
                    humantime(least),
                    humantime(cap)
                ));
            }
            Verdict::Take
        }
    }
}

/// How long `job` (`checked`) may run on an agent with jobs of `cap` at most and `cpus` CPUs,
/// and where the bound comes from.
fn time_limit(job: &Claimed, checked: &CheckedJob, cap: Duration, cpus: u32) -> (Duration, String) {
    let capped = |d: Duration, from: String| {
        if d > cap {
            (cap, "this agent's --max-job-time".to_owned())
        } else {
            (d, from)
        }
    };
    if let Some(ms) = job.timeout_ms {
        return capped(
            Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)),
            "its --timeout".into(),
        );
    }
    let least = checked.least_time(cpus);
    if least.is_zero() {
        return (cap, "this agent's --max-job-time".into());
    }
    capped(
        least.saturating_mul(3).saturating_add(TIMEOUT_MARGIN),
        format!("three times its plan's {} plus 10 min", humantime(least)),
    )
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
        let checked = match job_args::check(&job.args) {
            Ok(checked) => checked,
            Err(e) => {
                let why = format!("its arguments do not parse here: {e:#}");
                self.store
                    .finish_job(&host, job.id, job.attempt, JobState::Failed, &why)?;
                return Ok(());
            }
        };
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
        // Judged again just before it starts: the programs it names may have changed while it
        // waited for a quiet machine.
        if let Some(why) = self.allow.refusal(&checked) {
            let outcome = format!("refused by {host}: {why}");
            self.store
                .finish_job(&host, job.id, job.attempt, JobState::Failed, &outcome)?;
            eprintln!("job {}: {}", job.id, model::safe_text::printable(&outcome));
            return Ok(());
        }
        let (limit, limit_from) = time_limit(job, &checked, self.max_job_time, self.cpus);
        let started = Instant::now();
        eprintln!(
            "job {} (attempt {}): scalelab {} (at most {}: {limit_from})",
            job.id,
            job.attempt,
            model::safe_text::printable(&job.args.join(" ")),
            humantime(limit)
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
            if started.elapsed() >= limit {
                process.stop();
                return self.time_out(job, limit, &limit_from);
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
            "job {} (attempt {}): {} in {:.1} s: {}{}",
            job.id,
            job.attempt,
            state.as_str(),
            started.elapsed().as_secs_f64(),
            model::safe_text::printable(&outcome),
            if recorded {
                ""
            } else {
                " (not recorded: no longer this agent's)"
            }
        );
        Ok(())
    }

    /// Ends `job`, whose process tree was just stopped at its time `limit` (from `from`): its
    /// partial runs are kept as incomplete, with why, and the job fails "timed out".
    fn time_out(&mut self, job: &Claimed, limit: Duration, from: &str) -> Result<()> {
        let host = self.me.host.clone();
        let why = format!("timed out after {} ({from})", humantime(limit));
        let runs = self.store.mark_job_runs_incomplete(
            job.id,
            job.attempt,
            &format!("job {} {why}: stopped by its agent on {host}", job.id),
        )?;
        let kept = match runs.as_slice() {
            [] => "no run was stored".to_owned(),
            [one] => format!("run {one} kept as incomplete"),
            many => format!(
                "runs {} kept as incomplete",
                many.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let outcome = format!("{why}; {kept}");
        self.store
            .finish_job(&host, job.id, job.attempt, JobState::Failed, &outcome)?;
        eprintln!("job {}: {outcome}", job.id);
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
            .filter(|r| r.status == model::record::RunStatus::Complete)
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

/// A duration as `12 s`, `3.5 min` or `24.0 h`.
pub(crate) fn humantime(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
