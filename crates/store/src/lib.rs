//! The results database: every run, trial and sample scalelab measures, kept without loss.
//!
//! Two backends behind one [`Store`]: a SQLite file, the embedded default (WAL mode, foreign
//! keys on, a 30 s busy timeout so that two scalelab processes writing the same file both
//! succeed), and a PostgreSQL server that a team's hosts all write to (`--db postgres://…`).
//! Same schema, same versioned migrations, same guarantees. Raw records are stored — runs,
//! trials, samples — and every aggregate is recomputed from them; `load_run` rebuilds the exact
//! [`RunData`] that was written.
//!
//! Durability is per trial: [`Store::add_trial`] commits each trial in its own transaction as it
//! ends, so a crash loses at most the trial in flight. A run is written as `running` together
//! with its owner (pid, the pid's start time, boot id; on PostgreSQL also a lock its connection
//! holds); a reader derives [`RunStatus::Incomplete`] for a `running` run whose owner is gone
//! (`liveness`).
//!
//! The store never destroys what it did not write: a file or database that is not scalelab's,
//! or one written by a newer scalelab, is refused and left untouched (`schema`, `pg_schema`).
//!
//! Concerns, one file each: `address` (a path or a URL, shown without its password),
//! `backend` (the portable SQL surface over SQLite and PostgreSQL), `location` (where the file
//! is, and may it be opened), `schema` (SQLite: opening, DDL, migrations on
//! `PRAGMA user_version`), `pg_schema` (PostgreSQL's DDL and migrations), `pg_uri` (a URL read
//! as libpq reads it), `pg_files` (the service and password files), `pg_hosts` (libpq's host list), `pg_config` (the servers a
//! URL names, from the URL, service, environment and defaults, as libpq reaches them), `pg_tls`
//! (TLS with libpq's `sslmode`), `runs` (writing),
//! `query` (reading), `columns` (model values ↔ SQL columns), `liveness` (is the owner alive),
//! `push` (copying runs between stores, idempotently by UUID), `run_files` (a run's
//! profile files, stored for other hosts), `bisect` (bisections: their
//! range, steps and verdicts), `export` (JSON/CSV export,
//! reading exports), `validation` (refusing runs no measurement could produce, before import),
//! `error` (what can go wrong); and `profile_files` (a run's profile files between hosts: where
//! they are, copied into a store, fetched from it).
//!
//! A layer of its own: it depends on the model (`model`) and `sys`, never on the engine or the
//! analysis; its errors are [`StoreError`], which the engine wraps unchanged.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod address;
mod backend;
mod bisect;
mod columns;
mod error;
mod export;
mod liveness;
mod location;
mod pg_config;
mod pg_error;
mod pg_files;
mod pg_hosts;
mod pg_schema;
#[cfg(any(test, feature = "test-support"))]
pub mod pg_server;
mod pg_tls;
mod pg_uri;
pub mod profile_files;
mod push;
mod query;
mod run_files;
mod runs;
mod schema;
mod validation;

use std::cell::RefCell;

// The model's modules under the names this crate has always used (`crate::record::RunData`).
#[cfg(test)]
use model::test_runs;
use model::{env, limits, number_text, record, safe_text};
use std::path::Path;

pub use address::{Location, PgUrl, UnknownScheme, redact_secrets};
pub use bisect::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};
pub use error::StoreError;
pub use export::{export_csv, export_json, read_export};
pub use push::{PushReport, push};
pub use query::RunFilter;
pub use schema::SCHEMA_VERSION;

use backend::{Db, Lite, Pg};
use validation::validate;

#[cfg(doc)]
use crate::record::{RunData, RunStatus};

/// An open results database.
#[derive(Debug)]
pub struct Store {
    db: Db,
    location: Location,
    /// This process as a run owner, read once at open.
    me: liveness::Owner,
}

impl Store {
    /// Opens (creating it and its parent directories when missing) the SQLite database at
    /// `path`, migrating an older schema forward: for the commands that store runs.
    ///
    /// Refused, with the file left untouched: a file that is not a SQLite database, a SQLite
    /// database of another application, a database written by a newer scalelab, a path through
    /// a link another user made, a database file that is a link. A location that cannot be
    /// created or written is an error too. A new file is 0600, new folders 0700.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at(&Location::File(path.to_path_buf()), true)
    }

    /// Opens the existing SQLite database at `path`, as [`Store::open`] does, for the commands
    /// that only read: a missing or empty file is refused and nothing is created.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        Store::open_at(&Location::File(path.to_path_buf()), false)
    }

    /// Opens the store at `location`, a file or a PostgreSQL server. When `create`, a missing
    /// database (file, or scalelab's tables on the server) is created and an older schema
    /// migrated; otherwise a missing one is refused. A server that cannot be reached is an
    /// error naming the URL without its password.
    pub fn open_at(location: &Location, create: bool) -> Result<Store, StoreError> {
        let db = match location {
            Location::File(path) => Db::Sqlite(Lite {
                conn: schema::open(path, create)?,
            }),
            Location::Postgres(url) => {
                Db::Postgres(Box::new(RefCell::new(Pg::open(url, location, create)?)))
            }
        };
        Ok(Store {
            db,
            location: location.clone(),
            me: liveness::Owner::current(),
        })
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The database file, for a SQLite store.
    pub fn path(&self) -> Option<&Path> {
        self.location.path()
    }

    /// The store as shown in messages (a URL without its password).
    fn shown(&self) -> String {
        self.location.to_string()
    }
}
