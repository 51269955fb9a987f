//! CPU profiles from `perf record` files: read perf.data in Rust (`linux-perf-data`), symbolise
//! each unique address once (`blazesym`: kernel addresses from a kallsyms snapshot, user
//! addresses through the MMAP/MMAP2 records and the mapped ELF files), and aggregate by
//! function (self and total) and by DSO, keeping the call chains for flame graphs.
//!
//! Never parses `perf script` text. Samples are weighted by their period, as `perf report` does,
//! so shares match `perf report --no-children --sort sym`. The work is split so each address is
//! looked at once: samples are interned into unique stacks of unique frames while reading
//! ([`records`]), the unique frames are symbolised in batches ([`symbols`]), and the unique
//! stacks are folded into functions ([`aggregate`]).

mod aggregate;
mod costs;
mod elf_file;
mod layout;
#[cfg(test)]
mod mutation_tests;
mod record_guard;
mod records;
mod sample_check;
mod span;
mod symbols;
mod workload_tree;

use std::path::{Path, PathBuf};

use crate::error::PerfError;

pub use self::costs::{DsoCost, FunctionCost, Profile, SampleTally, StackCost};
pub use self::span::workload_span;

/// What to read and which samples to keep.
#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// The kallsyms snapshot taken when the profile was recorded; `None`: kernel frames stay
    /// unnamed (`[unknown]` in `[kernel]`) and the notes say so ([`NO_KALLSYMS_NOTE`]).
    pub kallsyms: Option<PathBuf>,
    /// Keep only samples whose time (CLOCK_MONOTONIC ns, `perf record -k CLOCK_MONOTONIC`)
    /// lies in `[start, end]`.
    pub window: Option<(u64, u64)>,
    /// Keep only samples of these threads, sorted (a built-in trial's tasks: the trial child's
    /// sampler and tracer threads are scalelab's, not the workload's); `None` keeps every thread.
    pub threads: Option<Vec<u32>>,
    /// Threads whose samples are counted apart ([`Profile::partner_samples`]), sorted: those a
    /// built-in trial's tasks keep busy beside them on their CPUs (pipe_pingpong's echo
    /// partners). Empty: none.
    pub partners: Vec<u32>,
    /// The program's processes, when not perf's child (`-- program`): these, running when
    /// the file was recorded, and what they fork — a system under test's servers sampled on
    /// every CPU (`perf record -a`) beside the command. Empty: perf's child, as recorded.
    pub roots: Vec<u32>,
}

/// The note a profile read without kallsyms carries, for callers to add how to get one.
pub const NO_KALLSYMS_NOTE: &str = symbols::NO_KALLSYMS;

/// Reads, symbolises and aggregates one perf.data file.
///
/// A corrupt file is an error naming it ("corrupt perf.data (…)"): its layout is checked
/// against its size before anything is allocated from it (`layout`, `record_guard`,
/// `sample_check`), and a panic in the parsing crates, should one remain, is caught here and
/// reported the same way instead of taking the process down.
pub fn read_profile(path: &Path, options: &ProfileOptions) -> Result<Profile, PerfError> {
    if let Some(kallsyms) = &options.kallsyms {
        sys::check_input(kallsyms, sys::InputKind::Kallsyms)?;
    }
    let read = || -> Result<Profile, PerfError> {
        let raw = records::read(
            path,
            options.window,
            (
                options.threads.as_deref(),
                &options.partners,
                &options.roots,
            ),
        )?;
        let malformed = raw.malformed;
        let names = symbols::symbolise(&raw, options.kallsyms.as_deref());
        let mut profile = aggregate::aggregate(raw, names);
        if malformed > 0 {
            profile.notes.push(format!(
                "{malformed} corrupt records were skipped; the profile may be incomplete"
            ));
        }
        Ok(profile)
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(PerfError::ProfileData {
            path: path.display().to_string(),
            cause: layout::corrupt(format!(
                "reading it failed unexpectedly: {message}; please report this with the file"
            )),
        })
    })
}

