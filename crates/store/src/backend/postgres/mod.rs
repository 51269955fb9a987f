//! The PostgreSQL side of the SQL surface: connecting (configuration from `config`, TLS from
//! `tls`), checking and migrating the schema (`schema`), prepared statements cached per
//! connection, parameters typed from the statement, and the run locks that say a writer is alive.
//!
//! Every PostgreSQL concern of the store lives in this folder, one file each: `uri` (a URL read
//! as libpq reads it), `files` (the service and password files), `hosts` (libpq's host list),
//! `config` (the servers a URL names), `tls` (`sslmode`), `error` (why a URL cannot be used),
//! `schema` (DDL and migrations) and `test_server` (a throwaway server, tests only). The rest of
//! the store reaches it only through [`Pg`], [`PgTx`] and [`Interrupter`].
//!
//! Liveness across hosts: a reader cannot look at another host's processes, so a writer holds a
//! session-level advisory lock from `begin_run` to `finish_run` (see `liveness`: its key is
//! random and recorded in the run's row with the holding session, so no other role can take it
//! ahead or hold it for a dead writer).
//!
//! No wait is unbounded: a session whose `lock_timeout` is unset gets [`DEFAULT_LOCK_TIMEOUT`],
//! and a statement that runs out of it is a [`StoreError::LockTimeout`] naming the sessions that
//! hold locks; [`Interrupter`] cancels, from another thread, a statement that waits while the
//! process is asked to stop.

mod config;
mod error;
mod files;
mod hosts;
mod schema;
#[cfg(any(test, feature = "test-support"))]
pub mod test_server;
mod tls;
mod uri;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{CancelToken, Client, IsolationLevel, NoTls, Statement};

use self::schema::{CREATE_VERSION_TABLE, PG_MIGRATIONS};
use self::tls::Connector;
use super::value::{Row, Value, dollar_placeholders};
use crate::address::Location;
use crate::address::PgUrl;
use crate::error::StoreError;
use crate::error::connect_detail;
use crate::schema::APPLICATION_ID;
use crate::schema::SCHEMA_VERSION;

/// The first key of every run lock ("SCLB"); the second is the run's random key (`liveness`).
pub(crate) const RUN_LOCK_CLASS: i32 = APPLICATION_ID;

/// The `lock_timeout` of a session whose URL, role or server set none: how long a statement may
/// wait for a lock another session holds before it fails naming that session.
pub(crate) const DEFAULT_LOCK_TIMEOUT: &str = "20s";

/// Whether a table of this name is on the search path, read from `pg_class` in the statement's
/// own snapshot: `to_regclass` looks names up in the session's catalog cache, which within a
/// transaction can still hold "no such table" from before another session made it.
const TABLE_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM pg_class c
    WHERE c.relname = $1 AND c.relkind IN ('r', 'p')
      AND c.relnamespace IN (SELECT oid FROM pg_namespace
                             WHERE nspname = ANY (current_schemas(false))))";

/// How long opening a store waits for another session migrating the schema.
const MIGRATION_WAIT: Duration = Duration::from_secs(20);

/// An open PostgreSQL connection and its prepared statements.
pub(crate) struct Pg {
    client: Client,
    statements: HashMap<String, Statement>,
    /// Cancels its statements from another thread.
    interrupter: Interrupter,
}

/// A transaction on it.
pub(crate) struct PgTx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
    at: &'a Location,
    busy: &'a BusySince,
}

/// When the statement in flight started (ms since the epoch), or 0.
type BusySince = Arc<AtomicU64>;

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64)
}

/// Cancels a connection's statement in flight from another thread: what a stop signal uses,
/// since a statement waiting for a lock does not see the process's stop flag.
#[derive(Clone)]
pub struct Interrupter {
    token: CancelToken,
    connector: Connector,
    busy: BusySince,
}

impl std::fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupter")
    }
}

impl Interrupter {
    /// Cancels the statement in flight when it has run for `longer_than` or more; true when one
    /// was cancelled. A statement that is merely slow to commit a trial is left alone below it.
    pub fn cancel_if_waiting(&self, longer_than: Duration) -> bool {
        let since = self.busy.load(Ordering::Relaxed);
        if since == 0 {
            return false;
        }
        if epoch_ms().saturating_sub(since) < longer_than.as_millis() as u64 {
            return false;
        }
        match &self.connector {
            Connector::Plain => self.token.cancel_query(NoTls).is_ok(),
            Connector::Tls(rustls) => self.token.cancel_query(rustls.clone()).is_ok(),
        }
    }
}

