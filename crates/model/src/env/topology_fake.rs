//! A generated 512-CPU sysfs tree for tests that check nothing is quadratic in the CPUs (too big
//! to keep as a fixture: 4 sockets × 64 cores × 2 threads, 8 L3 domains and 2 nodes per socket).

use super::cpu::format_cpu_list;
use super::host_fs::fake::put;

/// Writes a 4 sockets × 64 cores × 2 threads tree (512 CPUs, 8 L3 and 2 nodes per socket).
fn write_512_cpu_tree(root: &std::path::Path) {
    let (sockets, cores, threads) = (4, 64, 2);
    let cpu = |s: usize, c: usize, t: usize| t * sockets * cores + s * cores + c;
    let mut node_cpus: Vec<Vec<usize>> = vec![Vec::new(); sockets * 2];
    for s in 0..sockets {
        for c in 0..cores {
            let siblings: Vec<usize> = (0..threads).map(|t| cpu(s, c, t)).collect();
            let l3_first = c / 8 * 8;
            let l3: Vec<usize> = (l3_first..l3_first + 8)
                .flat_map(|cc| (0..threads).map(move |t| cpu(s, cc, t)))
                .collect();
            for t in 0..threads {
                let n = cpu(s, c, t);
                node_cpus[s * 2 + c / 32].push(n);
                let dir = format!("/sys/devices/system/cpu/cpu{n}");
                put(
                    root,
                    &format!("{dir}/topology/physical_package_id"),
                    &s.to_string(),
                );
                put(root, &format!("{dir}/topology/core_id"), &c.to_string());
                put(root, &format!("{dir}/cache/index3/level"), "3");
                put(
                    root,
                    &format!("{dir}/cache/index3/shared_cpu_list"),
                    &format_cpu_list(&l3),
                );
                put(
                    root,
                    &format!("{dir}/topology/thread_siblings_list"),
                    &format_cpu_list(&siblings),
                );
            }
        }
    }
    put(root, "/sys/devices/system/cpu/online", "0-511");
    put(root, "/sys/devices/system/node/online", "0-7");
    for (node, cpus) in node_cpus.iter().enumerate() {
        put(
            root,
            &format!("/sys/devices/system/node/node{node}/cpulist"),
            &format_cpu_list(cpus),
        );
    }
}

/// The 512-CPU tree's topology, written and read once per test process (writing the ~2,600
/// files is what takes the time in a debug build).
pub fn topology_512() -> super::topology::CpuTopology {
    static TOPOLOGY: std::sync::OnceLock<super::topology::CpuTopology> = std::sync::OnceLock::new();
    TOPOLOGY
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            write_512_cpu_tree(dir.path());
            super::topology::CpuTopology::read_at(dir.path())
        })
        .clone()
}
