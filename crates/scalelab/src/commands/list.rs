//! `scalelab list`: every built-in workload with its op, parameters and the path it stresses.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

pub fn run(json: bool) -> Result<ExitCode> {
    let workloads = lab::workloads::all();
    if json {
        let list: Vec<_> = workloads
            .iter()
            .map(|w| {
                let i = w.info();
                json!({
                    "name": i.name, "op": i.op, "stresses": i.stresses,
                    "params": i.params.iter().map(|p| json!({"name": p.name, "default": p.default, "accepts": p.kind.to_string(), "help": p.help})).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    for w in workloads {
        let i = w.info();
        println!("{}", i.name);
        println!("    op:        {}", i.op);
        println!("    stresses:  {}", i.stresses);
        let width = i
            .params
            .iter()
            .map(|p| p.name.len() + p.default.len() + 1)
            .max()
            .unwrap_or(0);
        for p in i.params {
            let pair = format!("{}={}", p.name, p.default);
            println!("    -p {pair:<width$}  {} ({})", p.help, p.kind);
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
