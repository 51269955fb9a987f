//! The SQLite side of the SQL surface: one connection to the database file (opened, checked and
//! migrated by `schema`), statements cached by rusqlite, values bound as SQLite's own types.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Transaction, TransactionBehavior, params_from_iter};

use super::value::{Row, Value};
use crate::address::Location;
use crate::error::StoreError;

/// An open SQLite database.
pub(crate) struct Lite {
    pub(crate) conn: Connection,
}

/// A transaction on it.
pub(crate) struct LiteTx<'a> {
    tx: Transaction<'a>,
    at: &'a Location,
}

impl Lite {
    /// Runs `f` in one transaction: `BEGIN IMMEDIATE` for a write, so two processes writing the
    /// same file queue on the busy timeout instead of failing on a lock upgrade.
    pub(crate) fn transaction<T>(
        &self,
        at: &Location,
        write: bool,
        f: impl FnOnce(&mut LiteTx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let sql = |e| StoreError::sqlite_at(at, e);
        let tx = if write {
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
        } else {
            self.conn.unchecked_transaction()
        }
        .map_err(sql)?;
        let mut tx = LiteTx { tx, at };
        let value = f(&mut tx)?;
        tx.tx.commit().map_err(sql)?;
        Ok(value)
    }
}

impl LiteTx<'_> {
    fn params(params: &[Value]) -> impl Iterator<Item = rusqlite::types::Value> + '_ {
        params.iter().map(|v| match v {
            Value::Null => rusqlite::types::Value::Null,
            Value::Int(i) => rusqlite::types::Value::Integer(*i),
            Value::Text(t) => rusqlite::types::Value::Text(t.clone()),
            Value::Bytes(b) => rusqlite::types::Value::Blob(b.clone()),
        })
    }

    pub(crate) fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let changed = self
            .tx
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(params_from_iter(Self::params(params))))
            .map_err(|e| StoreError::sqlite_at(self.at, e))?;
        Ok(changed as u64)
    }

    pub(crate) fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let at = self.at;
        let sql_err = |e| StoreError::sqlite_at(at, e);
        let mut stmt = self.tx.prepare_cached(sql).map_err(sql_err)?;
        let width = stmt.column_count();
        let mut rows = stmt
            .query(params_from_iter(Self::params(params)))
            .map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err)? {
            let mut row = Vec::with_capacity(width);
            for i in 0..width {
                row.push(match r.get_ref(i).map_err(sql_err)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
                    ValueRef::Real(_) => {
                        return Err(StoreError::Column {
                            index: i,
                            detail: "a real value, which scalelab never stores".into(),
                        });
                    }
                });
            }
            out.push(Row(row));
        }
        Ok(out)
    }
}
