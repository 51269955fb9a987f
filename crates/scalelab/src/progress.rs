//! The one progress display of `run` and `ab`: a bar on stderr (only on a terminal, never with
//! `--quiet`), a line per failed trial, and the warnings and notes the run's owner reports.
//! Tables and JSON go to stdout elsewhere; nothing here touches stdout.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::lifecycle::{Progress, Replan, TrialLabel, failure};
use model::number_text::percent;
use model::record::TrialRecord;
use model::safe_text::{printable, printable_lines};

/// Progress on stderr for a terminal user.
#[derive(Debug)]
pub struct TerminalProgress {
    bar: ProgressBar,
    quiet: bool,
    /// What the bar and the notes call an experiment of several runs (`ab`, `bisect`); `None`
    /// for a plain run, which the bar calls by its id.
    name: Option<&'static str>,
}

impl TerminalProgress {
    /// `ab`: the bar says `ab` instead of the run id; `quiet`: only warnings are printed.
    pub fn new(quiet: bool, ab: bool) -> TerminalProgress {
        TerminalProgress {
            bar: ProgressBar::hidden(),
            quiet,
            name: ab.then_some("ab"),
        }
    }

    /// Progress of an experiment the bar calls `name` (`bisect`).
    pub fn named(quiet: bool, name: &'static str) -> TerminalProgress {
        TerminalProgress {
            bar: ProgressBar::hidden(),
            quiet,
            name: Some(name),
        }
    }

    /// Clears the bar (before the results are printed, or on an error).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }
}

impl Progress for TerminalProgress {
    fn begun(&mut self, runs: &[i64], trials: usize) {
        if self.quiet || !std::io::stderr().is_terminal() {
            return;
        }
        let name = match self.name {
            Some(name) => name.to_string(),
            None => {
                let ids: Vec<String> = runs.iter().map(ToString::to_string).collect();
                format!("run {}", ids.join(","))
            }
        };
        let bar = ProgressBar::with_draw_target(Some(trials as u64), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} trials, {elapsed} elapsed, ~{eta} left · {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name);
        self.bar = bar;
    }

    fn trial_started(&mut self, trial: &TrialLabel) {
        self.bar.set_message(trial.to_string());
    }

    fn trial_finished(&mut self, trial: &TrialLabel, record: &TrialRecord) {
        self.bar.inc(1);
        if let Some(reason) = failure(record) {
            let side = trial.side.map(|s| format!("{s} ")).unwrap_or_default();
            self.say(&format!(
                "trial {side}N={} #{} failed: {}",
                trial.n,
                trial.index + 1,
                printable_lines(reason)
            ));
        }
    }

    fn replanned(&mut self, replan: &Replan) {
        self.bar.set_length(replan.trials as u64);
        if !self.quiet {
            let ns: Vec<String> = replan.undecided.iter().map(ToString::to_string).collect();
            // A bisection's trials come in groups of three (good, commit, bad); ab's in pairs.
            let (name, unit) = match self.name {
                Some("bisect") => ("bisect", "groups"),
                _ => ("ab", "pairs"),
            };
            self.say(&format!(
                "{name}: {} {unit} cannot yet tell ±{} from no change at N={}; adding {unit} up \
                 to {} (--max-runs {})",
                replan.pairs,
                percent(replan.threshold),
                ns.join(","),
                replan.more,
                replan.max_runs
            ));
        }
    }

    fn warning(&mut self, text: &str) {
        self.say(&format!(
            "{} {}",
            crate::output::stderr().warning(),
            printable(text)
        ));
    }

    fn note(&mut self, text: &str) {
        if !self.quiet {
            self.say(&printable_lines(text));
        }
    }
}
