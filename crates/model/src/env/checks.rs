//! What on this machine will make numbers noisy or misleading, judged from a [`Fingerprint`].
//!
//! Every verdict derives from a reading in the fingerprint; nothing here does I/O, so a stored
//! run's fingerprint can be judged again later. `Warn` entries are shown under a run's results,
//! so their `finding` says what the reading does to the numbers and `fix` is one command line.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::cpu::{governor_counts, parse_cpu_list};
use super::fingerprint::Fingerprint;
use super::kernel::{FAST_CLOCKSOURCES, MitigationState, PARAVIRT_CLOCKSOURCES};
use crate::number_text::plural;

/// How much a finding matters for measurements.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Nothing to do.
    Ok,
    /// Worth knowing when reading results; not by itself a source of noise.
    Info,
    /// Will make numbers noisy or biased; shown under a run's results.
    Warn,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
        })
    }
}

/// One finding about the environment. The finding follows the name (`doctor` prints them side
/// by side, a run's warnings as `name: finding`), so it never starts with the name again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// Short stable name (`governor`, `smt`).
    pub name: String,
    /// How much it matters to the numbers.
    pub severity: Severity,
    /// What was found and what it does to the numbers.
    pub finding: String,
    /// One command line that fixes it, when there is one.
    pub fix: Option<String>,
}

impl Check {
    fn new(name: &str, severity: Severity, finding: impl Into<String>) -> Check {
        Check {
            name: name.to_string(),
            severity,
            finding: finding.into(),
            fix: None,
        }
    }

    fn with_fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<4} {}: {}", self.severity, self.name, self.finding)?;
        if let Some(fix) = &self.fix {
            write!(f, " — fix: {fix}")?;
        }
        Ok(())
    }
}

/// Judges every reading of `fp`, one check per concern, the ones that bend curves first.
pub fn checks(fp: &Fingerprint) -> Vec<Check> {
    vec![
        cpu_affinity(fp),
        cpu_quota(fp),
        hypervisor(fp),
        governor(fp),
        turbo(fp),
        smt(fp),
        numa(fp),
        load(fp),
        memory(fp),
        clocksource(fp),
        perf_event_paranoid(fp),
        isolated_cpus(fp),
        nohz_full(fp),
        thp(fp),
        mitigations(fp),
        aslr(fp),
        filesystem(fp),
    ]
}

fn unknown(name: &str, what: &str) -> Check {
    Check::new(
        name,
        Severity::Info,
        format!("unknown: the {what} could not be read"),
    )
}

fn cpu_affinity(fp: &Fingerprint) -> Check {
    let Some(allowed) = fp.allowed_cpus.as_deref() else {
        return unknown("cpu_affinity", "CPU affinity");
    };
    let count = parse_cpu_list(allowed).map_or(0, |cpus| cpus.len());
    if count > 0 && count < fp.online_cpus {
        Check::new(
            "cpu_affinity",
            Severity::Warn,
            format!(
                "affinity allows CPUs {allowed} ({count} of {} online): points above N={count} share CPUs",
                fp.online_cpus
            ),
        )
        .with_fix(format!("run outside taskset/cpuset limits, or sweep --tasks 1..{count}"))
    } else {
        Check::new(
            "cpu_affinity",
            Severity::Ok,
            format!("may run on all {} online CPUs ({allowed})", fp.online_cpus),
        )
    }
}

fn cpu_quota(fp: &Fingerprint) -> Check {
    match fp.cpu_quota {
        Some(quota) if quota < fp.online_cpus as f64 => Check::new(
            "cpu_quota",
            Severity::Warn,
            format!(
                "cgroup CPU quota of {quota:.2} CPUs on {} online: throughput flattens near N={quota:.0}",
                fp.online_cpus
            ),
        )
        .with_fix("raise the container's CPU limit (docker --cpus, cgroup cpu.max)"),
        Some(quota) => Check::new(
            "cpu_quota",
            Severity::Info,
            format!("cgroup CPU quota of {quota:.2} CPUs, not below the {} online", fp.online_cpus),
        ),
        None => Check::new("cpu_quota", Severity::Ok, "no cgroup CPU quota found"),
    }
}

