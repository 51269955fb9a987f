//! What this process may use: its user and capabilities (which decide what `perf_event_open`
//! allows), the CPUs its affinity mask allows, and the cgroup CPU bandwidth limit.
//!
//! A container limited to 2 CPUs' worth of quota on a 64-CPU host flattens every curve at 2;
//! this module is how the fingerprint notices.

use super::host_fs::HostFs;
use super::mount::Mount;

/// The fields of `/proc/self/status` the fingerprint uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProcessStatus {
    pub euid: Option<u32>,
    pub effective_caps: Option<u64>,
    pub cpus_allowed_list: Option<String>,
}

/// `CAP_SYS_ADMIN`, which also grants what `CAP_PERFMON` does.
const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_PERFMON` (Linux 5.8+).
const CAP_PERFMON: u32 = 38;

/// Parses `/proc/self/status`.
pub(crate) fn parse_status(text: &str) -> ProcessStatus {
    let mut status = ProcessStatus::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            // Real, effective, saved, filesystem.
            "Uid" => status.euid = value.split_whitespace().nth(1).and_then(|v| v.parse().ok()),
            "CapEff" => status.effective_caps = u64::from_str_radix(value, 16).ok(),
            "Cpus_allowed_list" => status.cpus_allowed_list = Some(value.to_string()),
            _ => {}
        }
    }
    status
}

/// Whether the effective capability set passes the kernel's `perfmon_capable()`.
pub(crate) fn perfmon_capable(effective_caps: u64) -> bool {
    let has = |cap: u32| effective_caps & (1u64 << cap) != 0;
    has(CAP_PERFMON) || has(CAP_SYS_ADMIN)
}

/// A CPU bandwidth limit as CPUs' worth of time: `quota / period`; `None` when unlimited.
pub(crate) fn quota_cpus(quota: i64, period: i64) -> Option<f64> {
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

/// Parses a cgroup v2 `cpu.max` (`max 100000` or `200000 100000`).
pub(crate) fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period: i64 = fields.next()?.parse().ok()?;
    if quota == "max" {
        return None;
    }
    quota_cpus(quota.parse().ok()?, period)
}

/// This process's cgroup path for a v1 controller, or the v2 path for `None`.
pub(crate) fn cgroup_path(proc_self_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            None => id == "0" && controllers.is_empty(),
            Some(wanted) => controllers.split(',').any(|c| c == wanted),
        };
        matches.then(|| path.to_string())
    })
}

/// The tightest CPU bandwidth limit on this process's cgroup or any ancestor, in CPUs.
///
/// cgroup v2: `cpu.max` under the `cgroup2` mount; v1: `cpu.cfs_quota_us` / `cpu.cfs_period_us`
/// under the mount whose options include `cpu`. `None` when unlimited or unknown.
pub(crate) fn read_cpu_quota(host: &HostFs, mounts: &[Mount]) -> Option<f64> {
    let cgroups = host.read("/proc/self/cgroup")?;
    let mut limits = Vec::new();
    if let (Some(mount), Some(path)) = (
        mounts.iter().rev().find(|m| m.fs_type == "cgroup2"),
        cgroup_path(&cgroups, None),
    ) {
        for dir in ancestors(&mount.mount_point, &path) {
            limits.extend(
                host.read(&format!("{dir}/cpu.max"))
                    .and_then(|t| parse_cpu_max(&t)),
            );
        }
    }
    if let (Some(mount), Some(path)) = (
        mounts.iter().rev().find(|m| {
            m.fs_type == "cgroup" && m.super_options.split(',').any(|option| option == "cpu")
        }),
        cgroup_path(&cgroups, Some("cpu")),
    ) {
        for dir in ancestors(&mount.mount_point, &path) {
            let quota = host.read_int::<i64>(&format!("{dir}/cpu.cfs_quota_us"));
            let period = host.read_int::<i64>(&format!("{dir}/cpu.cfs_period_us"));
            if let (Some(quota), Some(period)) = (quota, period) {
                limits.extend(quota_cpus(quota, period));
            }
        }
    }
    limits.into_iter().reduce(f64::min)
}

/// `mount/a/b`, `mount/a`, `mount` for the cgroup path `/a/b`.
fn ancestors(mount_point: &str, path: &str) -> Vec<String> {
    let mount_point = mount_point.trim_end_matches('/');
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    (0..=parts.len())
        .rev()
        .map(|depth| {
            let mut dir = mount_point.to_string();
            for part in &parts[..depth] {
                dir.push('/');
                dir.push_str(part);
            }
            dir
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::host_fs::fake::put;
    use super::super::mount::parse_mountinfo;
    use super::*;

    #[test]
    fn status_gives_euid_caps_and_allowed_cpus() {
        let text = "Name:\tcat\nUid:\t1000\t0\t1000\t1000\nCapEff:\t000001fffeffffff\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        let status = parse_status(text);
        assert_eq!(status.euid, Some(0));
        assert_eq!(status.effective_caps, Some(0x1fffeffffff));
        assert_eq!(status.cpus_allowed_list.as_deref(), Some("0-1"));
        assert!(perfmon_capable(0x1fffeffffff));
        assert!(!perfmon_capable(0));
        assert!(perfmon_capable(1 << 38));
    }

    #[test]
    fn cpu_max_and_cfs_quota_become_cpus() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(quota_cpus(-1, 100000), None);
        assert_eq!(quota_cpus(150000, 100000), Some(1.5));
    }

    #[test]
    fn cgroup_paths_for_v1_and_v2() {
        let text = "4:memory:/box\n1:cpu,cpuacct:/jobs/7\n0::/user.slice/x.scope\n";
        assert_eq!(
            cgroup_path(text, None).as_deref(),
            Some("/user.slice/x.scope")
        );
        assert_eq!(cgroup_path(text, Some("cpu")).as_deref(), Some("/jobs/7"));
        assert_eq!(cgroup_path(text, Some("pids")), None);
        assert_eq!(
            ancestors("/sys/fs/cgroup/", "/a/b"),
            ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"]
        );
    }

    #[test]
    fn tightest_quota_over_ancestors_wins() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "/proc/self/cgroup", "0::/outer/inner\n");
        put(dir.path(), "/sys/fs/cgroup/cpu.max", "max 100000\n");
        put(
            dir.path(),
            "/sys/fs/cgroup/outer/cpu.max",
            "150000 100000\n",
        );
        put(
            dir.path(),
            "/sys/fs/cgroup/outer/inner/cpu.max",
            "400000 100000\n",
        );
        let mounts = parse_mountinfo("30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n");
        let host = HostFs::at(dir.path());
        assert_eq!(read_cpu_quota(&host, &mounts), Some(1.5));
    }
}
