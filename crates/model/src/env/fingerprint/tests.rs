use super::*;
use crate::env::host_fs::fake::put;

#[test]
fn capture_on_this_machine_reads_the_basics() {
    let fp = Fingerprint::capture(Path::new("."));
    assert!(fp.online_cpus >= 1, "{fp:?}");
    assert!(!fp.kernel_release.is_empty(), "{fp:?}");
    assert!(fp.fs_type.is_some(), "{fp:?}");
    assert!(Path::new(&fp.workdir).is_absolute());
    assert_eq!(fp.tool_version, env!("CARGO_PKG_VERSION"));
    assert!(!fp.git_commit.is_empty());
    assert_eq!(fp.captured_at.len(), "2025-01-01T00:00:00Z".len());
    assert!(fp.captured_at.ends_with('Z'));
    assert_eq!(
        parse_cpu_list(&fp.cpu_list).map(|c| c.len()),
        Some(fp.online_cpus)
    );
}

/// A two-socket SMT box on intel_pstate, with powersave on one CPU, inside a cgroup quota.
fn fake_host(root: &Path, workdir: &Path) {
    let cpu = "/sys/devices/system/cpu";
    put(root, "/proc/sys/kernel/hostname", "bench1\n");
    put(root, "/proc/sys/kernel/osrelease", "6.8.0-31-generic\n");
    put(
        root,
        "/proc/cmdline",
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=3\n",
    );
    put(
        root,
        "/proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6248\nflags\t\t: fpu tsc ht\n\n\
         processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6248\nflags\t\t: fpu tsc ht\n",
    );
    put(root, &format!("{cpu}/online"), "0-3\n");
    for (n, package, siblings, governor) in [
        (0, "0", "0,2", "performance"),
        (1, "1", "1,3", "performance"),
        (2, "0", "0,2", "powersave"),
        (3, "1", "1,3", "performance"),
    ] {
        put(
            root,
            &format!("{cpu}/cpu{n}/topology/physical_package_id"),
            package,
        );
        put(
            root,
            &format!("{cpu}/cpu{n}/topology/thread_siblings_list"),
            siblings,
        );
        put(
            root,
            &format!("{cpu}/cpu{n}/cpufreq/scaling_governor"),
            governor,
        );
        put(
            root,
            &format!("{cpu}/cpu{n}/cpufreq/scaling_driver"),
            "intel_pstate\n",
        );
    }
    put(root, &format!("{cpu}/smt/active"), "1\n");
    put(root, &format!("{cpu}/intel_pstate/no_turbo"), "0\n");
    put(root, &format!("{cpu}/isolated"), "3\n");
    put(
        root,
        &format!("{cpu}/vulnerabilities/spectre_v2"),
        "Mitigation: Enhanced IBRS\n",
    );
    put(
        root,
        &format!("{cpu}/vulnerabilities/mds"),
        "Not affected\n",
    );
    put(root, "/sys/devices/system/node/online", "0-1\n");
    put(
        root,
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    );
    let clock = "/sys/devices/system/clocksource/clocksource0";
    put(root, &format!("{clock}/current_clocksource"), "hpet\n");
    put(
        root,
        &format!("{clock}/available_clocksource"),
        "tsc hpet acpi_pm \n",
    );
    put(root, "/proc/sys/kernel/perf_event_paranoid", "4\n");
    put(root, "/proc/sys/kernel/randomize_va_space", "2\n");
    put(root, "/proc/loadavg", "3.10 2.00 1.00 5/300 999\n");
    put(
        root,
        "/proc/meminfo",
        "MemTotal: 16000000 kB\nMemAvailable: 800000 kB\n",
    );
    put(
        root,
        "/proc/self/status",
        "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nCpus_allowed_list:\t0-2\n",
    );
    put(root, "/proc/self/cgroup", "0::/bench\n");
    put(root, "/sys/fs/cgroup/bench/cpu.max", "200000 100000\n");
    put(
        root,
        "/proc/self/mountinfo",
        &format!(
            "1 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
             2 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
             3 1 8:2 / {} rw,noatime - xfs /dev/sdb1 rw,inode64\n",
            workdir.display()
        ),
    );
    put(
        root,
        "/etc/os-release",
        "PRETTY_NAME=\"Ubuntu 24.04 LTS\"\nID=ubuntu\n",
    );
}

