//! Reading runs back: listing with filters, resolving `RUN` specs, loading a whole run.
//!
//! Every `running` run is shown with its derived status (see `liveness`), so a run whose process
//! died reads `incomplete` everywhere. Each call reads one consistent snapshot.

use std::collections::HashMap;

use super::backend::{Row, Tx, Value, vals};
use super::columns::{from_json, mode_from_sql, optional_json, pin_from_sql, u64_from_sql};
use super::liveness::{Liveness, Owner};
use crate::error::StoreError;
use crate::handle::Store;
use model::record::{
    Membind, Nanos, RunData, RunMeta, RunStatus, SampleRecord, TrialMeasurement, TrialOutcome,
    TrialRecord, Usage,
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
    /// Only runs measured on this host (its fingerprint's host name).
    pub host: Option<String>,
    /// Only runs measured on a machine of this class (see [`model::env::MachineClass`]).
    pub host_class: Option<String>,
}

/// Runs loaded per round of queries by [`Store::load_runs`] (a statement's placeholders).
const LOAD_CHUNK: usize = 500;

/// `?1, ?2, … ?n`.
fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

const RUN_COLUMNS: &str = "id, origin_id, name, workload, params, op_unit, mode, pin, points, runs,
    duration_ns, warmup_ns, variant, tags, started_at, finished_at, status, env, warnings,
    command_line, owner_pid, owner_start_time, owner_boot_id, uuid, pin_placement, membind";

