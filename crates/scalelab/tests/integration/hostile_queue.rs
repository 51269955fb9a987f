//! The lab's queue under a hostile writer, on a real PostgreSQL (`store::test_server`): each test is one
//! hole a probe of the queue found (SECURITY.md "The job queue and its agents"). An allow-list is
//! a directory, and the program a job names is resolved before a root agent runs it; a malformed
//! row fails alone while every agent goes on; nobody who may not write can hold the locks that
//! say a run or an agent is alive; a job no agent can take never hides one it can; a job ends
//! at its timeout; the audit trail is the server's, not the submitter's.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Lab;
use crate::fleet::{JOB, agent, jobs, queue, stop, wait_all_final};
use crate::test_server;

/// `contrib/lab-roles.sql` applied to a fresh database created (with one run) by its owner, and
/// a login role of each group: (owner URL, database name, [(role, URL)] for reader, submitter,
/// agent).
pub(crate) struct RolesDb {
    pub(crate) server: &'static test_server::PgServer,
    pub(crate) owner: String,
    pub(crate) name: String,
}

/// A new database on the shared server: the server, its owner's URL and its name.
pub(crate) fn fresh_db() -> Option<(&'static test_server::PgServer, String, String)> {
    let server = test_server::server_or_skip()?;
    let url = server.create_database();
    let name = url
        .split("///")
        .nth(1)
        .and_then(|rest| rest.split('?').next())
        .unwrap()
        .to_owned();
    Some((server, url, name))
}

