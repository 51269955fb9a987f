//! Writing runs: begin, one committed transaction per trial, warnings, finish, import.
//!
//! Every write is one write transaction (`backend`): on SQLite it takes the write lock up
//! front, so two processes writing the same database queue on the busy timeout instead of
//! failing on a read-to-write lock upgrade; on either backend a crash leaves each trial either
//! fully stored or absent. On PostgreSQL, `begin_run` also takes the run's lock for the
//! connection's life (see `liveness`), and `finish_run` gives it back.

use super::backend::{Tx, vals};
use super::columns::{legacy_pin_name, to_json, u64_to_sql};
use super::liveness::Owner;
use crate::error::StoreError;
use crate::handle::Store;
use model::record::{RunExport, RunMeta, RunStatus, TrialOutcome, TrialRecord};

impl Store {
    /// Stores a new run as `running`, owned by this process, and returns its id. `meta.id`,
    /// `meta.status` and `meta.finished_at` are ignored.
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64, StoreError> {
        let owner = self.me.clone();
        self.write(|w| {
            let id = w.insert_run(&RunRow {
                meta,
                origin_id: meta.origin_id,
                status: RunStatus::Running,
                finished_at: None,
                owner: Some(&owner),
            })?;
            if w.tx.is_postgres() {
                // Session-level: held past this transaction, until `finish_run` or the
                // connection ends; its key and holder go in the row (`liveness`).
                let (key, pid) = super::liveness::take_lock(w.tx, super::backend::RUN_LOCK_CLASS)?;
                w.tx.execute(
                    "UPDATE runs SET lock_key = ?2, lock_pid = ?3 WHERE id = ?1",
                    vals![id, key, pid],
                )?;
            }
            Ok(id)
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
            let stored =
                w.tx.query_opt("SELECT warnings FROM runs WHERE id = ?1", vals![run_id])?
                    .ok_or(StoreError::RunNotFound { id: run_id })?
                    .text(0)?;
            let mut all: Vec<String> =
                super::columns::from_json(&stored, "warnings", &w.corrupt(run_id))?;
            all.extend_from_slice(warnings);
            w.tx.execute(
                "UPDATE runs SET warnings = ?1 WHERE id = ?2",
                vals![to_json("warnings", &all)?, run_id],
            )?;
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
            let stored =
                w.tx.query_opt("SELECT tags FROM runs WHERE id = ?1", vals![run_id])?
                    .ok_or(StoreError::RunNotFound { id: run_id })?
                    .text(0)?;
            let mut all: std::collections::BTreeMap<String, String> =
                super::columns::from_json(&stored, "tags", &w.corrupt(run_id))?;
            for (key, value) in tags {
                all.insert((*key).to_string(), (*value).to_string());
                w.tx.execute(
                    "INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)
                     ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
                    vals![run_id, *key, *value],
                )?;
            }
            w.tx.execute(
                "UPDATE runs SET runs = ?1, tags = ?2 WHERE id = ?3",
                vals![runs, to_json("tags", &all)?, run_id],
            )?;
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
            let changed = w.tx.execute(
                "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
                vals![status.as_str(), finished_at, run_id],
            )?;
            if changed == 0 {
                return Err(StoreError::RunNotFound { id: run_id });
            }
            if w.tx.is_postgres() {
                let key =
                    w.tx.query_one("SELECT lock_key FROM runs WHERE id = ?1", vals![run_id])?
                        .opt_int(0)?;
                if let Some(key) = key {
                    super::liveness::release_lock(w.tx, super::backend::RUN_LOCK_CLASS, key)?;
                }
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
        crate::validation::validate(&export.run).map_err(|detail| StoreError::ImpossibleRun {
            origin: "import".into(),
            detail,
        })?;
        self.write(|w| w.insert_copy(&export.run))
    }

    /// Runs `f` in one write transaction, committed when `f` succeeds.
    pub(super) fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Writer<'_, '_, '_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let shown = self.location.to_string();
        self.db
            .write(&self.location, |tx| f(&mut Writer { tx, shown: &shown }))
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

/// An open write transaction on the store shown as `shown`.
pub(super) struct Writer<'t, 'x, 'c> {
    pub(super) tx: &'t mut Tx<'x, 'c>,
    shown: &'t str,
}

impl Writer<'_, '_, '_> {
    fn corrupt(&self, id: i64) -> impl Fn(&'static str, String) -> StoreError + '_ {
        move |what, detail| StoreError::Corrupt {
            db: self.shown.to_owned(),
            id,
            what,
            detail,
        }
    }

    fn require_run(&mut self, id: i64) -> Result<(), StoreError> {
        self.tx
            .query_opt("SELECT 1 FROM runs WHERE id = ?1", vals![id])?
            .map(drop)
            .ok_or(StoreError::RunNotFound { id })
    }

    /// Stores `run` (already validated) as a copy: its status, end time and UUID kept, its id
    /// becoming `origin_id`, no owner here. Returns the new id.
    pub(super) fn insert_copy(&mut self, run: &model::record::RunData) -> Result<i64, StoreError> {
        let meta = &run.meta;
        let origin_id = if meta.id > 0 {
            Some(meta.id)
        } else {
            meta.origin_id
        };
        let id = self.insert_run(&RunRow {
            meta,
            origin_id,
            status: meta.status,
            finished_at: meta.finished_at.as_deref(),
            owner: None,
        })?;
        for trial in &run.trials {
            self.insert_trial(id, trial)?;
        }
        Ok(id)
    }

    fn insert_run(&mut self, row: &RunRow<'_>) -> Result<i64, StoreError> {
        let meta = row.meta;
        let owner = row.owner.cloned().unwrap_or_default();
        let id = self
            .tx
            .query_one(
                "INSERT INTO runs (origin_id, name, workload, params, op_unit, mode, pin, points, runs,
                     duration_ns, warmup_ns, variant, tags, started_at, finished_at, status, env,
                     warnings, command_line, owner_pid, owner_start_time, owner_boot_id, uuid,
                     pin_placement, membind)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)
                 RETURNING id",
                vals![
                    row.origin_id,
                    meta.name.as_deref(),
                    meta.workload.as_str(),
                    to_json("params", &meta.params)?,
                    meta.op_unit.as_str(),
                    meta.mode.to_string(),
                    legacy_pin_name(&meta.pin),
                    to_json("points", &meta.points)?,
                    meta.runs,
                    u64_to_sql(meta.duration.0),
                    u64_to_sql(meta.warmup.0),
                    meta.variant.as_deref(),
                    to_json("tags", &meta.tags)?,
                    meta.started_at.as_str(),
                    row.finished_at,
                    row.status.as_str(),
                    to_json("env", &meta.env)?,
                    to_json("warnings", &meta.warnings)?,
                    meta.command_line.as_str(),
                    owner.pid,
                    owner.start_time.map(u64_to_sql),
                    owner.boot_id,
                    meta.uuid.hyphenated().to_string(),
                    meta.pin.to_string(),
                    meta.membind.as_str(),
                ],
            )?
            .int(0)?;
        for (key, value) in &meta.tags {
            self.tx.execute(
                "INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                vals![id, key, value],
            )?;
        }
        for (key, value) in &meta.params {
            self.tx.execute(
                "INSERT INTO run_params (run_id, key, value) VALUES (?1, ?2, ?3)",
                vals![id, key, value],
            )?;
        }
        Ok(id)
    }

    fn insert_trial(&mut self, run_id: i64, trial: &TrialRecord) -> Result<(), StoreError> {
        let m = match &trial.outcome {
            TrialOutcome::Failed { reason } => {
                self.tx.execute(
                    "INSERT INTO trials (run_id, n, idx, started_at, status, failure)
                     VALUES (?1, ?2, ?3, ?4, 'failed', ?5)",
                    vals![
                        run_id,
                        trial.n,
                        trial.index,
                        trial.started_at.as_str(),
                        reason.as_str()
                    ],
                )?;
                return Ok(());
            }
            TrialOutcome::Ok(m) => m,
        };
        let u = &m.usage;
        let ops = m.task_ops.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let trial_id = self
            .tx
            .query_one(
                "INSERT INTO trials (run_id, n, idx, started_at, status, window_ns, ops, user_ns, sys_ns,
                     minor_faults, major_faults, voluntary_switches, involuntary_switches, block_in,
                     block_out, counters, extras, placement, task_ops, steps, clock_window, profile, locks,
                     run_delay_ns, offcpu, harness, metrics, max_rss_kib)
                 VALUES (?1, ?2, ?3, ?4, 'ok', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)
                 RETURNING id",
                vals![
                    run_id,
                    trial.n,
                    trial.index,
                    trial.started_at.as_str(),
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
                    to_json("trial counters", &m.counters)?,
                    to_json("trial extras", &m.extras)?,
                    to_json("trial placement", &m.placement)?,
                    to_json("trial task_ops", &m.task_ops)?,
                    to_json("trial steps", &m.steps)?,
                    m.clock_window.as_ref().map(|v| to_json("trial clock_window", v)).transpose()?,
                    m.profile.as_ref().map(|v| to_json("trial profile", v)).transpose()?,
                    m.locks.as_ref().map(|v| to_json("trial locks", v)).transpose()?,
                    u.run_delay.map(|d| u64_to_sql(d.0)),
                    m.offcpu.as_ref().map(|v| to_json("trial offcpu", v)).transpose()?,
                    m.harness.as_ref().map(|v| to_json("trial harness", v)).transpose()?,
                    m.reported.as_ref().map(|v| to_json("trial metrics", v)).transpose()?,
                    u.max_rss_kib.map(u64_to_sql),
                ],
            )?
            .int(0)?;
        for (seq, s) in m.samples.iter().enumerate() {
            let seq = i64::try_from(seq).unwrap_or(i64::MAX);
            self.tx.execute(
                "INSERT INTO samples (trial_id, seq, t_ns, task_ops) VALUES (?1, ?2, ?3, ?4)",
                vals![
                    trial_id,
                    seq,
                    u64_to_sql(s.t.0),
                    to_json("sample task_ops", &s.task_ops)?
                ],
            )?;
        }
        Ok(())
    }
}
