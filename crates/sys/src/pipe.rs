//! [`pipe`]: an anonymous pipe as two owned file descriptors (`pipe2(O_CLOEXEC)`).
//!
//! std gains `std::io::pipe` only in Rust 1.87, after this workspace's `rust-version`; until then
//! this is the one place that creates pipes (through rustix's `pipe_with`). Both ends are close-on-exec, so a program spawned
//! by another thread never inherits them (which would keep a reader from ever seeing EOF).

use std::os::fd::OwnedFd;

use crate::error::SysError;

/// The two ends of a pipe. Each is closed when dropped; wrap one in `std::fs::File` to use
/// `Read`/`Write` on it (one `read(2)`/`write(2)` per call).
#[derive(Debug)]
pub struct Pipe {
    /// The read end.
    pub read: OwnedFd,
    /// The write end.
    pub write: OwnedFd,
}

/// Creates a pipe, both ends close-on-exec.
pub fn pipe() -> Result<Pipe, SysError> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| {
        SysError::with_fix("pipe2", e.into(), |e| match e.0 {
            libc::EMFILE => Some("this process has too many open files: raise `ulimit -n`"),
            libc::ENFILE => Some("the system-wide file limit was reached (fs.file-max)"),
            _ => None,
        })
    })?;
    Ok(Pipe { read, write })
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn bytes_cross_between_threads_and_eof_follows_the_last_writer() {
        let p = pipe().unwrap();
        let mut reader = File::from(p.read);
        let mut writer = File::from(p.write);
        let echo = std::thread::spawn(move || {
            writer.write_all(b"ping").unwrap();
            // dropping the only write end: the reader sees EOF after the data
        });
        let mut got = Vec::new();
        reader.read_to_end(&mut got).unwrap();
        echo.join().unwrap();
        assert_eq!(got, b"ping");
    }

    #[test]
    fn both_ends_are_close_on_exec() {
        let p = pipe().unwrap();
        for fd in [p.read.as_raw_fd(), p.write.as_raw_fd()] {
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
                .unwrap();
            assert_ne!(flags & libc::O_CLOEXEC as u32, 0, "fd {fd}: {info}");
        }
    }
}
