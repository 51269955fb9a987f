//! Where tasks run: the CPU order of each `--pin` strategy, computed from the topology.
//!
//! Task i runs on the i-th CPU of the strategy's order. Only CPUs this process may use (online,
//! in its cgroup cpuset and its affinity mask) are candidates. Past the candidates, a strategy
//! pins nobody: an oversubscribed point is left to the scheduler, within the affinity mask,
//! rather than stacking some CPUs with two tasks and others with one; an explicit CPU list
//! wraps instead (the user chose those CPUs). Every order is built in O(n log n) of the CPUs.
//!
//! - `cores`: one task per physical core, scattered over sockets, then NUMA nodes, then L3
//!   domains (round-robin at each level), every core's first thread before any SMT sibling.
//!   The default: S(N) up to the cores measures the cores, not siblings sharing one.
//! - `compact`: fill a core's siblings, then its L3 domain, then its node, then the next:
//!   sharing costs (SMT, L3, the node's memory) show at the smallest N.
//! - `spread-nodes`: round-robin over NUMA nodes (physical cores first within each): memory
//!   bandwidth and remote-node costs from N = 2.
//! - `none`: the scheduler decides.
//! - a CPU list: exactly those CPUs, in that order.
//!
//! Memory (`--membind`, [`memory_policies`]): by default a task's pages come from the node of
//! the CPU that first touches them, and each task touches its own memory after it is pinned,
//! so they are on its node; `node` binds them there, `interleave` spreads them over the nodes.

use std::collections::BTreeMap;

use crate::env::{CpuPlace, CpuTopology};
use crate::error::{Field, LabError};
use crate::record::{Membind, Pin};

/// The usable CPUs in `pin`'s order (empty for [`Pin::None`]; the list itself for
/// [`Pin::Cpus`]).
pub(crate) fn order_for(pin: &Pin, topology: &CpuTopology) -> Vec<usize> {
    let places = ranked(topology.usable_places());
    match pin {
        Pin::None => Vec::new(),
        Pin::Cpus(cpus) => cpus.clone(),
        Pin::Cores => cores_order(&places),
        Pin::Compact => {
            let mut sorted = places;
            sorted.sort_by_key(|p| (p.package, p.node, p.l3, p.core, p.thread, p.cpu));
            sorted.into_iter().map(|p| p.cpu).collect()
        }
        Pin::SpreadNodes => {
            let node_of: BTreeMap<usize, Option<u32>> =
                places.iter().map(|p| (p.cpu, p.node)).collect();
            let mut per_node: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
            for cpu in cores_order(&places) {
                per_node.entry(node_of[&cpu]).or_default().push(cpu);
            }
            interleave(per_node.into_values().collect())
        }
    }
}

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

/// The places with `thread` re-ranked among the usable siblings of each core, so a cpuset that
/// leaves out a core's first thread still puts its other thread among the "first" ones.
fn ranked(mut places: Vec<CpuPlace>) -> Vec<CpuPlace> {
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    for place in &mut places {
        let rank = seen.entry(place.core).or_insert(0);
        place.thread = *rank;
        *rank += 1;
    }
    places
}

/// The cores of one node, by L3 domain.
type L3Cores = BTreeMap<Option<u32>, Vec<u32>>;

/// First threads scattered over (package, node, L3), then second threads in the same order.
fn cores_order(places: &[CpuPlace]) -> Vec<usize> {
    let mut tree: BTreeMap<u32, BTreeMap<Option<u32>, L3Cores>> = BTreeMap::new();
    let mut threads: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for place in places {
        let siblings = threads.entry(place.core).or_default();
        if siblings.is_empty() {
            tree.entry(place.package)
                .or_default()
                .entry(place.node)
                .or_default()
                .entry(place.l3)
                .or_default()
                .push(place.core);
        }
        siblings.push(place.cpu);
    }
    let cores = interleave(
        tree.into_values()
            .map(|nodes| {
                interleave(
                    nodes
                        .into_values()
                        .map(|l3s| interleave(l3s.into_values().collect()))
                        .collect(),
                )
            })
            .collect(),
    );
    let depth = threads.values().map(Vec::len).max().unwrap_or(0);
    let mut order = Vec::with_capacity(places.len());
    for rank in 0..depth {
        order.extend(
            cores
                .iter()
                .filter_map(|core| threads[core].get(rank).copied()),
        );
    }
    order
}

/// Round-robin: the first of each list, then the second of each, … (lists may differ in length).
fn interleave<T: Copy>(lists: Vec<Vec<T>>) -> Vec<T> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    for i in 0..longest {
        out.extend(lists.iter().filter_map(|list| list.get(i).copied()));
    }
    out
}

#[cfg(test)]
mod tests;
