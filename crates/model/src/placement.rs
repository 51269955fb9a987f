//! The CPU order of each `--pin` strategy, computed from the topology: task i of a sweep runs
//! on the i-th CPU of it. The engine pins by it; the analysis reads a curve's knees in it.
//!
//! Only CPUs this process may use (online, in its cgroup cpuset and its affinity mask) are
//! candidates. Every order is built in O(n log n) of the CPUs.
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

use std::collections::BTreeMap;

use crate::env::{CpuPlace, CpuTopology};
use crate::record::Pin;

/// The usable CPUs in `pin`'s order (empty for [`Pin::None`]; the list itself for
/// [`Pin::Cpus`]).
pub fn order_for(pin: &Pin, topology: &CpuTopology) -> Vec<usize> {
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
