//! A throwaway PostgreSQL server for tests: one per test process, started on first use with
//! `initdb` and `postgres` from Debian's `postgresql` package, listening only on a Unix socket in
//! a private temporary folder, and gone when the test process ends (the server is started with
//! a parent-death signal from a thread that lives as long as the process). As root, the server
//! runs as the unprivileged `postgres` user (`setpriv`), as PostgreSQL refuses to run as root.
//!
//! Each test gets a database of its own ([`fresh_url`]). When no server can be started (no
//! PostgreSQL installed, no `postgres` user), [`fresh_url`] prints why and returns `None`, and the
//! test returns early; CI installs the package, so there the tests run. Set
//! `SCALELAB_REQUIRE_PG=1` to make a missing server a failure instead.
//!
//! Built for this crate's tests and, with the `test-support` feature, for the integration tests
//! of `lab` and `scalelab`: std only.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The superuser `initdb` creates; trusted on the socket, which only this folder reaches.
const SUPERUSER: &str = "scalelab_test";

/// A running throwaway server.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    socket_dir: PathBuf,
    /// The TCP port on 127.0.0.1 of a server started by [`tls_server`].
    pub port: Option<u16>,
}

/// A server of its own (not the shared one) that also listens on 127.0.0.1 with TLS on, its
/// certificate and key given as PEM; it lives as long as the test process.
pub fn tls_server(cert_pem: &str, key_pem: &str) -> Result<PgServer, String> {
    start_with(Some((free_port()?, Some((cert_pem, key_pem)))))
}

/// A server of its own that also listens on 127.0.0.1 (a free port, no TLS) besides its
/// socket folder; it lives as long as the test process.
pub fn tcp_server() -> Result<PgServer, String> {
    start_with(Some((free_port()?, None)))
}

fn free_port() -> Result<u16, String> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("finding a free port: {e}"))?
        .port())
}

static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// The shared server, started on first call; `Err` says why none could be.
pub fn server() -> Result<&'static PgServer, String> {
    SERVER.get_or_init(start).as_ref().map_err(Clone::clone)
}

/// A URL to a new, empty database on the shared server, or `None` (with the reason printed)
/// when no server can be started here.
pub fn fresh_url() -> Option<String> {
    server_or_skip().map(PgServer::create_database)
}

/// The shared server, or `None` with the reason printed (a panic instead when
/// `SCALELAB_REQUIRE_PG` is set, as in CI).
pub fn server_or_skip() -> Option<&'static PgServer> {
    match server() {
        Ok(s) => Some(s),
        Err(reason) => {
            if std::env::var_os("SCALELAB_REQUIRE_PG").is_some() {
                panic!("PostgreSQL is required (SCALELAB_REQUIRE_PG) but: {reason}");
            }
            eprintln!("skipped: no PostgreSQL server for this test: {reason}");
            None
        }
    }
}

impl PgServer {
    /// The folder of its Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Its `psql`.
    pub fn psql_bin(&self) -> PathBuf {
        self.bin.join("psql")
    }

    /// The port it listens on (its socket file's number too).
    pub fn port_number(&self) -> u16 {
        self.port.unwrap_or(5432)
    }

    /// The superuser's name.
    pub fn superuser(&self) -> &'static str {
        SUPERUSER
    }

    /// The URL of database `db` on this server.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres:///{db}?host={}&user={SUPERUSER}&port={}",
            self.socket_dir.display(),
            self.port.unwrap_or(5432)
        )
    }

    /// Creates a new empty database and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::Relaxed)
        );
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Runs one SQL command on database `db` as the superuser; panics with psql's output on
    /// failure. Returns what psql printed (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-p"])
            .arg(self.port.unwrap_or(5432).to_string())
            .arg("-h")
            .arg(&self.socket_dir)
            .args(["-U", SUPERUSER, "-d", db, "-c", sql])
            .output()
            .expect("running psql");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn find_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("SCALELAB_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("/usr/lib/postgresql: {e} (apt-get install postgresql)"))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no initdb under /usr/lib/postgresql/*/bin (apt-get install postgresql)".into()
    })
}

