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
//! or one written by a newer scalelab, is refused and left untouched (`schema`,
//! `backend::postgres::schema`).
//!
//! Concerns, one file each: `address` (a path or a URL, shown without its password),
//! `backend` (the portable SQL surface over SQLite and PostgreSQL; `backend/postgres/` holds
//! PostgreSQL's DDL and migrations, URLs, service and password files, host lists, connection
//! settings and TLS, each as libpq reads them), `location` (where the file is, and may it be
//! opened), `schema` (SQLite: opening, DDL, migrations on `PRAGMA user_version`), `runs` (writing),
//! `query` (reading), `columns` (model values ↔ SQL columns), `liveness` (is the owner alive),
//! `push` (copying runs between stores, idempotently by UUID), `run_files` (a run's
//! profile files, stored for other hosts), `bisect` (bisections: their
//! range, steps and verdicts), `queue` (the lab's job queue and its agents, PostgreSQL only), `export` (JSON/CSV export,
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
mod handle;
mod liveness;
mod location;
pub mod profile_files;
mod push;
mod query;
mod queue;
mod run_files;
mod runs;
mod schema;
mod validation;

pub use address::{Location, PgUrl, UnknownScheme, redact_secrets};
pub use backend::Interrupter;
/// A throwaway PostgreSQL server for the tests of this crate and, with the `test-support`
/// feature, of the crates that use the store.
#[cfg(any(test, feature = "test-support"))]
pub use backend::postgres::test_server;
pub use bisect::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};
pub use error::StoreError;
pub use export::{export_csv, export_json, read_export};
pub use handle::Store;
pub use push::{PushReport, push};
pub use query::RunFilter;
pub use queue::{
    AgentRow, Candidate, ClaimOutcome, Claimed, DueOutcome, Job, JobEvent, JobRun, JobState,
    NewJob, Reaped, Schedule, Verdict,
};
pub use schema::SCHEMA_VERSION;

#[cfg(doc)]
use model::record::{RunData, RunStatus};
