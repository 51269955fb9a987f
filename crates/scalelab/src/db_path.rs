//! Where the results database lives: `--db`, else `SCALELAB_DB` (both handled by clap), else
//! `$XDG_DATA_HOME/scalelab/scalelab.db`, else `~/.local/share/scalelab/scalelab.db`. It is a
//! SQLite file path or a PostgreSQL URL (`postgres://…`, a team's shared store); a URL is never
//! taken for a path (`--db postgres://…` used to create a SQLite file inside a folder named
//! `postgres:`), and an unknown scheme is an error. Only the commands that store runs create
//! a database (or scalelab's tables on a server); the others refuse a missing one. A URL is
//! shown without its password in every message.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use store::{Location, Store};

/// The store `--db`/`SCALELAB_DB` names, or the default file.
pub fn resolve(explicit: Option<&Path>) -> Result<Location> {
    match explicit {
        Some(p) => Ok(Location::parse(p).context("--db/SCALELAB_DB")?),
        None => Ok(Location::File(default_file()?)),
    }
}

/// The default database file (also where a PostgreSQL store's runs keep their profiles).
pub fn default_file() -> Result<PathBuf> {
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

/// The local file that profiles are kept beside: the database itself, or for a PostgreSQL
/// store the default file's place.
pub fn local_file(location: &Location) -> Result<PathBuf> {
    match location.path() {
        Some(p) => Ok(p.to_path_buf()),
        None => default_file(),
    }
}

/// Opens the database for a command that stores runs (`run`, `ab`, `import`), creating it.
pub fn open(explicit: Option<&Path>) -> Result<Store> {
    open_location(&resolve(explicit)?, true)
}

/// Opens the database for a command that only reads: a missing one is an error, not created.
pub fn open_existing(explicit: Option<&Path>) -> Result<Store> {
    open_location(&resolve(explicit)?, false)
}

/// Opens the store at `location`, creating it when `create`.
pub fn open_location(location: &Location, create: bool) -> Result<Store> {
    Store::open_at(location, create)
        .with_context(|| format!("opening the results database {location}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_never_taken_for_a_path() {
        for url in ["postgres://scalelab@db/perf", "postgresql:///perf"] {
            assert!(
                resolve(Some(Path::new(url))).unwrap().is_postgres(),
                "{url}"
            );
        }
        for url in ["mysql://h/db", "HTTP://x"] {
            assert!(
                resolve(Some(Path::new(url))).is_err(),
                "{url} accepted as a path"
            );
        }
        let err = format!("{:#}", resolve(Some(Path::new("ftp://h/db"))).unwrap_err());
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
            assert_eq!(
                resolve(Some(Path::new(path))).unwrap(),
                Location::File(PathBuf::from(path))
            );
        }
    }
}
