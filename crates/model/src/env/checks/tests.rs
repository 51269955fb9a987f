use super::*;

/// A bare-metal box tuned for benchmarking: nothing should warn.
fn tuned() -> Fingerprint {
    Fingerprint {
        online_cpus: 8,
        cpu_list: "0-7".into(),
        allowed_cpus: Some("0-7".into()),
        smt: Some(false),
        threads_per_core: Some(1),
        cores: Some(8),
        sockets: Some(1),
        numa_nodes: Some(1),
        governor: Some("performance".into()),
        cpufreq_driver: Some("intel_pstate".into()),
        turbo: Some(false),
        thp: Some("madvise".into()),
        mitigations: vec![("mds".into(), "Not affected".into())],
        clocksource: Some("tsc".into()),
        available_clocksources: vec!["tsc".into(), "hpet".into()],
        perf_event_paranoid: Some(-1),
        perfmon_capable: Some(false),
        aslr: Some(0),
        isolated_cpus: Some(String::new()),
        nohz_full: Some(String::new()),
        loadavg: Some([0.02, 0.05, 0.01]),
        mem_total_kib: Some(32 * 1024 * 1024),
        mem_available_kib: Some(30 * 1024 * 1024),
        workdir: "/home/me/bench".into(),
        fs_type: Some("ext4".into()),
        fs_options: Some("rw,relatime".into()),
        fs_source: Some("/dev/nvme0n1p2".into()),
        ..Default::default()
    }
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check named {name}"))
}

fn warnings(fp: &Fingerprint) -> Vec<String> {
    checks(fp)
        .into_iter()
        .filter(|c| c.severity == Severity::Warn)
        .map(|c| c.name)
        .collect()
}

#[test]
fn a_tuned_machine_has_no_warnings_and_every_check_is_named_once() {
    let all = checks(&tuned());
    assert_eq!(warnings(&tuned()), Vec::<String>::new(), "{all:#?}");
    let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert_eq!(
        find(&all, "memory").finding,
        "30.0 GiB of 32.0 GiB available"
    );
}

#[test]
fn a_noisy_machine_warns_with_a_fix_for_each() {
    let noisy = Fingerprint {
        allowed_cpus: Some("0-3".into()),
        cpu_quota: Some(2.0),
        hypervisor: Some("KVM".into()),
        governor: Some("powersave".into()),
        turbo: Some(true),
        smt: Some(true),
        threads_per_core: Some(2),
        cores: Some(4),
        numa_nodes: Some(2),
        loadavg: Some([1.5, 1.0, 0.5]),
        mem_available_kib: Some(1024 * 1024),
        clocksource: Some("hpet".into()),
        perf_event_paranoid: Some(2),
        ..tuned()
    };
    assert_eq!(
        warnings(&noisy),
        [
            "cpu_affinity",
            "cpu_quota",
            "hypervisor",
            "governor",
            "turbo",
            "smt",
            "numa",
            "load",
            "memory",
            "clocksource",
            "perf_event_paranoid"
        ]
    );
    let all = checks(&noisy);
    for check in all.iter().filter(|c| c.severity == Severity::Warn) {
        assert!(check.fix.is_some(), "{check}");
    }
    assert_eq!(
        find(&all, "governor").finding,
        "powersave on 8 of 8 CPUs: clock speed follows load, adding noise"
    );
    assert_eq!(
        find(&all, "governor").fix.as_deref(),
        Some("sudo cpupower frequency-set -g performance")
    );
    assert_eq!(
        find(&all, "turbo").fix.as_deref(),
        Some("echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo")
    );
    assert!(find(&all, "smt").finding.contains("above N=4"));
    assert!(find(&all, "cpu_affinity").finding.contains("4 of 8"));
    assert!(
        find(&all, "clocksource")
            .fix
            .as_deref()
            .unwrap()
            .starts_with("echo tsc")
    );
    assert_eq!(
        find(&all, "perf_event_paranoid").fix.as_deref(),
        Some("sudo sysctl -w kernel.perf_event_paranoid=1")
    );
}