/// Waits for `child` at most `limit` (then kills it); whether it ended by itself, and its output.
fn wait_at_most(mut child: Child, limit: Duration) -> (bool, std::process::Output) {
    let start = Instant::now();
    let ended = loop {
        if child.try_wait().unwrap().is_some() {
            break true;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (ended, child.wait_with_output().unwrap())
}

impl RolesDb {
    pub(crate) fn new(lab: &Lab) -> Option<RolesDb> {
        let (server, owner, name) = fresh_db()?;
        let mut args = vec!["--db", owner.as_str()];
        args.extend_from_slice(JOB);
        lab.ok(&args);
        server.psql(&name, include_str!("../../../../contrib/lab-roles.sql"));
        Some(RolesDb {
            server,
            owner,
            name,
        })
    }

    /// A login role in group `scalelab_{group}` named `{who}_{db}`, and its URL.
    pub(crate) fn role(&self, group: &str, who: &str) -> (String, String) {
        let name = format!("{who}_{}", self.name);
        self.server.psql(
            &self.name,
            &format!("CREATE ROLE {name} LOGIN IN ROLE scalelab_{group}"),
        );
        (
            name.clone(),
            self.owner
                .replace("user=scalelab_test", &format!("user={name}")),
        )
    }

    /// Runs `sql` as `role` with psql; its exit status and stderr.
    pub(crate) fn psql_as(&self, role: &str, sql: &str) -> (bool, String) {
        let out = Command::new(self.server.psql_bin())
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.server.socket_dir())
            .args(["-p", &self.server.port_number().to_string()])
            .args(["-U", role, "-d", &self.name, "-c", sql])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A psql session of `role` that runs `sql` and stays connected (holding what it took) until
    /// dropped.
    fn hold(&self, role: &str, sql: &str) -> HeldSession {
        let mut child = Command::new(self.server.psql_bin())
            .args(["-X", "-q", "-h"])
            .arg(self.server.socket_dir())
            .args(["-p", &self.server.port_number().to_string()])
            .args(["-U", role, "-d", &self.name])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
        HeldSession {
            child,
            _stdin: stdin,
        }
    }

    /// How many locks sessions of `role` hold now.
    fn locks_of(&self, role: &str) -> i64 {
        self.server
            .psql(
                &self.name,
                &format!(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                     WHERE a.usename = '{role}' AND l.granted AND l.locktype <> 'virtualxid'"
                ),
            )
            .trim()
            .parse()
            .unwrap()
    }
}

/// A psql session kept open; killed when dropped.
struct HeldSession {
    child: Child,
    _stdin: std::process::ChildStdin,
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `done` holds (or panics after `limit`, with `what`).
fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A script in `dir` that appends its name to `marker` when it runs (or hangs when `hang`).
fn script(dir: &Path, name: &str, marker: &Path, hang: bool) {
    let body = if hang {
        "#!/bin/sh\nexec sleep 600\n".to_owned()
    } else {
        format!("#!/bin/sh\necho {name} >> {}\n", marker.display())
    };
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `--allow-cmd DIR`: every way out of the directory a probe found — `..`, a glob, a sibling
/// sharing the prefix, a link out, an assignment before the program, a new line that forges a
/// log event — through every option that carries a command, is refused with the rule named, and
/// the program outside never runs; a program inside runs. Sent to the refusing host alone, each
/// refused job fails with the reason; no log event is forged.
#[test]
fn an_allow_list_is_a_directory_and_no_program_outside_it_runs() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let bench = lab.path("bench");
    std::fs::create_dir(&bench).unwrap();
    let marker = lab.path("ran");
    script(&bench, "ok.sh", &marker, false);
    script(lab.dir.path(), "evil.sh", &marker, false);
    script(lab.dir.path(), "bench-evil.sh", &marker, false);
    std::os::unix::fs::symlink(lab.path("evil.sh"), bench.join("link.sh")).unwrap();
    let b = bench.display().to_string();
    let ok = format!("{b}/ok.sh");
    let up = format!("{b}/../evil.sh");
    let forged = format!("{ok}\n1796160000000 attempt 1 done on lab-epyc-1: ok");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--cmd".into(), up.clone()], "`..`"),
        (vec!["--cmd".into(), format!("{b}/../evi[l].sh")], "shell"),
        (vec!["--cmd".into(), format!("{b}-evil.sh")], "inside"),
        (vec!["--cmd".into(), format!("{b}/link.sh")], "inside"),
        (
            vec!["--cmd".into(), format!("LD_PRELOAD=x {ok}")],
            "absolute",
        ),
        (vec!["--cmd".into(), "evil.sh".into()], "absolute"),
        (
            vec![
                "--cmd".into(),
                ok.clone(),
                "--step".into(),
                format!("x={up}"),
            ],
            "`..`",
        ),
        (
            vec!["--cmd".into(), ok.clone(), "--prepare".into(), up.clone()],
            "`..`",
        ),
        (
            vec!["--cmd".into(), ok.clone(), "--cleanup".into(), up.clone()],
            "`..`",
        ),
        (vec!["--cmd".into(), forged], "shell"),
    ];
    let submit = |job: &[String]| {
        let mut args = vec!["--db", db.as_str(), "submit", "--host", "strict"];
        args.extend(job.iter().map(String::as_str));
        lab.ok(&args);
    };
    for (opts, _) in &cases {
        let mut job = vec!["run".to_owned()];
        job.extend(opts.iter().cloned());
        job.extend(["--tasks", "1", "--runs", "1", "--quiet"].map(String::from));
        submit(&job);
    }
    submit(&[
        "ab".into(),
        "--a".into(),
        ok.clone(),
        "--b".into(),
        up.clone(),
        "--tasks".into(),
        "1".into(),
        "--runs".into(),
        "2".into(),
    ]);
    submit(
        &[
            "run", "--cmd", &ok, "--tasks", "1", "--runs", "1", "--quiet",
        ]
        .map(String::from),
    );

    // A directory named without its slash: `bench` must not allow `bench-evil.sh`.
    let a = agent(&lab, &db, "host=strict", &["--allow-cmd", &b]);
    let q = wait_all_final(&lab, &db, Duration::from_secs(90));
    stop(vec![a]);
    let all = jobs(&q);
    let needles: Vec<&str> = cases
        .iter()
        .map(|(_, n)| *n)
        .chain(["`..`", "never"])
        .collect();
    for (j, needle) in all.iter().zip(&needles) {
        let id = j["id"].as_i64().unwrap();
        if *needle == "never" {
            assert_eq!(j["state"], "done", "job {id}, inside the directory: {j}");
            continue;
        }
        assert_eq!(j["state"], "failed", "job {id}: {j}");
        let outcome = j["outcome"].as_str().unwrap();
        assert!(outcome.contains(needle), "job {id}: {outcome}");
        assert!(!outcome.contains('\n'), "job {id}: a refusal on two lines");
        for event in j["log"].as_array().unwrap() {
            let text = event["text"].as_str().unwrap();
            assert!(
                !text.contains('\n'),
                "job {id}: an event of two lines: {text:?}"
            );
        }
    }
    let forged = &all[9]["log"];
    assert!(
        forged
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["text"].as_str().unwrap().starts_with("attempt 1 done")),
        "a forged event: {forged}"
    );
    let ran = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(ran.trim(), "ok.sh", "programs that ran: {ran}");
}

/// An allowed directory that holds a shell or an interpreter (`/usr/bin/`) allows every command
/// through it: the agent refuses to start, naming it, unless `--allow-any-cmd` is also given,
/// when it starts with a warning saying why. A directory that does not exist is refused too.
#[test]
fn an_allowed_directory_holding_a_shell_is_refused_unless_any_command_is_allowed() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let out = lab
        .cmd()
        .args([
            "--db",
            &db,
            "agent",
            "--allow-cmd",
            "/usr/bin/",
            "--max-jobs",
            "0",
        ])
        .env("SCALELAB_TEST_AGENT_IDENTITY", "host=usrbin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/usr/bin") && err.contains("--allow-any-cmd") && err.contains("sh"),
        "{err}"
    );
    let out = lab
        .cmd()
        .args([
            "--db",
            &db,
            "agent",
            "--allow-cmd",
            "/usr/bin/",
            "--allow-any-cmd",
            "--max-jobs",
            "0",
        ])
        .env("SCALELAB_TEST_AGENT_IDENTITY", "host=usrbin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning:") && err.contains("any command"),
        "{err}"
    );
    let missing = lab.path("no-such-dir");
    let out = lab
        .cmd()
        .args(["--db", &db, "agent", "--allow-cmd"])
        .arg(&missing)
        .args(["--max-jobs", "0"])
        .env("SCALELAB_TEST_AGENT_IDENTITY", "host=missing")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-dir"), "{err}");
}

