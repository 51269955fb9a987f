//! A lab of many machines on one: the job queue in a real PostgreSQL (a throwaway server, see
//! `store::test_server`; skipped with the reason when none can be started, required in CI) and agent
//! processes, each playing another host through the debug build's identity override. Jobs are
//! taken exactly once by an agent of their class; agents killed with SIGKILL mid-job lose
//! their job to a retry and no run is duplicated; a job carrying a command runs only on an
//! agent that allows it.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Lab;
use crate::hostile_queue::RolesDb;
use crate::test_server;

/// A short built-in job: one 100 ms trial of `spin` at N=1.
pub(crate) const JOB: &[&str] = &[
    "run",
    "spin",
    "--tasks",
    "1",
    "--runs",
    "1",
    "--duration",
    "100ms",
    "--warmup",
    "0",
    "--quiet",
];

/// `scalelab agent` on `db`, playing the host `identity` describes.
pub(crate) fn agent(lab: &Lab, db: &str, identity: &str, extra: &[&str]) -> Child {
    lab.cmd()
        .args([
            "--db",
            db,
            "agent",
            "--lease",
            "4s",
            "--poll",
            "300ms",
            "--ignore-load",
        ])
        .args(extra)
        .env("SCALELAB_TEST_AGENT_IDENTITY", identity)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

pub(crate) fn queue(lab: &Lab, db: &str) -> Value {
    lab.json(&["--db", db, "queue", "--limit", "1000", "--json"])
}

pub(crate) fn jobs(q: &Value) -> Vec<Value> {
    q["jobs"].as_array().unwrap().clone()
}

/// Waits until every job has ended (or `limit` passes); returns the last queue read.
pub(crate) fn wait_all_final(lab: &Lab, db: &str, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        let q = queue(lab, db);
        let open = jobs(&q)
            .iter()
            .filter(|j| matches!(j["state"].as_str(), Some("queued" | "running")))
            .count();
        if open == 0 {
            return q;
        }
        assert!(
            start.elapsed() < limit,
            "{open} jobs still open after {limit:?}: {}",
            serde_json::to_string_pretty(&q).unwrap()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub(crate) fn stop(mut agents: Vec<Child>) {
    for a in &agents {
        let _ = sys::send_signal(a.id() as i32, signal_hook::consts::SIGTERM);
    }
    for a in &mut agents {
        let _ = a.wait();
    }
}

/// Eight agents of three classes, 200 jobs across the classes, three agents killed with SIGKILL
/// while each runs a job, two of them restarted: every job ends `done` exactly once, by an
/// agent of its class; each done job has exactly one complete run in the store (tagged with
/// it); the killed agents' jobs were retried; no run is left reading `running`.
#[test]
fn two_hundred_jobs_on_eight_agents_three_killed_mid_job_each_done_once() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let identities: Vec<String> = (1..=8)
        .map(|i| match i {
            1..=3 => format!("host=small-{i},cpus=2,arch=x86_64,mem=8"),
            4..=6 => format!("host=big-{i},cpus=64,arch=x86_64,mem=256"),
            _ => format!("host=arm-{i},cpus=16,arch=aarch64,mem=64"),
        })
        .collect();
    let classes = ["cpus<=4", "cpus>=32,arch=x86_64", "arch=aarch64"];
    let class_hosts = |class: &str| -> &'static str {
        match class {
            "cpus<=4" => "small-",
            "cpus>=32,arch=x86_64" => "big-",
            _ => "arm-",
        }
    };
    // Queued before any agent runs, so that all eight compete for the same rows. The first
    // three (one of each class) last 10 s: their agents are the ones killed mid-job, while all
    // three run.
    for i in 0..200 {
        let class = classes[i % 3];
        let mut args = vec!["--db", &db, "submit", "--class", class];
        args.extend(
            JOB.iter()
                .map(|a| if i < 3 && *a == "100ms" { "10s" } else { a }),
        );
        lab.ok(&args);
    }
    let mut agents: Vec<Option<Child>> = identities
        .iter()
        .map(|id| Some(agent(&lab, &db, id, &[])))
        .collect();

    // The agents of jobs 1, 2 and 3 killed (SIGKILL) while they run them; the first two
    // restarted under the same identity (each registers again, its lock being gone), the third
    // not: the other agent of its class takes its job back on seeing its lock gone.
    let start = Instant::now();
    let holders: Vec<(i64, String)> = loop {
        let all = jobs(&queue(&lab, &db));
        let running: Vec<(i64, String)> = all[..3]
            .iter()
            .filter(|j| j["state"] == "running")
            .map(|j| {
                (
                    j["id"].as_i64().unwrap(),
                    j["agent"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        if running.len() == 3 {
            break running;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "jobs 1 to 3 never ran together: {all:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut killed: BTreeMap<String, i64> = BTreeMap::new();
    for (job, host) in holders {
        let index = identities
            .iter()
            .position(|i| i.contains(&format!("host={host},")))
            .unwrap();
        let mut child = agents[index].take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        killed.insert(host, job);
        if job != 3 {
            agents[index] = Some(agent(&lab, &db, &identities[index], &[]));
        }
    }

    let q = wait_all_final(&lab, &db, Duration::from_secs(600));
    stop(agents.into_iter().flatten().collect());
    let all = jobs(&q);
    assert_eq!(all.len(), 200);
    let mut run_ids = BTreeSet::new();
    for j in &all {
        let id = j["id"].as_i64().unwrap();
        assert_eq!(j["state"], "done", "job {id}: {j}");
        let complete: Vec<i64> = j["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == "complete")
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        assert_eq!(
            complete.len(),
            1,
            "job {id} must have exactly one complete run: {j}"
        );
        assert!(
            run_ids.insert(complete[0]),
            "run {} claimed by two jobs",
            complete[0]
        );
        let agent = j["agent"].as_str().unwrap();
        let class = j["target"].as_str().unwrap();
        assert!(
            agent.starts_with(class_hosts(class)),
            "job {id} of class {class} ran on {agent}"
        );
        let taken = j["log"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["text"].as_str().unwrap().contains(" taken by "))
            .count();
        assert_eq!(
            taken as u64,
            j["attempts"].as_u64().unwrap(),
            "job {id}: {j}"
        );
    }
    for (host, job) in &killed {
        let j = all.iter().find(|j| j["id"] == *job).unwrap();
        assert!(
            j["attempts"].as_u64().unwrap() >= 2,
            "job {job}, whose agent {host} was killed, was not retried: {j}"
        );
        let log = j["log"].to_string();
        // Job 3: another agent took it back on seeing the lock gone. Jobs 1 and 2: that, or
        // their host's agent, restarted at once, on registering (whichever came first).
        let gone = log.contains(&format!("the agent on {host} is gone"));
        let restarted = log.contains(&format!("the agent on {host} restarted"));
        assert!(gone || (*job != 3 && restarted), "{log}");
    }
    // The store holds each job's run once; nothing reads `running`.
    let runs = lab.json(&["--db", &db, "ls", "--json"]);
    let runs = runs.as_array().unwrap();
    assert!(
        runs.iter().all(|r| r["status"] != "running"),
        "a run still reads running"
    );
    let complete: Vec<&Value> = runs.iter().filter(|r| r["status"] == "complete").collect();
    assert_eq!(complete.len(), 200, "one complete run per job, no more");
    let jobs_of_runs: BTreeSet<&str> = complete
        .iter()
        .map(|r| r["tags"]["job"].as_str().unwrap())
        .collect();
    assert_eq!(
        jobs_of_runs.len(),
        200,
        "two complete runs carry the same job"
    );
}

/// A job carrying a command: an agent without an allow-list refuses it (the reason in the job's
/// log, the job left queued for another agent); an agent allowing its directory runs it. Sent
/// to the refusing host alone, it fails with the reason.
#[test]
fn a_command_job_is_refused_without_an_allow_list_and_runs_where_allowed() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    // A directory of benchmark programs: one that does nothing.
    let bench = lab.path("bench");
    std::fs::create_dir(&bench).unwrap();
    let program = bench.join("nothing");
    std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = program.display().to_string();
    let cmd_job = [
        "run",
        "--cmd",
        program.as_str(),
        "--tasks",
        "1",
        "--runs",
        "1",
        "--quiet",
    ];
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend_from_slice(&cmd_job);
    lab.ok(&args);
    let mut args = vec!["--db", db.as_str(), "submit", "--host", "strict"];
    args.extend_from_slice(&cmd_job);
    lab.ok(&args);

    let strict = agent(&lab, &db, "host=strict", &[]);
    let start = Instant::now();
    let (first, second) = loop {
        let all = jobs(&queue(&lab, &db));
        let refused = |j: &Value| j["log"].to_string().contains("refused by strict");
        if refused(&all[0]) && all[1]["state"] == "failed" {
            break (all[0].clone(), all[1].clone());
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{all:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(first["state"], "queued", "{first}");
    assert!(first["log"].to_string().contains("--allow-cmd"), "{first}");
    assert!(
        second["outcome"]
            .as_str()
            .unwrap()
            .contains("built-in workloads only"),
        "{second}"
    );
    let text = lab.ok(&["--db", &db, "queue"]);
    assert!(
        text.contains("every live agent of its class refuses it"),
        "{text}"
    );

    let bench = bench.display().to_string();
    let open = agent(&lab, &db, "host=open", &["--allow-cmd", &bench]);
    let q = wait_all_final(&lab, &db, Duration::from_secs(60));
    stop(vec![strict, open]);
    let first = &jobs(&q)[0];
    assert_eq!(first["state"], "done", "{first}");
    assert_eq!(first["agent"], "open");
    assert_eq!(first["runs"].as_array().unwrap().len(), 1, "{first}");
}

/// The queue is a team store's: on a SQLite file `submit` says so and names the fix, and a job
/// that could not run anywhere is refused before it is queued.
#[test]
fn submit_refuses_a_sqlite_store_and_jobs_that_cannot_be_queued() {
    let lab = Lab::new();
    let mut args = vec!["submit"];
    args.extend_from_slice(JOB);
    let err = lab.fails(&args);
    assert!(
        err.contains("PostgreSQL") && err.contains("--db postgres://"),
        "{err}"
    );
    for (job, needle) in [
        (&["ls"][..], "only `run …` and `ab …`"),
        (&["run", "spin", "--db", "/tmp/x.db"][..], "--db"),
        (&["run", "spin", "--no-such-flag"][..], "does not parse"),
    ] {
        let mut args = vec!["submit"];
        args.extend_from_slice(job);
        let err = lab.fails(&args);
        assert!(err.contains(needle), "{job:?}: {err}");
    }
    let err = lab.fails(&["submit", "--class", "cpus>>4", "run", "spin"]);
    assert!(err.contains("cpus>>4"), "{err}");
}

/// A recurring job (`submit --every 'mon 03:00'`) seen due by four agents on a fake clock: one
/// job per occurrence, none before it, and occurrences missed while the clock jumped three
/// weeks queued once, not each. Its jobs are for a host no agent plays, so they stay queued to
/// be counted.
#[test]
fn a_recurring_job_is_queued_once_per_occurrence_with_four_agents_seeing_it_due() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec![
        "--db",
        db.as_str(),
        "submit",
        "--every",
        "mon 03:00",
        "--host",
        "nobody",
    ];
    args.extend_from_slice(JOB);
    let out = lab.ok(&args);
    assert!(out.contains("mon 03:00 UTC"), "{out}");
    let q = queue(&lab, &db);
    let next = q["schedules"][0]["next_at_ms"].as_i64().unwrap();
    let clock = lab.path("clock");
    let set_clock = |ms: i64| std::fs::write(&clock, ms.to_string()).unwrap();
    set_clock(next - 60_000);
    let agents: Vec<Child> = (1..=4)
        .map(|i| {
            let mut c = lab.cmd();
            c.args(["--db", &db, "agent", "--poll", "200ms", "--ignore-load"])
                .env("SCALELAB_TEST_AGENT_IDENTITY", format!("host=watcher-{i}"))
                .env("SCALELAB_TEST_CLOCK_FILE", &clock)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c.spawn().unwrap()
        })
        .collect();
    let jobs_now = || -> Vec<Value> { jobs(&queue(&lab, &db)) };
    let settle = || std::thread::sleep(Duration::from_millis(1500));
    settle();
    assert!(jobs_now().is_empty(), "queued before its time");

    let week = 7 * 86_400_000;
    for (clock_at, expected) in [
        (next + 30_000, 1),
        (next + 60_000, 1),
        (next + week + 60_000, 2),
        (next + 4 * week + 60_000, 3),
    ] {
        set_clock(clock_at);
        let start = Instant::now();
        while jobs_now().len() < expected && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(100));
        }
        settle();
        let all = jobs_now();
        assert_eq!(all.len(), expected, "at {clock_at}: {all:?}");
    }
    stop(agents);
    let all = jobs_now();
    let occurrences: BTreeSet<String> = all
        .iter()
        .map(|j| j["log"][0]["text"].as_str().unwrap().to_owned())
        .map(|l| l.rsplit(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(occurrences.len(), 3, "one job per occurrence: {all:?}");
    let s = &queue(&lab, &db)["schedules"][0];
    assert_eq!(s["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(s["next_at_ms"].as_i64().unwrap(), next + 5 * week, "{s}");
    lab.ok(&["--db", &db, "queue", "unschedule", "1"]);
    let err = lab.fails(&["--db", &db, "queue", "unschedule", "1"]);
    assert!(err.contains("no active schedule 1"), "{err}");
}

/// `--check-history` runs `history --check` on the job's series after it; with one run there is
/// no history to judge, which the job's log says, and the job is done.
#[test]
fn a_job_with_check_history_says_when_its_history_cannot_be_judged_yet() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec!["--db", db.as_str(), "submit", "--check-history"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    let a = agent(&lab, &db, "host=historian", &[]);
    let q = wait_all_final(&lab, &db, Duration::from_secs(60));
    stop(vec![a]);
    let j = &jobs(&q)[0];
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["outcome"], "ok", "{j}");
    let log = j["log"].to_string();
    assert!(log.contains("history --check could not judge"), "{log}");
    let err = lab.fails(&[
        "--db",
        &db,
        "submit",
        "--check-history",
        "ab",
        "--a",
        "true",
        "--b",
        "true",
    ]);
    assert!(err.contains("own verdict"), "{err}");
}

/// `contrib/lab-roles.sql`'s least-privilege roles on a real server (SECURITY.md's table): a
/// submitter queues and cancels jobs and reads the queue and the runs, but cannot store,
/// change or delete a run (through scalelab or SQL), change a job otherwise than by cancelling
/// it, or change a log event; a reader cannot queue or cancel; an agent runs the submitter's
/// job and stores its run.
#[test]
fn a_submitter_role_queues_jobs_and_cannot_touch_a_run() {
    let lab = Lab::new();
    // The owner creates the tables, with one run in them, and applies the roles' script.
    let Some(roles) = RolesDb::new(&lab) else {
        return;
    };
    let user = |group: &str| roles.role(group, group);
    let (submitter, as_submitter) = user("submitter");
    let (_, as_reader) = user("reader");
    let (_, as_agent) = user("agent");

    let mut args = vec!["--db", as_submitter.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    lab.ok(&args);
    lab.ok(&["--db", &as_submitter, "queue", "cancel", "2"]);
    let q = queue(&lab, &as_submitter);
    assert_eq!(jobs(&q)[0]["submitter"]["role"], submitter.as_str());
    assert_eq!(jobs(&q)[1]["state"], "cancelled");
    assert!(
        lab.ok(&["--db", &as_submitter, "show", "1"])
            .contains("spin")
    );
    let mut args = vec!["--db", as_submitter.as_str()];
    args.extend_from_slice(JOB);
    let err = lab.fails(&args);
    assert!(
        err.contains("permission denied"),
        "a submitter stored a run: {err}"
    );
    for sql in [
        "UPDATE runs SET name = 'forged'",
        "DELETE FROM trials",
        "INSERT INTO run_tags VALUES (1, 'k', 'v')",
        "DROP TABLE jobs",
        // Beyond cancelling, a submitter changes no job and no schedule (a trigger), and no
        // log event.
        "UPDATE jobs SET state = 'done', outcome = 'ok' WHERE id = 1",
        "UPDATE jobs SET state = 'queued' WHERE id = 2",
        "UPDATE job_events SET text = 'forged'",
        "DELETE FROM job_events",
        "UPDATE agents SET lock_pid = pg_backend_pid()",
    ] {
        let (ok, err) = roles.psql_as(&submitter, sql);
        assert!(!ok, "a submitter could run `{sql}`");
        assert!(
            err.contains("permission denied") || err.contains("must be owner"),
            "{sql}: {err}"
        );
    }
    // The reader changes nothing in the queue either.
    let err = lab.fails(&["--db", &as_reader, "queue", "cancel", "1"]);
    assert!(
        err.contains("permission denied"),
        "a reader cancelled: {err}"
    );

    let mut args = vec!["--db", as_reader.as_str(), "submit"];
    args.extend_from_slice(JOB);
    let err = lab.fails(&args);
    assert!(
        err.contains("permission denied"),
        "a reader queued a job: {err}"
    );
    assert_eq!(jobs(&queue(&lab, &as_reader)).len(), 2);

    let a = agent(&lab, &as_agent, "host=least", &[]);
    let q = wait_all_final(&lab, &as_reader, Duration::from_secs(60));
    stop(vec![a]);
    let first = &jobs(&q)[0];
    assert_eq!(first["state"], "done", "{first}");
    assert_eq!(first["runs"][0]["status"], "complete", "{first}");
}

/// The dashboard's queue page: each job with a link to its runs, each recurring job with a link
/// to its series' change points, each agent with its class and last heartbeat; on a SQLite
/// store, why there is no queue.
#[test]
fn the_dashboard_shows_the_queue_the_recurring_jobs_and_the_agents() {
    use crate::team_lab::{Server, get};
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    lab.ok(&[
        "--db",
        &db,
        "submit",
        "--every",
        "daily 03:00",
        "run",
        "create_unlink",
        "-p",
        "shared=true",
    ]);
    let a = agent(&lab, &db, "host=dash-agent,cpus=64", &[]);
    wait_all_final(&lab, &db, Duration::from_secs(60));
    let server = Server::start(&lab, &db);
    let (status, page) = get(&server.base, "/queue");
    stop(vec![a]);
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("?tag=job%3D1"),
        "no link to job 1's runs: {page}"
    );
    assert!(page.contains("daily 03:00 UTC"), "{page}");
    assert!(
        page.contains("&#x2f;history&#x2f;create_unlink?p=shared%3Dtrue"),
        "no link to the series' change points: {page}"
    );
    assert!(
        page.contains("dash-agent") && page.contains("64 CPUs"),
        "{page}"
    );
    assert!(
        page.contains("href=\"/queue\""),
        "the navigation links the queue: {page}"
    );
    drop(server);

    let sqlite = lab.db().to_str().unwrap().to_owned();
    lab.short_spin(&[]);
    let server = Server::start(&lab, &sqlite);
    let (status, page) = get(&server.base, "/queue");
    assert_eq!(status, 200);
    assert!(
        page.contains("team&#x27;s PostgreSQL store") || page.contains("team's PostgreSQL store"),
        "{page}"
    );
}

/// An agent cut off without dying (SIGSTOP: its connection and lock stay, its heartbeat stops,
/// as behind a network cut) loses its job when the lease runs out: another agent of the class
/// takes it back and runs it; the stopped agent, resumed, finds the job no longer its own and
/// stops its measurement. The job ends done once, with one complete run.
#[test]
fn an_agent_that_stops_renewing_its_lease_loses_its_job_to_another() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend(JOB.iter().map(|a| if *a == "100ms" { "6s" } else { a }));
    lab.ok(&args);
    let agent = |host: &str| {
        lab.cmd()
            .args([
                "--db",
                &db,
                "agent",
                "--poll",
                "300ms",
                "--ignore-load",
                "--lease",
                "2s",
            ])
            .env("SCALELAB_TEST_AGENT_IDENTITY", format!("host={host}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let first = agent("cut-off");
    let start = Instant::now();
    while jobs(&queue(&lab, &db))[0]["state"] != "running" {
        assert!(start.elapsed() < Duration::from_secs(30), "never taken");
        std::thread::sleep(Duration::from_millis(100));
    }
    sys::send_signal(first.id() as i32, signal_hook::consts::SIGSTOP).unwrap();
    let second = agent("standby");
    let start = Instant::now();
    while jobs(&queue(&lab, &db))[0]["agent"] != "standby" {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never taken back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sys::send_signal(first.id() as i32, signal_hook::consts::SIGCONT).unwrap();
    let q = wait_all_final(&lab, &db, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    stop(vec![first, second]);
    let j = &jobs(&queue(&lab, &db))[0];
    assert_eq!(j["state"], "done", "{j}");
    assert_eq!(j["agent"], "standby", "{j}");
    let log = j["log"].to_string();
    assert!(
        log.contains("the agent on cut-off stopped renewing its lease"),
        "{log}"
    );
    assert!(log.contains("attempt 1 stopped on cut-off"), "{log}");
    let complete = j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "complete")
        .count();
    assert_eq!(complete, 1, "{q}");
}