impl Pg {
    /// Connects to `url` and brings its schema to [`SCHEMA_VERSION`]; when `!create`, a
    /// database without scalelab's tables is refused instead.
    pub(crate) fn open(url: &PgUrl, at: &Location, create: bool) -> Result<Pg, StoreError> {
        let bad_config = |e: self::error::ConfigError| StoreError::PgConfig {
            db: at.to_string(),
            detail: e.to_string(),
        };
        let targets = config::config(url).map_err(bad_config)?;
        // Every host's connector first: a URL scalelab refuses is refused before any attempt.
        let mut plans = Vec::with_capacity(targets.hosts.len());
        for mut target in targets.hosts {
            let host =
                target
                    .config
                    .get_hosts()
                    .first()
                    .cloned()
                    .ok_or_else(|| StoreError::PgConfig {
                        db: at.to_string(),
                        detail: "no host to connect to".into(),
                    })?;
            let (mode, connector) = targets.tls.connector(&host).map_err(bad_config)?;
            target.config.ssl_mode(mode);
            plans.push((target, connector));
        }
        // Tried in order, as libpq tries its host list: the first that connects is used.
        let mut failures = Vec::new();
        let mut client = None;
        for (target, connector) in plans {
            let connected = match &connector {
                Connector::Plain => target.config.connect(NoTls),
                Connector::Tls(rustls) => target.config.connect(rustls.clone()),
            };
            match connected {
                Ok(c) => {
                    client = Some((c, connector));
                    break;
                }
                Err(e) => failures.push(format!("{}: {}", target.shown, connect_detail(&e))),
            }
        }
        let (client, connector) = client.ok_or_else(|| StoreError::Connect {
            db: at.to_string(),
            detail: failures.join("; "),
        })?;
        let interrupter = Interrupter {
            token: client.cancel_token(),
            connector,
            busy: Arc::default(),
        };
        let mut pg = Pg {
            client,
            statements: HashMap::new(),
            interrupter,
        };
        pg.bound_lock_waits(at)?;
        pg.migrate(at, create, PG_MIGRATIONS)?;
        Ok(pg)
    }

