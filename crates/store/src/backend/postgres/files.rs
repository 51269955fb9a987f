//! libpq's two files: the connection service file (`?service=NAME` or `PGSERVICE`: the
//! `[NAME]` section of `PGSERVICEFILE` or `~/.pg_service.conf`, else of
//! `PGSYSCONFDIR/pg_service.conf`, Debian's `/etc/postgresql-common/pg_service.conf`), and the
//! password file (`passfile`, `PGPASSFILE` or `~/.pgpass`; ignored, as libpq does, when others
//! may read it). Both are read as libpq reads them, so that a URL naming a service reaches the
//! server `psql` reaches with it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::uri::{self, Options};

/// The keywords of service `name`, from the first service file that defines it.
pub(crate) fn service(name: &str) -> Result<Options, ConfigError> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let user_file =
        env("PGSERVICEFILE").or_else(|| env("HOME").map(|h| h.join(".pg_service.conf")));
    let system_file = env("PGSYSCONFDIR").map_or_else(
        || PathBuf::from("/etc/postgresql-common/pg_service.conf"),
        |d| d.join("pg_service.conf"),
    );
    for file in user_file.iter().chain([&system_file]) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        if let Some(section) = service_section(&text, name) {
            let mut options = Options::new();
            for (key, value) in section {
                match uri::keyword(&key) {
                    Some("service") => {
                        return Err(ConfigError::Url(format!(
                            "{}: service `{name}` names another service; nested services are not supported (libpq refuses them too)",
                            file.display()
                        )));
                    }
                    Some(k) => {
                        options.insert(k, value);
                    }
                    None => {
                        return Err(ConfigError::Url(format!(
                            "{}: service `{name}`: `{key}` is not a PostgreSQL connection parameter",
                            file.display()
                        )));
                    }
                }
            }
            return Ok(options);
        }
    }
    Err(ConfigError::Service(name.to_owned()))
}

/// The `key=value` lines of section `[name]`, in order (keys and values trimmed).
fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut inside = false;
    let mut found = None::<Vec<(String, String)>>;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if found.is_some() {
                break;
            }
            inside = section == name;
            if inside {
                found = Some(Vec::new());
            }
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                found
                    .get_or_insert_with(Vec::new)
                    .push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
    }
    found
}

/// libpq's default socket folder (Debian's `DEFAULT_PGSOCKET_DIR`); a URL without a host
/// connects there.
pub(crate) const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// The password for `host` (a name, an address or a socket folder), `port`, `db` and `user`
/// from the password file `file` (`None`: `~/.pgpass`), if any.
pub(crate) fn password(
    file: Option<&Path>,
    host: &str,
    port: &str,
    db: &str,
    user: &str,
) -> Option<String> {
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => Path::new(&std::env::var_os("HOME")?).join(".pgpass"),
    };
    let meta = std::fs::metadata(&path).ok()?;
    // libpq ignores a password file that others may read.
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    // The default socket folder is `localhost` there, as in libpq.
    let host = if host.is_empty() || host == DEFAULT_SOCKET_DIR {
        "localhost"
    } else {
        host
    };
    lookup(&text, host, port, db, user)
}

/// The first `host:port:database:user:password` line matching (`*` matches anything; `\:` and
/// `\\` are escapes).
fn lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let fields = split_escaped(line);
        let [h, p, d, u, pw] = fields.as_slice() else {
            continue;
        };
        let ok = |field: &str, value: &str| field == "*" || field == value;
        if ok(h, host) && ok(p, port) && ok(d, db) && ok(u, user) {
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

/// The name of the user this process runs as (its effective uid, as libpq looks it up), from
/// `/etc/passwd`, else `USER`/`LOGNAME`.
pub(crate) fn os_user() -> Option<String> {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let from_passwd = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut f = line.split(':');
                let name = f.next()?;
                (f.nth(1)? == uid).then(|| name.to_owned())
            })
        });
    from_passwd.or_else(|| {
        ["USER", "LOGNAME"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    })
}

/// `BTreeMap` of a section, for tests.
#[cfg(test)]
fn section_map(text: &str, name: &str) -> Option<std::collections::BTreeMap<String, String>> {
    service_section(text, name).map(|v| v.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_matches_like_libpq() {
        let text =
            "# comment\nother:5432:*:*:no\n/run/pg:5432:perf:team:s\\:cret\n*:*:*:*:fallback\n";
        assert_eq!(
            lookup(text, "/run/pg", "5432", "perf", "team").as_deref(),
            Some("s:cret")
        );
        assert_eq!(
            lookup(text, "db", "5433", "x", "y").as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup("a:b:c", "a", "b", "c", "d"), None);
    }

    #[test]
    fn service_sections() {
        let text = "[other]\nhost=x\n[perf]\nhost = /run/pg\ndbname=lab\n[later]\nport=1\n";
        let s = section_map(text, "perf").unwrap();
        assert_eq!(s.get("host").map(String::as_str), Some("/run/pg"));
        assert_eq!(s.get("dbname").map(String::as_str), Some("lab"));
        assert!(!s.contains_key("port"));
        assert!(section_map(text, "nope").is_none());
    }

    #[test]
    fn the_user_is_the_effective_uids() {
        let me = os_user().unwrap();
        assert!(!me.is_empty());
        if rustix::process::geteuid().is_root() {
            assert_eq!(me, "root");
        }
    }
}
