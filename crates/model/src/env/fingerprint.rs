//! The environment fingerprint recorded with every run and compared before any comparison.
//!
//! [`Fingerprint::capture`] reads everything that changes what a scalability sweep measures
//! (kernel, CPU topology and frequency policy, THP, mitigations, clocksource, hypervisor, perf
//! permissions, the filesystem under the working directory, the scalelab build). It never
//! fails: what cannot be read stays `None` or empty. [`Fingerprint::differences`] lists what
//! differs between two runs' machines, leaving out readings that differ between any two
//! captures.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cpu::{self, format_cpu_list, parse_cpu_list, parse_cpuinfo};
use super::host_fs::HostFs;
use super::kernel::{self, parse_bracketed_choice, parse_os_release_field};
use super::mount::{mount_for, parse_mountinfo};
use super::process::{self, parse_status, perfmon_capable};
use super::system_load::{parse_loadavg, parse_meminfo_kib};
use super::topology::CpuTopology;
use super::topology_reader;
use crate::timestamp::now_rfc3339;

/// The scalelab version that took the fingerprint.
pub(crate) const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit scalelab was built from, or "unknown" (set by `build.rs`).
pub(crate) const GIT_COMMIT: &str = env!("SCALELAB_GIT_COMMIT");

/// What a run's machine looked like. Fields after `captured_at` were added beyond the first
/// contract; `#[serde(default)]` lets records written before a field existed still load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Fingerprint {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: String,
    /// `/proc/sys/kernel/osrelease` (what `uname -r` prints).
    pub kernel_release: String,
    /// `/proc/cmdline`.
    pub kernel_cmdline: String,
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Number of online CPUs.
    pub online_cpus: usize,
    /// The online CPUs as a kernel CPU list (`0-1`).
    pub cpu_list: String,
    /// Whether SMT siblings are active.
    pub smt: Option<bool>,
    /// Hardware threads per core among online CPUs.
    pub threads_per_core: Option<usize>,
    /// Physical cores among online CPUs.
    pub cores: Option<usize>,
    /// Sockets (packages) among online CPUs.
    pub sockets: Option<usize>,
    /// Online NUMA nodes.
    pub numa_nodes: Option<usize>,
    /// The cpufreq governor: its name when all CPUs agree, else `name=count,…` (see
    /// `governor_counts`); `None` without cpufreq (most VMs).
    pub governor: Option<String>,
    /// Turbo/boost: `intel_pstate/no_turbo` inverted, else `cpufreq/boost`.
    pub turbo: Option<bool>,
    /// The selected value of `transparent_hugepage/enabled`.
    pub thp: Option<String>,
    /// `(name, status)` for each file in `/sys/devices/system/cpu/vulnerabilities`, by name.
    pub mitigations: Vec<(String, String)>,
    /// The current clocksource.
    pub clocksource: Option<String>,
    /// The hypervisor ("KVM", "VMware", "Xen", …, or "unidentified"); `None` on bare metal.
    pub hypervisor: Option<String>,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Option<i32>,
    /// `kernel.randomize_va_space` (0 off, 2 full).
    pub aslr: Option<i32>,
    /// `/sys/devices/system/cpu/isolated`; `Some("")` when none are isolated.
    pub isolated_cpus: Option<String>,
    /// `/sys/devices/system/cpu/nohz_full`; `None` when the kernel lacks `NO_HZ_FULL`.
    pub nohz_full: Option<String>,
    /// The 1, 5 and 15 minute load averages (volatile).
    pub loadavg: Option<[f64; 3]>,
    /// `MemTotal`.
    pub mem_total_kib: Option<u64>,
    /// `MemAvailable` (volatile).
    pub mem_available_kib: Option<u64>,
    /// The canonical working directory.
    pub workdir: String,
    /// Filesystem type of the mount holding `workdir`.
    pub fs_type: Option<String>,
    /// Its per-mount options followed by the superblock options not already listed.
    pub fs_options: Option<String>,
    /// Its mount source (`/dev/nvme0n1p2`, `tmpfs`).
    pub fs_source: Option<String>,
    /// For ext3/ext4: whether it has a journal (a jbd2 entry for its device in
    /// `/proc/fs/jbd2/`). Metadata-heavy workloads (create/unlink, fsync) cost very differently
    /// with and without one. `None` for other filesystems.
    #[serde(default)]
    pub fs_journal: Option<bool>,
    /// scalelab's version.
    pub tool_version: String,
    /// The git commit scalelab was built from, or "unknown".
    pub git_commit: String,
    /// When the fingerprint was taken, RFC 3339 UTC.
    pub captured_at: String,
    /// `PRETTY_NAME` from os-release.
    pub os: Option<String>,
    /// The cpufreq driver (`intel_pstate`, `amd-pstate-epp`, `acpi-cpufreq`, …).
    pub cpufreq_driver: Option<String>,
    /// The CPUs this process may run on (`Cpus_allowed_list`); differs from `cpu_list` under
    /// `taskset` or a cpuset.
    pub allowed_cpus: Option<String>,
    /// The tightest cgroup CPU bandwidth limit in CPUs' worth; `None` when unlimited or unknown.
    pub cpu_quota: Option<f64>,
    /// The clocksources the kernel offers (`available_clocksource`).
    pub available_clocksources: Vec<String>,
    /// The effective user id.
    pub euid: Option<u32>,
    /// Whether the process has `CAP_PERFMON` or `CAP_SYS_ADMIN`, which lift
    /// `perf_event_paranoid`.
    pub perfmon_capable: Option<bool>,
    /// The CPU topology (packages, nodes, cores, SMT, L2/L3 domains, cpuset, affinity);
    /// `None` in runs recorded before it was captured.
    pub topology: Option<CpuTopology>,
}