impl Store {
    /// The runs matching `filter`, oldest first (by id), with derived status.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunMeta>, StoreError> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE TRUE");
        let mut values: Vec<Value> = Vec::new();
        let mut bind = |v: &str| {
            values.push(Value::from(v));
            format!("?{}", values.len())
        };
        if let Some(workload) = &filter.workload {
            let p = bind(workload);
            sql.push_str(&format!(" AND r.workload = {p}"));
        }
        if let Some(variant) = &filter.variant {
            let p = bind(variant);
            sql.push_str(&format!(" AND r.variant = {p}"));
        }
        for (table, pairs) in [("run_tags", &filter.tags), ("run_params", &filter.params)] {
            for (key, value) in pairs {
                let k = bind(key);
                let v = bind(value);
                sql.push_str(&format!(
                    " AND EXISTS (SELECT 1 FROM {table} k WHERE k.run_id = r.id AND k.key = {k} AND k.value = {v})"
                ));
            }
        }
        sql.push_str(" ORDER BY r.id");
        let (raws, live) = self.db.read(&self.location, |tx| {
            let live = self.liveness(tx)?;
            let rows = tx.query(&sql, &values)?;
            let raws = rows
                .iter()
                .map(RawRun::from_row)
                .collect::<Result<Vec<_>, _>>()?;
            Ok((raws, live))
        })?;
        let shown = self.shown();
        let mut runs = Vec::with_capacity(raws.len());
        for raw in raws {
            let meta = raw.into_meta(&shown, &live)?;
            if filter.matches_outside_sql(&meta) {
                runs.push(meta);
            }
        }
        Ok(runs)
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
        let (stored, id) = self.db.read(&self.location, |tx| {
            let stored = tx.query_one("SELECT count(*) FROM runs", &[])?.int(0)?;
            let id = tx
                .query_opt(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT ?1 OFFSET ?2",
                    vals![1i64, back],
                )?
                .map(|r| r.int(0))
                .transpose()?;
            Ok((stored, id))
        })?;
        if stored == 0 {
            return Err(StoreError::NoRuns { db: self.shown() });
        }
        id.ok_or_else(|| StoreError::NotEnoughRuns {
            spec: text.to_owned(),
            stored: usize::try_from(stored).unwrap_or(usize::MAX),
        })
    }

    /// Loads run `id` with all its trials and samples, exactly as written (status derived).
    pub fn load_run(&self, id: i64) -> Result<RunData, StoreError> {
        let mut runs = self.load_runs(&[id])?;
        runs.pop().ok_or(StoreError::RunNotFound { id })
    }

    /// Loads the runs `ids`, in that order, as [`Store::load_run`] does each, in one snapshot
    /// and a few queries per [`LOAD_CHUNK`] runs (a history of hundreds of runs over a network
    /// would otherwise wait for three round trips per run).
    pub fn load_runs(&self, ids: &[i64]) -> Result<Vec<RunData>, StoreError> {
        let shown = self.shown();
        // One read transaction: a consistent snapshot while another process keeps writing.
        self.db.read(&self.location, |tx| {
            let live = self.liveness(tx)?;
            let mut out = Vec::with_capacity(ids.len());
            for chunk in ids.chunks(LOAD_CHUNK) {
                let list = placeholders(chunk.len());
                let params: Vec<Value> = chunk.iter().map(|&id| Value::Int(id)).collect();
                let mut metas: HashMap<i64, RunMeta> = HashMap::with_capacity(chunk.len());
                for row in tx.query(
                    &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id IN ({list})"),
                    &params,
                )? {
                    let meta = RawRun::from_row(&row)?.into_meta(&shown, &live)?;
                    metas.insert(meta.id, meta);
                }
                let mut trials = load_trials(tx, &list, &params, &shown)?;
                for &id in chunk {
                    let meta = metas
                        .get(&id)
                        .cloned()
                        .ok_or(StoreError::RunNotFound { id })?;
                    let trials = trials.remove(&id).unwrap_or_default();
                    out.push(RunData { meta, trials });
                }
            }
            Ok(out)
        })
    }

    /// The id of the run with this UUID (the oldest, when an import stored it twice).
    pub fn find_uuid(&self, uuid: &uuid::Uuid) -> Result<Option<i64>, StoreError> {
        self.db.read(&self.location, |tx| {
            tx.query_opt(
                "SELECT id FROM runs WHERE uuid = ?1 ORDER BY id LIMIT 1",
                vals![uuid.hyphenated().to_string()],
            )?
            .map(|r| r.int(0))
            .transpose()
        })
    }

    /// How many trials of run `id` succeeded and failed: `(ok, failed)`.
    pub fn trial_counts(&self, id: i64) -> Result<(usize, usize), StoreError> {
        self.require_run(id)?;
        let (ok, failed) = self.db.read(&self.location, |tx| {
            let r = tx.query_one(
                "SELECT count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = 'failed')
                 FROM trials WHERE run_id = ?1",
                vals![id],
            )?;
            Ok((r.int(0)?, r.int(1)?))
        })?;
        Ok((
            usize::try_from(ok).unwrap_or(0),
            usize::try_from(failed).unwrap_or(0),
        ))
    }

    /// `(ok, failed)` trial counts of every run, by id (runs without trials are absent): one
    /// query for a whole list.
    pub fn all_trial_counts(&self) -> Result<HashMap<i64, (usize, usize)>, StoreError> {
        self.db.read(&self.location, |tx| {
            let rows = tx.query(
                "SELECT run_id, count(*) FILTER (WHERE status = 'ok'),
                     count(*) FILTER (WHERE status = 'failed')
                 FROM trials GROUP BY run_id",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let n = |i| r.int(i).map(|v| usize::try_from(v).unwrap_or(0));
                    Ok((r.int(0)?, (n(1)?, n(2)?)))
                })
                .collect()
        })
    }

    pub(super) fn require_run(&self, id: i64) -> Result<(), StoreError> {
        self.db
            .read(&self.location, |tx| {
                tx.query_opt("SELECT 1 FROM runs WHERE id = ?1", vals![id])
            })?
            .map(drop)
            .ok_or(StoreError::RunNotFound { id })
    }

    /// How this reader tells whether a `running` run's owner is alive: by its process on
    /// SQLite, by its connection's lock on PostgreSQL (read in the same snapshot).
    fn liveness(&self, tx: &mut Tx<'_, '_>) -> Result<Liveness, StoreError> {
        if tx.is_postgres() {
            Ok(Liveness::Locks(crate::liveness::live_runs(tx)?))
        } else {
            Ok(Liveness::Processes(self.me.clone()))
        }
    }
}

