//! Where a store is: a SQLite file path, or a PostgreSQL URL (`postgres://…`,
//! `postgresql://…`). A URL is never taken for a path, and an unknown scheme is an error.
//!
//! Passwords never leave this module in clear: a [`Location`] displays its URL with the
//! password replaced by `***` (in the authority and in a `password=` query parameter), and
//! [`redact_secrets`] does the same to any text that quotes a URL (the command line stored with
//! each run, error messages).

use std::fmt;
use std::path::{Path, PathBuf};

/// A store's address, as given to `--db`/`SCALELAB_DB` or `push --to`.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite database file.
    File(PathBuf),
    /// A PostgreSQL server, as a libpq-style URL (kept in full, shown redacted).
    Postgres(PgUrl),
}

/// A PostgreSQL URL; its `Display` and `Debug` hide the password.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl(String);

impl PgUrl {
    /// The URL in full, password included: for the connection only, never for a message.
    pub(crate) fn secret_text(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({self})")
    }
}

/// `--db` names something that is neither a path nor a PostgreSQL URL.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown URL scheme `{scheme}://`; a store is a SQLite file path (e.g. ./scalelab.db) or a PostgreSQL URL (postgres://user@host/db)"
)]
pub struct UnknownScheme {
    /// The scheme as written.
    pub scheme: String,
}

impl Location {
    /// Reads `--db`/`SCALELAB_DB`: `postgres://` and `postgresql://` URLs name a server, any
    /// other `scheme://` is refused, everything else is a file path.
    pub fn parse(text: &Path) -> Result<Location, UnknownScheme> {
        match text.to_str().and_then(url_scheme) {
            None => Ok(Location::File(text.to_path_buf())),
            Some(scheme)
                if scheme.eq_ignore_ascii_case("postgres")
                    || scheme.eq_ignore_ascii_case("postgresql") =>
            {
                Ok(Location::Postgres(PgUrl(
                    text.to_str().unwrap_or_default().to_owned(),
                )))
            }
            Some(scheme) => Err(UnknownScheme {
                scheme: scheme.to_owned(),
            }),
        }
    }

    /// The file, for a SQLite store.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// Whether this is a PostgreSQL server.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "File({})", p.display()),
            Location::Postgres(url) => write!(f, "Postgres({url})"),
        }
    }
}

/// The URL scheme of `text` when it is written as a URL (`scheme://…`, RFC 3986's scheme
/// syntax), else `None`.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// One URL with its password (authority or `password=` parameter) replaced by `***`.
fn redact_url(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = url[..start].to_owned();
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_end..];
    match tail.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let parts: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_owned(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
        None => out.push_str(tail),
    }
    out
}

/// `text` with the password of every `postgres://`/`postgresql://` URL in it replaced by `***`:
/// for command lines and messages that may quote `--db`.
pub fn redact_secrets(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(found) = ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|s| lower[pos..].find(s))
        .min()
    {
        let start = pos + found;
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"'))
            .map_or(text.len(), |e| start + e);
        out.push_str(&text[pos..start]);
        out.push_str(&redact_url(&text[start..end]));
        pos = end;
    }
    out.push_str(&text[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_servers_paths_stay_paths_and_other_schemes_are_refused() {
        for url in ["postgres://u@h/db", "postgresql:///perf", "POSTGRES://h"] {
            assert!(
                Location::parse(Path::new(url)).unwrap().is_postgres(),
                "{url}"
            );
        }
        for path in [
            "./a:b.db",
            "/tmp/x//y.db",
            "c:/db",
            "://x",
            "results/10:00.db",
        ] {
            assert_eq!(
                Location::parse(Path::new(path)).unwrap(),
                Location::File(PathBuf::from(path))
            );
        }
        let err = Location::parse(Path::new("mysql://h/db")).unwrap_err();
        assert!(err.to_string().contains("`mysql://`"), "{err}");
    }

    #[test]
    fn passwords_never_display() {
        let cases = [
            (
                "postgres://u:s3cret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "postgres://u:p%40ss@h/db?password=x&sslmode=disable",
                "postgres://u:***@h/db?password=***&sslmode=disable",
            ),
            (
                "postgresql:///db?host=/run/pg&PASSWORD=x",
                "postgresql:///db?host=/run/pg&PASSWORD=***",
            ),
            ("postgres://a:b:c@d@h/db", "postgres://a:***@h/db"),
        ];
        for (url, shown) in cases {
            let loc = Location::parse(Path::new(url)).unwrap();
            assert_eq!(loc.to_string(), shown);
            assert_eq!(format!("{loc:?}"), format!("Postgres({shown})"));
        }
        assert_eq!(
            redact_secrets("scalelab run --db postgres://u:pw@h/db spin --db=POSTGRESQL://x:y@z"),
            "scalelab run --db postgres://u:***@h/db spin --db=POSTGRESQL://x:***@z"
        );
        assert_eq!(redact_secrets("no url here"), "no url here");
    }
}
