//! Reading a file the user names (`import FILE`, `--csv FILE`, `--perf-data FILE`,
//! `--kallsyms FILE`, and the ELF files a profile names) within a bound that fits its kind, so
//! that `/dev/zero`, a FIFO that never ends or a file of many gigabytes is refused with the
//! limit named instead of filling memory.
//!
//! | kind | at most | what it may be |
//! |---|---|---|
//! | an exported run (JSON) | 512 MiB | a regular file or a pipe |
//! | a CSV series | 64 MiB | a regular file or a pipe |
//! | a kallsyms file | 64 MiB | a regular file |
//! | a perf.data file | 16 GiB | a regular file |
//! | an ELF file | 4 GiB | a regular file |
//!
//! A device (`/dev/zero`, a terminal), a directory or a socket is never read. A pipe is read
//! until the limit and refused beyond it. Files that libraries read by path (kallsyms and ELF
//! files, given to blazesym and `object`) are checked here first; a regular file that states
//! no size (`/proc/kallsyms`) is measured by reading it, up to the limit.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::error::SysError;

/// What kind of file is read, which sets its limit and what it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A run exported as JSON (`import`, a `RUN` given as a file).
    Export,
    /// A series of numbers (`model --csv`, `history --csv`).
    Csv,
    /// A copy of `/proc/kallsyms` (`--kallsyms`, a profile's snapshot).
    Kallsyms,
    /// A perf.data file (`--perf-data`, a run's profiles).
    PerfData,
    /// An ELF file a profile names (a program, a library, a debug file).
    Elf,
}

const MIB: u64 = 1 << 20;

impl InputKind {
    /// The most bytes scalelab reads of a file of this kind.
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Export => 512 * MIB,
            InputKind::Csv | InputKind::Kallsyms => 64 * MIB,
            InputKind::PerfData => 16 * 1024 * MIB,
            InputKind::Elf => 4 * 1024 * MIB,
        }
    }

    /// The kind in words, as messages name it.
    pub const fn what(self) -> &'static str {
        match self {
            InputKind::Export => "an exported run",
            InputKind::Csv => "a CSV series",
            InputKind::Kallsyms => "a kallsyms file",
            InputKind::PerfData => "a perf.data file",
            InputKind::Elf => "an ELF file",
        }
    }

    /// Whether a pipe may be read (the others are read by path or with seeks).
    const fn pipe_allowed(self) -> bool {
        matches!(self, InputKind::Export | InputKind::Csv)
    }
}

/// `1 KiB` … `16 GiB`: a byte count in binary units, as limits are written.
pub fn bytes_text(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// An open input file that refuses to be read past its kind's limit.
#[derive(Debug)]
pub struct InputFile {
    file: File,
    path: PathBuf,
    kind: InputKind,
    read: u64,
    /// The stated size of a regular file.
    size: Option<u64>,
}

impl InputFile {
    /// Opens `path` as a file of `kind`: refused when it is not what that kind may be, or a
    /// regular file larger than the limit.
    pub fn open(path: &Path, kind: InputKind) -> Result<InputFile, SysError> {
        let fail = |cause: io::Error| SysError::Input {
            path: path.to_path_buf(),
            what: kind.what(),
            cause,
        };
        // Looked at before opening, so that a FIFO where a regular file is due never blocks
        // the open; looked at again on the open file, which is what is read.
        accepted(path, kind, &std::fs::metadata(path).map_err(fail)?)?;
        let file = File::open(path).map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        accepted(path, kind, &meta)?;
        let size = meta.file_type().is_file().then_some(meta.len());
        Ok(InputFile {
            file,
            path: path.to_path_buf(),
            kind,
            read: 0,
            size,
        })
    }

    /// The size a regular file states (0 for `/proc` files), `None` for a pipe.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The open file, for a reader that checks sizes itself (perf.data).
    pub fn into_file(self) -> File {
        self.file
    }

    /// Everything in the file, refused when it is more than the limit.
    pub fn read_all(mut self) -> Result<Vec<u8>, SysError> {
        let mut bytes = Vec::with_capacity(self.size.unwrap_or(0).min(self.kind.limit()) as usize);
        match self.read_to_end(&mut bytes) {
            Ok(_) => Ok(bytes),
            Err(_) if self.read > self.kind.limit() => Err(too_large(&self.path, self.kind, None)),
            Err(cause) => Err(SysError::Input {
                path: self.path,
                what: self.kind.what(),
                cause,
            }),
        }
    }
}

impl Read for InputFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let limit = self.kind.limit();
        if self.read > limit {
            return Err(io::Error::other("over the limit"));
        }
        // One byte past the limit tells a file of exactly the limit from a longer one.
        let room = (limit + 1 - self.read).min(buf.len() as u64) as usize;
        let n = self.file.read(&mut buf[..room])?;
        self.read += n as u64;
        if self.read > limit {
            return Err(io::Error::other("over the limit"));
        }
        Ok(n)
    }
}

