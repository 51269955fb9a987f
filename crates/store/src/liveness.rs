//! Whether the process that owns a `running` run is still alive.
//!
//! A run is stored as `running` when it starts and `complete` or `interrupted` when it ends; a
//! process killed in between (SIGKILL, OOM killer, power loss) leaves it `running` for ever. So
//! the row also records its owner — pid, the pid's start time (field 22 of `/proc/PID/stat`, in
//! clock ticks since boot) and the boot id (`/proc/sys/kernel/random/boot_id`) — and a reader
//! derives [`RunStatus::Incomplete`] when that owner is gone: another boot, no such pid, a zombie,
//! or the pid reused by a younger process (start time differs).
//!
//! When this process cannot tell (no `/proc`), the run keeps reading `running`: a live run is
//! never declared dead on a guess.
//!
//! On PostgreSQL the owner may be on another host, whose processes a reader cannot see. There
//! the writer's connection holds an advisory lock from `begin_run` to `finish_run`; the server
//! drops it when the connection ends, however the writer died. Anyone who can connect can take
//! an advisory lock, so the lock proves nothing by itself: its second key is random (nobody can
//! take it ahead, [`take_lock`]), the row records the key and the server process that took it,
//! and a row is alive only while **that** process holds it and its role may update the row's
//! table ([`alive_rows`]). A `running` run that is not alive reads `Incomplete`. Agents prove
//! they are alive the same way (`queue`).

use std::collections::HashSet;
use std::fs;

use model::record::RunStatus;
use sys::proc_table::{self, ProcStat};

use crate::backend::{RUN_LOCK_CLASS, Tx, Value, vals};
use crate::error::StoreError;

/// The process that owns a run, as recorded in its row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Owner {
    /// `None`: no owner on this machine (an imported run), so nobody here will ever finish it.
    pub pid: Option<i64>,
    pub start_time: Option<u64>,
    pub boot_id: Option<String>,
}

impl Owner {
    /// This process.
    pub(super) fn current() -> Owner {
        Owner {
            pid: Some(i64::from(std::process::id())),
            start_time: proc_table::stat(std::process::id() as i32).map(|s| s.start),
            boot_id: read_boot_id(),
        }
    }
}

/// How a reader tells whether a `running` run's owner is alive.
#[derive(Debug, Clone)]
pub(crate) enum Liveness {
    /// SQLite: by the owner's process, seen from `me`, the reader.
    Processes(Owner),
    /// PostgreSQL: the runs whose writer held its lock when the reader looked.
    Locks(HashSet<i64>),
}

impl Liveness {
    /// The status a reader should see for run `id`, stored as `stored` by `owner`.
    pub(crate) fn derive(&self, stored: RunStatus, id: i64, owner: &Owner) -> RunStatus {
        match self {
            Liveness::Processes(me) => derive_status(stored, owner, me),
            Liveness::Locks(alive) => {
                if stored == RunStatus::Running && !alive.contains(&id) {
                    RunStatus::Incomplete
                } else {
                    stored
                }
            }
        }
    }
}

/// The status a reader should see: `stored`, except that a `running` run whose owner is gone
/// reads `Incomplete`. `me` is the reading process (see [`Owner::current`]).
pub(crate) fn derive_status(stored: RunStatus, owner: &Owner, me: &Owner) -> RunStatus {
    if stored == RunStatus::Running && owner_is_gone(owner, me, proc_table::stat) {
        RunStatus::Incomplete
    } else {
        stored
    }
}

/// Whether the recorded `owner` is gone (`me` is the reading process): for rows other than runs
/// that record their owner the same way (a bisection).
pub(crate) fn is_gone(owner: &Owner, me: &Owner) -> bool {
    owner_is_gone(owner, me, proc_table::stat)
}

/// Decides from the recorded `owner`, the reader `me` and a way to read `/proc/PID/stat`.
fn owner_is_gone(owner: &Owner, me: &Owner, stat: impl Fn(i32) -> Option<ProcStat>) -> bool {
    let Some(pid) = owner
        .pid
        .and_then(|p| i32::try_from(p).ok())
        .filter(|&p| p > 0)
    else {
        return true;
    };
    if let (Some(theirs), Some(ours)) = (&owner.boot_id, &me.boot_id) {
        if theirs != ours {
            return true;
        }
    }
    if owner.pid == me.pid && owner.start_time == me.start_time {
        return false;
    }
    match stat(pid) {
        Some(now) => now.is_zombie() || owner.start_time.is_some_and(|t| t != now.start),
        // No such pid — if this process can read /proc at all; otherwise nobody can tell.
        None => me.start_time.is_some(),
    }
}