fn hypervisor(fp: &Fingerprint) -> Check {
    match &fp.hypervisor {
        Some(name) => Check::new(
            "hypervisor",
            Severity::Warn,
            format!("running under {name}: vCPUs share host CPUs, so steal time and host load enter the numbers"),
        )
        .with_fix("measure on bare metal, or give the VM dedicated, pinned host cores"),
        None => Check::new("hypervisor", Severity::Ok, "bare metal: no hypervisor detected"),
    }
}

fn governor(fp: &Fingerprint) -> Check {
    let Some(summary) = &fp.governor else {
        let by = if fp.hypervisor.is_some() {
            "the host"
        } else {
            "firmware"
        };
        return Check::new(
            "governor",
            Severity::Info,
            format!("no cpufreq governor exposed: clock speed is set by {by}"),
        );
    };
    let counts = governor_counts(summary, fp.online_cpus);
    let slow: Vec<String> = counts
        .iter()
        .filter(|(name, _)| name != "performance")
        .map(|(name, count)| format!("{name} on {count} of {}", plural(fp.online_cpus, "CPU")))
        .collect();
    if slow.is_empty() {
        return Check::new("governor", Severity::Ok, "performance on all CPUs");
    }
    Check::new(
        "governor",
        Severity::Warn,
        format!(
            "{}: clock speed follows load, adding noise",
            slow.join(", ")
        ),
    )
    .with_fix("sudo cpupower frequency-set -g performance")
}

fn turbo(fp: &Fingerprint) -> Check {
    match fp.turbo {
        Some(true) => {
            let fix = if fp.cpufreq_driver.as_deref() == Some("intel_pstate") {
                "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
            } else {
                "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost"
            };
            Check::new(
                "turbo",
                Severity::Warn,
                "boost on: clock drops as more cores get busy, understating speedup at high N",
            )
            .with_fix(fix)
        }
        Some(false) => Check::new("turbo", Severity::Ok, "boost off"),
        None => {
            let by = if fp.hypervisor.is_some() {
                "the host"
            } else {
                "firmware"
            };
            Check::new(
                "turbo",
                Severity::Info,
                format!(
                    "boost not exposed (no intel_pstate/no_turbo or cpufreq/boost): set by {by}"
                ),
            )
        }
    }
}

fn smt(fp: &Fingerprint) -> Check {
    let per_core = fp
        .threads_per_core
        .map_or("several".into(), |n| n.to_string());
    let cores = fp
        .cores
        .map_or("the core count".into(), |n| format!("N={n}"));
    match fp.smt {
        Some(true) => Check::new(
            "smt",
            Severity::Warn,
            format!("on ({per_core} threads per core): tasks above {cores} share cores, so speedup bends there"),
        )
        .with_fix("echo off | sudo tee /sys/devices/system/cpu/smt/control"),
        Some(false) => Check::new("smt", Severity::Ok, "off: one thread per core"),
        None => unknown("smt", "SMT state"),
    }
}

fn numa(fp: &Fingerprint) -> Check {
    match fp.numa_nodes {
        Some(nodes) if nodes > 1 => Check::new(
            "numa",
            Severity::Warn,
            format!("{nodes} NUMA nodes: memory placement varies between trials and remote accesses slow high-N points"),
        )
        .with_fix("numactl --cpunodebind=0 --membind=0 scalelab run …  (stay on one node)"),
        Some(_) => Check::new("numa", Severity::Ok, "one NUMA node"),
        None => unknown("numa", "NUMA topology"),
    }
}

/// A 1-minute load average at or above this means other work competes with the measurement.
const BUSY_LOAD: f64 = 0.5;

fn load(fp: &Fingerprint) -> Check {
    let Some([one, five, _]) = fp.loadavg else {
        return unknown("load", "load average");
    };
    if one >= BUSY_LOAD {
        Check::new(
            "load",
            Severity::Warn,
            format!(
                "1-minute average {one:.2} (5 min: {five:.2}) on {}: other work competes with the measurement, most at high N",
                plural(fp.online_cpus, "CPU")
            ),
        )
        .with_fix("wait until the machine is idle (see `top`), then rerun")
    } else {
        Check::new(
            "load",
            Severity::Ok,
            format!("idle: 1-minute average {one:.2}"),
        )
    }
}

