//! Measures the job queue (`store::queue`) under many agents against one PostgreSQL: per-claim
//! latency, claims per second, and the server connections that takes (bench/speed/queue-claim runs
//! it).
//!
//! Starts a throwaway server (`store::test_server`, reached over TCP on 127.0.0.1 as agents on
//! other hosts reach theirs), and for each configuration makes a fresh database, submits its
//! jobs, opens one `Store` (one connection) per simulated agent, registers each under its own
//! host name, and lets the agents loose at once (a barrier) until the queue is empty. Three
//! phases, each at every agent count asked:
//!
//! - `instant`: claim → finish at once. Every agent is always claiming, so this is the queue's
//!   ceiling and its worst contention: all agents read the same oldest candidates.
//! - `hold`: claim → sleep `--run-ms` → finish, so that agents overlap as real jobs do.
//! - `agent`: `hold` plus what `scalelab agent` does before each claim: a heartbeat and a
//!   `reap_jobs` (which locks every running job `FOR UPDATE SKIP LOCKED` while it looks).
//!
//! Each configuration then checks exactly-once: every job was claimed by one agent once, every
//! finish was accepted, and the store reads back every job `done` after one attempt. A monitor
//! connection samples `pg_stat_activity` every 10 ms: `conns` are the client connections on the
//! bench database (the agents plus the submitting store), `busy` the mean of those inside a
//! statement or transaction, `all` every backend the server shows (its own background
//! processes included, the monitor not). The same samples count what those connections wait on
//! (`wait_event`; none while on a CPU), in the JSON. CPU time per claim is read from `/proc`:
//! the server's (every child of its postmaster) and this process's (the agents' client side).
//!
//! Output: a table on stdout, then one JSON line per configuration (lines starting with `{`).
//! Exit status 1 when exactly-once failed anywhere.
//!
//! `--unmatched N` queues N jobs for a host no agent plays ahead of the measured ones: the
//! agents must find their jobs behind them (an agent once looked at only the oldest 512).
//!
//! usage: queue_claim [--jobs N] [--run-ms MS] [--rounds R] [--phases LIST] [--unmatched N] [--analyze] [--unix] [AGENTS…]

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use store::test_server::{self, PgServer};
use store::{JobState, Location, NewJob, Store, Verdict};

const USAGE: &str =
    "usage: queue_claim [--jobs N] [--run-ms MS] [--rounds R] [--phases LIST] [--unmatched N] [--analyze] [--unix] [AGENTS…]
  AGENTS         agent counts, one configuration each (default: 1 8 50; at most 90, the
                 throwaway server allows 100 connections)
  --jobs N       jobs per configuration of the instant phase (default 5000)
  --run-ms MS    how long each job of the hold and agent phases runs (default 20)
  --rounds R     jobs per agent in the hold and agent phases (default 40)
  --phases LIST  which phases, comma-separated: instant,hold,agent (default: all three)
  --unmatched N  queue N jobs for a host no agent plays (`host=gone`) before the measured
                 ones (default 0)
  --analyze      ANALYZE the jobs table once the jobs are in (autovacuum would, a minute
                 later): the planner then knows how many are queued
  --unix         reach the server over its Unix socket instead of TCP on 127.0.0.1";

/// A job's lease: far longer than any run here, so that nothing is reaped.
const LEASE_MS: i64 = 60_000;

/// How often the monitor samples `pg_stat_activity`.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// The unit of CPU times in `/proc/*/stat` (Linux's `USER_HZ`, fixed at 100 in its ABI).
const TICKS_PER_S: f64 = 100.0;

/// What the agents do with each job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Claim, finish at once.
    Instant,
    /// Claim, run for a while, finish.
    Hold,
    /// As `Hold`, with the agent command's heartbeat and reap before each claim.
    Agent,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Instant => "instant",
            Phase::Hold => "hold",
            Phase::Agent => "agent",
        }
    }

    fn parse(text: &str) -> Result<Phase, String> {
        [Phase::Instant, Phase::Hold, Phase::Agent]
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| format!("--phases: unknown phase {text:?} (instant, hold, agent)"))
    }
}