/// One fingerprint field that differs between two runs, both sides rendered as text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Difference {
    /// The field name; mitigations are per vulnerability (`mitigations.spectre_v2`).
    pub field: String,
    /// The value in the first fingerprint ("unknown" when not read, "absent" when missing).
    pub a: String,
    /// The value in the second fingerprint.
    pub b: String,
}

impl Fingerprint {
    /// Reads this machine's environment for a run working in `workdir`.
    pub fn capture(workdir: &Path) -> Fingerprint {
        Fingerprint::capture_from(&HostFs::real(), workdir)
    }

    /// Reads the environment from `host`; the working directory is resolved on the real
    /// filesystem.
    pub fn capture_from(host: &HostFs, workdir: &Path) -> Fingerprint {
        let cpuinfo = parse_cpuinfo(&host.read("/proc/cpuinfo").unwrap_or_default());
        let online = host
            .read("/sys/devices/system/cpu/online")
            .and_then(|text| parse_cpu_list(&text))
            .filter(|cpus| !cpus.is_empty())
            .unwrap_or_else(|| (0..cpuinfo.processors).collect());
        let topology = cpu::read_topology(host, &online).or(cpuinfo.topology);
        let mounts = parse_mountinfo(&host.read("/proc/self/mountinfo").unwrap_or_default());
        let workdir = canonical(workdir);
        let mount = mount_for(&mounts, &workdir);
        let status = parse_status(&host.read("/proc/self/status").unwrap_or_default());
        let meminfo = host.read("/proc/meminfo").unwrap_or_default();

        Fingerprint {
            hostname: host
                .read_trimmed("/proc/sys/kernel/hostname")
                .unwrap_or_default(),
            kernel_release: host
                .read_trimmed("/proc/sys/kernel/osrelease")
                .unwrap_or_default(),
            kernel_cmdline: host.read_trimmed("/proc/cmdline").unwrap_or_default(),
            cpu_model: cpuinfo.model.clone(),
            online_cpus: online.len(),
            cpu_list: format_cpu_list(&online),
            smt: cpu::read_smt(host, topology),
            threads_per_core: topology.map(|t| t.threads_per_core),
            cores: topology.map(|t| t.cores),
            sockets: topology.map(|t| t.sockets),
            numa_nodes: host
                .read("/sys/devices/system/node/online")
                .and_then(|text| parse_cpu_list(&text))
                .map(|nodes| nodes.len())
                .filter(|&nodes| nodes > 0),
            governor: cpu::read_governor(host, &online),
            turbo: cpu::read_turbo(host, &online),
            thp: host
                .read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|text| parse_bracketed_choice(&text)),
            mitigations: kernel::read_mitigations(host),
            clocksource: kernel::read_clocksource(host),
            hypervisor: kernel::read_hypervisor(host, cpuinfo.flags.as_deref()),
            perf_event_paranoid: host.read_int("/proc/sys/kernel/perf_event_paranoid"),
            aslr: host.read_int("/proc/sys/kernel/randomize_va_space"),
            isolated_cpus: host.read_trimmed("/sys/devices/system/cpu/isolated"),
            nohz_full: host.read_trimmed("/sys/devices/system/cpu/nohz_full"),
            loadavg: host.read("/proc/loadavg").and_then(|t| parse_loadavg(&t)),
            mem_total_kib: parse_meminfo_kib(&meminfo, "MemTotal"),
            mem_available_kib: parse_meminfo_kib(&meminfo, "MemAvailable"),
            workdir: workdir.display().to_string(),
            fs_type: mount.map(|m| m.fs_type.clone()),
            fs_options: mount.map(|m| m.options()),
            fs_source: mount.map(|m| m.source.clone()),
            fs_journal: mount.and_then(|m| has_journal(host, &m.fs_type, &m.source)),
            tool_version: TOOL_VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            captured_at: now_rfc3339(),
            os: kernel::read_os_release(host)
                .and_then(|text| parse_os_release_field(&text, "PRETTY_NAME")),
            cpufreq_driver: cpu::read_cpufreq_driver(host, &online),
            allowed_cpus: status.cpus_allowed_list,
            cpu_quota: process::read_cpu_quota(host, &mounts),
            available_clocksources: kernel::read_available_clocksources(host),
            euid: status.euid,
            perfmon_capable: status.effective_caps.map(perfmon_capable),
            topology: Some(topology_reader::read(host)).filter(|t| !t.cpus.is_empty()),
        }
    }

    /// The fields that differ between `self` (a) and `other` (b), in field order.
    ///
    /// Left out, because they differ between any two captures of one machine: `loadavg`,
    /// `mem_available_kib`, `captured_at`, and `workdir` (the filesystem fields under it are
    /// compared). `hostname` is compared: a different host is a different machine even when
    /// every other reading matches (another chip, another cooling, other neighbours), and a
    /// reader comparing runs should see that first. Mitigations compare per vulnerability.
    pub fn differences(&self, other: &Fingerprint) -> Vec<Difference> {
        let (ours, theirs) = (self.comparable(), other.comparable());
        let mut differences: Vec<Difference> = ours
            .iter()
            .zip(&theirs)
            .filter(|((_, a), (_, b))| a != b)
            .map(|((field, a), (_, b))| Difference {
                field: field.to_string(),
                a: a.clone(),
                b: b.clone(),
            })
            .collect();

        let mut names: Vec<&str> = self
            .mitigations
            .iter()
            .chain(&other.mitigations)
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        let status = |fp: &Fingerprint, name: &str| {
            fp.mitigations
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| "absent".to_string(), |(_, s)| s.clone())
        };
        for name in names {
            let (a, b) = (status(self, name), status(other, name));
            if a != b {
                differences.push(Difference {
                    field: format!("mitigations.{name}"),
                    a,
                    b,
                });
            }
        }
        differences
    }

    /// Every non-volatile scalar field as text, in declaration order.
    fn comparable(&self) -> Vec<(&'static str, String)> {
        vec![
            ("hostname", self.hostname.clone()),
            ("kernel_release", self.kernel_release.clone()),
            ("kernel_cmdline", self.kernel_cmdline.clone()),
            ("cpu_model", self.cpu_model.clone()),
            ("online_cpus", self.online_cpus.to_string()),
            ("cpu_list", self.cpu_list.clone()),
            ("smt", on_off(self.smt)),
            ("threads_per_core", shown(&self.threads_per_core)),
            ("cores", shown(&self.cores)),
            ("sockets", shown(&self.sockets)),
            ("numa_nodes", shown(&self.numa_nodes)),
            ("governor", shown(&self.governor)),
            ("turbo", on_off(self.turbo)),
            ("thp", shown(&self.thp)),
            ("clocksource", shown(&self.clocksource)),
            (
                "hypervisor",
                self.hypervisor.clone().unwrap_or_else(|| "none".into()),
            ),
            ("perf_event_paranoid", shown(&self.perf_event_paranoid)),
            ("aslr", shown(&self.aslr)),
            ("isolated_cpus", shown(&self.isolated_cpus)),
            ("nohz_full", shown(&self.nohz_full)),
            ("mem_total_kib", shown(&self.mem_total_kib)),
            ("fs_type", shown(&self.fs_type)),
            ("fs_options", shown(&self.fs_options)),
            ("fs_source", shown(&self.fs_source)),
            ("fs_journal", shown(&self.fs_journal)),
            ("tool_version", self.tool_version.clone()),
            ("git_commit", self.git_commit.clone()),
            ("os", shown(&self.os)),
            ("cpufreq_driver", shown(&self.cpufreq_driver)),
            ("allowed_cpus", shown(&self.allowed_cpus)),
            (
                "cpu_quota",
                self.cpu_quota
                    .map_or_else(|| "unlimited".into(), |q| q.to_string()),
            ),
            (
                "available_clocksources",
                self.available_clocksources.join(" "),
            ),
            ("euid", shown(&self.euid)),
            ("perfmon_capable", on_off(self.perfmon_capable)),
            (
                "topology",
                self.topology
                    .as_ref()
                    .map_or_else(|| "unknown".into(), CpuTopology::summary),
            ),
        ]
    }
}

fn shown<T: ToString>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "unknown".into(), ToString::to_string)
}

fn on_off(value: Option<bool>) -> String {
    match value {
        Some(true) => "on".into(),
        Some(false) => "off".into(),
        None => "unknown".into(),
    }
}

/// The absolute, symlink-free form of `dir`, or as close as the filesystem allows.
fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// Whether an ext3/ext4 filesystem from `source` (`/dev/vda`) has a journal: jbd2 lists each
/// journaled device in `/proc/fs/jbd2/` as `<device>-<journal inode>` (`vda-8`). `None` for
/// other filesystem types.
fn has_journal(host: &HostFs, fs_type: &str, source: &str) -> Option<bool> {
    if !matches!(fs_type, "ext3" | "ext4") {
        return None;
    }
    let device = source.rsplit('/').next().unwrap_or(source);
    let prefix = format!("{device}-");
    Some(
        host.list("/proc/fs/jbd2")
            .iter()
            .any(|entry| entry.starts_with(&prefix)),
    )
}

#[cfg(test)]
mod tests;
