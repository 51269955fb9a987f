//! `scalelab serve`: the read-only dashboard (see `dashboard`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::ServeArgs;

pub fn run(_db: Option<&Path>, args: &ServeArgs) -> Result<ExitCode> {
    bail!("serve {}: not built yet", args.listen)
}
