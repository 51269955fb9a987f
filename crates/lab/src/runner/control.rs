//! The control block a trial's tasks and its sampler share: the start gate / phase word, the
//! per-task op counters and the per-task end-of-trial reports.
//!
//! It lives in one `sys::SharedRegion`, so it works the same for threads and for forked task
//! processes. Layout (bytes):
//! - `0`: phase word (u32 futex): 0 = waiting at the gate, 1 = warm-up, 2 = measuring, 3 = stop.
//! - `256`: tasks ready (u64).
//! - `512 + 256·i`: task i's op counter, alone in 256 bytes (two cache lines: the adjacent-line
//!   prefetcher makes 128 too small). Only its owner writes it, with a plain relaxed store; the
//!   sampler reads it once per interval. No read-modify-write, no syscall on the hot path.
//! - after the counters, 256 bytes per task of report: resource usage at the window start and
//!   end with the monotonic time of each, up to [`MAX_EXTRAS`] workload counts, a status word,
//!   and the process and thread ids of the task and of its partner, if any (for the sampler's
//!   reads of their scheduler statistics).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::error::LabError;
use model::record::{Nanos, Usage};

pub(crate) const PHASE_GATE: u32 = 0;
pub(crate) const PHASE_WARMUP: u32 = 1;
pub(crate) const PHASE_MEASURE: u32 = 2;
pub(crate) const PHASE_STOP: u32 = 3;

/// A task's status before it reports: the region starts zeroed, so this is never written.
#[allow(dead_code)]
pub(crate) const STATUS_RUNNING: u64 = 0;
pub(crate) const STATUS_DONE: u64 = 1;
pub(crate) const STATUS_FAILED: u64 = 2;

pub(crate) const MAX_EXTRAS: usize = 4;

const SLOT_BYTES: usize = 256;
const SLOT_U64S: usize = SLOT_BYTES / 8;
const HEADER_BYTES: usize = 512;
const USAGE_FIELDS: usize = 10;
/// Stands for "not measured" in the run-delay field.
const UNMEASURED: u64 = u64::MAX;
const R_START: usize = 0;
const R_END: usize = USAGE_FIELDS;
const R_FLAGS: usize = 2 * USAGE_FIELDS;
const R_EXTRAS: usize = R_FLAGS + 1;
const R_STATUS: usize = R_EXTRAS + MAX_EXTRAS;
const R_IDS: usize = R_STATUS + 1;
const R_AT_START: usize = R_IDS + 1;
const R_AT_END: usize = R_AT_START + 1;
const R_PARTNER_IDS: usize = R_AT_END + 1;
const _: () = assert!(R_PARTNER_IDS < SLOT_U64S, "a task's report fits its slot");
const FLAG_START: u64 = 1;
const FLAG_END: u64 = 2;

/// One task's own usage readings: the usage between them and the time between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnWindow {
    pub usage: Usage,
    pub span: Nanos,
}

/// The shared control block of one trial.
#[derive(Debug)]
pub(crate) struct Control {
    region: sys::SharedRegion,
    tasks: usize,
}

impl Control {
    pub(crate) fn new(tasks: usize) -> Result<Control, LabError> {
        let bytes = HEADER_BYTES + 2 * SLOT_BYTES * tasks;
        let region = sys::SharedRegion::new(bytes)
            .map_err(|e| LabError::sys("control block: shared mapping", e))?;
        Ok(Control { region, tasks })
    }

    pub(crate) fn tasks(&self) -> usize {
        self.tasks
    }

    pub(crate) fn phase_word(&self) -> &AtomicU32 {
        &self.region.u32s()[0]
    }

    pub(crate) fn phase(&self) -> u32 {
        self.phase_word().load(Ordering::Acquire)
    }

    /// Sets the phase and wakes every task waiting at the gate.
    pub(crate) fn set_phase(&self, phase: u32) {
        self.phase_word().store(phase, Ordering::Release);
        // A failed wake only means nobody was waiting; tasks also re-check on a timeout.
        let _ = sys::futex_wake(self.phase_word(), i32::MAX);
    }

    /// Blocks until the gate opens (phase leaves 0); returns the phase seen.
    pub(crate) fn wait_gate(&self) -> u32 {
        loop {
            let phase = self.phase();
            if phase != PHASE_GATE {
                return phase;
            }
            let _ = sys::futex_wait(
                self.phase_word(),
                PHASE_GATE,
                Some(Duration::from_millis(50)),
            );
        }
    }

