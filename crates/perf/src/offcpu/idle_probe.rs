//! [`probe_idle_tracing`]: does this kernel record anything while a CPU idles? A thread pinned
//! to each CPU naps again and again under an [`OffCpuTracer`]; a CPU where no idle wake-up is
//! recorded is [`IdleCpu::silent`]: every tracer misses the wake-ups taken there while it idles.
//!
//! It runs only when asked (`scalelab doctor`), starts and joins its own threads, and changes no
//! setting. Where it was seen: `docs/notes/perf-tracers.md`.

use std::time::Duration;

use crate::offcpu::events::IdleCpu;
use crate::offcpu::perf::{OffCpuTraceConfig, OffCpuTracer};
use crate::trace::ring::online_cpus;
use perf_read::error::PerfError;

/// What one CPU's napping thread saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleProbe {
    /// The CPU, with the tracer's count of idle entries and idle-context wake-ups there.
    pub idle: IdleCpu,
    /// Naps taken on it.
    pub naps: u32,
    /// Naps whose wake-up the trace recorded (the rest ended at the switch-in).
    pub woken_seen: u32,
}

impl IdleProbe {
    /// True when the CPU recorded nothing while idle: [`IdleCpu::silent`].
    pub fn silent(&self) -> bool {
        self.idle.silent()
    }
}

/// Naps `naps` times for `nap` on every online CPU at once, each in a thread pinned there (a
/// CPU this process may not run on is left out), and returns per CPU what the trace saw. Needs
/// what `--offcpu` needs (root or CAP_PERFMON, a mounted tracefs). Takes about `naps × nap`.
pub fn probe_idle_tracing(naps: u32, nap: Duration) -> Result<Vec<IdleProbe>, PerfError> {
    let mut tracer = OffCpuTracer::open(&OffCpuTraceConfig {
        stack_size: 0,
        ..OffCpuTraceConfig::default()
    })?;
    let sleepers: Vec<_> = online_cpus()
        .into_iter()
        .map(|cpu| {
            std::thread::spawn(move || {
                sys::set_current_affinity(&[cpu]).ok()?;
                for _ in 0..naps {
                    std::thread::sleep(nap);
                }
                Some((cpu as u32, sys::gettid() as u32))
            })
        })
        .collect();
    let sleepers: Vec<(u32, u32)> = sleepers
        .into_iter()
        .filter_map(|s| s.join().ok().flatten())
        .collect();
    tracer.drain();
    let trace = tracer.finish();
    Ok(sleepers
        .into_iter()
        .map(|(cpu, tid)| {
            let mine = trace.episodes.iter().filter(|e| e.tid == tid);
            IdleProbe {
                idle: trace
                    .idle_cpus
                    .iter()
                    .find(|c| c.cpu == cpu)
                    .copied()
                    .unwrap_or(IdleCpu {
                        cpu,
                        ..IdleCpu::default()
                    }),
                naps,
                woken_seen: mine.filter(|e| e.woken).count() as u32,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU is called silent exactly where the naps' wake-ups go missing, on a kernel that
    /// traces its idle task (every wake-up seen, no CPU silent) and on one that does not (this
    /// project's KVM guest: CPU 1). A CPU too busy to go idle 100 times (other tests running)
    /// is skipped, saying so. Needs root and tracefs; says why it skipped otherwise.
    #[test]
    fn a_cpu_is_called_silent_exactly_where_wake_ups_from_its_idle_task_go_missing() {
        let probes = match probe_idle_tracing(150, Duration::from_millis(1)) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skipped: off-CPU tracing unavailable here: {e}");
                return;
            }
        };
        assert!(!probes.is_empty(), "no CPU probed");
        for p in probes {
            eprintln!("{p:?}");
            if p.idle.went_idle < IdleCpu::SILENT_MIN {
                eprintln!("CPU {}: too busy to tell: skipped", p.idle.cpu);
                continue;
            }
            let missed = p.naps - p.woken_seen.min(p.naps);
            if p.silent() {
                assert!(2 * missed > p.naps, "called silent, yet woken: {p:?}");
            } else {
                assert!(10 * missed < p.naps, "not silent, yet unwoken: {p:?}");
            }
        }
    }
}
