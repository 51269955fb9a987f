//! How terminal text is laid out: the [`Palette`] and the width tables must fit in.
//!
//! The width rule (decided in issue 13, documented in `scalelab --help` under `--wide`):
//! `--wide` means no limit; else `COLUMNS`, when set to a number, is the limit (on a terminal
//! or not: the user asked for it); else the terminal's width when the text goes to a terminal;
//! else (a pipe or a file) no limit, so saved output keeps every column. A table wider than
//! the limit leaves out its least needed columns and says which in one line under it.

use std::ffi::OsStr;

use crate::palette::Palette;

/// Colour and width for one stream of terminal text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextOptions {
    /// How text is coloured.
    pub palette: Palette,
    /// The widest a table may be, in terminal columns; `None`: no limit.
    pub width: Option<usize>,
}

impl TextOptions {
    /// No colour, no width limit: what a file or a pipe gets, and what tests compare against.
    pub fn plain() -> TextOptions {
        TextOptions::default()
    }
}

/// The table width limit: `wide` is `--wide`, `columns` the value of `COLUMNS`, `terminal` the
/// width of the terminal the text goes to (`None` when it goes to a pipe or a file).
pub fn table_width(wide: bool, columns: Option<&OsStr>, terminal: Option<usize>) -> Option<usize> {
    if wide {
        return None;
    }
    let from_env = columns
        .and_then(OsStr::to_str)
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    from_env.or(terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_beats_columns_which_beats_the_terminal() {
        let c = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(table_width(true, c("80"), Some(100)), None);
        assert_eq!(table_width(false, c("80"), Some(100)), Some(80));
        assert_eq!(table_width(false, c("80"), None), Some(80));
        assert_eq!(table_width(false, None, Some(100)), Some(100));
        assert_eq!(table_width(false, c("junk"), Some(100)), Some(100));
        assert_eq!(table_width(false, c("0"), None), None);
        assert_eq!(table_width(false, None, None), None);
    }
}
