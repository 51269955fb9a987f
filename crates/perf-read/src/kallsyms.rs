//! [`Kallsyms`]: a snapshot of `/proc/kallsyms`, sorted for address lookups — the kernel's
//! functions (for call chains), its static data objects (for naming static locks), and the
//! text ranges of the lock and scheduler code (`__lock_text_*`, `__sched_text_*`), which a lock
//! wait's caller must lie outside.
//!
//! When `kernel.kptr_restrict` hides the addresses (all zeros), loading fails with the fix.

use crate::error::PerfError;

const KALLSYMS: &str = "/proc/kallsyms";

/// One kernel symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbol {
    /// The symbol's kernel virtual address.
    pub addr: u64,
    /// The `nm` type letter: `t`/`T` text, `d`/`D` data, `b`/`B` bss, `r`/`R` read-only data.
    pub kind: char,
    /// The symbol's name as kallsyms spells it.
    pub name: String,
    /// The module, for symbols outside the kernel image (`[ext4]` → `ext4`).
    pub module: Option<String>,
}

impl KernelSymbol {
    fn is_text(&self) -> bool {
        matches!(self.kind, 't' | 'T' | 'w' | 'W')
    }
    fn is_data(&self) -> bool {
        matches!(self.kind, 'd' | 'D' | 'b' | 'B' | 'r' | 'R')
    }
}

/// A sorted snapshot of the kernel's symbols.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    /// Text symbols, sorted by address.
    text: Vec<KernelSymbol>,
    /// Data symbols of the kernel image, sorted by address.
    data: Vec<KernelSymbol>,
    /// Half-open address ranges of lock and scheduler code.
    lock_sched: Vec<(u64, u64)>,
    /// The kernel image's start (`_stext`) and end (`_end`).
    image_start: u64,
    image_end: u64,
}

/// A static object is named only when the address is this close above its symbol: kallsyms has
/// no sizes, and without CONFIG_KALLSYMS_ALL the nearest data symbol can be megabytes away.
const MAX_OBJECT_OFFSET: u64 = 4096;

impl Kallsyms {
    /// Reads and parses `/proc/kallsyms`.
    pub fn load() -> Result<Kallsyms, PerfError> {
        let text = std::fs::read_to_string(KALLSYMS).map_err(|e| PerfError::ProfileData {
            path: KALLSYMS.into(),
            cause: e.to_string(),
        })?;
        let syms = Kallsyms::parse(&text);
        if syms.text.is_empty() {
            return Err(PerfError::ProfileData {
                path: KALLSYMS.into(),
                cause: "kernel addresses are hidden (all zero) — run as root, or set \
                        kernel.kptr_restrict=0"
                    .into(),
            });
        }
        Ok(syms)
    }

    /// Parses the text of `/proc/kallsyms` (`ADDR TYPE NAME [\[MODULE\]]` per line). Symbols at
    /// address 0 (hidden by `kptr_restrict`) are dropped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut all: Vec<KernelSymbol> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                let kind = parts.next()?.chars().next()?;
                let name = parts.next()?.to_string();
                let module = parts
                    .next()
                    .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
                (addr != 0).then_some(KernelSymbol {
                    addr,
                    kind,
                    name,
                    module,
                })
            })
            .collect();
        all.sort_by_key(|s| s.addr);
        let find = |name: &str| all.iter().find(|s| s.name == name).map(|s| s.addr);
        let mut lock_sched = Vec::new();
        for (start, end) in [
            ("__lock_text_start", "__lock_text_end"),
            ("__sched_text_start", "__sched_text_end"),
            ("__cpuidle_text_start", "__cpuidle_text_end"),
        ] {
            if let (Some(s), Some(e)) = (find(start), find(end)) {
                lock_sched.push((s, e));
            }
        }
        let image_end = find("_end").unwrap_or(u64::MAX);
        let image_start = find("_stext").unwrap_or(0);
        let (text, data): (Vec<_>, Vec<_>) = all
            .into_iter()
            .filter(|s| s.is_text() || s.is_data())
            .partition(KernelSymbol::is_text);
        let data = data
            .into_iter()
            .filter(|s| s.module.is_none() && s.addr >= image_start && s.addr < image_end)
            .collect();
        Kallsyms {
            text,
            data,
            lock_sched,
            image_start,
            image_end,
        }
    }

    /// The function containing `addr` and the offset into it (the nearest text symbol at or
    /// below `addr`; kallsyms has no sizes).
    pub fn function(&self, addr: u64) -> Option<(&KernelSymbol, u64)> {
        nearest(&self.text, addr)
    }

    /// `name+0xoff`, or the address in hex when no symbol covers it.
    pub fn describe(&self, addr: u64) -> String {
        match self.function(addr) {
            Some((sym, off)) => format!("{}+{off:#x}", sym.name),
            None => format!("{addr:#x}"),
        }
    }

    /// True when `addr` lies in the lock or scheduler text (spinlock/rwsem/mutex slow paths,
    /// `schedule`), which a wait's caller is not.
    pub fn in_lock_or_sched_text(&self, addr: u64) -> bool {
        self.lock_sched.iter().any(|&(s, e)| addr >= s && addr < e)
    }

    /// True when the lock and scheduler text ranges were found.
    pub fn has_lock_ranges(&self) -> bool {
        !self.lock_sched.is_empty()
    }

    /// The static kernel object containing `addr` (`name`, offset), for locks that are global
    /// variables (`inode_hash_lock`, `rename_lock`…); `None` for heap and per-CPU addresses.
    pub fn static_object(&self, addr: u64) -> Option<(&str, u64)> {
        if !self.in_image(addr) {
            return None;
        }
        nearest(&self.data, addr)
            .filter(|(_, off)| *off < MAX_OBJECT_OFFSET)
            .map(|(s, off)| (s.name.as_str(), off))
    }

    /// True when `addr` lies in the kernel image (a static object, named or not), not in the
    /// heap, per-CPU areas or modules.
    pub fn in_image(&self, addr: u64) -> bool {
        addr >= self.image_start && addr < self.image_end
    }

    /// True when kallsyms lists the kernel's data objects (CONFIG_KALLSYMS_ALL), so static
    /// locks can be named.
    pub fn has_data_symbols(&self) -> bool {
        self.data.len() > 1000
    }
}

