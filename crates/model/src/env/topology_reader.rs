//! Reads a [`CpuTopology`] from sysfs and procfs below a [`HostFs`] root.
//!
//! Per CPU: `topology/{physical_package_id,die_id,core_id}` and, for each
//! `cache/index*/` whose `level` is 2 or 3, `shared_cpu_list`; per node: `cpulist` and
//! `distance`; then `cpu/isolated`, the cgroup v2 `cpuset.cpus.effective` of the cgroup named in
//! `/proc/self/cgroup`, and `Cpus_allowed_list` from `/proc/self/status`. Every read is per CPU
//! or per node, and cache domains are keyed by their sharing list's text, so the work grows
//! linearly with the CPUs. A file that cannot be read leaves its field empty; nothing fails.

use std::collections::HashMap;

use super::cpu::parse_cpu_list;
use super::host_fs::HostFs;
use super::process::parse_status;
use super::topology::{CpuPlace, CpuTopology};

impl CpuTopology {
    /// Reads this machine's topology.
    pub fn read() -> CpuTopology {
        read(&HostFs::real())
    }

    /// Reads the topology of a fake tree whose `sys/` and `proc/` stand in for the real ones.
    pub fn read_at(root: &std::path::Path) -> CpuTopology {
        read(&HostFs::at(root))
    }
}

const CPU_DIR: &str = "/sys/devices/system/cpu";
const NODE_DIR: &str = "/sys/devices/system/node";

/// Dense ids for keys in first-seen order.
#[derive(Default)]
struct Ids<K> {
    ids: HashMap<K, u32>,
}

impl<K: std::hash::Hash + Eq> Ids<K> {
    fn id(&mut self, key: K) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(key).or_insert(next)
    }
}

/// Reads the topology of the online CPUs of `host`.
pub(crate) fn read(host: &HostFs) -> CpuTopology {
    let online = host
        .read(&format!("{CPU_DIR}/online"))
        .and_then(|text| parse_cpu_list(&text))
        .unwrap_or_default();
    let nodes = host
        .read(&format!("{NODE_DIR}/online"))
        .and_then(|text| parse_cpu_list(&text))
        .unwrap_or_default();
    let mut node_of: HashMap<usize, u32> = HashMap::new();
    for &node in &nodes {
        let cpus = host
            .read(&format!("{NODE_DIR}/node{node}/cpulist"))
            .and_then(|text| parse_cpu_list(&text))
            .unwrap_or_default();
        for cpu in cpus {
            node_of.insert(cpu, node as u32);
        }
    }
    let node_distance = nodes
        .iter()
        .map(|node| {
            host.read(&format!("{NODE_DIR}/node{node}/distance"))
                .map(|text| {
                    text.split_whitespace()
                        .filter_map(|d| d.parse().ok())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();

    let (mut cores, mut l2s, mut l3s) = (Ids::default(), Ids::default(), Ids::default());
    let mut threads_seen: HashMap<u32, u32> = HashMap::new();
    let cpus = online
        .iter()
        .map(|&cpu| {
            let dir = format!("{CPU_DIR}/cpu{cpu}");
            let int = |file: &str| host.read_int::<u32>(&format!("{dir}/topology/{file}"));
            let package = int("physical_package_id").unwrap_or(0);
            let die = int("die_id").unwrap_or(0);
            // Without core_id every CPU is its own core.
            let core_key = (package, die, int("core_id").map_or(cpu as u64, u64::from));
            let core = cores.id(core_key);
            let thread = threads_seen.entry(core).or_insert(0);
            let rank = *thread;
            *thread += 1;
            let (mut l2, mut l3) = (None, None);
            for index in host.list(&format!("{dir}/cache")) {
                let cache = format!("{dir}/cache/{index}");
                let shared = || host.read_trimmed(&format!("{cache}/shared_cpu_list"));
                match host.read_int::<u8>(&format!("{cache}/level")) {
                    Some(2) => l2 = shared().map(|list| l2s.id(list)),
                    Some(3) => l3 = shared().map(|list| l3s.id(list)),
                    _ => {}
                }
            }
            CpuPlace {
                cpu,
                package,
                die,
                node: node_of.get(&cpu).copied(),
                core,
                thread: rank,
                l2,
                l3,
            }
        })
        .collect();

    CpuTopology {
        cpus,
        node_distance,
        nodes: nodes.iter().map(|&n| n as u32).collect(),
        isolated: host
            .read(&format!("{CPU_DIR}/isolated"))
            .and_then(|text| parse_cpu_list(&text))
            .unwrap_or_default(),
        cpuset: read_cpuset(host),
        affinity: parse_status(&host.read("/proc/self/status").unwrap_or_default())
            .cpus_allowed_list
            .and_then(|list| parse_cpu_list(&list)),
    }
}

/// The cgroup v2 path of this process from `/proc/self/cgroup` (the `0::/path` line).
pub(crate) fn cgroup_v2_path(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::trim)
}

/// `cpuset.cpus.effective` of this process's cgroup v2, nearest ancestor that has one.
fn read_cpuset(host: &HostFs) -> Option<Vec<usize>> {
    let cgroup = host.read("/proc/self/cgroup")?;
    let mut path = cgroup_v2_path(&cgroup)?.trim_end_matches('/').to_string();
    loop {
        let file = format!("/sys/fs/cgroup{path}/cpuset.cpus.effective");
        if let Some(cpus) = host
            .read(&file)
            .and_then(|text| parse_cpu_list(&text))
            .filter(|cpus| !cpus.is_empty())
        {
            return Some(cpus);
        }
        match path.rfind('/') {
            Some(slash) => path.truncate(slash),
            None => return None,
        }
    }
}
