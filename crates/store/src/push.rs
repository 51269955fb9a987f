//! Copying runs from one store to another (`scalelab push --to`), idempotently: a run is known
//! by its UUID, and one the target already has is never stored twice, however often (or from
//! however many hosts at once) it is pushed.
//!
//! Each run is copied in one transaction of the target, with every trial and sample and its
//! profiles' metadata (the `perf.data` paths stay those of the host that recorded them). With
//! `with_profiles` the files themselves follow, each in a transaction of its own
//! ([`crate::profile_files::copy`]), for the runs copied and for those the target had: a push
//! interrupted between files is completed by the next. The check for the UUID and the insert happen under the target's
//! write lock (SQLite) or an advisory lock on the UUID (PostgreSQL), so two pushes of the same
//! run race to one copy. A run still being measured (`running` with a live owner) is left for
//! a later push: it would arrive without its last trials.

use super::backend::vals;
use crate::error::StoreError;
use crate::handle::Store;
use crate::profile_files::{self, FilesCopied};
use crate::query::RunFilter;
use model::record::RunStatus;

/// What a push did, run by run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PushReport {
    /// Runs copied: (id in the source, id in the target).
    pub copied: Vec<(i64, i64)>,
    /// Runs the target already had (by UUID): (id in the source, id in the target).
    pub present: Vec<(i64, i64)>,
    /// Runs still being measured, left for a later push (ids in the source).
    pub running: Vec<i64>,
    /// With profiles: what was done for each run's files (id in the source), runs with
    /// profiles only.
    pub files: Vec<(i64, FilesCopied)>,
}

/// Copies the runs of `from` that match `filter` to `to`, oldest first, with their profile
/// files when `with_profiles`; see the module doc.
pub fn push(
    from: &Store,
    to: &mut Store,
    filter: &RunFilter,
    with_profiles: bool,
) -> Result<PushReport, StoreError> {
    let mut report = PushReport::default();
    for meta in from.list_runs(filter)? {
        if meta.status == RunStatus::Running {
            report.running.push(meta.id);
            continue;
        }
        if let Some(there) = to.find_uuid(&meta.uuid)? {
            report.present.push((meta.id, there));
            if with_profiles {
                let run = from.load_run(meta.id)?;
                copy_files(from, &run, to, there, &mut report)?;
            }
            continue;
        }
        let run = from.load_run(meta.id)?;
        let uuid = meta.uuid.hyphenated().to_string();
        let outcome = to.write(|w| {
            if w.tx.is_postgres() {
                w.tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(?1))",
                    vals![uuid.as_str()],
                )?;
            }
            let existing =
                w.tx.query_opt(
                    "SELECT id FROM runs WHERE uuid = ?1 ORDER BY id LIMIT 1",
                    vals![uuid.as_str()],
                )?
                .map(|r| r.int(0))
                .transpose()?;
            match existing {
                Some(id) => Ok(Err(id)),
                None => w.insert_copy(&run).map(Ok),
            }
        })?;
        let there = match outcome {
            Ok(id) => {
                report.copied.push((meta.id, id));
                id
            }
            Err(id) => {
                report.present.push((meta.id, id));
                id
            }
        };
        if with_profiles {
            copy_files(from, &run, to, there, &mut report)?;
        }
    }
    Ok(report)
}

fn copy_files(
    from: &Store,
    run: &model::record::RunData,
    to: &mut Store,
    to_id: i64,
    report: &mut PushReport,
) -> Result<(), StoreError> {
    let files = profile_files::copy(from, run.meta.id, run, to, to_id)?;
    if files != FilesCopied::default() {
        report.files.push((run.meta.id, files));
    }
    Ok(())
}
