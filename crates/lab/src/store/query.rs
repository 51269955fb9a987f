//! Reading runs back: listing with filters, resolving `RUN` specs, loading a whole run.
//!
//! Every `running` run is shown with its derived status (see `liveness`), so a run whose process
//! died reads `incomplete` everywhere.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

use super::columns::{from_json, mode_from_sql, optional_json, pin_from_sql, u64_from_sql};
use super::liveness::{Owner, derive_status};
use super::{Store, StoreError};
use crate::record::{
    Nanos, RunData, RunMeta, RunStatus, SampleRecord, TrialMeasurement, TrialOutcome, TrialRecord,
    Usage,
};

/// Which runs `list_runs` returns; every given condition must hold.
#[derive(Debug, Default, Clone)]
pub struct RunFilter {
    /// Only runs of this workload (`cmd` for external commands).
    pub workload: Option<String>,
    /// Each `(key, value)` must be a tag of the run.
    pub tags: Vec<(String, String)>,
    /// Each `(key, value)` must be a parameter of the run.
    pub params: Vec<(String, String)>,
    /// Only runs with this variant label.
    pub variant: Option<String>,
    /// Only runs of an external command whose command line (`--cmd`) contains this text.
    pub command_contains: Option<String>,
}

const RUN_COLUMNS: &str = "id, origin_id, name, workload, params, op_unit, mode, pin, points, runs,
    duration_ns, warmup_ns, variant, tags, started_at, finished_at, status, env, warnings,
    command_line, owner_pid, owner_start_time, owner_boot_id, uuid, pin_placement";

impl Store {
    /// The runs matching `filter`, oldest first (by id), with derived status.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunMeta>, StoreError> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE 1");
        let mut values: Vec<&str> = Vec::new();
        if let Some(workload) = &filter.workload {
            sql.push_str(" AND r.workload = ?");
            values.push(workload);
        }
        if let Some(variant) = &filter.variant {
            sql.push_str(" AND r.variant = ?");
            values.push(variant);
        }
        for (table, pairs) in [("run_tags", &filter.tags), ("run_params", &filter.params)] {
            for (key, value) in pairs {
                sql.push_str(&format!(
                    " AND EXISTS (SELECT 1 FROM {table} k WHERE k.run_id = r.id AND k.key = ? AND k.value = ?)"
                ));
                values.extend([key.as_str(), value.as_str()]);
            }
        }
        if let Some(text) = &filter.command_contains {
            sql.push_str(
                " AND r.workload = 'cmd' AND EXISTS (SELECT 1 FROM run_params k WHERE \
                 k.run_id = r.id AND k.key = 'cmd' AND instr(k.value, ?) > 0)",
            );
            values.push(text);
        }
        sql.push_str(" ORDER BY r.id");
        let mut stmt = self.conn.prepare(&sql).map_err(self.sql())?;
        let rows = stmt
            .query_map(params_from_iter(values), RawRun::from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(self.sql())?;
        rows.into_iter()
            .map(|raw| raw.into_meta(&self.path, &self.me))
            .collect()
    }

    /// Resolves a `RUN` spec to a stored run id: `42`, `last`, or `last~K` (K runs before the last).
    pub fn resolve(&self, spec: &str) -> Result<i64, StoreError> {
        let text = spec.trim();
        if let Ok(id) = text.parse::<i64>() {
            self.require_run(id)?;
            return Ok(id);
        }
        let back = match text.strip_prefix("last") {
            Some("") => 0,
            Some(k) => k
                .strip_prefix('~')
                .filter(|k| k.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|k| k.parse::<i64>().ok())
                .ok_or_else(|| StoreError::BadRunSpec {
                    spec: spec.to_owned(),
                })?,
            None => {
                return Err(StoreError::BadRunSpec {
                    spec: spec.to_owned(),
                });
            }
        };
        let stored: i64 = self
            .conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(self.sql())?;
        if stored == 0 {
            return Err(StoreError::NoRuns {
                path: self.path.clone(),
            });
        }
        if back >= stored {
            return Err(StoreError::NotEnoughRuns {
                spec: text.to_owned(),
                stored: usize::try_from(stored).unwrap_or(usize::MAX),
            });
        }
        self.conn
            .query_row(
                "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1",
                [back],
                |r| r.get(0),
            )
            .map_err(self.sql())
    }

