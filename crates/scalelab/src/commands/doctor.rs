//! `scalelab doctor`: what on this machine will make numbers noisy, each with a one-line fix.

use std::process::ExitCode;

use anyhow::Result;
use lab::env::{self, Fingerprint, Severity};

pub fn run(json: bool) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let fp = Fingerprint::capture(&cwd);
    let mut checks = env::checks(&fp);
    checks.extend(env::perf_checks());
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "fingerprint": fp, "checks": checks })
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} · {} · {} CPUs ({}) · kernel {}",
        fp.hostname, fp.cpu_model, fp.online_cpus, fp.cpu_list, fp.kernel_release
    );
    for c in &checks {
        let mark = match c.severity {
            Severity::Ok => "ok  ",
            Severity::Info => "info",
            Severity::Warn => "WARN",
        };
        println!("{mark} {:<16} {}", c.name, c.finding);
        if let Some(fix) = &c.fix {
            if c.severity == Severity::Warn {
                println!("     {:<16} fix: {fix}", "");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
