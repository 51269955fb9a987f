//! Reading perf.data records into unique stacks of unique frames.
//!
//! Each sample's call chain becomes a list of frame ids; identical lists are counted once. A
//! user frame is resolved through the process's mappings at the time of the sample (MMAP/MMAP2
//! records, copied to children on FORK, dropped on exec) into (mapped file, file offset), so the
//! same code in forked task processes interns to the same frame. Return addresses (every frame
//! but the leaf) are moved back one byte into the call instruction, as unwinders do, so a call
//! at the very end of a function is charged to that function.
//!
//! A file recorded with `--call-graph dwarf` has, instead of a user call chain, each sample's
//! user registers and a copy of its user stack: these are unwound here with the mapped files'
//! `.eh_frame` ([`crate::unwind`], `framehop`), the process's modules following the same
//! MMAP/FORK/exec records, and the unwound frames continue the sample's kernel chain.

use std::collections::HashMap;
use std::io::{BufReader, ErrorKind, Read, Seek};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, RecordType, SampleFormat, SampleRecord,
};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use rustc_hash::FxHashMap;

use super::costs::SampleTally;
use super::layout::{self, corrupt};
use super::record_guard::RecordGuard;
use super::sample_check::callchain_fits;
use super::workload_tree::WorkloadTree;
use crate::error::PerfError;
use crate::unwind::{MappedFile, Unwinder, UserRegs};

/// User frames unwound per sample, at most (perf's default `kernel.perf_event_max_stack`).
const MAX_USER_FRAMES: usize = 127;
/// x86_64 `perf_regs.h` register numbers.
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;

/// `PERF_CONTEXT_*` markers in a call chain are the values at and above this one (-4095).
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// One distinct code location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Frame {
    /// A kernel address.
    Kernel(u64),
    /// An offset in a mapped file (index into [`RawProfile::maps`]).
    User { map: u32, offset: u64 },
    /// A user address outside every known mapping.
    Unmapped(u64),
}

/// A unique call chain, leaf first, with how often it was sampled.
#[derive(Debug)]
pub(super) struct RawStack {
    pub frames: Box<[u32]>,
    pub samples: u64,
    pub period: u64,
}

/// Everything read from one perf.data, before symbolisation.
#[derive(Debug, Default)]
pub(super) struct RawProfile {
    pub event: String,
    pub frames: Vec<Frame>,
    pub stacks: Vec<RawStack>,
    /// Mapped file paths, as the MMAP records name them.
    pub maps: Vec<String>,
    /// Build ids perf recorded for mapped files (its build-id header section), by path.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// The samples kept and those left out.
    pub tally: SampleTally,
    /// Records that could not be parsed (corrupt), skipped.
    pub malformed: u64,
}

/// A mapping of one process: [start, end) maps file `map` from `pgoff`.
#[derive(Debug, Clone, Copy)]
struct Region {
    start: u64,
    end: u64,
    pgoff: u64,
    map: u32,
}

#[derive(Debug, Default)]
struct Builder {
    raw: RawProfile,
    frame_ids: FxHashMap<Frame, u32>,
    /// (pid, address, kernel) → frame id: skips the mapping lookup for addresses seen before.
    /// Cleared whenever a mapping changes, so it never outlives the mappings it was built from.
    address_ids: FxHashMap<(i32, u64, bool), u32>,
    stack_ids: FxHashMap<Box<[u32]>, u32>,
    map_ids: HashMap<String, u32>,
    /// Per process, sorted by start.
    regions: FxHashMap<i32, Vec<Region>>,
    scratch: Vec<u32>,
    /// Set when the samples carry user stacks (`--call-graph dwarf`).
    unwinder: Option<Unwinder>,
    /// Per mapped path, the ELF file to read (the path itself, or perf's build-id cache copy).
    elf_paths: HashMap<String, Option<std::path::PathBuf>>,
    /// (address, kernel) of the current sample's frames, leaf first.
    chain: Vec<(u64, bool)>,
    /// The wrapped program's processes: a recording of every CPU holds others' too.
    tree: WorkloadTree,
}

