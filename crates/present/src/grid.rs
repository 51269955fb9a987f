//! A table before it is drawn: headers, alignment, which columns may be left out (and in what
//! order), and cells that carry a [`Role`] for colour. The table modules build a [`Grid`]; it is
//! then drawn for a terminal ([`Grid::write_terminal`]: comfy-table, fitted to a width) or as
//! Markdown (`markdown`).
//!
//! Fitting: when the drawn table is wider than the limit, the droppable columns go one by one,
//! lowest rank first, until it fits (or none is left to drop: the table is then drawn whole and
//! wider, never wrapped into junk); one line under the table names what was left out and how
//! to see it.

use std::io::{self, Write};

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use unicode_width::UnicodeWidthStr;

use crate::palette::Role;
use crate::text_options::TextOptions;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
struct Column {
    header: String,
    align: Align,
    /// `Some(rank)`: may be left out to fit a width, lowest rank first.
    drop_rank: Option<u8>,
}

/// One cell: its text (already made printable) and what it means.
#[derive(Debug, Clone)]
pub(crate) struct GridCell {
    pub(crate) text: String,
    pub(crate) role: Option<Role>,
}

impl From<String> for GridCell {
    fn from(text: String) -> GridCell {
        GridCell { text, role: None }
    }
}

impl From<&str> for GridCell {
    fn from(text: &str) -> GridCell {
        GridCell::from(text.to_owned())
    }
}

/// A table's content, ready to draw.
#[derive(Debug, Clone, Default)]
pub(crate) struct Grid {
    columns: Vec<Column>,
    rows: Vec<Vec<GridCell>>,
}

impl Grid {
    /// A column that is always shown.
    pub(crate) fn keep(&mut self, header: &str, align: Align) -> &mut Grid {
        self.push_column(header, align, None)
    }

    /// A column left out when the table does not fit, before any of higher `rank`.
    pub(crate) fn optional(&mut self, header: &str, align: Align, rank: u8) -> &mut Grid {
        self.push_column(header, align, Some(rank))
    }

    fn push_column(&mut self, header: &str, align: Align, drop_rank: Option<u8>) -> &mut Grid {
        self.columns.push(Column {
            header: header.to_owned(),
            align,
            drop_rank,
        });
        self
    }

    /// Adds a row; missing cells at its end are blank.
    pub(crate) fn row(&mut self, cells: Vec<GridCell>) {
        self.rows.push(cells);
    }

    /// The headers, in order.
    pub(crate) fn headers(&self) -> impl Iterator<Item = (&str, Align)> {
        self.columns.iter().map(|c| (c.header.as_str(), c.align))
    }

    /// The rows, each as long as the headers (blank cells added).
    pub(crate) fn rows(&self) -> impl Iterator<Item = Vec<&str>> {
        self.rows.iter().map(|r| {
            (0..self.columns.len())
                .map(|i| r.get(i).map_or("", |c| c.text.as_str()))
                .collect()
        })
    }

    /// Draws the table for a terminal, fitted to `opts.width`, and the line naming any columns
    /// left out.
    pub(crate) fn write_terminal(&self, out: &mut dyn Write, opts: &TextOptions) -> io::Result<()> {
        let all: Vec<usize> = (0..self.columns.len()).collect();
        let full = self.drawn_width(&all);
        let mut kept = all;
        let mut dropped = Vec::new();
        if let Some(limit) = opts.width.filter(|&w| full > w) {
            let mut candidates: Vec<usize> = kept
                .iter()
                .copied()
                .filter(|&i| self.columns[i].drop_rank.is_some())
                .collect();
            candidates.sort_by_key(|&i| self.columns[i].drop_rank);
            for i in candidates {
                if self.drawn_width(&kept) <= limit {
                    break;
                }
                kept.retain(|&k| k != i);
                dropped.push(i);
            }
            dropped.sort_unstable();
        }
        writeln!(out, "{}", self.table(&kept, opts))?;
        if let (Some(limit), false) = (opts.width, dropped.is_empty()) {
            let names: Vec<&str> = dropped
                .iter()
                .map(|&i| self.columns[i].header.as_str())
                .collect();
            writeln!(
                out,
                "columns left out at {limit} columns: {} (--wide or COLUMNS={full} shows them)",
                names.join(", ")
            )?;
        }
        Ok(())
    }

