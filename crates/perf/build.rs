//! Embeds the in-kernel tracers' committed BPF objects: the off-CPU accounting
//! (`bpf/offcpu.bpf.o`, sets `cfg(offcpu_bpf)`) and the lock waits (`bpf/locks.bpf.o`, sets
//! `cfg(locks_bpf)`). They are compiled from their C source beside them by
//! `bpf/build-objects` (the pinned clang; CI checks they match): building scalelab needs no
//! compiler for them, and this script runs none.
//!
//! Without them (`SCALELAB_NO_BPF=1`, to test the fallback, or a target other than x86_64,
//! whose registers the programs read) it sets `SCALELAB_BPF_ABSENT` to why, and `--offcpu` and
//! `--locks` use the perf tracers (and say why).

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(offcpu_bpf)");
    println!("cargo::rustc-check-cfg=cfg(locks_bpf)");
    println!("cargo::rerun-if-changed=bpf/offcpu.bpf.o");
    println!("cargo::rerun-if-changed=bpf/locks.bpf.o");
    println!("cargo::rerun-if-env-changed=SCALELAB_NO_BPF");
    let absent = if std::env::var_os("SCALELAB_NO_BPF").is_some_and(|v| v == "1") {
        Some("it was built with SCALELAB_NO_BPF=1".to_string())
    } else {
        match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
            Ok("x86_64") => None,
            Ok(other) => Some(format!(
                "its programs read x86_64's registers, and this build is for {other}"
            )),
            Err(_) => Some("cargo named no target architecture".to_string()),
        }
    };
    if let Some(why) = absent {
        println!("cargo::rustc-env=SCALELAB_BPF_ABSENT={why}");
        return;
    }
    for (name, cfg) in [("offcpu", "offcpu_bpf"), ("locks", "locks_bpf")] {
        let object = format!("bpf/{name}.bpf.o");
        assert!(
            Path::new(&object).is_file(),
            "crates/perf/{object} is missing: it is committed beside its source (git checkout it, or rebuild it with crates/perf/bpf/build-objects)"
        );
        println!("cargo::rustc-cfg={cfg}");
    }
}
