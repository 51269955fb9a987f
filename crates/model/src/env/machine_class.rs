//! Which machines' numbers may share a series: a run's machine class, from its fingerprint.
//!
//! A class is what fixes a machine's scalability: CPU model, online CPUs, memory (rounded to
//! whole GiB, as machines of one kind differ by a few MiB of firmware reservations) and the
//! hypervisor (`bare` without one). The kernel is left out on purpose: comparing kernels on one
//! class of machine is what a team measures. A host is its fingerprint's host name. Two runs
//! of different classes are never one series (`history --host-class`), and a comparison across
//! classes is warned about.

use std::fmt;

use serde::Serialize;

use super::fingerprint::Fingerprint;

/// A machine class: displayed as `CPU model · N CPUs · M GiB · hypervisor`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct MachineClass {
    /// The CPU model name, whitespace collapsed.
    pub cpu_model: String,
    /// CPUs online.
    pub cpus: usize,
    /// Memory in GiB, rounded (`None`: not recorded).
    pub mem_gib: Option<u64>,
    /// The hypervisor, or `bare`.
    pub hypervisor: String,
}

impl MachineClass {
    /// The class of the machine `env` was captured on.
    pub fn of(env: &Fingerprint) -> MachineClass {
        let model = env
            .cpu_model
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        MachineClass {
            cpu_model: if model.is_empty() {
                "unknown CPU".into()
            } else {
                model
            },
            cpus: env.online_cpus,
            mem_gib: env.mem_total_kib.map(|k| (k + (1 << 19)) >> 20),
            hypervisor: env
                .hypervisor
                .as_deref()
                .filter(|h| !h.is_empty())
                .unwrap_or("bare")
                .to_owned(),
        }
    }
}

impl fmt::Display for MachineClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} · {} CPUs · ", self.cpu_model, self.cpus)?;
        match self.mem_gib {
            Some(g) => write!(f, "{g} GiB")?,
            None => f.write_str("? GiB")?,
        }
        write!(f, " · {}", self.hypervisor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_and_host_do_not_change_the_class_cpus_and_hypervisor_do() {
        let a = Fingerprint {
            hostname: "a".into(),
            kernel_release: "6.1".into(),
            cpu_model: "Intel(R)  Xeon(R)   Gold".into(),
            online_cpus: 48,
            mem_total_kib: Some(64 * 1024 * 1024 - 3000),
            ..Fingerprint::default()
        };
        let b = Fingerprint {
            hostname: "b".into(),
            kernel_release: "6.8".into(),
            mem_total_kib: Some(64 * 1024 * 1024 + 5000),
            ..a.clone()
        };
        assert_eq!(MachineClass::of(&a), MachineClass::of(&b));
        assert_eq!(
            MachineClass::of(&a).to_string(),
            "Intel(R) Xeon(R) Gold · 48 CPUs · 64 GiB · bare"
        );
        let vm = Fingerprint {
            hypervisor: Some("kvm".into()),
            online_cpus: 2,
            ..a.clone()
        };
        assert_ne!(MachineClass::of(&a), MachineClass::of(&vm));
    }
}
