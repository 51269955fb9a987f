//! Where tasks run: the CPU order used for pinning, physical cores first.
//!
//! Pinning task i to the i-th CPU of this order fills every physical core (across packages)
//! before it doubles up on SMT siblings, so S(N) for N ≤ cores is not polluted by siblings
//! sharing a core. The order only includes CPUs this process may run on (its affinity mask).

use std::path::Path;

use crate::error::LabError;
use crate::record::Pin;

/// CPUs this process may use, physical cores first, then their SMT siblings.
pub(crate) fn cpu_order() -> Result<Vec<usize>, LabError> {
    let allowed =
        sys::current_affinity().map_err(|e| LabError::sys("reading the CPU affinity", e))?;
    let base = Path::new("/sys/devices/system/cpu");
    let topo: Vec<(usize, Option<u64>, Option<u64>)> = allowed
        .iter()
        .map(|&cpu| {
            let read = |f: &str| -> Option<u64> {
                std::fs::read_to_string(base.join(format!("cpu{cpu}/topology/{f}")))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            (cpu, read("physical_package_id"), read("core_id"))
        })
        .collect();
    Ok(order_by_core(&topo))
}

/// Orders CPUs so that the first sibling of every (package, core) comes before any second sibling.
fn order_by_core(topo: &[(usize, Option<u64>, Option<u64>)]) -> Vec<usize> {
    let mut keyed: Vec<(usize, Option<u64>, Option<u64>, usize)> = Vec::new();
    for &(cpu, package, core) in topo {
        let rank = keyed
            .iter()
            .filter(|k| k.1 == package && k.2 == core && core.is_some())
            .count();
        keyed.push((cpu, package, core, rank));
    }
    keyed.sort_by_key(|&(cpu, package, core, rank)| (rank, package, core, cpu));
    keyed.into_iter().map(|k| k.0).collect()
}

/// The CPU each of `tasks` tasks is pinned to under `pin` (`None`: left to the scheduler).
pub(crate) fn assign(pin: Pin, tasks: usize, order: &[usize]) -> Vec<Option<usize>> {
    let pinned = match pin {
        Pin::None => false,
        Pin::Core => true,
        Pin::Auto => tasks <= order.len(),
    };
    (0..tasks)
        .map(|i| {
            if pinned && !order.is_empty() {
                Some(order[i % order.len()])
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_come_after_every_core() {
        // 2 cores × 2 threads, Intel-style numbering: cpu0/cpu2 share core 0, cpu1/cpu3 core 1.
        let topo = [
            (0, Some(0), Some(0)),
            (1, Some(0), Some(1)),
            (2, Some(0), Some(0)),
            (3, Some(0), Some(1)),
        ];
        assert_eq!(order_by_core(&topo), vec![0, 1, 2, 3]);
        // AMD-style numbering: cpu0/cpu1 share core 0.
        let topo = [
            (0, Some(0), Some(0)),
            (1, Some(0), Some(0)),
            (2, Some(0), Some(1)),
            (3, Some(0), Some(1)),
        ];
        assert_eq!(order_by_core(&topo), vec![0, 2, 1, 3]);
    }

    #[test]
    fn auto_pins_only_when_tasks_fit() {
        let order = [0, 1];
        assert_eq!(assign(Pin::Auto, 2, &order), vec![Some(0), Some(1)]);
        assert_eq!(assign(Pin::Auto, 3, &order), vec![None, None, None]);
        assert_eq!(
            assign(Pin::Core, 3, &order),
            vec![Some(0), Some(1), Some(0)]
        );
        assert_eq!(assign(Pin::None, 1, &order), vec![None]);
    }

    #[test]
    fn this_machine_has_an_order() {
        let order = cpu_order().unwrap();
        assert!(!order.is_empty());
    }
}
