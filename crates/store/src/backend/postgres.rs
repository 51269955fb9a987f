//! The PostgreSQL side of the SQL surface: connecting (configuration from `pg_config`, TLS from
//! `pg_tls`), checking and migrating the schema (`pg_schema`), prepared statements cached per
//! connection, parameters typed from the statement, and the run locks that say a writer is alive.
//!
//! Liveness across hosts: a reader cannot look at another host's processes, so a writer holds a
//! session-level advisory lock `(RUN_LOCK_CLASS, run id)` from `begin_run` to `finish_run`.
//! PostgreSQL drops it the moment the writer's connection ends — the process died, was killed,
//! or its host went away (TCP keepalive) — and a reader derives `incomplete` for a `running` run
//! whose lock nobody holds.

use std::collections::HashMap;

use postgres::types::{ToSql, Type};
use postgres::{Client, IsolationLevel, NoTls, Statement};

use super::value::{Row, Value, dollar_placeholders};
use crate::address::Location;
use crate::address::PgUrl;
use crate::error::StoreError;
use crate::error::connect_detail;
use crate::pg_config;
use crate::pg_schema::{CREATE_VERSION_TABLE, PG_MIGRATIONS};
use crate::pg_tls::Connector;
use crate::schema::APPLICATION_ID;
use crate::schema::SCHEMA_VERSION;

/// The first key of every run lock ("SCLB"); the second is the run id modulo 2^31.
pub(crate) const RUN_LOCK_CLASS: i32 = APPLICATION_ID;

/// An open PostgreSQL connection and its prepared statements.
pub(crate) struct Pg {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// A transaction on it.
pub(crate) struct PgTx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
    at: &'a Location,
}

impl Pg {
    /// Connects to `url` and brings its schema to [`SCHEMA_VERSION`]; when `!create`, a
    /// database without scalelab's tables is refused instead.
    pub(crate) fn open(url: &PgUrl, at: &Location, create: bool) -> Result<Pg, StoreError> {
        let bad_config = |e: crate::pg_error::ConfigError| StoreError::PgConfig {
            db: at.to_string(),
            detail: e.to_string(),
        };
        let targets = pg_config::config(url).map_err(bad_config)?;
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
            let connected = match connector {
                Connector::Plain => target.config.connect(NoTls),
                Connector::Tls(rustls) => target.config.connect(rustls),
            };
            match connected {
                Ok(c) => {
                    client = Some(c);
                    break;
                }
                Err(e) => failures.push(format!("{}: {}", target.shown, connect_detail(&e))),
            }
        }
        let client = client.ok_or_else(|| StoreError::Connect {
            db: at.to_string(),
            detail: failures.join("; "),
        })?;
        let mut pg = Pg {
            client,
            statements: HashMap::new(),
        };
        pg.migrate(at, create, PG_MIGRATIONS)?;
        Ok(pg)
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
        let mut tx = self.client.transaction().map_err(pg_err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&RUN_LOCK_CLASS])
            .map_err(pg_err)?;
        let has = |tx: &mut postgres::Transaction<'_>, table: &str| -> Result<bool, StoreError> {
            let row = tx
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
                .map_err(pg_err)?;
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
        let target = i64::try_from(steps.len()).unwrap_or(i64::MAX);
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
        let Pg { client, statements } = self;
        let mut builder = client.build_transaction();
        if !write {
            builder = builder
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true);
        }
        let tx = builder.start().map_err(pg_err)?;
        let mut tx = PgTx { tx, statements, at };
        let value = f(&mut tx)?;
        tx.tx.commit().map_err(pg_err)?;
        Ok(value)
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
