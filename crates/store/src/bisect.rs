//! Bisections (`scalelab bisect`): what is bisected, the commits of its range and the verdict of
//! each step, so that `bisect --resume` continues where a Ctrl-C or a crash stopped it and
//! `report --bisect` shows it.
//!
//! Three tables (schema version 9): `bisects` (one row per bisection: its settings as JSON, its
//! ends, its status and its owner, the process that drives it), `bisect_commits` (the range in
//! first-parent order, position 0 the good end) and `bisect_steps` (step 0 the ends'
//! confirmation, then one row per commit tested: its verdict, why, the runs measured and the
//! build's log). A step's measurements are ordinary runs (tagged `bisect=ID`, `commit=HASH`);
//! only their ids are kept here, and every figure is recomputed from them.
//!
//! A step is written twice: as `measuring` before its build, and with its verdict and runs in
//! one transaction once decided — so a step is either decided with all its runs, or is redone
//! by `--resume`. Ids are assigned here (one more than the largest) rather than by an
//! auto-increment, which keeps the SQL portable.

use super::backend::{Row, vals};
use super::columns::{u64_from_sql, u64_to_sql};
use super::liveness::{self, Owner};
use crate::error::StoreError;
use crate::handle::Store;

pub use model::bisection::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};

impl Store {
    /// Stores a new bisection, owned by this process, with its range (the good end first, the
    /// bad end last); returns its id.
    pub fn begin_bisect(
        &mut self,
        spec: &str,
        commits: &[BisectCommit],
        started_at: &str,
    ) -> Result<i64, StoreError> {
        let owner = self.me.clone();
        self.write(|w| {
            let id =
                w.tx.query_one("SELECT COALESCE(MAX(id), 0) + 1 FROM bisects", &[])?
                    .int(0)?;
            let good = commits.first().map_or("", |c| c.hash.as_str());
            let bad = commits.last().map_or("", |c| c.hash.as_str());
            w.tx.execute(
                "INSERT INTO bisects (id, spec, good, bad, status, started_at, owner_pid,
                     owner_start_time, owner_boot_id)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8)",
                vals![
                    id,
                    spec,
                    good,
                    bad,
                    started_at,
                    owner.pid,
                    owner.start_time.map(u64_to_sql),
                    owner.boot_id.as_ref()
                ],
            )?;
            for c in commits {
                w.tx.execute(
                    "INSERT INTO bisect_commits (bisect_id, position, hash, subject)
                     VALUES (?1, ?2, ?3, ?4)",
                    vals![id, c.position, &c.hash, &c.subject],
                )?;
            }
            Ok(id)
        })
    }

    /// Makes this process the owner of bisection `id` (to resume it), unless another live
    /// process owns it.
    pub fn claim_bisect(&mut self, id: i64) -> Result<(), StoreError> {
        let me = self.me.clone();
        let record = self.bisect(id)?;
        if record.status == BisectStatus::Running && record.owner_alive {
            return Err(StoreError::BisectBusy { id });
        }
        self.write(|w| {
            w.tx.execute(
                "UPDATE bisects SET owner_pid = ?1, owner_start_time = ?2, owner_boot_id = ?3
                 WHERE id = ?4",
                vals![
                    me.pid,
                    me.start_time.map(u64_to_sql),
                    me.boot_id.as_ref(),
                    id
                ],
            )?;
            Ok(())
        })
    }

    /// Writes step `step.step` of bisection `id`, replacing what was stored for that step.
    pub fn put_bisect_step(&mut self, id: i64, step: &BisectStep) -> Result<(), StoreError> {
        self.write(|w| {
            w.tx.execute(
                "DELETE FROM bisect_steps WHERE bisect_id = ?1 AND step = ?2",
                vals![id, step.step],
            )?;
            w.tx.execute(
                "INSERT INTO bisect_steps (bisect_id, step, position, verdict, reason, run_good,
                     run_commit, run_bad, build_log, build_ns, elapsed_ns, started_at,
                     finished_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                vals![
                    id,
                    step.step,
                    step.position,
                    step.verdict.as_str(),
                    step.reason.as_ref(),
                    step.run_good,
                    step.run_commit,
                    step.run_bad,
                    step.build_log.as_ref(),
                    step.build_ns.map(u64_to_sql),
                    step.elapsed_ns.map(u64_to_sql),
                    &step.started_at,
                    step.finished_at.as_ref(),
                ],
            )?;
            Ok(())
        })
    }

    /// Records how bisection `id` ended (or that it runs again, `Running`) and when.
    pub fn set_bisect_status(
        &mut self,
        id: i64,
        status: BisectStatus,
        finished_at: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write(|w| {
            let changed = w.tx.execute(
                "UPDATE bisects SET status = ?1, finished_at = ?2 WHERE id = ?3",
                vals![status.as_str(), finished_at, id],
            )?;
            if changed == 0 {
                return Err(StoreError::BisectNotFound { id });
            }
            Ok(())
        })
    }

    /// Bisection `id`, with its range and steps.
    pub fn bisect(&self, id: i64) -> Result<BisectRecord, StoreError> {
        let corrupt = |what: &'static str, detail: String| StoreError::CorruptBisect {
            db: self.location.to_string(),
            id,
            what,
            detail,
        };
        let (head, commits, raw_steps) = self.db.read(&self.location, |tx| {
            let head = tx.query_opt(
                "SELECT spec, good, bad, status, started_at, finished_at, owner_pid,
                     owner_start_time, owner_boot_id
                 FROM bisects WHERE id = ?1",
                vals![id],
            )?;
            let commits = tx.query(
                "SELECT position, hash, subject FROM bisect_commits WHERE bisect_id = ?1
                 ORDER BY position",
                vals![id],
            )?;
            let steps = tx.query(
                "SELECT step, position, verdict, reason, run_good, run_commit, run_bad,
                     build_log, build_ns, elapsed_ns, started_at, finished_at
                 FROM bisect_steps WHERE bisect_id = ?1 ORDER BY step",
                vals![id],
            )?;
            Ok((head, commits, steps))
        })?;
        let r = head.ok_or(StoreError::BisectNotFound { id })?;
        let owner = Owner {
            pid: r.opt_int(6)?,
            start_time: r.opt_int(7)?.map(u64_from_sql),
            boot_id: r.opt_text(8)?,
        };
        let status = r.text(3)?;
        let status =
            BisectStatus::parse(&status).ok_or_else(|| corrupt("status", status.clone()))?;
        let commits = commits
            .iter()
            .map(|c| {
                Ok(BisectCommit {
                    position: c.u32(0)?,
                    hash: c.text(1)?,
                    subject: c.text(2)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let steps = raw_steps
            .iter()
            .map(|row| {
                let raw = RawStep::from_row(row)?;
                raw.into_step().map_err(|v| corrupt("step verdict", v))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BisectRecord {
            id,
            spec: r.text(0)?,
            good: r.text(1)?,
            bad: r.text(2)?,
            status,
            started_at: r.text(4)?,
            finished_at: r.opt_text(5)?,
            owner_alive: !liveness::is_gone(&owner, &self.me),
            commits,
            steps,
        })
    }

    /// The ids of every stored bisection, oldest first.
    pub fn bisect_ids(&self) -> Result<Vec<i64>, StoreError> {
        self.db.read(&self.location, |tx| {
            tx.query("SELECT id FROM bisects ORDER BY id", &[])?
                .iter()
                .map(|r| r.int(0))
                .collect()
        })
    }
}

/// A `bisect_steps` row as read, its verdict not yet checked.
struct RawStep {
    step: BisectStep,
    verdict: String,
}

impl RawStep {
    fn from_row(r: &Row) -> Result<RawStep, StoreError> {
        Ok(RawStep {
            step: BisectStep {
                step: r.u32(0)?,
                position: r.u32(1)?,
                verdict: StepVerdict::Measuring,
                reason: r.opt_text(3)?,
                run_good: r.opt_int(4)?,
                run_commit: r.opt_int(5)?,
                run_bad: r.opt_int(6)?,
                build_log: r.opt_text(7)?,
                build_ns: r.opt_int(8)?.map(u64_from_sql),
                elapsed_ns: r.opt_int(9)?.map(u64_from_sql),
                started_at: r.text(10)?,
                finished_at: r.opt_text(11)?,
            },
            verdict: r.text(2)?,
        })
    }

    fn into_step(self) -> Result<BisectStep, String> {
        let verdict = StepVerdict::parse(&self.verdict).ok_or(self.verdict)?;
        Ok(BisectStep {
            verdict,
            ..self.step
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commits(n: u32) -> Vec<BisectCommit> {
        (0..n)
            .map(|i| BisectCommit {
                position: i,
                hash: format!("{i:040x}"),
                subject: format!("commit {i}"),
            })
            .collect()
    }

    fn step(step: u32, verdict: StepVerdict) -> BisectStep {
        BisectStep {
            step,
            position: 3,
            verdict,
            reason: None,
            run_good: None,
            run_commit: None,
            run_bad: None,
            build_log: None,
            build_ns: Some(u64::MAX),
            elapsed_ns: None,
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: None,
        }
    }

    #[test]
    fn a_bisection_reads_back_as_written_and_a_step_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("b.db")).unwrap();
        let id = store
            .begin_bisect("{}", &commits(5), "2026-01-01T00:00:00Z")
            .unwrap();
        assert_eq!(id, 1);
        let second = store.begin_bisect("{}", &commits(2), "x").unwrap();
        assert_eq!((second, store.bisect_ids().unwrap()), (2, vec![1, 2]));
        store
            .put_bisect_step(id, &step(1, StepVerdict::Measuring))
            .unwrap();
        let mut decided = step(1, StepVerdict::Skip);
        decided.reason = Some("build failed".into());
        decided.run_commit = Some(7);
        store.put_bisect_step(id, &decided).unwrap();
        let read = store.bisect(id).unwrap();
        assert_eq!(read.good, commits(5)[0].hash);
        assert_eq!(read.bad, commits(5)[4].hash);
        assert_eq!(read.commits, commits(5));
        assert_eq!(read.steps, vec![decided]);
        assert_eq!(read.status, BisectStatus::Running);
        // This process owns it: alive, so a second driver is refused; it may take it itself.
        assert!(read.owner_alive);
        store.claim_bisect(id).unwrap_err();
        store
            .set_bisect_status(id, BisectStatus::Found, Some("y"))
            .unwrap();
        store.claim_bisect(id).unwrap();
        assert!(store.bisect(id).unwrap().status.is_finished());
        assert!(matches!(
            store.bisect(9),
            Err(StoreError::BisectNotFound { id: 9 })
        ));
    }
}
