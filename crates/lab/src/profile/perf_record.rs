//! `--profile`: the `perf record` command line that wraps a trial's program, and what that
//! needs before the run starts — perf on the PATH, the event the machine can sample (`cycles`
//! where the PMU exists, else `cpu-clock`), a sampling rate perf will not be throttled at, and
//! a kallsyms snapshot.
//!
//! Files live beside the database, in a folder of the run's own:
//! `<db dir>/profiles/<db file name>/<run uuid>/n<N>-t<K>.perf.data` and `…/kallsyms`, so
//! `perf report -i FILE` opens a trial's profile and `scalelab profile` symbolises kernel
//! addresses as they were when the run recorded them. Keyed by database and run, two databases
//! in one folder never share a profile.
//!
//! scalelab runs as root and perf.data files hold kernel addresses: every folder is 0700 and
//! every file 0600, made with [`sys::owned_dir`] (never through a link, the database's folder
//! checked so that no other user can swap a folder for a link). The run's folder is new, and
//! each perf.data is made empty (`O_EXCL`) before `perf record -o` opens it by name, so perf
//! only ever writes a file scalelab has just made in a folder only scalelab can write.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::scope::{self, ProfileScope};
use crate::error::LabError;
use sys::owned_dir::{self, OwnedDir};

/// What the trial executor needs to profile one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileRequest {
    /// The perf.data file to write.
    pub path: PathBuf,
    /// `cycles` or `cpu-clock`.
    pub event: String,
    /// Sampling frequency (Hz).
    pub frequency: u32,
    /// For a command trial: one perf.data per timed step, in order (the first is `path`, the
    /// main command's); empty for a built-in trial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<PathBuf>,
    /// `Some(bytes)`: user call chains unwound from a copy of that much user stack
    /// (`--call-graph dwarf,BYTES`), for programs built without frame pointers; `None`: by
    /// frame pointer (`-g`), as scalelab's own workloads are built. DWARF samples are ~16 KiB
    /// each instead of ~100 bytes, so only programs that need it pay for it.
    #[serde(default)]
    pub dwarf_stack: Option<u32>,
    /// Each CPU's ring buffer (`perf record -m`, in pages): perf maps one per online CPU, so
    /// on big machines it is lowered to keep the total bounded (`perf::record_ring_bytes`);
    /// `None`: perf's default.
    #[serde(default)]
    pub ring_pages: Option<usize>,
    /// Sample every CPU (`perf record -a`, idle left out) and keep the wrapped program's tree
    /// when reading, instead of following the program's tasks: see [`super::scope`].
    #[serde(default)]
    pub every_cpu: bool,
}

/// The run-wide profiling settings, fixed before the first trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileSettings {
    /// Profile the first K trials of each point.
    pub trials: u32,
    /// The run's folder from [`prepare_dir`] (set before the run begins).
    pub(crate) dir: Option<Arc<OwnedDir>>,
    /// The sampled event: `cycles` where this machine can sample it, else `cpu-clock`.
    pub event: String,
    /// Samples per second: perf's default of 4000, at most a quarter of the kernel's
    /// `perf_event_max_sample_rate`.
    pub frequency: u32,
    /// Each CPU's ring buffer in pages (`-m`), from the online CPU count.
    pub ring_pages: usize,
    /// Where the samples are taken: the program's tasks, every CPU, or (`auto`) every CPU
    /// at a low rate for the points whose untraced tasks switched often
    /// ([`super::scope`], with the measurements behind it).
    pub scope: ProfileScope,
    /// `frequency` is the user's (`--profile-frequency`): `auto` keeps it on every CPU too.
    pub frequency_given: bool,
}

impl ProfileSettings {
    /// Profiles the first `trials` trials of each point, with the event and the sampling rate
    /// this machine supports; the run's folder is made when the run begins.
    pub fn new(trials: u32) -> ProfileSettings {
        ProfileSettings {
            trials,
            dir: None,
            event: choose_event(),
            frequency: frequency(),
            ring_pages: ring_pages(model::env::CpuTopology::read().cpus.len()),
            scope: ProfileScope::Auto,
            frequency_given: false,
        }
    }

