//! Where tasks run: task i on the i-th CPU of its `--pin` strategy's order
//! ([`model::placement`] computes the orders from the topology). Past the candidates, a strategy
//! pins nobody: an oversubscribed point is left to the scheduler, within the affinity mask,
//! rather than stacking some CPUs with two tasks and others with one; an explicit CPU list
//! wraps instead (the user chose those CPUs).
//!
//! Memory (`--membind`, [`memory_policies`]): by default a task's pages come from the node of
//! the CPU that first touches them, and each task touches its own memory after it is pinned,
//! so they are on its node; `node` binds them there, `interleave` spreads them over the nodes.

use std::collections::BTreeMap;

use crate::error::{Field, LabError};
use model::env::CpuTopology;
pub(crate) use model::placement::order_for;
use model::record::{Membind, Pin};

/// The CPU each of `tasks` tasks is pinned to (`None`: left to the scheduler).
pub(crate) fn assign(pin: &Pin, tasks: usize, order: &[usize]) -> Vec<Option<usize>> {
    let pinned = match pin {
        Pin::None => false,
        Pin::Cpus(_) => true,
        Pin::Cores | Pin::Compact | Pin::SpreadNodes => tasks <= order.len(),
    };
    (0..tasks)
        .map(|i| (pinned && !order.is_empty()).then(|| order[i % order.len()]))
        .collect()
}

/// The placement of a trial on this machine.
pub(crate) fn assign_here(pin: &Pin, tasks: usize) -> Result<Vec<Option<usize>>, LabError> {
    let topology = CpuTopology::read();
    let mut order = order_for(pin, &topology);
    if order.is_empty() && !matches!(pin, Pin::None) {
        // No topology readable (a stripped-down sysfs): the affinity mask in CPU order.
        order =
            sys::current_affinity().map_err(|e| LabError::sys("reading the CPU affinity", e))?;
    }
    Ok(assign(pin, tasks, &order))
}

/// Each task's memory policy under `membind`, from the CPU `cpus` pins it to:
/// - `first-touch`: the kernel's default (a pinned task's pages come from its CPU's node);
/// - `node`: bound to its CPU's node; a task left unpinned (past the CPUs) keeps the default;
/// - `interleave`: round-robin over every node holding a CPU this process may use.
pub(crate) fn memory_policies(
    membind: Membind,
    cpus: &[Option<usize>],
    topology: &CpuTopology,
) -> Result<Vec<sys::MemPolicy>, LabError> {
    if membind == Membind::FirstTouch {
        return Ok(vec![sys::MemPolicy::Default; cpus.len()]);
    }
    let places = topology.usable_places();
    let node_of: BTreeMap<usize, u32> = places
        .iter()
        .filter_map(|p| p.node.map(|node| (p.cpu, node)))
        .collect();
    if node_of.is_empty() {
        return Err(LabError::invalid(
            Field::Membind,
            format!(
                "{membind}: sysfs names no NUMA node for any CPU (/sys/devices/system/node): \
                 this kernel has no NUMA support; leave --membind out"
            ),
        ));
    }
    Ok(match membind {
        Membind::FirstTouch => unreachable!("returned above"),
        Membind::Node => cpus
            .iter()
            .map(|cpu| match cpu.and_then(|c| node_of.get(&c)) {
                Some(&node) => sys::MemPolicy::Bind(vec![node]),
                None => sys::MemPolicy::Default,
            })
            .collect(),
        Membind::Interleave => {
            let mut nodes: Vec<u32> = node_of.values().copied().collect();
            nodes.sort_unstable();
            nodes.dedup();
            vec![sys::MemPolicy::Interleave(nodes); cpus.len()]
        }
    })
}

/// [`memory_policies`] on this machine.
pub(crate) fn memory_here(
    membind: Membind,
    cpus: &[Option<usize>],
) -> Result<Vec<sys::MemPolicy>, LabError> {
    if membind == Membind::FirstTouch {
        return Ok(vec![sys::MemPolicy::Default; cpus.len()]);
    }
    memory_policies(membind, cpus, &CpuTopology::read())
}

/// The CPUs this process may use, physical cores first (the `cores` order); used to give an
/// external command its first N CPUs.
pub(crate) fn cpu_order() -> Result<Vec<usize>, LabError> {
    let order = order_for(&Pin::Cores, &CpuTopology::read());
    if order.is_empty() {
        return sys::current_affinity().map_err(|e| LabError::sys("reading the CPU affinity", e));
    }
    Ok(order)
}

#[cfg(test)]
mod tests;
