//! Opening the database file safely, and its schema: DDL and forward-only migrations.
//!
//! The schema version is `PRAGMA user_version`; [`MIGRATIONS`] is a list of SQL steps, step `i`
//! taking version `i` to `i + 1`, applied under one write transaction (SQLite DDL is
//! transactional, so a migration happens entirely or not at all). `PRAGMA application_id` marks
//! the file as scalelab's, so a SQLite database of another program is never migrated into ours.
//!
//! Safety before convenience: nothing is opened or created through a link another user made,
//! a file is checked for the SQLite header *before* SQLite sees it ([`location`]),
//! and its application id and version are checked *before* anything is written (even the WAL
//! switch writes the header), so a text file, a foreign database or a database from a newer
//! scalelab is refused and left byte-for-byte untouched. A newer schema is never downgraded.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;
use crate::location;

/// The schema version this build writes (the length of `MIGRATIONS`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// `PRAGMA application_id` of a scalelab database: "SCLB".
pub(crate) const APPLICATION_ID: i32 = 0x5343_4c42;

/// How long a writer waits for another process's transaction before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Step `i` takes the schema from version `i` to `i + 1`. Append only; never edit a shipped step.
const MIGRATIONS: &[&str] = &[
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15,
];

/// Version 1. u64 values (durations, counts) are stored in INTEGER columns as their two's
/// complement bit pattern (see `columns`), so values past i64::MAX survive exactly.
const V1: &str = "
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    origin_id         INTEGER,           -- id in the store this run was imported from
    name              TEXT,
    workload          TEXT NOT NULL,
    params            TEXT NOT NULL,     -- JSON object; also in run_params
    op_unit           TEXT NOT NULL,
    mode              TEXT NOT NULL CHECK (mode IN ('threads', 'processes')),
    pin               TEXT NOT NULL CHECK (pin IN ('auto', 'core', 'none')),
    points            TEXT NOT NULL,     -- JSON array of task counts, in execution order
    runs              INTEGER NOT NULL,
    duration_ns       INTEGER NOT NULL,
    warmup_ns         INTEGER NOT NULL,
    variant           TEXT,
    tags              TEXT NOT NULL,     -- JSON object; also in run_tags
    started_at        TEXT NOT NULL,     -- RFC 3339 UTC
    finished_at       TEXT,
    status            TEXT NOT NULL
                      CHECK (status IN ('running', 'complete', 'interrupted', 'incomplete')),
    env               TEXT NOT NULL,     -- JSON Fingerprint
    warnings          TEXT NOT NULL,     -- JSON array of strings
    command_line      TEXT NOT NULL,
    owner_pid         INTEGER,           -- the process that writes the run (NULL: imported)
    owner_start_time  INTEGER,           -- field 22 of /proc/PID/stat, clock ticks since boot
    owner_boot_id     TEXT               -- /proc/sys/kernel/random/boot_id
);
CREATE INDEX runs_workload ON runs (workload, variant);

