//! [`ElfSymbols`]: names for file offsets in an ELF file, found where `perf report` finds them:
//! the file's own symbol table; for a stripped file (Debian's `libc.so.6`) the separate debug
//! file, by build id (`/usr/lib/debug/.build-id/xx/yyyy….debug`, from packages such as
//! `libc6-dbg`) or by `.gnu_debuglink` name in the debug directories; and PLT stubs named
//! `func@plt` from the `.rela.plt` relocations, as perf synthesises them (the symbol table
//! covers the PLT with `_init` or nothing).
//!
//! Symbol tables, not DWARF: function names are what is needed, symbol tables give them with
//! sizes, and they are what perf reads too.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use object::read::elf::ElfFile64;
use object::{
    Endianness, Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable, ReadCache,
};

/// Where separate debug files are looked for, as perf and gdb look.
const DEBUG_DIRS: [&str; 2] = ["/usr/lib/debug", "/lib/debug"];
/// Bytes per PLT entry on x86_64 (`.plt` after its header entry, and `.plt.sec`).
const PLT_ENTRY: u64 = 16;

/// One symbol found for an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ElfSymbol {
    pub name: String,
    /// Offset of the address into the symbol.
    pub offset: u64,
    pub size: Option<u64>,
}

/// What is known of one ELF file: its load segments, PLT stubs and where its symbols are.
#[derive(Debug, Default)]
struct FileInfo {
    /// (file offset, size, stated address) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    /// (stated address, name) of each PLT stub, sorted.
    plt: Vec<(u64, String)>,
    /// The separate debug file holding the symbol table, when the file itself is stripped.
    debug_file: Option<PathBuf>,
    /// Per address shared by several function symbols, the one perf shows ([`better_alias`]).
    aliases: HashMap<u64, String>,
}

impl FileInfo {
    fn read(path: &Path) -> FileInfo {
        if sys::check_input(path, sys::InputKind::Elf).is_err() {
            return FileInfo::default();
        }
        let Ok(file) = File::open(path) else {
            return FileInfo::default();
        };
        let cache = ReadCache::new(file);
        let Ok(elf) = ElfFile64::<Endianness, _>::parse(&cache) else {
            return FileInfo::default();
        };
        let segments = elf
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect();
        let stripped = elf.section_by_name(".symtab").is_none();
        let debug_file = if stripped { debug_file(&elf) } else { None };
        let aliases = match &debug_file {
            None => aliases(&elf),
            Some(debug) => sys::check_input(debug, sys::InputKind::Elf)
                .ok()
                .and_then(|()| File::open(debug).ok())
                .and_then(|f| {
                    let cache = ReadCache::new(f);
                    let d = ElfFile64::<Endianness, _>::parse(&cache).ok()?;
                    Some(aliases(&d))
                })
                .unwrap_or_default(),
        };
        FileInfo {
            segments,
            plt: plt_stubs(&elf),
            debug_file,
            aliases,
        }
    }

    fn svma(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(o, size, _)| offset >= *o && offset < o.saturating_add(*size))
            .map(|(o, _, svma)| svma.wrapping_add(offset - o))
    }

    fn plt_stub(&self, svma: u64) -> Option<ElfSymbol> {
        let i = self
            .plt
            .partition_point(|(a, _)| *a <= svma)
            .checked_sub(1)?;
        let (start, name) = &self.plt[i];
        (svma < start + PLT_ENTRY).then(|| ElfSymbol {
            name: name.clone(),
            offset: svma - start,
            size: Some(PLT_ENTRY),
        })
    }
}