/// The command line, read once.
#[derive(Debug)]
struct Plan {
    agents: Vec<usize>,
    jobs: usize,
    run: Duration,
    rounds: usize,
    phases: Vec<Phase>,
    unmatched: usize,
    analyze: bool,
    unix: bool,
}

impl Plan {
    fn from_args(args: &[String]) -> Result<Plan, String> {
        let mut plan = Plan {
            agents: Vec::new(),
            jobs: 5000,
            run: Duration::from_millis(20),
            rounds: 40,
            phases: vec![Phase::Instant, Phase::Hold, Phase::Agent],
            unmatched: 0,
            analyze: false,
            unix: false,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .ok_or_else(|| format!("{flag} needs a value"))
                    .cloned()
            };
            let number = |flag: &str, text: String| {
                text.parse::<usize>()
                    .map_err(|_| format!("{flag}: {text:?} is not a whole number"))
            };
            match arg.as_str() {
                "--jobs" => plan.jobs = number("--jobs", value("--jobs")?)?,
                "--run-ms" => {
                    let ms = number("--run-ms", value("--run-ms")?)?;
                    plan.run = Duration::from_millis(ms as u64);
                }
                "--rounds" => plan.rounds = number("--rounds", value("--rounds")?)?,
                "--phases" => {
                    plan.phases = value("--phases")?
                        .split(',')
                        .map(Phase::parse)
                        .collect::<Result<_, _>>()?;
                }
                "--unmatched" => plan.unmatched = number("--unmatched", value("--unmatched")?)?,
                "--analyze" => plan.analyze = true,
                "--unix" => plan.unix = true,
                // Not an error: `main` prints the usage and succeeds.
                "-h" | "--help" => return Err(String::new()),
                other => plan.agents.push(number("AGENTS", other.to_owned())?),
            }
        }
        if plan.agents.is_empty() {
            plan.agents = vec![1, 8, 50];
        }
        if let Some(&n) = plan.agents.iter().find(|&&n| n == 0 || n > 90) {
            return Err(format!(
                "AGENTS: {n} is out of range: give 1 to 90 (the server allows 100 connections)"
            ));
        }
        Ok(plan)
    }

    /// Every configuration to measure, in order.
    fn configs(&self) -> Vec<Config> {
        let mut out = Vec::new();
        for &phase in &self.phases {
            for &agents in &self.agents {
                let (jobs, run) = match phase {
                    Phase::Instant => (self.jobs, Duration::ZERO),
                    Phase::Hold | Phase::Agent => (agents * self.rounds, self.run),
                };
                out.push(Config {
                    phase,
                    agents,
                    jobs,
                    run,
                    unmatched: self.unmatched,
                    analyze: self.analyze,
                });
            }
        }
        out
    }
}

/// One measured configuration.
#[derive(Debug, Clone, Copy)]
struct Config {
    phase: Phase,
    agents: usize,
    jobs: usize,
    run: Duration,
    /// Jobs for a host no agent plays, queued ahead of the measured ones.
    unmatched: usize,
    /// ANALYZE the jobs table before the agents start.
    analyze: bool,
}

/// What one agent saw: every latency, raw.
#[derive(Debug, Default)]
struct AgentLog {
    /// Each claim that took a job.
    claims: Vec<Duration>,
    /// Each finish.
    finishes: Vec<Duration>,
    /// Each heartbeat + reap before a claim (agent phase only).
    upkeep: Vec<Duration>,
    /// Candidates judged, over all claims that took a job: one per claim when no other agent
    /// was in the way, more when the oldest ones were locked or taken since the read.
    judged: u64,
    /// The jobs it took.
    ids: Vec<i64>,
    /// Finishes the store refused (the job was no longer this agent's).
    refused: usize,
}

/// `pg_stat_activity` over one configuration's run.
#[derive(Debug, Default, Clone)]
struct Connections {
    samples: usize,
    /// Client connections on the bench database, at most.
    max_clients: i64,
    /// Of those, inside a statement or transaction: summed over samples, and at most.
    busy_sum: i64,
    max_busy: i64,
    waits: Waits,
    /// Every backend the server lists (background processes too, the monitor not), at most.
    max_all: i64,
}

