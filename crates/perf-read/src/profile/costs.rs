//! What reading a profile gives: its functions ([`FunctionCost`]), DSOs ([`DsoCost`]) and
//! unique call chains ([`StackCost`]), together a [`Profile`].

/// One symbolised function and its cost in one profile.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCost {
    /// Demangled symbol name, or `[unknown]` when the address has no symbol.
    pub name: String,
    /// `[kernel]`, or the mapped file's name (`libc.so.6`, `scalelab`).
    pub dso: String,
    /// Whether the function is in the kernel (image or module) rather than user space.
    pub kernel: bool,
    /// Samples whose leaf frame is this function.
    pub self_samples: u64,
    /// Sum of those samples' periods (ns for cpu-clock, cycles for cycles).
    pub self_period: u64,
    /// Samples with this function anywhere on the stack (counted once per sample).
    pub total_samples: u64,
    /// Sum of those samples' periods (same unit as `self_period`).
    pub total_period: u64,
    /// The symbol's size in bytes, when the symbol table gives it.
    pub size: Option<u64>,
}

/// One DSO's self cost.
#[derive(Debug, Clone, PartialEq)]
pub struct DsoCost {
    /// `[kernel]`, or the mapped file's name, as in [`FunctionCost::dso`].
    pub dso: String,
    /// Whether the DSO is the kernel.
    pub kernel: bool,
    /// Samples whose leaf frame is in this DSO.
    pub samples: u64,
    /// Sum of those samples' periods (ns for cpu-clock, cycles for cycles).
    pub period: u64,
}

/// One unique call chain, by function, and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct StackCost {
    /// The chain's functions, root first, as indexes into [`Profile::functions`].
    pub frames: Vec<u32>,
    /// Samples with this chain.
    pub samples: u64,
    /// Sum of those samples' periods (ns for cpu-clock, cycles for cycles).
    pub period: u64,
}

/// How many samples a profile kept and how many it left out, and why: counted once, while the
/// perf.data is read, and handed on whole to the aggregated [`Profile`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleTally {
    /// Samples kept (inside the window, when one was given).
    pub samples: u64,
    /// Their summed period.
    pub period: u64,
    /// Samples outside the window, dropped.
    pub outside_window: u64,
    /// Samples in the window of threads other than `crate::ProfileOptions::threads` and
    /// `crate::ProfileOptions::partners`, dropped.
    pub other_threads: u64,
    /// Samples of processes outside the wrapped program's tree (a recording of every CPU
    /// samples them all), dropped.
    pub other_processes: u64,
    /// Samples in the window of `crate::ProfileOptions::partners`, not aggregated.
    pub partner_samples: u64,
    /// Their summed period.
    pub partner_period: u64,
    /// PERF_RECORD_THROTTLE records: the kernel lowered the sampling rate.
    pub throttled: u64,
    /// Samples the kernel lost (ring buffer full), from PERF_RECORD_LOST.
    pub lost: u64,
}

/// A parsed, symbolised and aggregated profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// The sampled event as perf.data names it (`cpu-clock`, `cycles`).
    pub event: String,
    /// What the samples were, and those left out.
    pub tally: SampleTally,
    /// Functions, most self period first.
    pub functions: Vec<FunctionCost>,
    /// DSOs, most self period first.
    pub dsos: Vec<DsoCost>,
    /// Unique call chains with their weight.
    pub stacks: Vec<StackCost>,
    /// Unique addresses that were symbolised.
    pub unique_addresses: usize,
    /// Caveats: no kernel symbols, unreadable mapped files.
    pub notes: Vec<String>,
}
