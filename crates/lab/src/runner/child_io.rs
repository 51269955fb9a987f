//! Reading a child process's output without blocking the caller, and the short stderr tail a
//! failed trial's reason carries. Shared by the trial-child and the external-command executors.

use std::io::Read;
use std::sync::mpsc;

/// How much of a failed child's stderr a reason keeps (the end, where the error usually is).
pub const STDERR_TAIL: usize = 800;

/// Reads `source` to its end on a thread; the receiver yields everything read.
pub fn read_in_background<R: Read + Send + 'static>(source: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut s) = source {
            let _ = s.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// The last [`STDERR_TAIL`] bytes of a child's stderr on one line, prefixed with `: ` for
/// appending to a reason; empty when the child printed nothing.
pub fn tail(stderr: &[u8]) -> String {
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
    use super::*;

    #[test]
    fn stderr_tail_is_bounded_and_one_line() {
        assert_eq!(tail(b""), "");
        assert_eq!(tail(b"a\nb\n"), ": a | b");
        let long = "é".repeat(2000);
        assert!(tail(long.as_bytes()).len() <= STDERR_TAIL + 4);
    }

    #[test]
    fn background_reads_return_everything() {
        let rx = read_in_background(Some(&b"hello"[..]));
        assert_eq!(rx.recv().unwrap(), b"hello");
        assert!(read_in_background::<&[u8]>(None).recv().unwrap().is_empty());
    }
}
