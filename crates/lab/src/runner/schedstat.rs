//! What the tasks used over the trial's window: CPU time read by the sampler from the kernel at
//! the window's exact edges, run-queue wait from each task's own readings over its own span. A
//! task's own readings can be up to a scheduling period late, so summed over their spans they
//! would exceed what the CPUs gave (why: docs/notes/runner.md). So:
//! - **CPU time**: the kernel keeps each thread's on-CPU time (`/proc/PID/task/TID/schedstat`,
//!   first field; CONFIG_SCHED_INFO, in every distribution kernel) whether it runs or not, so
//!   the sampler reads it for every task right after each edge, back to back: every task's
//!   account covers the window, shifted by the µs the reads take, and the sum cannot exceed
//!   what the CPUs gave. (It lags only for the tasks on a CPU at that instant, by under a
//!   tick.) The user/system split is the one the tasks' own readings saw.
//! - **Run-queue wait** (second field) is only brought up to date when a waiting task gets a
//!   CPU, so a reading from outside misses the wait in progress, by up to a scheduling period
//!   per task. A task's own reading is exact (it is running), over the span between its two
//!   readings, which it timestamps: each task contributes its waiting share of its own span,
//!   `wait_i / span_i ≤ 1`, times the window. Summed, that never exceeds N × window.
//! - Without schedstat (or when a read fails) CPU time is scaled the same way, `cpu_i / span_i`
//!   times the window, rather than summed over spans of different lengths.
//!
//! Files are opened before the window and re-read with `pread` (a /proc seq file regenerates at
//! offset 0), so a sweep over 256 tasks costs well under a millisecond; past the open-file
//! limit the rest are opened at each sweep.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::control::OwnWindow;
use model::record::{Nanos, Usage};

/// One task's scheduler statistics at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct SchedStat {
    /// Time on a CPU (`se.sum_exec_runtime`).
    pub on_cpu: Nanos,
    /// Time runnable but waiting for a CPU (`sched_info.run_delay`).
    pub waited: Nanos,
}

impl SchedStat {
    /// The statistics in `/proc/…/schedstat` form: `on-CPU ns, waiting ns, timeslices`.
    pub(super) fn parse(text: &str) -> Option<SchedStat> {
        let mut fields = text.split_whitespace();
        let on_cpu = fields.next()?.parse().ok()?;
        let waited = fields.next()?.parse().ok()?;
        Some(SchedStat {
            on_cpu: Nanos(on_cpu),
            waited: Nanos(waited),
        })
    }
}

/// The schedstat files of a trial's tasks.
#[derive(Debug)]
pub(super) struct TaskClocks {
    sources: Vec<Source>,
}

#[derive(Debug)]
enum Source {
    Open(File),
    /// Not kept open (the open-file limit): opened at each sweep.
    Path(PathBuf),
}

impl TaskClocks {
    /// The files of the threads `(pid, tid)`, one per task, in task order.
    pub(super) fn open(ids: &[(u32, u32)]) -> TaskClocks {
        let sources = ids
            .iter()
            .map(|(pid, tid)| {
                let path = PathBuf::from(format!("/proc/{pid}/task/{tid}/schedstat"));
                File::open(&path).map_or(Source::Path(path), Source::Open)
            })
            .collect();
        TaskClocks { sources }
    }

    /// Every task's statistics now, back to back; `None` when one cannot be read (a kernel
    /// without CONFIG_SCHED_INFO, a task gone).
    pub(super) fn read(&self) -> Option<Vec<SchedStat>> {
        let mut buf = [0u8; 128];
        self.sources
            .iter()
            .map(|source| {
                let n = match source {
                    Source::Open(file) => file.read_at(&mut buf, 0).ok()?,
                    Source::Path(path) => {
                        let text = std::fs::read(path).ok()?;
                        let n = text.len().min(buf.len());
                        buf[..n].copy_from_slice(&text[..n]);
                        n
                    }
                };
                SchedStat::parse(std::str::from_utf8(&buf[..n]).ok()?)
            })
            .collect()
    }
}

/// Each task's on-CPU time over the window, from the sampler's readings at its two edges.
pub(super) fn on_cpu(start: &[SchedStat], end: &[SchedStat]) -> Vec<Nanos> {
    end.iter()
        .zip(start)
        .map(|(e, s)| Nanos(e.on_cpu.0.saturating_sub(s.on_cpu.0)))
        .collect()
}

