//! `scalelab completions SHELL|man`: shell completions (`clap_complete`) or the manual pages
//! (`clap_mangen`, roff), all generated from the one clap definition, so they never drift from
//! the arguments.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Command;
use clap_complete::Shell;
use clap_mangen::Man;

use crate::arguments::CompletionTarget;
use crate::{clap_command, stdout};

pub fn run(target: CompletionTarget, dir: Option<&Path>) -> Result<ExitCode> {
    let mut cmd = clap_command::command();
    let shell = match (target, dir) {
        (CompletionTarget::Man, Some(dir)) => {
            cmd.build();
            write_pages(&cmd, dir)?;
            return Ok(ExitCode::SUCCESS);
        }
        (CompletionTarget::Man, None) => {
            let mut out = stdout::stdout();
            Man::new(cmd)
                .render(&mut out)
                .context("writing the man page")?;
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
        (_, Some(_)) => {
            bail!("--dir applies to `man` only; a shell's completions go to stdout (redirect them)")
        }
        (CompletionTarget::Bash, None) => Shell::Bash,
        (CompletionTarget::Zsh, None) => Shell::Zsh,
        (CompletionTarget::Fish, None) => Shell::Fish,
        (CompletionTarget::Elvish, None) => Shell::Elvish,
        (CompletionTarget::Powershell, None) => Shell::PowerShell,
    };
    let mut out = stdout::stdout();
    clap_complete::generate(shell, &mut cmd, "scalelab", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd` (built, so a subcommand is named `scalelab-run`) and of each visible
/// subcommand, into `dir`: never through a link (see `sys::owned_dir::create_output`).
fn write_pages(cmd: &Command, dir: &Path) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let man = Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    let shown = path.display();
    let mut file =
        sys::owned_dir::create_output(&path).with_context(|| format!("--dir: writing {shown}"))?;
    man.render(&mut file)
        .with_context(|| format!("--dir: writing {shown}"))?;
    eprintln!("wrote {shown}");
    Ok(())
}