pub(super) fn read(
    path: &Path,
    window: Option<(u64, u64)>,
    (threads, partners, roots): (Option<&[u32]>, &[u32], &[u32]),
) -> Result<RawProfile, PerfError> {
    let fail = |cause: String| PerfError::ProfileData {
        path: path.display().to_string(),
        cause,
    };
    let input = sys::InputFile::open(path, sys::InputKind::PerfData)?;
    let len = input.size().unwrap_or(0);
    let file = input.into_file();
    read_from(
        BufReader::with_capacity(1 << 20, file),
        len,
        window,
        (threads, partners, roots),
    )
    .map_err(fail)
}

/// Reads the perf.data held by `source`, `len` bytes long; the error is the cause alone.
/// Samples of `threads` (all, when `None`) are kept; those of `partners` (sorted) are counted
/// apart; `roots` (when not empty) are the program's processes instead of perf's child.
pub(super) fn read_from<R: Read + Seek>(
    mut source: R,
    len: u64,
    window: Option<(u64, u64)>,
    (threads, partners, roots): (Option<&[u32]>, &[u32], &[u32]),
) -> Result<RawProfile, String> {
    let layout = layout::check(&mut source, len)?;
    let guarded =
        RecordGuard::new(source, len, &layout).map_err(|e| corrupt(format!("rewinding: {e}")))?;
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(guarded).map_err(|e| corrupt(format!("header: {e}")))?;
    let mut b = Builder::default();
    if !roots.is_empty() {
        b.tree = WorkloadTree::with_roots(roots);
    }
    b.raw.build_ids = perf_file
        .build_ids()
        .unwrap_or_default()
        .into_values()
        .map(|d| (String::from_utf8_lossy(&d.path).into_owned(), d.build_id))
        .collect();
    let dwarf = perf_file.event_attributes().iter().any(|a| {
        a.attr
            .sample_format
            .contains(SampleFormat::REGS_USER | SampleFormat::STACK_USER)
    });
    if dwarf {
        b.unwinder = Some(Unwinder::default());
    }
    // A fixed-period recording (`perf record -c N`) leaves the period out of its samples: each
    // one stands for N.
    let fixed_period = perf_file
        .event_attributes()
        .first()
        .and_then(|a| match a.attr.sampling_policy {
            linux_perf_data::linux_perf_event_reader::SamplingPolicy::Period(p) => Some(p.get()),
            _ => None,
        })
        .unwrap_or(1);
    // `cpu-clock:I` (a recording of every CPU, idle left out) is cpu-clock.
    b.raw.event = perf_file
        .event_attributes()
        .first()
        .and_then(|a| a.name())
        .map_or("unknown", |name| name.split(':').next().unwrap_or(name))
        .to_string();
    loop {
        let record = match record_iter.next_record(&mut perf_file) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(linux_perf_data::Error::IoError(e)) if e.kind() == ErrorKind::Unsupported => {
                return Err(format!("unsupported perf.data ({e})"));
            }
            Err(e) => return Err(corrupt(format!("records: {e}"))),
        };
        let PerfFileRecord::EventRecord { record, .. } = record else {
            continue;
        };
        if record.record_type == RecordType::SAMPLE && !callchain_fits(&record) {
            b.raw.malformed += 1;
            continue;
        }
        let Ok(parsed) = record.parse() else {
            b.raw.malformed += 1;
            continue;
        };
        match parsed {
            EventRecord::Sample(s) => b.sample(&s, window, threads, partners, fixed_period),
            EventRecord::Mmap(m) if m.cpu_mode != CpuMode::Kernel && m.is_executable => {
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                b.map(m.pid, m.address, m.length, m.page_offset, path);
            }
            EventRecord::Mmap2(m)
                if m.cpu_mode != CpuMode::Kernel && m.protection & libc::PROT_EXEC as u32 != 0 =>
            {
                let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                b.map(m.pid, m.address, m.length, m.page_offset, path);
            }
            EventRecord::Fork(f) if f.pid != f.ppid => {
                b.tree.fork(f.pid, f.ppid);
                if let Some(parent) = b.regions.get(&f.ppid).cloned() {
                    b.regions.insert(f.pid, parent);
                    b.address_ids.clear();
                }
                if let Some(u) = &mut b.unwinder {
                    u.fork(f.ppid, f.pid);
                }
            }
            EventRecord::Comm(c) if !c.is_execve => b.tree.comm(c.pid, &c.name.as_slice(), false),
            EventRecord::Comm(c) => {
                b.tree.comm(c.pid, &c.name.as_slice(), true);
                b.regions.remove(&c.pid);
                b.address_ids.clear();
                if let Some(u) = &mut b.unwinder {
                    u.forget(c.pid);
                }
            }
            EventRecord::Throttle(_) => b.raw.tally.throttled += 1,
            EventRecord::Lost(l) => b.raw.tally.lost = b.raw.tally.lost.saturating_add(l.count),
            _ => {}
        }
    }
    Ok(b.raw)
}