#[test]
fn mixed_governors_name_only_the_slow_ones_and_boost_fix_follows_driver() {
    let fp = Fingerprint {
        governor: Some("performance=6,schedutil=2".into()),
        turbo: Some(true),
        cpufreq_driver: Some("amd-pstate-epp".into()),
        ..tuned()
    };
    let all = checks(&fp);
    assert!(
        find(&all, "governor")
            .finding
            .starts_with("schedutil on 2 of 8 CPUs")
    );
    assert_eq!(
        find(&all, "turbo").fix.as_deref(),
        Some("echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost")
    );
}

#[test]
fn perf_paranoia_depends_on_privilege_and_level() {
    let at = |level: i32, capable: bool| {
        let fp = Fingerprint {
            perf_event_paranoid: Some(level),
            perfmon_capable: Some(capable),
            ..tuned()
        };
        find(&checks(&fp), "perf_event_paranoid").clone()
    };
    assert_eq!(at(2, true).severity, Severity::Ok);
    assert_eq!(at(3, false).severity, Severity::Warn);
    assert!(at(3, false).finding.contains("denied"));
    assert_eq!(at(1, false).severity, Severity::Info);
    assert_eq!(
        at(1, false).fix.as_deref(),
        Some("sudo sysctl -w kernel.perf_event_paranoid=-1")
    );
    assert_eq!(at(-1, false).severity, Severity::Ok);
}

#[test]
fn paravirtual_clocks_and_vms_without_cpufreq_are_information() {
    let vm = Fingerprint {
        hypervisor: Some("KVM".into()),
        clocksource: Some("kvm-clock".into()),
        governor: None,
        turbo: None,
        ..tuned()
    };
    let all = checks(&vm);
    assert_eq!(find(&all, "clocksource").severity, Severity::Info);
    assert_eq!(find(&all, "governor").severity, Severity::Info);
    assert!(find(&all, "governor").finding.contains("set by the host"));
    assert_eq!(find(&all, "turbo").severity, Severity::Info);
    assert_eq!(warnings(&vm), ["hypervisor"]);
}

#[test]
fn information_checks_report_what_is_set() {
    let fp = Fingerprint {
        thp: Some("always".into()),
        aslr: Some(2),
        isolated_cpus: Some("2-3".into()),
        nohz_full: Some("2-3".into()),
        mitigations: vec![
            ("mds".into(), "Not affected".into()),
            ("spec_store_bypass".into(), "Vulnerable".into()),
            (
                "spectre_v1".into(),
                "Mitigation: usercopy/swapgs barriers".into(),
            ),
            ("spectre_v2".into(), "Mitigation: Retpolines".into()),
        ],
        fs_type: Some("tmpfs".into()),
        fs_source: Some("tmpfs".into()),
        ..tuned()
    };
    let all = checks(&fp);
    assert_eq!(
        find(&all, "mitigations").finding,
        "active: spectre_v1, spectre_v2 (syscalls and context switches cost more); \
         unmitigated: spec_store_bypass"
    );
    for name in [
        "thp",
        "aslr",
        "isolated_cpus",
        "nohz_full",
        "mitigations",
        "filesystem",
    ] {
        assert_eq!(find(&all, name).severity, Severity::Info, "{name}");
    }
    assert_eq!(
        find(&all, "filesystem").finding,
        "/home/me/bench on tmpfs (tmpfs; rw,relatime); memory-backed: file workloads never reach a disk"
    );
    assert!(
        find(&all, "thp")
            .finding
            .starts_with("transparent hugepages always")
    );
}

#[test]
fn unreadable_fields_become_information_not_verdicts() {
    let all = checks(&Fingerprint::default());
    assert!(all.iter().all(|c| c.severity != Severity::Warn), "{all:#?}");
    assert!(find(&all, "smt").finding.contains("unknown"));
}

#[test]
fn load_warns_from_half_a_cpu_busy() {
    let at = |one: f64| {
        let fp = Fingerprint {
            loadavg: Some([one, 0.0, 0.0]),
            ..tuned()
        };
        find(&checks(&fp), "load").severity
    };
    assert_eq!(at(0.49), Severity::Ok);
    assert_eq!(at(0.5), Severity::Warn);
}

