//! One module per subcommand; `dispatch` routes the parsed CLI to it.

mod ab;
mod agent;
mod bisect;
mod compare;
mod completions;
mod doctor;
mod explain;
mod guard;
mod help;
mod history;
mod list_workloads;
mod locks;
mod ls_runs;
mod model;
mod profile;
mod push;
mod queue;
mod report;
mod run;
mod serve;
mod show;
mod submit;
mod transfer;
mod trial;

use std::process::ExitCode;

use anyhow::Result;

use crate::arguments::{Cli, Command};

pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    let db = cli.db.as_deref();
    match cli.command {
        Command::List { output } => list_workloads::run(output.json()),
        Command::Run(args) => run::run(db, args),
        Command::Ls(args) => ls_runs::run(db, &args),
        Command::Show { run, output } => show::run(db, &run, output.chosen()),
        Command::Compare(args) => compare::run(db, &args),
        Command::Ab(args) => ab::run(db, args),
        Command::Bisect(args) => bisect::run(db, args),
        Command::Model(args) => model::run(db, &args),
        Command::Export { run, format } => transfer::export(db, &run, format),
        Command::Import { files } => transfer::import(db, &files),
        Command::Doctor { output } => doctor::run(output.json()),
        Command::History(args) => history::run(db, &args),
        Command::Explain(args) => explain::run(db, &args),
        Command::Locks(args) => locks::run(db, &args),
        Command::Profile(args) => profile::run(db, &args),
        Command::Report(args) => report::run(db, &args),
        Command::Completions { target, dir } => completions::run(target, dir.as_deref()),
        Command::Push(args) => push::run(db, &args),
        Command::Serve(args) => serve::run(db, &args),
        Command::Submit(args) => submit::run(db, &args),
        Command::Queue(args) => queue::run(db, &args),
        Command::Agent(args) => agent::run(db, &args),
        Command::Help { command } => help::run(&command),
        Command::Trial => trial::run(),
        Command::Guard { owner } => guard::run(&owner),
    }
}