impl Builder {
    /// Counts sample `s`: another process's, outside the window, a partner's, or another
    /// thread's are counted apart; else its frames' stack gets its period.
    fn sample(
        &mut self,
        s: &SampleRecord<'_>,
        window: Option<(u64, u64)>,
        threads: Option<&[u32]>,
        partners: &[u32],
        fixed_period: u64,
    ) {
        if !self.tree.holds(s.pid.unwrap_or(-1)) {
            self.raw.tally.other_processes += 1;
            return;
        }
        if let (Some((lo, hi)), Some(t)) = (window, s.timestamp) {
            if t < lo || t > hi {
                self.raw.tally.outside_window += 1;
                return;
            }
        }
        let period = s.period.unwrap_or(fixed_period);
        if s.tid
            .is_some_and(|t| partners.binary_search(&(t as u32)).is_ok())
        {
            self.raw.tally.partner_samples += 1;
            self.raw.tally.partner_period += period;
            return;
        }
        if let (Some(threads), Some(tid)) = (threads, s.tid) {
            if threads.binary_search(&(tid as u32)).is_err() {
                self.raw.tally.other_threads += 1;
                return;
            }
        }
        let pid = s.pid.unwrap_or(-1);
        self.sample_frames(s);
        self.scratch.clear();
        for i in 0..self.chain.len() {
            let (addr, kernel) = self.chain[i];
            let addr = if i == 0 { addr } else { addr.saturating_sub(1) };
            let id = self.frame(pid, addr, kernel);
            self.scratch.push(id);
        }
        if self.scratch.is_empty() {
            return;
        }
        self.raw.tally.samples += 1;
        self.raw.tally.period = self.raw.tally.period.saturating_add(period);
        let stack = self.stack_id();
        let st = &mut self.raw.stacks[stack as usize];
        st.samples += 1;
        st.period = st.period.saturating_add(period);
    }

    /// The id of the stack in `scratch`, added when new.
    fn stack_id(&mut self) -> u32 {
        match self.stack_ids.get(self.scratch.as_slice()) {
            Some(&id) => id,
            None => {
                let frames: Box<[u32]> = self.scratch.clone().into_boxed_slice();
                let id = self.raw.stacks.len() as u32;
                self.raw.stacks.push(RawStack {
                    frames: frames.clone(),
                    samples: 0,
                    period: 0,
                });
                self.stack_ids.insert(frames, id);
                id
            }
        }
    }

    fn frame(&mut self, pid: i32, addr: u64, kernel: bool) -> u32 {
        if let Some(&id) = self.address_ids.get(&(pid, addr, kernel)) {
            return id;
        }
        let id = self.frame_uncached(pid, addr, kernel);
        self.address_ids.insert((pid, addr, kernel), id);
        id
    }

    fn frame_uncached(&mut self, pid: i32, addr: u64, kernel: bool) -> u32 {
        let frame = if kernel {
            Frame::Kernel(addr)
        } else {
            match self.regions.get(&pid).and_then(|r| lookup(r, addr)) {
                Some(r) => Frame::User {
                    map: r.map,
                    offset: (addr - r.start).wrapping_add(r.pgoff),
                },
                None => Frame::Unmapped(addr),
            }
        };
        *self.frame_ids.entry(frame).or_insert_with(|| {
            self.raw.frames.push(frame);
            (self.raw.frames.len() - 1) as u32
        })
    }