CREATE TABLE run_tags (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX run_tags_key_value ON run_tags (key, value);

CREATE TABLE run_params (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX run_params_key_value ON run_params (key, value);

-- One row per trial, in the order trials ended (id order).
CREATE TABLE trials (
    id                    INTEGER PRIMARY KEY,
    run_id                INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n                     INTEGER NOT NULL,
    idx                   INTEGER NOT NULL,   -- 0-based repetition within the point
    started_at            TEXT NOT NULL,
    status                TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    failure               TEXT,               -- reason, when failed
    -- The rest is NULL for a failed trial.
    window_ns             INTEGER,
    ops                   INTEGER,            -- sum of task_ops, for queries
    user_ns               INTEGER,
    sys_ns                INTEGER,
    minor_faults          INTEGER,
    major_faults          INTEGER,
    voluntary_switches    INTEGER,
    involuntary_switches  INTEGER,
    block_in              INTEGER,
    block_out             INTEGER,
    counters              TEXT,               -- JSON array of CounterValue
    extras                TEXT,               -- JSON object name -> count
    placement             TEXT,               -- JSON array of CPU or null per task
    task_ops              TEXT                -- JSON array of ops per task
);
CREATE INDEX trials_run ON trials (run_id, n);

CREATE TABLE samples (
    trial_id  INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,               -- 0-based order within the trial
    t_ns      INTEGER NOT NULL,               -- since the window start
    task_ops  TEXT NOT NULL,                  -- JSON array, cumulative per task
    PRIMARY KEY (trial_id, seq)
) WITHOUT ROWID;
";

/// Version 2: external-command trials keep each timed step's accounting.
pub(super) const V2: &str = "
ALTER TABLE trials ADD COLUMN steps TEXT;  -- JSON array of StepRecord; NULL before version 2
";

/// Version 3: profiles, lock reports and the window's CLOCK_MONOTONIC edges, per trial.
pub(super) const V3: &str = "
ALTER TABLE trials ADD COLUMN clock_window TEXT;  -- JSON ClockWindow; NULL when not recorded
ALTER TABLE trials ADD COLUMN profile TEXT;       -- JSON ProfileRef; NULL without --profile
ALTER TABLE trials ADD COLUMN locks TEXT;         -- JSON LockReport; NULL without --locks
";

/// Version 4: the tasks' run-queue delay over the window (NULL: not measured).
pub(super) const V4: &str = "
ALTER TABLE trials ADD COLUMN run_delay_ns INTEGER;
";

/// Version 5: a run's identity across stores (a version-4 UUID, written by scalelab for every
/// run it records and kept by export and import), also the name of its profiles' folder. Runs
/// stored before get a fresh random one. Not unique: importing a run twice keeps both copies,
/// each with the run's UUID.
pub(super) const V5: &str = "
ALTER TABLE runs ADD COLUMN uuid TEXT;
UPDATE runs SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4'
    || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1)
    || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
CREATE INDEX runs_uuid ON runs (uuid);
";

/// Version 6: blocked (off-CPU) time by cause, per trial (`--offcpu`).
pub(super) const V6: &str = "
ALTER TABLE trials ADD COLUMN offcpu TEXT;  -- JSON OffCpuReport; NULL without --offcpu
";

/// Version 7: what the harness cost per trial (sampler CPU, start and stop latency).
pub(super) const V7: &str = "
ALTER TABLE trials ADD COLUMN harness TEXT;  -- JSON HarnessCost; NULL for commands and older runs
";

/// Version 8: the `--pin` placement as its text (`cores`, `compact`, `spread-nodes`, `none`, a
/// CPU list). Version 1's `pin` column has a CHECK for its three old names, which SQLite cannot
/// drop without rebuilding `runs`; it keeps the nearest old name and this column wins when set.
pub(super) const V8: &str = "
ALTER TABLE runs ADD COLUMN pin_placement TEXT;  -- Pin text; NULL before version 8
";

/// Version 10: `--membind` (`first-touch`, `node`, `interleave`); NULL for runs from before it
/// was kept, which were first-touch.
pub(super) const V10: &str = "
ALTER TABLE runs ADD COLUMN membind TEXT;  -- Membind text; NULL before version 10
";

/// Version 12: a command trial's own figures (`--metric`) and which is X(N).
/// Version 13: the lab's job queue (`scalelab submit`, `queue`, `agent`; see `store::queue`).
/// The queue is a team store's (PostgreSQL): these tables exist in a SQLite file only so that
/// both backends keep one schema. Times are the server's clock in ms since the epoch, so that
/// every agent's lease is judged by one clock.
const V13: &str = "
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    args          TEXT NOT NULL,     -- JSON array: the scalelab arguments an agent runs (run …, ab …)
    target        TEXT NOT NULL,     -- the machine class filter (`any`, `host=NAME`, `cpus>=32,…`)
    carries_cmd   INTEGER NOT NULL,  -- 1 when the arguments carry a shell command
    state         TEXT NOT NULL
                  CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts      INTEGER NOT NULL,  -- times an agent took it
    max_attempts  INTEGER NOT NULL,
    agent         TEXT,              -- host of the agent that holds (or last held) it
    lease_until   INTEGER,           -- while running: the agent must renew it before then
    submitted_at  INTEGER NOT NULL,
    started_at    INTEGER,           -- the last attempt's start
    finished_at   INTEGER,
    submitter     TEXT NOT NULL,     -- JSON: database role, OS user, host
    outcome       TEXT,              -- done: ok | regressed; failed, cancelled: why
    log           TEXT NOT NULL,     -- one line per event: taken, waited, refused, lost, ended
    schedule_id   INTEGER,           -- the recurring job that queued it (`submit --every`)
    occurrence    INTEGER,           -- which of its occurrences (its due time)
    check_history INTEGER NOT NULL   -- 1: run `history --check` on its series after it
);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_queued ON jobs (id) WHERE state = 'queued';  -- what agents claim from
CREATE UNIQUE INDEX jobs_occurrence ON jobs (schedule_id, occurrence);
CREATE TABLE schedules (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    every         TEXT NOT NULL,     -- when it comes due (`mon 03:00`, UTC)
    args          TEXT NOT NULL,     -- as in jobs
    target        TEXT NOT NULL,
    carries_cmd   INTEGER NOT NULL,
    max_attempts  INTEGER NOT NULL,
    check_history INTEGER NOT NULL,
    submitter     TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    next_at       INTEGER NOT NULL,  -- its next occurrence; queued once the clock passes it
    active        INTEGER NOT NULL   -- 0 once stopped (`queue unschedule`)
);
CREATE TABLE agents (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- the second key of its lock
    host          TEXT NOT NULL UNIQUE,
    class         TEXT NOT NULL,     -- JSON AgentClass
    allow         TEXT NOT NULL,     -- which commands it runs: none, any, or its prefixes
    pid           INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    job_id        INTEGER            -- the job it runs now
);
";