/// Connections per sample by what they wait on (`Type:Event`; `cpu` when active and waiting on
/// nothing, `idle` outside any transaction), summed over samples.
type Waits = BTreeMap<String, i64>;

impl Connections {
    fn per_sample(&self, sum: i64) -> f64 {
        sum as f64 / self.samples.max(1) as f64
    }

    fn mean_busy(&self) -> f64 {
        self.per_sample(self.busy_sum)
    }

    /// Mean connections per sample in each wait.
    fn waits_json(&self) -> serde_json::Value {
        self.waits
            .iter()
            .map(|(k, &v)| (k.clone(), serde_json::json!(self.per_sample(v))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

/// CPU seconds spent during a run, by side.
#[derive(Debug, Default, Clone, Copy)]
struct Cpu {
    server_s: f64,
    client_s: f64,
}

/// Nearest-rank percentiles of a set of latencies, in ms.
#[derive(Debug, Clone, Copy, Default)]
struct Spread {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

impl Spread {
    fn of(mut xs: Vec<Duration>) -> Spread {
        if xs.is_empty() {
            return Spread::default();
        }
        xs.sort_unstable();
        let rank = |p: f64| {
            let i = ((p / 100.0 * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
            xs[i].as_secs_f64() * 1e3
        };
        Spread {
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: rank(100.0),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max})
    }
}

/// A configuration's result.
#[derive(Debug)]
struct Outcome {
    config: Config,
    submit: Duration,
    wall: Duration,
    logs: Vec<AgentLog>,
    conns: Connections,
    cpu: Cpu,
    /// `Err` says how exactly-once failed.
    check: Result<(), String>,
}

impl Outcome {
    fn claims(&self) -> usize {
        self.logs.iter().map(|l| l.claims.len()).sum()
    }

    fn claims_per_s(&self) -> f64 {
        self.claims() as f64 / self.wall.as_secs_f64()
    }

    fn spread(&self, pick: impl Fn(&AgentLog) -> &Vec<Duration>) -> Spread {
        Spread::of(
            self.logs
                .iter()
                .flat_map(|l| pick(l).iter().copied())
                .collect(),
        )
    }

    /// CPU ms per claim taken (its finish and, in the agent phase, its upkeep included):
    /// server, client.
    fn cpu_per_claim(&self) -> (f64, f64) {
        let n = self.claims().max(1) as f64;
        (self.cpu.server_s * 1e3 / n, self.cpu.client_s * 1e3 / n)
    }

    fn judged_per_claim(&self) -> f64 {
        let judged: u64 = self.logs.iter().map(|l| l.judged).sum();
        judged as f64 / self.claims().max(1) as f64
    }

    /// Fewest and most jobs one agent took.
    fn per_agent(&self) -> (usize, usize) {
        let n = self.logs.iter().map(|l| l.claims.len());
        (n.clone().min().unwrap_or(0), n.max().unwrap_or(0))
    }

    fn json(&self) -> serde_json::Value {
        let c = &self.config;
        let (fewest, most) = self.per_agent();
        let (server_cpu, client_cpu) = self.cpu_per_claim();
        serde_json::json!({
            "bench": "queue_claim",
            "phase": c.phase.name(),
            "agents": c.agents,
            "jobs": c.jobs,
            "run_ms": c.run.as_millis() as u64,
            "unmatched": c.unmatched,
            "analyzed": c.analyze,
            "claims": self.claims(),
            "wall_s": self.wall.as_secs_f64(),
            "claims_per_s": self.claims_per_s(),
            "claim_ms": self.spread(|l| &l.claims).json(),
            "finish_ms": self.spread(|l| &l.finishes).json(),
            "upkeep_ms": self.spread(|l| &l.upkeep).json(),
            "judged_per_claim": self.judged_per_claim(),
            "cpu_ms_per_claim": {"server": server_cpu, "client": client_cpu},
            "jobs_per_agent": {"min": fewest, "max": most},
            "submit_per_s": c.jobs as f64 / self.submit.as_secs_f64(),
            "connections": {
                "clients_max": self.conns.max_clients,
                "busy_mean": self.conns.mean_busy(),
                "busy_max": self.conns.max_busy,
                "all_max": self.conns.max_all,
                "samples": self.conns.samples,
                "waits": self.conns.waits_json(),
            },
            "exactly_once": self.check.is_ok(),
            "problem": self.check.as_ref().err(),
        })
    }
}

/// The throwaway server and how its databases are reached.
struct Server {
    pg: PgServer,
    unix: bool,
}

impl Server {
    /// A new empty database: its name and the URL the stores open.
    fn database(&self) -> Result<(String, String), String> {
        let socket_url = self.pg.create_database();
        let name = socket_url
            .strip_prefix("postgres:///")
            .and_then(|rest| rest.split('?').next())
            .ok_or_else(|| format!("unexpected database URL {socket_url}"))?
            .to_owned();
        let url = if self.unix {
            socket_url
        } else {
            format!(
                "postgres://{}@127.0.0.1:{}/{name}?sslmode=disable",
                self.pg.superuser(),
                self.pg.port_number()
            )
        };
        Ok((name, url))
    }

    /// The server's postmaster, from its data folder (next to its socket folder).
    fn postmaster(&self) -> Result<u32, String> {
        let file = self
            .pg
            .socket_dir()
            .with_file_name("data")
            .join("postmaster.pid");
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        text.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| format!("{}: no pid on its first line", file.display()))
    }

    /// CPU seconds spent so far by each of the server's processes (the postmaster's children).
    fn cpu_by_process(&self, postmaster: u32) -> BTreeMap<u32, f64> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return BTreeMap::new();
        };
        dir.filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let (ppid, cpu) = proc_stat(&format!("/proc/{pid}/stat"))?;
            (ppid == postmaster).then_some((pid, cpu))
        })
        .collect()
    }

    /// A plain client on database `db`, over the socket: the monitor's, the ANALYZE's.
    fn client(&self, db: &str) -> Result<postgres::Client, String> {
        let params = format!(
            "host={} port={} user={} dbname={db}",
            self.pg.socket_dir().display(),
            self.pg.port_number(),
            self.pg.superuser()
        );
        postgres::Client::connect(&params, postgres::NoTls)
            .map_err(|e| format!("connecting to {db}: {e}"))
    }
}

/// A process's parent and CPU seconds (user + system) from its `/proc/PID/stat`.
fn proc_stat(path: &str) -> Option<(u32, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    // After the command name (in parentheses, which may hold spaces): state, ppid, …; utime
    // and stime are the 14th and 15th fields of the whole line.
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((ppid, ticks as f64 / TICKS_PER_S))
}

/// CPU seconds each server process spent between `before` and `after`, summed (a process that
/// started in between counts from zero).
fn server_cpu_between(before: &BTreeMap<u32, f64>, after: &BTreeMap<u32, f64>) -> f64 {
    after
        .iter()
        .map(|(pid, &cpu)| cpu - before.get(pid).copied().unwrap_or(0.0))
        .sum()
}

fn open(url: &str, create: bool) -> Result<Store, String> {
    let location = Location::parse(Path::new(url)).map_err(|e| e.to_string())?;
    Store::open_at(&location, create).map_err(|e| format!("opening {location}: {e}"))
}

/// Samples `pg_stat_activity` for database `db` from the barrier until `stop`.
fn watch(
    mut client: postgres::Client,
    db: String,
    start: Arc<Barrier>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<Connections, String>>, String> {
    // One row per kind of wait of the bench database's clients, each with the totals.
    let query = client
        .prepare(
            "WITH a AS (SELECT * FROM pg_stat_activity WHERE pid <> pg_backend_pid()),
                      c AS (SELECT CASE WHEN state = 'idle' THEN 'idle'
                                        ELSE coalesce(wait_event_type || ':' || wait_event, 'cpu')
                                   END AS wait
                            FROM a WHERE backend_type = 'client backend' AND datname = $1)
                 SELECT w.wait, w.n,
                        (SELECT count(*) FROM c),
                        (SELECT count(*) FROM c WHERE wait <> 'idle'),
                        (SELECT count(*) FROM a)
                 FROM (SELECT wait, count(*) AS n FROM c GROUP BY wait) w",
        )
        .map_err(|e| format!("monitor: {e}"))?;
    Ok(std::thread::spawn(move || {
        let mut seen = Connections::default();
        start.wait();
        while !stop.load(Ordering::Relaxed) {
            let rows = client
                .query(&query, &[&db])
                .map_err(|e| format!("monitor: {e}"))?;
            seen.samples += 1;
            for row in &rows {
                let (wait, n): (String, i64) = (row.get(0), row.get(1));
                *seen.waits.entry(wait).or_default() += n;
            }
            if let Some(row) = rows.first() {
                let (clients, busy, all): (i64, i64, i64) = (row.get(2), row.get(3), row.get(4));
                seen.max_clients = seen.max_clients.max(clients);
                seen.busy_sum += busy;
                seen.max_busy = seen.max_busy.max(busy);
                seen.max_all = seen.max_all.max(all);
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
        Ok(seen)
    }))
}

/// A store registered as the agent of `host` (its lock held on the store's connection).
fn registered(url: &str, host: &str) -> Result<Store, String> {
    let mut store = open(url, false)?;
    let class = serde_json::json!({"host": host, "cpus": 2, "arch": std::env::consts::ARCH});
    store
        .register_agent(host, &class.to_string(), "built-ins", LEASE_MS * 1000)
        .map_err(|e| format!("registering agent {host}: {e}"))?;
    Ok(store)
}

/// One simulated agent, registered as `host`: waits at `start`, then takes jobs until none is
/// left.
fn agent(
    mut store: Store,
    host: String,
    config: Config,
    start: Arc<Barrier>,
) -> Result<(AgentLog, Store), String> {
    let fail = |what: &str, e: store::StoreError| format!("agent {host}: {what}: {e}");
    let mut log = AgentLog::default();
    start.wait();
    loop {
        if config.phase == Phase::Agent {
            let t = Instant::now();
            store
                .heartbeat(&host, None, LEASE_MS)
                .map_err(|e| fail("heartbeat", e))?;
            let reaped = store.reap_jobs().map_err(|e| fail("reap", e))?;
            log.upkeep.push(t.elapsed());
            if let Some(r) = reaped.first() {
                return Err(format!("agent {host} reaped job {}: {}", r.id, r.why));
            }
        }
        let mut judged = 0;
        let t = Instant::now();
        let claimed = store
            .claim_job(
                &host,
                LEASE_MS,
                |target| target == "any",
                |_| {
                    judged += 1;
                    Verdict::Take
                },
            )
            .map_err(|e| fail("claim", e))?;
        let took = t.elapsed();
        let Some(job) = claimed.claimed else {
            // The store (its connection, its server process) lives on until the server's CPU
            // time is read.
            return Ok((log, store));
        };
        log.claims.push(took);
        log.judged += judged;
        log.ids.push(job.id);
        if !config.run.is_zero() {
            std::thread::sleep(config.run);
        }
        let t = Instant::now();
        let ended = store
            .finish_job(&host, job.id, job.attempt, JobState::Done, "ok")
            .map_err(|e| fail("finish", e))?;
        log.finishes.push(t.elapsed());
        if !ended {
            log.refused += 1;
        }
    }
}

/// Runs one configuration on a fresh database.
fn measure(server: &Server, config: Config) -> Result<Outcome, String> {
    let (db, url) = server.database()?;
    let mut submitter = open(&url, true)?;
    let job = NewJob {
        args: vec!["run".into(), "spin".into()],
        target: "any".into(),
        carries_cmd: false,
        max_attempts: 3,
        check_history: false,
        timeout_ms: None,
        user: "bench".into(),
        host: "bench-submitter".into(),
    };
    if config.unmatched > 0 {
        let gone = NewJob {
            target: "host=gone".into(),
            ..job.clone()
        };
        let first = submitter
            .submit_job(&gone)
            .map_err(|e| format!("submit: {e}"))?;
        server
            .client(&db)?
            .batch_execute(&format!(
                "INSERT INTO jobs (args, target, carries_cmd, state, attempts, max_attempts,
                     submitted_at, submitter, log, check_history)
                 SELECT args, target, carries_cmd, state, 0, max_attempts, submitted_at,
                     submitter, '', 0
                 FROM jobs, generate_series(2, {}) WHERE id = {first}",
                config.unmatched
            ))
            .map_err(|e| format!("queueing the unmatched jobs: {e}"))?;
    }
    let t = Instant::now();
    let mut submitted = Vec::with_capacity(config.jobs);
    for _ in 0..config.jobs {
        submitted.push(
            submitter
                .submit_job(&job)
                .map_err(|e| format!("submit: {e}"))?,
        );
    }
    let submit = t.elapsed();
    if config.analyze {
        server
            .client(&db)?
            .batch_execute("ANALYZE jobs")
            .map_err(|e| format!("ANALYZE jobs: {e}"))?;
    }

    let start = Arc::new(Barrier::new(config.agents + 2));
    let stop = Arc::new(AtomicBool::new(false));
    let monitor = watch(
        server.client("postgres")?,
        db,
        Arc::clone(&start),
        Arc::clone(&stop),
    )?;
    let mut agents = Vec::with_capacity(config.agents);
    for i in 0..config.agents {
        let host = format!("bench-agent-{i:02}");
        let store = registered(&url, &host)?;
        let start = Arc::clone(&start);
        agents.push(std::thread::spawn(move || {
            agent(store, host, config, start)
        }));
    }
    let postmaster = server.postmaster()?;
    let server_before = server.cpu_by_process(postmaster);
    let client_before = proc_stat("/proc/self/stat").map_or(0.0, |(_, cpu)| cpu);
    start.wait();
    let t = Instant::now();
    let (logs, stores): (Vec<AgentLog>, Vec<Store>) = agents
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| "an agent thread panicked".to_owned())?
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let wall = t.elapsed();
    let cpu = Cpu {
        server_s: server_cpu_between(&server_before, &server.cpu_by_process(postmaster)),
        client_s: proc_stat("/proc/self/stat").map_or(0.0, |(_, cpu)| cpu) - client_before,
    };
    drop(stores);
    stop.store(true, Ordering::Relaxed);
    let conns = monitor
        .join()
        .map_err(|_| "the monitor thread panicked".to_owned())??;
    let check = exactly_once(&submitter, &submitted, &logs);
    Ok(Outcome {
        config,
        submit,
        wall,
        logs,
        conns,
        cpu,
        check,
    })
}

/// Every submitted job was taken once, by one agent, finished, and reads back done after one
/// attempt.
fn exactly_once(store: &Store, submitted: &[i64], logs: &[AgentLog]) -> Result<(), String> {
    let taken: Vec<i64> = logs.iter().flat_map(|l| l.ids.iter().copied()).collect();
    let distinct: HashSet<i64> = taken.iter().copied().collect();
    if distinct.len() != taken.len() {
        return Err(format!(
            "{} claims took {} distinct jobs: some job was taken twice",
            taken.len(),
            distinct.len()
        ));
    }
    let wanted: HashSet<i64> = submitted.iter().copied().collect();
    if distinct != wanted {
        return Err(format!(
            "{} jobs submitted, {} taken, {} never taken",
            wanted.len(),
            distinct.len(),
            wanted.difference(&distinct).count()
        ));
    }
    let refused: usize = logs.iter().map(|l| l.refused).sum();
    if refused > 0 {
        return Err(format!("{refused} finishes refused by the store"));
    }
    let jobs: Vec<store::Job> = store
        .jobs(None)
        .map_err(|e| format!("reading the jobs: {e}"))?
        .into_iter()
        .filter(|j| j.target == "any")
        .collect();
    let wrong: Vec<String> = jobs
        .iter()
        .filter(|j| j.state != JobState::Done || j.attempts != 1)
        .map(|j| {
            format!(
                "job {} {} after {} attempts",
                j.id,
                j.state.as_str(),
                j.attempts
            )
        })
        .collect();
    if jobs.len() != submitted.len() || !wrong.is_empty() {
        return Err(format!(
            "{} jobs read back, {} not done once: {}",
            jobs.len(),
            wrong.len(),
            wrong.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    Ok(())
}

/// The table's columns: heading, second heading line, width.
const COLUMNS: &[(&str, &str, usize)] = &[
    ("phase", "", 8),
    ("agents", "", 6),
    ("jobs", "", 5),
    ("claims/s", "", 8),
    ("claim ms", "p50", 8),
    ("p90", "", 7),
    ("p99", "", 7),
    ("max", "", 7),
    ("finish", "ms p50", 7),
    ("upkeep", "ms p50", 7),
    ("judged", "/claim", 7),
    ("cpu ms/claim", "server+client", 13),
    ("conns", "(all)", 7),
    ("busy", "mean", 5),
];

fn print_header() {
    for line in [0, 1] {
        let cells: Vec<String> = COLUMNS
            .iter()
            .enumerate()
            .map(|(i, &(top, bottom, width))| {
                let text = if line == 0 { top } else { bottom };
                if i == 0 {
                    format!("{text:<width$}")
                } else {
                    format!("{text:>width$}")
                }
            })
            .collect();
        let tail = if line == 0 { "  exactly-once" } else { "" };
        println!("{}{tail}", cells.join(" ").trim_end());
    }
}

fn print_row(o: &Outcome) {
    let c = &o.config;
    let claim = o.spread(|l| &l.claims);
    let upkeep = if c.phase == Phase::Agent {
        format!("{:.2}", o.spread(|l| &l.upkeep).p50)
    } else {
        "-".into()
    };
    let phase = match c.phase {
        Phase::Instant => c.phase.name().to_owned(),
        _ => format!("{}{}", c.phase.name(), c.run.as_millis()),
    };
    let (server_cpu, client_cpu) = o.cpu_per_claim();
    let cells = [
        phase,
        c.agents.to_string(),
        c.jobs.to_string(),
        format!("{:.0}", o.claims_per_s()),
        format!("{:.2}", claim.p50),
        format!("{:.2}", claim.p90),
        format!("{:.2}", claim.p99),
        format!("{:.1}", claim.max),
        format!("{:.2}", o.spread(|l| &l.finishes).p50),
        upkeep,
        format!("{:.2}", o.judged_per_claim()),
        format!("{server_cpu:.2}+{client_cpu:.2}"),
        format!("{}({})", o.conns.max_clients, o.conns.max_all),
        format!("{:.1}", o.conns.mean_busy()),
    ];
    let row: Vec<String> = cells
        .iter()
        .zip(COLUMNS)
        .enumerate()
        .map(|(i, (text, &(_, _, width)))| {
            if i == 0 {
                format!("{text:<width$}")
            } else {
                format!("{text:>width$}")
            }
        })
        .collect();
    let check = match &o.check {
        Ok(()) => "ok".to_owned(),
        Err(why) => format!("FAILED: {why}"),
    };
    println!("{}  {check}", row.join(" "));
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plan = match Plan::from_args(&args) {
        Ok(plan) => plan,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("queue_claim: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let pg = match test_server::tcp_server() {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("queue_claim: no PostgreSQL server: {why}");
            return ExitCode::from(2);
        }
    };
    let server = Server {
        pg,
        unix: plan.unix,
    };
    eprintln!(
        "PostgreSQL on 127.0.0.1:{} ({}{}); {} CPUs here, load average {}",
        server.pg.port_number(),
        if plan.unix {
            "stores on its Unix socket"
        } else {
            "stores over TCP"
        },
        if plan.analyze {
            ", jobs table analyzed before each start"
        } else {
            ""
        },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into())
    );
    print_header();
    let mut outcomes = Vec::new();
    for config in plan.configs() {
        match measure(&server, config) {
            Ok(o) => {
                print_row(&o);
                outcomes.push(o);
            }
            Err(why) => {
                eprintln!(
                    "queue_claim: {} with {} agents: {why}",
                    config.phase.name(),
                    config.agents
                );
                return ExitCode::from(2);
            }
        }
    }
    for o in &outcomes {
        println!("{}", o.json());
    }
    if outcomes.iter().all(|o| o.check.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
