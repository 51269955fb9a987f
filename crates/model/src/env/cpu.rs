//! The CPUs: model, which are online, topology (SMT, cores, sockets), frequency policy.
//!
//! Parsers are pure functions of the text the kernel writes (`/proc/cpuinfo`, CPU lists such as
//! `0-3,8`), so they are tested on literal contents; the `read_*` functions only fetch files.

use std::collections::{BTreeMap, BTreeSet};

use super::host_fs::HostFs;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Parses a kernel CPU list (`0-3,8,10-11`; empty means none). `None` when malformed.
pub(crate) fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = BTreeSet::new();
    for part in text
        .trim()
        .split(',')
        .filter(|part| !part.trim().is_empty())
    {
        let part = part.trim();
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
                if first > last {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => {
                cpus.insert(part.parse().ok()?);
            }
        }
    }
    Some(cpus.into_iter().collect())
}

/// Formats CPUs as a kernel CPU list, collapsing runs: `[0, 1, 2, 5]` → `0-2,5`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// What `/proc/cpuinfo` says, from its first processor block and the processor count.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CpuInfo {
    /// "model name" (x86), else the nearest equivalent other architectures print.
    pub model: String,
    /// Number of `processor` blocks.
    pub processors: usize,
    /// The `flags` line of the first processor; `None` on architectures without one (arm64).
    pub flags: Option<Vec<String>>,
    /// Topology from `physical id` / `core id` / `siblings` / `cpu cores`, when present.
    pub topology: Option<Topology>,
}

/// SMT threads per core, physical cores and sockets among the online CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Topology {
    pub threads_per_core: usize,
    pub cores: usize,
    pub sockets: usize,
}

/// Parses `/proc/cpuinfo`.
pub(crate) fn parse_cpuinfo(text: &str) -> CpuInfo {
    let blocks: Vec<BTreeMap<&str, &str>> = text
        .split("\n\n")
        .map(|block| {
            block
                .lines()
                .filter_map(|line| line.split_once(':'))
                .map(|(key, value)| (key.trim(), value.trim()))
                .collect::<BTreeMap<_, _>>()
        })
        .filter(|block| !block.is_empty())
        .collect();
    let processors = blocks
        .iter()
        .filter(|block| block.contains_key("processor"))
        .count();
    let first = blocks.first().cloned().unwrap_or_default();
    let model = cpu_model(&first);
    let flags = first
        .get("flags")
        .map(|flags| flags.split_whitespace().map(str::to_string).collect());

    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut threads_per_core = None;
    for block in &blocks {
        let (Some(package), Some(core)) = (block.get("physical id"), block.get("core id")) else {
            continue;
        };
        packages.insert(*package);
        cores.insert((*package, *core));
        let siblings: Option<usize> = block.get("siblings").and_then(|s| s.parse().ok());
        let per_package: Option<usize> = block.get("cpu cores").and_then(|s| s.parse().ok());
        if let Some(ratio) = siblings
            .zip(per_package)
            .and_then(|(s, p)| s.checked_div(p))
        {
            threads_per_core = Some(ratio.max(1));
        }
    }
    let topology = (!cores.is_empty()).then(|| Topology {
        threads_per_core: threads_per_core.unwrap_or(1),
        cores: cores.len(),
        sockets: packages.len(),
    });
    CpuInfo {
        model,
        processors,
        flags,
        topology,
    }
}

fn cpu_model(block: &BTreeMap<&str, &str>) -> String {
    for key in ["model name", "cpu model", "cpu", "uarch", "Hardware"] {
        if let Some(value) = block.get(key).filter(|value| !value.is_empty()) {
            return value.to_string();
        }
    }
    match (block.get("CPU implementer"), block.get("CPU part")) {
        (Some(implementer), Some(part)) => format!("implementer {implementer} part {part}"),
        _ => String::new(),
    }
}

/// One online CPU's place in the topology, as sysfs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuPlace {
    pub package: String,
    pub thread_siblings: String,
}