/// True when a kallsyms file shows real addresses (`kernel.kptr_restrict` hides them as zeros).
pub fn kallsyms_has_addresses(path: &Path) -> bool {
    let Ok(bytes) = sys::read_input(path, sys::InputKind::Kallsyms) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .take(1000)
        .filter_map(|l| l.split_whitespace().next())
        .any(|a| u64::from_str_radix(a, 16).is_ok_and(|v| v != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `perf record -g -k CLOCK_MONOTONIC -e cpu-clock -F 2000 -- dd if=/dev/zero of=/dev/null
    /// bs=64k count=100000`: 306 samples; `perf report --sort dso` gives [kernel.kallsyms]
    /// 84.64%, libc.so.6 8.50%, dd 6.21%, ld-linux-x86-64.so.2 0.65%.
    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dd.perf.data");

    fn share(p: &Profile, dso: &str) -> f64 {
        let d = p.dsos.iter().find(|d| d.dso == dso).map_or(0, |d| d.period);
        100.0 * d as f64 / p.tally.period as f64
    }

    #[test]
    fn the_fixture_parses_with_perf_reports_counts_and_dso_shares() {
        let p = read_profile(Path::new(FIXTURE), &ProfileOptions::default()).unwrap();
        assert_eq!(p.event, "cpu-clock");
        assert_eq!(p.tally.samples, 306);
        assert_eq!(
            (p.tally.throttled, p.tally.lost, p.tally.outside_window),
            (0, 0, 0)
        );
        for (dso, want) in [
            ("[kernel]", 84.64),
            ("dd", 6.21),
            ("ld-linux-x86-64.so.2", 0.65),
        ] {
            let got = share(&p, dso);
            assert!(
                (got - want).abs() < 0.5,
                "{dso}: {got:.2}% vs perf's {want}%"
            );
        }
        // Without a kallsyms snapshot kernel frames stay unnamed, and the profile says so.
        assert!(
            p.notes.iter().any(|n| n.contains("kallsyms")),
            "{:?}",
            p.notes
        );
        let self_total: u64 = p.functions.iter().map(|f| f.self_period).sum();
        assert_eq!(
            self_total, p.tally.period,
            "every sample has exactly one leaf"
        );
        assert!(p.stacks.iter().all(|s| !s.frames.is_empty()));
        assert!(p.functions.iter().all(|f| f.total_period >= f.self_period));
    }

    /// `perf record -a -g -k CLOCK_MONOTONIC -e cpu-clock:I -c 500000 -- dd if=/dev/zero
    /// of=/dev/null bs=64k count=100000` beside a shell busy loop: `perf script -F pid,comm`
    /// counts 472 samples of dd (31743, perf's child), 481 of sh (31741) and 1 of perf.
    const EVERY_CPU: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/every-cpu.perf.data"
    );

    #[test]
    fn a_recording_of_every_cpu_keeps_the_wrapped_programs_samples_alone() {
        let p = read_profile(Path::new(EVERY_CPU), &ProfileOptions::default()).unwrap();
        assert_eq!(
            p.event, "cpu-clock",
            "the :I modifier is not part of the event"
        );
        assert_eq!((p.tally.samples, p.tally.other_processes), (472, 482));
        assert_eq!(p.tally.period, 472 * 500_000);
        assert!(p.dsos.iter().any(|d| d.dso == "dd"), "{:?}", p.dsos);
        assert!(!p.dsos.iter().any(|d| d.dso == "sh" || d.dso == "dash"));
        let (start, end) = super::workload_span(Path::new(EVERY_CPU)).unwrap().unwrap();
        // `perf script --show-task-events`: dd's exec at 47423.335076, its exit at 47423.571518.
        assert!(start.abs_diff(47_423_335_076_000) < 2_000, "{start}");
        assert!(end.abs_diff(47_423_571_518_000) < 2_000, "{end}");
    }

    #[test]
    fn a_partner_threads_samples_are_counted_apart_and_not_aggregated() {
        let all = read_profile(Path::new(FIXTURE), &ProfileOptions::default()).unwrap();
        // Every sample of the fixture is thread 1199's (`perf script -F tid`).
        let options = ProfileOptions {
            threads: Some(vec![7]),
            partners: vec![1199],
            ..ProfileOptions::default()
        };
        let apart = read_profile(Path::new(FIXTURE), &options).unwrap();
        assert_eq!(all.tally.samples, 306);
        assert_eq!(apart.tally.partner_samples, all.tally.samples);
        assert_eq!(apart.tally.partner_period, all.tally.period);
        assert_eq!((apart.tally.samples, apart.tally.other_threads), (0, 0));
        assert!(apart.functions.is_empty());
        // As a kept thread, they are the profile's.
        let options = ProfileOptions {
            threads: Some(vec![1199]),
            partners: vec![1200],
            ..ProfileOptions::default()
        };
        let kept = read_profile(Path::new(FIXTURE), &options).unwrap();
        assert_eq!(
            (kept.tally.samples, kept.tally.partner_samples),
            (all.tally.samples, 0)
        );
    }

    #[test]
    fn named_roots_keep_their_samples_only() {
        let all = read_profile(Path::new(FIXTURE), &ProfileOptions::default()).unwrap();
        // Every sample is process 1199's, dd, perf's child (`perf script -F pid`).
        let read = |roots: Vec<u32>| {
            read_profile(
                Path::new(FIXTURE),
                &ProfileOptions {
                    roots,
                    ..ProfileOptions::default()
                },
            )
            .unwrap()
        };
        assert_eq!(read(vec![1199]).tally.samples, all.tally.samples);
        let other = read(vec![4242]);
        assert_eq!(other.tally.samples, 0);
        assert_eq!(other.tally.other_processes, all.tally.samples);
    }

    #[test]
    fn a_window_keeps_only_the_samples_inside_it() {
        let all = read_profile(Path::new(FIXTURE), &ProfileOptions::default()).unwrap();
        let options = ProfileOptions {
            kallsyms: None,
            // The fixture spans CLOCK_MONOTONIC 2881.466 s .. 2881.877 s.
            window: Some((0, 2_881_600_000_000)),
            threads: None,
            partners: Vec::new(),
            roots: Vec::new(),
        };
        let part = read_profile(Path::new(FIXTURE), &options).unwrap();
        assert!(part.tally.samples > 0 && part.tally.samples < all.tally.samples);
        assert_eq!(
            part.tally.samples + part.tally.outside_window,
            all.tally.samples
        );
    }

    /// The fixture with each `(offset, bytes)` written over it, read from memory.
    fn read_patched(patches: &[(u64, &[u8])]) -> Result<records::RawProfile, String> {
        let mut data = std::fs::read(FIXTURE).unwrap();
        for (at, bytes) in patches {
            let at = *at as usize;
            data[at..at + bytes.len()].copy_from_slice(bytes);
        }
        let len = data.len() as u64;
        records::read_from(std::io::Cursor::new(data), len, None, (None, &[], &[]))
    }

    /// (offset, size) of the fixture's data section, from its header.
    fn data_section() -> (u64, u64) {
        let data = std::fs::read(FIXTURE).unwrap();
        let at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap());
        (at(40), at(48))
    }

    #[test]
    fn a_feature_section_claiming_a_terabyte_is_refused_before_it_is_allocated() {
        // The feature table follows the data section; its first entry is {offset, size}.
        let (offset, size) = data_section();
        let err = read_patched(&[(offset + size + 8, &(1u64 << 40).to_le_bytes())]).unwrap_err();
        assert!(err.starts_with("corrupt perf.data ("), "{err}");
        assert!(err.contains("feature section"), "{err}");
    }

    #[test]
    fn an_auxtrace_record_claiming_a_terabyte_is_refused_before_it_is_allocated() {
        // The data section's first record (a 80-byte MMAP) retyped as AUXTRACE (71), whose body
        // starts with the length of the trace data that follows it.
        let (offset, _) = data_section();
        let err = read_patched(&[
            (offset, &71u32.to_le_bytes()),
            (offset + 8, &(1u64 << 40).to_le_bytes()),
        ])
        .unwrap_err();
        assert!(err.starts_with("corrupt perf.data ("), "{err}");
        assert!(err.contains("trace data"), "{err}");
    }

    #[test]
    fn a_compressed_record_is_refused_naming_the_fix() {
        let (offset, _) = data_section();
        let err = read_patched(&[(offset, &81u32.to_le_bytes())]).unwrap_err();
        assert!(err.starts_with("unsupported perf.data ("), "{err}");
        assert!(err.contains("without -z"), "{err}");
    }

    #[test]
    fn an_event_description_count_of_four_billion_is_refused_before_it_is_allocated() {
        // EVENT_DESC (feature 12) is the 11th section of the fixture's table (features 2..=12).
        let (offset, size) = data_section();
        let data = std::fs::read(FIXTURE).unwrap();
        let entry = (offset + size + 16 * 10) as usize;
        let desc = u64::from_le_bytes(data[entry..entry + 8].try_into().unwrap());
        let err = read_patched(&[(desc, &u32::MAX.to_le_bytes())]).unwrap_err();
        assert!(
            err.starts_with("corrupt perf.data (event descriptions"),
            "{err}"
        );
    }

    #[test]
    fn a_call_chain_length_that_overflows_skips_the_sample_instead_of_panicking() {
        // The first sample is at 1008: IP, TID, TIME and PERIOD, then the chain's length.
        let raw = read_patched(&[(1008 + 8 + 32, &((1u64 << 61) + 1).to_le_bytes())]).unwrap();
        assert_eq!((raw.tally.samples, raw.malformed), (305, 1));
    }

    #[test]
    fn not_a_perf_data_file_is_a_clear_error() {
        let err = read_profile(Path::new("/proc/version"), &ProfileOptions::default()).unwrap_err();
        assert!(err.to_string().contains("/proc/version"), "{err}");
    }
}