/// Version 14's indexes, and the stopping of duplicate schedules that makes the last one
/// possible: the same SQL on both backends (a macro, as `concat!` takes literals only).
macro_rules! v14_indexes {
    () => {
        "
CREATE INDEX job_events_job ON job_events (job_id, id);
CREATE INDEX jobs_queued_target ON jobs (target, id) WHERE state = 'queued';
-- One active schedule per job, time and class: later duplicates are stopped, then kept unique.
UPDATE schedules SET active = 0, stopped_why = 'a duplicate of schedule ' || (
        SELECT min(d.id) FROM schedules d
        WHERE d.active = 1 AND d.every = schedules.every AND d.args = schedules.args
          AND d.target = schedules.target)
    WHERE active = 1 AND EXISTS (
        SELECT 1 FROM schedules d
        WHERE d.active = 1 AND d.every = schedules.every AND d.args = schedules.args
          AND d.target = schedules.target AND d.id < schedules.id);
CREATE UNIQUE INDEX schedules_once ON schedules (every, args, target) WHERE active = 1;
"
    };
}
pub(crate) use v14_indexes;

/// Version 14: the queue against a hostile writer (SECURITY.md "The job queue and its
/// agents"). A job's log becomes records (`job_events`, each stamped with the role that wrote
/// it); a job and a schedule carry their own timeout; a stopped schedule says why; an agent keeps
/// its `--max-job-time` and the key and session of the lock that says it is alive; a run keeps
/// the key and session of its lock (PostgreSQL only: see `liveness`). The old `log` column is
/// read once, into `job_events`, and no longer written.
const V14: &str = concat!(
    "
ALTER TABLE jobs ADD COLUMN timeout_ms INTEGER;        -- submit --timeout; NULL: from the plan
ALTER TABLE schedules ADD COLUMN timeout_ms INTEGER;
ALTER TABLE schedules ADD COLUMN stopped_why TEXT;     -- why an agent stopped it (malformed)
ALTER TABLE agents ADD COLUMN max_job_ms INTEGER;      -- agent --max-job-time
ALTER TABLE agents ADD COLUMN lock_key INTEGER;        -- its liveness lock's second key
ALTER TABLE agents ADD COLUMN lock_pid INTEGER;        -- the server process holding it
ALTER TABLE runs ADD COLUMN lock_key INTEGER;
ALTER TABLE runs ADD COLUMN lock_pid INTEGER;
CREATE TABLE job_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id  INTEGER NOT NULL,
    at      INTEGER NOT NULL,    -- the server's clock, ms since the epoch
    role    TEXT NOT NULL DEFAULT '',  -- who wrote it (PostgreSQL: current_user, by trigger)
    text    TEXT NOT NULL
);
",
    v14_indexes!()
);