    /// What cancels this connection's statements from another thread.
    pub(crate) fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }

    /// Gives the session [`DEFAULT_LOCK_TIMEOUT`] unless its URL (`options=-c lock_timeout=…`),
    /// its role or the server set one.
    fn bound_lock_waits(&mut self, at: &Location) -> Result<(), StoreError> {
        let pg_err = |source| StoreError::Postgres {
            db: at.to_string(),
            source,
        };
        let row = self
            .client
            .query_one("SELECT current_setting('lock_timeout')", &[])
            .map_err(pg_err)?;
        let current: String = row.get(0);
        if current.trim() == "0" {
            self.client
                .batch_execute(&format!("SET lock_timeout = '{DEFAULT_LOCK_TIMEOUT}'"))
                .map_err(pg_err)?;
        }
        Ok(())
    }

    /// Checks whose the database is and applies the missing steps, in one transaction under an
    /// advisory lock; `steps` is [`PG_MIGRATIONS`] except in tests.
    pub(crate) fn migrate(
        &mut self,
        at: &Location,
        create: bool,
        steps: &[&str],
    ) -> Result<(), StoreError> {
        let pg_err = |source| StoreError::Postgres {
            db: at.to_string(),
            source,
        };
        let target = i64::try_from(steps.len()).unwrap_or(i64::MAX);
        // A store already at this version is opened without the migration lock: anyone who can
        // connect can take an advisory lock, and a reader holding this one must not stop every
        // run from opening the store.
        let exists: bool = self
            .client
            .query_one(TABLE_EXISTS, &[&"scalelab_schema"])
            .map_err(pg_err)?
            .get(0);
        if exists {
            let current: Option<i64> = self
                .client
                .query_opt("SELECT version FROM scalelab_schema", &[])
                .map_err(pg_err)?
                .map(|r| r.get(0));
            if current == Some(target) {
                return Ok(());
            }
        }
        let mut tx = self.client.transaction().map_err(pg_err)?;
        let start = Instant::now();
        loop {
            let got: bool = tx
                .query_one(
                    "SELECT pg_try_advisory_xact_lock($1, 0)",
                    &[&RUN_LOCK_CLASS],
                )
                .map_err(pg_err)?
                .get(0);
            if got {
                break;
            }
            if start.elapsed() >= MIGRATION_WAIT {
                let holders = advisory_holders(&mut tx, RUN_LOCK_CLASS, 0);
                return Err(StoreError::LockTimeout {
                    db: at.to_string(),
                    waited: format!(
                        "{} s for the schema's migration lock",
                        MIGRATION_WAIT.as_secs()
                    ),
                    holders,
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let has = |tx: &mut postgres::Transaction<'_>, table: &str| -> Result<bool, StoreError> {
            let row = tx.query_one(TABLE_EXISTS, &[&table]).map_err(pg_err)?;
            Ok(row.get(0))
        };
        let version: i64 = if has(&mut tx, "scalelab_schema")? {
            let row = tx
                .query_opt("SELECT version FROM scalelab_schema", &[])
                .map_err(pg_err)?;
            row.map(|r| r.get(0)).ok_or_else(|| StoreError::Foreign {
                db: at.to_string(),
                detail: "its scalelab_schema table is empty".into(),
            })?
        } else if has(&mut tx, "runs")? {
            return Err(StoreError::Foreign {
                db: at.to_string(),
                detail: "it has a `runs` table that is not scalelab's".into(),
            });
        } else if create {
            tx.batch_execute(CREATE_VERSION_TABLE).map_err(pg_err)?;
            0
        } else {
            return Err(StoreError::NoPgSchema { db: at.to_string() });
        };
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerPgSchema {
                db: at.to_string(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version >= target {
            return Ok(());
        }
        let from = usize::try_from(version).unwrap_or(0);
        for (i, step) in steps.iter().enumerate().skip(from) {
            tx.batch_execute(step)
                .map_err(|source| StoreError::PgMigration {
                    db: at.to_string(),
                    to: i + 1,
                    source,
                })?;
        }
        tx.execute("UPDATE scalelab_schema SET version = $1", &[&target])
            .map_err(pg_err)?;
        tx.commit().map_err(pg_err)
    }

    /// Runs `f` in one transaction: read committed for a write (each trial's rows), a
    /// repeatable-read read-only snapshot for a read.
    pub(crate) fn transaction<T>(
        &mut self,
        at: &Location,
        write: bool,
        f: impl FnOnce(&mut PgTx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let pg_err = |source| StoreError::Postgres {
            db: at.to_string(),
            source,
        };
        let Pg {
            client,
            statements,
            interrupter,
        } = self;
        let done = {
            let mut builder = client.build_transaction();
            if !write {
                builder = builder
                    .isolation_level(IsolationLevel::RepeatableRead)
                    .read_only(true);
            }
            let tx = builder.start().map_err(pg_err)?;
            let mut tx = PgTx {
                tx,
                statements,
                at,
                busy: &interrupter.busy,
            };
            match f(&mut tx) {
                Ok(value) => {
                    let _busy = BusyGuard::start(&interrupter.busy);
                    tx.tx.commit().map_err(pg_err).map(|()| value)
                }
                Err(e) => Err(e),
            }
        };
        match done {
            Err(StoreError::Postgres { db, source }) => Err(classify(client, db, source)),
            other => other,
        }
    }
}

/// A lock timeout named with who holds locks, a cancelled statement as such, other errors as
/// they are. Runs after the failed transaction is gone, on its connection.
fn classify(client: &mut Client, db: String, source: postgres::Error) -> StoreError {
    let code = source.code().cloned();
    if code == Some(SqlState::LOCK_NOT_AVAILABLE) {
        let waited = client
            .query_one("SELECT current_setting('lock_timeout')", &[])
            .map(|r| r.get::<_, String>(0))
            .unwrap_or_else(|_| "its lock_timeout".into());
        let holders = lock_holders(client);
        return StoreError::LockTimeout {
            db,
            waited,
            holders,
        };
    }
    if code == Some(SqlState::QUERY_CANCELED) {
        return StoreError::Cancelled {
            db,
            detail: source
                .as_db_error()
                .map_or_else(|| source.to_string(), |e| e.message().to_owned()),
        };
    }
    StoreError::Postgres { db, source }
}

/// The sessions that hold locks in this database that a statement could wait for (not shared
/// reads), in words: `pid 123 (role alice, psql): ExclusiveLock on runs`.
fn lock_holders(client: &mut Client) -> String {
    let rows = client.query(
        "SELECT DISTINCT l.pid::bigint, COALESCE(a.usename::text, '?'),
                COALESCE(NULLIF(a.application_name, ''), 'no application name'),
                l.mode, COALESCE(c.relname::text, l.locktype)
         FROM pg_locks l
         LEFT JOIN pg_stat_activity a ON a.pid = l.pid
         LEFT JOIN pg_class c ON c.oid = l.relation
         WHERE l.granted AND l.pid <> pg_backend_pid()
           AND l.locktype IN ('relation', 'tuple', 'transactionid', 'advisory')
           AND NOT (l.locktype = 'relation' AND l.mode = 'AccessShareLock')
           AND (c.relname IS NULL OR c.relname NOT LIKE 'pg\\_%')
           AND (l.database IS NULL
                OR l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
         ORDER BY 1 LIMIT 12",
        &[],
    );
    describe_holders(rows)
}

/// The sessions holding advisory lock `(class, key)`, in words.
fn advisory_holders(tx: &mut postgres::Transaction<'_>, class: i32, key: i32) -> String {
    let rows = tx.query(
        "SELECT l.pid::bigint, COALESCE(a.usename::text, '?'),
                COALESCE(NULLIF(a.application_name, ''), 'no application name'),
                l.mode, 'advisory lock (' || l.classid || ', ' || l.objid || ')'
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = $1
           AND l.objid::bigint = $2 AND l.objsubid = 2",
        &[&i64::from(class), &i64::from(key)],
    );
    describe_holders(rows)
}

fn describe_holders(rows: Result<Vec<postgres::Row>, postgres::Error>) -> String {
    match rows {
        Ok(rows) if rows.is_empty() => "no session holds one now".into(),
        Ok(rows) => rows
            .iter()
            .map(|r| {
                format!(
                    "pid {} (role {}, {}): {} on {}",
                    r.get::<_, i64>(0),
                    r.get::<_, String>(1),
                    r.get::<_, String>(2),
                    r.get::<_, String>(3),
                    r.get::<_, String>(4)
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => format!("who holds it could not be read: {e}"),
    }
}

/// Marks a statement in flight for [`Interrupter`] while it lives.
struct BusyGuard<'a>(&'a AtomicU64);

impl<'a> BusyGuard<'a> {
    fn start(busy: &'a AtomicU64) -> BusyGuard<'a> {
        busy.store(epoch_ms(), Ordering::Relaxed);
        BusyGuard(busy)
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

impl PgTx<'_> {
    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .tx
            .prepare(&dollar_placeholders(sql))
            .map_err(|source| StoreError::Postgres {
                db: self.at.to_string(),
                source,
            })?;
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    pub(crate) fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        // Preparing waits too: parsing a statement locks the tables it names.
        let _busy = BusyGuard::start(self.busy);
        let stmt = self.statement(sql)?;
        let bound = bind(&stmt, params)?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
        self.tx
            .execute(&stmt, &refs)
            .map_err(|source| StoreError::Postgres {
                db: self.at.to_string(),
                source,
            })
    }

    pub(crate) fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let _busy = BusyGuard::start(self.busy);
        let stmt = self.statement(sql)?;
        let bound = bind(&stmt, params)?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
        let rows = self
            .tx
            .query(&stmt, &refs)
            .map_err(|source| StoreError::Postgres {
                db: self.at.to_string(),
                source,
            })?;
        rows.iter().map(read_row).collect()
    }
}

/// Each value as the Rust type the statement's parameter wants.
fn bind(stmt: &Statement, params: &[Value]) -> Result<Vec<Box<dyn ToSql + Sync>>, StoreError> {
    let wrong = |i: usize, detail: String| StoreError::Column { index: i, detail };
    stmt.params()
        .iter()
        .zip(params)
        .enumerate()
        .map(
            |(i, (ty, v))| -> Result<Box<dyn ToSql + Sync>, StoreError> {
                Ok(match (v, ty) {
                    (Value::Null, &Type::INT8) => Box::new(None::<i64>),
                    (Value::Null, &Type::INT4) => Box::new(None::<i32>),
                    (Value::Null, &Type::BYTEA) => Box::new(None::<Vec<u8>>),
                    (Value::Null, _) => Box::new(None::<String>),
                    (Value::Int(n), &Type::INT8) => Box::new(*n),
                    (Value::Int(n), &Type::INT4) => Box::new(
                        i32::try_from(*n)
                            .map_err(|_| wrong(i, format!("{n} does not fit 32 bits")))?,
                    ),
                    (Value::Int(n), other) => {
                        return Err(wrong(
                            i,
                            format!("integer {n} bound to a {other} parameter"),
                        ));
                    }
                    (Value::Text(t), _) => Box::new(t.clone()),
                    (Value::Bytes(b), _) => Box::new(b.clone()),
                })
            },
        )
        .collect()
}

fn read_row(row: &postgres::Row) -> Result<Row, StoreError> {
    let pg = |index: usize| {
        move |e: postgres::Error| StoreError::Column {
            index,
            detail: e.to_string(),
        }
    };
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let v = match *col.type_() {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map_err(pg(i))?
                .map(Value::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(pg(i))?
                .map(|v| Value::Int(i64::from(v))),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(pg(i))?
                .map(|v| Value::Int(i64::from(v))),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map_err(pg(i))?
                .map(|v| Value::Int(i64::from(v))),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(i)
                .map_err(pg(i))?
                .map(Value::Bytes),
            _ => row
                .try_get::<_, Option<String>>(i)
                .map_err(pg(i))?
                .map(Value::Text),
        };
        out.push(v.unwrap_or(Value::Null));
    }
    Ok(Row(out))
}
