//! User call chains without frame pointers: the registers and a copy of the user stack that
//! `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER` give, unwound with the mapped binaries'
//! `.eh_frame`/`.debug_frame` by the `framehop` crate (as samply and `perf --call-graph dwarf`
//! do), so a chain goes on through code built without frame pointers (Debian's glibc).
//!
//! [`Unwinder`] holds one address space per process: its executable file mappings (from
//! `/proc/PID/maps`, [`proc_maps`], or perf.data's MMAP records) as `framehop` modules, each
//! file's unwind sections read once ([`elf_unwind_info`]) and shared by every process mapping it.

mod elf_unwind_info;
mod proc_maps;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, Unwinder as _};

use elf_unwind_info::{ElfUnwindInfo, SectionBytes};
pub use proc_maps::{MappedFile, read_proc_maps};

/// The registers `PERF_SAMPLE_REGS_USER` is asked for (x86_64 `perf_regs.h`: BP 6, SP 7, IP 8),
/// in the order the kernel writes them (lowest bit first).
pub const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// Default bytes of user stack copied per sample (`--stack-size`).
pub const DEFAULT_STACK_SIZE: u32 = 16 << 10;
/// The largest stack copy the kernel accepts: a sample's size is a u16, so perf limits the
/// stack to 65528 bytes (and a multiple of 8).
pub const MAX_STACK_SIZE: u32 = 65528;

/// Checks a `--stack-size` as `perf record --call-graph dwarf,SIZE` does: a multiple of 8,
/// from 8 to 65528 bytes. The error names the limits.
pub fn check_stack_size(bytes: u32) -> Result<u32, String> {
    if bytes == 0 || bytes % 8 != 0 || bytes > MAX_STACK_SIZE {
        return Err(format!(
            "stack size {bytes} bytes: must be a multiple of 8 from 8 to {MAX_STACK_SIZE} \
             (perf's limit); the default is {DEFAULT_STACK_SIZE}"
        ));
    }
    Ok(bytes)
}

/// A sample's user registers (instruction, stack and frame pointer) and stack copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// The instruction pointer.
    pub ip: u64,
    /// The stack pointer.
    pub sp: u64,
    /// The frame pointer.
    pub bp: u64,
}

/// One process's modules for `framehop`.
#[derive(Clone)]
struct AddressSpace {
    unwinder: UnwinderX86_64<SectionBytes>,
    maps: Vec<MappedFile>,
    /// Changes whenever its mappings do ([`Unwinder::generation`]).
    generation: u64,
}

impl std::fmt::Debug for AddressSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressSpace")
            .field("maps", &self.maps.len())
            .finish()
    }
}

impl AddressSpace {
    fn new() -> AddressSpace {
        AddressSpace {
            unwinder: UnwinderX86_64::new(),
            maps: Vec::new(),
            generation: 0,
        }
    }

    fn covers(&self, addr: u64) -> bool {
        self.maps.iter().any(|m| addr >= m.start && addr < m.end)
    }
}

/// Unwinds user stacks of many processes, each file's unwind information read once.
#[derive(Default)]
pub struct Unwinder {
    files: HashMap<PathBuf, Option<Arc<ElfUnwindInfo>>>,
    spaces: HashMap<i32, AddressSpace>,
    cache: Option<CacheX86_64>,
    /// The last generation given to an address space.
    generations: u64,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("files", &self.files.len())
            .field("processes", &self.spaces.len())
            .finish()
    }
}

impl Unwinder {
    /// Adds an executable mapping of `file` (read from `elf`, which may be a copy of the
    /// mapped file such as perf's build-id cache) to process `pid`.
    pub fn add_mapping(&mut self, pid: i32, map: MappedFile, elf: &Path) {
        let info = self
            .files
            .entry(elf.to_path_buf())
            .or_insert_with(|| ElfUnwindInfo::read(elf).map(Arc::new))
            .clone();
        let space = self.spaces.entry(pid).or_insert_with(AddressSpace::new);
        // A mapping over an older one replaces it (perf.data replays mmap and munmap so).
        let overlapping: Vec<u64> = space
            .maps
            .iter()
            .filter(|m| m.start < map.end && map.start < m.end)
            .map(|m| m.start)
            .collect();
        for start in overlapping {
            space.unwinder.remove_module(start);
        }
        space
            .maps
            .retain(|m| !(m.start < map.end && map.start < m.end));
        if let Some(module) = info.and_then(|i| i.module(&map.path, map.start..map.end, map.offset))
        {
            space.unwinder.add_module(module);
        }
        space.maps.push(map);
        self.generations += 1;
        space.generation = self.generations;
    }