/// What the tasks used over a window of `length` (see the module doc): the counts of their own
/// readings summed; CPU time from `on_cpu` (the sampler's, per task) when there, else each
/// task's own CPU share of its span; run-queue wait from each task's own waiting share of its
/// span, `None` unless every task measured it.
pub(super) fn account(own: &[OwnWindow], on_cpu: Option<&[Nanos]>, length: Nanos) -> Usage {
    // `value` over `span`, as a share of `length`; a task whose span is 0 used nothing. The
    // few µs between a task's reading and its timestamp cannot make a share exceed 1.
    let share = |value: Nanos, span: Nanos| -> u64 {
        if span.0 == 0 {
            0
        } else {
            let value = value.0.min(span.0);
            (u128::from(value) * u128::from(length.0) / u128::from(span.0)) as u64
        }
    };
    let mut total = Usage::default();
    let mut waited = Some(0u64);
    let mut scaled_cpu = 0u64;
    for w in own {
        total = total.add(&w.usage);
        waited = waited
            .zip(w.usage.run_delay)
            .map(|(sum, d)| sum + share(d, w.span));
        scaled_cpu += share(w.usage.cpu(), w.span);
    }
    let cpu = on_cpu.map_or(scaled_cpu, |c| c.iter().map(|n| n.0).sum());
    let seen = total.cpu().0;
    let user = if seen == 0 {
        cpu
    } else {
        (u128::from(cpu) * u128::from(total.user.0) / u128::from(seen)) as u64
    };
    Usage {
        user: Nanos(user),
        sys: Nanos(cpu - user),
        run_delay: waited.map(Nanos),
        ..total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_two_fields() {
        assert_eq!(
            SchedStat::parse("377148210 991867 131\n"),
            Some(SchedStat {
                on_cpu: Nanos(377_148_210),
                waited: Nanos(991_867)
            })
        );
        assert_eq!(SchedStat::parse(""), None);
        assert_eq!(SchedStat::parse("12"), None);
    }

    #[test]
    fn reads_this_thread_and_sees_it_run() {
        let ids = [(std::process::id(), sys::gettid() as u32)];
        let clocks = TaskClocks::open(&ids);
        let before = clocks.read().expect("schedstat of this thread");
        let mut x = 1u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
        let after = clocks.read().unwrap();
        assert!(on_cpu(&before, &after)[0].0 > 0);
        // Past the open-file limit: the same through the path.
        let by_path = TaskClocks {
            sources: vec![Source::Path(PathBuf::from(format!(
                "/proc/{}/task/{}/schedstat",
                ids[0].0, ids[0].1
            )))],
        };
        assert!(by_path.read().unwrap()[0].on_cpu >= after[0].on_cpu);
        assert!(TaskClocks::open(&[(u32::MAX, u32::MAX)]).read().is_none());
    }

    fn own(user: u64, sys: u64, delay: Option<u64>, span: u64) -> OwnWindow {
        OwnWindow {
            usage: Usage {
                user: Nanos(user),
                sys: Nanos(sys),
                minor_faults: 1,
                run_delay: delay.map(Nanos),
                ..Usage::default()
            },
            span: Nanos(span),
        }
    }

    #[test]
    fn cpu_comes_from_the_edges_and_waits_from_each_tasks_share_of_its_span() {
        // Two tasks over a 1000 ns window: one saw a 2000 ns span (it noticed the stop late),
        // waiting 1500 of it; the other a 500 ns span, waiting all of it.
        let tasks = [own(300, 100, Some(1500), 2000), own(30, 10, Some(500), 500)];
        let u = account(&tasks, Some(&[Nanos(150), Nanos(50)]), Nanos(1000));
        // 200 ns of CPU split 330:110 as the tasks saw it.
        assert_eq!((u.user, u.sys), (Nanos(150), Nanos(50)));
        // 1500/2000 and 500/500 of the window.
        assert_eq!(u.run_delay, Some(Nanos(750 + 1000)));
        assert_eq!(u.minor_faults, 2);
        // Without the sampler's readings: each task's CPU share of its span.
        let u = account(&tasks, None, Nanos(1000));
        assert_eq!(u.cpu(), Nanos(200 + 80));
        // One task without a run-queue reading: not measured; a zero span used nothing.
        let u = account(
            &[own(5, 5, None, 10), own(0, 0, Some(0), 0)],
            None,
            Nanos(10),
        );
        assert_eq!((u.run_delay, u.cpu()), (None, Nanos(10)));
        assert_eq!(account(&[], None, Nanos(10)).run_delay, Some(Nanos(0)));
        // A reading's jitter past its own span still counts as the whole window at most.
        let u = account(&[own(0, 0, Some(510), 500)], Some(&[Nanos(0)]), Nanos(1000));
        assert_eq!(u.run_delay, Some(Nanos(1000)));
    }
}