fn read_boot_id() -> Option<String> {
    let id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// Keys tried before a lock is given up: a random key is held by someone else only by chance
/// (or by one squatting on keys, who cannot take them all).
const LOCK_TRIES: usize = 16;

/// Takes a session-level advisory lock `(class, random key)` for the life of this connection;
/// returns the key and this connection's server process id, which the caller records in the
/// row the lock speaks for.
pub(crate) fn take_lock(tx: &mut Tx<'_, '_>, class: i32) -> Result<(i64, i64), StoreError> {
    let pid = tx
        .query_one("SELECT pg_backend_pid()::bigint", &[])?
        .int(0)?;
    for _ in 0..LOCK_TRIES {
        let key = random_key();
        let got = tx
            .query_one(
                "SELECT pg_try_advisory_lock(?1::integer, ?2::integer)::int",
                vals![i64::from(class), key],
            )?
            .int(0)?;
        if got == 1 {
            return Ok((key, pid));
        }
    }
    Err(StoreError::Column {
        index: 0,
        detail: format!(
            "{LOCK_TRIES} random advisory lock keys of class {class} were all held by other sessions — someone is holding advisory locks in bulk (see pg_locks)"
        ),
    })
}

/// Gives back the lock `(class, key)` this connection holds.
pub(crate) fn release_lock(tx: &mut Tx<'_, '_>, class: i32, key: i64) -> Result<(), StoreError> {
    tx.query_one(
        "SELECT pg_advisory_unlock(?1::integer, ?2::integer)::int",
        vals![i64::from(class), key],
    )?;
    Ok(())
}

/// A positive 31-bit key nobody can guess.
fn random_key() -> i64 {
    let bits = uuid::Uuid::new_v4().as_u128() as i64 & 0x7fff_ffff;
    bits.max(1)
}

/// The ids of `table`'s rows (`runs` or `agents`, with `lock_key` and `lock_pid` columns) that
/// are alive: their lock `(class, lock_key)` is held by the server process `lock_pid` they
/// record, of a role that may update `table`, in this database. Rows written before the key was
/// recorded (no `lock_key`) are judged by their old key, the row id modulo 2^31.
pub(crate) fn alive_rows(
    tx: &mut Tx<'_, '_>,
    class: i32,
    table: &'static str,
) -> Result<HashSet<i64>, StoreError> {
    let rows = tx.query(
        &format!(
            "SELECT t.id FROM {table} t
             JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                 AND l.classid::bigint = ?1
                 AND l.objid::bigint = COALESCE(t.lock_key, t.id % 2147483648)
                 AND (t.lock_pid IS NULL OR l.pid = t.lock_pid)
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE has_table_privilege(a.usesysid, '{table}', 'UPDATE')"
        ),
        &[Value::Int(i64::from(class))],
    )?;
    rows.iter().map(|r| r.int(0)).collect()
}

/// The runs whose writer is alive now (see [`alive_rows`]), read inside a transaction.
pub(crate) fn live_runs(tx: &mut Tx<'_, '_>) -> Result<HashSet<i64>, StoreError> {
    alive_rows(tx, RUN_LOCK_CLASS, "runs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Owner {
        Owner {
            pid: Some(10),
            start_time: Some(500),
            boot_id: Some("boot-a".into()),
        }
    }

    #[test]
    fn reads_this_process() {
        let me = Owner::current();
        assert_eq!(me.pid, Some(i64::from(std::process::id())));
        let stat = proc_table::stat(std::process::id() as i32).expect("/proc/self/stat");
        assert_eq!(Some(stat.start), me.start_time);
        assert!(me.boot_id.is_some());
    }

    #[test]
    fn this_process_is_alive_without_looking() {
        let gone = owner_is_gone(&me(), &me(), |_| panic!("must not read /proc for itself"));
        assert!(!gone);
    }

    #[test]
    fn another_boot_no_pid_or_no_such_process_is_gone() {
        let other_boot = Owner {
            boot_id: Some("boot-b".into()),
            ..me()
        };
        assert!(owner_is_gone(&other_boot, &me(), |_| None));
        assert!(owner_is_gone(&Owner::default(), &me(), |_| None));
        let other = Owner {
            pid: Some(77),
            ..me()
        };
        assert!(owner_is_gone(&other, &me(), |_| None));
    }

    #[test]
    fn reused_pid_or_zombie_is_gone_and_a_live_owner_is_not() {
        let other = Owner {
            pid: Some(77),
            start_time: Some(42),
            ..me()
        };
        let live = |state| {
            move |_: i32| {
                Some(ProcStat {
                    state,
                    ppid: 1,
                    pgrp: 77,
                    start: 42,
                })
            }
        };
        assert!(!owner_is_gone(&other, &me(), live('S')));
        assert!(owner_is_gone(&other, &me(), live('Z')));
        assert!(owner_is_gone(&other, &me(), |_| Some(ProcStat {
            state: 'S',
            ppid: 1,
            pgrp: 77,
            start: 43
        })));
    }

    #[test]
    fn unknowable_reads_alive() {
        let blind = Owner {
            pid: Some(10),
            start_time: None,
            boot_id: None,
        };
        let other = Owner {
            pid: Some(77),
            start_time: Some(42),
            boot_id: Some("x".into()),
        };
        assert!(!owner_is_gone(&other, &blind, |_| None));
    }

    #[test]
    fn derive_only_touches_running() {
        let gone = Owner::default();
        let me = Owner::current();
        assert_eq!(
            derive_status(RunStatus::Running, &gone, &me),
            RunStatus::Incomplete
        );
        assert_eq!(
            derive_status(RunStatus::Complete, &gone, &me),
            RunStatus::Complete
        );
        assert_eq!(
            derive_status(RunStatus::Running, &me, &me),
            RunStatus::Running
        );
    }
}
