//! CI's fuzzing of the perf.data reader: 2,000 seeded mutations of the golden fixture, each of
//! which must parse or be refused with a clean error — no panic, no abort, no allocation
//! beyond what the file's size allows.
//!
//! A failed allocation aborts the process, which no `catch_unwind` sees, so the mutations run
//! in a child process (this test binary, filtered to [`perf_data_mutations`]) whose address
//! space is capped with `RLIMIT_AS`: an oversized allocation fails there at once and the
//! parent reports the case the child was on.

use std::io::{Cursor, Write};
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;

use super::records;
use crate::mutation::Mutator;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dd.perf.data");
const CASES: u64 = 2_000;
const SEED: u64 = 0x5ca1_ab1e;
/// Set in the child's environment: cap the address space, the parent is watching.
const CHILD_ENV: &str = "SCALELAB_PERF_DATA_MUTATION_CHILD";
/// The child's address-space cap: the test binary plus a parse of a 38 KB file fit many times
/// over; a length read from the file and believed does not.
const ADDRESS_SPACE_CAP: u64 = 1 << 30;

#[test]
fn corrupt_perf_data_is_an_error_never_a_panic_or_an_abort() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([
            "--exact",
            "profile::mutation_tests::perf_data_mutations",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running the mutation child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last_case = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("case "))
        .unwrap_or("no case started");
    let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
    assert!(
        out.status.success(),
        "the mutation child died ({}); last {last_case} (seed {SEED:#x}); stderr ends:\n{}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    // libtest prints the child's output after "test NAME ... " on the same line.
    let summary = stdout
        .lines()
        .find_map(|l| l.find("perf.data mutations:").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("no summary line from the mutation child:\n{stdout}"));
    assert!(
        summary.starts_with(&format!("perf.data mutations: {CASES} ran")),
        "{summary}"
    );
    // Straight to stderr, past libtest's capture: CI's log shows how many mutations ran.
    let _ = writeln!(std::io::stderr(), "{summary}");
}

/// The body of [`corrupt_perf_data_is_an_error_never_a_panic_or_an_abort`]; runs as a plain
/// test too (`--include-ignored`), then without the memory cap.
#[test]
#[ignore = "run in a memory-capped child by corrupt_perf_data_is_an_error_never_a_panic_or_an_abort"]
fn perf_data_mutations() {
    if std::env::var_os(CHILD_ENV).is_some() {
        cap_address_space(ADDRESS_SPACE_CAP);
    }
    let fixture = std::fs::read(FIXTURE).expect("the golden perf.data");
    let hot = hot_ranges(&fixture);
    let mutator = Mutator::new(SEED);
    let (mut parsed, mut refused) = (0u64, 0u64);
    let mut panics = Vec::new();
    for case in 0..CASES {
        // The last such line names the case when the child dies.
        eprintln!("case {case}");
        let data = mutator.mutate(case, &fixture, &hot);
        let len = data.len() as u64;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            records::read_from(Cursor::new(&data[..]), len, None, (None, &[], &[]))
        }));
        match outcome {
            Ok(Ok(_)) => parsed += 1,
            Ok(Err(cause)) => {
                assert!(
                    [
                        "corrupt perf.data",
                        "not a perf.data",
                        "unsupported perf.data"
                    ]
                    .iter()
                    .any(|p| cause.starts_with(p)),
                    "case {case}: unexpected error text: {cause}"
                );
                refused += 1;
            }
            Err(panic) => {
                let text = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                panics.push(format!("case {case}: {text}"));
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} of {CASES} mutations panicked (seed {SEED:#x}):\n{}",
        panics.len(),
        panics.join("\n")
    );
    println!(
        "perf.data mutations: {CASES} ran (seed {SEED:#x}): {parsed} parsed, {refused} refused \
         as corrupt, 0 panics, 0 aborts"
    );
}

/// The header, the attribute section and everything after the data section (the feature
/// table and the feature sections): where the sizes are.
fn hot_ranges(file: &[u8]) -> Vec<Range<usize>> {
    let u64_at = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap()) as usize;
    let (attr_offset, attr_size) = (u64_at(24), u64_at(32));
    let (data_offset, data_size) = (u64_at(40), u64_at(48));
    vec![
        0..104,
        attr_offset..attr_offset + attr_size,
        data_offset..data_offset + 64,
        data_offset + data_size..file.len(),
    ]
}

fn cap_address_space(bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit only reads the struct, which lives across the call.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    assert_eq!(
        rc,
        0,
        "setrlimit(RLIMIT_AS): {}",
        std::io::Error::last_os_error()
    );
}