/// Summarises sysfs topology: cores are distinct SMT sibling sets, sockets distinct packages.
pub(crate) fn summarize_topology(places: &[CpuPlace]) -> Option<Topology> {
    if places.is_empty() {
        return None;
    }
    let mut sibling_sets = BTreeSet::new();
    let mut packages = BTreeSet::new();
    let mut threads_per_core = 1;
    for place in places {
        let siblings = parse_cpu_list(&place.thread_siblings)?;
        threads_per_core = threads_per_core.max(siblings.len());
        sibling_sets.insert(siblings);
        packages.insert(place.package.as_str());
    }
    Some(Topology {
        threads_per_core,
        cores: sibling_sets.len(),
        sockets: packages.len(),
    })
}

/// Reads the topology of the online CPUs from sysfs.
pub(crate) fn read_topology(host: &HostFs, online: &[usize]) -> Option<Topology> {
    let places: Option<Vec<CpuPlace>> = online
        .iter()
        .map(|cpu| {
            let dir = format!("{CPU_DIR}/cpu{cpu}/topology");
            Some(CpuPlace {
                package: host.read_trimmed(&format!("{dir}/physical_package_id"))?,
                thread_siblings: host.read_trimmed(&format!("{dir}/thread_siblings_list"))?,
            })
        })
        .collect();
    summarize_topology(&places?)
}

/// `smt/active` when the kernel has SMT control, else whether any core runs two threads.
pub(crate) fn read_smt(host: &HostFs, topology: Option<Topology>) -> Option<bool> {
    match host
        .read_trimmed(&format!("{CPU_DIR}/smt/active"))
        .as_deref()
    {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => topology.map(|topology| topology.threads_per_core > 1),
    }
}

/// Summarises per-CPU governors: the name when all agree, else `name=count` pairs by count.
pub(crate) fn summarize_governors(governors: &[String]) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for governor in governors {
        *counts.entry(governor.as_str()).or_default() += 1;
    }
    match counts.len() {
        0 => None,
        1 => counts.keys().next().map(|name| name.to_string()),
        _ => {
            let mut pairs: Vec<(&str, usize)> = counts.into_iter().collect();
            pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let text: Vec<String> = pairs.iter().map(|(n, c)| format!("{n}={c}")).collect();
            Some(text.join(","))
        }
    }
}

/// Reads back a [`Fingerprint::governor`](super::fingerprint::Fingerprint::governor) summary: governor
/// names with their CPU counts. A single name stands for all `online` CPUs.
pub(crate) fn governor_counts(summary: &str, online: usize) -> Vec<(String, usize)> {
    if !summary.contains('=') {
        return vec![(summary.to_string(), online)];
    }
    summary
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .filter_map(|(name, count)| Some((name.to_string(), count.parse().ok()?)))
        .collect()
}