    /// Loads run `id` with all its trials and samples, exactly as written (status derived).
    pub fn load_run(&self, id: i64) -> Result<RunData, StoreError> {
        // One read transaction: a consistent snapshot while another process keeps writing.
        let tx = self.conn.unchecked_transaction().map_err(self.sql())?;
        let raw = tx
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                RawRun::from_row,
            )
            .optional()
            .map_err(self.sql())?
            .ok_or(StoreError::RunNotFound { id })?;
        let meta = raw.into_meta(&self.path, &self.me)?;
        let trials = load_trials(&tx, id, &self.path).map_err(|e| match e {
            Loaded::Sql(e) => StoreError::sqlite(&self.path, e),
            Loaded::Store(e) => e,
        })?;
        Ok(RunData { meta, trials })
    }

    /// How many trials of run `id` succeeded and failed: `(ok, failed)`.
    pub fn trial_counts(&self, id: i64) -> Result<(usize, usize), StoreError> {
        self.require_run(id)?;
        let (ok, failed): (i64, i64) = self
            .conn
            .query_row(
                "SELECT coalesce(sum(status = 'ok'), 0), coalesce(sum(status = 'failed'), 0)
                 FROM trials WHERE run_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.sql())?;
        Ok((
            usize::try_from(ok).unwrap_or(0),
            usize::try_from(failed).unwrap_or(0),
        ))
    }

    fn require_run(&self, id: i64) -> Result<(), StoreError> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map_err(self.sql())?
            .ok_or(StoreError::RunNotFound { id })
    }
}

/// A `runs` row as stored, before JSON columns are decoded.
struct RawRun {
    id: i64,
    origin_id: Option<i64>,
    name: Option<String>,
    workload: String,
    params: String,
    op_unit: String,
    mode: String,
    pin: String,
    pin_placement: Option<String>,
    points: String,
    runs: u32,
    duration_ns: i64,
    warmup_ns: i64,
    variant: Option<String>,
    tags: String,
    started_at: String,
    finished_at: Option<String>,
    status: String,
    env: String,
    warnings: String,
    command_line: String,
    owner: Owner,
    uuid: Option<String>,
}

impl RawRun {
    /// Reads the columns of [`RUN_COLUMNS`], in that order.
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawRun> {
        Ok(RawRun {
            id: r.get(0)?,
            origin_id: r.get(1)?,
            name: r.get(2)?,
            workload: r.get(3)?,
            params: r.get(4)?,
            op_unit: r.get(5)?,
            mode: r.get(6)?,
            pin: r.get(7)?,
            points: r.get(8)?,
            runs: r.get(9)?,
            duration_ns: r.get(10)?,
            warmup_ns: r.get(11)?,
            variant: r.get(12)?,
            tags: r.get(13)?,
            started_at: r.get(14)?,
            finished_at: r.get(15)?,
            status: r.get(16)?,
            env: r.get(17)?,
            warnings: r.get(18)?,
            command_line: r.get(19)?,
            owner: Owner {
                pid: r.get(20)?,
                start_time: r.get::<_, Option<i64>>(21)?.map(u64_from_sql),
                boot_id: r.get(22)?,
            },
            uuid: r.get(23)?,
            pin_placement: r.get(24)?,
        })
    }

    fn into_meta(self, path: &Path, me: &Owner) -> Result<RunMeta, StoreError> {
        let id = self.id;
        let corrupt = |what, detail| StoreError::Corrupt {
            path: path.to_path_buf(),
            id,
            what,
            detail,
        };
        let unknown = |what, value: &str| corrupt(what, format!("unknown value `{value}`"));
        let status =
            RunStatus::parse(&self.status).ok_or_else(|| unknown("status", &self.status))?;
        let uuid = self.uuid.as_deref().unwrap_or_default();
        let uuid = uuid::Uuid::parse_str(uuid).map_err(|e| corrupt("uuid", e.to_string()))?;
        Ok(RunMeta {
            id,
            origin_id: self.origin_id,
            uuid,
            name: self.name,
            workload: self.workload,
            params: from_json(&self.params, "params", &corrupt)?,
            op_unit: self.op_unit,
            mode: mode_from_sql(&self.mode).ok_or_else(|| unknown("mode", &self.mode))?,
            pin: {
                let pin = self.pin_placement.as_deref().unwrap_or(&self.pin);
                pin_from_sql(pin).ok_or_else(|| unknown("pin", pin))?
            },
            points: from_json(&self.points, "points", &corrupt)?,
            runs: self.runs,
            duration: Nanos(u64_from_sql(self.duration_ns)),
            warmup: Nanos(u64_from_sql(self.warmup_ns)),
            variant: self.variant,
            tags: from_json(&self.tags, "tags", &corrupt)?,
            started_at: self.started_at,
            finished_at: self.finished_at,
            status: derive_status(status, &self.owner, me),
            env: from_json(&self.env, "env", &corrupt)?,
            warnings: from_json(&self.warnings, "warnings", &corrupt)?,
            command_line: self.command_line,
        })
    }
}

