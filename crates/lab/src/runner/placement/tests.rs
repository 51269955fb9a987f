use std::path::Path;

use super::*;
use model::env::CpuPlace;

fn fixture(machine: &str) -> CpuTopology {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures/topology")
        .join(machine);
    assert!(root.is_dir(), "fixture {} is missing", root.display());
    CpuTopology::read_at(&root)
}

/// The CPUs of the first `n` tasks (all pinned).
fn first(pin: &Pin, topology: &CpuTopology, n: usize) -> Vec<usize> {
    let order = order_for(pin, topology);
    assign(pin, n, &order)
        .into_iter()
        .map(|cpu| cpu.expect("pinned"))
        .collect()
}

fn count_distinct(
    cpus: &[usize],
    key: impl Fn(&CpuPlace) -> Option<u32>,
    t: &CpuTopology,
) -> usize {
    let set: std::collections::BTreeSet<Option<u32>> =
        cpus.iter().map(|&cpu| key(&t.cpus[cpu])).collect();
    set.len()
}

#[test]
fn xeon_cores_alternates_sockets_and_takes_siblings_last() {
    let t = fixture("xeon-2s");
    assert_eq!(first(&Pin::Cores, &t, 1), [0]);
    assert_eq!(first(&Pin::Cores, &t, 4), [0, 28, 1, 29]);
    // 28 cores per L3 (+1), all 56 cores: never a sibling.
    let cores = first(&Pin::Cores, &t, 56);
    assert!(cores.iter().all(|&cpu| cpu < 56), "{cores:?}");
    assert_eq!(count_distinct(&first(&Pin::Cores, &t, 29), |p| p.l3, &t), 2);
    // The 57th task is the first SMT sibling, of core 0.
    assert_eq!(first(&Pin::Cores, &t, 57)[56], 56);
    let all = first(&Pin::Cores, &t, 112);
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..112).collect::<Vec<_>>());
    // Past the usable CPUs the scheduler places everybody.
    assert!(
        assign(&Pin::Cores, 113, &order_for(&Pin::Cores, &t))
            .iter()
            .all(Option::is_none)
    );
}

#[test]
fn xeon_compact_fills_siblings_then_the_socket() {
    let t = fixture("xeon-2s");
    assert_eq!(first(&Pin::Compact, &t, 1), [0]);
    assert_eq!(first(&Pin::Compact, &t, 4), [0, 56, 1, 57]);
    // 56 threads of socket 0 before socket 1's first.
    let socket0 = first(&Pin::Compact, &t, 56);
    assert!(socket0.iter().all(|&cpu| t.cpus[cpu].package == 0));
    assert_eq!(first(&Pin::Compact, &t, 57)[56], 28);
}

#[test]
fn xeon_spread_nodes_alternates_nodes() {
    let t = fixture("xeon-2s");
    assert_eq!(first(&Pin::SpreadNodes, &t, 4), [0, 28, 1, 29]);
    assert_eq!(first(&Pin::SpreadNodes, &t, 57)[56], 56);
}

#[test]
fn epyc_cores_visits_every_node_then_every_ccx_before_a_second_core() {
    let t = fixture("epyc-2s-nps4");
    assert_eq!(first(&Pin::Cores, &t, 1), [0]);
    assert_eq!(first(&Pin::Cores, &t, 8), [0, 64, 16, 80, 32, 96, 48, 112]);
    // 16 tasks: one on each of the 16 CCX (L3 domains).
    let sixteen = first(&Pin::Cores, &t, 16);
    assert_eq!(count_distinct(&sixteen, |p| p.l3, &t), 16);
    // 9 = cores per L3 + 1: nine L3 domains in use.
    assert_eq!(count_distinct(&first(&Pin::Cores, &t, 9), |p| p.l3, &t), 9);
    // All 128 cores before any sibling; the 129th task is cpu 0's sibling.
    assert!(first(&Pin::Cores, &t, 128).iter().all(|&cpu| cpu < 128));
    assert_eq!(first(&Pin::Cores, &t, 129)[128], 128);
    assert_eq!(order_for(&Pin::Cores, &t).len(), 256);
}

#[test]
fn epyc_compact_fills_a_ccx_then_its_node() {
    let t = fixture("epyc-2s-nps4");
    assert_eq!(first(&Pin::Compact, &t, 3), [0, 128, 1]);
    // One CCX is 8 cores × 2 threads: the 17th task opens the second CCX, same node.
    let ccx = first(&Pin::Compact, &t, 16);
    assert_eq!(count_distinct(&ccx, |p| p.l3, &t), 1);
    let next = first(&Pin::Compact, &t, 17)[16];
    assert_eq!((next, t.cpus[next].node), (8, Some(0)));
    // A node (32 threads) before the next node.
    assert_eq!(
        count_distinct(&first(&Pin::Compact, &t, 32), |p| p.node, &t),
        1
    );
    assert_eq!(first(&Pin::Compact, &t, 33)[32], 16);
}

#[test]
fn epyc_spread_nodes_round_robins_the_eight_nodes() {
    let t = fixture("epyc-2s-nps4");
    assert_eq!(
        first(&Pin::SpreadNodes, &t, 9),
        [0, 16, 32, 48, 64, 80, 96, 112, 8]
    );
    assert!(
        first(&Pin::SpreadNodes, &t, 128)
            .iter()
            .all(|&cpu| cpu < 128)
    );
}

