//! `scalelab help [COMMAND…]`: the same page as `scalelab COMMAND… --help` (clap's own `help`
//! subcommand refused `scalelab help --help`; this one is an ordinary subcommand with a help
//! of its own).

use std::process::ExitCode;

use anyhow::Result;

use crate::clap_command;

pub fn run(command: &[String]) -> Result<ExitCode> {
    let args = std::iter::once("scalelab")
        .chain(command.iter().map(String::as_str))
        .chain(std::iter::once("--help"));
    // Prints the page and exits 0, or exits 2 naming a subcommand that does not exist.
    match clap_command::command().try_get_matches_from(args) {
        Err(err) => err.exit(),
        Ok(_) => unreachable!("--help always ends parsing"),
    }
}
