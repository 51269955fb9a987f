//! Symbolising the unique frames of a profile, each once, in batches per source: kernel
//! addresses against the kallsyms snapshot, user frames per mapped ELF file by file offset
//! ([`ElfSymbols`]: separate debug files and `func@plt` stubs, as `perf report` names them).
//!
//! ELF symbol tables are used, not DWARF: function names are what a profile needs, symbol
//! tables give them with sizes (for readprofile's normalized load), and they are what
//! `perf report` reads too.

use std::collections::HashMap;
use std::path::Path;

use blazesym::MaybeDefault;
use blazesym::symbolize::source::{Kernel, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use super::elf_file::elf_file;
use super::records::{Frame, RawProfile};
use crate::elf_symbols::ElfSymbols;

/// A function as the aggregation sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Symbol {
    pub name: String,
    pub dso: String,
    pub kernel: bool,
    pub size: Option<u64>,
}

/// The result: a symbol table and, per frame of the raw profile, its symbol's index.
#[derive(Debug, Default)]
pub(super) struct Names {
    pub symbols: Vec<Symbol>,
    pub of_frame: Vec<u32>,
    pub notes: Vec<String>,
}

pub(super) const KERNEL_DSO: &str = "[kernel]";
const UNKNOWN: &str = "[unknown]";
/// The note of a profile read without a kallsyms snapshot; callers add how to get one.
pub(crate) const NO_KALLSYMS: &str = "no kallsyms snapshot: kernel functions show as [unknown]";

pub(super) fn symbolise(raw: &RawProfile, kallsyms: Option<&Path>) -> Names {
    let symbolizer = Symbolizer::builder()
        .enable_code_info(false)
        .enable_inlined_fns(false)
        .build();
    let mut names = Names {
        of_frame: vec![u32::MAX; raw.frames.len()],
        ..Names::default()
    };
    let mut ids: HashMap<Symbol, u32> = HashMap::new();
    let mut intern = |names: &mut Names, s: Symbol| -> u32 {
        *ids.entry(s.clone()).or_insert_with(|| {
            names.symbols.push(s);
            (names.symbols.len() - 1) as u32
        })
    };

    // Kernel frames.
    let kernel: Vec<(usize, u64)> = raw
        .frames
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f {
            Frame::Kernel(a) => Some((i, *a)),
            _ => None,
        })
        .collect();
    if !kernel.is_empty() {
        let addrs: Vec<u64> = kernel.iter().map(|(_, a)| *a).collect();
        let results = match kallsyms {
            Some(path) => {
                let src = Source::Kernel(Kernel {
                    kallsyms: MaybeDefault::Some(path.to_path_buf()),
                    vmlinux: MaybeDefault::None,
                    kaslr_offset: Some(0),
                    debug_syms: false,
                    ..Kernel::default()
                });
                match symbolizer.symbolize(&src, Input::AbsAddr(&addrs)) {
                    Ok(r) => r,
                    Err(e) => {
                        names.notes.push(format!(
                            "kernel symbols: {}: {e} — kernel functions show as [unknown]",
                            path.display()
                        ));
                        Vec::new()
                    }
                }
            }
            None => {
                names.notes.push(NO_KALLSYMS.into());
                Vec::new()
            }
        };
        let starts = kallsyms.map(text_starts).unwrap_or_default();
        for (k, (frame, _)) in kernel.iter().enumerate() {
            let sym = match results.get(k) {
                Some(Symbolized::Sym(s)) => Symbol {
                    name: s.name.to_string(),
                    dso: KERNEL_DSO.into(),
                    kernel: true,
                    size: s
                        .size
                        .map(|x| x as u64)
                        .or_else(|| size_from(&starts, s.addr)),
                },
                _ => Symbol {
                    name: UNKNOWN.into(),
                    dso: KERNEL_DSO.into(),
                    kernel: true,
                    size: None,
                },
            };
            names.of_frame[*frame] = intern(&mut names, sym);
        }
    }

    // User frames, per mapped file.
    let mut elf_symbols = ElfSymbols::default();
    let mut per_map: HashMap<u32, Vec<(usize, u64)>> = HashMap::new();
    for (i, f) in raw.frames.iter().enumerate() {
        match f {
            Frame::User { map, offset } => per_map.entry(*map).or_default().push((i, *offset)),
            Frame::Unmapped(_) => {
                let s = Symbol {
                    name: UNKNOWN.into(),
                    dso: UNKNOWN.into(),
                    kernel: false,
                    size: None,
                };
                names.of_frame[i] = intern(&mut names, s);
            }
            Frame::Kernel(_) => {}
        }
    }
    let mut maps: Vec<_> = per_map.into_iter().collect();
    maps.sort_by_key(|(m, _)| *m);
    for (map, frames) in maps {
        let path = &raw.maps[map as usize];
        let dso = Path::new(path)
            .file_name()
            .map_or_else(|| path.clone(), |f| f.to_string_lossy().into_owned());
        let elf = if path.starts_with('/') {
            elf_file(
                path,
                raw.build_ids.get(path).map(Vec::as_slice),
                &mut names.notes,
            )
        } else {
            None
        };
        let results = if let Some(elf) = elf {
            let offsets: Vec<u64> = frames.iter().map(|(_, o)| *o).collect();
            match elf_symbols.symbolise(&elf, &offsets) {
                Ok(r) => r,
                Err(e) => {
                    names.notes.push(format!("{path}: {e}"));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        for (k, (frame, _)) in frames.iter().enumerate() {
            let sym = match results.get(k) {
                Some(Some(s)) => Symbol {
                    name: s.name.clone(),
                    dso: dso.clone(),
                    kernel: false,
                    size: s.size,
                },
                _ => Symbol {
                    name: UNKNOWN.into(),
                    dso: dso.clone(),
                    kernel: false,
                    size: None,
                },
            };
            names.of_frame[*frame] = intern(&mut names, sym);
        }
    }
    names
}

/// The sorted start addresses of the kernel's text symbols in a kallsyms file: kallsyms has no
/// sizes, so a function's size (for the normalized load) is the gap to the next one, as
/// readprofile computed it from System.map.
fn text_starts(path: &Path) -> Vec<u64> {
    let Ok(bytes) = sys::read_input(path, sys::InputKind::Kallsyms) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let mut p = l.split_whitespace();
            let addr = u64::from_str_radix(p.next()?, 16).ok()?;
            matches!(p.next()?, "t" | "T" | "w" | "W").then_some(addr)
        })
        .filter(|&a| a != 0)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn size_from(starts: &[u64], start: u64) -> Option<u64> {
    let i = starts.partition_point(|&a| a <= start);
    starts.get(i).map(|next| next - start)
}
