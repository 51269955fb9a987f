//! The `bpf_tracers` check of `scalelab doctor`: which in-kernel tracers this binary carries
//! (off-CPU, locks) and whether this kernel loads them. Probing is a real load test of each
//! ([`perf::BpfOffCpuTracer::load_test`], [`perf::BpfLockTracer::load_test`]: every program
//! loaded into the kernel, attached, detached and dropped; it traces nothing); judging is a pure
//! function of what the probes found, tested without the machine. Where a tracer is missing or
//! does not load, `--offcpu`, `--locks` and `--explain` fall back to the perf tracers, at
//! several times the overhead (bench/README.md).

use std::path::Path;

use model::env::{Check, Severity};
use perf_read::error::PerfError;
use serde::Serialize;

const NAME: &str = "bpf_tracers";
/// Where the kernel's BTF is read from (what `tp_btf` programs and CO-RE need).
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// One in-kernel tracer as `doctor` found it (`doctor --json`'s `bpf_tracers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BpfTracerStatus {
    /// `offcpu` or `locks`.
    pub tracer: &'static str,
    /// Whether this binary holds its BPF object.
    pub carried: bool,
    /// Whether this kernel loaded and attached each of its programs just now.
    pub loads: bool,
    /// Why not, when it does not load (or is not carried).
    pub reason: Option<String>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl BpfTracerStatus {
    /// The tracer's name in a sentence.
    fn label(&self) -> &'static str {
        match self.tracer {
            "offcpu" => "off-CPU",
            other => other,
        }
    }
}

/// Load-tests each in-kernel tracer on this kernel (well under a second each).
pub fn probe_bpf_tracers() -> Vec<BpfTracerStatus> {
    let here = Here {
        btf: Path::new(KERNEL_BTF).exists(),
        root: sys::owned_dir::euid() == 0,
    };
    vec![
        status(
            "offcpu",
            perf::BpfOffCpuTracer::built(),
            perf::BpfOffCpuTracer::load_test(),
            here,
        ),
        status(
            "locks",
            perf::BpfLockTracer::built(),
            perf::BpfLockTracer::load_test(),
            here,
        ),
    ]
}

/// What the reason of a failed load test depends on besides its error.
#[derive(Debug, Clone, Copy)]
struct Here {
    /// The kernel's BTF is there.
    btf: bool,
    /// scalelab runs as root.
    root: bool,
}

/// A tracer's status from its load test: the reason named by its likeliest cause (not
/// carried, no BTF, not root), the error's own words after it.
fn status(
    tracer: &'static str,
    carried: bool,
    loaded: Result<(), PerfError>,
    here: Here,
) -> BpfTracerStatus {
    let (reason, fix) = match loaded {
        Ok(()) => (None, None),
        Err(e) => {
            let (words, fix) = match e {
                PerfError::Bpf { what, cause, fix } => (format!("{what}: {cause}"), fix),
                other => (other.to_string(), String::new()),
            };
            let (reason, fix) = if !carried {
                (
                    words,
                    "rebuild scalelab without SCALELAB_NO_BPF=1".to_string(),
                )
            } else if !here.btf {
                (
                    format!("this kernel has no BTF ({KERNEL_BTF} is missing)"),
                    "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y".to_string(),
                )
            } else if !here.root {
                (
                    format!("not root; {words}"),
                    "run as root (or with CAP_BPF and CAP_PERFMON)".to_string(),
                )
            } else {
                (words, fix)
            };
            (Some(reason), (!fix.is_empty()).then_some(fix))
        }
    };
    BpfTracerStatus {
        tracer,
        carried,
        loads: reason.is_none(),
        reason,
        fix,
    }
}