    /// For a command: its samples copy the user stack (DWARF), so its default rate is
    /// [`COMMAND_FREQUENCY`] (or this machine's lower limit).
    pub fn for_command(mut self) -> ProfileSettings {
        self.frequency = self.frequency.min(COMMAND_FREQUENCY);
        self
    }

    /// Under `--explain`: its answer counts blocked time, and every sample that lands in a
    /// lock's hold lengthens it, so the default rate is [`EXPLAIN_FREQUENCY`] (or this
    /// machine's lower limit).
    pub fn for_explain(mut self) -> ProfileSettings {
        self.frequency = self.frequency.min(EXPLAIN_FREQUENCY);
        self
    }

    /// Sampling where `scope` says (`--profile-scope`); `every-cpu` is refused, naming what
    /// would allow it, where perf may not sample every CPU (`auto` then follows the tasks).
    pub fn in_scope(mut self, scope: ProfileScope) -> Result<ProfileSettings, String> {
        if scope == ProfileScope::EveryCpu && !every_cpu_allowed() {
            return Err("--profile-scope every-cpu: perf may not sample every CPU here — run as root, or set kernel.perf_event_paranoid to 0 or less".into());
        }
        self.scope = scope;
        Ok(self)
    }

    /// At `hz` samples a second (`--profile-frequency`); refused, naming the limit, above the
    /// kernel's `perf_event_max_sample_rate` (perf itself would refuse it, or the kernel
    /// throttle it).
    pub fn at_frequency(mut self, hz: u32) -> Result<ProfileSettings, String> {
        let max = max_sample_rate();
        if hz == 0 || hz > max {
            return Err(format!(
                "--profile-frequency {hz}: samples a second must be between 1 and this kernel's \
                 limit, {max} (kernel.perf_event_max_sample_rate; the kernel lowers it when \
                 sampling takes too long)"
            ));
        }
        self.frequency = hz;
        self.frequency_given = true;
        Ok(self)
    }

    /// The request for trial `index` of point `n`, or `None` when it is not profiled, sampled
    /// where [`scope::choose`] says given `switch_rate` (the point's untraced tasks' context
    /// switches a second each, `None` when not measured). Its
    /// perf.data is made here, empty and 0600, for `perf record` to fill. A command trial
    /// with `steps` timed steps gets one file per step: `nN-tK.perf.data` for the main command
    /// (as a built-in trial's), `nN-tK-sI.perf.data` for step I (1, 2, …).
    pub(crate) fn request(
        &self,
        n: u32,
        index: u32,
        steps: usize,
        switch_rate: Option<f64>,
    ) -> Result<Option<ProfileRequest>, LabError> {
        let Some(dir) = self.dir.as_ref().filter(|_| index < self.trials) else {
            return Ok(None);
        };
        let stem = format!("n{n}-t{}", index + 1);
        let mut paths = Vec::new();
        for i in 0..steps.max(1) {
            let name = match i {
                0 => format!("{stem}.perf.data"),
                i => format!("{stem}-s{i}.perf.data"),
            };
            dir.create_file(&name).map_err(owned_dir::PathError::from)?;
            paths.push(dir.join(&name));
        }
        let choice = scope::choose(
            self.scope,
            &self.event,
            every_cpu_allowed(),
            switch_rate,
            self.frequency,
            self.frequency_given,
        );
        Ok(Some(ProfileRequest {
            path: paths[0].clone(),
            event: self.event.clone(),
            frequency: choice.frequency,
            // A command may lack frame pointers (Debian's glibc does): its user stacks are
            // copied and unwound with the binaries' unwind tables. scalelab's own workloads
            // are built with frame pointers, and `-g` samples are ~100 bytes, not ~16 KiB.
            dwarf_stack: (steps > 0).then_some(DWARF_STACK_BYTES),
            steps: if steps == 0 { Vec::new() } else { paths },
            ring_pages: Some(self.ring_pages),
            every_cpu: choice.every_cpu,
        }))
    }
}

/// `perf record -m` for a machine of `cpus` online CPUs: 128 pages (perf's 512 KiB) up to 128
/// CPUs, fewer beyond, so that every CPU's ring together stays within 64 MiB (32 pages each at
/// 512 CPUs).
pub(crate) fn ring_pages(cpus: usize) -> usize {
    perf::record_ring_bytes(cpus.max(1)) / 4096
}

