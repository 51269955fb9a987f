//! `--profile` as an observer ([`Observer`]): `perf record` wraps the program that creates
//! the trial's tasks — a built-in trial child, or a command step's `sh -c` — and writes the
//! perf.data file made empty for it before the trial ([`super::perf_record`]); when that
//! program has ended, the report is the file, if perf wrote it.
//!
//! Unlike the tracers it is not drained (perf reads its own rings) and leaves no process out;
//! it is opened by whatever spawns the program ([`crate::observer_list`] says where).
//!
//! The system under test's processes (`--server`, `--attach`) are not the wrapped program's:
//! a second `perf record -a` (same event and call graphs, every CPU, at most an every-CPU
//! profile's rate: [`perf_args_every_cpu`]) samples into `<stem>.servers.perf.data` beside
//! it, from [`Observer::follow_system`] until the session finishes, when it gets SIGINT
//! (perf's own stop: it writes its file out) and, after [`SERVERS_STOP_LIMIT`], SIGKILL. The
//! servers' processes then are recorded with it (`servers_pids`): reading keeps theirs and
//! what they fork, and no one else's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::perf_record::{ProfileRequest, perf_args_every_cpu, perf_args_to};
use crate::observer::{Observed, Observer};
use crate::process::owner::adopt;
use model::record::{ClockWindow, ProfileRef};

/// How long the servers' `perf record` may take to write its file after SIGINT.
const SERVERS_STOP_LIMIT: Duration = Duration::from_secs(10);

/// A profile being recorded into `output`.
#[derive(Debug)]
pub(crate) struct ProfileSession {
    request: ProfileRequest,
    output: PathBuf,
    /// The servers' `perf record -a` and its file, once started, and their processes.
    servers: Option<(Child, PathBuf)>,
    servers_pids: Vec<u32>,
}

impl ProfileSession {
    /// Records with `request`'s event and call graphs into `output` (made empty beforehand).
    pub(crate) fn new(request: &ProfileRequest, output: &Path) -> ProfileSession {
        ProfileSession {
            request: request.clone(),
            output: output.to_path_buf(),
            servers: None,
            servers_pids: Vec::new(),
        }
    }

    /// `n1-t1.perf.data` → `n1-t1.servers.perf.data`, beside it.
    fn servers_output(&self) -> PathBuf {
        let name = self
            .output
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("profile.perf.data");
        let stem = name.strip_suffix(".perf.data").unwrap_or(name);
        self.output
            .with_file_name(format!("{stem}.servers.perf.data"))
    }

    /// Stops the servers' `perf record` (SIGINT, then SIGKILL after [`SERVERS_STOP_LIMIT`])
    /// and returns its file when perf wrote it.
    fn stop_servers(&mut self) -> Option<String> {
        let (mut child, path) = self.servers.take()?;
        let _ = sys::send_signal(child.id() as i32, libc::SIGINT);
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if started.elapsed() > SERVERS_STOP_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.len() > 0)
            .then(|| path.display().to_string())
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
                servers_path: None,
                servers_pids: Vec::new(),
            })
    }
}

/// Makes `path` a new empty file, 0600, never through a link (the run's folder is private;
/// `create_new` refuses any name already there, a link included).
fn create_empty(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map(drop)
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

    /// Starts `perf record -a` into the servers' file (made empty and 0600 here) for
    /// processes `pids`; its pid is returned for the tracers to leave out. Nothing is started
    /// where the file cannot be made or perf cannot start: the servers then have no profile.
    fn follow_system(&mut self, pids: &[u32]) -> Option<u32> {
        if self.servers.is_some() || pids.is_empty() {
            return None;
        }
        let path = self.servers_output();
        create_empty(&path).ok()?;
        let mut perf = Command::new("perf");
        perf.args(perf_args_every_cpu(&self.request, &path))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        adopt(&mut perf);
        let child = perf.spawn().ok()?;
        let pid = child.id();
        self.servers = Some((child, path));
        self.servers_pids = pids.to_vec();
        Some(pid)
    }

    fn finish(
        mut self: Box<Self>,
        _window: ClockWindow,
        _tasks: Option<&[u32]>,
        observed: &mut Observed,
    ) {
        let servers = self.stop_servers();
        let servers_pids = match servers {
            Some(_) => std::mem::take(&mut self.servers_pids),
            None => Vec::new(),
        };
        observed.profile = self.recorded().map(|p| ProfileRef {
            servers_path: servers,
            servers_pids,
            ..p
        });
    }
}

impl Drop for ProfileSession {
    fn drop(&mut self) {
        if let Some((mut child, _)) = self.servers.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
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
    fn the_servers_file_is_named_beside_the_profile() {
        let file = Path::new("/x/run/n2-t1.perf.data");
        let session = ProfileSession::new(&request(file), file);
        assert_eq!(
            session.servers_output(),
            Path::new("/x/run/n2-t1.servers.perf.data")
        );
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
