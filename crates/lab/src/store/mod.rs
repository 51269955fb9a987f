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
//! `liveness` (is the owner alive), `export` (JSON/CSV export, reading exports), `bisect`
//! (bisections: their range, steps and verdicts),
//! `validation` (refusing runs no measurement could produce, before import).

mod bisect;
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

pub use bisect::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};
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
    /// The database's directory could not be created.
    #[error("cannot create directory {} for the database: {source} — pass --db PATH to a writable location", dir.display())]
    CreateDir {
        /// The directory that could not be created.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },

    /// The database file (or its `-wal`/`-shm` companions) could not be opened.
    #[error("cannot open database {}: {source} — check that its directory exists and is writable, or pass --db PATH", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's or the operating system's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A reading command found no database.
    #[error("no database at {} — runs are stored by `scalelab run …` (or `scalelab import FILE.json`), which creates it; or pass --db PATH to an existing one", path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },

    /// A reading command found an empty file where the database should be.
    #[error("{} is empty, not a scalelab database yet — `scalelab run …` (or `scalelab import FILE.json`) creates it; or pass --db PATH to an existing one", path.display())]
    Empty {
        /// The file, as given.
        path: PathBuf,
    },

    /// The database's path is unsafe (a link another user made, a link as the file).
    #[error(transparent)]
    Path(#[from] crate::owned_dir::PathError),

    /// The database (or its directory) cannot be written.
    #[error("database {} is read-only — make it (and its directory) writable, or pass --db PATH", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },

    /// The file is not a scalelab database; it is left untouched.
    #[error("{} is not a scalelab database ({detail}); the file was left untouched — move it away or pass --db PATH", path.display())]
    NotADatabase {
        /// The file, as given.
        path: PathBuf,
        /// What it is instead, as SQLite or the schema check saw it.
        detail: String,
    },

    /// A newer scalelab wrote the database; it is left untouched.
    #[error("database {} was written by a newer scalelab (schema {found}; this build knows up to {supported}); the file was left untouched — upgrade scalelab or pass --db PATH", path.display())]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest schema this build knows ([`SCHEMA_VERSION`]).
        supported: i64,
    },

    /// Migrating an older schema failed; the migration was rolled back.
    #[error("cannot migrate database {} to schema {to}: {source}; nothing was changed — report this as a scalelab bug", path.display())]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The schema version it was migrating to.
        to: usize,
        /// SQLite's error.
        source: rusqlite::Error,
    },

    /// Another process held the database locked for too long.
    #[error("database {} stayed locked by another process for over 30 s ({source}) — retry once it finishes", path.display())]
    Busy {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },

    /// Any other SQLite failure.
    #[error("database {}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },

    /// A stored value of a run cannot be read back.
    #[error("run {id} in {}: stored {what} is unreadable ({detail}) — the database was damaged or written by an incompatible scalelab", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The run's id.
        id: i64,
        /// Which value (`params`, `env`, a trial's measurement …).
        what: &'static str,
        /// Why it does not decode.
        detail: String,
    },

    /// A value could not be encoded as JSON for storage.
    #[error("cannot encode {what} for the database: {source}")]
    Encode {
        /// Which value (`params`, `env`, `trial counters` …).
        what: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },

    /// No run has this id.
    #[error("run {id} not found (see `scalelab ls`)")]
    RunNotFound {
        /// The id asked for.
        id: i64,
    },

    /// No bisection has this id.
    #[error("bisection {id} not found (`scalelab bisect --list` lists them)")]
    BisectNotFound {
        /// The id asked for.
        id: i64,
    },

    /// Another live scalelab drives the bisection.
    #[error(
        "bisection {id} is being run by another scalelab process — wait for it to end, or stop it (Ctrl-C) and resume"
    )]
    BisectBusy {
        /// The bisection's id.
        id: i64,
    },

    /// A stored value of a bisection cannot be read back.
    #[error("bisection {id} in {}: stored {what} is unreadable ({detail}) — the database was damaged or written by an incompatible scalelab", path.display())]
    CorruptBisect {
        /// The database file.
        path: PathBuf,
        /// The bisection's id.
        id: i64,
        /// Which value.
        what: &'static str,
        /// Why it does not decode.
        detail: String,
    },

    /// `last` asked of a database without runs.
    #[error("no runs stored yet in {}", path.display())]
    NoRuns {
        /// The database file.
        path: PathBuf,
    },

    /// `last~K` reaches before the first stored run.
    #[error(
        "`{spec}`: only {} stored (see `scalelab ls`)",
        crate::number_text::plural(*.stored, "run")
    )]
    NotEnoughRuns {
        /// The run as given.
        spec: String,
        /// Runs stored.
        stored: usize,
    },

    /// A run argument that is neither an id, `last`, `last~K` nor an export file.
    #[error(
        "`{spec}` is not a run: use an id (`42`), `last`, `last~K` (K runs before the last) or the path of an exported .json file"
    )]
    BadRunSpec {
        /// The run as given.
        spec: String,
    },

    /// Writing an export failed.
    #[error("writing the export: {source}")]
    Write {
        /// The operating system's error.
        source: std::io::Error,
    },

    /// An export file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadExport {
        /// The file, as given.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },

    /// A file that is not a scalelab export.
    #[error("{} is not a scalelab export: {detail}", path.display())]
    BadExport {
        /// The file, as given.
        path: PathBuf,
        /// What does not parse.
        detail: String,
    },

    /// A run no measurement could produce (an edited or damaged file); nothing is stored.
    #[error(
        "{origin}: {detail} — no run scalelab measures holds that: the file was edited or damaged"
    )]
    ImpossibleRun {
        /// The file it came from, or `import`.
        origin: String,
        /// What is impossible about it.
        detail: String,
    },

    /// A newer scalelab wrote the export.
    #[error("{} uses export format {found}, newer than this scalelab reads (up to {supported}) — upgrade scalelab to import it", path.display())]
    NewerExport {
        /// The file, as given.
        path: PathBuf,
        /// Its export format version.
        found: u64,
        /// The newest this build reads
        /// ([`EXPORT_SCHEMA_VERSION`](crate::record::EXPORT_SCHEMA_VERSION)).
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
