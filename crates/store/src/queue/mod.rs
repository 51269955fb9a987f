//! The lab's job queue, kept in the team's PostgreSQL store: jobs submitted to a machine class
//! (`scalelab submit`), taken by the agents on the lab's machines (`scalelab agent`), read back
//! by `scalelab queue`. No server of its own: the store every agent already reaches is the
//! queue, as Compass-CI, Pinpoint and Bencher keep theirs in a database. (Written here, not
//! taken from a crate: `sqlxmq`, `graphile_worker` and `apalis-sql` are async, bring their own
//! schema and workers, and know nothing of machine classes or leases judged against a lock.)
//!
//! The rules a caller relies on:
//! - **A row is never trusted.** Anyone with INSERT on `jobs` can write any row; a row
//!   scalelab would never write is failed (a schedule stopped) with the reason, and read back as
//!   [`Job::malformed`] — never an error that stops an agent or hides the rest of the queue.
//! - **Claiming** locks one row with `FOR UPDATE SKIP LOCKED`, the oldest the agent accepts, in
//!   one transaction: two agents never take the same job and never wait for each other. The
//!   agent reads only the jobs whose class it matches (filtered in SQL by target), however many
//!   others are queued ahead of them.
//! - **Liveness** is a lease on the server's clock, renewed by [`Store::heartbeat`], and the
//!   agent's lock (see `liveness`: a random key held by the server process its row names, of a
//!   role that may write `agents`); [`Store::reap_jobs`] takes a job back when either is gone.
//! - **The log is records** (`job_events`), each stamped by the server with the role that wrote
//!   it; every time is the server's (ms since the epoch, read once per transaction).
//!
//! The queue needs PostgreSQL; on a SQLite file each call says so. One file per concern:
//! `rows` (decoding a row, malformed or not), `events` (the log), `jobs` (submitting, reading,
//! cancelling, schedules), `agents` (registering, heartbeats, reaping), `claim` (taking and
//! ending a job).

mod agents;
mod claim;
mod events;
mod jobs;
mod rows;
mod types;

pub use self::claim::ClaimOutcome;
pub use self::events::JobEvent;
pub use self::jobs::DueOutcome;
pub use self::types::{
    AgentRow, Candidate, Claimed, Job, JobRun, JobState, NewJob, Reaped, Schedule, Verdict,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::Store;

    #[test]
    fn every_state_reads_back_as_written() {
        for s in [
            JobState::Queued,
            JobState::Running,
            JobState::Done,
            JobState::Failed,
            JobState::Cancelled,
        ] {
            assert_eq!(JobState::parse(s.as_str()), Some(s));
        }
        assert!(JobState::parse("lost").is_none());
    }

    #[test]
    fn the_queue_on_a_sqlite_file_says_it_needs_postgresql() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let err = store.jobs(None).unwrap_err().to_string();
        assert!(err.contains("PostgreSQL"), "{err}");
        let job = NewJob {
            args: vec!["run".into(), "atomic".into()],
            target: "any".into(),
            carries_cmd: false,
            max_attempts: 3,
            check_history: false,
            timeout_ms: None,
            user: "u".into(),
            host: "h".into(),
        };
        assert!(store.submit_job(&job).is_err());
    }
}