#[test]
fn arm_without_smt_is_core_order_for_every_strategy() {
    let t = fixture("arm-64");
    for pin in [Pin::Cores, Pin::Compact, Pin::SpreadNodes] {
        assert_eq!(first(&pin, &t, 64), (0..64).collect::<Vec<_>>(), "{pin}");
        assert!(
            assign(&pin, 65, &order_for(&pin, &t))
                .iter()
                .all(Option::is_none)
        );
    }
}

#[test]
fn container_places_only_on_its_cpuset() {
    let t = fixture("container-6of32");
    assert_eq!(first(&Pin::Cores, &t, 1), [2]);
    assert_eq!(first(&Pin::Cores, &t, 6), [2, 3, 4, 18, 19, 20]);
    assert_eq!(first(&Pin::Compact, &t, 6), [2, 18, 3, 19, 4, 20]);
    assert_eq!(first(&Pin::SpreadNodes, &t, 4), [2, 3, 4, 18]);
    // 7 tasks on 6 usable CPUs: left to the scheduler (within the cpuset).
    assert!(
        assign(&Pin::Cores, 7, &order_for(&Pin::Cores, &t))
            .iter()
            .all(Option::is_none)
    );
    assert_eq!(
        assign(&Pin::None, 2, &order_for(&Pin::None, &t)),
        [None, None]
    );
}

#[test]
fn an_explicit_list_is_kept_in_order_and_wraps() {
    let t = fixture("container-6of32");
    let pin: Pin = "19,2-3".parse().unwrap();
    assert_eq!(first(&pin, &t, 4), [19, 2, 3, 19]);
}

#[test]
fn a_512_cpu_machine_orders_every_strategy_as_a_permutation() {
    let t = model::env::topology_512();
    for pin in [Pin::Cores, Pin::Compact, Pin::SpreadNodes] {
        let mut order = order_for(&pin, &t);
        order.sort_unstable();
        assert_eq!(order, (0..512).collect::<Vec<_>>(), "{pin}");
    }
}

#[test]
fn this_machine_has_an_order() {
    assert!(!cpu_order().unwrap().is_empty());
}

#[test]
fn membind_node_binds_each_task_to_its_cpus_node_and_interleave_spreads_over_all() {
    let t = fixture("epyc-2s-nps4");
    let cpus = assign(&Pin::SpreadNodes, 9, &order_for(&Pin::SpreadNodes, &t));
    let bound = memory_policies(Membind::Node, &cpus, &t).unwrap();
    for (cpu, policy) in cpus.iter().zip(&bound) {
        let node = t.cpus[cpu.unwrap()].node.unwrap();
        assert_eq!(*policy, sys::MemPolicy::Bind(vec![node]), "CPU {cpu:?}");
    }
    // Spread over the nodes, the first eight tasks are bound to eight different ones.
    let nodes: std::collections::BTreeSet<u32> = cpus[..8]
        .iter()
        .map(|cpu| t.cpus[cpu.unwrap()].node.unwrap())
        .collect();
    assert_eq!(nodes.len(), 8);
    let all: Vec<u32> = (0..8).collect();
    assert_eq!(
        memory_policies(Membind::Interleave, &cpus, &t).unwrap(),
        vec![sys::MemPolicy::Interleave(all); 9]
    );
    assert_eq!(
        memory_policies(Membind::FirstTouch, &cpus, &t).unwrap(),
        vec![sys::MemPolicy::Default; 9]
    );
}

#[test]
fn membind_interleaves_over_the_nodes_of_the_cpuset_and_leaves_unpinned_tasks_alone() {
    let t = fixture("container-6of32");
    let nodes: std::collections::BTreeSet<u32> =
        t.usable_places().iter().filter_map(|p| p.node).collect();
    let cpus = assign(&Pin::Cores, 2, &order_for(&Pin::Cores, &t));
    assert_eq!(
        memory_policies(Membind::Interleave, &cpus, &t).unwrap()[0],
        sys::MemPolicy::Interleave(nodes.into_iter().collect())
    );
    // 7 tasks on 6 usable CPUs: nobody is pinned, so no task has a node of its own.
    let unpinned = assign(&Pin::Cores, 7, &order_for(&Pin::Cores, &t));
    assert_eq!(
        memory_policies(Membind::Node, &unpinned, &t).unwrap(),
        vec![sys::MemPolicy::Default; 7]
    );
}

#[test]
fn membind_without_numa_in_sysfs_is_refused_naming_the_fix() {
    let mut t = fixture("arm-64");
    for place in &mut t.cpus {
        place.node = None;
    }
    let cpus = assign(&Pin::Cores, 2, &order_for(&Pin::Cores, &t));
    let e = memory_policies(Membind::Interleave, &cpus, &t).unwrap_err();
    assert!(e.to_string().contains("leave --membind out"), "{e}");
    // The default needs nothing from sysfs.
    assert!(memory_policies(Membind::FirstTouch, &cpus, &t).is_ok());
}