/// The separate debug file of a stripped ELF file: by build id, then by `.gnu_debuglink`.
fn debug_file<'d, R: object::ReadRef<'d>>(elf: &ElfFile64<'d, Endianness, R>) -> Option<PathBuf> {
    if let Ok(Some(id)) = elf.build_id() {
        if id.len() >= 2 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            for dir in DEBUG_DIRS {
                let p = Path::new(dir)
                    .join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..]));
                if p.is_file() {
                    return Some(p);
                }
            }
        }
    }
    if let Ok(Some((name, _crc))) = elf.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        for dir in DEBUG_DIRS {
            let p = Path::new(dir).join(&name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// An alias as perf weighs it (`choose_best_symbol` in tools/perf/util/symbol.c).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Alias {
    name: String,
    sized: bool,
    weak: bool,
    global: bool,
}

/// True when perf prefers `a` to `b` for the same address: a sized symbol, then a non-weak
/// one, then a global one, then fewer leading underscores, then the longer name.
fn better_alias(a: &Alias, b: &Alias) -> bool {
    let underscores = |n: &str| n.bytes().take_while(|&c| c == b'_').count();
    (
        a.sized,
        !a.weak,
        a.global,
        std::cmp::Reverse(underscores(&a.name)),
        a.name.len(),
    ) > (
        b.sized,
        !b.weak,
        b.global,
        std::cmp::Reverse(underscores(&b.name)),
        b.name.len(),
    )
}

/// For each address that several function symbols share (`pthread_mutex_lock@@GLIBC_2.2.5`
/// and `___pthread_mutex_lock`), the name perf shows.
fn aliases<'d, R: object::ReadRef<'d>>(elf: &ElfFile64<'d, Endianness, R>) -> HashMap<u64, String> {
    let mut best: HashMap<u64, (Alias, u32)> = HashMap::new();
    for sym in elf.symbols() {
        if sym.kind() != object::SymbolKind::Text || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let alias = Alias {
            name: name.to_string(),
            sized: sym.size() > 0,
            weak: sym.is_weak(),
            global: sym.is_global(),
        };
        match best.entry(sym.address()) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((alias, 1));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let (held, count) = o.get_mut();
                *count += 1;
                if better_alias(&alias, held) {
                    *held = alias;
                }
            }
        }
    }
    best.into_iter()
        .filter(|(_, (_, count))| *count > 1)
        .map(|(addr, (alias, _))| (addr, alias.name))
        .collect()
}

/// PLT stubs and the functions they jump to: the i-th `.rela.plt` relocation's stub is the
/// i-th `.plt.sec` entry when that section exists (IBT), else the (i+1)-th `.plt` entry.
fn plt_stubs<'d, R: object::ReadRef<'d>>(elf: &ElfFile64<'d, Endianness, R>) -> Vec<(u64, String)> {
    let Some(rela) = elf.section_by_name(".rela.plt").and_then(|s| s.data().ok()) else {
        return Vec::new();
    };
    let base = match elf.section_by_name(".plt.sec") {
        Some(sec) => sec.address(),
        None => match elf.section_by_name(".plt") {
            Some(plt) => plt.address() + PLT_ENTRY,
            None => return Vec::new(),
        },
    };
    let dynsym = elf.dynamic_symbol_table();
    let mut stubs = Vec::new();
    for (i, entry) in rela.chunks_exact(24).enumerate() {
        let info = u64::from_le_bytes(entry[8..16].try_into().unwrap_or([0; 8]));
        let sym = (info >> 32) as usize;
        let name = dynsym
            .as_ref()
            .and_then(|t| t.symbol_by_index(object::SymbolIndex(sym)).ok())
            .and_then(|s| s.name().ok().map(str::to_string))
            .filter(|n| !n.is_empty());
        if let Some(name) = name {
            stubs.push((base + PLT_ENTRY * i as u64, format!("{name}@plt")));
        }
    }
    stubs.sort();
    stubs
}

/// The alias perf would show, demangled as blazesym demangled its own pick: Rust and C++
/// aliases are rare, so a mangled alias is kept only when blazesym's pick is not demangled.
fn blazesym_demangled(alias: &str, picked: &str) -> String {
    if alias.starts_with("_Z") || alias.starts_with("_R") {
        picked.to_string()
    } else {
        alias.to_string()
    }
}

/// Symbolises file offsets of ELF files, each file examined once.
pub(crate) struct ElfSymbols {
    symbolizer: Symbolizer,
    files: HashMap<PathBuf, FileInfo>,
}

impl std::fmt::Debug for ElfSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfSymbols")
            .field("files", &self.files.len())
            .finish()
    }
}

impl Default for ElfSymbols {
    fn default() -> Self {
        ElfSymbols {
            symbolizer: Symbolizer::builder()
                .enable_code_info(false)
                .enable_inlined_fns(false)
                .build(),
            files: HashMap::new(),
        }
    }
}

