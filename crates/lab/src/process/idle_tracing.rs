//! The `idle_tracing` check of `scalelab doctor`: does this kernel record wake-ups taken while a
//! CPU idles? Where it does not, `--offcpu` misses the wake-ups that CPU takes while idle (by
//! the interrupts it handles), whichever CPU the woken task runs on: their episodes run on to
//! the switch-in, so traced/residual reads above 1 (where it was seen: docs/notes/tracing.md).
//! Probing is [`perf::probe_idle_tracing`] (150 naps of 1 ms on every CPU at once, 0.2 s) and
//! `/proc/interrupts` (which device interrupts a silent CPU takes, for the fix); judging is a
//! pure function of both, tested without the machine.

use std::time::Duration;

use model::env::format_cpu_list;
use model::env::{Check, Severity};

const NAME: &str = "idle_tracing";
const NAPS: u32 = 150;

/// Probes this machine and judges it.
pub(crate) fn probe_and_judge() -> Check {
    let probe = perf::probe_idle_tracing(NAPS, Duration::from_millis(1)).map_err(|e| e.to_string());
    judge(
        &probe,
        std::fs::read_to_string("/proc/interrupts").ok().as_deref(),
    )
}

/// A device interrupt line and how many of its interrupts one CPU took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceIrq {
    pub irq: u32,
    /// The action's name (the last column: `virtio1-req.0`, `nvme0q3`).
    pub name: String,
    pub count: u64,
}

/// The numbered interrupt lines of `/proc/interrupts` that CPU `cpu` took interrupts of, most
/// first (its column is found by the `CPUn` header, so offline CPUs do not shift it).
pub(crate) fn busiest_irqs(interrupts: &str, cpu: usize) -> Vec<DeviceIrq> {
    let mut lines = interrupts.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let columns: Vec<&str> = header.split_whitespace().collect();
    let Some(column) = columns.iter().position(|c| *c == format!("CPU{cpu}")) else {
        return Vec::new();
    };
    let mut irqs: Vec<DeviceIrq> = lines
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let irq = words.next()?.strip_suffix(':')?.parse().ok()?;
            let rest: Vec<&str> = words.collect();
            let count = rest.get(column)?.parse().ok()?;
            let name = rest.get(columns.len()..)?.last()?.to_string();
            (count > 0).then_some(DeviceIrq { irq, name, count })
        })
        .collect();
    irqs.sort_by(|a, b| b.count.cmp(&a.count).then(a.irq.cmp(&b.irq)));
    irqs
}

/// The verdict on a probe: a warning naming the CPUs that record nothing while idle, with the
/// CPUs to route device interrupts to instead (the busiest one a silent CPU takes, named from
/// `interrupts`, the text of `/proc/interrupts`, when given).
pub(crate) fn judge(
    probe: &Result<Vec<perf::IdleProbe>, String>,
    interrupts: Option<&str>,
) -> Check {
    let probes = match probe {
        Ok(p) if !p.is_empty() => p,
        Ok(_) => return verdict(Severity::Info, "not probed: no CPU to run on".into(), None),
        Err(e) => {
            return verdict(
                Severity::Info,
                format!("not probed: off-CPU tracing unavailable ({e})"),
                None,
            );
        }
    };
    let cpus = |f: &dyn Fn(&perf::IdleProbe) -> bool| -> Vec<usize> {
        probes
            .iter()
            .filter(|p| f(p))
            .map(|p| p.idle.cpu as usize)
            .collect()
    };
    let silent = cpus(&|p| p.silent());
    let busy = cpus(&|p| p.idle.went_idle < perf::IdleCpu::SILENT_MIN);
    let tracing = cpus(&|p| !p.silent() && p.idle.went_idle >= perf::IdleCpu::SILENT_MIN);
    let busy_text = if busy.is_empty() {
        String::new()
    } else {
        format!(
            "; CPU {} too busy to tell (idle under {} times)",
            format_cpu_list(&busy),
            perf::IdleCpu::SILENT_MIN
        )
    };
    if silent.is_empty() {
        return verdict(
            Severity::Ok,
            format!(
                "wake-ups taken while idle are traced (CPU {}: {NAPS} naps each){busy_text}",
                format_cpu_list(&tracing)
            ),
            None,
        );
    }
    let seen: u32 = probes
        .iter()
        .filter(|p| p.silent())
        .map(|p| p.woken_seen.min(p.naps))
        .sum();
    let naps: u32 = probes.iter().filter(|p| p.silent()).map(|p| p.naps).sum();
    let finding = format!(
        "CPU {} record{} nothing while idle ({seen} of {naps} wake-ups of naps there traced): --offcpu misses the wake-ups taken there while idle (by the interrupts handled there), whichever CPU the woken task runs on, so their blocked time runs on to the switch-in (explain names the CPU){busy_text}",
        format_cpu_list(&silent),
        if silent.len() == 1 { "s" } else { "" },
    );
    let busiest = interrupts.and_then(|text| {
        silent.iter().find_map(|&cpu| {
            busiest_irqs(text, cpu)
                .into_iter()
                .next()
                .map(|irq| (cpu, irq))
        })
    });
    let to = format_cpu_list(&tracing);
    let fix = match busiest {
        _ if tracing.is_empty() => {
            "boot a kernel (or hypervisor) that traces the idle task's context".to_string()
        }
        Some((cpu, DeviceIrq { irq, name, count })) => format!(
            "route device interrupts to CPU {to}, first {name} ({} taken by CPU {cpu}): echo {to} > /proc/irq/{irq}/smp_affinity_list (a managed IRQ refuses)",
            model::number_text::si(count as f64)
        ),
        None => format!(
            "route device interrupts to CPU {to}: echo {to} > /proc/irq/IRQ/smp_affinity_list (a managed IRQ refuses)"
        ),
    };
    verdict(Severity::Warn, finding, Some(fix))
}