#[test]
fn capture_from_a_fake_host_reads_every_field() {
    let root = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let workdir = std::fs::canonicalize(work.path()).unwrap();
    fake_host(root.path(), &workdir);
    let fp = Fingerprint::capture_from(&HostFs::at(root.path()), &workdir);

    assert_eq!(fp.hostname, "bench1");
    assert_eq!(fp.kernel_release, "6.8.0-31-generic");
    assert!(fp.kernel_cmdline.ends_with("isolcpus=3"));
    assert_eq!(fp.cpu_model, "Intel(R) Xeon(R) Gold 6248");
    assert_eq!((fp.online_cpus, fp.cpu_list.as_str()), (4, "0-3"));
    assert_eq!(fp.smt, Some(true));
    assert_eq!(
        (fp.threads_per_core, fp.cores, fp.sockets),
        (Some(2), Some(2), Some(2))
    );
    assert_eq!(fp.numa_nodes, Some(2));
    assert_eq!(fp.governor.as_deref(), Some("performance=3,powersave=1"));
    assert_eq!(fp.cpufreq_driver.as_deref(), Some("intel_pstate"));
    assert_eq!(fp.turbo, Some(true));
    assert_eq!(fp.thp.as_deref(), Some("always"));
    assert_eq!(
        fp.mitigations,
        vec![
            ("mds".to_string(), "Not affected".to_string()),
            (
                "spectre_v2".to_string(),
                "Mitigation: Enhanced IBRS".to_string()
            ),
        ]
    );
    assert_eq!(fp.clocksource.as_deref(), Some("hpet"));
    assert_eq!(fp.available_clocksources, ["tsc", "hpet", "acpi_pm"]);
    assert_eq!(fp.hypervisor, None, "no hypervisor flag in cpuinfo");
    assert_eq!((fp.perf_event_paranoid, fp.aslr), (Some(4), Some(2)));
    assert_eq!(fp.isolated_cpus.as_deref(), Some("3"));
    assert_eq!(fp.nohz_full, None);
    assert_eq!(fp.loadavg, Some([3.10, 2.00, 1.00]));
    assert_eq!(
        (fp.mem_total_kib, fp.mem_available_kib),
        (Some(16_000_000), Some(800_000))
    );
    assert_eq!(fp.workdir, workdir.display().to_string());
    assert_eq!(fp.fs_type.as_deref(), Some("xfs"));
    assert_eq!(fp.fs_options.as_deref(), Some("rw,noatime,inode64"));
    assert_eq!(fp.fs_source.as_deref(), Some("/dev/sdb1"));
    assert_eq!(fp.fs_journal, None, "xfs has no jbd2 journal to report");
    assert_eq!(fp.os.as_deref(), Some("Ubuntu 24.04 LTS"));
    assert_eq!(fp.allowed_cpus.as_deref(), Some("0-2"));
    assert_eq!(fp.cpu_quota, Some(2.0));
    assert_eq!((fp.euid, fp.perfmon_capable), (Some(1000), Some(false)));
}

#[test]
fn an_ext4_journal_is_read_from_jbd2() {
    let root = tempfile::tempdir().unwrap();
    let host = HostFs::at(root.path());
    assert_eq!(has_journal(&host, "ext4", "/dev/vda"), Some(false));
    put(root.path(), "/proc/fs/jbd2/vda-8/info", "journal\n");
    assert_eq!(has_journal(&host, "ext4", "/dev/vda"), Some(true));
    // Another device's journal is not this one's.
    assert_eq!(has_journal(&host, "ext4", "/dev/vdb"), Some(false));
    assert_eq!(has_journal(&host, "xfs", "/dev/vda"), None);
}