impl RunFilter {
    /// The conditions on the fingerprint (JSON in the row), checked once decoded.
    fn matches_outside_sql(&self, meta: &RunMeta) -> bool {
        let command = || {
            self.command_contains.as_ref().is_none_or(|text| {
                meta.workload == "cmd"
                    && meta
                        .params
                        .get("cmd")
                        .is_some_and(|c| c.contains(text.as_str()))
            })
        };
        self.host.as_ref().is_none_or(|h| *h == meta.env.hostname)
            && self
                .host_class
                .as_ref()
                .is_none_or(|c| *c == model::env::MachineClass::of(&meta.env).to_string())
            && command()
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
    membind: Option<String>,
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
    fn from_row(r: &Row) -> Result<RawRun, StoreError> {
        Ok(RawRun {
            id: r.int(0)?,
            origin_id: r.opt_int(1)?,
            name: r.opt_text(2)?,
            workload: r.text(3)?,
            params: r.text(4)?,
            op_unit: r.text(5)?,
            mode: r.text(6)?,
            pin: r.text(7)?,
            points: r.text(8)?,
            runs: r.u32(9)?,
            duration_ns: r.int(10)?,
            warmup_ns: r.int(11)?,
            variant: r.opt_text(12)?,
            tags: r.text(13)?,
            started_at: r.text(14)?,
            finished_at: r.opt_text(15)?,
            status: r.text(16)?,
            env: r.text(17)?,
            warnings: r.text(18)?,
            command_line: r.text(19)?,
            owner: Owner {
                pid: r.opt_int(20)?,
                start_time: r.opt_int(21)?.map(u64_from_sql),
                boot_id: r.opt_text(22)?,
            },
            uuid: r.opt_text(23)?,
            pin_placement: r.opt_text(24)?,
            membind: r.opt_text(25)?,
        })
    }

    fn into_meta(self, shown: &str, live: &Liveness) -> Result<RunMeta, StoreError> {
        let id = self.id;
        let corrupt = |what, detail| StoreError::Corrupt {
            db: shown.to_owned(),
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
            membind: match self.membind.as_deref() {
                None => Membind::FirstTouch,
                Some(m) => m.parse().map_err(|_| unknown("membind", m))?,
            },
            points: from_json(&self.points, "points", &corrupt)?,
            runs: self.runs,
            duration: Nanos(u64_from_sql(self.duration_ns)),
            warmup: Nanos(u64_from_sql(self.warmup_ns)),
            variant: self.variant,
            tags: from_json(&self.tags, "tags", &corrupt)?,
            started_at: self.started_at,
            finished_at: self.finished_at,
            status: live.derive(status, id, &self.owner),
            env: from_json(&self.env, "env", &corrupt)?,
            warnings: from_json(&self.warnings, "warnings", &corrupt)?,
            command_line: self.command_line,
        })
    }
}

