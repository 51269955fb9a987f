//! A job's log: one row per event in `job_events` (taken, waited, refused, lost, ended), each
//! stamped by the server with the role that wrote it (a trigger sets `role` to `current_user`).
//! A record, not a line: text with a new line in it stays one event, escaped where shown.
//!
//! Agents keep each job's log to its newest [`KEPT_EVENTS`]; a reader gets the newest
//! [`SHOWN_EVENTS`] of each job it reads.

use std::collections::HashMap;

use serde::Serialize;

use crate::backend::{Tx, vals};
use crate::error::StoreError;

/// The most events of one job an agent keeps: past it, the oldest go.
const KEPT_EVENTS: i64 = 1_000;

/// The most events of one job a reader gets (its newest).
pub(crate) const SHOWN_EVENTS: i64 = 200;

/// One event of a job's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobEvent {
    /// When (the server's clock, ms since the epoch).
    pub at_ms: i64,
    /// The database role that wrote it, as the server stamped it (empty for events written
    /// before roles were stamped).
    pub role: String,
    /// What happened, as written (it may hold any character; escape it to show it).
    pub text: String,
}

/// Who writes an event: an agent keeps the log bounded (it may delete); a submitter only adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writer {
    Agent,
    Submitter,
}

/// Appends `text` (stamped `now`) to job `id`'s log.
pub(crate) fn log_event(
    tx: &mut Tx<'_, '_>,
    id: i64,
    now: i64,
    text: &str,
    writer: Writer,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO job_events (job_id, at, text) VALUES (?1, ?2, ?3)",
        vals![id, now, text],
    )?;
    if writer == Writer::Agent {
        tx.execute(
            "DELETE FROM job_events WHERE job_id = ?1 AND id <= (
                 SELECT id FROM job_events WHERE job_id = ?1 ORDER BY id DESC
                 OFFSET ?2 LIMIT 1)",
            vals![id, KEPT_EVENTS],
        )?;
    }
    Ok(())
}

/// Whether job `id`'s log already holds an event with exactly `text`.
pub(crate) fn has_event(tx: &mut Tx<'_, '_>, id: i64, text: &str) -> Result<bool, StoreError> {
    Ok(tx
        .query_opt(
            "SELECT 1 FROM job_events WHERE job_id = ?1 AND text = ?2 LIMIT 1",
            vals![id, text],
        )?
        .is_some())
}

/// The newest [`SHOWN_EVENTS`] events of each job of `ids`, oldest first.
pub(crate) fn events_of(
    tx: &mut Tx<'_, '_>,
    ids: &[i64],
) -> Result<HashMap<i64, Vec<JobEvent>>, StoreError> {
    let rows = tx.query(
        "SELECT job_id, at, role, text FROM (
             SELECT job_id, at, role, text, id,
                    row_number() OVER (PARTITION BY job_id ORDER BY id DESC) AS newest
             FROM job_events
             WHERE job_id IN (SELECT value::bigint FROM json_array_elements_text(?1::text::json))
         ) e WHERE newest <= ?2 ORDER BY job_id, id",
        vals![json_list(ids)?, SHOWN_EVENTS],
    )?;
    let mut out: HashMap<i64, Vec<JobEvent>> = HashMap::new();
    for r in &rows {
        out.entry(r.int(0)?).or_default().push(JobEvent {
            at_ms: r.int(1)?,
            role: r.text(2)?,
            text: r.text(3)?,
        });
    }
    Ok(out)
}

/// Ids as the JSON text `?1::text::json` reads back in a statement.
pub(super) fn json_list<T: Serialize>(items: &[T]) -> Result<String, StoreError> {
    serde_json::to_string(items).map_err(|source| StoreError::Encode {
        what: "a list for a statement",
        source,
    })
}
