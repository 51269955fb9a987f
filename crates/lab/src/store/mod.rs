//! The results database: every run, trial and sample scalelab measures, kept without loss.
//!
//! One SQLite file (WAL mode, foreign keys on, a 30 s busy timeout so that two scalelab processes
//! writing the same database both succeed). Raw records are stored — runs, trials, samples — and
//! every aggregate is recomputed from them; `load_run` rebuilds the exact [`RunData`] that was
//! written.
//!
//! Durability is per trial: [`Store::add_trial`] commits each trial in its own transaction as it
//! ends, so a crash loses at most the trial in flight. A run is written as `running` together
//! with its owner (pid, the pid's start time, boot id); a reader derives
//! [`RunStatus::Incomplete`] for a `running` run whose owner is gone (`liveness`).
//!
//! The store never destroys what it did not write: a file that is not a scalelab database, or
//! one written by a newer scalelab, is refused and left byte-for-byte untouched (`schema`).
//!
//! Concerns, one file each: `location` (where the file is, and may it be opened), `schema`
//! (opening, DDL, migrations on `PRAGMA user_version`),
//! `runs` (writing), `query` (reading), `columns` (model values ↔ SQL columns),
//! `liveness` (is the owner alive), `export` (JSON/CSV export, reading exports),
//! `validation` (refusing runs no measurement could produce, before import).

mod columns;
mod export;
mod liveness;
mod location;
mod query;
mod runs;
mod schema;
mod validation;

use std::path::{Path, PathBuf};

use rusqlite::Connection;

pub use export::{export_csv, export_json, read_export};
pub use query::RunFilter;
pub use schema::SCHEMA_VERSION;

use validation::validate;

#[cfg(doc)]
use crate::record::{RunData, RunStatus};

/// An open results database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// This process as a run owner, read once at open.
    me: liveness::Owner,
}

impl Store {
    /// Opens (creating it and its parent directories when missing) the database at `path`,
    /// migrating an older schema forward: for the commands that store runs.
    ///
    /// Refused, with the file left untouched: a file that is not a SQLite database, a SQLite
    /// database of another application, a database written by a newer scalelab, a path through
    /// a link another user made, a database file that is a link. A location that cannot be
    /// created or written is an error too. A new file is 0600, new folders 0700.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, true)
    }

    /// Opens the existing database at `path`, as [`Store::open`] does, for the commands that
    /// only read: a missing or empty file is refused and nothing is created.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, false)
    }

    fn open_with(path: &Path, create: bool) -> Result<Store, StoreError> {
        let conn = schema::open(path, create)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            me: liveness::Owner::current(),
        })
    }

    /// The path the store was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Maps a SQLite error on this store to a [`StoreError`] naming the database.
    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| StoreError::sqlite(&self.path, e)
    }
}

/// Everything that can go wrong with the results database, each message naming the file or run
/// and, where one exists, the fix.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create directory {} for the database: {source} — pass --db PATH to a writable location", dir.display())]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot open database {}: {source} — check that its directory exists and is writable, or pass --db PATH", path.display())]
    Open {
        path: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("no database at {} — runs are stored by `scalelab run …` (or `scalelab import FILE.json`), which creates it; or pass --db PATH to an existing one", path.display())]
    Missing { path: PathBuf },

    #[error("{} is empty, not a scalelab database yet — `scalelab run …` (or `scalelab import FILE.json`) creates it; or pass --db PATH to an existing one", path.display())]
    Empty { path: PathBuf },

    #[error(transparent)]
    Path(#[from] crate::owned_dir::PathError),

    #[error("database {} is read-only — make it (and its directory) writable, or pass --db PATH", path.display())]
    ReadOnly { path: PathBuf },

    #[error("{} is not a scalelab database ({detail}); the file was left untouched — move it away or pass --db PATH", path.display())]
    NotADatabase { path: PathBuf, detail: String },

    #[error("database {} was written by a newer scalelab (schema {found}; this build knows up to {supported}); the file was left untouched — upgrade scalelab or pass --db PATH", path.display())]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("cannot migrate database {} to schema {to}: {source}; nothing was changed — report this as a scalelab bug", path.display())]
    Migration {
        path: PathBuf,
        to: usize,
        source: rusqlite::Error,
    },

    #[error("database {} stayed locked by another process for over 30 s ({source}) — retry once it finishes", path.display())]
    Busy {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error("database {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error("run {id} in {}: stored {what} is unreadable ({detail}) — the database was damaged or written by an incompatible scalelab", path.display())]
    Corrupt {
        path: PathBuf,
        id: i64,
        what: &'static str,
        detail: String,
    },

    #[error("cannot encode {what} for the database: {source}")]
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },

    #[error("run {id} not found (see `scalelab ls`)")]
    RunNotFound { id: i64 },

    #[error("no runs stored yet in {}", path.display())]
    NoRuns { path: PathBuf },

    #[error("`{spec}`: only {stored} runs stored (see `scalelab ls`)")]
    NotEnoughRuns { spec: String, stored: usize },

    #[error(
        "`{spec}` is not a run: use an id (`42`), `last`, `last~K` (K runs before the last) or the path of an exported .json file"
    )]
    BadRunSpec { spec: String },

    #[error("writing the export: {source}")]
    Write { source: std::io::Error },

    #[error("cannot read {}: {source}", path.display())]
    ReadExport {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{} is not a scalelab export: {detail}", path.display())]
    BadExport { path: PathBuf, detail: String },

    #[error(
        "{origin}: {detail} — no run scalelab measures holds that: the file was edited or damaged"
    )]
    ImpossibleRun { origin: String, detail: String },

    #[error("{} uses export format {found}, newer than this scalelab reads (up to {supported}) — upgrade scalelab to import it", path.display())]
    NewerExport {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
}

impl StoreError {
    /// Classifies a SQLite error on the database at `path`: lock time-outs and read-only files get
    /// their own messages, since each has its own fix.
    fn sqlite(path: &Path, e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
                path: path.to_path_buf(),
                source: e,
            },
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
                path: path.to_path_buf(),
            },
            // E.g. the `-wal`/`-shm` files cannot be created beside the database.
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => StoreError::Open {
                path: path.to_path_buf(),
                source: Box::new(e),
            },
            _ => StoreError::Sqlite {
                path: path.to_path_buf(),
                source: e,
            },
        }
    }
}
