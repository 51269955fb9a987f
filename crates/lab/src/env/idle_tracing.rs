//! The `idle_tracing` check of `scalelab doctor`: does this kernel record wake-ups taken while a
//! CPU idles? Where it does not, `--offcpu` misses the wake-ups that CPU takes while idle (by
//! the interrupts it handles), whichever CPU the woken task runs on: their episodes run on to
//! the switch-in, so traced/residual reads above 1 — seen on this project's KVM guest, where
//! CPU 1 takes the disk's interrupts.
//! Probing is [`perf::probe_idle_tracing`] (150 naps of 1 ms on every CPU at once, 0.2 s);
//! judging is a pure function of its result, tested without the machine.

use std::time::Duration;

use super::checks::{Check, Severity};
use super::cpu::format_cpu_list;

const NAME: &str = "idle_tracing";
const NAPS: u32 = 150;

/// Probes this machine and judges it.
pub(crate) fn probe_and_judge() -> Check {
    judge(&perf::probe_idle_tracing(NAPS, Duration::from_millis(1)).map_err(|e| e.to_string()))
}

/// The verdict on a probe: a warning naming the CPUs that record nothing while idle, with the
/// CPUs to route device interrupts to instead.
pub(crate) fn judge(probe: &Result<Vec<perf::IdleProbe>, String>) -> Check {
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
    let fix = if tracing.is_empty() {
        "boot a kernel (or hypervisor) that traces the idle task's context".to_string()
    } else {
        format!(
            "route device interrupts to CPU {}: echo {} > /proc/irq/IRQ/smp_affinity_list (a managed IRQ refuses)",
            format_cpu_list(&tracing),
            format_cpu_list(&tracing)
        )
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
        let c = judge(&Ok(vec![
            probe(0, 150, 152, 150),
            probe(1, 150, 0, 0),
            probe(2, 150, 149, 150),
            probe(3, 12, 0, 12),
        ]));
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
        let c = judge(&Ok(vec![probe(0, 150, 0, 1), probe(1, 150, 0, 0)]));
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
        let c = judge(&Ok(vec![probe(0, 150, 152, 150), probe(1, 150, 160, 149)]));
        assert_eq!(c.severity, Severity::Ok);
        assert_eq!(
            c.finding,
            "wake-ups taken while idle are traced (CPU 0-1: 150 naps each)"
        );
        let c = judge(&Err("tracefs not mounted".into()));
        assert_eq!(c.severity, Severity::Info);
        assert_eq!(
            c.finding,
            "not probed: off-CPU tracing unavailable (tracefs not mounted)"
        );
    }
}
