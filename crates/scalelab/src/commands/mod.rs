//! One module per subcommand; `dispatch` routes the parsed CLI to it.

mod doctor;
mod list;
mod ls;
mod run;
mod show;
mod transfer;
mod trial;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    let db = cli.db.as_deref();
    match cli.command {
        Command::List { json } => list::run(json),
        Command::Run(args) => run::run(db, args),
        Command::Ls(args) => ls::run(db, &args),
        Command::Show { run, json } => show::run(db, &run, json),
        Command::Export { run, format } => transfer::export(db, &run, format),
        Command::Import { file } => transfer::import(db, &file),
        Command::Doctor { json } => doctor::run(json),
        Command::Trial => trial::run(),
    }
}

/// Splits repeated `KEY=VAL` arguments, naming the flag in the error.
fn pairs(flag: &str, values: &[String]) -> Result<Vec<(String, String)>> {
    values
        .iter()
        .map(|v| lab::params::split_pair(v).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .collect()
}
