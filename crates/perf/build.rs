//! Compiles the in-kernel off-CPU accounting (`bpf/offcpu.bpf.c`) to a BPF object with clang,
//! when clang and libbpf's headers are present, and sets `cfg(offcpu_bpf)`; without them the
//! crate builds without it and `--offcpu` uses the perf tracer (and says why).
//!
//! `SCALELAB_NO_BPF=1` builds without it on purpose (to test the fallback).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(offcpu_bpf)");
    println!("cargo::rerun-if-changed=bpf/offcpu.bpf.c");
    println!("cargo::rerun-if-env-changed=SCALELAB_NO_BPF");
    println!("cargo::rerun-if-env-changed=CLANG");
    if std::env::var_os("SCALELAB_NO_BPF").is_some_and(|v| v == "1") {
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("offcpu.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        println!(
            "cargo::warning=building without in-kernel off-CPU accounting: libbpf's headers are missing (apt install libbpf-dev)"
        );
        return;
    }
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall"])
        .arg(format!("-I/usr/include/{}-linux-gnu", arch()))
        .args(["-c", "bpf/offcpu.bpf.c", "-o"])
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo::rustc-cfg=offcpu_bpf"),
        Ok(s) => println!(
            "cargo::warning=building without in-kernel off-CPU accounting: {clang} failed on bpf/offcpu.bpf.c ({s})"
        ),
        Err(e) => println!(
            "cargo::warning=building without in-kernel off-CPU accounting: cannot run {clang} ({e}; apt install clang)"
        ),
    }
}

/// The target's architecture as Debian's multiarch include folder names it.
fn arch() -> String {
    match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") | Err(_) => "x86_64".to_string(),
        Ok(other) => other.to_string(),
    }
}
