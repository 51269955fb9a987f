//! Kernel settings that change what a benchmark measures: transparent huge pages, speculative
//! execution mitigations, the clocksource, and the hypervisor underneath.
//!
//! Each parser is a pure function of the text in `/sys` or `/proc` so it is tested on literal
//! contents; readers only fetch the files.

use super::host_fs::HostFs;

/// The selected value of a sysfs choice file such as THP's `always [madvise] never`.
pub(crate) fn parse_bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    let choice = text[start + 1..end].trim();
    (!choice.is_empty()).then(|| choice.to_string())
}

/// How the kernel handles one CPU vulnerability, from its
/// `/sys/devices/system/cpu/vulnerabilities/*` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MitigationState {
    /// "Not affected": nothing runs, nothing costs.
    NotAffected,
    /// "Mitigation: …": a mitigation is active and may cost time on syscalls and switches.
    Mitigated,
    /// "Vulnerable…": affected and unmitigated (sometimes by choice, `mitigations=off`).
    Vulnerable,
    /// Anything else the kernel may print ("Unknown: …").
    Unknown,
}

impl MitigationState {
    /// Classifies one vulnerabilities line.
    pub fn of(status: &str) -> MitigationState {
        let status = status.trim();
        if status.starts_with("Not affected") {
            MitigationState::NotAffected
        } else if status.starts_with("Mitigation") {
            MitigationState::Mitigated
        } else if status.starts_with("Vulnerable") {
            MitigationState::Vulnerable
        } else {
            MitigationState::Unknown
        }
    }
}

/// Every file of the vulnerabilities directory with its one-line status, sorted by name.
pub(crate) fn read_mitigations(host: &HostFs) -> Vec<(String, String)> {
    const DIR: &str = "/sys/devices/system/cpu/vulnerabilities";
    host.list(DIR)
        .into_iter()
        .filter_map(|name| {
            let status = host.read_trimmed(&format!("{DIR}/{name}"))?;
            Some((name, status))
        })
        .collect()
}

/// Clocksources whose reads stay in the vDSO and cost a few nanoseconds.
pub(super) const FAST_CLOCKSOURCES: [&str; 4] =
    ["tsc", "arch_sys_counter", "timebase", "riscv_clocksource"];

/// Paravirtual clocksources: vDSO-capable, slightly slower than the hardware counter.
pub(super) const PARAVIRT_CLOCKSOURCES: [&str; 4] = [
    "kvm-clock",
    "hyperv_clocksource_tsc_page",
    "xen",
    "vmware-tsc",
];

