//! Compiles the in-kernel tracers to BPF objects with clang, when clang and libbpf's headers
//! are present: the off-CPU accounting (`bpf/offcpu.bpf.c`, sets `cfg(offcpu_bpf)`) and the
//! lock waits (`bpf/locks.bpf.c`, sets `cfg(locks_bpf)`). Without them the crate builds
//! without it, and `--offcpu` and `--locks` use the perf tracers (and say why).
//!
//! `SCALELAB_NO_BPF=1` builds without it on purpose (to test the fallback).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(offcpu_bpf)");
    println!("cargo::rustc-check-cfg=cfg(locks_bpf)");
    println!("cargo::rerun-if-changed=bpf/offcpu.bpf.c");
    println!("cargo::rerun-if-changed=bpf/locks.bpf.c");
    println!("cargo::rerun-if-changed=bpf/sampling.h");
    println!("cargo::rerun-if-changed=bpf/user_stack.h");
    println!("cargo::rerun-if-changed=bpf/records.h");
    println!("cargo::rerun-if-changed=bpf/self_cost.h");
    println!("cargo::rerun-if-env-changed=SCALELAB_NO_BPF");
    println!("cargo::rerun-if-env-changed=CLANG");
    if std::env::var_os("SCALELAB_NO_BPF").is_some_and(|v| v == "1") {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        println!(
            "cargo::warning=building without the in-kernel tracers: libbpf's headers are missing (apt install libbpf-dev)"
        );
        watch_for_the_tools();
        return;
    }
    // -mcpu=v3: compare-and-swap (the lock totals, an episode's END written once; kernels
    // from 5.12).
    for (name, cfg) in [("offcpu", "offcpu_bpf"), ("locks", "locks_bpf")] {
        let source = format!("bpf/{name}.bpf.c");
        let object = out.join(format!("{name}.bpf.o"));
        let status = Command::new(&clang)
            .args(["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall"])
            .arg(format!("-I/usr/include/{}-linux-gnu", arch()))
            .args(["-c", &source, "-o"])
            .arg(&object)
            .status();
        match status {
            Ok(s) if s.success() => println!("cargo::rustc-cfg={cfg}"),
            Ok(s) => println!(
                "cargo::warning=building without the in-kernel {name} tracer: {clang} failed on {source} ({s})"
            ),
            Err(e) => {
                println!(
                    "cargo::warning=building without the in-kernel {name} tracer: cannot run {clang} ({e}; apt install clang)"
                );
                watch_for_the_tools();
            }
        }
    }
}

/// Built without the tracers for want of clang or libbpf's headers: installing them must make
/// the next build compile the tracers (scalelab's fallback note says "install … and rebuild"),
/// but cargo reruns this script only when a path it was told of changes. Installing a package
/// changes the folders it adds files to: `/usr/bin` (clang) and `/usr/include` (the `bpf`
/// folder). A path that does not exist would rerun the script at every build, so only folders
/// that exist are named.
fn watch_for_the_tools() {
    for folder in ["/usr/bin", "/usr/include", "/usr/local/bin"] {
        if Path::new(folder).is_dir() {
            println!("cargo::rerun-if-changed={folder}");
        }
    }
}

/// The target's architecture as Debian's multiarch include folder names it.
fn arch() -> String {
    match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") | Err(_) => "x86_64".to_string(),
        Ok(other) => other.to_string(),
    }
}
