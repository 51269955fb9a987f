//! A PostgreSQL URL made into a connection configuration the way libpq users expect: the URL
//! first, then a service from the service file (`?service=NAME` or `PGSERVICE`), then the
//! `PGHOST`/`PGPORT`/`PGUSER`/`PGDATABASE` variables, then libpq's defaults (Debian's socket
//! folder `/var/run/postgresql`, port 5432, the login name as user and database). A password
//! comes from the URL, else `PGPASSWORD`, else the password file (`?passfile=`, `PGPASSFILE` or
//! `~/.pgpass`; ignored, as libpq does, when others may read it).
//!
//! TLS settings (`sslmode`, `sslrootcert`) are read here in the same order and handed to
//! `pg_tls`, which makes the connector.
//!
//! Nothing here prints or keeps the password outside the returned configuration.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::Config;
use postgres::config::Host;

use super::address::PgUrl;
use super::pg_tls::{SslMode, TlsSettings};

/// How long a connection attempt may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a URL cannot be made into a configuration (never quoting the password).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The URL does not parse.
    #[error("not a valid PostgreSQL URL ({0})")]
    Url(String),
    /// The service it names is in no service file.
    #[error(
        "service `{0}` is not defined in any service file (PGSERVICEFILE, ~/.pg_service.conf, PGSYSCONFDIR/pg_service.conf)"
    )]
    Service(String),
}

/// The configuration to connect with and its TLS settings; see the module doc for the order
/// of sources.
pub(crate) fn config(url: &PgUrl) -> Result<(Config, TlsSettings), ConfigError> {
    let (rest, mut extra) = split_libpq_only(url.secret_text());
    let mut config = Config::from_str(&rest).map_err(|e| ConfigError::Url(e.to_string()))?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());

    if let Some(name) = extra.get("service").cloned().or_else(|| env("PGSERVICE")) {
        let values = service(&name).ok_or(ConfigError::Service(name))?;
        apply_defaults(&mut config, &values)?;
        for key in ["sslmode", "sslrootcert"] {
            if let Some(v) = values.get(key) {
                extra.entry(key.to_owned()).or_insert_with(|| v.clone());
            }
        }
    }
    let tls = TlsSettings {
        mode: SslMode::parse(
            &extra
                .get("sslmode")
                .cloned()
                .or_else(|| env("PGSSLMODE"))
                .unwrap_or_else(|| "prefer".into()),
        )?,
        root_cert: extra
            .get("sslrootcert")
            .cloned()
            .or_else(|| env("PGSSLROOTCERT"))
            .map(PathBuf::from),
    };
    let from_env: BTreeMap<String, String> = [
        ("host", "PGHOST"),
        ("port", "PGPORT"),
        ("user", "PGUSER"),
        ("dbname", "PGDATABASE"),
    ]
    .into_iter()
    .filter_map(|(key, var)| env(var).map(|v| (key.to_owned(), v)))
    .collect();
    apply_defaults(&mut config, &from_env)?;

    if config.get_hosts().is_empty() {
        config.host_path("/var/run/postgresql");
    }
    if config.get_user().is_none() {
        let login = env("USER")
            .or_else(|| env("LOGNAME"))
            .unwrap_or_else(|| "postgres".into());
        config.user(&login);
    }
    if config.get_dbname().is_none() {
        let user = config.get_user().unwrap_or_default().to_owned();
        config.dbname(&user);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_password().is_none() {
        if let Some(pw) = env("PGPASSWORD") {
            config.password(pw);
        } else if let Some(pw) = password_file(&config, extra.get("passfile").map(PathBuf::from)) {
            config.password(pw);
        }
    }
    config.application_name("scalelab");
    Ok((config, tls))
}

