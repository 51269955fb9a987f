//! `futex_mutex`: lock, work `hold` ns inside the critical section, unlock, work `work` ns
//! outside — the shape of every lock-protected data structure, with the lock made visible.
//!
//! The mutex is the classic three-state futex mutex, "mutex 3" of Ulrich Drepper's "Futexes Are
//! Tricky" (2011): the word is 0 (unlocked), 1 (locked, no waiters) or 2 (locked, maybe
//! waiters). Lock: `cmpxchg(0→1)`; if that fails, `swap(2)` and `FUTEX_WAIT` while the old value
//! was not 0. Unlock: `fetch_sub(1)`; if the old value was 2, store 0 and `FUTEX_WAKE` one waiter.
//! It never spins (unlike glibc's adaptive mutexes), so every acquisition that finds the lock
//! held sleeps in the kernel, and once contended the word stays at 2 until some lock wins the
//! fast path again, so unlocks keep calling `FUTEX_WAKE`: a convoy, measured as is. The lock
//! path is `futex_mutex_lock`, never inlined, so a lock profiler can attribute waits to it.
//!
//! The words live in a shared mapping and the futexes are not private, so `--mode processes`
//! contends exactly like threads. `shared=true`: one mutex for all tasks (contention);
//! `shared=false`: one per task, 256 bytes apart (no false sharing): the uncontended cost.
//! Busy work is a calibrated chain of register-only xorshift steps (calibrated once per trial),
//! so `hold` and `work` are amounts of work, not of wall time: a preempted task does not finish
//! its critical section early. The lock is held a fraction hold / (hold + work + ~30 ns) of each
//! task's time, so with the defaults (about 9%) a shared mutex saturates near N = 11: below that,
//! contention is occasional and shared and private differ little; `hold=work` shows the
//! collapse at N=2 already.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, workload_error};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "futex_mutex";
/// Distance between private mutex words, in u32s: 256 bytes (two lines, against the
/// adjacent-line prefetcher).
const STRIDE: usize = 64;
/// Aim for steps of about this many nanoseconds of busy work.
const STEP_NS: u64 = 20_000;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one lock + unlock of a three-state futex mutex (Drepper's mutex 3), with `hold` ns of busy work inside and `work` ns outside",
    stresses: "shared=true: the lock word's cache line and, under contention, futex wait/wake (futex hash bucket lock, sleep and wake-up); shared=false: the uncontended atomic fast path only",
    params: &[
        ParamSpec {
            name: "shared",
            default: "false",
            kind: ParamKind::Bool,
            help: "true: one mutex for all tasks; false: one mutex per task",
        },
        ParamSpec {
            name: "hold",
            default: "100",
            kind: ParamKind::Count {
                min: 0,
                max: 1_000_000_000,
            },
            help: "nanoseconds of busy work inside the critical section",
        },
        ParamSpec {
            name: "work",
            default: "1000",
            kind: ParamKind::Count {
                min: 0,
                max: 1_000_000_000,
            },
            help: "nanoseconds of busy work between unlock and the next lock",
        },
    ],
    uses_files: false,
};

const EXTRAS: &[&str] = &["contended", "futex_waits", "futex_wakes"];

pub(super) struct FutexMutex;

impl Workload for FutexMutex {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        let shared = params.flag("shared")?;
        let per_ns = busy_iterations_per_ns();
        let iterations = |ns: u64| (ns as f64 * per_ns).round() as u64;
        let (hold, work) = (params.count("hold")?, params.count("work")?);
        let region = sys::SharedRegion::new((ctx.tasks + 1) * STRIDE * 4)
            .map_err(|e| LabError::sys(format!("{NAME}: shared mutex mapping"), e))?;
        Ok(Box::new(MutexPrepared {
            shared,
            hold_iterations: iterations(hold),
            work_iterations: iterations(work),
            batch: (STEP_NS / (hold + work + 50)).max(1),
            region,
        }))
    }
}

/// Busy work: `iterations` xorshift64 steps (3 shifts and 3 xors, each depending on the last:
/// about 6 cycles) on a register. No memory access, so its speed does not depend on
/// store-to-load forwarding (docs/notes/workloads.md); and the compiler cannot shortcut the
/// chain (unlike a linear congruential step, which it unrolls into a closed form).
#[inline(never)]
fn busy(iterations: u64) {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15_u64);
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x);
}

/// How many [`busy`] iterations this CPU does per nanosecond (the best of a few timings, the
/// least disturbed one).
fn busy_iterations_per_ns() -> f64 {
    const ITERATIONS: u64 = 1 << 20;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        busy(ITERATIONS);
        best = best.min(start.elapsed().as_nanos().max(1) as f64);
    }
    ITERATIONS as f64 / best
}

