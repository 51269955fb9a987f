//! `scalelab completions SHELL|man`: shell completions (`clap_complete`) or the manual page
//! (`clap_mangen`, roff), both generated from the one clap definition, so they never drift
//! from the arguments.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap_complete::Shell;

use crate::cli::CompletionTarget;
use crate::{help, stdout};

pub fn run(target: CompletionTarget) -> Result<ExitCode> {
    let mut cmd = help::command();
    let mut out = stdout::stdout();
    let shell = match target {
        CompletionTarget::Bash => Shell::Bash,
        CompletionTarget::Zsh => Shell::Zsh,
        CompletionTarget::Fish => Shell::Fish,
        CompletionTarget::Elvish => Shell::Elvish,
        CompletionTarget::Powershell => Shell::PowerShell,
        CompletionTarget::Man => {
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .context("writing the man page")?;
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    clap_complete::generate(shell, &mut cmd, "scalelab", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
