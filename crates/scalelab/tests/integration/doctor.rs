//! `scalelab doctor` on this machine: the in-kernel tracers the binary carries, and whether this
//! kernel loads them.

use crate::common::{Lab, parse};

/// Issue 53: the BPF objects are committed beside their source and embedded, so every x86_64
/// build carries both in-kernel tracers, whatever compiler the build machine had; `doctor`
/// load-tests them. As root on a kernel with BTF they load; where they cannot, the reason is
/// given (and the test fails where `SCALELAB_REQUIRE_BPF` is set, as in CI).
#[test]
fn doctor_says_both_in_kernel_tracers_are_carried_and_load_here() {
    let lab = Lab::new();
    let args = ["doctor", "--json"];
    let doctor = parse(&args, &lab.ok(&args));
    let tracers = doctor["bpf_tracers"]
        .as_array()
        .unwrap_or_else(|| panic!("no bpf_tracers: {doctor}"));
    let names: Vec<&str> = tracers
        .iter()
        .filter_map(|t| t["tracer"].as_str())
        .collect();
    assert_eq!(names, ["offcpu", "locks"], "{doctor}");
    let check = doctor["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "bpf_tracers"))
        .unwrap_or_else(|| panic!("no bpf_tracers check: {doctor}"));
    if !cfg!(target_arch = "x86_64") || option_env!("SCALELAB_NO_BPF") == Some("1") {
        assert!(tracers.iter().all(|t| t["carried"] == false), "{doctor}");
        return;
    }
    for t in tracers {
        assert_eq!(t["carried"], true, "{t}");
        if t["loads"] == false {
            let reason = t["reason"].as_str().unwrap_or_default();
            assert!(
                !reason.is_empty(),
                "a tracer that does not load says why: {t}"
            );
            assert!(
                std::env::var_os("SCALELAB_REQUIRE_BPF").is_none(),
                "SCALELAB_REQUIRE_BPF is set and {} does not load: {reason}",
                t["tracer"]
            );
            assert_eq!(check["severity"], "Warn", "{check}");
            eprintln!("skipped: {} does not load here: {reason}", t["tracer"]);
            return;
        }
        assert_eq!(t["reason"], serde_json::Value::Null, "{t}");
    }
    assert_eq!(check["severity"], "Ok", "{check}");
    assert_eq!(
        check["finding"],
        "this binary carries the in-kernel tracers (off-CPU, locks) and this kernel loads them"
    );
}
