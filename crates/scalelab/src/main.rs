//! The `scalelab` binary: parses arguments, dispatches to one command module each, and turns
//! errors into `error: …` on stderr with exit status 2 (1 is reserved for "regression found").

mod cli;
mod commands;
mod db_path;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            // Errors quote names and values from files and databases: escaped, never raw.
            let text = format!("{err:#}");
            eprintln!("error: {}", lab::report::format::printable_lines(&text));
            ExitCode::from(2)
        }
    }
}
