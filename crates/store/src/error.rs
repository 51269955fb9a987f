//! Everything that can go wrong with a store, each message naming the database (a URL's
//! password never) and, where one exists, the fix.

use std::path::{Path, PathBuf};

use crate::address::Location;

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
    Path(#[from] sys::owned_dir::PathError),
    /// A run's profile file that cannot be fetched from the store or placed here; the message
    /// names the file and the fix.
    #[error("{0}")]
    Files(String),
    /// Writing a profile file fetched from the store failed.
    #[error("{context}: {source}")]
    FileIo {
        /// What was being written.
        context: String,
        /// The error.
        source: std::io::Error,
    },

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
        /// The newest schema this build knows (`SCHEMA_VERSION` in `schema`).
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
    #[error(
        "run {id} in {db}: stored {what} is unreadable ({detail}) — the database was damaged or written by an incompatible scalelab"
    )]
    Corrupt {
        /// The database, as shown (a password never is).
        db: String,
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
    #[error(
        "bisection {id} in {db}: stored {what} is unreadable ({detail}) — the database was damaged or written by an incompatible scalelab"
    )]
    CorruptBisect {
        /// The database, as shown.
        db: String,
        /// The bisection's id.
        id: i64,
        /// Which value.
        what: &'static str,
        /// Why it does not decode.
        detail: String,
    },

    /// The job queue asked of a SQLite file.
    #[error(
        "{db} is a SQLite file; the job queue lives in a team's PostgreSQL store — pass --db postgres://USER@HOST/DB (or set SCALELAB_DB), the store the lab's agents use"
    )]
    QueueNeedsPostgres {
        /// The database, as shown.
        db: String,
    },

    /// Another agent of this host is alive.
    #[error(
        "an agent for host {host} is already running (pid {pid} there, last heartbeat {} s ago) — one agent per host measures; stop that one first",
        seen_ms_ago / 1000
    )]
    AgentRunning {
        /// The host.
        host: String,
        /// Its process id.
        pid: i64,
        /// How long ago it last renewed its heartbeat.
        seen_ms_ago: i64,
    },

    /// A statement waited longer than the session's `lock_timeout` for a lock another session
    /// holds.
    #[error(
        "database {db}: waited {waited} for a lock another session holds ({holders}) — end that session, or give scalelab longer with `options=-c lock_timeout=60s` in the URL"
    )]
    LockTimeout {
        /// The database, as shown.
        db: String,
        /// The session's `lock_timeout`, as the server shows it.
        waited: String,
        /// The sessions holding locks it may have waited for: pid, role, application, what.
        holders: String,
    },

    /// A statement was cancelled because the process was asked to stop (SIGTERM, Ctrl-C)
    /// while it waited.
    #[error("database {db}: stopped while waiting for the server ({detail})")]
    Cancelled {
        /// The database, as shown.
        db: String,
        /// The server's message.
        detail: String,
    },

    /// The same job, schedule and class is already scheduled.
    #[error(
        "schedule {id} already queues this job at these times for this class — `scalelab queue unschedule {id}` first to replace it"
    )]
    DuplicateSchedule {
        /// The active schedule.
        id: i64,
    },

    /// A row of the queue that scalelab would never write.
    #[error("a malformed {what}: {detail}")]
    Malformed {
        /// `job 12`, `schedule 3`.
        what: String,
        /// What is wrong with it.
        detail: String,
    },

    /// `last` asked of a database without runs.
    #[error("no runs stored yet in {db}")]
    NoRuns {
        /// The database, as shown.
        db: String,
    },

    /// A column holds what scalelab never writes there.
    #[error(
        "column {index} of a stored row: {detail} — the database was damaged or written by an incompatible scalelab"
    )]
    Column {
        /// The column's position in the query.
        index: usize,
        /// What it holds instead.
        detail: String,
    },

    /// The PostgreSQL URL (or the service it names) cannot be used.
    #[error("{db}: {detail}")]
    PgConfig {
        /// The URL, password redacted.
        db: String,
        /// What is wrong.
        detail: String,
    },

    /// The PostgreSQL server could not be reached or refused us; nothing was measured.
    #[error(
        "cannot connect to {db}: {detail} — check that the server runs and the URL's host, port, user and database; a password comes from the URL, PGPASSWORD or ~/.pgpass; TLS follows sslmode (prefer by default; verify-full checks the server's certificate against sslrootcert, ~/.postgresql/root.crt or the system's roots, and its name); or measure into a local file with --db PATH and `scalelab push` it later"
    )]
    Connect {
        /// The URL, password redacted.
        db: String,
        /// Each host tried and why it failed (`HOST:PORT: …; …`), in order.
        detail: String,
    },

    /// Any other PostgreSQL failure.
    #[error("database {db}: {}", pg_detail(source))]
    Postgres {
        /// The URL, password redacted.
        db: String,
        /// The client's error.
        source: postgres::Error,
    },

    /// The PostgreSQL database holds another application's tables; nothing was changed.
    #[error(
        "{db} is not a scalelab database ({detail}); nothing was changed — use a database of its own for scalelab (createdb scalelab)"
    )]
    Foreign {
        /// The URL, password redacted.
        db: String,
        /// What was found.
        detail: String,
    },

    /// A reading command found no scalelab tables in the PostgreSQL database.
    #[error(
        "{db} has no scalelab tables yet — `scalelab run …` or `scalelab push --to` creates them"
    )]
    NoPgSchema {
        /// The URL, password redacted.
        db: String,
    },

    /// A newer scalelab wrote the PostgreSQL database; nothing was changed.
    #[error(
        "database {db} was written by a newer scalelab (schema {found}; this build knows up to {supported}); nothing was changed — upgrade scalelab"
    )]
    NewerPgSchema {
        /// The URL, password redacted.
        db: String,
        /// Its schema version.
        found: i64,
        /// The newest schema this build knows (`SCHEMA_VERSION` in `schema`).
        supported: i64,
    },

    /// Migrating a PostgreSQL schema failed; the migration was rolled back.
    #[error(
        "cannot migrate database {db} to schema {to}: {}; nothing was changed — report this as a scalelab bug",
        pg_detail(source)
    )]
    PgMigration {
        /// The URL, password redacted.
        db: String,
        /// The schema version it was migrating to.
        to: usize,
        /// The client's error.
        source: postgres::Error,
    },

    /// `last~K` reaches before the first stored run.
    #[error(
        "`{spec}`: only {} stored (see `scalelab ls`)",
        model::number_text::plural(*.stored, "run")
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

    /// An export file could not be read: missing, unreadable, a device, or past the limit.
    #[error(transparent)]
    ReadExport {
        /// Why, naming the file.
        source: sys::SysError,
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
        /// ([`EXPORT_SCHEMA_VERSION`](model::record::EXPORT_SCHEMA_VERSION)).
        supported: u32,
    },
}

/// A PostgreSQL error with the server's own message and detail, when it sent them.
/// The error and every error behind it (a TLS handshake's says which check failed).
/// A failed connection attempt in words, with its causes (a TLS check, a refused connection).
pub(crate) fn connect_detail(e: &postgres::Error) -> String {
    with_causes(e)
}

fn with_causes(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

fn pg_detail(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_owned(),
        },
        None if e.is_closed() => {
            "the connection to the server was lost (the server stopped or the network failed)"
                .into()
        }
        None => e.to_string(),
    }
}

impl StoreError {
    /// Classifies a SQLite error on the store at `at`.
    pub(crate) fn sqlite_at(at: &Location, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(at.path().unwrap_or(Path::new("?")), e)
    }

    /// Classifies a SQLite error on the database at `path`: lock time-outs and read-only files get
    /// their own messages, since each has its own fix.
    pub(crate) fn sqlite(path: &Path, e: rusqlite::Error) -> StoreError {
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
