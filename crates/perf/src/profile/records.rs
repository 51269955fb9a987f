//! Reading perf.data records into unique stacks of unique frames.
//!
//! Each sample's call chain becomes a list of frame ids; identical lists are counted once. A
//! user frame is resolved through the process's mappings at the time of the sample (MMAP/MMAP2
//! records, copied to children on FORK, dropped on exec) into (mapped file, file offset), so the
//! same code in forked task processes interns to the same frame. Return addresses (every frame
//! but the leaf) are moved back one byte into the call instruction, as unwinders do, so a call
//! at the very end of a function is charged to that function.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord, RecordType};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use rustc_hash::FxHashMap;

use super::layout::{self, corrupt};
use super::record_guard::RecordGuard;
use super::sample_check::callchain_fits;
use crate::PerfError;

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
    pub samples: u64,
    pub period: u64,
    pub outside_window: u64,
    pub throttled: u64,
    pub lost: u64,
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
}

pub(super) fn read(path: &Path, window: Option<(u64, u64)>) -> Result<RawProfile, PerfError> {
    let fail = |cause: String| PerfError::ProfileData {
        path: path.display().to_string(),
        cause,
    };
    let file = File::open(path).map_err(|e| fail(format!("opening: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| fail(format!("reading its size: {e}")))?
        .len();
    read_from(BufReader::with_capacity(1 << 20, file), len, window).map_err(fail)
}

/// Reads the perf.data held by `source`, `len` bytes long; the error is the cause alone.
pub(super) fn read_from<R: Read + Seek>(
    mut source: R,
    len: u64,
    window: Option<(u64, u64)>,
) -> Result<RawProfile, String> {
    let layout = layout::check(&mut source, len)?;
    let guarded =
        RecordGuard::new(source, len, &layout).map_err(|e| corrupt(format!("rewinding: {e}")))?;
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(guarded).map_err(|e| corrupt(format!("header: {e}")))?;
    let mut b = Builder::default();
    b.raw.build_ids = perf_file
        .build_ids()
        .unwrap_or_default()
        .into_values()
        .map(|d| (String::from_utf8_lossy(&d.path).into_owned(), d.build_id))
        .collect();
    b.raw.event = perf_file
        .event_attributes()
        .first()
        .and_then(|a| a.name())
        .unwrap_or("unknown")
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
            EventRecord::Sample(s) => {
                if let (Some((lo, hi)), Some(t)) = (window, s.timestamp) {
                    if t < lo || t > hi {
                        b.raw.outside_window += 1;
                        continue;
                    }
                }
                let period = s.period.unwrap_or(1);
                let pid = s.pid.unwrap_or(-1);
                b.scratch.clear();
                match &s.callchain {
                    Some(chain) if !chain.is_empty() => {
                        let mut kernel = s.cpu_mode == CpuMode::Kernel;
                        let mut leaf = true;
                        for i in 0..chain.len() {
                            let Some(addr) = chain.get(i) else { break };
                            if addr >= PERF_CONTEXT_MAX {
                                kernel = addr == PERF_CONTEXT_KERNEL;
                                if addr != PERF_CONTEXT_KERNEL && addr != PERF_CONTEXT_USER {
                                    // Hypervisor or guest frames follow: not ours to name.
                                    kernel = false;
                                }
                                continue;
                            }
                            let addr = if leaf { addr } else { addr.saturating_sub(1) };
                            leaf = false;
                            let id = b.frame(pid, addr, kernel);
                            b.scratch.push(id);
                        }
                    }
                    _ => {
                        if let Some(ip) = s.ip {
                            let id = b.frame(pid, ip, s.cpu_mode == CpuMode::Kernel);
                            b.scratch.push(id);
                        }
                    }
                }
                if b.scratch.is_empty() {
                    continue;
                }
                b.raw.samples += 1;
                b.raw.period = b.raw.period.saturating_add(period);
                let stack = match b.stack_ids.get(b.scratch.as_slice()) {
                    Some(&id) => id,
                    None => {
                        let frames: Box<[u32]> = b.scratch.clone().into_boxed_slice();
                        let id = b.raw.stacks.len() as u32;
                        b.raw.stacks.push(RawStack {
                            frames: frames.clone(),
                            samples: 0,
                            period: 0,
                        });
                        b.stack_ids.insert(frames, id);
                        id
                    }
                };
                let st = &mut b.raw.stacks[stack as usize];
                st.samples += 1;
                st.period = st.period.saturating_add(period);
            }
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
                if let Some(parent) = b.regions.get(&f.ppid).cloned() {
                    b.regions.insert(f.pid, parent);
                    b.address_ids.clear();
                }
            }
            EventRecord::Comm(c) if c.is_execve => {
                b.regions.remove(&c.pid);
                b.address_ids.clear();
            }
            EventRecord::Throttle(_) => b.raw.throttled += 1,
            EventRecord::Lost(l) => b.raw.lost = b.raw.lost.saturating_add(l.count),
            _ => {}
        }
    }
    Ok(b.raw)
}

impl Builder {
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

    fn map(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: String) {
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
