//! The one palette of scalelab's terminal text (STYLE §8): what is coloured — verdicts
//! (REGRESSED red, IMPROVED green, INCONCLUSIVE yellow, NO CHANGE plain), the `warning:` label
//! yellow, the `error:` label red — and when: [`ColorChoice`] with whether the stream is a
//! terminal, `NO_COLOR` (<https://no-color.org>: any non-empty value turns colour off for
//! `auto`) and `TERM=dumb`.
//!
//! Text written to a pipe or a file never carries an escape unless `--color always` asks for
//! one. Lines are painted with `anstyle`; table cells are painted by comfy-table after it has
//! measured them, so coloured cells keep their alignment.

use std::ffi::OsStr;

use anstyle::{AnsiColor, Style};
use stats::Verdict;

/// When to colour: the `--color` flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not
    /// `dumb`.
    #[default]
    Auto,
    /// Always colour, even into a pipe or a file (`NO_COLOR` does not override the flag).
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether text for a stream gets colour: `is_terminal` tells whether the stream is a
    /// terminal, `no_color` and `term` are the values of `NO_COLOR` and `TERM`.
    pub fn enabled(
        self,
        is_terminal: bool,
        no_color: Option<&OsStr>,
        term: Option<&OsStr>,
    ) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal
                    && no_color.is_none_or(OsStr::is_empty)
                    && term != Some(OsStr::new("dumb"))
            }
        }
    }
}

/// What a piece of text means, and so its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A regression: red.
    Regressed,
    /// An improvement: green.
    Improved,
    /// The data cannot tell: yellow.
    Inconclusive,
    /// The `warning:` label: yellow.
    Warning,
    /// The `error:` label: bold red.
    Error,
}

impl Role {
    /// The role of a verdict; `None` for NO CHANGE, which stays plain.
    pub fn of_verdict(verdict: Verdict) -> Option<Role> {
        match verdict {
            Verdict::Regressed => Some(Role::Regressed),
            Verdict::Improved => Some(Role::Improved),
            Verdict::Inconclusive => Some(Role::Inconclusive),
            Verdict::NoChange => None,
        }
    }

    fn style(self) -> Style {
        let fg = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
        match self {
            Role::Regressed => fg(AnsiColor::Red),
            Role::Improved => fg(AnsiColor::Green),
            Role::Inconclusive | Role::Warning => fg(AnsiColor::Yellow),
            Role::Error => fg(AnsiColor::Red).bold(),
        }
    }

    /// The same colour for a comfy-table cell (comfy-table's `Dark*` are the ANSI 31–33 that
    /// `anstyle`'s plain colours are).
    fn cell_color(self) -> comfy_table::Color {
        match self {
            Role::Regressed | Role::Error => comfy_table::Color::DarkRed,
            Role::Improved => comfy_table::Color::DarkGreen,
            Role::Inconclusive | Role::Warning => comfy_table::Color::DarkYellow,
        }
    }
}

/// Paints text by [`Role`], or leaves it plain when colour is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Palette {
    enabled: bool,
}

impl Palette {
    /// A palette that colours when `enabled`.
    pub fn new(enabled: bool) -> Palette {
        Palette { enabled }
    }

    /// A palette that never colours (files, pipes, tests).
    pub fn plain() -> Palette {
        Palette { enabled: false }
    }

    /// Whether this palette colours.
    pub fn enabled(self) -> bool {
        self.enabled
    }

    /// `text` in the colour of `role` (unchanged when colour is off).
    pub fn paint(self, role: Role, text: &str) -> String {
        if self.enabled {
            let style = role.style();
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    /// `text` in the colour of `role`, if any.
    pub fn paint_opt(self, role: Option<Role>, text: &str) -> String {
        role.map_or_else(|| text.to_owned(), |r| self.paint(r, text))
    }

    /// The `warning:` label.
    pub fn warning(self) -> String {
        self.paint(Role::Warning, "warning:")
    }

    /// The `error:` label.
    pub fn error(self) -> String {
        self.paint(Role::Error, "error:")
    }

    /// The comfy-table colour of a cell with this role, when colour is on.
    pub(crate) fn cell_color(self, role: Option<Role>) -> Option<comfy_table::Color> {
        role.filter(|_| self.enabled).map(Role::cell_color)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_only_a_terminal_without_no_color() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert!(ColorChoice::Auto.enabled(true, None, os("xterm-256color")));
        assert!(!ColorChoice::Auto.enabled(false, None, os("xterm")));
        assert!(!ColorChoice::Auto.enabled(true, os("1"), os("xterm")));
        // no-color.org: an empty NO_COLOR does not count.
        assert!(ColorChoice::Auto.enabled(true, os(""), os("xterm")));
        assert!(!ColorChoice::Auto.enabled(true, None, os("dumb")));
        assert!(ColorChoice::Always.enabled(false, os("1"), None));
        assert!(!ColorChoice::Never.enabled(true, None, None));
    }

    #[test]
    fn painted_text_is_wrapped_in_escapes_only_when_enabled() {
        assert_eq!(Palette::plain().warning(), "warning:");
        assert_eq!(Palette::new(true).warning(), "\x1b[33mwarning:\x1b[0m");
        assert_eq!(
            Palette::new(true).paint(Role::Regressed, "REGRESSED"),
            "\x1b[31mREGRESSED\x1b[0m"
        );
        assert_eq!(
            Palette::new(true).paint_opt(Role::of_verdict(Verdict::NoChange), "NO CHANGE"),
            "NO CHANGE"
        );
        assert_eq!(Palette::plain().cell_color(Some(Role::Improved)), None);
    }
}