    /// How wide the table is when drawn with these columns, in terminal columns.
    fn drawn_width(&self, columns: &[usize]) -> usize {
        self.table(columns, &TextOptions::plain())
            .lines()
            .map(|l| l.width())
            .max()
            .unwrap_or(0)
    }

    fn table(&self, columns: &[usize], opts: &TextOptions) -> Table {
        let mut t = Table::new();
        t.load_style(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(
                columns
                    .iter()
                    .map(|&i| self.columns[i].header.as_str())
                    .collect::<Vec<_>>(),
            );
        if opts.palette.enabled() {
            t.enforce_styling();
        } else {
            t.force_no_tty();
        }
        for row in &self.rows {
            t.add_row(
                columns
                    .iter()
                    .map(|&i| match row.get(i) {
                        Some(c) => {
                            let cell = Cell::new(&c.text);
                            match opts.palette.cell_color(c.role) {
                                Some(color) => cell.fg(color),
                                None => cell,
                            }
                        }
                        None => Cell::new(""),
                    })
                    .collect::<Vec<_>>(),
            );
        }
        for (col, &i) in t.column_iter_mut().zip(columns) {
            col.set_cell_alignment(match self.columns[i].align {
                Align::Left => CellAlignment::Left,
                Align::Right => CellAlignment::Right,
            });
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palette::Palette;

    fn grid() -> Grid {
        let mut g = Grid::default();
        g.keep("N", Align::Right)
            .optional("second", Align::Right, 2)
            .optional("first", Align::Right, 1)
            .keep("verdict", Align::Left);
        for n in [1, 2] {
            g.row(vec![
                n.to_string().into(),
                "x".repeat(20).into(),
                "y".repeat(20).into(),
                GridCell {
                    text: "REGRESSED".into(),
                    role: Some(Role::Regressed),
                },
            ]);
        }
        g
    }

    fn draw(width: Option<usize>, color: bool) -> String {
        let mut out = Vec::new();
        let opts = TextOptions {
            palette: Palette::new(color),
            width,
        };
        grid().write_terminal(&mut out, &opts).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_table_too_wide_leaves_out_the_lowest_rank_first_and_says_so() {
        let full = draw(None, false);
        let full_width = full.lines().map(UnicodeWidthStr::width).max().unwrap();
        assert!(full.contains("first") && full.contains("second"), "{full}");
        assert!(!full.contains("left out"), "{full}");

        let fitted = draw(Some(full_width - 5), false);
        let header = fitted.lines().nth(1).unwrap();
        assert!(!header.contains("first"), "{fitted}");
        assert!(header.contains("second"), "{fitted}");
        assert!(
            fitted
                .lines()
                .filter(|l| !l.starts_with("columns"))
                .all(|l| l.width() <= full_width - 5),
            "{fitted}"
        );
        assert!(
            fitted.ends_with(&format!(
                "columns left out at {} columns: first (--wide or COLUMNS={full_width} shows them)\n",
                full_width - 5
            )),
            "{fitted}"
        );

        let narrow = draw(Some(10), false);
        assert!(
            narrow.contains("columns: second, first (--wide"),
            "both go, named in table order: {narrow}"
        );
        assert!(narrow.contains("REGRESSED"), "kept columns stay: {narrow}");
    }

    #[test]
    fn a_table_that_fits_is_drawn_whole() {
        assert_eq!(draw(Some(500), false), draw(None, false));
    }

    #[test]
    fn coloured_cells_keep_their_alignment() {
        let plain = draw(None, false);
        let coloured = draw(None, true);
        assert!(coloured.contains("\x1b["), "{coloured}");
        assert!(!plain.contains('\x1b'), "{plain}");
        let strip = |s: &str| {
            let mut out = String::new();
            let mut in_escape = false;
            for ch in s.chars() {
                match (in_escape, ch) {
                    (false, '\x1b') => in_escape = true,
                    (true, c) if c.is_ascii_alphabetic() => in_escape = false,
                    (true, _) => {}
                    (false, c) => out.push(c),
                }
            }
            out
        };
        assert_eq!(strip(&coloured), plain);
    }
}
