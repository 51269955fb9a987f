use std::path::PathBuf;

use super::*;
use crate::env::host_fs::fake::put;
use crate::env::topology_reader::cgroup_v2_path;

/// A recorded machine under `tests/fixtures/topology/` (written by `generate.py` there).
pub(crate) fn fixture(machine: &str) -> CpuTopology {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(machine);
    assert!(
        root.is_dir(),
        "fixture {} is missing: run generate.py beside it",
        root.display()
    );
    CpuTopology::read_at(&root)
}

#[test]
fn xeon_two_sockets_summary_and_siblings() {
    let topo = fixture("xeon-2s");
    assert_eq!(
        topo.summary(),
        "2 sockets × 28 cores × 2 threads, 2 NUMA nodes, 2 L3 domains"
    );
    assert_eq!(topo.cpus.len(), 112);
    // cpu 56 is the second thread of cpu 0's core, on socket 0 and node 0.
    let (first, sibling) = (topo.cpus[0], topo.cpus[56]);
    assert_eq!((sibling.core, sibling.thread), (first.core, 1));
    assert_eq!((sibling.node, sibling.l3), (Some(0), first.l3));
    assert_eq!(topo.cpus[28].package, 1);
    assert_eq!(topo.node_distance, vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(topo.usable().len(), 112);
}

#[test]
fn epyc_nps4_summary_nodes_and_ccx() {
    let topo = fixture("epyc-2s-nps4");
    assert_eq!(
        topo.summary(),
        "2 sockets × 64 cores × 2 threads, 8 NUMA nodes, 16 L3 domains"
    );
    // CCX of 8 cores: cpu 7 shares cpu 0's L3, cpu 8 does not; cpu 16 is on node 1.
    assert_eq!(topo.cpus[7].l3, topo.cpus[0].l3);
    assert_ne!(topo.cpus[8].l3, topo.cpus[0].l3);
    assert_eq!(topo.cpus[16].node, Some(1));
    assert_eq!(topo.cpus[64].node, Some(4));
    assert_eq!(topo.node_distance[0], vec![10, 12, 12, 12, 32, 32, 32, 32]);
}

#[test]
fn arm_server_without_smt_has_one_shared_l3() {
    let topo = fixture("arm-64");
    assert_eq!(
        topo.summary(),
        "1 socket × 64 cores × 1 thread, 1 NUMA node, 1 L3 domain"
    );
    assert!(topo.cpus.iter().all(|place| place.thread == 0));
}

#[test]
fn container_cpuset_limits_the_usable_cpus() {
    let topo = fixture("container-6of32");
    assert_eq!(topo.cpuset, Some(vec![2, 3, 4, 18, 19, 20]));
    assert_eq!(topo.usable(), vec![2, 3, 4, 18, 19, 20]);
    assert_eq!(
        topo.summary(),
        "1 socket × 16 cores × 2 threads, 1 NUMA node, 2 L3 domains; 6 of 32 CPUs usable \
         (2-4,18-20)"
    );
}

#[test]
fn cpuset_is_read_from_the_nearest_cgroup_that_has_one() {
    assert_eq!(cgroup_v2_path("12:cpu:/x\n0::/a/b\n"), Some("/a/b"));
    assert_eq!(cgroup_v2_path("12:cpu:/x\n"), None);
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "/sys/devices/system/cpu/online", "0-3\n");
    put(dir.path(), "/proc/self/cgroup", "0::/a/b\n");
    put(
        dir.path(),
        "/sys/fs/cgroup/a/cpuset.cpus.effective",
        "1-2\n",
    );
    let topo = CpuTopology::read_at(dir.path());
    assert_eq!(topo.cpuset, Some(vec![1, 2]));
    // No topology files: every CPU its own core, one node, no L3.
    assert_eq!(
        topo.summary(),
        "1 socket × 4 cores × 1 thread, 1 NUMA node, 0 L3 domains; 2 of 4 CPUs usable (1-2)"
    );
}

#[test]
fn a_512_cpu_tree_reads_with_every_domain() {
    let topo = crate::env::topology_512();
    assert_eq!(
        topo.summary(),
        "4 sockets × 64 cores × 2 threads, 8 NUMA nodes, 32 L3 domains"
    );
}
