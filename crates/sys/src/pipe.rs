//! [`pipe`]: an anonymous pipe as two owned file descriptors (`pipe2(O_CLOEXEC)`); and
//! [`wait_readable`], so that a reader can give up on a pipe whose writer never closes it.
//!
//! std gains `std::io::pipe` only in Rust 1.87, after this workspace's `rust-version`; until then
//! this is the one place that creates pipes (through rustix's `pipe_with`; `poll` too). Both ends are close-on-exec, so a program spawned
//! by another thread never inherits them (which would keep a reader from ever seeing EOF).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::time::Duration;

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

/// Waits up to `timeout` until a `read` of `fd` would not block: data is there, or end of file
/// (every writer closed it), or an error (`poll(POLLIN)`). `Ok(false)` when the time ran out.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> Result<bool, SysError> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let limit = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    let mut entry = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    loop {
        match poll(&mut entry, Some(&limit)) {
            Ok(ready) => return Ok(ready > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(SysError::with_fix("poll", e.into(), |_| None)),
        }
    }
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
    fn readable_means_data_or_end_of_file() {
        use std::os::fd::AsFd;
        let p = pipe().unwrap();
        let (read, mut writer) = (p.read, File::from(p.write));
        assert!(!wait_readable(read.as_fd(), Duration::from_millis(20)).unwrap());
        writer.write_all(b"x").unwrap();
        assert!(wait_readable(read.as_fd(), Duration::from_millis(20)).unwrap());
        let mut reader = File::from(read);
        let mut byte = [0u8; 1];
        assert_eq!(reader.read(&mut byte).unwrap(), 1);
        drop(writer);
        assert!(wait_readable(reader.as_fd(), Duration::from_secs(5)).unwrap());
        assert_eq!(reader.read(&mut byte).unwrap(), 0, "end of file");
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
