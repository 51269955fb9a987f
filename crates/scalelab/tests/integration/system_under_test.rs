//! The system under test beyond the command (issue 51): pgbench (TPC-B-like, scale 1) driving
//! a PostgreSQL that `--server` starts — or that the test starts and `--attach comm:postgres`
//! names — with fsync on, on a journalled ext4 as the dbench test makes. The clients wait in
//! `poll` for their backends; the answer must follow those waits into what the backends did
//! (their CPU, their WAL flush, their wait for a CPU), never stop at "the socket's other end",
//! show the backends as `server` threads, and still add up.
//!
//! Needs root (the server runs as the `postgres` user through `setpriv`), Debian's
//! `postgresql` package (`scripts/test` installs it) and a loop device; where one is missing the
//! test skips, saying so.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{Lab, perf_available};
use crate::real_programs::{
    JournalledExt4, assert_agreement, causes, explained, installed, workload_causes,
};

/// A PostgreSQL data directory with pgbench's tables, on a journalled ext4, and how to start
/// its server.
pub(crate) struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    socket: PathBuf,
    /// Unmounted last.
    _fs: JournalledExt4,
}

impl Postgres {
    /// initdb, a first start for `pgbench -i -s 1`, stopped again; `None` (saying why) where
    /// it cannot be made.
    pub(crate) fn prepare(lab: &Lab) -> Option<Postgres> {
        if !perf_available() || !installed("pgbench") {
            return None;
        }
        let Some(bin) = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path().join("bin")).max())
            .filter(|b| b.join("initdb").exists())
        else {
            assert!(std::env::var("CI").is_err(), "CI installs postgresql");
            println!("skipped: no /usr/lib/postgresql/*/bin/initdb");
            return None;
        };
        // The server's user must reach the folders below the lab's.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(lab.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let mnt = lab.path("pgfs");
        std::fs::create_dir(&mnt).unwrap();
        let fs = JournalledExt4::mount(&lab.path("pg.img"), &mnt)?;
        let (data, socket) = (mnt.join("data"), mnt.join("sock"));
        for d in [&data, &socket] {
            std::fs::create_dir(d).unwrap();
            let ok = Command::new("chown").arg("postgres").arg(d).status();
            if !ok.is_ok_and(|s| s.success()) {
                assert!(std::env::var("CI").is_err(), "CI has the postgres user");
                println!("skipped: no postgres user to run the server as");
                return None;
            }
        }
        let pg = Postgres {
            bin,
            data,
            socket,
            _fs: fs,
        };
        let initdb = Command::new("setpriv")
            .args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
            .arg(pg.bin.join("initdb"))
            .args(["-U", "bench", "--auth=trust", "-D"])
            .arg(&pg.data)
            .output()
            .unwrap();
        assert!(initdb.status.success(), "initdb: {initdb:?}");
        let mut server = pg.start();
        let init = Command::new(pg.bin.join("pgbench"))
            .args(["-i", "-s", "1", "-q", "-U", "bench", "-h"])
            .arg(&pg.socket)
            .arg("postgres")
            .output()
            .unwrap();
        pg.stop(&mut server);
        assert!(init.status.success(), "pgbench -i: {init:?}");
        Some(pg)
    }

    /// The server's command line (fsync on, the socket only).
    pub(crate) fn server_command(&self) -> String {
        format!(
            "exec setpriv --reuid=postgres --regid=postgres --init-groups {} -D {} -k {} -c listen_addresses= -c fsync=on -c shared_buffers=64MB",
            self.bin.join("postgres").display(),
            self.data.display(),
            self.socket.display()
        )
    }

    pub(crate) fn ready_command(&self) -> String {
        format!(
            "{} -q -h {}",
            self.bin.join("pg_isready").display(),
            self.socket.display()
        )
    }

    pub(crate) fn pgbench(&self) -> String {
        format!(
            "{} -h {} -U bench -c {{n}} -j {{n}} -T 2 postgres",
            self.bin.join("pgbench").display(),
            self.socket.display()
        )
    }

    /// Starts the server itself (as a user would have, before `--attach`), ready.
    fn start(&self) -> Child {
        let child = Command::new("sh")
            .args(["-c", &self.server_command()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while !Command::new("sh")
            .args(["-c", &self.ready_command()])
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(started.elapsed().as_secs() < 60, "postgres did not start");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        child
    }

    /// Stops it (a smart shutdown on SIGTERM) and waits for it.
    fn stop(&self, server: &mut Child) {
        let _ = Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status();
        let _ = server.wait();
    }
}

/// The pgbench run's checks, the same whoever started the server: the backends are `server`
/// threads, no cause stops at the socket, the workers' waits are followed into the backends,
/// and the parts add up.
fn assert_followed_into_the_backends(lab: &Lab, e: &Value) {
    for p in e["points"].as_array().unwrap() {
        // What an op costs the server besides the client's task time.
        assert!(
            p["servers_cpu_ns"].as_f64().is_some_and(|c| c > 0.0),
            "N={}: the servers' CPU per op: {}",
            p["n"],
            p["servers_cpu_ns"]
        );
        // Its background work (the checkpointer's, the WAL writer's: threads that ended no
        // client's wait) is told apart, and is some of it, not all: the backends served.
        let background = p["servers_background_cpu_ns"].as_f64().unwrap_or(-1.0);
        let all = p["servers_cpu_ns"].as_f64().unwrap_or(0.0);
        assert!(
            (0.0..0.5 * all).contains(&background),
            "N={}: the servers' background CPU {background} of {all}",
            p["n"]
        );
        let servers: Vec<&Value> = p["threads"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["role"] == "server" && g["comm"] == "postgres")
            .collect();
        assert!(
            !servers.is_empty(),
            "N={}: the backends are server threads: {}",
            p["n"],
            p["threads"]
        );
        let workers: Vec<&Value> = p["threads"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["role"] == "worker")
            .collect();
        assert!(
            workers.iter().all(|g| g["comm"] == "pgbench"),
            "N={}: only the clients work: {}",
            p["n"],
            p["threads"]
        );
    }
    for c in causes(e) {
        let socket: f64 = c["ended_by"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["by"] == "the socket's other end")
            .map(|b| b["ns"].as_f64().unwrap_or(0.0))
            .sum();
        let all: f64 = c["ended_by"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| b["ns"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(
            socket <= 0.1 * all,
            "a cause ends at the socket's other end: {c}"
        );
    }
    // The backends' CPU is shown by function, from the servers' own profile (`perf record
    // -p`) beside the command's: functions of the postgres binary among them.
    let by_function: Vec<&str> = e["points"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["parts"].as_array().into_iter().flatten())
        .filter(|part| part["cause"]["what"] == "server-cpu")
        .flat_map(|part| part["cause"]["evidence"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        by_function
            .iter()
            .any(|l| l.starts_with("the servers' profile"))
            && by_function.iter().any(|l| l.contains(" (postgres), ")),
        "the servers' CPU by function: {by_function:?}"
    );
    // Where the clients waited for a CPU, the backends holding it are named as the server.
    for c in causes(e).iter().filter(|c| c["kind"] == "run_queue") {
        let held: Vec<&str> = c["held_by"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h["by"].as_str())
            .collect();
        assert!(
            held.is_empty() || held.contains(&"the server (postgres)"),
            "the run queue held by the backends: {c}"
        );
    }
    // The clients' largest wait that grows is the server's work, named as such.
    let top = workload_causes(e)
        .into_iter()
        .find(|c| c["cause"]["source"] == "offcpu")
        .unwrap_or_else(|| panic!("a wait grows: {}", e["growth"]));
    assert_eq!(top["cause"]["via"]["server"], "postgres", "{top}");
    assert!(
        top["cause"]["via"]["waited_in"]
            .as_str()
            .is_some_and(|w| w.contains("pgbench") || w.contains("poll")),
        "{top}"
    );
    // As the other real programs: a debug build on a shared 2-CPU machine, a 2 s trial
    // profiled at a few hundred samples (bench/agreement/real-programs holds release builds to 0.90–1.10).
    assert_agreement(lab, e, 0.15);
}

#[test]
fn pgbench_against_a_server_it_starts_is_explained_by_the_backends_work() {
    let lab = Lab::new();
    let Some(pg) = Postgres::prepare(&lab) else {
        return;
    };
    let (server, ready) = (pg.server_command(), pg.ready_command());
    let Some(e) = explained(
        &lab,
        &pg.pgbench(),
        &[
            "--server",
            &server,
            "--ready",
            &ready,
            "--metric",
            "tps=tps = ([0-9.]+)",
        ],
    ) else {
        return;
    };
    assert_followed_into_the_backends(&lab, &e);
    // The server was stopped with the run.
    let left = Command::new("pgrep")
        .args(["-f", &pg.data.display().to_string()])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the server outlived the run: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    let text = lab.ok(&["explain", "last"]);
    assert!(text.contains("the server (postgres): "), "{text}");
    assert!(text.contains("the servers' CPU besides: "), "{text}");
    assert!(text.contains("of it background work"), "{text}");
}

#[test]
fn pgbench_against_a_running_server_attached_by_name_is_explained_the_same() {
    let lab = Lab::new();
    let Some(pg) = Postgres::prepare(&lab) else {
        return;
    };
    let mut server = pg.start();
    let e = explained(
        &lab,
        &pg.pgbench(),
        &[
            "--attach",
            "comm:postgres",
            "--metric",
            "tps=tps = ([0-9.]+)",
        ],
    );
    pg.stop(&mut server);
    let Some(e) = e else { return };
    assert_followed_into_the_backends(&lab, &e);
}

#[test]
fn an_attach_naming_nothing_and_a_server_that_never_gets_ready_are_refused_with_the_reason() {
    let lab = Lab::new();
    let err = lab.fails(&[
        "run",
        "--cmd",
        "true",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--attach",
        "comm:no-such-prog",
    ]);
    assert!(err.contains("--attach comm:no-such-prog"), "{err}");
    let err = lab.fails(&["run", "--cmd", "true", "--attach", "tid:3"]);
    assert!(err.contains("pid:PID, comm:NAME or cgroup:PATH"), "{err}");
    let err = lab.fails(&["run", "page_fault", "--attach", "pid:1"]);
    assert!(err.contains("--attach"), "{err}");
    // A server that exits at once: every trial fails with its last words.
    let out = lab.run(&[
        "run",
        "--cmd",
        "true",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--server",
        "echo cannot bind the port >&2; exit 1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot bind the port"), "{stderr}");
}