/// Version 15: each trial's peak memory (`Usage::max_rss_kib`, the largest resident set one
/// process of the trial reached), kept beside the other getrusage figures.
const V15: &str = "
ALTER TABLE trials ADD COLUMN max_rss_kib INTEGER;  -- KiB; NULL where not measured or older
";

pub(super) const V12: &str = "
ALTER TABLE trials ADD COLUMN metrics TEXT;  -- JSON Reported; NULL without --metric
";

/// Version 11: the files of a run's profile folder (its perf.data files and kallsyms
/// snapshot), stored by `push --with-profiles` so that another host can read the profiles;
/// read back into the reader's own profile folder on first use (`profile_files`).
const V11: &str = "
CREATE TABLE run_files (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name    TEXT NOT NULL,       -- the file's name in the run's folder (n1-t1.perf.data, kallsyms)
    size    INTEGER NOT NULL,    -- bytes
    data    BLOB NOT NULL,
    PRIMARY KEY (run_id, name)
);
";

/// Version 9: bisections (`scalelab bisect`, see `store::bisect`): the settings and status of
/// each, the commits of its range and each step's verdict with the ids of the runs it measured.
/// Portable SQL (INTEGER, TEXT; ids assigned by scalelab).
const V9: &str = "
CREATE TABLE bisects (
    id                INTEGER PRIMARY KEY,   -- assigned by scalelab: one more than the largest
    spec              TEXT NOT NULL,         -- JSON: repository, ends, build, what is measured
    good              TEXT NOT NULL,         -- the good end's full hash
    bad               TEXT NOT NULL,         -- the bad end's full hash
    status            TEXT NOT NULL
                      CHECK (status IN ('running', 'found', 'not_regression', 'unresolved',
                                        'failed')),
    started_at        TEXT NOT NULL,         -- RFC 3339 UTC
    finished_at       TEXT,
    owner_pid         INTEGER,               -- the process driving it, as for runs
    owner_start_time  INTEGER,
    owner_boot_id     TEXT
);

