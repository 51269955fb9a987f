//! `--profile` as an observer ([`Observer`]): `perf record` wraps the program that creates
//! the trial's tasks — a built-in trial child, or a command step's `sh -c` — and writes the
//! perf.data file made empty for it before the trial ([`super::perf_record`]); when that
//! program has ended, the report is the file, if perf wrote it.
//!
//! Unlike the tracers it is not drained (perf reads its own rings) and leaves no process out;
//! it is opened by whatever spawns the program ([`crate::observers`] says where).

use std::path::{Path, PathBuf};

use super::perf_record::{ProfileRequest, perf_args_to};
use crate::observer::{Observed, Observer};
use model::record::{ClockWindow, ProfileRef};

/// A profile being recorded into `output`.
#[derive(Debug)]
pub(crate) struct ProfileSession {
    request: ProfileRequest,
    output: PathBuf,
}

impl ProfileSession {
    /// Records with `request`'s event and call graphs into `output` (made empty beforehand).
    pub(crate) fn new(request: &ProfileRequest, output: &Path) -> ProfileSession {
        ProfileSession {
            request: request.clone(),
            output: output.to_path_buf(),
        }
    }

    /// The profile's record, when `perf record` wrote its file (made empty before the trial):
    /// where it is and what was sampled; which threads are the tasks' is the trial child's
    /// to say (a built-in trial).
    fn recorded(&self) -> Option<ProfileRef> {
        std::fs::symlink_metadata(&self.output)
            .is_ok_and(|m| m.is_file() && m.len() > 0)
            .then(|| ProfileRef {
                path: self.output.display().to_string(),
                event: self.request.event.clone(),
                frequency: self.request.frequency,
                threads: Vec::new(),
                partner_threads: Vec::new(),
                partner_on_cpu: None,
                every_cpu: self.request.every_cpu,
            })
    }
}

impl Observer for ProfileSession {
    fn needs_draining(&self) -> bool {
        false
    }

    /// Nothing to leave out: perf records only the process tree it starts.
    fn exclude(&mut self, _pid: u32) {}

    fn drain(&mut self) -> u64 {
        0
    }

    /// `perf record … -- program args…`.
    fn wrap(&self, program: &Path, args: &[String]) -> Option<(PathBuf, Vec<String>)> {
        Some((
            PathBuf::from("perf"),
            perf_args_to(&self.request, &self.output, program, args),
        ))
    }

    /// The command's exec and exit, from perf.data's COMM and EXIT records.
    fn wrapped_span(&self) -> Option<(u64, u64)> {
        perf_read::workload_span(&self.output).ok().flatten()
    }

    fn finish(
        self: Box<Self>,
        _window: ClockWindow,
        _tasks: Option<&[u32]>,
        observed: &mut Observed,
    ) {
        observed.profile = self.recorded();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &Path) -> ProfileRequest {
        ProfileRequest {
            path: path.to_path_buf(),
            event: "cpu-clock".into(),
            frequency: 999,
            steps: Vec::new(),
            dwarf_stack: None,
            ring_pages: None,
            every_cpu: false,
        }
    }

    #[test]
    fn it_wraps_the_program_in_perf_record_and_reports_the_file_only_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("n1-t1.perf.data");
        std::fs::write(&file, b"").unwrap();
        let session = Box::new(ProfileSession::new(&request(&file), &file));
        let (program, args) = session
            .wrap(Path::new("sh"), &["-c".into(), "true".into()])
            .expect("the profile wraps");
        assert_eq!(program, PathBuf::from("perf"));
        assert_eq!(args.first().map(String::as_str), Some("record"));
        assert!(args.contains(&file.display().to_string()));
        assert_eq!(&args[args.len() - 3..], ["sh", "-c", "true"]);
        let window = ClockWindow {
            start: model::record::Nanos(0),
            end: model::record::Nanos(1),
        };
        // Still empty: perf never wrote it (it failed to start, or the trial was cut short).
        let mut observed = Observed::default();
        Box::new(ProfileSession::new(&request(&file), &file)).finish(window, None, &mut observed);
        assert!(observed.profile.is_none());
        std::fs::write(&file, b"PERFILE2").unwrap();
        session.finish(window, None, &mut observed);
        let profile = observed.profile.expect("written, so reported");
        assert_eq!(profile.path, file.display().to_string());
        assert_eq!(
            (profile.event.as_str(), profile.frequency),
            ("cpu-clock", 999)
        );
    }
}