    /// Replaces process `pid`'s mappings with its current `/proc/PID/maps`; false, the
    /// mappings kept, when that cannot be read or maps nothing executable (the process is gone,
    /// or a zombie not yet reaped, whose maps read empty).
    pub fn load_process(&mut self, pid: i32) -> bool {
        let Some(maps) = read_proc_maps(pid).filter(|m| !m.is_empty()) else {
            return false;
        };
        self.spaces.remove(&pid);
        self.spaces.insert(pid, AddressSpace::new());
        for m in maps {
            let path = PathBuf::from(&m.path);
            self.add_mapping(pid, m, &path);
        }
        true
    }

    /// True when process `pid` has an address space with a mapping holding `addr`.
    pub fn covers(&self, pid: i32, addr: u64) -> bool {
        self.spaces.get(&pid).is_some_and(|s| s.covers(addr))
    }

    /// Process `child` starts as a copy of `parent` (fork).
    pub fn fork(&mut self, parent: i32, child: i32) {
        if let Some(mut space) = self.spaces.get(&parent).cloned() {
            self.generations += 1;
            space.generation = self.generations;
            self.spaces.insert(child, space);
        }
    }

    /// A number that changes whenever process `pid`'s mappings do (0: none known), so that
    /// what was unwound through them can be kept until then: a stack that stopped early for a
    /// mapping not yet known unwinds again once it is.
    pub fn generation(&self, pid: i32) -> u64 {
        self.spaces.get(&pid).map_or(0, |s| s.generation)
    }

    /// Process `pid` forgets its mappings (exec).
    pub fn forget(&mut self, pid: i32) {
        self.spaces.remove(&pid);
    }

    /// The mappings of process `pid`.
    pub fn maps(&self, pid: i32) -> &[MappedFile] {
        self.spaces.get(&pid).map_or(&[], |s| s.maps.as_slice())
    }

    /// The mappings of each of `pids` that has any, as a trace keeps them to name its user
    /// addresses after the processes are gone.
    pub fn maps_of(&self, pids: impl IntoIterator<Item = u32>) -> HashMap<u32, Vec<MappedFile>> {
        pids.into_iter()
            .map(|pid| (pid, self.maps(pid as i32).to_vec()))
            .filter(|(_, m)| !m.is_empty())
            .collect()
    }