fn verdict(severity: Severity, finding: String, fix: Option<String>) -> Check {
    Check {
        name: NAME.to_string(),
        severity,
        finding,
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This VM's `/proc/interrupts`, shortened: the disk's queue interrupt lands on CPU 1.
    const INTERRUPTS: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 26:          0         13  IO-APIC   4-edge      ttyS0
 31:          0       9686 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats
 32:       5434          0 PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq
 36:          0    7283396 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:   14149106   11869329   Local timer interrupts
";

    #[test]
    fn a_cpus_device_interrupts_are_read_from_its_own_column_busiest_first() {
        let irq = |irq: u32, name: &str, count: u64| DeviceIrq {
            irq,
            name: name.into(),
            count,
        };
        assert_eq!(
            busiest_irqs(INTERRUPTS, 1),
            [
                irq(36, "virtio1-req.0", 7_283_396),
                irq(31, "virtio0-stats", 9686),
                irq(26, "ttyS0", 13)
            ],
            "numbered lines only, none at 0"
        );
        assert_eq!(
            busiest_irqs(INTERRUPTS, 0),
            [
                irq(32, "virtio0-reporting_vq", 5434),
                irq(24, "ACPI:Ged", 1)
            ]
        );
        // CPU 1 offline: the columns are CPU0 and CPU2, and CPU 2's is the second.
        let offline = "      CPU0   CPU2\n 40:   5   9   PCI-MSI   nvme0q1\n";
        assert_eq!(busiest_irqs(offline, 2), [irq(40, "nvme0q1", 9)]);
        assert_eq!(busiest_irqs(offline, 1), []);
        assert_eq!(busiest_irqs("", 0), []);
    }

    #[test]
    fn the_fix_names_the_busiest_device_interrupt_of_the_silent_cpu() {
        let c = judge(
            &Ok(vec![probe(0, 150, 152, 150), probe(1, 150, 0, 0)]),
            Some(INTERRUPTS),
        );
        assert_eq!(
            c.fix.as_deref(),
            Some(
                "route device interrupts to CPU 0, first virtio1-req.0 (7.28M taken by CPU 1): echo 0 > /proc/irq/36/smp_affinity_list (a managed IRQ refuses)"
            )
        );
    }

    fn probe(cpu: u32, went_idle: u64, idle_wakeups: u64, woken_seen: u32) -> perf::IdleProbe {
        perf::IdleProbe {
            idle: perf::IdleCpu {
                cpu,
                went_idle,
                idle_wakeups,
            },
            naps: NAPS,
            woken_seen,
        }
    }

    #[test]
    fn a_cpu_silent_while_idle_is_a_warning_with_the_cpus_to_route_interrupts_to() {
        let probes = Ok(vec![
            probe(0, 150, 152, 150),
            probe(1, 150, 0, 0),
            probe(2, 150, 149, 150),
            probe(3, 12, 0, 12),
        ]);
        let c = judge(&probes, None);
        assert_eq!(c.severity, Severity::Warn);
        assert_eq!(
            c.finding,
            "CPU 1 records nothing while idle (0 of 150 wake-ups of naps there traced): --offcpu misses the wake-ups taken there while idle (by the interrupts handled there), whichever CPU the woken task runs on, so their blocked time runs on to the switch-in (explain names the CPU); CPU 3 too busy to tell (idle under 100 times)"
        );
        assert_eq!(
            c.fix.as_deref(),
            Some(
                "route device interrupts to CPU 0,2: echo 0,2 > /proc/irq/IRQ/smp_affinity_list (a managed IRQ refuses)"
            )
        );
    }

    #[test]
    fn every_cpu_silent_leaves_no_cpu_to_pin_to() {
        let c = judge(
            &Ok(vec![probe(0, 150, 0, 1), probe(1, 150, 0, 0)]),
            Some(INTERRUPTS),
        );
        assert_eq!(c.severity, Severity::Warn);
        assert!(
            c.finding
                .starts_with("CPU 0-1 record nothing while idle (1 of 300 "),
            "{}",
            c.finding
        );
        assert_eq!(
            c.fix.as_deref(),
            Some("boot a kernel (or hypervisor) that traces the idle task's context")
        );
    }

    #[test]
    fn traced_idle_wake_ups_are_ok_and_no_probe_is_info() {
        let c = judge(
            &Ok(vec![probe(0, 150, 152, 150), probe(1, 150, 160, 149)]),
            Some(INTERRUPTS),
        );
        assert_eq!(c.severity, Severity::Ok);
        assert_eq!(
            c.finding,
            "wake-ups taken while idle are traced (CPU 0-1: 150 naps each)"
        );
        let c = judge(&Err("tracefs not mounted".into()), None);
        assert_eq!(c.severity, Severity::Info);
        assert_eq!(
            c.finding,
            "not probed: off-CPU tracing unavailable (tracefs not mounted)"
        );
    }
}