fn nearest(sorted: &[KernelSymbol], addr: u64) -> Option<(&KernelSymbol, u64)> {
    let i = sorted.partition_point(|s| s.addr <= addr);
    let sym = sorted.get(i.checked_sub(1)?)?;
    Some((sym, addr - sym.addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ffffffff81000000 T _stext
ffffffff816d2cd0 T do_unlinkat
ffffffff816d31a0 T __x64_sys_unlink
ffffffff821f84a0 T __sched_text_start
ffffffff821fd5e0 t rwsem_down_write_slowpath
ffffffff821fdcb0 T down_write
ffffffff82200fb7 T __sched_text_end
ffffffff82200fc0 T __lock_text_start
ffffffff822016e0 T _raw_spin_lock
ffffffff82202a08 T __lock_text_end
ffffffff8300b740 b inode_hash_lock
ffffffff8300b748 b other_var
ffffffff84000000 B _end
ffffffffc0100000 t ext4_thing\t[ext4]
";

    #[test]
    fn functions_resolve_with_offsets() {
        let k = Kallsyms::parse(SAMPLE);
        let (sym, off) = k.function(0xffffffff816d2f46).unwrap();
        assert_eq!((sym.name.as_str(), off), ("do_unlinkat", 0x276));
        assert_eq!(k.describe(0xffffffff816d2f46), "do_unlinkat+0x276");
        assert_eq!(k.describe(0x10), "0x10");
        let (m, _) = k.function(0xffffffffc0100010).unwrap();
        assert_eq!(m.module.as_deref(), Some("ext4"));
    }

    #[test]
    fn lock_and_sched_text_is_recognised() {
        let k = Kallsyms::parse(SAMPLE);
        assert!(k.has_lock_ranges());
        assert!(k.in_lock_or_sched_text(0xffffffff821fd95f)); // rwsem_down_write_slowpath
        assert!(k.in_lock_or_sched_text(0xffffffff8220171b)); // _raw_spin_lock
        assert!(!k.in_lock_or_sched_text(0xffffffff816d2e04)); // do_unlinkat
    }

    #[test]
    fn static_locks_are_named_and_heap_addresses_are_not() {
        let k = Kallsyms::parse(SAMPLE);
        assert_eq!(
            k.static_object(0xffffffff8300b740),
            Some(("inode_hash_lock", 0))
        );
        assert_eq!(k.static_object(0xffff88820eef2db8), None);
        assert_eq!(k.static_object(0x1000), None);
        assert_eq!(k.static_object(0xffffffff8300b748 + 8192), None);
        assert!(k.in_image(0xffffffff8300b748 + 8192));
    }

    #[test]
    fn hidden_addresses_are_dropped() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 T foo\n");
        assert!(k.function(0x1234).is_none());
    }
}