/// How much user stack a command's profile samples copy for DWARF unwinding (perf's default).
pub(crate) const DWARF_STACK_BYTES: u32 = 16384;

/// The default sampling rate: perf's own default, lowered to a quarter of the kernel's
/// `perf_event_max_sample_rate` so the kernel does not throttle it.
pub(crate) const DEFAULT_FREQUENCY: u32 = 4000;

/// A command's default sampling rate, a quarter of a built-in's: each of its samples copies
/// [`DWARF_STACK_BYTES`] of user stack (what that cost: docs/notes/profiling.md); samply
/// samples at 1 kHz by default too.
pub(crate) const COMMAND_FREQUENCY: u32 = 1000;

/// The default rate under `--explain` (built-ins and commands alike). A sample is a timer
/// interrupt (in a guest a VM exit) and a call chain, microseconds that lengthen whatever it
/// lands in, a lock's hold too: the other tasks then find the lock held and sleep, and the
/// futex wait explain names is the profile's making, the more so the higher the rate (the
/// figures: docs/notes/profiling.md). 1 kHz is samply's default.
pub(crate) const EXPLAIN_FREQUENCY: u32 = 1000;

/// The kernel's `perf_event_max_sample_rate` (100000 when unreadable).
fn max_sample_rate() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(100_000)
}

/// Sampling frequency for this machine.
pub(crate) fn frequency() -> u32 {
    DEFAULT_FREQUENCY.min(max_sample_rate() / 4).max(1)
}

/// `cycles` when this machine can sample it, else `cpu-clock` (a VM without a virtual PMU).
/// perf itself falls back silently, so the choice is made here with a real perf_event_open.
pub(crate) fn choose_event() -> String {
    let c = perf::InheritedCounters::open(&[perf::HwEvent::Cycles]);
    if c.available().contains(&perf::HwEvent::Cycles) && !c.excludes_kernel() {
        "cycles".into()
    } else {
        "cpu-clock".into()
    }
}

