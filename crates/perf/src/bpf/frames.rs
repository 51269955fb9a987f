//! [`trim_bpf_frames`]: kernel call chains without the BPF program's own frames on top, so
//! that a chain taken by an in-kernel tracer starts where the perf tracer's does.
//!
//! Shared by every tracer that can see a chain a BPF program took; it drops frames only among
//! the first few and only by symbol name, never an address it cannot name.

/// BPF frames above the traced function in a kernel chain taken by the program.
const BPF_FRAME_PREFIXES: [&str; 5] = [
    "bpf_prog_",
    "bpf_trace_run",
    "__bpf_trace_",
    "__traceiter_",
    "bpf_get_stack",
];

/// How deep in a kernel chain the BPF frames can be.
const BPF_FRAMES_AT_MOST: usize = 6;

/// Drops the BPF program's own frames (and the tracepoint's) from the top of kernel chains,
/// so that a chain starts where the perf tracer's does (`__schedule`, `try_to_wake_up`): every
/// frame down to the last one of [`BPF_FRAME_PREFIXES`] among the first [`BPF_FRAMES_AT_MOST`]
/// (the program itself may be named by no symbol, or by the one before it: `_einittext`).
pub(crate) fn trim_bpf_frames(chains: &mut [Vec<u64>]) {
    let Ok(kallsyms) = perf_read::Kallsyms::load() else {
        return;
    };
    for chain in chains {
        let bpf = |ip: &u64| {
            kallsyms
                .function(*ip)
                .is_some_and(|(s, _)| BPF_FRAME_PREFIXES.iter().any(|p| s.name.starts_with(p)))
        };
        // A user chain's addresses are no kernel symbols: nothing is dropped.
        if let Some(last) = chain.iter().take(BPF_FRAMES_AT_MOST).rposition(bpf) {
            chain.drain(..=last);
        }
    }
}
