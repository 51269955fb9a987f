//! Where the results database lives: `--db`, else `SCALELAB_DB` (both handled by clap), else
//! `$XDG_DATA_HOME/scalelab/scalelab.db`, else `~/.local/share/scalelab/scalelab.db`. Only the
//! commands that store runs create it; the others refuse a missing one. A URL (`scheme://…`) is
//! never taken for a path: `--db postgres://…` used to create a SQLite file inside a folder named
//! `postgres:`; now it is an error naming what this build stores to.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lab::store::Store;

pub fn resolve(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        refuse_url(p)?;
        return Ok(p.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("scalelab/scalelab.db"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/share/scalelab/scalelab.db")),
        None => bail!(
            "cannot place the database: neither HOME nor XDG_DATA_HOME is set; pass --db PATH or set SCALELAB_DB"
        ),
    }
}

/// Opens the database for a command that stores runs (`run`, `ab`, `import`), creating it.
pub fn open(explicit: Option<&Path>) -> Result<Store> {
    let path = resolve(explicit)?;
    Store::open(&path).with_context(|| format!("opening the results database {}", path.display()))
}

/// Opens the database for a command that only reads: a missing one is an error, not created.
pub fn open_existing(explicit: Option<&Path>) -> Result<Store> {
    let path = resolve(explicit)?;
    Store::open_existing(&path)
        .with_context(|| format!("opening the results database {}", path.display()))
}

/// The URL scheme of `--db`/`SCALELAB_DB` when it is written as a URL (`scheme://…`, RFC 3986's
/// scheme syntax), else `None`.
fn url_scheme(db: &Path) -> Option<&str> {
    let text = db.to_str()?;
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

fn refuse_url(db: &Path) -> Result<()> {
    match url_scheme(db) {
        None => Ok(()),
        Some(scheme)
            if scheme.eq_ignore_ascii_case("postgres")
                || scheme.eq_ignore_ascii_case("postgresql") =>
        {
            bail!(
                "--db/SCALELAB_DB is a PostgreSQL URL, but this build of scalelab stores runs in SQLite only; \
             pass a file path (e.g. --db ./scalelab.db), or measure into SQLite and move runs with export/import"
            )
        }
        Some(scheme) => bail!(
            "--db/SCALELAB_DB: unknown URL scheme `{scheme}://`; the database is a SQLite file path \
             (e.g. --db ./scalelab.db)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_never_taken_for_a_path() {
        for url in [
            "postgres://scalelab@db/perf",
            "postgresql:///perf",
            "mysql://h/db",
            "HTTP://x",
        ] {
            assert!(
                resolve(Some(Path::new(url))).is_err(),
                "{url} accepted as a path"
            );
        }
        let err = resolve(Some(Path::new("postgres://u@h/db")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PostgreSQL") && err.contains("file path"),
            "{err}"
        );
        let err = resolve(Some(Path::new("ftp://h/db")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown URL scheme `ftp://`"), "{err}");
    }

    #[test]
    fn paths_that_merely_contain_a_colon_or_slashes_are_paths() {
        for path in [
            "./a:b.db",
            "/tmp/x//y.db",
            "c:/db",
            "results/2026-11-23T10:00.db",
            "://x",
        ] {
            assert_eq!(resolve(Some(Path::new(path))).unwrap(), PathBuf::from(path));
        }
    }
}
