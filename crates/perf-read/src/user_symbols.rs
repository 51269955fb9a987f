//! [`UserSymbols`]: names for user-space addresses of a process, through its mappings (read
//! live from `/proc/<pid>/maps`, or as the lock tracer recorded them while the process ran),
//! each unique address symbolised once by file offset in the mapped file ([`ElfSymbols`]:
//! separate debug files and `func@plt` names, as perf finds them).

use std::collections::HashMap;
use std::path::Path;

use crate::elf_symbols::ElfSymbols;
use crate::unwind::{MappedFile, read_proc_maps};

/// One symbolised user frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFrame {
    /// The function name (demangled), or `None` when no symbol covers the address.
    pub function: Option<String>,
    /// Offset of the address into the function.
    pub offset: u64,
    /// The file the address maps to (`/usr/lib/x86_64-linux-gnu/libc.so.6`), when known.
    pub module: Option<String>,
    /// The address the file itself states for it (its load segment's virtual address plus the
    /// offset into the segment: what `perf` prints for a frame without a symbol, and what
    /// `addr2line -e FILE` takes), when the file was read.
    pub address: Option<u64>,
}

impl UserFrame {
    /// `function+0xoff`; for an address no symbol covers (a static function of a stripped
    /// binary) `module+0xaddress`, the file's own address as perf prints it
    /// (`sysbench+0x1a421`); the raw address when not even its file is known.
    pub fn describe(&self, addr: u64) -> String {
        match (&self.function, &self.module, self.address) {
            (Some(f), _, _) => format!("{f}+{:#x}", self.offset),
            (None, Some(m), Some(a)) => format!("{}+{a:#x}", short_module(m)),
            (None, Some(m), None) => format!("{addr:#x} in {}", short_module(m)),
            (None, None, _) => format!("{addr:#x}"),
        }
    }

    /// What names this frame as a caller: its function, or for an address of a known file
    /// that no symbol covers, `module+0xaddress` (stable across runs of the same binary, and
    /// what `addr2line` reads); `None` when not even the file is known.
    pub fn name(&self) -> Option<String> {
        match (&self.function, &self.module, self.address) {
            (Some(f), _, _) => Some(f.clone()),
            (None, Some(m), Some(a)) => Some(format!("{}+{a:#x}", short_module(m))),
            _ => None,
        }
    }

    /// True for frames in the C library or dynamic loader (system call wrappers, pthread).
    pub fn in_system_library(&self) -> bool {
        self.module.as_deref().map(short_module).is_some_and(|m| {
            m.starts_with("libc.so")
                || m.starts_with("libpthread")
                || m.starts_with("ld-linux")
                || m.starts_with("ld-musl")
                || m.starts_with("libc.musl")
        })
    }
}

/// The file name of a module path.
pub(crate) fn short_module(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Symbolises addresses of process `pid` (0: this process).
pub struct UserSymbols {
    frames: HashMap<u64, UserFrame>,
}

impl std::fmt::Debug for UserSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSymbols")
            .field("frames", &self.frames.len())
            .finish()
    }
}

impl UserSymbols {
    /// Symbolises every address in `addrs` (duplicates are fine) in the live process `pid`
    /// (0: this process). Addresses that cannot be symbolised get a frame without a function.
    pub fn resolve(pid: u32, addrs: &[u64]) -> UserSymbols {
        let pid = if pid == 0 { std::process::id() } else { pid };
        let maps = read_proc_maps(pid as i32).unwrap_or_default();
        UserSymbols::resolve_mapped(&maps, addrs)
    }

    /// Symbolises `addrs` of a process whose executable mappings were `maps` (it may have
    /// exited since: the mapped files are read, not the process).
    pub fn resolve_mapped(maps: &[MappedFile], addrs: &[u64]) -> UserSymbols {
        let mut unique: Vec<u64> = addrs.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut per_map: HashMap<usize, Vec<(u64, u64)>> = HashMap::new();
        for &addr in &unique {
            if let Some((i, off)) = maps
                .iter()
                .enumerate()
                .find_map(|(i, m)| m.file_offset(addr).map(|o| (i, o)))
            {
                per_map.entry(i).or_default().push((addr, off));
            }
        }
        let mut elf = ElfSymbols::default();
        let mut frames = HashMap::new();
        for (i, entries) in per_map {
            let path = &maps[i].path;
            let offsets: Vec<u64> = entries.iter().map(|e| e.1).collect();
            let syms = elf.symbolise(Path::new(path), &offsets).unwrap_or_default();
            for (k, (addr, _)) in entries.iter().enumerate() {
                let sym = syms.get(k).cloned().flatten();
                let address = elf.stated_address(Path::new(path), entries[k].1);
                frames.insert(
                    *addr,
                    UserFrame {
                        function: sym.as_ref().map(|s| s.name.clone()),
                        offset: sym.as_ref().map_or(0, |s| s.offset),
                        module: Some(path.clone()),
                        address,
                    },
                );
            }
        }
        UserSymbols { frames }
    }

    /// The frame for `addr` (a frame without a function when unknown).
    pub fn frame(&self, addr: u64) -> UserFrame {
        self.frames.get(&addr).cloned().unwrap_or(UserFrame {
            function: None,
            offset: 0,
            module: None,
            address: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_telling_name() -> u64 {
        a_function_with_a_telling_name as *const () as usize as u64
    }

    #[test]
    fn own_functions_resolve_by_name() {
        let addr = std::hint::black_box(a_function_with_a_telling_name()) + 1;
        let syms = UserSymbols::resolve(0, &[addr, addr]);
        let f = syms.frame(addr);
        assert!(
            f.function
                .as_deref()
                .is_some_and(|n| n.contains("a_function_with_a_telling_name")),
            "{f:?}"
        );
        assert_eq!(f.offset, 1);
        assert!(!f.in_system_library());
    }

    #[test]
    fn libc_frames_are_system_library_frames() {
        let f = UserFrame {
            function: Some("syscall".into()),
            offset: 0x1d,
            module: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
            address: Some(0x1000),
        };
        assert!(f.in_system_library());
        assert_eq!(f.describe(0x10), "syscall+0x1d");
        let unknown = UserFrame {
            function: None,
            offset: 0,
            module: Some("/lib/libfoo.so".into()),
            address: None,
        };
        assert_eq!(unknown.describe(0x10), "0x10 in libfoo.so");
        assert_eq!(unknown.name(), None);
        // A static function of a stripped binary: the file's own address, as perf prints it.
        let stripped = UserFrame {
            function: None,
            offset: 0,
            module: Some("/usr/bin/sysbench".into()),
            address: Some(0x1a421),
        };
        assert_eq!(stripped.describe(0x5600_0001_a421), "sysbench+0x1a421");
        assert_eq!(stripped.name().as_deref(), Some("sysbench+0x1a421"));
    }
}