#[test]
fn checks_display_as_one_line_with_the_fix() {
    let check = Check::new("smt", Severity::Warn, "on").with_fix("echo off");
    assert_eq!(check.to_string(), "warn smt: on — fix: echo off");
    assert!(Severity::Warn > Severity::Info && Severity::Info > Severity::Ok);
}

#[test]
fn doctor_on_this_machine_gives_a_finding_for_every_check() {
    let fp = Fingerprint::capture(std::path::Path::new("."));
    let all: Vec<Check> = checks(&fp)
        .into_iter()
        .chain(crate::env::perf_checks(|c| {
            sys::die_with_parent(c);
        }))
        .collect();
    for check in &all {
        // Visible with --nocapture: what doctor would print here.
        println!("{check}");
        assert!(!check.finding.is_empty(), "{check:?}");
        if check.severity == Severity::Warn {
            assert!(check.fix.is_some(), "a warning without a fix: {check}");
        }
    }
}

/// Whether `check`'s finding starts with its own name (`perf_event_paranoid`,
/// `CPU affinity` for `cpu_affinity`), as a whole word, ignoring case.
fn repeats_its_name(check: &Check) -> bool {
    let finding = check.finding.to_ascii_lowercase();
    [check.name.clone(), check.name.replace('_', " ")]
        .iter()
        .any(|name| {
            finding
                .strip_prefix(name.as_str())
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
        })
}

/// Issue 13: `doctor` printed `perf_event_paranoid perf_event_paranoid 2` — the check's name,
/// then a finding that began with the name again (so did clocksource, governor, turbo, SMT,
/// load, ASLR, mitigations and every unreadable reading).
#[test]
fn no_finding_repeats_its_check_name() {
    let noisy = Fingerprint {
        allowed_cpus: Some("0-3".into()),
        cpu_quota: Some(2.0),
        hypervisor: Some("KVM".into()),
        governor: Some("powersave".into()),
        turbo: Some(true),
        smt: Some(true),
        threads_per_core: Some(2),
        cores: Some(4),
        numa_nodes: Some(2),
        loadavg: Some([1.5, 1.0, 0.5]),
        mem_available_kib: Some(1024 * 1024),
        clocksource: Some("hpet".into()),
        perf_event_paranoid: Some(2),
        aslr: Some(2),
        thp: Some("always".into()),
        isolated_cpus: Some("2-3".into()),
        nohz_full: Some("2-3".into()),
        mitigations: vec![("spectre_v2".into(), "Mitigation: Retpolines".into())],
        ..tuned()
    };
    let vm = Fingerprint {
        hypervisor: Some("KVM".into()),
        clocksource: Some("kvm-clock".into()),
        governor: None,
        turbo: None,
        perf_event_paranoid: Some(1),
        ..tuned()
    };
    let privileged = Fingerprint {
        perf_event_paranoid: Some(3),
        perfmon_capable: Some(true),
        ..tuned()
    };
    let mut seen = 0;
    for fp in [tuned(), noisy, vm, privileged, Fingerprint::default()] {
        for check in checks(&fp) {
            assert!(!repeats_its_name(&check), "{check}");
            seen += 1;
        }
    }
    use super::super::perf_support::{PerfProbe, TracefsProbe, judge_perf, judge_tracefs};
    let mut probed = crate::env::perf_checks(|c| {
        sys::die_with_parent(c);
    });
    for probe in [
        PerfProbe::Version("perf version 6.1.187".into()),
        PerfProbe::NotFound,
        PerfProbe::Failed("exit status: 1".into()),
    ] {
        probed.push(judge_perf(&probe, "sudo apt-get install linux-perf"));
    }
    for probe in [
        TracefsProbe::NotMounted { supported: true },
        TracefsProbe::NotMounted { supported: false },
        TracefsProbe::Denied {
            dir: "/sys/kernel/tracing".into(),
        },
        TracefsProbe::Events {
            dir: "/sys/kernel/tracing".into(),
            present: Default::default(),
        },
    ] {
        probed.extend(judge_tracefs(&probe));
    }
    for check in probed {
        assert!(!repeats_its_name(&check), "{check}");
    }
    assert!(seen > 50);
    let check = Check::new("clocksource", Severity::Ok, "clocksource tsc");
    assert!(repeats_its_name(&check));
}