impl ElfSymbols {
    /// The symbol of each file offset in the ELF file at `path` (`None` where no symbol covers
    /// it); an error names the file and the cause.
    pub(crate) fn symbolise(
        &mut self,
        path: &Path,
        offsets: &[u64],
    ) -> Result<Vec<Option<ElfSymbol>>, String> {
        let info = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| FileInfo::read(path));
        let mut out: Vec<Option<ElfSymbol>> = vec![None; offsets.len()];
        let svmas: Vec<Option<u64>> = offsets.iter().map(|&o| info.svma(o)).collect();
        for (slot, svma) in out.iter_mut().zip(&svmas) {
            *slot = svma.and_then(|a| info.plt_stub(a));
        }
        let rest: Vec<usize> = (0..offsets.len()).filter(|&i| out[i].is_none()).collect();
        if rest.is_empty() {
            return Ok(out);
        }
        let results = match &info.debug_file {
            Some(debug) => {
                // The debug file has the same addresses but no code: look up by address.
                let addrs: Vec<u64> = rest.iter().map(|&i| svmas[i].unwrap_or(0)).collect();
                let src = Source::Elf(Elf {
                    debug_syms: false,
                    ..Elf::new(debug)
                });
                self.symbolizer
                    .symbolize(&src, Input::VirtOffset(&addrs))
                    .map_err(|e| format!("{}: {e}", debug.display()))?
            }
            None => {
                let offs: Vec<u64> = rest.iter().map(|&i| offsets[i]).collect();
                let src = Source::Elf(Elf {
                    debug_syms: false,
                    ..Elf::new(path)
                });
                self.symbolizer
                    .symbolize(&src, Input::FileOffset(&offs))
                    .map_err(|e| format!("{}: {e}", path.display()))?
            }
        };
        for (&i, r) in rest.iter().zip(results) {
            if let Symbolized::Sym(s) = r {
                let name = match info.aliases.get(&s.addr) {
                    Some(alias) => blazesym_demangled(alias, &s.name),
                    None => s.name.to_string(),
                };
                out[i] = Some(ElfSymbol {
                    name,
                    offset: s.offset as u64,
                    size: s.size.map(|x| x as u64),
                });
            }
        }
        Ok(out)
    }

    /// The address the ELF file at `path` states for file offset `offset` (its load segment's
    /// virtual address plus the offset into the segment): what `addr2line -e FILE` and `perf`
    /// print for an address in a file without a symbol for it. `None` outside every segment.
    pub(crate) fn stated_address(&mut self, path: &Path, offset: u64) -> Option<u64> {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| FileInfo::read(path))
            .svma(offset)
    }

    /// True when `path` is stripped and its symbols come from a separate debug file.
    #[cfg(test)]
    pub(crate) fn debug_file_of(&mut self, path: &Path) -> Option<PathBuf> {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| FileInfo::read(path))
            .debug_file
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

    /// The file offset of `name` in `path`, from `nm`-like reading of the symbol table of the
    /// debug file (or the file itself).
    fn offset_of(path: &Path, symbol_file: &Path, name: &str) -> Option<u64> {
        let data = std::fs::read(symbol_file).ok()?;
        let elf = ElfFile64::<Endianness, _>::parse(&*data).ok()?;
        let addr = elf.symbols().find(|s| s.name() == Ok(name))?.address();
        let data = std::fs::read(path).ok()?;
        let elf = ElfFile64::<Endianness, _>::parse(&*data).ok()?;
        elf.segments().find_map(|s| {
            let (off, size) = s.file_range();
            (addr >= s.address() && addr < s.address() + size).then(|| addr - s.address() + off)
        })
    }

    /// Was: `___pthread_mutex_lock` where perf shows `pthread_mutex_lock@@GLIBC_2.2.5`, so the
    /// same function had two names and shares disagreed by its whole share.
    #[test]
    fn aliases_are_chosen_as_perf_chooses_them() {
        let a = |name: &str, weak, global| Alias {
            name: name.into(),
            sized: true,
            weak,
            global,
        };
        let versioned = a("pthread_mutex_lock@@GLIBC_2.2.5", false, true);
        let local = a("___pthread_mutex_lock", false, false);
        assert!(better_alias(&versioned, &local) && !better_alias(&local, &versioned));
        // Both local: fewer leading underscores, then the longer name.
        let gi = a("__GI___pthread_mutex_unlock_usercnt", false, false);
        let plain = a("__pthread_mutex_unlock_usercnt", false, false);
        assert!(better_alias(&gi, &plain));
        assert!(better_alias(&a("f", false, false), &a("_f", false, false)));
        assert!(better_alias(&a("f", false, true), &a("f_weak", true, true)));
    }

    /// Needs Debian's libc6-dbg (CI installs it); says so otherwise.
    #[test]
    fn stripped_libc_functions_are_named_from_the_build_id_debug_file() {
        let libc = Path::new(LIBC);
        let mut syms = ElfSymbols::default();
        let Some(debug) = syms.debug_file_of(libc) else {
            eprintln!("skipped: no debug file for {LIBC}: install libc6-dbg");
            return;
        };
        assert!(debug.starts_with("/usr/lib/debug/.build-id/"), "{debug:?}");
        let name = "__pthread_mutex_unlock_usercnt";
        let off = offset_of(libc, &debug, name).expect("the debug file names it");
        let got = syms.symbolise(libc, &[off + 2]).unwrap();
        let got = got[0].as_ref().expect("named");
        assert!(got.name.ends_with(name), "{got:?}");
        assert_eq!(got.offset, 2);
    }
}
