//! `--ops-regex`: a command trial's op count, read from its timed steps' stdout as the output
//! streams by, so that memory stays bounded however much a command prints.
//!
//! The regex matches within one line (`^` and `$` match at the line's start and end) and the
//! first line that matches, in step order, gives the count: its first capture group, or the
//! whole match, as a whole number (`1,234` allowed). A line longer than [`MAX_LINE`] is matched
//! on its first [`MAX_LINE`] bytes.
//!
//! Testing every line alone costs a regex call per line, which on hundreds of MB of short lines
//! is seconds. So whole runs of lines are searched at once, in multi-line mode: a match within
//! one line is also a match in the run, at the same place, so a run without a match has no line
//! that matches, and otherwise the first matching line is at or after the line where the run's
//! first match starts (which may itself span lines, and is then not taken). `\A` and `\z`
//! anchor to the whole run, not a line, so a pattern that has them is tested line by line.

use regex::bytes::Regex;

use super::child_io::Sink;

/// The longest line matched in full, in bytes.
pub(super) const MAX_LINE: usize = 64 * 1024;

pub(super) use model::metric::compile_pattern as compile;

/// Watches one step's stdout for the first line the regex matches; keeps that match and the
/// line in progress, nothing else.
#[derive(Debug)]
pub(super) struct FirstMatch {
    re: Regex,
    /// `\A` or `\z` in the pattern: runs of lines cannot be searched at once.
    line_by_line: bool,
    /// The line in progress (its first [`MAX_LINE`] bytes).
    line: Vec<u8>,
    found: Option<String>,
    /// The line the match was in, its first [`KEPT_LINE`] bytes (for an error that quotes it).
    found_line: String,
}

/// How much of a matching line is kept to quote.
const KEPT_LINE: usize = 1024;

impl FirstMatch {
    pub(super) fn new(re: &Regex) -> FirstMatch {
        let p = re.as_str();
        FirstMatch {
            re: re.clone(),
            line_by_line: p.contains("\\A") || p.contains("\\z"),
            line: Vec::new(),
            found: None,
            found_line: String::new(),
        }
    }

    /// The matched text and the line it was in, once the output has ended.
    pub(super) fn into_found_with_line(mut self) -> Option<(String, String)> {
        let line = std::mem::take(&mut self.found_line);
        self.into_found().map(|f| (f, line))
    }

    /// The matched text, once the output has ended (the last line need not end with `\n`).
    pub(super) fn into_found(mut self) -> Option<String> {
        if self.found.is_none() {
            let line = std::mem::take(&mut self.line);
            self.check(&line);
        }
        self.found
    }