#[test]
fn capture_from_an_empty_host_never_fails() {
    let root = tempfile::tempdir().unwrap();
    let fp = Fingerprint::capture_from(&HostFs::at(root.path()), Path::new("/nonexistent/dir"));
    assert_eq!(fp.online_cpus, 0);
    assert_eq!(fp.governor, None);
    assert!(fp.mitigations.is_empty());
    assert_eq!(fp.workdir, "/nonexistent/dir");
    assert_eq!(fp.fs_type, None);
}

#[test]
fn differences_skip_volatile_fields_and_split_mitigations() {
    let a = Fingerprint {
        hostname: "bench1".into(),
        kernel_release: "6.8.0".into(),
        online_cpus: 4,
        governor: Some("performance".into()),
        mitigations: vec![
            ("mds".into(), "Not affected".into()),
            ("spectre_v2".into(), "Mitigation: Retpolines".into()),
        ],
        loadavg: Some([0.1, 0.1, 0.1]),
        mem_available_kib: Some(100),
        captured_at: "2025-01-01T00:00:00Z".into(),
        workdir: "/a".into(),
        ..Default::default()
    };
    assert!(a.differences(&a.clone()).is_empty());

    let b = Fingerprint {
        kernel_release: "6.9.0".into(),
        governor: None,
        mitigations: vec![("spectre_v2".into(), "Vulnerable".into())],
        loadavg: Some([5.0, 5.0, 5.0]),
        mem_available_kib: Some(1),
        captured_at: "2025-06-01T00:00:00Z".into(),
        workdir: "/b".into(),
        ..a.clone()
    };
    let fields: Vec<(String, String, String)> = a
        .differences(&b)
        .into_iter()
        .map(|d| (d.field, d.a, d.b))
        .collect();
    assert_eq!(
        fields,
        [
            ("kernel_release".into(), "6.8.0".into(), "6.9.0".into()),
            ("governor".into(), "performance".into(), "unknown".into()),
            (
                "mitigations.mds".into(),
                "Not affected".into(),
                "absent".into()
            ),
            (
                "mitigations.spectre_v2".into(),
                "Mitigation: Retpolines".into(),
                "Vulnerable".into()
            ),
        ]
    );

    let other_host = Fingerprint {
        hostname: "bench2".into(),
        ..a.clone()
    };
    let hostname = &a.differences(&other_host)[0];
    assert_eq!(
        (hostname.field.as_str(), hostname.b.as_str()),
        ("hostname", "bench2")
    );
}

#[test]
fn json_round_trips_and_old_records_without_new_fields_load() {
    let mut fp = Fingerprint::capture(Path::new("."));
    // Binary fractions, so the comparison does not depend on float parsing precision.
    fp.loadavg = Some([0.5, 0.25, 1.0]);
    fp.cpu_quota = Some(1.5);
    let json = serde_json::to_string(&fp).unwrap();
    let back: Fingerprint = serde_json::from_str(&json).unwrap();
    assert_eq!(back, fp);

    let old = r#"{"hostname":"h","kernel_release":"5.15.0","online_cpus":8,
                  "mitigations":[["mds","Not affected"]],"loadavg":[1.0,0.5,0.25]}"#;
    let fp: Fingerprint = serde_json::from_str(old).unwrap();
    assert_eq!(fp.online_cpus, 8);
    assert_eq!(
        fp.mitigations,
        [("mds".to_string(), "Not affected".to_string())]
    );
    assert_eq!(fp.cpu_quota, None);
}

#[test]
fn capture_records_the_topology_and_old_records_have_none() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/xeon-2s");
    let fp = Fingerprint::capture_from(&HostFs::at(&root), Path::new("."));
    let topology = fp.topology.expect("the fixture has a topology");
    assert_eq!(
        topology.summary(),
        "2 sockets × 28 cores × 2 threads, 2 NUMA nodes, 2 L3 domains"
    );
    let old: Fingerprint = serde_json::from_str(r#"{"hostname":"h"}"#).unwrap();
    assert_eq!(old.topology, None);
}