/// The trials of each run whose id is among `params` (bound to the placeholders `list`), each
/// run's in the order they were added, each with its samples; by run id.
fn load_trials(
    tx: &mut Tx<'_, '_>,
    list: &str,
    params: &[Value],
    shown: &str,
) -> Result<HashMap<i64, Vec<TrialRecord>>, StoreError> {
    let corrupt_in = |run_id: i64| {
        move |what, detail| StoreError::Corrupt {
            db: shown.to_owned(),
            id: run_id,
            what,
            detail,
        }
    };

    let mut samples: HashMap<i64, Vec<SampleRecord>> = HashMap::new();
    let rows = tx.query(
        &format!(
            "SELECT s.trial_id, s.t_ns, s.task_ops, t.run_id FROM samples s
             JOIN trials t ON t.id = s.trial_id
             WHERE t.run_id IN ({list}) ORDER BY s.trial_id, s.seq"
        ),
        params,
    )?;
    for r in &rows {
        let corrupt = corrupt_in(r.int(3)?);
        samples.entry(r.int(0)?).or_default().push(SampleRecord {
            t: Nanos(u64_from_sql(r.int(1)?)),
            task_ops: from_json(&r.text(2)?, "sample task_ops", &corrupt)?,
        });
    }

    let rows = tx.query(
        &format!(
            "SELECT id, n, idx, started_at, status, failure, window_ns, user_ns, sys_ns,
                 minor_faults, major_faults, voluntary_switches, involuntary_switches, block_in,
                 block_out, counters, extras, placement, task_ops, steps, clock_window, profile,
                 locks, run_delay_ns, offcpu, harness, run_id, metrics, max_rss_kib
             FROM trials WHERE run_id IN ({list}) ORDER BY id"
        ),
        params,
    )?;
    let mut trials: HashMap<i64, Vec<TrialRecord>> = HashMap::new();
    for r in &rows {
        let run_id = r.int(26)?;
        let corrupt = corrupt_in(run_id);
        let trial_id = r.int(0)?;
        let status = r.text(4)?;
        let outcome = match status.as_str() {
            "failed" => TrialOutcome::Failed {
                reason: r.opt_text(5)?.unwrap_or_default(),
            },
            "ok" => {
                let missing =
                    |i: usize| corrupt("trial", format!("trial {trial_id} has no column {i}"));
                let int = |i: usize| -> Result<u64, StoreError> {
                    r.opt_int(i)?.map(u64_from_sql).ok_or_else(|| missing(i))
                };
                let json = |i: usize| -> Result<String, StoreError> {
                    r.opt_text(i)?.ok_or_else(|| missing(i))
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
                        run_delay: r.opt_int(23)?.map(|v| Nanos(u64_from_sql(v))),
                        // NULL before schema version 15, and when not measured.
                        max_rss_kib: r.opt_int(28)?.map(u64_from_sql),
                    },
                    counters: from_json(&json(15)?, "trial counters", &corrupt)?,
                    extras: from_json(&json(16)?, "trial extras", &corrupt)?,
                    placement: from_json(&json(17)?, "trial placement", &corrupt)?,
                    task_ops: from_json(&json(18)?, "trial task_ops", &corrupt)?,
                    // NULL in trials stored before schema version 2.
                    steps: match r.opt_text(19)? {
                        Some(text) => from_json(&text, "trial steps", &corrupt)?,
                        None => Vec::new(),
                    },
                    samples: samples.remove(&trial_id).unwrap_or_default(),
                    // NULL before schema version 3, and when not recorded.
                    clock_window: optional_json(r.opt_text(20)?, "trial clock_window", &corrupt)?,
                    profile: optional_json(r.opt_text(21)?, "trial profile", &corrupt)?,
                    locks: optional_json(r.opt_text(22)?, "trial locks", &corrupt)?,
                    // NULL before schema version 6, and when not traced.
                    offcpu: optional_json(r.opt_text(24)?, "trial offcpu", &corrupt)?,
                    // NULL before schema version 7, and for commands.
                    harness: optional_json(r.opt_text(25)?, "trial harness", &corrupt)?,
                    // NULL before schema version 12, and without --metric.
                    reported: optional_json(r.opt_text(27)?, "trial metrics", &corrupt)?,
                })
            }
            other => return Err(corrupt("trial status", format!("unknown value `{other}`"))),
        };
        trials.entry(run_id).or_default().push(TrialRecord {
            n: r.u32(1)?,
            index: r.u32(2)?,
            started_at: r.text(3)?,
            outcome,
        });
    }
    Ok(trials)
}