    fn push_line(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Tests one whole line (without its `\n`); true when it matched.
    fn check(&mut self, line: &[u8]) -> bool {
        let line = &line[..line.len().min(MAX_LINE)];
        let Some(caps) = self.re.captures(line) else {
            return false;
        };
        let m = caps
            .get(1)
            .or_else(|| caps.get(0))
            .map_or(&[][..], |m| m.as_bytes());
        self.found = Some(String::from_utf8_lossy(m).into_owned());
        self.found_line = String::from_utf8_lossy(&line[..line.len().min(KEPT_LINE)]).into_owned();
        true
    }

    /// Tests the whole lines in `run` (lines separated by `\n`, none partial).
    fn search(&mut self, run: &[u8]) {
        let from = if self.line_by_line {
            0
        } else {
            let Some(m) = self.re.find(run) else { return };
            run[..m.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
        };
        for line in run[from..].split(|&b| b == b'\n') {
            if self.check(line) {
                return;
            }
        }
    }
}

impl Sink for FirstMatch {
    fn take(&mut self, chunk: &[u8]) {
        if self.found.is_some() {
            return;
        }
        let Some(last) = chunk.iter().rposition(|&b| b == b'\n') else {
            self.push_line(chunk);
            return;
        };
        let (complete, rest) = (&chunk[..last], &chunk[last + 1..]);
        // The line in progress ends at the chunk's first newline.
        let first_end = complete
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(complete.len());
        self.push_line(&complete[..first_end]);
        let line = std::mem::take(&mut self.line);
        if self.check(&line) {
            return;
        }
        if first_end < complete.len() {
            self.search(&complete[first_end + 1..]);
            if self.found.is_some() {
                return;
            }
        }
        self.push_line(rest);
    }
}

/// Several sinks fed the same output: the stderr tail and the first matches of `--ops-regex`
/// and `--metric`s read from the same stream.
#[derive(Debug, Default)]
pub(super) struct Watch {
    pub(super) tail: Option<super::child_io::Tail>,
    pub(super) firsts: Vec<FirstMatch>,
}

impl Sink for Watch {
    fn take(&mut self, chunk: &[u8]) {
        if let Some(t) = &mut self.tail {
            t.take(chunk);
        }
        for f in &mut self.firsts {
            f.take(chunk);
        }
    }
}

/// The op count from the steps' matches (in step order): the first one found, as a number.
pub(super) fn ops_from_matches(
    pattern: &str,
    found: impl IntoIterator<Item = Option<String>>,
) -> Result<u64, String> {
    let m = found
        .into_iter()
        .flatten()
        .next()
        .ok_or_else(|| format!("--ops-regex `{pattern}` did not match the command's output"))?;
    m.trim()
        .replace(',', "")
        .parse::<u64>()
        .map_err(|_| format!("--ops-regex `{pattern}` matched `{m}`, which is not a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `out` in chunks of `size` bytes; returns the match.
    fn feed(pattern: &str, out: &[u8], size: usize) -> Option<String> {
        let mut m = FirstMatch::new(&compile(pattern).unwrap());
        for chunk in out.chunks(size) {
            m.take(chunk);
        }
        m.into_found()
    }

    fn ops(pattern: &str, out: &[u8]) -> Result<u64, String> {
        // Every chunking gives the same answer as one chunk.
        let whole = feed(pattern, out, out.len().max(1));
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(feed(pattern, out, size), whole, "chunks of {size}: {out:?}");
        }
        ops_from_matches(pattern, [whole])
    }

    #[test]
    fn ops_are_read_from_output() {
        assert_eq!(
            ops(r"done (\d+) items", b"x\ndone 1234 items\n").unwrap(),
            1234
        );
        assert_eq!(ops(r"\d+", b"a 7 b").unwrap(), 7);
        assert_eq!(
            ops(r"total: ([\d,]+)", b"total: 1,234,567").unwrap(),
            1_234_567
        );
        assert!(
            ops(r"(\d+) files", b"none")
                .unwrap_err()
                .contains("did not match")
        );
        assert!(
            ops(r"(\w+) files", b"some files")
                .unwrap_err()
                .contains("not a whole number")
        );
    }

    #[test]
    fn the_first_matching_line_wins_and_matches_never_span_lines() {
        assert_eq!(ops(r"n=(\d+)", b"n=1\nn=2\n").unwrap(), 1);
        // `\s` could cross the newline; within one line it cannot, so the later line counts.
        assert_eq!(ops(r"(\d+)\s+items", b"41\nitems\n42 items\n").unwrap(), 42);
        assert!(ops(r"(\d+)\s+items", b"41\nitems\n").is_err());
        // ^ and $ are the line's edges; \A and \z too, as each line is matched alone.
        assert_eq!(ops(r"^(\d+)$", b"a 1\n22\n").unwrap(), 22);
        assert_eq!(ops(r"\A(\d+)\z", b"a 1\n33\n").unwrap(), 33);
        // The last line needs no newline.
        assert_eq!(ops(r"end (\d+)", b"x\nend 5").unwrap(), 5);
    }

    #[test]
    fn an_endless_line_is_cut_and_memory_stays_bounded() {
        let mut m = FirstMatch::new(&compile(r"(\d+) ops").unwrap());
        for _ in 0..100 {
            m.take(&[b'x'; 16 * 1024]);
            assert!(m.line.len() <= MAX_LINE);
        }
        m.take(b" 9 ops\n7 ops\n");
        assert_eq!(m.into_found().as_deref(), Some("7"));
        // Steps in order: the first step with a match gives the count.
        assert_eq!(
            ops_from_matches("x", [None, Some("3".into()), Some("4".into())]),
            Ok(3)
        );
    }
}