/// Rows the CLI would never write — arguments that are not a JSON list, a negative attempt
/// count, a schedule that does not parse — are failed (or stopped) with the reason, and every
/// agent goes on to run the good job queued after them; `queue` and the dashboard list the
/// malformed ones beside the others.
#[test]
fn a_malformed_row_fails_alone_and_every_agent_goes_on() {
    use crate::team_lab::{Server, get};
    let Some((server, db, name)) = fresh_db() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    let insert = |args: &str, max_attempts: i64| {
        server.psql(
            &name,
            &format!(
                "INSERT INTO jobs (args, target, carries_cmd, state, attempts, max_attempts, \
                 submitted_at, submitter, log, check_history) VALUES \
                 ('{args}', 'any', 0, 'queued', 0, {max_attempts}, 0, 'not json', '', 0)"
            ),
        );
    };
    insert("not json", 3);
    insert("{\"run\": 1}", 3);
    insert(r#"["run", "spin", "--tasks", "1"]"#, -1);
    let schedule = |every: &str, args: &str| {
        server.psql(
            &name,
            &format!(
                "INSERT INTO schedules (every, args, target, carries_cmd, max_attempts, \
                 check_history, submitter, created_at, next_at, active) VALUES \
                 ('{every}', '{args}', 'any', 0, 3, 0, '{{}}', 0, 0, 1)"
            ),
        );
    };
    schedule("someday 25:99", r#"["run", "spin"]"#);
    schedule("daily 03:00", "[1, 2");
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);

    let mut agents = vec![
        agent(&lab, &db, "host=poisoned-1", &[]),
        agent(&lab, &db, "host=poisoned-2", &[]),
    ];
    let q = wait_all_final(&lab, &db, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    for a in &mut agents {
        assert!(
            a.try_wait().unwrap().is_none(),
            "an agent exited over a malformed row"
        );
    }
    stop(agents);
    let all = jobs(&q);
    assert_eq!(all.len(), 5, "{q}");
    for j in [&all[0], &all[4]] {
        assert_eq!(j["state"], "done", "{j}");
    }
    for j in &all[1..4] {
        assert_eq!(j["state"], "failed", "{j}");
        assert!(j["malformed"].is_string(), "{j}");
        assert!(j["outcome"].as_str().unwrap().contains("malformed"), "{j}");
    }
    let schedules = q["schedules"].as_array().unwrap();
    assert_eq!(schedules.len(), 2, "{q}");
    for s in schedules {
        assert_eq!(s["active"], false, "{s}");
        assert!(
            s["stopped_why"].as_str().unwrap().contains("malformed"),
            "{s}"
        );
    }
    let text = lab.ok(&["--db", &db, "queue"]);
    assert!(text.contains("malformed"), "{text}");
    let dashboard = Server::start(&lab, &db);
    let (status, page) = get(&dashboard.base, "/queue");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("malformed"), "{page}");
}

/// The reader role takes every advisory lock key scalelab once used for liveness (runs, agents,
/// the schema's migration): a run as the agent role still starts and completes, an agent still
/// registers and runs a job, and a run killed mid-way reads `incomplete` even when the reader
/// then takes its lock.
#[test]
fn locks_held_by_a_role_that_may_not_write_block_nothing_and_fake_no_liveness() {
    let lab = Lab::new();
    let Some(roles) = RolesDb::new(&lab) else {
        return;
    };
    let (reader, _) = roles.role("reader", "reader");
    let (_, as_agent) = roles.role("agent", "agent");
    let squat = roles.hold(
        &reader,
        "SELECT count(pg_advisory_lock(k, i)) FROM generate_series(0, 120) i, \
         (VALUES (1396919362), (1396919363)) AS c(k);",
    );
    wait_for(Duration::from_secs(20), "the reader's locks", || {
        roles.locks_of(&reader) >= 240
    });
    let mut args = vec!["--db", as_agent.as_str()];
    args.extend_from_slice(JOB);
    let run = lab
        .cmd()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, out) = wait_at_most(run, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "a run blocked by the reader's locks: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut args = vec!["--db", as_agent.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    let a = agent(&lab, &as_agent, "host=squatted", &[]);
    let q = wait_all_final(&lab, &as_agent, Duration::from_secs(60));
    assert_eq!(jobs(&q)[0]["state"], "done", "{q}");
    let agents = q["agents"].as_array().unwrap();
    assert_eq!(agents[0]["alive"], true, "{q}");
    stop(vec![a]);
    let q = queue(&lab, &as_agent);
    assert_eq!(
        q["agents"][0]["alive"], false,
        "a stopped agent reads alive: {q}"
    );

    // A run killed with SIGKILL: its lock key is in its row, and the reader takes it at once.
    let mut long = lab
        .cmd()
        .args([
            "--db",
            &as_agent,
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "60s",
            "--warmup",
            "0",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = || {
        let runs = lab.json(&["--db", &as_agent, "ls", "--json"]);
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["status"] == "running")
            .map(|r| r["id"].as_i64().unwrap())
    };
    wait_for(Duration::from_secs(30), "the long run running", || {
        running().is_some()
    });
    let id = running().unwrap();
    long.kill().unwrap();
    long.wait().unwrap();
    let key = roles.server.psql(
        &roles.name,
        &format!("SELECT lock_key FROM runs WHERE id = {id}"),
    );
    let _steal = roles.hold(
        &reader,
        &format!("SELECT pg_advisory_lock(1396919362, {});", key.trim()),
    );
    wait_for(Duration::from_secs(20), "the stolen lock", || {
        roles.locks_of(&reader) >= 241
    });
    let runs = lab.json(&["--db", &as_agent, "ls", "--json"]);
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert_eq!(run["status"], "incomplete", "{run}");
    drop(squat);
}

/// A session of a role that may write holds the `runs` table: a run waits at most the store's
/// lock timeout, then exits 2 naming who holds it; SIGTERM ends a run waiting for it at once.
#[test]
fn a_run_waiting_for_a_held_table_names_the_holder_and_sigterm_ends_it() {
    let lab = Lab::new();
    let Some(roles) = RolesDb::new(&lab) else {
        return;
    };
    let (holder, _) = roles.role("agent", "holder");
    let (_, as_agent) = roles.role("agent", "writer");
    let _hold = roles.hold(
        &holder,
        "BEGIN; LOCK TABLE runs IN EXCLUSIVE MODE; SELECT pg_sleep(600);",
    );
    wait_for(Duration::from_secs(20), "the table lock", || {
        roles.locks_of(&holder) >= 1
    });
    let short = format!("{as_agent}&options=-c%20lock_timeout%3D2s");
    let start = Instant::now();
    let mut args = vec!["--db", short.as_str()];
    args.extend_from_slice(JOB);
    let err = lab.fails(&args);
    assert!(start.elapsed() < Duration::from_secs(20), "{err}");
    assert!(err.contains(&holder) && err.contains("runs"), "{err}");

    let long = format!("{as_agent}&options=-c%20lock_timeout%3D120s");
    let mut args = vec!["--db", long.as_str()];
    args.extend_from_slice(JOB);
    let mut child = lab
        .cmd()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let start = Instant::now();
    sys::send_signal(child.id() as i32, signal_hook::consts::SIGTERM).unwrap();
    wait_for(Duration::from_secs(20), "a run ended by SIGTERM", || {
        child.try_wait().unwrap().is_some()
    });
    let waited = start.elapsed();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(waited < Duration::from_secs(15), "SIGTERM took {waited:?}");
}

/// Two agents on one machine, the second in a UTS namespace of its own with another host name:
/// the second refuses to start, naming the first.
#[test]
fn a_second_agent_on_one_machine_under_another_host_name_is_refused() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    if !crate::common::euid_is_root() {
        eprintln!("skipped: unshare -u needs root");
        return;
    }
    let lab = Lab::new();
    let mut first = lab
        .cmd()
        .args(["--db", &db, "agent", "--ignore-load", "--poll", "300ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(Duration::from_secs(30), "the first agent", || {
        let out = lab.run(&["--db", &db, "queue", "--json"]);
        out.status.success()
            && serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok_and(|q| {
                q["agents"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|a| a["alive"] == true))
            })
    });
    let exe = assert_cmd::cargo::cargo_bin("scalelab");
    let second = Command::new("unshare")
        .args([
            "-u",
            "sh",
            "-c",
            "hostname other-name-$$ && exec \"$0\" \"$@\"",
        ])
        .arg(&exe)
        .args(["--db", &db, "agent", "--ignore-load", "--max-jobs", "1"])
        .current_dir(lab.dir.path())
        .env("SCALELAB_DB", lab.db())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ended, out) = wait_at_most(second, Duration::from_secs(20));
    let _ = sys::send_signal(first.id() as i32, signal_hook::consts::SIGTERM);
    let _ = first.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(ended, "a second agent ran beside the first: {err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already") && err.contains("this machine"),
        "{err}"
    );
}

