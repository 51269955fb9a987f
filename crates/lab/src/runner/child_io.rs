//! Reading a child process's output without blocking the caller, with a memory bound, and with
//! a way out when the pipe never closes; plus the short stderr tail a failed trial's reason
//! carries. Shared by the trial-child and the external-command executors.
//!
//! A reader hands each chunk it reads to a [`Sink`], which keeps what it needs: everything
//! (`Vec<u8>`, for the trial child's measurement), the last few KiB ([`Tail`], for stderr), or
//! the first op count ([`FirstMatch`](super::ops_regex::FirstMatch)) — so however much a
//! command prints, memory stays bounded. A process that escaped its trial can hold a pipe open
//! forever; [`Reader::finish`] therefore waits a bounded time and then makes the reader give up.

use std::io::Read;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How much of a failed child's stderr a reason keeps (the end, where the error usually is).
pub(super) const STDERR_TAIL: usize = 800;

/// How much of stderr a [`Tail`] keeps: enough for [`STDERR_TAIL`] characters of any width.
const TAIL_BYTES: usize = 4 * STDERR_TAIL;

/// One read's worth; also the pipe's default capacity.
const CHUNK: usize = 64 * 1024;

/// How often a reader waiting for data checks whether it should give up.
const POLL: Duration = Duration::from_millis(50);

/// Takes a child's output chunk by chunk and keeps what it needs.
pub(super) trait Sink: Send + 'static {
    fn take(&mut self, chunk: &[u8]);
}

/// Keeps everything (only for output scalelab itself produces: the trial child's measurement).
impl Sink for Vec<u8> {
    fn take(&mut self, chunk: &[u8]) {
        self.extend_from_slice(chunk);
    }
}

/// Keeps the last few KiB.
#[derive(Debug, Default)]
pub(super) struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Sink for Tail {
    fn take(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        self.bytes.extend_from_slice(chunk);
        // Trimmed in batches, so each byte is moved at most twice.
        if self.bytes.len() > 2 * TAIL_BYTES {
            self.bytes.drain(..self.bytes.len() - TAIL_BYTES);
        }
    }
}

/// A reader running on its own thread; [`finish`](Reader::finish) returns its sink.
#[derive(Debug)]
pub(super) struct Reader<S> {
    done: mpsc::Receiver<S>,
    give_up: Arc<AtomicBool>,
}

/// Reads `source` (a pipe) to its end on a thread, feeding `sink`.
pub(super) fn read_in_background<R, S>(source: Option<R>, mut sink: S) -> Reader<S>
where
    R: Read + AsFd + Send + 'static,
    S: Sink,
{
    let (tx, done) = mpsc::channel();
    let give_up = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&give_up);
    std::thread::spawn(move || {
        if let Some(mut s) = source {
            let mut buf = vec![0u8; CHUNK];
            while !stop.load(Ordering::SeqCst) {
                match sys::wait_readable(s.as_fd(), POLL) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(_) => break,
                }
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => sink.take(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = tx.send(sink);
    });
    Reader { done, give_up }
}

impl<S> Reader<S> {
    /// The sink once the source has reached its end — or, if it has not within `wait` (a
    /// process outside scalelab's reach holds the pipe), what was read by then: the reader stops
    /// and closes its end.
    pub(super) fn finish(self, wait: Duration) -> Option<S> {
        if let Ok(sink) = self.done.recv_timeout(wait) {
            return Some(sink);
        }
        self.give_up.store(true, Ordering::SeqCst);
        // The reader notices within one POLL; only a stuck read could take longer.
        self.done.recv_timeout(POLL * 20).ok()
    }
}

/// The last [`STDERR_TAIL`] bytes of a child's stderr on one line, prefixed with `: ` for
/// appending to a reason; empty when the child printed nothing.
pub(super) fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text.len().saturating_sub(STDERR_TAIL);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!(": {}", text[start..].trim().replace('\n', " | "))
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::Write;
    use std::time::Instant;

    use super::*;

    #[test]
    fn stderr_tail_is_bounded_and_one_line() {
        assert_eq!(tail(b""), "");
        assert_eq!(tail(b"a\nb\n"), ": a | b");
        let long = "é".repeat(2000);
        assert!(tail(long.as_bytes()).len() <= STDERR_TAIL + 4);
    }

    #[test]
    fn a_tail_keeps_only_the_end() {
        let mut t = Tail::default();
        for i in 0..10_000u32 {
            t.take(format!("line {i}\n").as_bytes());
            assert!(t.bytes().len() <= 2 * TAIL_BYTES);
        }
        assert!(t.bytes().ends_with(b"line 9999\n"));
        t.take(&vec![b'x'; 10 * TAIL_BYTES]);
        assert!(t.bytes().len() <= 2 * TAIL_BYTES && t.bytes().ends_with(b"xx"));
    }

    #[test]
    fn background_reads_return_everything() {
        let p = sys::pipe().unwrap();
        let reader = read_in_background(Some(File::from(p.read)), Vec::new());
        let mut w = File::from(p.write);
        w.write_all(b"hello").unwrap();
        drop(w);
        assert_eq!(reader.finish(Duration::from_secs(10)).unwrap(), b"hello");
        let none = read_in_background::<File, Vec<u8>>(None, Vec::new());
        assert!(none.finish(Duration::from_secs(10)).unwrap().is_empty());
    }

    #[test]
    fn a_reader_gives_up_on_a_pipe_that_never_closes() {
        let p = sys::pipe().unwrap();
        let reader = read_in_background(Some(File::from(p.read)), Vec::new());
        let mut w = File::from(p.write);
        w.write_all(b"partial").unwrap();
        let started = Instant::now();
        let got = reader.finish(Duration::from_millis(200)).unwrap();
        assert_eq!(got, b"partial");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(w);
    }
}
