//! `scalelab doctor`: what on this machine will make numbers noisy, each with a one-line fix,
//! and whether the in-kernel tracers this binary carries load here (`--json`: `bpf_tracers`).

use std::process::ExitCode;

use std::io::Write;

use anyhow::Result;
use model::env::{self, Fingerprint, Severity};
use model::safe_text::printable;

pub fn run(json: bool) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let fp = Fingerprint::capture(&cwd);
    let mut checks = env::checks(&fp);
    checks.extend(lab::perf_checks());
    let bpf_tracers = lab::probe_bpf_tracers();
    checks.push(lab::bpf_tracers_check(&bpf_tracers));
    if json {
        let value = serde_json::json!({
            "fingerprint": fp,
            "checks": checks,
            "bpf_tracers": bpf_tracers,
        });
        model::safe_text::write_json(&mut crate::stdout::stdout(), &value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let line = format!(
        "{} · {} · {} CPUs ({}) · kernel {}",
        fp.hostname, fp.cpu_model, fp.online_cpus, fp.cpu_list, fp.kernel_release
    );
    let mut out = crate::stdout::stdout();
    writeln!(out, "{}", printable(&line))?;
    if let Some(topology) = &fp.topology {
        writeln!(out, "topology: {}", printable(&topology.summary()))?;
    }
    for c in &checks {
        let mark = match c.severity {
            Severity::Ok => "ok  ",
            Severity::Info => "info",
            Severity::Warn => "WARN",
        };
        writeln!(out, "{mark} {:<16} {}", c.name, printable(&c.finding))?;
        if let Some(fix) = &c.fix {
            if c.severity == Severity::Warn {
                writeln!(out, "     {:<16} fix: {fix}", "")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
