//! Standard output, where results go: a reader that stops reading (`scalelab show last | head`)
//! ends scalelab quietly with status 0, as ripgrep and the coreutils do, instead of a
//! `Broken pipe` error or a panic.
//!
//! Every write to stdout goes through [`stdout`]. SIGPIPE stays ignored (Rust's default): the
//! runner writes to its children's pipes, where a closed pipe is a failed trial, not a reason
//! for scalelab to die; only a closed *stdout* ends the program.

use std::io::{self, ErrorKind, StdoutLock, Write};

/// A locked stdout whose closed pipe ends the program quietly.
#[derive(Debug)]
pub struct Stdout {
    inner: StdoutLock<'static>,
}

/// Standard output for results.
pub fn stdout() -> Stdout {
    Stdout {
        inner: io::stdout().lock(),
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        quiet_on_closed_pipe(self.inner.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        quiet_on_closed_pipe(self.inner.flush())
    }
}

impl Drop for Stdout {
    /// What is still buffered is written now, where a closed pipe can still end quietly.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The result, unless stdout's reader is gone: then the program ends, status 0.
fn quiet_on_closed_pipe<T>(result: io::Result<T>) -> io::Result<T> {
    match result {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}
