//! Whether this machine can profile and trace locks: the `perf` tool for `--profile`, and the
//! tracefs events `--locks` reads (`lock:contention_begin/end` for kernel locks,
//! `syscalls:sys_enter_futex/sys_exit_futex` for user locks).
//!
//! Probing (running `perf --version`, listing tracefs) is kept apart from judging, which is a
//! pure function of what the probes found, so each verdict is tested without the machine.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::process::Command;

use super::checks::{Check, Severity};
use super::host_fs::HostFs;
use super::kernel::{parse_os_release_field, read_os_release};
use super::mount::parse_mountinfo;

/// Checks `perf` and the tracepoints on this machine, one entry per piece, each with its fix,
/// `adopt`
/// prepares the `perf --version` child before it starts: the engine passes the hook that makes
/// its children die with it.
pub fn perf_checks(adopt: fn(&mut Command)) -> Vec<Check> {
    let host = HostFs::real();
    let kernel_release = host
        .read_trimmed("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let os_release = read_os_release(&host);
    let mut checks = vec![judge_perf(
        &probe_perf(adopt),
        &install_hint(os_release.as_deref(), &kernel_release),
    )];
    checks.extend(judge_tracefs(&probe_tracefs(&host)));
    checks
}

/// What running `perf --version` showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PerfProbe {
    /// It printed a version line.
    Version(String),
    /// No `perf` on `PATH`.
    NotFound,
    /// It ran but failed, e.g. Debian's wrapper without a perf for the running kernel.
    Failed(String),
}

fn probe_perf(adopt: fn(&mut Command)) -> PerfProbe {
    let mut perf = Command::new("perf");
    perf.arg("--version");
    adopt(&mut perf);
    match perf.output() {
        Err(error) if error.kind() == ErrorKind::NotFound => PerfProbe::NotFound,
        Err(error) => PerfProbe::Failed(error.to_string()),
        Ok(output) => {
            let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
            if output.status.success() && !stdout.is_empty() {
                PerfProbe::Version(stdout)
            } else {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                PerfProbe::Failed(
                    format!("{} {}", output.status, first.trim())
                        .trim()
                        .to_string(),
                )
            }
        }
    }
}

