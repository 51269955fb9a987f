//! [`SamplingTally`]: what the in-kernel off-CPU tracer counted beside its sample (blocking
//! switches, sampled episodes, records lost), returned in [`crate::OffCpuTrace::sampling`].
//!
//! A plain value: read from the program's `stats` slots in the order `offcpu.bpf.c` writes
//! them; the perf tracer, which samples nothing, returns none.

/// The `stats` array's slots (`STAT_*`), summed over the CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplingTally {
    /// Blocking switches of traced threads since the tasks' release (`sample_from`): every
    /// episode that could be sampled, sampled or not.
    pub blocking_switches: u64,
    /// Of them, the episodes whose call chains were recorded (a BEGIN record written).
    pub sampled: u64,
    /// Episodes picked for a chain that the ring buffer had no room for.
    pub begin_lost: u64,
    /// Wake-ups of sampled episodes the ring buffer had no room for (the episode then ends at
    /// the end of the trace, and is counted unwoken).
    pub end_lost: u64,
    /// Thread exits the ring buffer had no room for (the thread's sums are lost).
    pub exit_lost: u64,
    /// Threads created by traced ones but not traced: the kernel's table was full.
    pub threads_untraced: u64,
    /// Sampled episodes whose user stack copy was shorter than the record holds (`STACK_BYTES`, 4096: the stack's
    /// top was near).
    pub short_stacks: u64,
    /// Unsampled episodes of 50 ms or more (`LONG_NS`), recorded whole at their end: every
    /// episode that long is in the trace, standing for itself alone.
    pub long: u64,
    /// Of them, those the ring buffer had no room for.
    pub long_lost: u64,
    /// Stints on a CPU of traced threads whose switch-in the program did not see (a switch
    /// that fired no tracepoint consumer: on this project's VM, every one away from the
    /// sandbox agent's hidden threads), dated by the kernel's own arrival time instead.
    pub unseen_switch_ins: u64,
    /// The lowest sampled episodes a second per CPU the drain lowered the tracer to, when it
    /// fell behind (`drain_pace`); `None` when it kept up at the rate set.
    pub rate_lowered_to: Option<u64>,
}

impl SamplingTally {
    /// From the per-CPU `stats` slots, summed.
    pub(crate) fn from_slots(slots: &[u64]) -> SamplingTally {
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        SamplingTally {
            blocking_switches: at(0),
            sampled: at(1),
            begin_lost: at(2),
            end_lost: at(3),
            exit_lost: at(4),
            threads_untraced: at(5),
            short_stacks: at(6),
            long: at(7),
            long_lost: at(8),
            unseen_switch_ins: at(9),
            rate_lowered_to: None,
        }
    }

    /// Records the kernel could not write (BEGIN, END, EXIT and LONG together).
    pub fn lost(&self) -> u64 {
        self.begin_lost + self.end_lost + self.exit_lost + self.long_lost
    }
}
