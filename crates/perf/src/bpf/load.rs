//! What both in-kernel tracers ([`crate::offcpu::bpf`], [`crate::locks::bpf`]) do to load their
//! BPF object with aya: the error that names the fix, the kernel's BTF, a typed map taken out
//! of the object, attaching (and at the end detaching) their `tp_btf` programs, reading their
//! per-CPU counters and the fields of their ring buffers' records, and unwinding the user
//! stacks those records copy.

use aya::maps::{Map, MapData, PerCpuArray};
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};
use perf_read::error::PerfError;
use perf_read::unwind::{Unwinder, UserRegs};

use crate::trace::ring::{UnwindCache, UnwindState, cached_user_chain};
use crate::trace::sample::{ChainTable, Sample};

/// An in-kernel tracer's failure at `what`, with the fix: privileges and BTF, or the perf
/// tracer instead.
pub(crate) fn bpf_error(what: &str, e: impl std::fmt::Display) -> PerfError {
    PerfError::Bpf {
        what: what.to_string(),
        cause: e.to_string(),
        fix: "run as root (or with CAP_BPF and CAP_PERFMON) on a kernel with BTF (/sys/kernel/btf/vmlinux); --tracer perf uses perf's ring buffers instead".to_string(),
    }
}

/// The object, or why this build has none (build.rs embeds the committed objects but where
/// `SCALELAB_NO_BPF=1` or the target is not x86_64, and says why in `SCALELAB_BPF_ABSENT`).
pub(crate) fn object(object: Option<&'static [u8]>) -> Result<&'static [u8], PerfError> {
    object.ok_or_else(|| PerfError::Bpf {
        what: "this scalelab was built without it".into(),
        cause: option_env!("SCALELAB_BPF_ABSENT")
            .unwrap_or("its build left the BPF objects out")
            .into(),
        fix: "rebuild without SCALELAB_NO_BPF (for x86_64), or use --tracer perf".into(),
    })
}

/// The running kernel's BTF, which `tp_btf` programs and CO-RE reads need.
pub(crate) fn kernel_btf() -> Result<Btf, PerfError> {
    Btf::from_sys_fs().map_err(|e| bpf_error("reading the kernel's BTF", e))
}

/// A load test of `object` (`None`: this build has none): loads it against the kernel's BTF,
/// loads each of `programs` into the kernel (the verifier's judgement) and attaches it, then
/// detaches and drops everything. Traces nothing and keeps nothing.
pub(crate) fn load_test(
    object: Option<&'static [u8]>,
    programs: &[(&str, &str)],
) -> Result<(), PerfError> {
    let object = self::object(object)?;
    let btf = kernel_btf()?;
    let mut bpf = EbpfLoader::new()
        .btf(Some(&btf))
        .load(object)
        .map_err(|e| bpf_error("loading the program", e))?;
    let attached = attach(&mut bpf, &btf, programs);
    detach(&mut bpf, programs);
    attached
}

/// Map `name` of the loaded object, taken out of it as a `T`.
pub(crate) fn take_map<T>(bpf: &mut Ebpf, name: &str) -> Result<T, PerfError>
where
    T: TryFrom<Map>,
    T::Error: std::fmt::Display,
{
    bpf.take_map(name)
        .ok_or_else(|| bpf_error("the program", format!("no `{name}` map")))?
        .try_into()
        .map_err(|e| bpf_error(&format!("the `{name}` map"), e))
}

/// Loads each `(program, tracepoint)` of `programs` and attaches it.
pub(crate) fn attach(
    bpf: &mut Ebpf,
    btf: &Btf,
    programs: &[(&str, &str)],
) -> Result<(), PerfError> {
    for &(program, tracepoint) in programs {
        let p: &mut BtfTracePoint = bpf
            .program_mut(program)
            .ok_or_else(|| bpf_error("the program", format!("no `{program}`")))?
            .try_into()
            .map_err(|e| bpf_error(program, e))?;
        p.load(tracepoint, btf)
            .map_err(|e| bpf_error(&format!("loading {program}"), e))?;
        p.attach()
            .map_err(|e| bpf_error(&format!("attaching to {tracepoint}"), e))?;
    }
    Ok(())
}

/// Detaches and unloads each of `programs` that was loaded (the rest of the object, its maps,
/// stays readable).
pub(crate) fn detach(bpf: &mut Ebpf, programs: &[(&str, &str)]) {
    for &(program, _) in programs {
        let p: Option<&mut BtfTracePoint> =
            bpf.program_mut(program).and_then(|p| p.try_into().ok());
        if let Some(p) = p {
            let _ = p.unload();
        }
    }
}

/// The little-endian `u32` at offset `o` of a record.
pub(crate) fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

/// The little-endian `u64` at offset `o` of a record.
pub(crate) fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Frames from a `bpf_get_stack` result: `bytes` (negative: an error, no frames) of the
/// `max` words at `at`.
pub(crate) fn frames(b: &[u8], at: usize, max: usize, bytes: i32) -> Vec<u64> {
    let n = usize::try_from(bytes).unwrap_or(0) / 8;
    (0..n.min(max)).map(|i| u64_at(b, at + 8 * i)).collect()
}

/// The least `records` ring: what every machine had (the object's own size).
pub(crate) const MIN_RING_BYTES: u64 = 8 << 20;
/// The largest `records` ring a tracer takes.
pub(crate) const MAX_RING_BYTES: u64 = 256 << 20;
/// The sampled records a `records` ring holds, in seconds of them at twice the sampling rate:
/// what a drain that comes late (a starved or slow machine's drain thread, a guest's vCPU the
/// host did not run) would otherwise lose. A CPU's rate is read from its last windows, so a
/// burst samples above it before it is known.
const RING_SECONDS: u64 = 1;

/// The `records` ring buffer's size for a tracer sampling about `samples_per_cpu_s` records of
/// `record_bytes` at most a second on each of `cpus` CPUs: [`RING_SECONDS`] of them at twice
/// that rate, as the power of two the kernel requires, between [`MIN_RING_BYTES`] and
/// [`MAX_RING_BYTES`].
pub(crate) fn records_ring_bytes(cpus: usize, samples_per_cpu_s: u64, record_bytes: usize) -> u32 {
    let per_s = samples_per_cpu_s.saturating_mul(cpus.max(1) as u64);
    let record = (record_bytes as u64 + 8).next_multiple_of(8);
    let wanted = per_s
        .saturating_mul(2 * RING_SECONDS)
        .saturating_mul(record);
    let bytes = wanted
        .clamp(MIN_RING_BYTES, MAX_RING_BYTES)
        .next_power_of_two()
        .min(MAX_RING_BYTES);
    bytes as u32
}

/// `per_s` sampled records a second on the whole machine shared out over `cpus` CPUs, at least
/// `least` each.
pub(crate) fn per_cpu_rate(per_s: u64, least: u64, cpus: usize) -> u64 {
    (per_s / cpus.max(1) as u64).max(least)
}

/// The program's per-CPU counters (its `stats` array), each summed over the CPUs; empty when
/// the map cannot be read.
pub(crate) fn counters(bpf: &Ebpf) -> Vec<u64> {
    let Some(map) = bpf.map("stats") else {
        return Vec::new();
    };
    let Ok(stats) = PerCpuArray::<&MapData, u64>::try_from(map) else {
        return Vec::new();
    };
    stats
        .iter()
        .map(|v| v.map(|per_cpu| per_cpu.iter().sum()).unwrap_or(0))
        .collect()
}

/// What unwinds the user stack copies of sampled records: the unwinder (fed the processes'
/// mappings by the side band), its cache of unwound stacks, and the processes whose maps were
/// re-read during the current drain.
pub(crate) struct StackUnwinding {
    pub unwinder: Unwinder,
    unwound: UnwindCache,
    reloaded: Vec<i32>,
}

impl StackUnwinding {
    pub(crate) fn new() -> StackUnwinding {
        StackUnwinding {
            unwinder: Unwinder::default(),
            unwound: UnwindCache::new(),
            reloaded: Vec::new(),
        }
    }

    /// Reads process `pid`'s mappings and their files' unwind information now, ahead of its
    /// first sampled stack (on a slow machine the first drain spent seconds on it while the
    /// ring filled).
    pub(crate) fn preload(&mut self, pid: u32) {
        self.unwinder.load_process(pid as i32);
    }

    /// A new drain: a process's maps may be re-read once more.
    pub(crate) fn next_drain(&mut self) {
        self.reloaded.clear();
    }

    /// The chain (interned in `chains`, at most `max` frames) of thread `tid` of `pid` at `time`
    /// from its user registers and stack copy, or from `frame_pointers` (the program's own
    /// walk) where they do not unwind; `u32::MAX` when neither gives one.
    pub(crate) fn chain(
        &mut self,
        (pid, tid, time): (u32, u32, u64),
        regs: UserRegs,
        stack: &[u8],
        frame_pointers: Vec<u64>,
        chains: &mut ChainTable,
        max: usize,
    ) -> u32 {
        let sample = Sample {
            pid,
            tid,
            time,
            cpu: 0,
            callchain: Vec::new(),
            raw: &[],
            regs: Some(regs),
            stack,
        };
        let mut unwind = UnwindState {
            unwinder: &mut self.unwinder,
            reloaded: &mut self.reloaded,
            defer: false,
        };
        cached_user_chain(
            &sample,
            frame_pointers,
            &mut unwind,
            &mut self.unwound,
            chains,
            max,
        )
        .unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_records_ring_holds_a_second_at_twice_the_rate_within_its_bounds() {
        // A futex record (16.7 KiB) at 1,000 a second over 2 or 16 CPUs: 32 MiB.
        let futex = 88 + 8 * 32 + 16384;
        assert_eq!(records_ring_bytes(2, 500, futex), 32 << 20);
        assert_eq!(records_ring_bytes(16, 62, futex), 32 << 20);
        // 10 a second on each of 1,024 CPUs: the most a tracer takes.
        assert_eq!(records_ring_bytes(1024, 10, futex), 256 << 20);
        // Few, small records: never below what every machine had.
        assert_eq!(records_ring_bytes(1, 10, 64), 8 << 20);
        for cpus in [1, 2, 3, 16, 64, 1000, 1024, 8192] {
            let b = records_ring_bytes(cpus, 1000 / cpus as u64 + 10, 5000);
            assert!(
                b.is_power_of_two() && u64::from(b) >= MIN_RING_BYTES,
                "{cpus}: {b}"
            );
            assert!(u64::from(b) <= MAX_RING_BYTES, "{cpus}: {b}");
        }
    }
}