CREATE TABLE bisect_commits (
    bisect_id  INTEGER NOT NULL REFERENCES bisects (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,             -- 0: the good end; the last: the bad end
    hash       TEXT NOT NULL,
    subject    TEXT NOT NULL,
    PRIMARY KEY (bisect_id, position)
);

CREATE TABLE bisect_steps (
    bisect_id    INTEGER NOT NULL REFERENCES bisects (id) ON DELETE CASCADE,
    step         INTEGER NOT NULL,           -- 0: the ends' confirmation; then 1, 2, ...
    position     INTEGER NOT NULL,           -- the commit tested (bisect_commits.position)
    verdict      TEXT NOT NULL
                 CHECK (verdict IN ('measuring', 'good', 'bad', 'skip', 'regressed',
                                    'not_regressed')),
    reason       TEXT,                       -- why skipped or refused
    run_good     INTEGER,                    -- runs.id of each side measured in this step
    run_commit   INTEGER,
    run_bad      INTEGER,
    build_log    TEXT,                       -- path of the build's log, kept
    build_ns     INTEGER,
    elapsed_ns   INTEGER,                    -- the whole step: build and measurements
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    PRIMARY KEY (bisect_id, step)
);
";

/// Opens `path` as a scalelab database, migrating it, and creating it when `create`; see the
/// module doc.
pub(crate) fn open(path: &Path, create: bool) -> Result<Connection, StoreError> {
    let real = location::locate(path, create)?;
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        // Refuses a path with a link anywhere in it: `locate` resolved the trusted ones, so a
        // link here was put in place since.
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(&real, flags).map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    let sql = |e| StoreError::sqlite(path, e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    // SQLite silently falls back to read-only for a file it may not write.
    if conn.is_readonly("main").map_err(sql)? {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
        });
    }

    // A consistent read before any write: refuse what is not ours to touch.
    let header = {
        let tx = conn.unchecked_transaction().map_err(sql)?;
        let header = Header::read(&tx).map_err(|e| not_a_db_or(path, e))?;
        tx.commit().map_err(sql)?;
        header
    };
    header.check(path)?;

    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sql)?;
    // WAL lets readers and one writer work at once; FULL syncs each commit (one per trial,
    // cheap) so a power loss cannot take a committed trial with it. A file system without WAL
    // support keeps its rollback journal: slower under concurrency, still correct.
    enable_wal(&conn, path)?;
    conn.pragma_update(None, "synchronous", "full")
        .map_err(sql)?;

    migrate(&conn, path, MIGRATIONS)?;
    Ok(conn)
}

/// Switches the database to WAL mode (persistent in the file). Two processes creating the same
/// database can race here, and SQLite then answers `SQLITE_BUSY` at once instead of calling the
/// busy handler, so the switch is retried up to the usual busy timeout.
fn enable_wal(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        let mode = conn
            .pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(mode)
                } else {
                    conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
                }
            });
        match mode {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(StoreError::sqlite(path, e)),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// SQLite's "not a database" and "malformed" both mean the file is not one we can use.
fn not_a_db_or(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: format!("SQLite says: {e}"),
        },
        _ => StoreError::sqlite(path, e),
    }
}

/// What identifies the file: whose it is, which version, whether it holds anything.
#[derive(Debug, Clone, Copy)]
struct Header {
    application_id: i32,
    user_version: i64,
    objects: i64,
}

impl Header {
    fn read(conn: &Connection) -> rusqlite::Result<Header> {
        Ok(Header {
            application_id: conn.pragma_query_value(None, "application_id", |r| r.get(0))?,
            user_version: conn.pragma_query_value(None, "user_version", |r| r.get(0))?,
            objects: conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?,
        })
    }

    fn check(self, path: &Path) -> Result<(), StoreError> {
        let refuse = |detail: String| StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail,
        };
        if self.application_id != APPLICATION_ID && self.application_id != 0 {
            return Err(refuse(format!(
                "a SQLite database of another application, application_id {:#x}",
                self.application_id
            )));
        }
        if self.application_id == 0 && (self.objects > 0 || self.user_version != 0) {
            return Err(refuse("a SQLite database of another application".into()));
        }
        if self.user_version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: self.user_version,
                supported: SCHEMA_VERSION,
            });
        }
        if self.user_version < 0 {
            return Err(refuse(format!(
                "impossible schema version {}",
                self.user_version
            )));
        }
        Ok(())
    }
}