/// The scaling governors of the online CPUs that have cpufreq.
pub(crate) fn read_governor(host: &HostFs, online: &[usize]) -> Option<String> {
    let governors: Vec<String> = online
        .iter()
        .filter_map(|cpu| {
            host.read_trimmed(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor"))
        })
        .collect();
    summarize_governors(&governors)
}

/// The cpufreq driver (`intel_pstate`, `amd-pstate-epp`, `acpi-cpufreq`, …) of the first CPU.
pub(crate) fn read_cpufreq_driver(host: &HostFs, online: &[usize]) -> Option<String> {
    let cpu = online.first()?;
    host.read_trimmed(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_driver"))
}

/// Whether turbo/boost is on: `intel_pstate/no_turbo` inverted, else the global or per-policy
/// `cpufreq/boost`.
pub(crate) fn read_turbo(host: &HostFs, online: &[usize]) -> Option<bool> {
    if let Some(no_turbo) = host.read_int::<u8>(&format!("{CPU_DIR}/intel_pstate/no_turbo")) {
        return Some(no_turbo == 0);
    }
    let mut candidates = vec![format!("{CPU_DIR}/cpufreq/boost")];
    if let Some(cpu) = online.first() {
        candidates.push(format!("{CPU_DIR}/cpu{cpu}/cpufreq/boost"));
    }
    candidates
        .iter()
        .find_map(|path| host.read_int::<u8>(path))
        .map(|boost| boost != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86_CPUINFO: &str = "\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
physical id\t: 0
siblings\t: 4
core id\t\t: 0
cpu cores\t: 2
flags\t\t: fpu vme tsc hypervisor lahf_lm

processor\t: 1
model name\t: AMD EPYC
physical id\t: 0
siblings\t: 4
core id\t\t: 0
cpu cores\t: 2
flags\t\t: fpu vme tsc hypervisor lahf_lm

processor\t: 2
model name\t: AMD EPYC
physical id\t: 0
siblings\t: 4
core id\t\t: 1
cpu cores\t: 2
flags\t\t: fpu vme tsc hypervisor lahf_lm

processor\t: 3
model name\t: AMD EPYC
physical id\t: 0
siblings\t: 4
core id\t\t: 1
cpu cores\t: 2
flags\t\t: fpu vme tsc hypervisor lahf_lm
";

    const ARM64_CPUINFO: &str = "\
processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes
CPU implementer\t: 0x41
CPU part\t: 0xd0c

processor\t: 1
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes
CPU implementer\t: 0x41
CPU part\t: 0xd0c
";

    #[test]
    fn cpu_lists_parse_ranges_singles_and_empty() {
        assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(format_cpu_list(&[5, 0, 1, 2, 2]), "0-2,5");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[3]), "3");
    }

    #[test]
    fn x86_cpuinfo_gives_model_flags_and_smt_topology() {
        let info = parse_cpuinfo(X86_CPUINFO);
        assert_eq!(info.model, "AMD EPYC");
        assert_eq!(info.processors, 4);
        assert!(info.flags.unwrap().contains(&"hypervisor".to_string()));
        assert_eq!(
            info.topology,
            Some(Topology {
                threads_per_core: 2,
                cores: 2,
                sockets: 1
            })
        );
    }

    #[test]
    fn arm64_cpuinfo_has_no_flags_and_names_the_part() {
        let info = parse_cpuinfo(ARM64_CPUINFO);
        assert_eq!(info.model, "implementer 0x41 part 0xd0c");
        assert_eq!(info.processors, 2);
        assert_eq!(info.flags, None);
        assert_eq!(info.topology, None);
    }

    #[test]
    fn sysfs_topology_counts_sibling_sets_and_packages() {
        let place = |package: &str, siblings: &str| CpuPlace {
            package: package.into(),
            thread_siblings: siblings.into(),
        };
        let two_sockets_smt = [
            place("0", "0,2"),
            place("0", "1,3"),
            place("0", "0,2"),
            place("0", "1,3"),
            place("1", "4-5"),
            place("1", "4-5"),
        ];
        assert_eq!(
            summarize_topology(&two_sockets_smt),
            Some(Topology {
                threads_per_core: 2,
                cores: 3,
                sockets: 2
            })
        );
        assert_eq!(summarize_topology(&[]), None);
    }

    #[test]
    fn governors_summarize_and_round_trip() {
        let uniform = vec!["powersave".to_string(); 2];
        assert_eq!(summarize_governors(&uniform).as_deref(), Some("powersave"));
        assert_eq!(
            governor_counts("powersave", 2),
            vec![("powersave".into(), 2)]
        );
        let mixed: Vec<String> = ["performance", "powersave", "powersave"]
            .map(String::from)
            .to_vec();
        let summary = summarize_governors(&mixed).unwrap();
        assert_eq!(summary, "powersave=2,performance=1");
        assert_eq!(
            governor_counts(&summary, 3),
            vec![("powersave".into(), 2), ("performance".into(), 1)]
        );
        assert_eq!(summarize_governors(&[]), None);
    }

    #[test]
    fn turbo_reads_intel_no_turbo_inverted_then_boost() {
        use super::super::host_fs::fake::put;
        let dir = tempfile::tempdir().unwrap();
        let host = HostFs::at(dir.path());
        assert_eq!(read_turbo(&host, &[0]), None);
        put(
            dir.path(),
            "/sys/devices/system/cpu/cpu0/cpufreq/boost",
            "1\n",
        );
        assert_eq!(read_turbo(&host, &[0]), Some(true));
        put(dir.path(), "/sys/devices/system/cpu/cpufreq/boost", "0\n");
        assert_eq!(read_turbo(&host, &[0]), Some(false));
        put(
            dir.path(),
            "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "0\n",
        );
        assert_eq!(read_turbo(&host, &[0]), Some(true));
    }
}
