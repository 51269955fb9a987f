//! What both in-kernel tracers ([`crate::bpf_offcpu`], [`crate::bpf_locks`]) do to load their
//! BPF object with aya: the error that names the fix, the kernel's BTF, a typed map taken out
//! of the object, attaching (and at the end detaching) their `tp_btf` programs, and reading
//! the fields of their ring buffers' records.

use aya::maps::Map;
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf};
use perf_read::error::PerfError;

/// An in-kernel tracer's failure at `what`, with the fix: privileges and BTF, or the perf
/// tracer instead.
pub(crate) fn bpf_error(what: &str, e: impl std::fmt::Display) -> PerfError {
    PerfError::Bpf {
        what: what.to_string(),
        cause: e.to_string(),
        fix: "run as root (or with CAP_BPF and CAP_PERFMON) on a kernel with BTF (/sys/kernel/btf/vmlinux); --tracer perf uses perf's ring buffers instead".to_string(),
    }
}

/// The object, or why this build has none (build.rs compiles it only with clang and libbpf's
/// headers).
pub(crate) fn object(object: Option<&'static [u8]>) -> Result<&'static [u8], PerfError> {
    object.ok_or_else(|| PerfError::Bpf {
        what: "this scalelab was built without it".into(),
        cause: "clang or libbpf's headers were missing when it was built".into(),
        fix: "apt install clang libbpf-dev and rebuild, or use --tracer perf".into(),
    })
}

/// The running kernel's BTF, which `tp_btf` programs and CO-RE reads need.
pub(crate) fn kernel_btf() -> Result<Btf, PerfError> {
    Btf::from_sys_fs().map_err(|e| bpf_error("reading the kernel's BTF", e))
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