/// Everything in `path`, a file of `kind` (see [`InputFile`]).
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>, SysError> {
    InputFile::open(path, kind)?.read_all()
}

/// Checks that `path` may be read as a file of `kind` by a library that opens it by path:
/// what it is, and its size (read through, up to the limit, when it states none).
pub fn check_input(path: &Path, kind: InputKind) -> Result<(), SysError> {
    let mut file = InputFile::open(path, kind)?;
    if file.size != Some(0) {
        return Ok(());
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(_) if file.read > kind.limit() => return Err(too_large(path, kind, None)),
            Err(cause) => {
                return Err(SysError::Input {
                    path: path.to_path_buf(),
                    what: kind.what(),
                    cause,
                });
            }
        }
    }
}

fn too_large(path: &Path, kind: InputKind, size: Option<u64>) -> SysError {
    SysError::InputTooLarge {
        path: path.to_path_buf(),
        what: kind.what(),
        limit: bytes_text(kind.limit()),
        size,
    }
}

/// `Ok` when a file with `meta` may be read as `kind`.
fn accepted(path: &Path, kind: InputKind, meta: &Metadata) -> Result<(), SysError> {
    let t = meta.file_type();
    let found = if t.is_file() {
        if meta.len() > kind.limit() {
            return Err(too_large(path, kind, Some(meta.len())));
        }
        return Ok(());
    } else if t.is_fifo() {
        if kind.pipe_allowed() {
            return Ok(());
        }
        "a pipe"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(SysError::InputNotAFile {
        path: path.to_path_buf(),
        what: kind.what(),
        found,
        allowed: if kind.pipe_allowed() {
            "a regular file or a pipe"
        } else {
            "a regular file"
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn devices_directories_and_oversized_files_are_refused_naming_the_limit() {
        let err = read_input(Path::new("/dev/zero"), InputKind::Csv).unwrap_err();
        assert!(
            err.to_string()
                .contains("/dev/zero: a character device, not a CSV series"),
            "{err}"
        );
        let err = check_input(Path::new("/tmp"), InputKind::Kallsyms).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        // A sparse file larger than the limit is refused by its stated size, unread.
        let mut big = tempfile::NamedTempFile::new().unwrap();
        big.as_file().set_len(InputKind::Csv.limit() + 1).unwrap();
        let err = read_input(big.path(), InputKind::Csv)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "larger than the 64 MiB scalelab reads of a CSV series (it has 67108865 bytes)"
            ),
            "{err}"
        );
        big.as_file().set_len(3).unwrap();
        big.write_all(b"1\n2").unwrap();
        assert_eq!(read_input(big.path(), InputKind::Csv).unwrap().len(), 3);
        assert_eq!(bytes_text(16 << 30), "16 GiB");
        assert_eq!(bytes_text(1536), "1.5 KiB");
    }

    #[test]
    fn a_pipe_is_read_up_to_the_limit_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: mkfifo unavailable");
            return;
        }
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
                let chunk = vec![b'7'; 1 << 20];
                // Writes until the reader goes away.
                while f.write_all(&chunk).is_ok() {}
            })
        };
        let err = read_input(&fifo, InputKind::Csv).unwrap_err().to_string();
        assert!(
            err.contains("more than the 64 MiB scalelab reads of a CSV series"),
            "{err}"
        );
        writer.join().unwrap();
        // Where a regular file is due, a pipe is refused without waiting for a writer.
        let err = check_input(&fifo, InputKind::Kallsyms)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a pipe, not a kallsyms file"), "{err}");
    }
}