/// Removes the folders of earlier test processes that are gone.
fn sweep_stale(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("scalelab-pgtest-"))
            .and_then(|p| p.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn start() -> Result<PgServer, String> {
    start_with(None)
}

static NEXT_SERVER: AtomicU32 = AtomicU32::new(0);

/// Starts a server; with `tcp`, (port, TLS), it also listens on 127.0.0.1:port, with TLS when
/// given (certificate PEM, key PEM).
fn start_with(tcp: Option<(u16, Option<(&str, &str)>)>) -> Result<PgServer, String> {
    let bin = find_bin()?;
    let tmp = std::env::temp_dir();
    let k = NEXT_SERVER.fetch_add(1, Ordering::Relaxed);
    sweep_stale(&tmp);
    let base = tmp.join(format!("scalelab-pgtest-{}-{k}", std::process::id()));
    let data = base.join("data");
    let socket_dir = base.join("sock");
    let _ = std::fs::remove_dir_all(&base);
    for dir in [&base, &data, &socket_dir] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let as_root = effective_root();
    let run_as = |program: &Path| -> Command {
        if as_root {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--pdeathsig=QUIT",
                "--",
            ])
            .arg(program);
            c
        } else {
            Command::new(program)
        }
    };
    if as_root {
        let ok = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&data)
            .arg(&socket_dir)
            .status()
            .map_err(|e| format!("chown: {e}"))?
            .success();
        if !ok {
            return Err(
                "cannot give the test folders to the `postgres` user (is it missing?)".into(),
            );
        }
    }
    let out = run_as(&bin.join("initdb"))
        .args(["-D"])
        .arg(&data)
        .args([
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let log = std::fs::File::create(base.join("server.log")).map_err(|e| e.to_string())?;
    let mut server = run_as(&bin.join("postgres"));
    server
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&socket_dir)
        .args(["-c", "fsync=off", "-c", "max_connections=100"]);
    match tcp {
        None => {
            server.args(["-c", "listen_addresses="]);
        }
        Some((port, None)) => {
            server.args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                &format!("port={port}"),
            ]);
        }
        Some((port, Some((cert, key)))) => {
            use std::os::unix::fs::PermissionsExt;
            let (cert_file, key_file) = (data.join("server.crt"), data.join("server.key"));
            std::fs::write(&cert_file, cert).map_err(|e| e.to_string())?;
            std::fs::write(&key_file, key).map_err(|e| e.to_string())?;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| e.to_string())?;
            if as_root {
                Command::new("chown")
                    .args(["postgres:postgres"])
                    .arg(&cert_file)
                    .arg(&key_file)
                    .status()
                    .map_err(|e| format!("chown: {e}"))?;
            }
            server.args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                &format!("port={port}"),
                "-c",
                "ssl=on",
            ]);
        }
    }
    server
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    spawn_for_the_process(server)?;
    let pg = PgServer {
        bin,
        socket_dir,
        port: tcp.map(|(p, _)| p),
    };
    wait_ready(pg, &base)
}

/// Spawns `server` from a thread that lives as long as the test process, so the parent-death
/// signal fires only when the whole test process ends.
fn spawn_for_the_process(mut server: Command) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let started = server
            .spawn()
            .map_err(|e| format!("starting postgres: {e}"));
        let ok = started.is_ok();
        let _ = tx.send(started.map(drop));
        if ok {
            loop {
                std::thread::park();
            }
        }
    });
    rx.recv().map_err(|e| e.to_string())?
}

/// Waits up to 60 s for `pg` to accept connections; the server's log (in `base`) says why not.
fn wait_ready(pg: PgServer, base: &Path) -> Result<PgServer, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(pg.bin.join("pg_isready"))
            .arg("-q")
            .arg("-p")
            .arg(pg.port.unwrap_or(5432).to_string())
            .arg("-h")
            .arg(&pg.socket_dir)
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            return Ok(pg);
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(base.join("server.log")).unwrap_or_default();
            return Err(format!("the server did not start in 60 s: {log}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn effective_root() -> bool {
    // The effective uid (the third field of `Uid:`), from /proc: std only.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