/// The verdict: ok where every tracer is carried and loads, else a warning naming each one's
/// reason and the first fix.
pub fn bpf_tracers_check(tracers: &[BpfTracerStatus]) -> Check {
    let labels = |f: &dyn Fn(&BpfTracerStatus) -> bool| -> Vec<&str> {
        tracers
            .iter()
            .filter(|t| f(t))
            .map(BpfTracerStatus::label)
            .collect()
    };
    let loading = labels(&|t| t.loads);
    if loading.len() == tracers.len() {
        return Check {
            name: NAME.to_string(),
            severity: Severity::Ok,
            finding: format!(
                "this binary carries the in-kernel tracers ({}) and this kernel loads them",
                loading.join(", ")
            ),
            fix: None,
        };
    }
    let failing: Vec<String> = tracers
        .iter()
        .filter(|t| !t.loads)
        .map(|t| {
            let state = if t.carried {
                "carried, does not load"
            } else {
                "not carried"
            };
            let reason = t.reason.as_deref().unwrap_or("no reason given");
            format!("{}: {state} ({reason})", t.label())
        })
        .collect();
    let fine = if loading.is_empty() {
        String::new()
    } else {
        format!("; {} loads", loading.join(", "))
    };
    Check {
        name: NAME.to_string(),
        severity: Severity::Warn,
        finding: format!(
            "{}{fine}: --offcpu, --locks and --explain use the perf tracers there instead, at several times the overhead",
            failing.join("; ")
        ),
        fix: tracers.iter().find_map(|t| t.fix.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(what: &str, cause: &str) -> Result<(), PerfError> {
        Err(PerfError::Bpf {
            what: what.into(),
            cause: cause.into(),
            fix: "the error's own fix".into(),
        })
    }

    const ROOT_WITH_BTF: Here = Here {
        btf: true,
        root: true,
    };

    #[test]
    fn both_tracers_carried_and_loading_is_ok() {
        let tracers = [
            status("offcpu", true, Ok(()), ROOT_WITH_BTF),
            status("locks", true, Ok(()), ROOT_WITH_BTF),
        ];
        assert!(tracers.iter().all(|t| t.loads && t.reason.is_none()));
        let c = bpf_tracers_check(&tracers);
        assert_eq!(c.severity, Severity::Ok);
        assert_eq!(
            c.finding,
            "this binary carries the in-kernel tracers (off-CPU, locks) and this kernel loads them"
        );
        assert_eq!(c.fix, None);
    }

    #[test]
    fn a_refused_load_is_named_by_its_cause_no_btf_before_not_root() {
        let eperm = || refused("loading on_switch", "Operation not permitted (os error 1)");
        let user = Here {
            btf: true,
            root: false,
        };
        let t = status("offcpu", true, eperm(), user);
        assert!(!t.loads);
        assert_eq!(
            t.reason.as_deref(),
            Some("not root; loading on_switch: Operation not permitted (os error 1)")
        );
        assert_eq!(
            t.fix.as_deref(),
            Some("run as root (or with CAP_BPF and CAP_PERFMON)")
        );
        let no_btf = Here {
            btf: false,
            root: false,
        };
        let t = status("offcpu", true, eperm(), no_btf);
        assert_eq!(
            t.reason.as_deref(),
            Some("this kernel has no BTF (/sys/kernel/btf/vmlinux is missing)")
        );
        // As root with BTF, the error's own words and fix.
        let t = status("locks", true, eperm(), ROOT_WITH_BTF);
        assert_eq!(
            t.reason.as_deref(),
            Some("loading on_switch: Operation not permitted (os error 1)")
        );
        assert_eq!(t.fix.as_deref(), Some("the error's own fix"));
    }

    #[test]
    fn a_tracer_left_out_of_the_build_says_so_and_how_to_rebuild() {
        let absent = || {
            refused(
                "this scalelab was built without it",
                "it was built with SCALELAB_NO_BPF=1",
            )
        };
        let tracers = [
            status("offcpu", false, absent(), ROOT_WITH_BTF),
            status("locks", true, Ok(()), ROOT_WITH_BTF),
        ];
        let c = bpf_tracers_check(&tracers);
        assert_eq!(c.severity, Severity::Warn);
        assert_eq!(
            c.finding,
            "off-CPU: not carried (this scalelab was built without it: it was built with SCALELAB_NO_BPF=1); locks loads: --offcpu, --locks and --explain use the perf tracers there instead, at several times the overhead"
        );
        assert_eq!(
            c.fix.as_deref(),
            Some("rebuild scalelab without SCALELAB_NO_BPF=1")
        );
    }
}
