//! One task's life inside a trial: pin, build its loop, wait at the gate, run until told to stop.
//!
//! The hot loop (`workloads::steps_while`) does one relaxed load of the phase word per step (the
//! word is written three times per trial, so it stays shared in every cache) and one relaxed
//! store of the task's own counter; a workload that keeps its op inline in a loop of its own
//! (`TaskLoop::run_inline`: page_fault) runs the same loop there. Resource usage is snapshotted
//! by the task itself when it sees the window open and close, so the accounting covers the window
//! and not the warm-up; as that can be late when tasks outnumber CPUs, the CPU time and run-queue
//! wait are replaced by the sampler's reading of the kernel's statistics at the window's exact
//! edges (`super::schedstat`).

use std::sync::atomic::Ordering;

use super::control::{Control, PHASE_MEASURE, PHASE_STOP, STATUS_DONE, STATUS_FAILED};
use crate::error::LabError;
use crate::runner::control::to_usage;
use crate::runner::schedstat::SchedStat;
use crate::workloads::Prepared;
use crate::workloads::workload::steps_while;
use model::record::{Mode, Nanos, Usage};

/// Runs task `index` to completion; the error (if any) is also marked in the control block.
/// Where a task runs and where its memory comes from.
#[derive(Debug, Clone, Copy)]
pub(super) struct TaskPlace<'a> {
    /// The CPU it is pinned to (`None`: left to the scheduler).
    pub cpu: Option<usize>,
    /// Its memory policy, set after pinning and before the workload touches its memory.
    pub memory: &'a sys::MemPolicy,
}

pub(super) fn run_task(
    prepared: &dyn Prepared,
    control: &Control,
    index: usize,
    place: TaskPlace<'_>,
    mode: Mode,
    extra_names: &[&'static str],
) -> Result<(), LabError> {
    let result = task_body(prepared, control, index, place, mode, extra_names);
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

/// This task's usage now and the monotonic time of the reading.
fn usage_now(mode: Mode) -> Result<(Usage, Nanos), LabError> {
    let r = match mode {
        Mode::Threads => sys::thread_usage(),
        Mode::Processes => sys::process_usage(),
    };
    let mut usage = r
        .map(|u| to_usage(&u))
        .map_err(|e| LabError::sys("getrusage", e))?;
    // A task process has one thread, so this thread's delay is the task's in both modes. Read
    // by the running task itself, it is up to date (see `super::schedstat`).
    usage.run_delay = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| SchedStat::parse(&text))
        .map(|s| s.waited);
    let at = Nanos(sys::clock_gettime_vdso(sys::ClockId::Monotonic));
    Ok((usage, at))
}

fn task_body(
    prepared: &dyn Prepared,
    control: &Control,
    index: usize,
    place: TaskPlace<'_>,
    mode: Mode,
    extra_names: &[&'static str],
) -> Result<(), LabError> {
    if let Some(cpu) = place.cpu {
        sys::set_current_affinity(&[cpu])
            .map_err(|e| LabError::sys(format!("pinning task {index} to CPU {cpu}"), e))?;
    }
    if *place.memory != sys::MemPolicy::Default {
        sys::set_mempolicy(place.memory).map_err(|e| {
            LabError::sys(
                format!("setting task {index}'s memory policy ({:?})", place.memory),
                e,
            )
        })?;
    }
    let mut work = prepared.task(index)?;
    // A task process has one thread, so this thread is the task in both modes.
    control.set_ids(index, std::process::id(), sys::gettid() as u32);
    if let Some((pid, tid)) = work.partner() {
        control.set_partner(index, pid, tid);
    }
    control.mark_ready();
    let mut seen = control.wait_gate();
    // Provisional window start, replaced when the task sees the window open. A task that gets no
    // CPU until after the window closed (heavy oversubscription) thus reports zero usage rather
    // than none, and one stuck in a single step for the whole window reports its usage since the gate.
    let (at_gate, when) = usage_now(mode)?;
    control.record_usage(index, true, &at_gate, when);
    if seen == PHASE_STOP {
        control.record_usage(index, false, &at_gate, when);
        return Ok(());
    }
    let counter = control.counter(index);
    let phase = control.phase_word();
    let mut count = 0u64;
    loop {
        let now = phase.load(Ordering::Relaxed);
        if now != seen {
            if now == PHASE_MEASURE {
                let (usage, when) = usage_now(mode)?;
                control.record_usage(index, true, &usage, when);
            } else if now == PHASE_STOP {
                let (usage, when) = usage_now(mode)?;
                control.record_usage(index, false, &usage, when);
                break;
            }
            seen = now;
        }
        // Both return when the phase moves on.
        count = match work.run_inline(phase, seen, counter, count) {
            Some(counted) => counted?,
            None => steps_while(&mut *work, phase, seen, counter, count)?,
        };
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
