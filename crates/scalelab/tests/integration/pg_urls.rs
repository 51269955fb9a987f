//! `--db postgres://…` against `psql` itself (issue 29): any URL psql accepts connects where psql
//! connects, or is refused naming the parameter scalelab does not support. Two throwaway
//! servers: A on a socket folder only (the shared test server), B on 127.0.0.1 and a socket
//! folder of its own, each with a database `urls` holding one run named after its server. Each
//! row gives a URL (and environment) to `psql -c 'SELECT name FROM runs'` and to
//! `scalelab ls --json`, and compares the server each reached.

use std::path::Path;
use std::process::Command;

use crate::common::Lab;
use crate::test_server::{self, PgServer};

/// What a client reached with a URL: the server's name, or its error.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reached {
    Server(String),
    Error(String),
}

/// What a row expects of scalelab, given where psql went.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The server psql reaches (the row says which, so a row cannot pass by both failing).
    Same(&'static str),
    /// psql reaches a server; scalelab refuses, naming this parameter.
    Refused(&'static str),
    /// psql refuses the URL too; scalelab names this.
    BothRefuse(&'static str),
}

/// Environment variables a row sets.
type Env = Vec<(&'static str, String)>;

/// The variables libpq reads, cleared for every row but those it sets.
const PG_VARS: &[&str] = &[
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGSERVICE",
    "PGSERVICEFILE",
    "PGSSLMODE",
    "PGPASSFILE",
    "PGPASSWORD",
    "PGOPTIONS",
    "PGAPPNAME",
    "PGSSLROOTCERT",
    "PGCONNECT_TIMEOUT",
    "PGTARGETSESSIONATTRS",
    "PGGSSENCMODE",
    "PGREQUIRESSL",
];

fn with_env(c: &mut Command, env: &[(&str, String)]) {
    for v in PG_VARS {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
}

fn psql(server: &PgServer, url: &str, env: &[(&str, String)]) -> Reached {
    let mut c = Command::new(server.psql_bin());
    c.args(["-X", "-A", "-t", "-c", "SELECT name FROM runs", url]);
    with_env(&mut c, env);
    let out = c.output().unwrap();
    if out.status.success() {
        Reached::Server(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Reached::Error(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

fn scalelab(lab: &Lab, url: &str, env: &[(&str, String)]) -> Reached {
    let mut c = lab.cmd();
    c.args(["--db", url, "ls", "--json"]);
    with_env(&mut c, env);
    let out = c.output().unwrap();
    if out.status.success() {
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        Reached::Server(runs[0]["name"].as_str().unwrap_or_default().to_owned())
    } else {
        Reached::Error(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// Stores one run named `name` in database `urls` of `server`.
fn seed(lab: &Lab, server: &PgServer, export: &serde_json::Value, name: &str) {
    server.psql("postgres", "CREATE DATABASE urls");
    let mut run = export.clone();
    run["run"]["meta"]["name"] = name.into();
    let file = lab.path(&format!("{name}.json"));
    std::fs::write(&file, run.to_string()).unwrap();
    lab.ok(&[
        "--db",
        &server.url("urls"),
        "import",
        file.to_str().unwrap(),
    ]);
}

fn encoded(path: &Path) -> String {
    path.to_str().unwrap().replace('/', "%2F")
}

/// Was: `postgres://lab@localhost:55433/labdb?host=S&port=55432&sslmode=disable` wrote into
/// the TCP server where psql reaches the socket one; `postgres://lab@%2Fsock/db?port=P` was
/// "invalid number of ports"; PGPORT was ignored beside a URL host; `gssencmode`,
/// `client_encoding`, `fallback_application_name` were "invalid connection string".
#[test]
fn urls_reach_the_server_psql_reaches_or_are_refused_naming_the_parameter() {
    let Some(a) = test_server::server_or_skip() else {
        return;
    };
    let b = match test_server::tcp_server() {
        Ok(b) => b,
        Err(e) if std::env::var_os("SCALELAB_REQUIRE_PG").is_none() => {
            eprintln!("skipped: no second PostgreSQL server: {e}");
            return;
        }
        Err(e) => panic!("a second PostgreSQL server: {e}"),
    };
    let lab = Lab::new();
    lab.short_spin(&[]);
    let export = lab.json(&["export", "last"]);
    seed(&lab, a, &export, "A");
    seed(&lab, &b, &export, "B");
    let user = a.superuser();
    let (sa, sb) = (a.socket_dir(), b.socket_dir());
    let (pa, pb) = (a.port_number(), b.port_number());
    let sa_text = sa.to_str().unwrap();
    let service = lab.path("pg_service.conf");
    std::fs::write(
        &service,
        format!("[lab]\nhost={sa_text}\nport={pa}\nuser={user}\ndbname=urls\n"),
    )
    .unwrap();
    let service = service.to_str().unwrap().to_owned();
    let none: Env = Vec::new();
    let rows: Vec<(String, Env, Expect)> = vec![
        (
            format!(
                "postgres://{user}@localhost:{pb}/urls?host={sa_text}&port={pa}&sslmode=disable"
            ),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            format!("postgres://{user}@localhost:{pb}/urls?host={sa_text}&port={pa}"),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            format!("postgres://{user}@{}/urls?port={pa}", encoded(sa)),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            format!("postgres://{user}@localhost/urls"),
            vec![("PGPORT", pb.to_string())],
            Expect::Same("B"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:{pb}/urls?gssencmode=disable"),
            none.clone(),
            Expect::Same("B"),
        ),
        (
            format!(
                "postgres://{user}@127.0.0.1:{pb}/urls?client_encoding=UTF8&fallback_application_name=x"
            ),
            none.clone(),
            Expect::Same("B"),
        ),
        (
            format!("postgres://{user}@/urls?host={sa_text}&port={pa}"),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            format!("postgres://{user}@db.invalid:{pb}/urls?hostaddr=127.0.0.1"),
            none.clone(),
            Expect::Same("B"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:1,127.0.0.1:{pb}/urls?connect_timeout=2"),
            none.clone(),
            Expect::Same("B"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:1,{}:{pa}/urls", encoded(sa)),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            format!(
                "postgres:///urls?host={}&port={pb}&user={user}",
                sb.display()
            ),
            none.clone(),
            Expect::Same("B"),
        ),
        (
            format!("postgres:///urls?host={sa_text},127.0.0.1&port={pa},{pb}&user={user}"),
            none.clone(),
            Expect::Same("A"),
        ),
        (
            "postgresql:///urls".to_owned(),
            vec![
                ("PGHOST", sa_text.to_owned()),
                ("PGPORT", pa.to_string()),
                ("PGUSER", user.to_owned()),
            ],
            Expect::Same("A"),
        ),
        (
            "postgres:///?service=lab".to_owned(),
            vec![("PGSERVICEFILE", service.clone())],
            Expect::Same("A"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:{pb}/urls?requirepeer=postgres"),
            none.clone(),
            Expect::Refused("requirepeer"),
        ),
        (
            format!(
                "postgres://{user}@127.0.0.1:{pb}/urls?sslmode=disable&sslcert=/nonexistent.pem"
            ),
            none.clone(),
            Expect::Refused("sslcert"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:{pb}/urls?target_session_attrs=primary"),
            none.clone(),
            Expect::Refused("target_session_attrs"),
        ),
        (
            format!("postgres://{user}@127.0.0.1:{pb}/urls?nosuch=1"),
            none.clone(),
            Expect::BothRefuse("nosuch"),
        ),
    ];
    for (i, (url, env, expect)) in rows.iter().enumerate() {
        check_row(i, url, env, expect, &lab, a);
    }
}

/// Row `i`: where psql and scalelab reach with `url` and `env`, as `expect` says.
fn check_row(i: usize, url: &str, env: &Env, expect: &Expect, lab: &Lab, a: &PgServer) {
    let by_psql = psql(a, url, env);
    let by_scalelab = scalelab(lab, url, env);
    let shown = |r: &Reached| match r {
        Reached::Server(s) => format!("server {s}"),
        Reached::Error(e) => format!("refused: {}", e.lines().next().unwrap_or_default()),
    };
    eprintln!(
        "{i:2} {url} {env:?}\n   psql: {}\n   scalelab: {}",
        shown(&by_psql),
        shown(&by_scalelab)
    );
    match *expect {
        Expect::Same(server) => {
            assert_eq!(
                by_psql,
                Reached::Server(server.into()),
                "psql, row {i}: {url}"
            );
            assert_eq!(by_scalelab, by_psql, "row {i}: {url} {env:?}");
        }
        Expect::Refused(keyword) => {
            assert!(
                matches!(by_psql, Reached::Server(_)),
                "psql, row {i}: {by_psql:?}"
            );
            let Reached::Error(e) = &by_scalelab else {
                panic!("row {i}: scalelab connected: {url}");
            };
            assert!(e.contains(&format!("{keyword}=")), "row {i}: {e}");
            assert!(!e.contains("cannot connect"), "row {i}: {e}");
        }
        Expect::BothRefuse(keyword) => {
            assert!(
                matches!(by_psql, Reached::Error(_)),
                "psql, row {i}: {by_psql:?}"
            );
            let Reached::Error(e) = &by_scalelab else {
                panic!("row {i}: scalelab connected: {url}");
            };
            assert!(e.contains(&format!("`{keyword}`")), "row {i}: {e}");
        }
    }
}
