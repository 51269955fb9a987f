//! The machine's CPU topology as placement sees it: every online CPU's package, die, NUMA node,
//! physical core, SMT thread and L2/L3 domains, the NUMA distances, and which CPUs this process
//! may use (online ∩ cgroup cpuset ∩ affinity mask).
//!
//! Read from sysfs by [`topology_reader`](super::topology_reader) below an injectable root, so
//! tests read fake trees of real machines (`tests/fixtures/topology/`). Everything is linear in
//! the number of CPUs: domains are keyed by the kernel's own sharing list text, never by
//! comparing CPUs pairwise. Stored with the run's fingerprint; [`CpuTopology::summary`] is the
//! one line `run`, `show` and `doctor` print.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::cpu::format_cpu_list;

/// One online CPU's place. Domain numbers (`node`, `l2`, `l3`) are the kernel's for nodes and
/// dense indices in first-seen order for caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    /// The logical CPU number.
    pub cpu: usize,
    /// `physical_package_id` (the socket).
    pub package: u32,
    /// `die_id` (0 where the kernel has none).
    pub die: u32,
    /// The NUMA node holding the CPU, when the kernel has NUMA.
    pub node: Option<u32>,
    /// A dense index of the physical core (package, die, `core_id`).
    pub core: u32,
    /// This CPU's rank among its core's SMT siblings (0 for the first thread).
    pub thread: u32,
    /// The L2 domain (CPUs sharing one L2), when sysfs lists caches.
    pub l2: Option<u32>,
    /// The L3 domain (an AMD CCX, an Intel socket), when the machine has an L3.
    pub l3: Option<u32>,
}

/// The CPU topology of a machine and what this process may use of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuTopology {
    /// Every online CPU, by CPU number.
    pub cpus: Vec<CpuPlace>,
    /// `node_distance[i][j]`: the SLIT distance between the i-th and j-th node of `nodes`.
    pub node_distance: Vec<Vec<u32>>,
    /// The online NUMA nodes, ascending.
    pub nodes: Vec<u32>,
    /// `cpu/isolated` (`isolcpus=`), as CPU numbers.
    pub isolated: Vec<usize>,
    /// The cgroup's `cpuset.cpus.effective`; `None` when not found (no cgroup v2 cpuset).
    pub cpuset: Option<Vec<usize>>,
    /// The process's affinity mask (`Cpus_allowed_list`); `None` when not read.
    pub affinity: Option<Vec<usize>>,
}

impl CpuTopology {
    /// Online CPUs this process may run on: in the cpuset and the affinity mask, ascending.
    pub fn usable(&self) -> Vec<usize> {
        let allowed = |list: &Option<Vec<usize>>, cpu: usize| {
            list.as_ref()
                .is_none_or(|cpus| cpus.binary_search(&cpu).is_ok())
        };
        self.cpus
            .iter()
            .map(|place| place.cpu)
            .filter(|&cpu| allowed(&self.cpuset, cpu) && allowed(&self.affinity, cpu))
            .collect()
    }

    /// The usable CPUs' places.
    pub fn usable_places(&self) -> Vec<CpuPlace> {
        let usable: BTreeSet<usize> = self.usable().into_iter().collect();
        self.cpus
            .iter()
            .filter(|place| usable.contains(&place.cpu))
            .copied()
            .collect()
    }

    /// Distinct packages.
    pub fn sockets(&self) -> usize {
        count(self.cpus.iter().map(|p| p.package))
    }

    /// Distinct physical cores.
    pub fn cores(&self) -> usize {
        count(self.cpus.iter().map(|p| p.core))
    }

    /// The most SMT threads on one core.
    pub fn threads_per_core(&self) -> usize {
        self.cpus
            .iter()
            .map(|p| p.thread as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// Distinct L3 domains (0 when the machine shows no L3).
    pub fn l3_domains(&self) -> usize {
        count(self.cpus.iter().filter_map(|p| p.l3))
    }

    /// Online NUMA nodes (at least 1 when there are CPUs).
    pub fn numa_nodes(&self) -> usize {
        self.nodes.len().max(usize::from(!self.cpus.is_empty()))
    }

    /// One line: `2 sockets × 28 cores × 2 threads, 2 NUMA nodes, 2 L3 domains`, then how
    /// many CPUs are usable when a cpuset or affinity mask leaves out some
    /// (`; 6 of 32 CPUs usable (2-4,18-20)`). Cores are per socket; an uneven machine says
    /// `N cores` in all.
    pub fn summary(&self) -> String {
        if self.cpus.is_empty() {
            return "topology unknown".into();
        }
        let (sockets, cores, threads) = (self.sockets(), self.cores(), self.threads_per_core());
        let cores_text = if cores % sockets == 0 {
            format!(
                "{} × {} × {}",
                plural(sockets, "socket"),
                plural(cores / sockets, "core"),
                plural(threads, "thread")
            )
        } else {
            format!(
                "{}, {} in all × {}",
                plural(sockets, "socket"),
                plural(cores, "core"),
                plural(threads, "thread")
            )
        };
        let mut line = format!(
            "{cores_text}, {}, {}",
            plural(self.numa_nodes(), "NUMA node"),
            plural(self.l3_domains(), "L3 domain")
        );
        let usable = self.usable();
        if usable.len() < self.cpus.len() {
            line.push_str(&format!(
                "; {} of {} CPUs usable ({})",
                usable.len(),
                self.cpus.len(),
                format_cpu_list(&usable)
            ));
        }
        line
    }
}

fn count<T: Ord>(items: impl Iterator<Item = T>) -> usize {
    items.collect::<BTreeSet<T>>().len()
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests;