/// Checks that `perf record` can run here; the error names the fix.
pub(crate) fn check_perf() -> Result<(), LabError> {
    let mut perf = Command::new("perf");
    perf.arg("--version");
    crate::process::owner::adopt(&mut perf);
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

/// Whether `perf record -a` may run here: as root, or where `perf_event_paranoid` is 0 or
/// less (a user with CAP_PERFMON alone is profiled task by task).
pub(crate) fn every_cpu_allowed() -> bool {
    effective_root()
        || std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .is_some_and(|p| p <= 0)
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
pub(crate) fn kallsyms_warning() -> Option<String> {
    let path = Path::new("/proc/kallsyms");
    if !path.exists() {
        return Some("--profile: /proc/kallsyms is missing, so kernel functions will be [unknown] — a kernel built with CONFIG_KALLSYMS is needed".into());
    }
    (!perf::kallsyms_has_addresses(path)).then(|| {
        "--profile: /proc/kallsyms shows no addresses, so kernel functions will be [unknown] — set kernel.kptr_restrict=0 (or run as root)".into()
    })
}

/// Makes the folder of run `run` of the database `db`,
/// `<db dir>/profiles/<db file name>/<run>/`, and snapshots /proc/kallsyms into it. Refused
/// when another user could redirect it: the database's folder (and every one above it) must
/// be yours or root's and not writable by others unless sticky; `profiles` and the database's
/// subfolder, when they exist, must be yours and writable by you alone.
pub(crate) fn prepare_dir(db: &Path, run: uuid::Uuid) -> Result<OwnedDir, LabError> {
    let dir = profiles_of(db)?
        .new_subdir(&run.hyphenated().to_string())
        .map_err(owned_dir::PathError::from)?;
    // Unreadable kallsyms was already reported by `kallsyms_warning`; kernel names stay unknown.
    if let Ok(bytes) = std::fs::read("/proc/kallsyms") {
        if let Err(e) = snapshot_kallsyms(&dir, &bytes) {
            // Nothing half-written stays behind: not the partial snapshot, not the new folder.
            let _ = std::fs::remove_file(dir.join(KALLSYMS_PARTIAL));
            let _ = std::fs::remove_dir(dir.path());
            return Err(e);
        }
    }
    Ok(dir)
}

/// The name a kallsyms snapshot is written under until it is whole.
const KALLSYMS_PARTIAL: &str = "kallsyms.partial";

/// Writes `bytes` (a copy of /proc/kallsyms) as the run folder's snapshot: into a new file that
/// is renamed into place once whole, so that a full disk leaves no truncated snapshot to be
/// read as a whole one.
fn snapshot_kallsyms(dir: &OwnedDir, bytes: &[u8]) -> Result<(), LabError> {
    use std::io::Write;
    let target = dir.join(KALLSYMS);
    let mut file = dir
        .create_file(KALLSYMS_PARTIAL)
        .map_err(owned_dir::PathError::from)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| {
            LabError::io(
                format!(
                    "writing {} (free space beside the database, or run without --profile)",
                    target.display()
                ),
                e,
            )
        })?;
    dir.rename_new(KALLSYMS_PARTIAL, KALLSYMS)
        .map_err(owned_dir::PathError::from)?;
    Ok(())
}

pub(crate) use store::profile_files::profiles_of;

pub(crate) use model::record::KALLSYMS;

/// The `perf record` argument list that samples every CPU (idle left out) into `output` until
/// stopped, as [`perf_args_to`] samples a program: the system under test's servers beside a
/// command, their processes picked out when the file is read. On every CPU rather than
/// following their threads (`-p`): a per-task event is switched out and in with every thread
/// it follows, and a server's threads switch at every request (what that cost:
/// docs/notes/profiling.md). At most [`scope::EVERY_CPU_FREQUENCY`], as an every-CPU profile
/// of the tasks.
pub(crate) fn perf_args_every_cpu(req: &ProfileRequest, output: &Path) -> Vec<String> {
    let every_cpu = ProfileRequest {
        every_cpu: true,
        frequency: req.frequency.min(scope::EVERY_CPU_FREQUENCY),
        ..req.clone()
    };
    let mut v = perf_args_to(&every_cpu, output, Path::new(""), &[]);
    // No program: it records until SIGINT.
    v.truncate(v.len() - 2);
    v
}

/// The `perf record` argument list that runs `program args…` writing `output`: the whole
/// process tree (perf follows every thread and child, across exec), with call graphs.
pub(crate) fn perf_args_to(
    req: &ProfileRequest,
    output: &Path,
    program: &Path,
    args: &[String],
) -> Vec<String> {
    let call_graph = match req.dwarf_stack {
        Some(bytes) => format!("--call-graph=dwarf,{bytes}"),
        None => "-g".to_string(),
    };
    // `--no-bpf-event`: without it perf record watches for BPF programs loaded while it runs
    // in a thread that polls once a second, and waits for that poll when the command has ended,
    // which a profiled command step's wall time would carry (docs/notes/profiling.md). Nothing
    // here reads BPF programs' symbol events.
    // Every CPU's samples but idle's (`:I`, which cpu-clock honours; an idle CPU counts no
    // cycles).
    let event = match (req.every_cpu, req.event.as_str()) {
        (true, "cpu-clock") => "cpu-clock:I".to_string(),
        _ => req.event.clone(),
    };
    let mut v: Vec<String> = [
        "record",
        "-q",
        "--no-bpf-event",
        &call_graph,
        "-k",
        "CLOCK_MONOTONIC",
        "-e",
        &event,
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    if req.every_cpu {
        v.push("-a".into());
    }
    // cpu-clock is sampled every fixed span of the task's CPU time, so that the samples' periods
    // add up to the CPU time they cover (frequency mode re-estimates the period as it goes, and
    // over a short, switch-heavy trial its sum strayed 10% from the tasks' CPU time). Other
    // events (cycles) keep perf's frequency mode: only their shares are used.
    if req.event == "cpu-clock" {
        let period_ns = 1_000_000_000 / u64::from(req.frequency.max(1));
        v.extend(["-c".to_string(), period_ns.to_string()]);
    } else {
        v.extend(["-F".to_string(), req.frequency.to_string()]);
    }
    if let Some(pages) = req.ring_pages {
        v.extend(["-m".to_string(), pages.to_string()]);
    }
    v.push("-o".into());
    v.push(output.display().to_string());
    v.push("--".into());
    v.push(program.display().to_string());
    v.extend(args.iter().cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `perf record` argument list that runs `program args…` as a profiled trial.
    fn perf_args(req: &ProfileRequest, program: &Path, args: &[String]) -> Vec<String> {
        perf_args_to(req, &req.path, program, args)
    }

    #[test]
    fn the_servers_are_sampled_on_every_cpu_with_the_same_event_and_no_program() {
        let req = ProfileRequest {
            path: PathBuf::from("/x/n1-t1.perf.data"),
            event: "cpu-clock".into(),
            frequency: 999,
            steps: Vec::new(),
            dwarf_stack: Some(DWARF_STACK_BYTES),
            ring_pages: Some(128),
            every_cpu: false,
        };
        let servers = Path::new("/x/n1-t1.servers.perf.data");
        let args = perf_args_every_cpu(&req, servers);
        assert!(!args.contains(&"--".to_string()), "{args:?}");
        assert!(args.contains(&"-a".to_string()), "{args:?}");
        assert!(args.contains(&"cpu-clock:I".to_string()), "{args:?}");
        // 241 Hz: a period of 4.149 ms.
        assert!(args.contains(&"4149377".to_string()), "{args:?}");
        // The options an every-CPU profile of the tasks would get, up to `-- prog`.
        let tasks = ProfileRequest {
            every_cpu: true,
            frequency: 241,
            ..req.clone()
        };
        let program = perf_args_to(&tasks, servers, Path::new("prog"), &[]);
        assert_eq!(args[..], program[..program.len() - 2]);
    }

    #[test]
    fn only_the_first_k_trials_are_profiled_with_named_files() {
        let base = tempfile::tempdir().unwrap();
        let run = uuid::Uuid::new_v4();
        let dir = prepare_dir(&base.path().join("lab.db"), run).unwrap();
        let s = ProfileSettings {
            trials: 1,
            dir: Some(Arc::new(dir)),
            event: "cpu-clock".into(),
            frequency: 999,
            ring_pages: 128,
            scope: ProfileScope::Auto,
            frequency_given: false,
        };
        // Not measured: auto follows the tasks, at the run's rate.
        let r = s.request(4, 0, 0, None).unwrap().unwrap();
        assert!(!r.every_cpu);
        assert_eq!(r.frequency, 999);
        let folder = base.path().canonicalize().unwrap();
        let expected = folder.join(format!("profiles/lab.db/{run}/n4-t1.perf.data"));
        assert_eq!(r.path, expected);
        assert!(s.request(4, 1, 0, None).unwrap().is_none());
        // Each perf.data is made once, empty, for perf to fill; never a second time.
        assert_eq!(std::fs::metadata(&r.path).unwrap().len(), 0);
        assert!(s.request(4, 0, 0, None).is_err());
        // A command trial gets one file per timed step, the main command's first.
        let c = s.request(2, 0, 3, None).unwrap().unwrap();
        assert_eq!(c.steps.len(), 3);
        assert_eq!(c.steps[0], c.path);
        assert!(c.steps[2].ends_with("n2-t1-s2.perf.data"));
        assert!(r.steps.is_empty());
        // The scope asked for is what the request carries, whatever the tasks' switch rate.
        for (n, scope, every_cpu) in [
            (8, ProfileScope::Tasks, false),
            (16, ProfileScope::EveryCpu, true),
        ] {
            let s = ProfileSettings { scope, ..s.clone() };
            let q = s.request(n, 0, 0, Some(250_000.0)).unwrap().unwrap();
            assert_eq!((q.every_cpu, q.frequency), (every_cpu, 999), "{scope:?}");
        }
        let args = perf_args(&r, Path::new("/bin/scalelab"), &["__trial".into()]);
        assert_eq!(args[args.len() - 3..], ["--", "/bin/scalelab", "__trial"]);
        assert!(args.windows(2).any(|w| w == ["-k", "CLOCK_MONOTONIC"]));
        assert!(args.contains(&"--no-bpf-event".to_string()), "{args:?}");
        assert!(args.contains(&"-g".to_string()));
        assert!(args.windows(2).any(|w| w == ["-m", "128"]), "{args:?}");
        // cpu-clock at a fixed period (999 Hz: every 1,001,001 ns of CPU time), cycles by rate.
        assert!(args.windows(2).any(|w| w == ["-c", "1001001"]), "{args:?}");
        let cycles = ProfileRequest {
            event: "cycles".into(),
            ..r.clone()
        };
        let args = perf_args(&cycles, Path::new("/bin/prog"), &[]);
        assert!(args.windows(2).any(|w| w == ["-F", "999"]), "{args:?}");
        assert!(!args.contains(&"-a".to_string()), "{args:?}");
        let every_cpu = ProfileRequest {
            every_cpu: true,
            ..r.clone()
        };
        let args = perf_args(&every_cpu, Path::new("/bin/prog"), &[]);
        assert!(args.contains(&"-a".to_string()), "{args:?}");
        assert!(
            args.windows(2).any(|w| w == ["-e", "cpu-clock:I"]),
            "{args:?}"
        );
        assert!(args.windows(2).any(|w| w == ["-c", "1001001"]), "{args:?}");
        let dwarf = ProfileRequest {
            dwarf_stack: Some(16384),
            ..r.clone()
        };
        let args = perf_args(&dwarf, Path::new("/bin/prog"), &[]);
        assert!(
            args.contains(&"--call-graph=dwarf,16384".to_string()),
            "{args:?}"
        );
        assert!(frequency() >= 1);
        let settings = ProfileSettings::new(1);
        assert_eq!(
            settings.clone().for_command().frequency,
            settings.frequency.min(COMMAND_FREQUENCY)
        );
        assert_eq!(
            settings.clone().for_explain().frequency,
            settings.frequency.min(EXPLAIN_FREQUENCY)
        );
        // The user's --profile-frequency, applied after, is kept.
        assert_eq!(
            settings
                .clone()
                .for_explain()
                .at_frequency(4000)
                .unwrap()
                .frequency,
            4000
        );
        assert_eq!(settings.clone().at_frequency(997).unwrap().frequency, 997);
        let e = settings.clone().at_frequency(0).unwrap_err();
        assert!(e.contains("perf_event_max_sample_rate"), "{e}");
        assert!(settings.at_frequency(u32::MAX).is_err());
    }

    #[test]
    fn perf_records_rings_shrink_on_big_machines_to_stay_within_64_mib() {
        assert_eq!(ring_pages(2), 128);
        assert_eq!(ring_pages(128), 128);
        assert_eq!(ring_pages(512), 32);
        assert_eq!(ring_pages(1024), 16);
        for cpus in [1, 2, 96, 384, 512, 1024] {
            assert!(cpus * ring_pages(cpus) * 4096 <= 64 << 20, "{cpus} CPUs");
        }
    }

    #[test]
    fn kallsyms_snapshots_and_profile_folders_are_private_and_never_reused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let db = base.path().join("lab.db");
        let run = uuid::Uuid::new_v4();
        let dir = prepare_dir(&db, run).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        for d in ["profiles", "profiles/lab.db"] {
            assert_eq!(mode(&base.path().join(d)), 0o700, "{d}");
        }
        assert_eq!(mode(dir.path()), 0o700);
        if std::fs::read("/proc/kallsyms").is_ok() {
            assert_eq!(mode(&dir.join(KALLSYMS)), 0o600);
        }
        let err = prepare_dir(&db, run).unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        // Another database in the same folder gets its own subfolder.
        let other = prepare_dir(&base.path().join("other.db"), run).unwrap();
        assert_ne!(other.path(), dir.path());
    }

    /// Was: a full disk left a truncated `kallsyms` snapshot, later read as a whole one.
    #[test]
    fn a_full_disk_leaves_no_truncated_kallsyms_snapshot() {
        let Ok(kallsyms) = std::fs::read("/proc/kallsyms") else {
            return;
        };
        let base = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs"])
            .arg(base.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted || kallsyms.len() < 512 * 1024 {
            eprintln!("skipped: a small tmpfs cannot be mounted here (needs root)");
            return;
        }
        let run = uuid::Uuid::new_v4();
        let result = prepare_dir(&base.path().join("lab.db"), run);
        let left = base
            .path()
            .join("profiles/lab.db")
            .join(run.hyphenated().to_string());
        let exists = left.exists();
        let _ = std::process::Command::new("umount")
            .arg(base.path())
            .status();
        let err = result.unwrap_err().to_string();
        assert!(err.contains("free space"), "{err}");
        assert!(!exists, "{} was left behind", left.display());
    }
}