    /// Unwinds process `pid`'s user stack from `regs`, `stack` being the copy of the memory at
    /// `regs.sp`: the instruction pointer, then each caller's return address less one (inside
    /// the call instruction, as perf and addr2line look callers up: a call that is its
    /// function's last instruction still names that function), at most `max` frames. Stops where the unwind information or the stack copy
    /// ends; empty when the process is unknown.
    pub fn unwind(&mut self, pid: i32, regs: UserRegs, stack: &[u8], max: usize) -> Vec<u64> {
        let Some(space) = self.spaces.get(&pid) else {
            return Vec::new();
        };
        let cache = self.cache.get_or_insert_with(CacheX86_64::new);
        let sp = regs.sp;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let at = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let mut frames = Vec::new();
        let mut iter = space.unwinder.iter_frames(
            regs.ip,
            UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp),
            cache,
            &mut read_stack,
        );
        while frames.len() < max {
            match iter.next() {
                Ok(Some(FrameAddress::InstructionPointer(ip))) => frames.push(ip),
                Ok(Some(FrameAddress::ReturnAddress(ra))) => frames.push(ra.get() - 1),
                Ok(None) | Err(_) => break,
            }
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_sizes_follow_perfs_limits() {
        assert_eq!(check_stack_size(16384), Ok(16384));
        assert_eq!(check_stack_size(65528), Ok(65528));
        for bad in [0, 12, 65536, 1 << 20] {
            let err = check_stack_size(bad).unwrap_err();
            assert!(
                err.contains("multiple of 8") && err.contains("65528"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_process_mappings_generation_changes_with_them() {
        let mut u = Unwinder::default();
        assert_eq!(u.generation(7), 0, "unknown");
        let map = |start: u64| MappedFile {
            start,
            end: start + 0x1000,
            offset: 0,
            path: "/nonexistent".into(),
        };
        u.add_mapping(7, map(0x1000), Path::new("/nonexistent"));
        let first = u.generation(7);
        assert_ne!(first, 0);
        u.add_mapping(7, map(0x8000), Path::new("/nonexistent"));
        let second = u.generation(7);
        assert_ne!(second, first, "a new mapping");
        u.fork(7, 8);
        assert!(
            u.generation(8) != 0 && u.generation(8) != second,
            "a copy of its own"
        );
        assert_eq!(u.generation(7), second, "the parent's unchanged");
        u.forget(7);
        assert_eq!(u.generation(7), 0, "forgotten at exec");
    }

    #[test]
    fn file_offsets_are_relative_to_the_mapping() {
        let m = MappedFile {
            start: 0x1000,
            end: 0x3000,
            offset: 0x8000,
            path: "/x".into(),
        };
        assert_eq!(m.file_offset(0x1010), Some(0x8010));
        assert_eq!(m.file_offset(0x3000), None);
        assert_eq!(m.file_offset(0xfff), None);
    }

    /// Unwinds this very test's stack, copied like the kernel copies it, through its own
    /// process's mappings: the chain reaches the function that captured the stack and its
    /// caller.
    #[test]
    fn this_process_unwinds_through_its_own_eh_frame() {
        let names = unwind_from_here();
        let capture = names.iter().position(|n| n.ends_with("tests::capture"));
        let caller = names
            .iter()
            .position(|n| n.ends_with("tests::unwind_from_here"));
        assert!(
            matches!((capture, caller), (Some(a), Some(b)) if b == a + 1),
            "{names:?}"
        );
    }

    /// The names of the frames above `capture`, called from here. Not inlined, so that its
    /// own symbol names its frame: a `#[test]` body can be folded into the harness's
    /// `FnOnce::call_once` (seen with `CARGO_INCREMENTAL=0`), and symbol tables name only
    /// what was not inlined.
    #[inline(never)]
    fn unwind_from_here() -> Vec<String> {
        let mut u = Unwinder::default();
        let pid = std::process::id() as i32;
        assert!(u.load_process(pid));
        let (regs, stack) = capture();
        let chain = u.unwind(pid, regs, &stack, 64);
        let syms = crate::user_symbols::UserSymbols::resolve(0, &chain);
        let names: Vec<String> = chain
            .iter()
            .map(|&a| syms.frame(a).function.unwrap_or_default())
            .collect();
        names
    }

    /// How many stack copies one core unwinds a second, each as the in-kernel tracers copy it
    /// (4 KiB from the stack pointer) from 16 frames deep in this process, none of them from
    /// the tracers' own cache of unwound chains: with `framehop`'s cache of unwind rules warm
    /// (code seen before, as in a long trace), and emptied before each one (code never seen).
    /// The user-space cost of a sampled episode whose stack was not seen before. A timing, run
    /// by `bench/speed/trace-throughput`.
    #[test]
    #[ignore = "a timing, run by bench/speed/trace-throughput"]
    fn throughput_of_unwinding_a_stack_copy() {
        let mut u = Unwinder::default();
        let pid = std::process::id() as i32;
        assert!(u.load_process(pid));
        let (regs, mut stack) = nested(16);
        stack.truncate(4096);
        let frames = u.unwind(pid, regs, &stack, 64).len();
        assert!(frames > 16, "unwound {frames} frames");
        let n = 200_000u32;
        let started = std::time::Instant::now();
        for _ in 0..n {
            let chain = u.unwind(pid, regs, std::hint::black_box(&stack), 64);
            assert_eq!(chain.len(), frames);
        }
        let warm = f64::from(n) / started.elapsed().as_secs_f64();
        // Each unwinding with `framehop`'s rule cache empty: every frame's rule looked up in
        // the binaries' unwind tables, as for a stack of code not seen before.
        let n = 20_000u32;
        let started = std::time::Instant::now();
        for _ in 0..n {
            u.cache = None;
            let chain = u.unwind(pid, regs, std::hint::black_box(&stack), 64);
            assert_eq!(chain.len(), frames);
        }
        let cold = f64::from(n) / started.elapsed().as_secs_f64();
        println!(
            "unwinding: {warm:.0} stack copies/s per core ({frames} frames each); \
             with no rule cached {cold:.0} stack copies/s"
        );
    }

    /// [`capture`] from `depth` frames of itself below the caller.
    #[inline(never)]
    fn nested(depth: u32) -> (UserRegs, Vec<u8>) {
        let r = if depth == 0 {
            capture()
        } else {
            nested(std::hint::black_box(depth - 1))
        };
        std::hint::black_box(r)
    }

    /// The registers and 16 KiB of stack of the calling frame.
    #[inline(never)]
    fn capture() -> (UserRegs, Vec<u8>) {
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers; no memory is touched.
        unsafe {
            std::arch::asm!(
                "lea {ip}, [rip]",
                "mov {sp}, rsp",
                "mov {bp}, rbp",
                ip = out(reg) ip,
                sp = out(reg) sp,
                bp = out(reg) bp,
            );
        }
        // Up to 16 KiB, as far as the stack mapping holding `sp` goes.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let top = maps
            .lines()
            .filter_map(|l| {
                let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                ))
            })
            .find(|&(a, b)| sp >= a && sp < b)
            .map(|(_, b)| b)
            .unwrap();
        let len = (top - sp).min(16 << 10) as usize;
        let mut stack = vec![0u8; len];
        for (i, b) in stack.iter_mut().enumerate() {
            // SAFETY: `sp + i` lies in this thread's stack mapping (checked above against
            // /proc/self/maps), at or above the stack pointer, and is only read.
            *b = unsafe { std::ptr::read_volatile((sp as usize + i) as *const u8) };
        }
        (UserRegs { ip, sp, bp }, stack)
    }
}