/// The URL without the parameters read here rather than by tokio-postgres (`service`,
/// `passfile`, and `sslmode`/`sslrootcert`, whose `verify-*` it does not know), and those
/// parameters.
fn split_libpq_only(url: &str) -> (String, BTreeMap<String, String>) {
    let mut extra = BTreeMap::new();
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), extra);
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.split_once('=') {
            Some((k, v)) if ["service", "passfile", "sslmode", "sslrootcert"].contains(&k) => {
                extra.insert(k.to_owned(), percent_decode(v));
                false
            }
            _ => true,
        })
        .collect();
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (rest, extra)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sets each of `values` (libpq key names) that the configuration does not have yet.
fn apply_defaults(
    config: &mut Config,
    values: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    for (key, value) in values {
        match key.as_str() {
            "host" if config.get_hosts().is_empty() => {
                for h in value.split(',') {
                    if h.starts_with('/') {
                        config.host_path(h);
                    } else {
                        config.host(h);
                    }
                }
            }
            "port" if config.get_ports().is_empty() => {
                let port = value
                    .parse()
                    .map_err(|_| ConfigError::Url(format!("port `{value}` is not a number")))?;
                config.port(port);
            }
            "user" if config.get_user().is_none() => {
                config.user(value);
            }
            "dbname" if config.get_dbname().is_none() => {
                config.dbname(value);
            }
            "password" if config.get_password().is_none() => {
                config.password(value);
            }
            "options" if config.get_options().is_none() => {
                config.options(value);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The `[name]` section of the first service file that has it.
fn service(name: &str) -> Option<BTreeMap<String, String>> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut files = Vec::new();
    files.extend(env("PGSERVICEFILE"));
    files.extend(env("HOME").map(|h| h.join(".pg_service.conf")));
    files.push(env("PGSYSCONFDIR").map_or_else(
        || PathBuf::from("/etc/postgresql-common/pg_service.conf"),
        |d| d.join("pg_service.conf"),
    ));
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|text| service_section(&text, name))
}

fn service_section(text: &str, name: &str) -> Option<BTreeMap<String, String>> {
    let mut inside = false;
    let mut found = None::<BTreeMap<String, String>>;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section == name;
            if inside {
                found.get_or_insert_with(BTreeMap::new);
            }
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                found
                    .get_or_insert_with(BTreeMap::new)
                    .insert(k.trim().to_owned(), v.trim().to_owned());
            }
        }
    }
    found
}

/// The password for this host, port, database and user from the password file, if any.
fn password_file(config: &Config, given: Option<PathBuf>) -> Option<String> {
    let path = given
        .or_else(|| std::env::var_os("PGPASSFILE").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    // libpq ignores a password file that others may read.
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(h) => h.clone(),
        Host::Unix(p) => p.display().to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config.get_dbname().unwrap_or_default();
    let user = config.get_user().unwrap_or_default();
    pgpass_lookup(&text, &[&host, "localhost"], &port, db, user)
}

/// The first `host:port:database:user:password` line matching (`*` matches anything; `\:` and
/// `\\` are escapes). A Unix-socket host also matches `localhost`, as in libpq.
fn pgpass_lookup(text: &str, hosts: &[&str], port: &str, db: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let fields = split_escaped(line);
        let [h, p, d, u, pw] = fields.as_slice() else {
            continue;
        };
        let ok = |field: &str, value: &str| field == "*" || field == value;
        if hosts.iter().any(|host| ok(h, host)) && ok(p, port) && ok(d, db) && ok(u, user) {
            return Some(pw.clone());
        }
    }
    None
}

fn split_escaped(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            // The password (the fifth field) may hold unescaped colons.
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_matches_like_libpq() {
        let text =
            "# comment\nother:5432:*:*:no\n/run/pg:5432:perf:team:s\\:cret\n*:*:*:*:fallback\n";
        assert_eq!(
            pgpass_lookup(text, &["/run/pg", "localhost"], "5432", "perf", "team").as_deref(),
            Some("s:cret")
        );
        assert_eq!(
            pgpass_lookup(text, &["db"], "5433", "x", "y").as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup("a:b:c", &["a"], "b", "c", "d"), None);
    }

    #[test]
    fn service_sections_and_libpq_only_parameters() {
        let text = "[other]\nhost=x\n[perf]\nhost = /run/pg\ndbname=lab\n";
        let s = service_section(text, "perf").unwrap();
        assert_eq!(s.get("host").map(String::as_str), Some("/run/pg"));
        assert_eq!(s.get("dbname").map(String::as_str), Some("lab"));
        assert!(service_section(text, "nope").is_none());
        let (rest, extra) =
            split_libpq_only("postgres:///db?service=perf&sslmode=disable&passfile=%2Ftmp%2Fp");
        assert_eq!(rest, "postgres:///db");
        assert_eq!(extra.get("sslmode").map(String::as_str), Some("disable"));
        assert_eq!(extra.get("passfile").map(String::as_str), Some("/tmp/p"));
        assert_eq!(extra.get("service").map(String::as_str), Some("perf"));
    }
}
