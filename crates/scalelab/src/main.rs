//! The `scalelab` binary: parses arguments, dispatches to one command module each, and turns
//! errors into `error: …` on stderr with exit status 2 (1 is reserved for "regression found",
//! 130 for a run stopped by Ctrl-C or SIGTERM; `help_text::TOP` lists them).

mod arguments;
mod clap_command;
mod commands;
mod db_path;
mod help_text;
mod job_args;
mod measure;
mod output;
mod progress;
mod queue_lines;
mod stdout;
mod stop_signal;

use std::process::ExitCode;

use clap::FromArgMatches;

fn main() -> ExitCode {
    // clap's own errors and help come before `--color` is parsed: it is read from argv first.
    let color = output::clap_color(std::env::args_os());
    let matches = clap_command::command().color(color).get_matches();
    let cli = match arguments::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.format(&mut clap_command::command().color(color)).exit(),
    };
    output::init(cli.color.into(), cli.wide);
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            // Errors quote names and values from files and databases: escaped, never raw.
            let text = in_flag_terms(&err);
            eprintln!(
                "{} {}",
                output::stderr().error(),
                model::safe_text::printable_lines(&text)
            );
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, as `{:#}` prints them, except that a configuration
/// field the engine names is called by the flag that sets it.
fn in_flag_terms(err: &anyhow::Error) -> String {
    err.chain()
        .map(|e| match e.downcast_ref::<lab::LabError>() {
            Some(lab::LabError::Invalid { field, reason }) => {
                format!("{}: {reason}", arguments::flag(*field))
            }
            _ => e.to_string(),
        })
        .collect::<Vec<_>>()
        .join(": ")
}