/// Below this share of memory available, reclaim disturbs runs.
const LOW_MEMORY_SHARE: f64 = 0.10;

fn memory(fp: &Fingerprint) -> Check {
    let (Some(total), Some(available)) = (fp.mem_total_kib, fp.mem_available_kib) else {
        return unknown("memory", "available memory");
    };
    let (total_text, available_text) = (kib_text(total), kib_text(available));
    if total > 0 && (available as f64) < LOW_MEMORY_SHARE * total as f64 {
        Check::new(
            "memory",
            Severity::Warn,
            format!("only {available_text} of {total_text} available: reclaim and swapping will disturb the run"),
        )
        .with_fix("stop memory-hungry processes, or shrink the workload's memory size")
    } else {
        Check::new(
            "memory",
            Severity::Ok,
            format!("{available_text} of {total_text} available"),
        )
    }
}

fn kib_text(kib: u64) -> String {
    if kib >= 1024 * 1024 {
        format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} MiB", kib / 1024)
    }
}

fn clocksource(fp: &Fingerprint) -> Check {
    let Some(clock) = fp.clocksource.as_deref() else {
        return unknown("clocksource", "clocksource");
    };
    let switch_to_tsc = fp
        .available_clocksources
        .iter()
        .any(|c| c == "tsc")
        .then_some(
            "echo tsc | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource",
        );
    if FAST_CLOCKSOURCES.contains(&clock) {
        Check::new("clocksource", Severity::Ok, clock)
    } else if PARAVIRT_CLOCKSOURCES.contains(&clock) {
        let check = Check::new(
            "clocksource",
            Severity::Info,
            format!("{clock} (paravirtual): clock reads cost a little more than tsc"),
        );
        match switch_to_tsc {
            Some(fix) => check.with_fix(fix),
            None => check,
        }
    } else {
        Check::new(
            "clocksource",
            Severity::Warn,
            format!("{clock}: every clock read is a slow device access, inflating sys time"),
        )
        .with_fix(
            switch_to_tsc.unwrap_or("dmesg | grep -i clocksource  (find why tsc was rejected)"),
        )
    }
}

fn perf_event_paranoid(fp: &Fingerprint) -> Check {
    const NAME: &str = "perf_event_paranoid";
    let Some(level) = fp.perf_event_paranoid else {
        return unknown(NAME, "level");
    };
    if fp.perfmon_capable == Some(true) {
        return Check::new(
            NAME,
            Severity::Ok,
            format!(
                "{level}, lifted by CAP_PERFMON/CAP_SYS_ADMIN: counters, profiles and lock tracepoints allowed"
            ),
        );
    }
    match level {
        2.. => Check::new(
            NAME,
            Severity::Warn,
            if level >= 3 {
                format!("{level} and not privileged: perf_event_open is denied, counters show n/a")
            } else {
                format!("{level} and not privileged: counters and profiles miss kernel time; --locks unavailable")
            },
        )
        .with_fix("sudo sysctl -w kernel.perf_event_paranoid=1"),
        0..=1 => Check::new(
            NAME,
            Severity::Info,
            format!("{level}: counters and profiles see the kernel; --locks needs -1 or CAP_PERFMON"),
        )
        .with_fix("sudo sysctl -w kernel.perf_event_paranoid=-1"),
        _ => Check::new(
            NAME,
            Severity::Ok,
            format!("{level}: all events allowed"),
        ),
    }
}

fn isolated_cpus(fp: &Fingerprint) -> Check {
    match fp.isolated_cpus.as_deref() {
        Some("") => Check::new("isolated_cpus", Severity::Ok, "no isolated CPUs"),
        Some(list) => Check::new(
            "isolated_cpus",
            Severity::Info,
            format!(
                "CPUs {list} are isolated: the scheduler does not balance onto them, so only pinned tasks run there"
            ),
        ),
        None => unknown("isolated_cpus", "CPU isolation"),
    }
}

