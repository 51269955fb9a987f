//! One task's life inside a trial: pin, build its loop, wait at the gate, run until told to stop.
//!
//! The hot loop does one relaxed load of the phase word per step (the word is written three
//! times per trial, so it stays shared in every cache) and one relaxed store of the task's own
//! counter. Resource usage is snapshotted by the task itself when it sees the window open and
//! close, so the accounting covers the window and not the warm-up.

use std::sync::atomic::Ordering;

use super::control::{Control, PHASE_MEASURE, PHASE_STOP, STATUS_DONE, STATUS_FAILED};
use crate::error::LabError;
use crate::model::{Mode, Nanos};
use crate::runner::control::to_usage;
use crate::workloads::Prepared;

/// Runs task `index` to completion; the error (if any) is also marked in the control block.
pub fn run_task(
    prepared: &dyn Prepared,
    control: &Control,
    index: usize,
    cpu: Option<usize>,
    mode: Mode,
    extra_names: &[&'static str],
) -> Result<(), LabError> {
    let result = task_body(prepared, control, index, cpu, mode, extra_names);
    control.set_status(
        index,
        if result.is_ok() {
            STATUS_DONE
        } else {
            STATUS_FAILED
        },
    );
    result
}

fn usage_now(mode: Mode) -> Result<crate::model::Usage, LabError> {
    let r = match mode {
        Mode::Threads => sys::thread_usage(),
        Mode::Processes => sys::process_usage(),
    };
    let mut usage = r
        .map(|u| to_usage(&u))
        .map_err(|e| LabError::sys("getrusage", e))?;
    // A task process has one thread, so this thread's delay is the task's in both modes.
    usage.run_delay = run_delay_now();
    Ok(usage)
}

/// This thread's run-queue delay so far: the second field of `/proc/thread-self/schedstat`
/// (`on-CPU ns, waiting ns, timeslices`; CONFIG_SCHED_INFO, in every distribution kernel).
fn run_delay_now() -> Option<Nanos> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_run_delay(&text)
}

fn parse_run_delay(schedstat: &str) -> Option<Nanos> {
    let mut fields = schedstat.split_whitespace();
    fields.next()?.parse::<u64>().ok()?;
    fields.next()?.parse().ok().map(Nanos)
}

fn task_body(
    prepared: &dyn Prepared,
    control: &Control,
    index: usize,
    cpu: Option<usize>,
    mode: Mode,
    extra_names: &[&'static str],
) -> Result<(), LabError> {
    if let Some(cpu) = cpu {
        sys::set_current_affinity(&[cpu])
            .map_err(|e| LabError::sys(format!("pinning task {index} to CPU {cpu}"), e))?;
    }
    let mut work = prepared.task(index)?;
    control.mark_ready();
    let mut seen = control.wait_gate();
    // Provisional window start, replaced when the task sees the window open. A task that gets no
    // CPU until after the window closed (heavy oversubscription) thus reports zero usage rather
    // than none, and one stuck in a single step for the whole window reports its usage since the gate.
    let at_gate = usage_now(mode)?;
    control.record_usage(index, true, &at_gate);
    if seen == PHASE_STOP {
        control.record_usage(index, false, &at_gate);
        return Ok(());
    }
    let counter = control.counter(index);
    let phase = control.phase_word();
    let mut count = 0u64;
    loop {
        let now = phase.load(Ordering::Relaxed);
        if now != seen {
            if now == PHASE_MEASURE {
                control.record_usage(index, true, &usage_now(mode)?);
            } else if now == PHASE_STOP {
                control.record_usage(index, false, &usage_now(mode)?);
                break;
            }
            seen = now;
        }
        count += work.step()?;
        counter.store(count, Ordering::Relaxed);
    }
    let extras = work.extras();
    let values: Vec<u64> = extra_names
        .iter()
        .map(|name| {
            extras
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, v)| *v)
        })
        .collect();
    control.record_extras(index, &values);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_delay_is_the_second_schedstat_field() {
        assert_eq!(
            parse_run_delay("377148210 991867 131\n"),
            Some(Nanos(991_867))
        );
        assert_eq!(parse_run_delay(""), None);
        assert_eq!(parse_run_delay("12"), None);
        // This thread, on this kernel.
        assert!(run_delay_now().is_some());
    }
}
