//! Which ELF file holds the code a profile's mapping named ([`elf_file`]): the file itself
//! while its build id still matches, else `perf record`'s build-id cache copy — what both the
//! record reader (a mapping's build id) and the symbolizer read.

use std::path::{Path, PathBuf};

/// The ELF file holding the code that was mapped from `path` when the profile was recorded:
/// `path` itself while its build id still matches, else perf's build-id cache copy
/// (`~/.debug/.build-id/xx/yyyy…/elf`, which `perf record` fills), else `None` with a note.
pub(super) fn elf_file(
    path: &str,
    build_id: Option<&[u8]>,
    notes: &mut Vec<String>,
) -> Option<PathBuf> {
    // Only a regular file within the ELF limit is read (a profile may name /dev/zero, a FIFO
    // or a file of any size).
    let on_disk = match sys::check_input(Path::new(path), sys::InputKind::Elf) {
        Ok(()) => true,
        Err(e) if Path::new(path).exists() => {
            notes.push(format!("{e} — its functions show as [unknown]"));
            return None;
        }
        Err(_) => false,
    };
    let Some(want) = build_id.filter(|b| !b.is_empty()) else {
        if !on_disk {
            notes.push(format!(
                "{path}: no longer on disk; its functions show as [unknown]"
            ));
        }
        return on_disk.then(|| PathBuf::from(path));
    };
    let same = |have: &[u8]| have.starts_with(want) || want.starts_with(have);
    if on_disk {
        if let Ok(Some(have)) = blazesym::helper::read_elf_build_id(Path::new(path)) {
            if same(&have) {
                return Some(PathBuf::from(path));
            }
        }
    }
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let cached = home
        .join(".debug/.build-id")
        .join(&hex[..2])
        .join(&hex[2..])
        .join("elf");
    if sys::check_input(&cached, sys::InputKind::Elf).is_ok() {
        return Some(cached);
    }
    notes.push(format!(
        "{path} changed since the profile was recorded (build id {hex} not found, nor in perf's build-id cache ~/.debug) — its functions show as [unknown]; keep the binary, or record without --no-buildid-cache"
    ));
    None
}
