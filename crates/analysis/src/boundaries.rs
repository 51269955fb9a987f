//! Topology boundaries in a sweep: which N first puts a task past an L3 domain, a NUMA node,
//! a socket or onto an SMT sibling, under the run's placement; and the default task counts that
//! land on those boundaries.
//!
//! Computed from the topology stored with the run's fingerprint and its `--pin` strategy (the
//! same order [`model::placement`] gives the engine to pin by), so a knee in the curve can be read
//! against what changed at that N. Presentation only renders these marks (`↑ 2nd socket`).

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use serde::Serialize;

use model::env::CpuTopology;
use model::placement::order_for;
use model::record::Pin;

/// A boundary a sweep crosses, named by what the first task past it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Boundary {
    /// A task runs on an SMT sibling of a core that already has one.
    Smt,
    /// A task runs in a second L3 domain.
    SecondL3,
    /// A task runs on a second NUMA node.
    SecondNode,
    /// A task runs on a second socket.
    SecondSocket,
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Boundary::Smt => "↑ SMT",
            Boundary::SecondL3 => "↑ 2nd L3",
            Boundary::SecondNode => "↑ 2nd node",
            Boundary::SecondSocket => "↑ 2nd socket",
        })
    }
}

/// The boundaries crossed by the measured point `n` (since the previous measured point).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoundaryMark {
    /// The first measured N at or past the crossing.
    pub n: u32,
    /// What was crossed, in [`Boundary`] order.
    pub crossed: Vec<Boundary>,
}

/// The task count at which each boundary is first crossed under `pin` (task k on the k-th CPU
/// of the placement order); none for `--pin none`, whose placement is the scheduler's.
pub fn crossings(topology: &CpuTopology, pin: &Pin) -> Vec<(u32, Boundary)> {
    let order = order_for(pin, topology);
    let place: std::collections::HashMap<usize, _> =
        topology.cpus.iter().map(|p| (p.cpu, *p)).collect();
    let (mut cores, mut l3s, mut nodes, mut packages) = (
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
    );
    let mut found: Vec<(u32, Boundary)> = Vec::new();
    let first = |n: u32, boundary: Boundary, found: &mut Vec<(u32, Boundary)>| {
        if !found.iter().any(|(_, b)| *b == boundary) {
            found.push((n, boundary));
        }
    };
    for (i, cpu) in order.iter().enumerate() {
        let Some(p) = place.get(cpu) else { continue };
        let n = i as u32 + 1;
        if !cores.insert(p.core) {
            first(n, Boundary::Smt, &mut found);
        }
        for (set, key, boundary) in [
            (&mut l3s, p.l3, Boundary::SecondL3),
            (&mut nodes, p.node, Boundary::SecondNode),
            (&mut packages, Some(p.package), Boundary::SecondSocket),
        ] {
            if let Some(key) = key {
                if set.insert(key) && set.len() == 2 {
                    first(n, boundary, &mut found);
                }
            }
        }
    }
    found.sort();
    found
}

/// Puts each crossing on the first measured point at or past it.
pub fn marks(points: &[u32], crossings: &[(u32, Boundary)]) -> Vec<BoundaryMark> {
    let measured: BTreeSet<u32> = points.iter().copied().collect();
    let mut marks: Vec<BoundaryMark> = Vec::new();
    for &(n, boundary) in crossings {
        let Some(&at) = measured.range(n..).next() else {
            continue;
        };
        match marks.iter_mut().find(|m| m.n == at) {
            Some(mark) => mark.crossed.push(boundary),
            None => marks.push(BoundaryMark {
                n: at,
                crossed: vec![boundary],
            }),
        }
    }
    for mark in &mut marks {
        mark.crossed.sort();
    }
    marks.sort_by_key(|m| m.n);
    marks
}

/// The default sweep on this topology: powers of two up to the usable CPUs, plus the
/// boundaries — cores per L3 domain, per node and per socket (the largest of each among the
/// usable CPUs), all usable cores and all usable CPUs — sorted and deduplicated; at most
/// log2(CPUs) + 6 points, none past the usable CPUs.
pub fn default_points(topology: &CpuTopology) -> Vec<u32> {
    let places = topology.usable_places();
    let threads = places.len() as u32;
    if threads == 0 {
        return vec![1];
    }
    let most_cores = |key: &dyn Fn(&model::env::CpuPlace) -> Option<u32>| -> Option<u32> {
        let mut cores: std::collections::HashMap<u32, HashSet<u32>> = Default::default();
        for p in &places {
            cores.entry(key(p)?).or_default().insert(p.core);
        }
        cores.values().map(|c| c.len() as u32).max()
    };
    let mut points: BTreeSet<u32> = (0..32)
        .map(|k| 1u32 << k)
        .take_while(|&n| n <= threads)
        .collect();
    points.extend(most_cores(&|p| p.l3));
    points.extend(most_cores(&|p| p.node));
    points.extend(most_cores(&|p| Some(p.package)));
    points.insert(places.iter().map(|p| p.core).collect::<HashSet<_>>().len() as u32);
    points.insert(threads);
    points.into_iter().collect()
}

#[cfg(test)]
mod tests;
