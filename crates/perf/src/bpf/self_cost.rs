//! [`ProgramRuns`]: what an in-kernel tracer's own programs cost the traced threads, read from
//! its `self_costs` map (`bpf/self_cost.h`; the same layout, change both together).
//!
//! Runs in a traced thread's context are counted, a sample of them timed and every run that
//! walked a call chain or copied a stack timed too; the sum is estimated from those. It only
//! reads the map: it never switches on the kernel's own BPF statistics. Why this estimate, and
//! what was measured: `docs/notes/perf-tracers.md`.

use aya::Ebpf;
use aya::maps::{MapData, PerCpuArray};

/// One CPU's (or, summed, every CPU's) `struct self_cost`: its programs' runs counted, and the
/// time of those timed in a traced thread's context.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramRuns {
    /// Runs counted: in a traced thread's context, or (a waking) possibly so.
    pub runs: u64,
    /// Of them, runs picked 1 in 16 and timed (no chain walked).
    pub timed_runs: u64,
    /// Their time in a traced thread's context (a timed run in another's adds 0).
    pub timed_ns: u64,
    /// Runs that walked a call chain or copied a stack, each timed.
    pub walk_runs: u64,
    /// Their time in a traced thread's context.
    pub walk_ns: u64,
    /// Where every run was timed ([`BpfOffCpuConfig::time_every_run`](crate::BpfOffCpuConfig)):
    /// the time of every run without a walk (else 0): with `walk_ns`, the whole that
    /// [`estimated_ns`](Self::estimated_ns) estimates.
    pub all_ns: u64,
}

// SAFETY: `ProgramRuns` is `repr(C)`, six `u64`s with no padding, the layout of
// `struct self_cost` in bpf/self_cost.h, so every bit pattern the kernel writes is a value.
unsafe impl aya::Pod for ProgramRuns {}

impl ProgramRuns {
    /// The loaded object's `self_costs` map summed over the CPUs (`None`: no such map, or it
    /// could not be read).
    pub(crate) fn read(bpf: &Ebpf) -> Option<ProgramRuns> {
        let map = bpf.map("self_costs")?;
        let costs = PerCpuArray::<&MapData, ProgramRuns>::try_from(map).ok()?;
        let per_cpu = costs.get(&0, 0).ok()?;
        Some(
            per_cpu
                .iter()
                .fold(ProgramRuns::default(), |sum, c| ProgramRuns {
                    runs: sum.runs + c.runs,
                    timed_runs: sum.timed_runs + c.timed_runs,
                    timed_ns: sum.timed_ns + c.timed_ns,
                    walk_runs: sum.walk_runs + c.walk_runs,
                    walk_ns: sum.walk_ns + c.walk_ns,
                    all_ns: sum.all_ns + c.all_ns,
                }),
        )
    }

    /// What was counted since `earlier` (a read of the same map before).
    pub(crate) fn since(self, earlier: ProgramRuns) -> ProgramRuns {
        ProgramRuns {
            runs: self.runs.saturating_sub(earlier.runs),
            timed_runs: self.timed_runs.saturating_sub(earlier.timed_runs),
            timed_ns: self.timed_ns.saturating_sub(earlier.timed_ns),
            walk_runs: self.walk_runs.saturating_sub(earlier.walk_runs),
            walk_ns: self.walk_ns.saturating_sub(earlier.walk_ns),
            all_ns: self.all_ns.saturating_sub(earlier.all_ns),
        }
    }

    /// The programs' time in the traced threads' context, estimated: the walks' (each timed)
    /// plus the mean of the other timed runs × the other runs. With no other run timed (fewer
    /// than 16 of them), their time is unknown and left out: the estimate is then the walks'
    /// alone, a floor.
    pub fn estimated_ns(&self) -> u64 {
        self.thread_ns(self.runs.saturating_sub(self.walk_runs), self.walk_ns)
    }

    /// One thread's share of the estimate: its `runs` without a walk at the picked runs' mean,
    /// plus its walks' time (`walk_ns`, the kernel's `struct thread` fields `prog_runs` and
    /// `prog_walk_ns` over the same window as these sums).
    pub fn thread_ns(&self, runs: u64, walk_ns: u64) -> u64 {
        let rest = if self.timed_runs > 0 {
            (self.timed_ns as f64 / self.timed_runs as f64 * runs as f64).round() as u64
        } else {
            0
        };
        walk_ns + rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_walks_time_plus_the_timed_runs_mean_times_the_other_runs() {
        let runs = ProgramRuns {
            runs: 1_610,
            timed_runs: 100,
            timed_ns: 20_000,
            walk_runs: 10,
            walk_ns: 50_000,
            all_ns: 0,
        };
        // 1,600 other runs at 200 ns each, and the walks' 50 µs.
        assert_eq!(runs.estimated_ns(), 50_000 + 320_000);
        let none_timed = ProgramRuns {
            timed_runs: 0,
            timed_ns: 0,
            ..runs
        };
        assert_eq!(none_timed.estimated_ns(), 50_000, "at least the walks'");
    }

    #[test]
    fn a_window_is_the_difference_of_two_reads() {
        let before = ProgramRuns {
            runs: 100,
            timed_runs: 6,
            timed_ns: 1_200,
            walk_runs: 1,
            walk_ns: 5_000,
            all_ns: 0,
        };
        let after = ProgramRuns {
            runs: 420,
            timed_runs: 26,
            timed_ns: 5_200,
            walk_runs: 3,
            walk_ns: 14_000,
            all_ns: 0,
        };
        let window = after.since(before);
        assert_eq!(
            window,
            ProgramRuns {
                runs: 320,
                timed_runs: 20,
                timed_ns: 4_000,
                walk_runs: 2,
                walk_ns: 9_000,
                all_ns: 0,
            }
        );
        // 318 other runs at 200 ns, and the walks' 9 µs.
        assert_eq!(window.estimated_ns(), 9_000 + 63_600);
    }
}