    /// The current sample's frames into `self.chain`, leaf first: its call chain (kernel and
    /// user), or its kernel chain followed by the user frames unwound from its stack copy, or
    /// its instruction pointer alone.
    fn sample_frames(&mut self, s: &SampleRecord<'_>) {
        self.chain.clear();
        let pid = s.pid.unwrap_or(-1);
        let unwound = self.unwind_user(pid, s);
        if let Some(chain) = s.callchain.as_ref().filter(|c| !c.is_empty()) {
            let mut kernel = s.cpu_mode == CpuMode::Kernel;
            for i in 0..chain.len() {
                let Some(addr) = chain.get(i) else { break };
                if addr >= PERF_CONTEXT_MAX {
                    kernel = addr == PERF_CONTEXT_KERNEL;
                    if addr == PERF_CONTEXT_USER && !unwound.is_empty() {
                        break;
                    }
                    continue;
                }
                if !kernel && !unwound.is_empty() {
                    break;
                }
                self.chain.push((addr, kernel));
            }
        } else if unwound.is_empty() {
            if let Some(ip) = s.ip {
                self.chain.push((ip, s.cpu_mode == CpuMode::Kernel));
            }
        }
        self.chain.extend(unwound.into_iter().map(|a| (a, false)));
    }

    /// The sample's user frames unwound from its registers and stack copy; empty when the
    /// file has none or the unwinder knows nothing of the process.
    fn unwind_user(&mut self, pid: i32, s: &SampleRecord<'_>) -> Vec<u64> {
        let (Some(u), Some(regs), Some((stack, dyn_size))) =
            (&mut self.unwinder, &s.user_regs, &s.user_stack)
        else {
            return Vec::new();
        };
        let (Some(ip), Some(sp), Some(bp)) = (regs.get(REG_IP), regs.get(REG_SP), regs.get(REG_BP))
        else {
            return Vec::new();
        };
        let bytes = stack.as_slice();
        let valid = usize::try_from(*dyn_size).unwrap_or(0).min(bytes.len());
        u.unwind(
            pid,
            UserRegs { ip, sp, bp },
            &bytes[..valid],
            MAX_USER_FRAMES,
        )
    }

    fn map(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: String) {
        if let Some(u) = &mut self.unwinder {
            let elf = self
                .elf_paths
                .entry(path.clone())
                .or_insert_with(|| {
                    let build_id = self.raw.build_ids.get(&path).map(Vec::as_slice);
                    let mut ignored = Vec::new();
                    path.starts_with('/')
                        .then(|| super::elf_file::elf_file(&path, build_id, &mut ignored))
                        .flatten()
                })
                .clone();
            if let Some(elf) = elf {
                let mapped = MappedFile {
                    start,
                    end: start.saturating_add(len),
                    offset: pgoff,
                    path: path.clone(),
                };
                u.add_mapping(pid, mapped, &elf);
            }
        }
        let next = self.map_ids.len() as u32;
        let map = *self.map_ids.entry(path.clone()).or_insert(next);
        if map == next {
            self.raw.maps.push(path);
        }
        let end = start.saturating_add(len);
        self.address_ids.clear();
        let regions = self.regions.entry(pid).or_default();
        regions.retain(|r| r.end <= start || r.start >= end);
        let at = regions.partition_point(|r| r.start < start);
        regions.insert(
            at,
            Region {
                start,
                end,
                pgoff,
                map,
            },
        );
    }
}

fn lookup(regions: &[Region], addr: u64) -> Option<Region> {
    let i = regions.partition_point(|r| r.start <= addr);
    let r = *regions.get(i.checked_sub(1)?)?;
    (addr < r.end).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_the_containing_region_only() {
        let rs = [
            Region {
                start: 0x1000,
                end: 0x2000,
                pgoff: 0,
                map: 0,
            },
            Region {
                start: 0x3000,
                end: 0x4000,
                pgoff: 0x1000,
                map: 1,
            },
        ];
        assert_eq!(lookup(&rs, 0x1fff).map(|r| r.map), Some(0));
        assert_eq!(lookup(&rs, 0x2000).map(|r| r.map), None);
        assert_eq!(lookup(&rs, 0x3500).map(|r| r.map), Some(1));
        assert_eq!(lookup(&rs, 0x10).map(|r| r.map), None);
    }

    #[test]
    fn a_new_mapping_replaces_what_it_overlaps() {
        let mut b = Builder::default();
        b.map(1, 0x1000, 0x1000, 0, "a".into());
        b.map(1, 0x1000, 0x2000, 0, "b".into());
        let r = &b.regions[&1];
        assert_eq!(r.len(), 1);
        assert_eq!(b.raw.maps[r[0].map as usize], "b");
    }
}
