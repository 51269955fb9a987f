//! The wrapped program's own span in a `perf record … -- program` file: from its exec (the
//! `PERF_RECORD_COMM` with the exec flag of perf's child, [`WorkloadTree`], stamped through
//! `sample_id_all`) to the exit of that process (its main thread's `PERF_RECORD_EXIT`). perf starts the program only once
//! its events are set up and writes its file after the program has ended, so this span
//! leaves out perf's own start-up and write-out (how long those take: docs/notes/tracing.md).

use std::io::{BufReader, ErrorKind};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{EventRecord, RecordType};
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use super::layout::{self, corrupt};
use super::record_guard::RecordGuard;
use super::workload_tree::WorkloadTree;
use crate::error::PerfError;

/// When the wrapped program ran: (exec, exit), in the file's sample clock (CLOCK_MONOTONIC ns
/// for `perf record -k CLOCK_MONOTONIC`). `None` when the file has no timed exec or no exit of
/// that process (perf was stopped, or recorded without timestamps).
pub fn workload_span(path: &Path) -> Result<Option<(u64, u64)>, PerfError> {
    let fail = |cause: String| PerfError::ProfileData {
        path: path.display().to_string(),
        cause,
    };
    let input = sys::InputFile::open(path, sys::InputKind::PerfData)?;
    let len = input.size().unwrap_or(0);
    let mut source = BufReader::with_capacity(1 << 20, input.into_file());
    let read = || -> Result<Option<(u64, u64)>, String> {
        let layout = layout::check(&mut source, len)?;
        let guarded = RecordGuard::new(source, len, &layout)
            .map_err(|e| corrupt(format!("rewinding: {e}")))?;
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(guarded).map_err(|e| corrupt(format!("header: {e}")))?;
        let mut exec: Option<(i32, u64)> = None;
        let mut tree = WorkloadTree::default();
        loop {
            let record = match record_iter.next_record(&mut perf_file) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(None),
                Err(linux_perf_data::Error::IoError(e)) if e.kind() == ErrorKind::Unsupported => {
                    return Err(format!("unsupported perf.data ({e})"));
                }
                Err(e) => return Err(corrupt(format!("records: {e}"))),
            };
            let PerfFileRecord::EventRecord { record, .. } = record else {
                continue;
            };
            if !matches!(record.record_type, RecordType::COMM | RecordType::EXIT) {
                continue;
            }
            match (exec, record.parse()) {
                (None, Ok(EventRecord::Comm(c))) => {
                    tree.comm(c.pid, &c.name.as_slice(), c.is_execve);
                    let program = tree.root() == Some(c.pid) || tree.names_no_program();
                    if let (true, Some(t)) = (c.is_execve && program, record.timestamp()) {
                        exec = Some((c.pid, t));
                    }
                }
                (Some((pid, start)), Ok(EventRecord::Exit(e))) if e.pid == pid && e.tid == pid => {
                    return Ok((e.timestamp >= start).then_some((start, e.timestamp)));
                }
                _ => {}
            }
        }
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .unwrap_or_else(|_| Err(corrupt("reading it failed unexpectedly".into())))
        .map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture of [`super::super::read_profile`]'s tests: `perf script --show-task-events`
    /// gives `PERF_RECORD_COMM exec: dd:1199/1199` at 2881.465497 and
    /// `PERF_RECORD_EXIT(1199:1199)` at 2881.877333 (s, CLOCK_MONOTONIC).
    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dd.perf.data");

    #[test]
    fn the_span_is_from_the_programs_exec_to_its_exit_as_perf_script_shows_them() {
        let (start, end) = workload_span(Path::new(FIXTURE)).unwrap().unwrap();
        // perf script prints µs; the exit's own time field and the time perf script shows for
        // it (the record's sample id) are a microsecond apart.
        assert!(start.abs_diff(2_881_465_497_000) < 2_000, "{start}");
        assert!(end.abs_diff(2_881_877_333_000) < 2_000, "{end}");
    }

    #[test]
    fn a_file_that_is_not_perf_data_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.perf.data");
        std::fs::write(&path, b"not a perf file at all, just text").unwrap();
        let e = workload_span(&path).unwrap_err().to_string();
        assert!(e.contains("x.perf.data"), "{e}");
    }
}
