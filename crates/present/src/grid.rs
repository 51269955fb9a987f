//! A table before it is drawn: headers, alignment, which columns may be left out (and in what
//! order), and cells that carry a [`Role`] for colour. The table modules build a [`Grid`]; it is
//! then drawn for a terminal ([`Grid::write_terminal`]: comfy-table, fitted to a width) or as
//! Markdown (`markdown`).
//!
//! Fitting: when the drawn table is wider than the limit, the droppable columns go one by one,
//! lowest rank first, until it fits (or none is left to drop: the table is then drawn whole and
//! wider, never wrapped into junk); one line under the table names what was left out and how
//! to see it. Then, if it is still too wide, the one column marked shrinkable (a function's or
//! a lock caller's name) has its text cut with `…` to fit, down to a floor, and the same line
//! says so.

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
    /// Its text may be cut with `…` to fit a width (after the droppable columns went).
    shrink: bool,
}

/// The narrowest a shrinkable column is cut to: a name stays recognisable.
const MIN_SHRUNK: usize = 16;

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

    /// A column always shown whose text may be cut with `…` to fit (at most one per table).
    pub(crate) fn shrinkable(&mut self, header: &str, align: Align) -> &mut Grid {
        self.push_column(header, align, None);
        if let Some(c) = self.columns.last_mut() {
            c.shrink = true;
        }
        self
    }

    fn push_column(&mut self, header: &str, align: Align, drop_rank: Option<u8>) -> &mut Grid {
        self.columns.push(Column {
            header: header.to_owned(),
            align,
            drop_rank,
            shrink: false,
        });
        self
    }

    /// A table of plain cells: the first `right_to` columns right-aligned (figures), the rest
    /// left; the columns named in `optional` may be left out, the first named first; the one
    /// named `shrink` may be cut.
    pub(crate) fn plain(
        headers: &[&str],
        right_to: usize,
        optional: &[&str],
        shrink: Option<&str>,
    ) -> Grid {
        let mut g = Grid::default();
        for (i, h) in headers.iter().enumerate() {
            let align = if i < right_to {
                Align::Right
            } else {
                Align::Left
            };
            match optional.iter().position(|o| o == h) {
                Some(rank) => g.optional(h, align, u8::try_from(rank).unwrap_or(u8::MAX)),
                None if shrink == Some(*h) => g.shrinkable(h, align),
                None => g.keep(h, align),
            };
        }
        g
    }

    /// Adds a row of plain text cells.
    pub(crate) fn add_row(&mut self, cells: Vec<String>) {
        self.row(cells.into_iter().map(GridCell::from).collect());
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
        let mut cut = None;
        let shrunk = match opts.width {
            Some(limit) if self.drawn_width(&kept) > limit => {
                self.shrunk(&kept, limit).inspect(|(col, width, _)| {
                    cut = Some((self.columns[*col].header.clone(), *width));
                })
            }
            _ => None,
        };
        let shown = shrunk.as_ref().map_or(self, |(_, _, g)| g);
        writeln!(out, "{}", shown.table(&kept, opts))?;
        if let Some(limit) = opts.width {
            let mut said = Vec::new();
            if !dropped.is_empty() {
                let names: Vec<&str> = dropped
                    .iter()
                    .map(|&i| self.columns[i].header.as_str())
                    .collect();
                said.push(format!(
                    "columns left out at {limit} columns: {}",
                    names.join(", ")
                ));
            }
            if let Some((header, width)) = cut {
                said.push(format!("`{header}` cut to {width} columns at {limit}"));
            }
            if !said.is_empty() {
                writeln!(
                    out,
                    "{} (--wide or COLUMNS={full} shows {})",
                    said.join("; "),
                    if dropped.is_empty() {
                        "it whole"
                    } else {
                        "them"
                    }
                )?;
            }
        }
        Ok(())
    }

    /// The kept shrinkable column cut so the table fits `limit` (never below [`MIN_SHRUNK`]):
    /// its index, its new width, and the cut grid; `None` when there is nothing to cut.
    fn shrunk(&self, kept: &[usize], limit: usize) -> Option<(usize, usize, Grid)> {
        let col = kept.iter().copied().find(|&i| self.columns[i].shrink)?;
        let widest = self
            .rows
            .iter()
            .filter_map(|r| r.get(col))
            .map(|c| c.text.width())
            .max()
            .unwrap_or(0);
        let over = self.drawn_width(kept).saturating_sub(limit);
        let floor = MIN_SHRUNK.max(self.columns[col].header.width());
        let width = widest.saturating_sub(over).max(floor);
        if width >= widest {
            return None;
        }
        let mut g = self.clone();
        for row in &mut g.rows {
            if let Some(cell) = row.get_mut(col) {
                cell.text = cut_text(&cell.text, width);
            }
        }
        Some((col, width, g))
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

/// `text` in at most `width` terminal columns, ending in `…` when cut.
fn cut_text(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    out
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
