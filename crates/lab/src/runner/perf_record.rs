//! `--profile`: wrapping a trial child in `perf record`, and what that needs before the run
//! starts — perf on the PATH, the event the machine can sample (`cycles` where the PMU exists,
//! else `cpu-clock`), a sampling rate perf will not be throttled at, and a kallsyms snapshot.
//!
//! Files live beside the database: `<db dir>/profiles/run<ID>/n<N>-t<K>.perf.data` and
//! `<db dir>/profiles/run<ID>/kallsyms`, so `perf report -i FILE` opens a trial's profile and
//! `scalelab profile` symbolises kernel addresses as they were when the run recorded them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// What the trial executor needs to profile one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileRequest {
    /// The perf.data file to write.
    pub path: PathBuf,
    /// `cycles` or `cpu-clock`.
    pub event: String,
    /// Sampling frequency (Hz).
    pub frequency: u32,
}

/// The run-wide profiling settings, fixed before the first trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSettings {
    /// Profile the first K trials of each point.
    pub trials: u32,
    /// `<db dir>/profiles/run<ID>` (set once the run has its id).
    pub dir: Option<PathBuf>,
    pub event: String,
    pub frequency: u32,
}

impl ProfileSettings {
    /// The request for trial `index` of point `n`, or `None` when it is not profiled.
    pub fn request(&self, n: u32, index: u32) -> Option<ProfileRequest> {
        let dir = self.dir.as_ref()?;
        (index < self.trials).then(|| ProfileRequest {
            path: dir.join(format!("n{n}-t{}.perf.data", index + 1)),
            event: self.event.clone(),
            frequency: self.frequency,
        })
    }
}

/// The default sampling rate: perf's own default, lowered to a quarter of the kernel's
/// `perf_event_max_sample_rate` so the kernel does not throttle it.
pub const DEFAULT_FREQUENCY: u32 = 4000;

/// Sampling frequency for this machine.
pub fn frequency() -> u32 {
    let max = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(100_000);
    DEFAULT_FREQUENCY.min(max / 4).max(1)
}

/// `cycles` when this machine can sample it, else `cpu-clock` (a VM without a virtual PMU).
/// perf itself falls back silently, so the choice is made here with a real perf_event_open.
pub fn choose_event() -> String {
    let c = perf::InheritedCounters::open(&[perf::HwEvent::Cycles]);
    if c.available().contains(&perf::HwEvent::Cycles) && !c.excludes_kernel() {
        "cycles".into()
    } else {
        "cpu-clock".into()
    }
}

/// Checks that `perf record` can run here; the error names the fix.
pub fn check_perf() -> Result<(), LabError> {
    let mut perf = Command::new("perf");
    perf.arg("--version");
    super::owner::adopt(&mut perf);
    match perf.output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return Err(LabError::BadOption(format!(
                "--profile: `perf --version` failed: {} — install the perf matching your kernel (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r))",
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        Err(e) => {
            return Err(LabError::BadOption(format!(
                "--profile: cannot run `perf` ({e}) — install it (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r))"
            )));
        }
    }
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if paranoid.is_some_and(|p| p > 2) && !effective_root() {
        return Err(LabError::BadOption(format!(
            "--profile: kernel.perf_event_paranoid = {} forbids perf record for users — set it <= 2 (sysctl kernel.perf_event_paranoid=1) or run as root / with CAP_PERFMON",
            paranoid.unwrap_or_default()
        )));
    }
    Ok(())
}

/// True when the effective uid is 0 (from /proc/self/status, no unsafe needed).
fn effective_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|e| e == "0"))
            .unwrap_or(false)
    })
}

/// Why kernel functions would stay unnamed (kallsyms hidden by kptr_restrict, or unreadable);
/// `None` when kernel symbols are there. The profile records either way.
pub fn kallsyms_warning() -> Option<String> {
    let path = Path::new("/proc/kallsyms");
    if !path.exists() {
        return Some("--profile: /proc/kallsyms is missing, so kernel functions will be [unknown] — a kernel built with CONFIG_KALLSYMS is needed".into());
    }
    (!perf::profile::kallsyms_has_addresses(path)).then(|| {
        "--profile: /proc/kallsyms shows no addresses, so kernel functions will be [unknown] — set kernel.kptr_restrict=0 (or run as root)".into()
    })
}

/// Creates the run's profile directory and snapshots /proc/kallsyms into it.
pub fn prepare_dir(dir: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
    let target = dir.join("kallsyms");
    // Unreadable kallsyms was already reported by `kallsyms_warning`; kernel names stay unknown.
    if let Ok(bytes) = std::fs::read("/proc/kallsyms") {
        std::fs::write(&target, bytes)
            .map_err(|e| LabError::io(format!("writing {}", target.display()), e))?;
    }
    Ok(())
}

/// The `perf record` argument list that runs `program args…` as a profiled trial.
pub fn perf_args(req: &ProfileRequest, program: &Path, args: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "record",
        "-g",
        "-k",
        "CLOCK_MONOTONIC",
        "-e",
        &req.event,
        "-F",
        &req.frequency.to_string(),
        "-o",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    v.push(req.path.display().to_string());
    v.push("--".into());
    v.push(program.display().to_string());
    v.extend(args.iter().cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_k_trials_are_profiled_with_named_files() {
        let s = ProfileSettings {
            trials: 1,
            dir: Some("/db/profiles/run7".into()),
            event: "cpu-clock".into(),
            frequency: 999,
        };
        let r = s.request(4, 0).unwrap();
        assert_eq!(r.path, Path::new("/db/profiles/run7/n4-t1.perf.data"));
        assert!(s.request(4, 1).is_none());
        let args = perf_args(&r, Path::new("/bin/scalelab"), &["__trial".into()]);
        assert_eq!(args[args.len() - 3..], ["--", "/bin/scalelab", "__trial"]);
        assert!(args.windows(2).any(|w| w == ["-k", "CLOCK_MONOTONIC"]));
        assert!(frequency() >= 1);
    }
}