/// Applies the missing migration steps in one write transaction. Another process may be opening
/// the same file: the version is re-read under the write lock, so each step runs exactly once.
/// `steps` is [`MIGRATIONS`] except in tests.
fn migrate(conn: &Connection, path: &Path, steps: &[&str]) -> Result<(), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let target = i64::try_from(steps.len()).unwrap_or(i64::MAX);
    let current: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sql)?;
    if current == target {
        return Ok(());
    }
    // `Connection::transaction_with_behavior` needs `&mut Connection`; spelled out instead.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
    let applied = (|| {
        let header = Header::read(conn).map_err(sql)?;
        header.check(path)?;
        let from = usize::try_from(header.user_version).unwrap_or(0);
        for (i, step) in steps.iter().enumerate().skip(from) {
            conn.execute_batch(step)
                .map_err(|source| StoreError::Migration {
                    path: path.to_path_buf(),
                    to: i + 1,
                    source,
                })?;
        }
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(sql)?;
        conn.pragma_update(None, "user_version", target)
            .map_err(sql)?;
        Ok(())
    })();
    match applied {
        Ok(()) => conn.execute_batch("COMMIT").map_err(sql),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn fresh_database_gets_latest_schema_wal_and_our_application_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/scalelab.db");
        let conn = open(&path, true).unwrap();
        let header = Header::read(&conn).unwrap();
        assert_eq!(header.user_version, SCHEMA_VERSION);
        assert_eq!(header.application_id, APPLICATION_ID);
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let fk: bool = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert!(fk);
        drop(conn);
        // Reopening is a no-op.
        open(&path, true).unwrap();
    }

    #[test]
    fn every_migration_step_is_valid_sql_from_its_predecessor() {
        let conn = Connection::open_in_memory().unwrap();
        for step in MIGRATIONS {
            conn.execute_batch(step).unwrap();
        }
    }

    #[test]
    fn foreign_sqlite_database_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
                .unwrap();
        }
        let before = fs::read(&path).unwrap();
        let err = open(&path, true).unwrap_err();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
        assert!(err.to_string().contains("another application"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), before);
    }

    #[test]
    fn version_1_database_is_migrated_keeping_its_runs() {
        use model::record::TrialOutcome;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(V1).unwrap();
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            let env = serde_json::to_string(&model::env::Fingerprint::default()).unwrap();
            conn.execute(
                "INSERT INTO runs (workload, params, op_unit, mode, pin, points, runs, duration_ns,
                     warmup_ns, tags, started_at, status, env, warnings, command_line)
                 VALUES ('w', '{}', 'op', 'threads', 'auto', '[1]', 1, 1000, 0, '{}', 't',
                     'complete', ?1, '[]', 'scalelab run w')",
                [env],
            )
            .unwrap();
            conn.execute_batch(
                "INSERT INTO trials (run_id, n, idx, started_at, status, window_ns, ops, user_ns,
                     sys_ns, minor_faults, major_faults, voluntary_switches, involuntary_switches,
                     block_in, block_out, counters, extras, placement, task_ops)
                 VALUES (1, 1, 0, 't', 'ok', 1000, 5, 1, 2, 3, 4, 5, 6, 7, 8, '[]', '{}', '[null]',
                     '[5]')",
            )
            .unwrap();
        }
        let store = crate::handle::Store::open(&path).unwrap();
        let version: i64 = Connection::open(&path)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let run = store.load_run(1).unwrap();
        let TrialOutcome::Ok(m) = &run.trials[0].outcome else {
            panic!("trial not ok: {:?}", run.trials[0]);
        };
        assert_eq!((m.task_ops.as_slice(), m.usage.block_out), (&[5][..], 8));
        assert!(m.steps.is_empty());
    }

    #[test]
    fn version_4_runs_get_a_fresh_uuid_each_when_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.db");
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..4] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", 4).unwrap();
            let env = serde_json::to_string(&model::env::Fingerprint::default()).unwrap();
            for _ in 0..3 {
                conn.execute(
                    "INSERT INTO runs (workload, params, op_unit, mode, pin, points, runs,
                         duration_ns, warmup_ns, tags, started_at, status, env, warnings,
                         command_line)
                     VALUES ('w', '{}', 'op', 'threads', 'auto', '[1]', 1, 1000, 0, '{}', 't',
                         'complete', ?1, '[]', 'scalelab run w')",
                    [&env],
                )
                .unwrap();
            }
        }
        let store = crate::handle::Store::open(&path).unwrap();
        let version: i64 = Connection::open(&path)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let uuids: Vec<uuid::Uuid> = (1..=3)
            .map(|id| store.load_run(id).unwrap().meta.uuid)
            .collect();
        for u in &uuids {
            assert_eq!(u.get_version_num(), 4, "{u}");
            assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{u}");
        }
        assert!(uuids[0] != uuids[1] && uuids[1] != uuids[2] && uuids[0] != uuids[2]);
    }

    /// The same as `backend::postgres::schema`'s test: from every older version to the newest, runs kept.
    #[test]
    fn every_older_version_migrates_to_the_newest_keeping_its_runs() {
        let env = serde_json::to_string(&model::env::Fingerprint::default()).unwrap();
        for version in 0..MIGRATIONS.len() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("old.db");
            {
                let conn = Connection::open(&path).unwrap();
                for step in &MIGRATIONS[..version] {
                    conn.execute_batch(step).unwrap();
                }
                if version >= 1 {
                    conn.execute(
                        "INSERT INTO runs (workload, params, op_unit, mode, pin, points, runs,
                             duration_ns, warmup_ns, tags, started_at, status, env, warnings,
                             command_line)
                         VALUES ('w', '{}', 'op', 'threads', 'auto', '[1]', 1, 1000, 0, '{}', 't',
                             'complete', ?1, '[]', 'scalelab run w')",
                        [&env],
                    )
                    .unwrap();
                }
                if version >= 5 {
                    conn.execute_batch(
                        "UPDATE runs SET uuid = '5f0c1a3e-2b4d-4c6e-8f10-123456789abc'",
                    )
                    .unwrap();
                }
                if version >= 1 {
                    conn.pragma_update(None, "application_id", APPLICATION_ID)
                        .unwrap();
                }
                conn.pragma_update(None, "user_version", version as i64)
                    .unwrap();
            }
            let store = crate::handle::Store::open(&path).unwrap();
            let now: i64 = Connection::open(&path)
                .unwrap()
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            assert_eq!(now, SCHEMA_VERSION, "from version {version}");
            if version >= 1 {
                let run = store.load_run(1).unwrap();
                assert_eq!(run.meta.uuid.get_version_num(), 4, "from version {version}");
            }
        }
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let conn = Connection::open(&path).unwrap();
        let steps = [V1, "CREATE TABLE extra (a); SELECT no_such_function();"];
        let err = migrate(&conn, &path, &steps).unwrap_err();
        assert!(matches!(err, StoreError::Migration { to: 2, .. }), "{err}");
        let header = Header::read(&conn).unwrap();
        assert_eq!(
            (header.user_version, header.application_id, header.objects),
            (0, 0, 0)
        );
        migrate(&conn, &path, &steps[..1]).unwrap();
        assert_eq!(Header::read(&conn).unwrap().user_version, 1);
    }

    #[test]
    fn readers_never_create_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/x.db");
        let err = open(&path, false).unwrap_err();
        assert!(matches!(err, StoreError::Missing { .. }), "{err}");
        assert!(!dir.path().join("sub").exists());
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(&path, b"").unwrap();
        let err = open(&path, false).unwrap_err();
        assert!(matches!(err, StoreError::Empty { .. }), "{err}");
        assert_eq!(fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
        open(&path, true).unwrap();
        open(&path, false).unwrap();
    }

    #[test]
    fn a_database_file_that_is_a_link_is_refused_and_its_target_not_made() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.db");
        let link = dir.path().join("link.db");
        symlink(&target, &link).unwrap();
        for create in [false, true] {
            let err = open(&link, create).unwrap_err().to_string();
            assert!(err.contains("symbolic link"), "{err}");
            assert!(!target.exists());
        }
        let fresh = dir.path().join("fresh.db");
        open(&fresh, true).unwrap();
        let mode = fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(dir.path(), true).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }
}