/// Evidence from which the hypervisor is named.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HypervisorEvidence {
    /// The x86 `hypervisor` cpuinfo flag; `None` where cpuinfo has no flags line.
    pub cpu_flag: Option<bool>,
    /// `/sys/hypervisor/type` (Xen writes `xen`).
    pub hypervisor_type: Option<String>,
    /// `/sys/class/dmi/id/sys_vendor`.
    pub sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name`.
    pub product_name: Option<String>,
    /// `available_clocksource`: `kvm-clock` etc. name the hypervisor when DMI is absent.
    pub clocksources: Vec<String>,
}

/// DMI vendor or product substrings that name a virtual machine.
const DMI_HYPERVISORS: [(&str, &str); 12] = [
    ("QEMU", "QEMU"),
    ("KVM", "KVM"),
    ("VMware", "VMware"),
    ("VirtualBox", "VirtualBox"),
    ("innotek", "VirtualBox"),
    ("Virtual Machine", "Hyper-V"),
    ("Xen", "Xen"),
    ("Amazon EC2", "Amazon EC2"),
    ("Google Compute Engine", "Google Compute Engine"),
    ("Parallels", "Parallels"),
    ("Bochs", "Bochs"),
    ("OpenStack", "OpenStack"),
];

/// Names the hypervisor, or `None` on bare metal.
///
/// On x86 the `hypervisor` CPU flag decides whether there is one (a `*.metal` cloud instance
/// keeps its cloud DMI vendor but has no flag); elsewhere a VM-like DMI vendor or
/// `/sys/hypervisor/type` decides. The name comes from `/sys/hypervisor/type`, then DMI, then a
/// paravirtual clocksource; with none of those it is "unidentified".
pub(crate) fn identify_hypervisor(evidence: &HypervisorEvidence) -> Option<String> {
    let from_type = evidence
        .hypervisor_type
        .as_deref()
        .filter(|kind| !kind.is_empty())
        .map(|kind| match kind {
            "xen" => "Xen".to_string(),
            other => other.to_string(),
        });
    let dmi = [&evidence.product_name, &evidence.sys_vendor];
    let from_dmi = dmi
        .iter()
        .filter_map(|field| field.as_deref())
        .find_map(|field| {
            DMI_HYPERVISORS
                .iter()
                .find(|(needle, _)| field.contains(needle))
                .map(|(_, name)| name.to_string())
        });
    let from_clock = evidence.clocksources.iter().find_map(|clock| {
        let name = match clock.as_str() {
            "kvm-clock" => "KVM",
            "xen" => "Xen",
            "vmware-tsc" => "VMware",
            clock if clock.starts_with("hyperv_clocksource") => "Hyper-V",
            _ => return None,
        };
        Some(name.to_string())
    });
    let virtual_machine = match evidence.cpu_flag {
        Some(flag) => flag,
        None => from_type.is_some() || from_dmi.is_some(),
    };
    if !virtual_machine {
        return None;
    }
    Some(
        from_type
            .or(from_dmi)
            .or(from_clock)
            .unwrap_or_else(|| "unidentified".to_string()),
    )
}

/// Gathers the hypervisor evidence; `cpu_flags` is cpuinfo's flags line, if it has one.
pub(crate) fn read_hypervisor(host: &HostFs, cpu_flags: Option<&[String]>) -> Option<String> {
    let evidence = HypervisorEvidence {
        cpu_flag: cpu_flags.map(|flags| flags.iter().any(|flag| flag == "hypervisor")),
        hypervisor_type: host.read_trimmed("/sys/hypervisor/type"),
        sys_vendor: host.read_trimmed("/sys/class/dmi/id/sys_vendor"),
        product_name: host.read_trimmed("/sys/class/dmi/id/product_name"),
        clocksources: read_available_clocksources(host),
    };
    identify_hypervisor(&evidence)
}

const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// The current clocksource.
pub(crate) fn read_clocksource(host: &HostFs) -> Option<String> {
    host.read_trimmed(&format!("{CLOCKSOURCE_DIR}/current_clocksource"))
        .filter(|clock| !clock.is_empty())
}

/// The clocksources the kernel could switch to.
pub(crate) fn read_available_clocksources(host: &HostFs) -> Vec<String> {
    host.read(&format!("{CLOCKSOURCE_DIR}/available_clocksource"))
        .map(|text| text.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// `PRETTY_NAME` from an os-release file.
pub(super) fn parse_os_release_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(key)?.strip_prefix('=')?;
        let value = value.trim().trim_matches('"').trim_matches('\'');
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// `/etc/os-release`, falling back to `/usr/lib/os-release` as the spec says.
pub(crate) fn read_os_release(host: &HostFs) -> Option<String> {
    host.read("/etc/os-release")
        .or_else(|| host.read("/usr/lib/os-release"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_choice_is_the_bracketed_word() {
        assert_eq!(
            parse_bracketed_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            parse_bracketed_choice("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(parse_bracketed_choice("always madvise never"), None);
        assert_eq!(parse_bracketed_choice("[]"), None);
    }

    #[test]
    fn vulnerability_lines_classify() {
        let cases = [
            ("Not affected", MitigationState::NotAffected),
            (
                "Mitigation: Retpolines; STIBP: disabled; RSB filling",
                MitigationState::Mitigated,
            ),
            (
                "Mitigation: usercopy/swapgs barriers and __user pointer sanitization",
                MitigationState::Mitigated,
            ),
            (
                "Vulnerable: Safe RET, no microcode",
                MitigationState::Vulnerable,
            ),
            ("Vulnerable", MitigationState::Vulnerable),
            (
                "Unknown: Dependent on hypervisor status",
                MitigationState::Unknown,
            ),
        ];
        for (line, state) in cases {
            assert_eq!(MitigationState::of(line), state, "{line}");
        }
    }

    #[test]
    fn hypervisor_named_by_type_dmi_or_clocksource() {
        let kvm_no_dmi = HypervisorEvidence {
            cpu_flag: Some(true),
            clocksources: vec!["tsc".into(), "kvm-clock".into()],
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&kvm_no_dmi).as_deref(), Some("KVM"));

        let vmware = HypervisorEvidence {
            cpu_flag: Some(true),
            sys_vendor: Some("VMware, Inc.".into()),
            product_name: Some("VMware7,1".into()),
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&vmware).as_deref(), Some("VMware"));

        let hyperv = HypervisorEvidence {
            cpu_flag: Some(true),
            sys_vendor: Some("Microsoft Corporation".into()),
            product_name: Some("Virtual Machine".into()),
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&hyperv).as_deref(), Some("Hyper-V"));

        let xen = HypervisorEvidence {
            cpu_flag: Some(true),
            hypervisor_type: Some("xen".into()),
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&xen).as_deref(), Some("Xen"));

        let flag_only = HypervisorEvidence {
            cpu_flag: Some(true),
            ..Default::default()
        };
        assert_eq!(
            identify_hypervisor(&flag_only).as_deref(),
            Some("unidentified")
        );
    }

    #[test]
    fn bare_metal_has_no_hypervisor_even_with_a_cloud_vendor() {
        let ec2_metal = HypervisorEvidence {
            cpu_flag: Some(false),
            sys_vendor: Some("Amazon EC2".into()),
            product_name: Some("m5.metal".into()),
            clocksources: vec!["tsc".into(), "hpet".into()],
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&ec2_metal), None);

        let arm_qemu = HypervisorEvidence {
            cpu_flag: None,
            sys_vendor: Some("QEMU".into()),
            product_name: Some("KVM Virtual Machine".into()),
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&arm_qemu).as_deref(), Some("KVM"));

        let arm_metal = HypervisorEvidence {
            cpu_flag: None,
            sys_vendor: Some("Ampere(TM)".into()),
            ..Default::default()
        };
        assert_eq!(identify_hypervisor(&arm_metal), None);
    }

    #[test]
    fn os_release_fields_are_unquoted() {
        let text = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\nID_LIKE=\"rhel fedora\"\n";
        assert_eq!(
            parse_os_release_field(text, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            parse_os_release_field(text, "ID").as_deref(),
            Some("debian")
        );
        assert_eq!(
            parse_os_release_field(text, "ID_LIKE").as_deref(),
            Some("rhel fedora")
        );
        assert_eq!(parse_os_release_field(text, "VERSION_ID"), None);
    }
}
