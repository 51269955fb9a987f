//! How this process writes text for people: colour and table width, decided once at start
//! from `--color`, `--wide`, `NO_COLOR`, `TERM`, `COLUMNS` and whether stdout and stderr are
//! terminals (the rules are `present`'s: `ColorChoice`, `table_width`), then asked for by the
//! commands that print tables and by `main` for `error:`.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::OnceLock;

use present::{ColorChoice, Palette, TextOptions};

#[derive(Debug, Clone, Copy)]
struct Settings {
    stdout: TextOptions,
    stderr: Palette,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Decides colour and width for this process (the first call wins).
pub fn init(color: ColorChoice, wide: bool) {
    let no_color = std::env::var_os("NO_COLOR");
    let term = std::env::var_os("TERM");
    let columns: Option<OsString> = std::env::var_os("COLUMNS");
    let stdout_tty = std::io::stdout().is_terminal();
    let terminal_width = if stdout_tty {
        terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
    } else {
        None
    };
    let colour = |tty: bool| color.enabled(tty, no_color.as_deref(), term.as_deref());
    let _ = SETTINGS.set(Settings {
        stdout: TextOptions {
            palette: Palette::new(colour(stdout_tty)),
            width: present::table_width(wide, columns.as_deref(), terminal_width),
        },
        stderr: Palette::new(colour(std::io::stderr().is_terminal())),
    });
}

/// Colour and width for tables and text on stdout (plain before [`init`]).
pub fn stdout() -> TextOptions {
    SETTINGS.get().map(|s| s.stdout).unwrap_or_default()
}

/// The form `--format` and `--json` chose for a command's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    /// The results themselves as JSON.
    Json,
    /// For people: text, Markdown or CSV, through `present::Printer`.
    Printed(present::Format),
}

/// Prints a command's result on stdout in the form chosen: `value` itself as JSON, or what
/// `write` makes of it through a [`present::Printer`] (text, Markdown or CSV).
pub fn print_result<T: serde::Serialize>(
    chosen: Chosen,
    value: &T,
    write: impl FnOnce(&mut present::Printer<'_>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = crate::stdout::stdout();
    match chosen {
        Chosen::Json => model::safe_text::write_json(&mut out, value)?,
        Chosen::Printed(format) => {
            let mut p = printer(&mut out, format);
            write(&mut p)?;
            p.finish()?;
        }
    }
    Ok(())
}

/// A printer of `format` on `out` ([`present::Printer`], the output seam), with this
/// process's colour and width for text.
pub fn printer(out: &mut dyn std::io::Write, format: present::Format) -> present::Printer<'_> {
    present::Printer::new(out, format, &stdout())
}

/// The palette for stderr: `error:` and `warning:` labels (plain before [`init`]).
pub fn stderr() -> Palette {
    SETTINGS.get().map(|s| s.stderr).unwrap_or_default()
}

/// The colour clap's own messages (usage errors, help) use: `--color` as given on the command
/// line, read before clap parses it (its errors come before the parse), the last one winning;
/// `auto` otherwise (clap's `auto` honours `NO_COLOR` and terminals).
pub fn clap_color(args: impl IntoIterator<Item = OsString>) -> clap::ColorChoice {
    let mut choice = clap::ColorChoice::Auto;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = match arg.to_str() {
            Some("--") => break,
            Some("--color") => args.next(),
            Some(a) => a.strip_prefix("--color=").map(OsString::from),
            None => None,
        };
        match value.as_ref().and_then(|v| v.to_str()) {
            Some("always") => choice = clap::ColorChoice::Always,
            Some("never") => choice = clap::ColorChoice::Never,
            Some("auto") => choice = clap::ColorChoice::Auto,
            _ => {}
        }
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(args: &[&str]) -> clap::ColorChoice {
        clap_color(args.iter().map(OsString::from))
    }

    #[test]
    fn clap_messages_follow_the_color_flag_given() {
        assert_eq!(
            choice(&["scalelab", "run", "--bogus"]),
            clap::ColorChoice::Auto
        );
        assert_eq!(
            choice(&["scalelab", "--color", "never", "x"]),
            clap::ColorChoice::Never
        );
        assert_eq!(
            choice(&["scalelab", "--color=always", "x"]),
            clap::ColorChoice::Always
        );
        assert_eq!(
            choice(&["scalelab", "--color=always", "--color", "never"]),
            clap::ColorChoice::Never
        );
        // After `--` it is a command's argument, not scalelab's.
        assert_eq!(
            choice(&["scalelab", "run", "--", "--color=always"]),
            clap::ColorChoice::Auto
        );
    }
}
