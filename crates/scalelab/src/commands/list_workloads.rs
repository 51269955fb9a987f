//! `scalelab list`: every built-in workload with its op, parameters and the path it stresses.

use std::process::ExitCode;

use std::io::Write;

use anyhow::Result;
use serde_json::json;

pub fn run(json: bool) -> Result<ExitCode> {
    let workloads = lab::workload_infos();
    let mut out = crate::stdout::stdout();
    if json {
        let list: Vec<_> = workloads
            .map(|i| {
                json!({
                    "name": i.name, "op": i.op, "stresses": i.stresses,
                    "params": i.params.iter().map(|p| json!({"name": p.name, "default": p.default, "accepts": p.kind.to_string(), "help": p.help})).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for i in workloads {
        writeln!(out, "{}", i.name)?;
        writeln!(out, "    op:        {}", i.op)?;
        writeln!(out, "    stresses:  {}", i.stresses)?;
        let width = i
            .params
            .iter()
            .map(|p| p.name.len() + p.default.len() + 1)
            .max()
            .unwrap_or(0);
        for p in i.params {
            let pair = format!("{}={}", p.name, p.default);
            writeln!(out, "    -p {pair:<width$}  {} ({})", p.help, p.kind)?;
        }
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}