fn nohz_full(fp: &Fingerprint) -> Check {
    match fp.nohz_full.as_deref() {
        Some(list) if !list.is_empty() && list != "(null)" => Check::new(
            "nohz_full",
            Severity::Info,
            format!(
                "on CPUs {list}: the tick stops there when one task runs, so timing differs from other CPUs"
            ),
        ),
        Some(_) => Check::new("nohz_full", Severity::Ok, "no nohz_full CPUs"),
        None => Check::new("nohz_full", Severity::Ok, "kernel without nohz_full"),
    }
}

fn thp(fp: &Fingerprint) -> Check {
    let Some(mode) = fp.thp.as_deref() else {
        return unknown("thp", "transparent hugepage mode");
    };
    let effect = match mode {
        "always" => {
            "anonymous memory may get 2 MiB pages depending on fragmentation, changing fault counts"
        }
        "madvise" => "huge pages only where a program asks for them",
        "never" => "no huge pages",
        _ => "see /sys/kernel/mm/transparent_hugepage/enabled",
    };
    Check::new(
        "thp",
        Severity::Info,
        format!("transparent hugepages {mode}: {effect}"),
    )
}

fn mitigations(fp: &Fingerprint) -> Check {
    if fp.mitigations.is_empty() {
        return unknown("mitigations", "CPU vulnerability mitigations");
    }
    let named = |state: MitigationState| -> Vec<&str> {
        fp.mitigations
            .iter()
            .filter(|(_, status)| MitigationState::of(status) == state)
            .map(|(name, _)| name.as_str())
            .collect()
    };
    let (active, vulnerable) = (
        named(MitigationState::Mitigated),
        named(MitigationState::Vulnerable),
    );
    let mut parts = Vec::new();
    if !active.is_empty() {
        parts.push(format!(
            "active: {} (syscalls and context switches cost more)",
            active.join(", ")
        ));
    }
    if !vulnerable.is_empty() {
        parts.push(format!("unmitigated: {}", vulnerable.join(", ")));
    }
    if parts.is_empty() {
        return Check::new(
            "mitigations",
            Severity::Ok,
            "no mitigations needed on this CPU",
        );
    }
    Check::new("mitigations", Severity::Info, parts.join("; "))
}

fn aslr(fp: &Fingerprint) -> Check {
    match fp.aslr {
        Some(0) => Check::new("aslr", Severity::Ok, "off"),
        Some(level) => Check::new(
            "aslr",
            Severity::Info,
            format!("on (randomize_va_space={level}): memory layout, and with it cache behaviour, varies per trial"),
        )
        .with_fix("sudo sysctl -w kernel.randomize_va_space=0"),
        None => unknown("aslr", "ASLR setting"),
    }
}

fn filesystem(fp: &Fingerprint) -> Check {
    let Some(fs_type) = fp.fs_type.as_deref() else {
        return unknown("filesystem", "filesystem of the working directory");
    };
    let note = match fs_type {
        "tmpfs" | "ramfs" => "; memory-backed: file workloads never reach a disk",
        "overlay" => "; overlayfs: file operations pass through an extra layer",
        t if t.starts_with("nfs") || t == "cifs" || t == "smb3" => "; network filesystem",
        t if t.starts_with("fuse") => "; FUSE: file operations go through a user-space daemon",
        "ext3" | "ext4" if fp.fs_journal == Some(false) => {
            "; no journal: metadata operations (create, unlink, fsync) skip jbd2, unlike a default ext4, so their costs do not carry over"
        }
        _ => "",
    };
    Check::new(
        "filesystem",
        Severity::Info,
        format!(
            "{} on {fs_type} ({}; {}){note}",
            fp.workdir,
            fp.fs_source.as_deref().unwrap_or("unknown source"),
            fp.fs_options.as_deref().unwrap_or("unknown options"),
        ),
    )
}

#[cfg(test)]
mod tests;