/// The command that installs perf on this distribution (from os-release `ID`/`ID_LIKE`).
pub(crate) fn install_hint(os_release: Option<&str>, kernel_release: &str) -> String {
    let ids: Vec<String> = os_release
        .map(|text| {
            ["ID", "ID_LIKE"]
                .iter()
                .filter_map(|key| parse_os_release_field(text, key))
                .flat_map(|value| {
                    value
                        .split_whitespace()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .unwrap_or_default();
    let is = |id: &str| ids.iter().any(|i| i == id);
    if is("ubuntu") {
        format!("sudo apt-get install linux-tools-{kernel_release}")
    } else if is("debian") {
        "sudo apt-get install linux-perf".into()
    } else if is("fedora") || is("rhel") || is("centos") {
        "sudo dnf install perf".into()
    } else if is("arch") {
        "sudo pacman -S perf".into()
    } else if is("suse") || is("opensuse") {
        "sudo zypper install perf".into()
    } else if is("alpine") {
        "sudo apk add perf".into()
    } else {
        "install your distribution's perf package (linux-perf, linux-tools or perf)".into()
    }
}

pub(crate) fn judge_perf(probe: &PerfProbe, install: &str) -> Check {
    let (severity, finding, fix) = match probe {
        PerfProbe::Version(version) => {
            // `perf version 6.1.187`: the check is already named perf.
            let version = version.strip_prefix("perf ").unwrap_or(version);
            (Severity::Ok, format!("{version} installed"), None)
        }
        PerfProbe::NotFound => (
            Severity::Warn,
            "not installed: --profile cannot record CPU profiles".to_string(),
            Some(install.to_string()),
        ),
        PerfProbe::Failed(why) => (
            Severity::Warn,
            format!("on PATH, but `perf --version` failed ({why}): --profile cannot record"),
            Some(install.to_string()),
        ),
    };
    Check {
        name: "perf".into(),
        severity,
        finding,
        fix,
    }
}

/// The tracepoints `--locks` needs, as `system/event` directories under tracefs `events/`.
pub(crate) const KERNEL_LOCK_EVENTS: [&str; 2] = ["lock/contention_begin", "lock/contention_end"];
/// The futex syscall tracepoints user-lock tracing needs.
pub(crate) const FUTEX_EVENTS: [&str; 2] = ["syscalls/sys_enter_futex", "syscalls/sys_exit_futex"];

/// What tracefs looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TracefsProbe {
    /// No `events/` directory anywhere; `supported` says whether the kernel knows tracefs.
    NotMounted { supported: bool },
    /// A tracefs directory exists but this user may not list it.
    Denied { dir: String },
    /// The events directory and which of the wanted events it holds.
    Events {
        dir: String,
        present: BTreeSet<String>,
    },
}

/// Places tracefs is found: the two standard ones, then any other `tracefs` mount.
fn tracefs_dirs(host: &HostFs) -> Vec<String> {
    let mut dirs = vec![
        "/sys/kernel/tracing".to_string(),
        "/sys/kernel/debug/tracing".to_string(),
    ];
    let mounts = parse_mountinfo(&host.read("/proc/self/mountinfo").unwrap_or_default());
    for mount in mounts.into_iter().filter(|m| m.fs_type == "tracefs") {
        if !dirs.contains(&mount.mount_point) {
            dirs.push(mount.mount_point);
        }
    }
    dirs
}

pub(crate) fn probe_tracefs(host: &HostFs) -> TracefsProbe {
    let mut denied = None;
    for dir in tracefs_dirs(host) {
        let events = format!("{dir}/events");
        match host.try_list(&events) {
            Ok(systems) if !systems.is_empty() => {
                let present = KERNEL_LOCK_EVENTS
                    .iter()
                    .chain(&FUTEX_EVENTS)
                    .filter(|event| host.exists(&format!("{events}/{event}")))
                    .map(|event| event.to_string())
                    .collect();
                return TracefsProbe::Events { dir, present };
            }
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::PermissionDenied => {
                denied.get_or_insert(dir);
            }
            Err(_) => {
                // An unreadable parent (mode 0700 debugfs) also hides the directory.
                let parent = host.try_list(&dir);
                if parent.is_err_and(|error| error.kind() == ErrorKind::PermissionDenied) {
                    denied.get_or_insert(dir);
                }
            }
        }
    }
    match denied {
        Some(dir) => TracefsProbe::Denied { dir },
        None => TracefsProbe::NotMounted {
            supported: host
                .read("/proc/filesystems")
                .is_some_and(|text| text.split_whitespace().any(|fs| fs == "tracefs")),
        },
    }
}

/// One check for tracefs itself, one for the kernel lock events, one for the futex events.
pub(crate) fn judge_tracefs(probe: &TracefsProbe) -> Vec<Check> {
    let check = |name: &str, severity, finding: String, fix: Option<&str>| Check {
        name: name.to_string(),
        severity,
        finding,
        fix: fix.map(str::to_string),
    };
    let (tracefs, present, dir) = match probe {
        TracefsProbe::NotMounted { supported: true } => (
            check(
                "tracefs",
                Severity::Warn,
                "not mounted: --locks cannot read lock or futex tracepoints".into(),
                Some("sudo mount -t tracefs nodev /sys/kernel/tracing"),
            ),
            None,
            String::new(),
        ),
        TracefsProbe::NotMounted { supported: false } => (
            check(
                "tracefs",
                Severity::Warn,
                "kernel has no tracefs: --locks cannot read lock or futex tracepoints".into(),
                Some("boot a kernel built with CONFIG_TRACING=y"),
            ),
            None,
            String::new(),
        ),
        TracefsProbe::Denied { dir } => (
            check(
                "tracefs",
                Severity::Warn,
                format!("{dir} is not readable by this user: --locks cannot find its tracepoints"),
                Some("run as root, or: sudo chmod -R o+rX /sys/kernel/tracing"),
            ),
            None,
            dir.clone(),
        ),
        TracefsProbe::Events { dir, present } => (
            check("tracefs", Severity::Ok, format!("mounted at {dir}"), None),
            Some(present),
            dir.clone(),
        ),
    };
    let Some(present) = present else {
        let why = if dir.is_empty() {
            "tracefs is not available".to_string()
        } else {
            format!("{dir} is not readable")
        };
        return vec![
            tracefs,
            check(
                "lock_tracepoints",
                Severity::Info,
                format!("not checked: {why}"),
                None,
            ),
            check(
                "futex_tracepoints",
                Severity::Info,
                format!("not checked: {why}"),
                None,
            ),
        ];
    };
    let has_all = |events: &[&str]| events.iter().all(|e| present.contains(*e));
    let locks = if has_all(&KERNEL_LOCK_EVENTS) {
        check(
            "lock_tracepoints",
            Severity::Ok,
            "lock:contention_begin/end available".into(),
            None,
        )
    } else {
        check(
            "lock_tracepoints",
            Severity::Warn,
            "no lock:contention_begin/end tracepoints (Linux 5.19+): --locks cannot see kernel locks"
                .into(),
            Some("boot Linux 5.19 or newer"),
        )
    };
    let futex = if has_all(&FUTEX_EVENTS) {
        check(
            "futex_tracepoints",
            Severity::Ok,
            "syscalls:sys_enter_futex/sys_exit_futex available".into(),
            None,
        )
    } else {
        check(
            "futex_tracepoints",
            Severity::Warn,
            "no syscalls:sys_enter_futex/sys_exit_futex tracepoints: --locks cannot see user (futex) waits"
                .into(),
            Some("boot a kernel built with CONFIG_FTRACE_SYSCALLS=y"),
        )
    };
    vec![tracefs, locks, futex]
}

#[cfg(test)]
mod tests {
    use super::super::host_fs::fake::put;
    use super::*;

    #[test]
    fn perf_verdicts() {
        let ok = judge_perf(&PerfProbe::Version("perf version 6.1.187".into()), "x");
        assert_eq!((ok.severity, ok.fix), (Severity::Ok, None));
        let missing = judge_perf(&PerfProbe::NotFound, "sudo apt-get install linux-perf");
        assert_eq!(missing.severity, Severity::Warn);
        assert_eq!(
            missing.fix.as_deref(),
            Some("sudo apt-get install linux-perf")
        );
        let broken = judge_perf(
            &PerfProbe::Failed("exit status: 1 WARNING: perf not found".into()),
            "y",
        );
        assert!(
            broken.finding.contains("perf not found"),
            "{}",
            broken.finding
        );
    }

    #[test]
    fn install_hint_follows_the_distribution() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(
            install_hint(Some(debian), "6.1.0-18-amd64"),
            "sudo apt-get install linux-perf"
        );
        let ubuntu = "ID=ubuntu\nID_LIKE=debian\n";
        assert_eq!(
            install_hint(Some(ubuntu), "6.8.0-31-generic"),
            "sudo apt-get install linux-tools-6.8.0-31-generic"
        );
        let rocky = "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n";
        assert_eq!(install_hint(Some(rocky), ""), "sudo dnf install perf");
        assert!(install_hint(None, "").contains("perf package"));
    }

    #[test]
    fn tracefs_probe_finds_events_and_reports_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let host = HostFs::at(dir.path());
        put(
            dir.path(),
            "/proc/filesystems",
            "nodev\tsysfs\nnodev\ttracefs\n",
        );
        assert_eq!(
            probe_tracefs(&host),
            TracefsProbe::NotMounted { supported: true }
        );

        put(
            dir.path(),
            "/sys/kernel/tracing/events/lock/contention_begin/id",
            "1\n",
        );
        put(
            dir.path(),
            "/sys/kernel/tracing/events/lock/contention_end/id",
            "2\n",
        );
        let TracefsProbe::Events {
            dir: found,
            present,
        } = probe_tracefs(&host)
        else {
            panic!("events not found");
        };
        assert_eq!(found, "/sys/kernel/tracing");
        assert_eq!(present.len(), 2);
        let verdicts = judge_tracefs(&TracefsProbe::Events {
            dir: found,
            present,
        });
        let severities: Vec<Severity> = verdicts.iter().map(|c| c.severity).collect();
        assert_eq!(severities, [Severity::Ok, Severity::Ok, Severity::Warn]);
        assert_eq!(
            verdicts[2].fix.as_deref(),
            Some("boot a kernel built with CONFIG_FTRACE_SYSCALLS=y")
        );
    }

    #[test]
    fn tracefs_under_debugfs_or_another_mount_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let host = HostFs::at(dir.path());
        put(
            dir.path(),
            "/proc/self/mountinfo",
            "50 20 0:12 / /tracing rw - tracefs nodev rw\n",
        );
        put(
            dir.path(),
            "/tracing/events/syscalls/sys_enter_futex/id",
            "9\n",
        );
        put(
            dir.path(),
            "/tracing/events/syscalls/sys_exit_futex/id",
            "10\n",
        );
        let TracefsProbe::Events {
            dir: found,
            present,
        } = probe_tracefs(&host)
        else {
            panic!("events not found");
        };
        assert_eq!(found, "/tracing");
        assert!(present.contains("syscalls/sys_enter_futex"));
    }

    #[test]
    fn unmounted_tracefs_gives_the_mount_fix_and_skips_events() {
        let verdicts = judge_tracefs(&TracefsProbe::NotMounted { supported: true });
        assert_eq!(verdicts.len(), 3);
        assert_eq!(verdicts[0].severity, Severity::Warn);
        assert_eq!(
            verdicts[0].fix.as_deref(),
            Some("sudo mount -t tracefs nodev /sys/kernel/tracing")
        );
        assert!(verdicts[1..].iter().all(|c| c.severity == Severity::Info));
        let unsupported = judge_tracefs(&TracefsProbe::NotMounted { supported: false });
        assert!(
            unsupported[0]
                .fix
                .as_deref()
                .unwrap()
                .contains("CONFIG_TRACING")
        );
        let denied = judge_tracefs(&TracefsProbe::Denied {
            dir: "/sys/kernel/tracing".into(),
        });
        assert!(denied[0].finding.contains("not readable"));
    }
}
