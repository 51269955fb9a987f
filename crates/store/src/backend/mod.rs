//! The two databases a [`Store`](crate::handle::Store) can sit on, behind one small SQL surface: the
//! bundled SQLite file (the default) and a PostgreSQL server (a team's shared store).
//!
//! Callers write portable SQL once — numbered placeholders `?1`, `?2` …, `RETURNING`,
//! `ON CONFLICT`, `count(*) FILTER (WHERE …)`, no backend function — and bind [`Value`]s; rows
//! come back as [`Row`]s of [`Value`]s. PostgreSQL sees `$1`, `$2` … (translated here) and gets
//! its parameters typed from the prepared statement, so every integer column is `BIGINT` there
//! (see `postgres::schema`). Each backend keeps its prepared statements for the connection's life.
//!
//! One transaction per call: [`Db::write`] takes the write lock up front (SQLite
//! `BEGIN IMMEDIATE`; PostgreSQL's row locks and sequences need nothing more), [`Db::read`] is
//! one consistent snapshot (SQLite's read transaction; PostgreSQL `REPEATABLE READ READ ONLY`).

pub(crate) mod postgres;
mod sqlite;
mod value;

use std::cell::RefCell;

pub use self::postgres::Interrupter;
pub(crate) use self::postgres::{Pg, PgTx, RUN_LOCK_CLASS};
pub(crate) use self::sqlite::{Lite, LiteTx};
use self::value::column_error;
pub(crate) use self::value::{Row, Value, vals};
use crate::address::Location;
use crate::error::StoreError;

/// An open database of either kind.
pub(crate) enum Db {
    Sqlite(Lite),
    /// Behind a `RefCell`: PostgreSQL's client needs `&mut` even to read, and readers of the
    /// store take `&self` (a `Store` is not shared between threads). Boxed: a client is large.
    Postgres(Box<RefCell<Pg>>),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::Sqlite(_) => "Db::Sqlite",
            Db::Postgres(_) => "Db::Postgres",
        })
    }
}

/// An open transaction of either kind: borrowed from the backend that opened it (`'t`), on its
/// connection (`'c`). The backends know nothing of this enum; [`Db`] wraps what they hand out.
pub(crate) enum Tx<'t, 'c> {
    Sqlite(&'t mut LiteTx<'c>),
    Postgres(&'t mut PgTx<'c>),
}

impl Db {
    /// Runs `f` in one write transaction, committed when `f` succeeds, rolled back otherwise.
    pub(crate) fn write<T>(
        &mut self,
        at: &Location,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Sqlite(lite) => lite.transaction(at, true, |tx| f(&mut Tx::Sqlite(tx))),
            Db::Postgres(pg) => pg
                .get_mut()
                .transaction(at, true, |tx| f(&mut Tx::Postgres(tx))),
        }
    }

    /// Runs `f` in one read-only snapshot.
    pub(crate) fn read<T>(
        &self,
        at: &Location,
        f: impl FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Sqlite(lite) => lite.transaction(at, false, |tx| f(&mut Tx::Sqlite(tx))),
            Db::Postgres(pg) => pg
                .borrow_mut()
                .transaction(at, false, |tx| f(&mut Tx::Postgres(tx))),
        }
    }
}

impl Tx<'_, '_> {
    /// Executes one statement; returns the rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        match self {
            Tx::Sqlite(tx) => tx.execute(sql, params),
            Tx::Postgres(tx) => tx.execute(sql, params),
        }
    }

    /// Runs one query and returns all its rows.
    pub(crate) fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        match self {
            Tx::Sqlite(tx) => tx.query(sql, params),
            Tx::Postgres(tx) => tx.query(sql, params),
        }
    }

    /// Runs one query expected to return at most one row.
    pub(crate) fn query_opt(
        &mut self,
        sql: &str,
        params: &[Value],
    ) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs one query expected to return exactly one row.
    pub(crate) fn query_one(&mut self, sql: &str, params: &[Value]) -> Result<Row, StoreError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| column_error(0, "a query that always answers returned no row"))
    }

    /// Whether this transaction is on PostgreSQL.
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, Tx::Postgres(_))
    }
}