/// Either kind of failure while loading trials.
enum Loaded {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Loaded {
    fn from(e: rusqlite::Error) -> Loaded {
        Loaded::Sql(e)
    }
}

impl From<StoreError> for Loaded {
    fn from(e: StoreError) -> Loaded {
        Loaded::Store(e)
    }
}

/// The trials of run `run_id` in the order they were added, each with its samples.
fn load_trials(conn: &Connection, run_id: i64, path: &Path) -> Result<Vec<TrialRecord>, Loaded> {
    let corrupt = |what, detail| StoreError::Corrupt {
        path: path.to_path_buf(),
        id: run_id,
        what,
        detail,
    };

    let mut samples: HashMap<i64, Vec<SampleRecord>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT s.trial_id, s.t_ns, s.task_ops FROM samples s JOIN trials t ON t.id = s.trial_id
         WHERE t.run_id = ?1 ORDER BY s.trial_id, s.seq",
    )?;
    let mut rows = stmt.query([run_id])?;
    while let Some(r) = rows.next()? {
        let task_ops: String = r.get(2)?;
        samples.entry(r.get(0)?).or_default().push(SampleRecord {
            t: Nanos(u64_from_sql(r.get(1)?)),
            task_ops: from_json(&task_ops, "sample task_ops", &corrupt)?,
        });
    }

    let mut stmt = conn.prepare_cached(
        "SELECT id, n, idx, started_at, status, failure, window_ns, user_ns, sys_ns, minor_faults,
             major_faults, voluntary_switches, involuntary_switches, block_in, block_out, counters,
             extras, placement, task_ops, steps, clock_window, profile, locks, run_delay_ns, offcpu,
             harness
         FROM trials WHERE run_id = ?1 ORDER BY id",
    )?;
    let mut rows = stmt.query([run_id])?;
    let mut trials = Vec::new();
    while let Some(r) = rows.next()? {
        let trial_id: i64 = r.get(0)?;
        let status: String = r.get(4)?;
        let outcome = match status.as_str() {
            "failed" => TrialOutcome::Failed {
                reason: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
            },
            "ok" => {
                let int = |i: usize| -> Result<u64, Loaded> {
                    let v: Option<i64> = r.get(i)?;
                    let v = v.ok_or_else(|| {
                        corrupt("trial", format!("trial {trial_id} has no column {i}"))
                    })?;
                    Ok(u64_from_sql(v))
                };
                let json = |i: usize| -> Result<String, Loaded> {
                    let v: Option<String> = r.get(i)?;
                    Ok(v.ok_or_else(|| {
                        corrupt("trial", format!("trial {trial_id} has no column {i}"))
                    })?)
                };
                TrialOutcome::Ok(TrialMeasurement {
                    window: Nanos(int(6)?),
                    usage: Usage {
                        user: Nanos(int(7)?),
                        sys: Nanos(int(8)?),
                        minor_faults: int(9)?,
                        major_faults: int(10)?,
                        voluntary_switches: int(11)?,
                        involuntary_switches: int(12)?,
                        block_in: int(13)?,
                        block_out: int(14)?,
                        // NULL before schema version 4, and when not measured.
                        run_delay: r.get::<_, Option<i64>>(23)?.map(|v| Nanos(u64_from_sql(v))),
                    },
                    counters: from_json(&json(15)?, "trial counters", &corrupt)?,
                    extras: from_json(&json(16)?, "trial extras", &corrupt)?,
                    placement: from_json(&json(17)?, "trial placement", &corrupt)?,
                    task_ops: from_json(&json(18)?, "trial task_ops", &corrupt)?,
                    // NULL in trials stored before schema version 2.
                    steps: match r.get::<_, Option<String>>(19)? {
                        Some(text) => from_json(&text, "trial steps", &corrupt)?,
                        None => Vec::new(),
                    },
                    samples: samples.remove(&trial_id).unwrap_or_default(),
                    // NULL before schema version 3, and when not recorded.
                    clock_window: optional_json(r.get(20)?, "trial clock_window", &corrupt)?,
                    profile: optional_json(r.get(21)?, "trial profile", &corrupt)?,
                    locks: optional_json(r.get(22)?, "trial locks", &corrupt)?,
                    // NULL before schema version 6, and when not traced.
                    offcpu: optional_json(r.get(24)?, "trial offcpu", &corrupt)?,
                    // NULL before schema version 7, and for commands.
                    harness: optional_json(r.get(25)?, "trial harness", &corrupt)?,
                })
            }
            other => return Err(corrupt("trial status", format!("unknown value `{other}`")).into()),
        };
        trials.push(TrialRecord {
            n: r.get(1)?,
            index: r.get(2)?,
            started_at: r.get(3)?,
            outcome,
        });
    }
    Ok(trials)
}
