//! `scalelab __trial`: the trial child. Reads a `TrialSpec` as JSON on stdin, runs it, writes the
//! `TrialMeasurement` as JSON on stdout. Errors go to stderr; the parent records them.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use lab::runner::{TrialSpec, run_trial};

pub fn run() -> Result<ExitCode> {
    // Under `perf record` this process's parent is perf, not scalelab: it must arm its own
    // parent-death signal (and check that scalelab still runs).
    if let Err(why) = lab::die_with_owner() {
        eprintln!("{why}");
        return Ok(ExitCode::from(3));
    }
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .context("reading the trial spec from stdin")?;
    let spec: TrialSpec = serde_json::from_slice(&input).context("decoding the trial spec")?;
    match run_trial(&spec) {
        Ok(measurement) => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer(&mut out, &measurement).context("writing the measurement")?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(ExitCode::from(3))
        }
    }
}