    fn ready_word(&self) -> &AtomicU64 {
        &self.region.u64s()[256 / 8]
    }

    pub(crate) fn mark_ready(&self) {
        self.ready_word().fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn ready(&self) -> u64 {
        self.ready_word().load(Ordering::Acquire)
    }

    /// Task i's op counter.
    #[inline]
    pub(crate) fn counter(&self, task: usize) -> &AtomicU64 {
        &self.region.u64s()[(HEADER_BYTES / 8) + task * SLOT_U64S]
    }

    /// Every task's op count now.
    pub(crate) fn read_counters(&self) -> Vec<u64> {
        (0..self.tasks)
            .map(|i| self.counter(i).load(Ordering::Relaxed))
            .collect()
    }

    fn report(&self, task: usize) -> &[AtomicU64] {
        let base = (HEADER_BYTES + SLOT_BYTES * self.tasks) / 8 + task * SLOT_U64S;
        &self.region.u64s()[base..base + SLOT_U64S]
    }

    /// Records the task's own usage reading taken at monotonic time `at`, as the window's start
    /// or end.
    pub(crate) fn record_usage(&self, task: usize, at_start: bool, usage: &Usage, at: Nanos) {
        let r = self.report(task);
        let offset = if at_start { R_START } else { R_END };
        for (i, value) in usage_fields(usage).into_iter().enumerate() {
            r[offset + i].store(value, Ordering::Relaxed);
        }
        r[if at_start { R_AT_START } else { R_AT_END }].store(at.0, Ordering::Relaxed);
        r[R_FLAGS].fetch_or(
            if at_start { FLAG_START } else { FLAG_END },
            Ordering::Release,
        );
    }

    /// The task's usage between its two readings and the time between them, if it recorded
    /// both.
    pub(crate) fn window_usage(&self, task: usize) -> Option<OwnWindow> {
        let r = self.report(task);
        let flags = r[R_FLAGS].load(Ordering::Acquire);
        if flags & (FLAG_START | FLAG_END) != FLAG_START | FLAG_END {
            return None;
        }
        let read = |offset: usize| -> [u64; USAGE_FIELDS] {
            std::array::from_fn(|i| r[offset + i].load(Ordering::Relaxed))
        };
        let (start, end) = (read(R_START), read(R_END));
        let d: [u64; USAGE_FIELDS] = std::array::from_fn(|i| end[i].saturating_sub(start[i]));
        let measured = start[8] != UNMEASURED && end[8] != UNMEASURED;
        let span = r[R_AT_END]
            .load(Ordering::Relaxed)
            .saturating_sub(r[R_AT_START].load(Ordering::Relaxed));
        let usage = Usage {
            user: Nanos(d[0]),
            sys: Nanos(d[1]),
            minor_faults: d[2],
            major_faults: d[3],
            voluntary_switches: d[4],
            involuntary_switches: d[5],
            block_in: d[6],
            block_out: d[7],
            run_delay: measured.then_some(Nanos(d[8])),
            // A high-water mark: the reading at the window's end, not a difference.
            max_rss_kib: (end[9] != UNMEASURED).then_some(end[9]),
        };
        Some(OwnWindow {
            usage,
            span: Nanos(span),
        })
    }

    pub(crate) fn record_extras(&self, task: usize, values: &[u64]) {
        let r = self.report(task);
        for (i, v) in values.iter().take(MAX_EXTRAS).enumerate() {
            r[R_EXTRAS + i].store(*v, Ordering::Relaxed);
        }
    }

    pub(crate) fn extras(&self, task: usize) -> [u64; MAX_EXTRAS] {
        let r = self.report(task);
        std::array::from_fn(|i| r[R_EXTRAS + i].load(Ordering::Relaxed))
    }

    pub(crate) fn set_status(&self, task: usize, status: u64) {
        self.report(task)[R_STATUS].store(status, Ordering::Release);
    }

    pub(crate) fn status(&self, task: usize) -> u64 {
        self.report(task)[R_STATUS].load(Ordering::Acquire)
    }

    /// Records the process and thread id task `task` runs as (before it marks itself ready).
    pub(crate) fn set_ids(&self, task: usize, pid: u32, tid: u32) {
        self.report(task)[R_IDS].store(pack_ids(pid, tid), Ordering::Release);
    }

    /// Every task's `(pid, tid)`, as recorded by [`Control::set_ids`].
    pub(crate) fn task_ids(&self) -> Vec<(u32, u32)> {
        (0..self.tasks)
            .map(|i| unpack_ids(self.report(i)[R_IDS].load(Ordering::Acquire)))
            .collect()
    }

    /// Records the `(pid, tid)` of the thread task `task` keeps busy beside it (before it marks
    /// itself ready); see `TaskLoop::partner`.
    pub(crate) fn set_partner(&self, task: usize, pid: u32, tid: u32) {
        self.report(task)[R_PARTNER_IDS].store(pack_ids(pid, tid), Ordering::Release);
    }

    /// The partners' `(pid, tid)` recorded by [`Control::set_partner`], in task order; tasks
    /// without one are left out.
    pub(crate) fn partner_ids(&self) -> Vec<(u32, u32)> {
        (0..self.tasks)
            .map(|i| self.report(i)[R_PARTNER_IDS].load(Ordering::Acquire))
            .filter(|&ids| ids != 0)
            .map(unpack_ids)
            .collect()
    }

    pub(crate) fn failed_tasks(&self) -> Vec<usize> {
        (0..self.tasks)
            .filter(|&i| self.status(i) == STATUS_FAILED)
            .collect()
    }
}

/// A `(pid, tid)` in one word of a report slot.
fn pack_ids(pid: u32, tid: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(tid)
}

fn unpack_ids(ids: u64) -> (u32, u32) {
    ((ids >> 32) as u32, ids as u32)
}

fn usage_fields(u: &Usage) -> [u64; USAGE_FIELDS] {
    [
        u.user.0,
        u.sys.0,
        u.minor_faults,
        u.major_faults,
        u.voluntary_switches,
        u.involuntary_switches,
        u.block_in,
        u.block_out,
        u.run_delay.map_or(UNMEASURED, |d| d.0),
        u.max_rss_kib.unwrap_or(UNMEASURED),
    ]
}

/// Converts the sys crate's getrusage reading into the record's units.
pub(crate) fn to_usage(r: &sys::ResourceUsage) -> Usage {
    Usage {
        user: Nanos::from_duration(r.user),
        sys: Nanos::from_duration(r.system),
        minor_faults: r.minor_faults,
        major_faults: r.major_faults,
        voluntary_switches: r.voluntary_switches,
        involuntary_switches: r.involuntary_switches,
        block_in: r.block_in,
        block_out: r.block_out,
        run_delay: None,
        max_rss_kib: Some(r.max_rss_kib),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_256_bytes_apart_and_reports_do_not_overlap() {
        let c = Control::new(3).unwrap();
        let a = c.counter(0) as *const AtomicU64 as usize;
        let b = c.counter(1) as *const AtomicU64 as usize;
        assert_eq!(b - a, 256);
        c.counter(2).store(7, Ordering::Relaxed);
        let u = Usage {
            user: Nanos(5),
            minor_faults: 3,
            ..Usage::default()
        };
        c.record_usage(2, true, &Usage::default(), Nanos(1_000));
        assert_eq!(c.window_usage(2), None);
        c.record_usage(2, false, &u, Nanos(1_700));
        assert_eq!(
            c.window_usage(2),
            Some(OwnWindow {
                usage: u,
                span: Nanos(700)
            })
        );
        // Run delay: a difference when both ends measured it, else not measured.
        let at = |ns| Usage {
            run_delay: Some(Nanos(ns)),
            ..Usage::default()
        };
        c.record_usage(1, true, &at(100), Nanos(0));
        c.record_usage(1, false, &at(350), Nanos(0));
        assert_eq!(c.window_usage(1).unwrap().usage.run_delay, Some(Nanos(250)));
        c.record_usage(1, false, &Usage::default(), Nanos(0));
        assert_eq!(c.window_usage(1).unwrap().usage.run_delay, None);
        c.set_ids(2, 41, 4_000_000_000);
        assert_eq!(c.task_ids()[2], (41, 4_000_000_000));
        // Partners: only the tasks that named one, in task order.
        assert_eq!(c.partner_ids(), vec![]);
        c.set_partner(2, 41, 4_000_000_001);
        c.set_partner(0, 77, 78);
        assert_eq!(c.partner_ids(), vec![(77, 78), (41, 4_000_000_001)]);
        assert_eq!(c.task_ids()[2], (41, 4_000_000_000));
        c.record_extras(2, &[9]);
        c.set_status(2, STATUS_FAILED);
        assert_eq!(c.read_counters(), vec![0, 0, 7]);
        assert_eq!(c.extras(2)[0], 9);
        assert_eq!(c.failed_tasks(), vec![2]);
        assert_eq!(c.window_usage(0), None);
    }
}
