//! Markdown (GitHub-flavoured) for pasting results into a pull request, an issue or a mail:
//! tables as pipe tables with their alignment, text lines as paragraphs, warnings and notes
//! as a list. No colour and no width limit; every table keeps all its columns.

use std::io::{self, Write};

use crate::grid::{Align, Grid};

/// A cell or a line made safe for Markdown: `|` would end a table cell, `<` could open an HTML
/// tag and `\` escapes them; line breaks would end the row.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' => out.push_str("\\|"),
            // `<T>` would be read as an HTML tag (and dropped): `Mutex<T>::lock`.
            '<' => out.push_str("\\<"),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Writes `grid` as a pipe table followed by a blank line.
pub(crate) fn write_table(out: &mut dyn Write, grid: &Grid) -> io::Result<()> {
    let (headers, aligns): (Vec<String>, Vec<&str>) = grid
        .headers()
        .map(|(h, a)| {
            let rule = match a {
                Align::Left => ":--",
                Align::Right => "--:",
            };
            (escape(h), rule)
        })
        .unzip();
    writeln!(out, "| {} |", headers.join(" | "))?;
    writeln!(out, "|{}|", aligns.join("|"))?;
    for row in grid.rows() {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out)
}

/// Writes text lines as one paragraph each (a blank line after each).
pub(crate) fn write_paragraphs(out: &mut dyn Write, lines: &[String]) -> io::Result<()> {
    for line in lines {
        writeln!(out, "{}", escape(line))?;
        writeln!(out)?;
    }
    Ok(())
}

/// Writes items as a list, followed by a blank line (nothing when there are none).
pub(crate) fn write_list(out: &mut dyn Write, items: &[String]) -> io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    for item in items {
        writeln!(out, "- {}", escape(item))?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::GridCell;

    #[test]
    fn a_pipe_in_a_cell_does_not_split_it() {
        let mut g = Grid::default();
        g.keep("cmd", Align::Left).keep("ops/s", Align::Right);
        g.row(vec![
            GridCell::from("sort | uniq\nx"),
            GridCell::from("1.2k"),
        ]);
        let mut out = Vec::new();
        write_table(&mut out, &g).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "| cmd | ops/s |\n|:--|--:|\n| sort \\| uniq x | 1.2k |\n\n"
        );
    }
}
