//! Writing runs: begin, one committed transaction per trial, warnings, finish, import.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction: it takes the write lock up front, so two
//! processes writing the same database queue on the busy timeout instead of failing on a
//! read-to-write lock upgrade, and a crash leaves each trial either fully stored or absent.

use std::path::Path;

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::columns::{legacy_pin_name, to_json, u64_to_sql};
use super::liveness::Owner;
use super::{Store, StoreError};
use crate::record::{RunExport, RunMeta, RunStatus, TrialOutcome, TrialRecord};

impl Store {
    /// Stores a new run as `running`, owned by this process, and returns its id. `meta.id`,
    /// `meta.status` and `meta.finished_at` are ignored.
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64, StoreError> {
        let owner = self.me.clone();
        self.write(|w| {
            w.insert_run(&RunRow {
                meta,
                origin_id: meta.origin_id,
                status: RunStatus::Running,
                finished_at: None,
                owner: Some(&owner),
            })
        })
    }

    /// Commits one finished trial of run `run_id`, with its samples, in its own transaction.
    pub fn add_trial(&mut self, run_id: i64, trial: &TrialRecord) -> Result<(), StoreError> {
        self.write(|w| {
            w.require_run(run_id)?;
            w.insert_trial(run_id, trial)
        })
    }

    /// Appends `warnings` to those of run `run_id`.
    pub fn add_warnings(&mut self, run_id: i64, warnings: &[String]) -> Result<(), StoreError> {
        self.write(|w| {
            let stored: Option<String> =
                w.tx.query_row("SELECT warnings FROM runs WHERE id = ?1", [run_id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(w.sql())?;
            let stored = stored.ok_or(StoreError::RunNotFound { id: run_id })?;
            let mut all: Vec<String> =
                super::columns::from_json(&stored, "warnings", &|what, detail| {
                    StoreError::Corrupt {
                        path: w.path.to_path_buf(),
                        id: run_id,
                        what,
                        detail,
                    }
                })?;
            all.extend_from_slice(warnings);
            w.tx.execute(
                "UPDATE runs SET warnings = ?1 WHERE id = ?2",
                params![to_json("warnings", &all)?, run_id],
            )
            .map_err(w.sql())?;
            Ok(())
        })
    }

    /// Raises the planned trials per point of run `run_id` to `runs` and sets `tags` (adding or
    /// replacing each key): `ab` extends its runs this way when the first pairs were too noisy
    /// to decide.
    pub fn extend_plan(
        &mut self,
        run_id: i64,
        runs: u32,
        tags: &[(&str, &str)],
    ) -> Result<(), StoreError> {
        self.write(|w| {
            let stored: Option<String> =
                w.tx.query_row("SELECT tags FROM runs WHERE id = ?1", [run_id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(w.sql())?;
            let stored = stored.ok_or(StoreError::RunNotFound { id: run_id })?;
            let mut all: std::collections::BTreeMap<String, String> =
                super::columns::from_json(&stored, "tags", &|what, detail| StoreError::Corrupt {
                    path: w.path.to_path_buf(),
                    id: run_id,
                    what,
                    detail,
                })?;
            for (key, value) in tags {
                all.insert((*key).to_string(), (*value).to_string());
                w.tx.execute(
                    "INSERT OR REPLACE INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![run_id, key, value],
                )
                .map_err(w.sql())?;
            }
            w.tx.execute(
                "UPDATE runs SET runs = ?1, tags = ?2 WHERE id = ?3",
                params![runs, to_json("tags", &all)?, run_id],
            )
            .map_err(w.sql())?;
            Ok(())
        })
    }

    /// Records how run `run_id` ended (`Complete` or `Interrupted`) and when (RFC 3339 UTC).
    pub fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        finished_at: &str,
    ) -> Result<(), StoreError> {
        self.write(|w| {
            let changed =
                w.tx.execute(
                    "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
                    params![status.as_str(), finished_at, run_id],
                )
                .map_err(w.sql())?;
            if changed == 0 {
                return Err(StoreError::RunNotFound { id: run_id });
            }
            Ok(())
        })
    }

    /// Stores a copy of an exported run, all or nothing, and returns its new id. The copy keeps
    /// the exported status and end time; `origin_id` becomes the exported run's id (or stays what
    /// it was when the export came from a run never stored). It has no owner on this machine, so
    /// an exported `running` run reads `Incomplete`.
    ///
    /// A run no measurement could produce (`validate`) is refused and nothing stored.
    pub fn import(&mut self, export: &RunExport) -> Result<i64, StoreError> {
        super::validate(&export.run).map_err(|detail| StoreError::ImpossibleRun {
            origin: "import".into(),
            detail,
        })?;
        let meta = &export.run.meta;
        let origin_id = if meta.id > 0 {
            Some(meta.id)
        } else {
            meta.origin_id
        };
        self.write(|w| {
            let id = w.insert_run(&RunRow {
                meta,
                origin_id,
                status: meta.status,
                finished_at: meta.finished_at.as_deref(),
                owner: None,
            })?;
            for trial in &export.run.trials {
                w.insert_trial(id, trial)?;
            }
            Ok(id)
        })
    }

    /// Runs `f` in one immediate write transaction, committed when `f` succeeds.
    pub(super) fn write<T>(
        &mut self,
        f: impl FnOnce(&Writer<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::sqlite(path, e))?;
        let w = Writer { tx, path };
        let value = f(&w)?;
        w.tx.commit().map_err(|e| StoreError::sqlite(path, e))?;
        Ok(value)
    }
}

/// What a `runs` row holds beyond the meta it was given.
struct RunRow<'a> {
    meta: &'a RunMeta,
    origin_id: Option<i64>,
    status: RunStatus,
    finished_at: Option<&'a str>,
    owner: Option<&'a Owner>,
}

/// An open write transaction on the database at `path`.
pub(super) struct Writer<'a> {
    pub(super) tx: Transaction<'a>,
    pub(super) path: &'a Path,
}

impl Writer<'_> {
    pub(super) fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| StoreError::sqlite(self.path, e)
    }

    fn require_run(&self, id: i64) -> Result<(), StoreError> {
        let found = self
            .tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map_err(self.sql())?;
        found.ok_or(StoreError::RunNotFound { id })
    }

    fn insert_run(&self, row: &RunRow<'_>) -> Result<i64, StoreError> {
        let meta = row.meta;
        let owner = row.owner.cloned().unwrap_or_default();
        let params_json = to_json("params", &meta.params)?;
        let points = to_json("points", &meta.points)?;
        let tags = to_json("tags", &meta.tags)?;
        let env = to_json("env", &meta.env)?;
        let warnings = to_json("warnings", &meta.warnings)?;
        self.tx
            .prepare_cached(
                "INSERT INTO runs (origin_id, name, workload, params, op_unit, mode, pin, points, runs,
                     duration_ns, warmup_ns, variant, tags, started_at, finished_at, status, env,
                     warnings, command_line, owner_pid, owner_start_time, owner_boot_id, uuid,
                     pin_placement)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    row.origin_id,
                    meta.name,
                    meta.workload,
                    params_json,
                    meta.op_unit,
                    meta.mode.to_string(),
                    legacy_pin_name(&meta.pin),
                    points,
                    meta.runs,
                    u64_to_sql(meta.duration.0),
                    u64_to_sql(meta.warmup.0),
                    meta.variant,
                    tags,
                    meta.started_at,
                    row.finished_at,
                    row.status.as_str(),
                    env,
                    warnings,
                    meta.command_line,
                    owner.pid,
                    owner.start_time.map(u64_to_sql),
                    owner.boot_id,
                    meta.uuid.hyphenated().to_string(),
                    meta.pin.to_string(),
                ])
            })
            .map_err(self.sql())?;
        let id = self.tx.last_insert_rowid();
        let mut tag = self
            .tx
            .prepare_cached("INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)")
            .map_err(self.sql())?;
        for (key, value) in &meta.tags {
            tag.execute(params![id, key, value]).map_err(self.sql())?;
        }
        let mut param = self
            .tx
            .prepare_cached("INSERT INTO run_params (run_id, key, value) VALUES (?1, ?2, ?3)")
            .map_err(self.sql())?;
        for (key, value) in &meta.params {
            param.execute(params![id, key, value]).map_err(self.sql())?;
        }
        Ok(id)
    }

    fn insert_trial(&self, run_id: i64, trial: &TrialRecord) -> Result<(), StoreError> {
        let m = match &trial.outcome {
            TrialOutcome::Failed { reason } => {
                self.tx
                    .prepare_cached(
                        "INSERT INTO trials (run_id, n, idx, started_at, status, failure)
                         VALUES (?1, ?2, ?3, ?4, 'failed', ?5)",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            run_id,
                            trial.n,
                            trial.index,
                            trial.started_at,
                            reason
                        ])
                    })
                    .map_err(self.sql())?;
                return Ok(());
            }
            TrialOutcome::Ok(m) => m,
        };
        let u = &m.usage;
        let ops = m.task_ops.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let counters = to_json("trial counters", &m.counters)?;
        let extras = to_json("trial extras", &m.extras)?;
        let placement = to_json("trial placement", &m.placement)?;
        let task_ops = to_json("trial task_ops", &m.task_ops)?;
        let steps = to_json("trial steps", &m.steps)?;
        let clock_window = m
            .clock_window
            .as_ref()
            .map(|v| to_json("trial clock_window", v))
            .transpose()?;
        let profile = m
            .profile
            .as_ref()
            .map(|v| to_json("trial profile", v))
            .transpose()?;
        let locks = m
            .locks
            .as_ref()
            .map(|v| to_json("trial locks", v))
            .transpose()?;
        let offcpu = m
            .offcpu
            .as_ref()
            .map(|v| to_json("trial offcpu", v))
            .transpose()?;
        let harness = m
            .harness
            .as_ref()
            .map(|v| to_json("trial harness", v))
            .transpose()?;
        self.tx
            .prepare_cached(
                "INSERT INTO trials (run_id, n, idx, started_at, status, window_ns, ops, user_ns, sys_ns,
                     minor_faults, major_faults, voluntary_switches, involuntary_switches, block_in,
                     block_out, counters, extras, placement, task_ops, steps, clock_window, profile, locks,
                     run_delay_ns, offcpu, harness)
                 VALUES (?1, ?2, ?3, ?4, 'ok', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    trial.n,
                    trial.index,
                    trial.started_at,
                    u64_to_sql(m.window.0),
                    u64_to_sql(ops),
                    u64_to_sql(u.user.0),
                    u64_to_sql(u.sys.0),
                    u64_to_sql(u.minor_faults),
                    u64_to_sql(u.major_faults),
                    u64_to_sql(u.voluntary_switches),
                    u64_to_sql(u.involuntary_switches),
                    u64_to_sql(u.block_in),
                    u64_to_sql(u.block_out),
                    counters,
                    extras,
                    placement,
                    task_ops,
                    steps,
                    clock_window,
                    profile,
                    locks,
                    u.run_delay.map(|d| u64_to_sql(d.0)),
                    offcpu,
                    harness,
                ])
            })
            .map_err(self.sql())?;
        let trial_id = self.tx.last_insert_rowid();
        let mut sample = self
            .tx
            .prepare_cached(
                "INSERT INTO samples (trial_id, seq, t_ns, task_ops) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(self.sql())?;
        for (seq, s) in m.samples.iter().enumerate() {
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            sample
                .execute(params![
                    trial_id,
                    seq,
                    u64_to_sql(s.t.0),
                    to_json("sample task_ops", &s.task_ops)?
                ])
                .map_err(self.sql())?;
        }
        Ok(())
    }
}