/// 520 jobs no live agent can take, queued first, do not hide the job after them from the agent
/// that can take it.
#[test]
fn jobs_no_agent_can_take_never_starve_one_it_can() {
    let Some((server, db, name)) = fresh_db() else {
        return;
    };
    let lab = Lab::new();
    let mut args = vec!["--db", db.as_str(), "submit", "--host", "gone"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    server.psql(
        &name,
        "INSERT INTO jobs (args, target, carries_cmd, state, attempts, max_attempts, \
         submitted_at, submitter, log, check_history) \
         SELECT args, target, carries_cmd, state, 0, max_attempts, submitted_at, submitter, '', 0 \
         FROM jobs, generate_series(1, 519)",
    );
    let mut args = vec!["--db", db.as_str(), "submit"];
    args.extend_from_slice(JOB);
    lab.ok(&args);
    let a = agent(&lab, &db, "host=here", &[]);
    let start = Instant::now();
    let done = || {
        let q = lab.json(&["--db", &db, "queue", "--limit", "1", "--json"]);
        q["jobs"][0]["state"] == "done"
    };
    wait_for(Duration::from_secs(30), "the takeable job not done", done);
    stop(vec![a]);
    eprintln!("taken and done after {:?}", start.elapsed());
}

/// A job past its timeout is killed with its process tree: the job fails "timed out after …",
/// the partial run stays (incomplete); a plan longer than the timeout, or than every matching
/// agent's `--max-job-time`, or than a run may be, is refused by `submit` up front.
#[test]
fn a_job_past_its_timeout_is_killed_and_failed_and_a_plan_too_long_is_refused() {
    let Some(db) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    let bench = lab.path("bench");
    std::fs::create_dir(&bench).unwrap();
    script(&bench, "hang.sh", &lab.path("unused"), true);
    let hang = format!("{}/hang.sh", bench.display());
    lab.ok(&[
        "--db",
        &db,
        "submit",
        "--timeout",
        "3s",
        "run",
        "--cmd",
        &hang,
        "--tasks",
        "1",
        "--runs",
        "1",
        "--quiet",
    ]);
    let a = agent(
        &lab,
        &db,
        "host=bounded",
        &[
            "--allow-cmd",
            &bench.display().to_string(),
            "--max-job-time",
            "30s",
        ],
    );
    let q = wait_all_final(&lab, &db, Duration::from_secs(60));
    let j = &jobs(&q)[0];
    assert_eq!(j["state"], "failed", "{j}");
    assert!(
        j["outcome"]
            .as_str()
            .unwrap()
            .contains("timed out after 3 s"),
        "{j}"
    );
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{j}");
    assert_eq!(runs[0]["status"], "incomplete", "{j}");
    // No process of the hung command is left.
    let left = Command::new("pgrep").args(["-f", &hang]).output().unwrap();
    assert!(left.stdout.is_empty(), "left running: {:?}", left.stdout);

    for (extra, job, needle) in [
        (
            &["--timeout", "5s"][..],
            &[
                "run",
                "spin",
                "--tasks",
                "1",
                "--runs",
                "1",
                "--duration",
                "10s",
            ][..],
            "--timeout",
        ),
        (
            &[][..],
            &[
                "run",
                "spin",
                "--tasks",
                "1",
                "--runs",
                "2",
                "--duration",
                "20s",
            ][..],
            "--max-job-time",
        ),
        (
            &[][..],
            &[
                "run",
                "atomic",
                "--duration",
                "168h",
                "--runs",
                "4294967295",
            ][..],
            "runs",
        ),
    ] {
        let mut args = vec!["--db", db.as_str(), "submit"];
        args.extend_from_slice(extra);
        args.extend_from_slice(job);
        let err = lab.fails(&args);
        assert!(err.contains(needle), "{job:?}: {err}");
    }
    stop(vec![a]);
}

/// The audit trail is the server's: a submitter who writes another role into `submitter` is
/// recorded as itself, cannot rewrite a job's log, and an event it adds carries its own role.
#[test]
fn a_submitter_cannot_forge_who_submitted_or_rewrite_the_log() {
    let lab = Lab::new();
    let Some(roles) = RolesDb::new(&lab) else {
        return;
    };
    let (alice, as_alice) = roles.role("submitter", "alice");
    let (ok, err) = roles.psql_as(
        &alice,
        "INSERT INTO jobs (args, target, carries_cmd, state, attempts, max_attempts, \
         submitted_at, submitter, log, check_history) VALUES ('[\"run\", \"spin\"]', 'any', 0, \
         'queued', 0, 3, 0, '{\"role\": \"bob\", \"user\": \"bob\", \"host\": \"bobs-laptop\"}', \
         '', 0)",
    );
    assert!(ok, "{err}");
    let q = queue(&lab, &as_alice);
    let j = &jobs(&q)[0];
    assert_eq!(j["submitter"]["role"], alice.as_str(), "{j}");
    let id = j["id"].as_i64().unwrap();
    for sql in [
        format!("UPDATE jobs SET log = 'rewritten' WHERE id = {id}"),
        format!("UPDATE job_events SET text = 'rewritten' WHERE job_id = {id}"),
        format!("DELETE FROM job_events WHERE job_id = {id}"),
        format!("UPDATE jobs SET submitter = '{{}}' WHERE id = {id}"),
    ] {
        let (ok, err) = roles.psql_as(&alice, &sql);
        assert!(!ok, "a submitter could run `{sql}`");
        assert!(err.contains("permission denied"), "{sql}: {err}");
    }
    let (ok, err) = roles.psql_as(
        &alice,
        &format!(
            "INSERT INTO job_events (job_id, at, role, text) \
             VALUES ({id}, 0, 'lab_epyc_1', 'attempt 1 done on lab-epyc-1: ok')"
        ),
    );
    assert!(ok, "{err}");
    let q = queue(&lab, &as_alice);
    let forged = jobs(&q)[0]["log"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["text"].as_str().unwrap().starts_with("attempt 1 done"))
        .cloned()
        .unwrap();
    assert_eq!(forged["role"], alice.as_str(), "{forged}");
}