/// What the slow paths did, per task.
#[derive(Debug, Default, Clone, Copy)]
struct LockStats {
    /// Acquisitions that missed the fast path (the word was not 0).
    contended: u64,
    /// FUTEX_WAIT calls.
    waits: u64,
    /// FUTEX_WAKE calls.
    wakes: u64,
}

/// Acquires the mutex at `word` (Drepper's mutex 3). Never inlined: the name is what a profile
/// or a futex-wait attribution shows.
#[inline(never)]
fn futex_mutex_lock(word: &AtomicU32, stats: &mut LockStats) -> Result<(), LabError> {
    let mut c = match word.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed) {
        Ok(_) => return Ok(()),
        Err(c) => c,
    };
    stats.contended += 1;
    if c != 2 {
        c = word.swap(2, Ordering::Acquire);
    }
    while c != 0 {
        stats.waits += 1;
        sys::futex_wait(word, 2, None)
            .map_err(|e| LabError::sys(format!("{NAME}: waiting for the mutex"), e))?;
        c = word.swap(2, Ordering::Acquire);
    }
    Ok(())
}

/// Releases the mutex at `word`, waking one waiter if there may be any.
#[inline(never)]
fn futex_mutex_unlock(word: &AtomicU32, stats: &mut LockStats) -> Result<(), LabError> {
    if word.fetch_sub(1, Ordering::Release) != 1 {
        word.store(0, Ordering::Release);
        stats.wakes += 1;
        sys::futex_wake(word, 1)
            .map_err(|e| LabError::sys(format!("{NAME}: waking a waiter"), e))?;
    }
    Ok(())
}

struct MutexPrepared {
    shared: bool,
    hold_iterations: u64,
    work_iterations: u64,
    batch: u64,
    region: sys::SharedRegion,
}

impl Prepared for MutexPrepared {
    fn extra_names(&self) -> &'static [&'static str] {
        EXTRAS
    }
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let slot = if self.shared { 0 } else { (index + 1) * STRIDE };
        let word = self
            .region
            .u32s()
            .get(slot)
            .ok_or_else(|| workload_error(NAME, format!("task {index} has no mutex slot")))?;
        Ok(Box::new(MutexTask {
            cfg: self,
            word,
            stats: LockStats::default(),
        }))
    }
}

struct MutexTask<'a> {
    cfg: &'a MutexPrepared,
    word: &'a AtomicU32,
    stats: LockStats,
}

impl TaskLoop for MutexTask<'_> {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        let cfg = self.cfg;
        for _ in 0..cfg.batch {
            futex_mutex_lock(self.word, &mut self.stats)?;
            busy(cfg.hold_iterations);
            futex_mutex_unlock(self.word, &mut self.stats)?;
            busy(cfg.work_iterations);
        }
        Ok(cfg.batch)
    }
    fn extras(&self) -> Vec<(&'static str, u64)> {
        vec![
            (EXTRAS[0], self.stats.contended),
            (EXTRAS[1], self.stats.waits),
            (EXTRAS[2], self.stats.wakes),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mutex_excludes_and_counts_its_slow_paths() {
        let word = AtomicU32::new(0);
        let inside = AtomicU32::new(0);
        let total = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut stats = LockStats::default();
                    for _ in 0..20_000 {
                        futex_mutex_lock(&word, &mut stats).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "two holders");
                        // A plain read-modify-write: lost updates would show a broken mutex.
                        let v = total.load(Ordering::Relaxed);
                        busy(20);
                        total.store(v + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        futex_mutex_unlock(&word, &mut stats).unwrap();
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 80_000);
        assert_eq!(word.load(Ordering::Relaxed), 0, "left unlocked");
    }

    #[test]
    fn an_uncontended_mutex_never_leaves_the_fast_path() {
        let word = AtomicU32::new(0);
        let mut stats = LockStats::default();
        for _ in 0..1000 {
            futex_mutex_lock(&word, &mut stats).unwrap();
            futex_mutex_unlock(&word, &mut stats).unwrap();
        }
        assert_eq!((stats.contended, stats.waits, stats.wakes), (0, 0, 0));
    }

    #[test]
    fn busy_work_is_calibrated() {
        let per_ns = busy_iterations_per_ns();
        assert!(per_ns > 0.01 && per_ns < 100.0, "{per_ns} iterations/ns");
        let start = Instant::now();
        busy((1_000_000.0 * per_ns) as u64); // 1 ms
        let took = start.elapsed().as_nanos();
        // Generous: a loaded 2-CPU machine may preempt us; but never far faster than calibrated.
        assert!(took > 500_000, "{took} ns for 1 ms of work");
    }
}
