//! Reading a queue row without trusting it: every column a hostile or older writer could have
//! filled wrongly is decoded leniently, and what makes the row one scalelab would never write
//! is kept as its reason (`malformed`) instead of failing the read.

use super::types::{Job, JobState, MAX_ATTEMPTS, Schedule};
use crate::backend::Row;
use crate::error::StoreError;
use model::schedule::Every;

/// The columns [`job_from_row`] reads, in order.
pub(crate) const JOB_COLUMNS: &str = "id, args, target, carries_cmd, state, attempts,
    max_attempts, agent, lease_until, submitted_at, started_at, finished_at, submitter, outcome,
    check_history, schedule_id, timeout_ms";

/// The columns [`schedule_from_row`] reads, in order.
pub(crate) const SCHEDULE_COLUMNS: &str = "id, every, args, target, check_history, next_at,
    active, submitter, timeout_ms, stopped_why, max_attempts";

/// A job's arguments: a non-empty JSON list of strings, or why not.
pub(crate) fn decode_args(text: &str) -> Result<Vec<String>, String> {
    match serde_json::from_str::<Vec<String>>(text) {
        Ok(args) if args.is_empty() => Err("its arguments are an empty list".into()),
        Ok(args) => Ok(args),
        Err(e) => Err(format!(
            "its arguments are not a JSON list of strings ({e})"
        )),
    }
}

/// An attempt count (`attempts`, 0 or more) or limit (`max_attempts`, 1 or more), or why not.
pub(crate) fn decode_count(value: i64, least: i64, what: &str) -> Result<u32, String> {
    if (least..=MAX_ATTEMPTS).contains(&value) {
        Ok(value as u32)
    } else {
        Err(format!(
            "its {what} is {value}, not {least} to {MAX_ATTEMPTS}"
        ))
    }
}

/// A timeout column: none, or 1 ms or more.
pub(crate) fn decode_timeout(value: Option<i64>) -> Result<Option<i64>, String> {
    match value {
        Some(ms) if ms < 1 => Err(format!("its timeout is {ms} ms")),
        other => Ok(other),
    }
}

/// The first of `checks` that failed.
fn first_problem(checks: &[Option<String>]) -> Option<String> {
    checks.iter().flatten().next().cloned()
}

/// A job row (columns [`JOB_COLUMNS`]) as shown, `now` being the server's clock; a row
/// scalelab would never write comes back with `malformed` saying why.
pub(crate) fn job_from_row(r: &Row, now: i64) -> Result<Job, StoreError> {
    let args = decode_args(&r.text(1)?);
    let stored_state = r.text(4)?;
    let state = JobState::parse(&stored_state);
    let attempts = decode_count(r.int(5)?, 0, "attempt count");
    let max_attempts = decode_count(r.int(6)?, 1, "attempt limit");
    let timeout = decode_timeout(r.opt_int(16)?);
    let malformed = first_problem(&[
        args.as_ref().err().cloned(),
        state
            .is_none()
            .then(|| format!("its state is {stored_state:?}")),
        attempts.as_ref().err().cloned(),
        max_attempts.as_ref().err().cloned(),
        timeout.as_ref().err().cloned(),
    ]);
    let state = state.unwrap_or(JobState::Failed);
    Ok(Job {
        id: r.int(0)?,
        args: args.unwrap_or_default(),
        target: r.text(2)?,
        carries_cmd: r.int(3)? != 0,
        state,
        attempts: attempts.unwrap_or(0),
        max_attempts: max_attempts.unwrap_or(0),
        timeout_ms: timeout.unwrap_or(None),
        agent: r.opt_text(7)?,
        lease_left_ms: r
            .opt_int(8)?
            .filter(|_| state == JobState::Running)
            .map(|until| until - now),
        submitted_at_ms: r.int(9)?,
        started_at_ms: r.opt_int(10)?,
        finished_at_ms: r.opt_int(11)?,
        submitter: serde_json::from_str(&r.text(12)?).unwrap_or(serde_json::Value::Null),
        outcome: r.opt_text(13)?,
        log: Vec::new(),
        check_history: r.int(14)? != 0,
        schedule_id: r.opt_int(15)?,
        runs: Vec::new(),
        malformed,
    })
}

/// A schedule row (columns [`SCHEDULE_COLUMNS`]) as shown, with its jobs left empty; a row
/// scalelab would never write comes back with `malformed` saying why.
pub(crate) fn schedule_from_row(r: &Row) -> Result<Schedule, StoreError> {
    let every = r.text(1)?;
    let args = decode_args(&r.text(2)?);
    let timeout = decode_timeout(r.opt_int(8)?);
    let malformed = first_problem(&[
        Every::parse(&every).err().map(|e| e.to_string()),
        args.as_ref().err().cloned(),
        timeout.as_ref().err().cloned(),
        decode_count(r.int(10)?, 1, "attempt limit").err(),
    ]);
    Ok(Schedule {
        id: r.int(0)?,
        every,
        args: args.unwrap_or_default(),
        target: r.text(3)?,
        check_history: r.int(4)? != 0,
        next_at_ms: r.int(5)?,
        active: r.int(6)? != 0,
        submitter: serde_json::from_str(&r.text(7)?).unwrap_or(serde_json::Value::Null),
        timeout_ms: timeout.unwrap_or(None),
        stopped_why: r.opt_text(9)?,
        jobs: Vec::new(),
        malformed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_counts_and_timeouts_say_what_is_wrong() {
        assert_eq!(decode_args(r#"["run", "spin"]"#).unwrap(), ["run", "spin"]);
        assert!(decode_args("not json").unwrap_err().contains("JSON list"));
        assert!(
            decode_args(r#"{"run": 1}"#)
                .unwrap_err()
                .contains("JSON list")
        );
        assert!(decode_args("[1, 2]").unwrap_err().contains("JSON list"));
        assert!(decode_args("[]").unwrap_err().contains("empty"));
        assert_eq!(decode_count(3, 1, "attempt limit"), Ok(3));
        assert!(
            decode_count(-1, 1, "attempt limit")
                .unwrap_err()
                .contains("-1")
        );
        assert!(decode_count(0, 1, "attempt limit").is_err());
        assert_eq!(decode_count(0, 0, "attempt count"), Ok(0));
        assert!(decode_count(1 << 40, 0, "attempt count").is_err());
        assert_eq!(decode_timeout(None), Ok(None));
        assert_eq!(decode_timeout(Some(5)), Ok(Some(5)));
        assert!(decode_timeout(Some(0)).is_err());
    }
}
