//! The output seam: where every table module writes a result for people, without asking in
//! which form. A [`Printer`] takes text lines (it is an [`io::Write`]) and tables
//! ([`Printer::table`]) and writes them in the [`Format`] the user chose:
//!
//! - **text**: for a terminal — lines as written (coloured by the caller's palette), tables
//!   fitted to the width ([`TextOptions`]);
//! - **markdown**: for a pull request, an issue or a mail — each run of lines one paragraph
//!   (a hard break after each line), a blank line a paragraph break, tables as pipe tables
//!   with every column; never coloured;
//! - **csv**: for a spreadsheet or a script — the result's tables only, each with its header
//!   row (a blank line between two tables); the lines are left out, so a command offers csv
//!   only where its result is one table.
//!
//! JSON is not a printer's: the binary writes the analysis results themselves
//! (`model::safe_text::write_json`), as hyperfine's and criterion's exporters do per format.

use std::io::{self, Write};

use crate::grid::Grid;
use crate::markdown;
use crate::text_options::TextOptions;

/// How a result is written for people (JSON aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For a terminal.
    Text,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// The result's table as CSV.
    Csv,
}

/// Writes lines and tables in one [`Format`] (see the module doc). Call
/// [`finish`](Printer::finish) at the end: Markdown may hold a last line without its newline.
pub struct Printer<'a> {
    /// Where it all goes.
    out: &'a mut dyn Write,
    format: Format,
    opts: TextOptions,
    /// Markdown: the line being written, up to its newline.
    line: Vec<u8>,
    /// Markdown: inside a paragraph (a line was written since the last break).
    in_paragraph: bool,
    /// CSV: tables written so far.
    tables: usize,
}

impl<'a> Printer<'a> {
    /// A printer of `format` on `out`; `opts` are the terminal's colour and width (text only:
    /// Markdown and CSV are plain and every column is kept).
    pub fn new(out: &'a mut dyn Write, format: Format, opts: &TextOptions) -> Printer<'a> {
        let opts = match format {
            Format::Text => *opts,
            Format::Markdown | Format::Csv => TextOptions::default(),
        };
        Printer {
            out,
            format,
            opts,
            line: Vec::new(),
            in_paragraph: false,
            tables: 0,
        }
    }

    /// The colour and width lines and tables are written with (plain and unlimited outside
    /// text).
    pub fn options(&self) -> &TextOptions {
        &self.opts
    }

    /// The format being written.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Writes a table.
    pub(crate) fn table(&mut self, grid: &Grid) -> io::Result<()> {
        match self.format {
            Format::Text => grid.write_terminal(self.out, &self.opts),
            Format::Markdown => {
                self.end_line()?;
                self.end_paragraph()?;
                markdown::write_table(self.out, grid)
            }
            Format::Csv => {
                if self.tables > 0 {
                    writeln!(self.out)?;
                }
                self.tables += 1;
                let mut w = csv::Writer::from_writer(&mut *self.out);
                w.write_record(grid.headers().map(|(h, _)| h))?;
                for row in grid.rows() {
                    w.write_record(row)?;
                }
                w.flush()
            }
        }
    }

    /// Ends the output: Markdown's last line and paragraph.
    pub fn finish(mut self) -> io::Result<()> {
        self.end_line()?;
        self.flush()
    }

    /// Markdown: writes the line held so far, if any.
    fn end_line(&mut self) -> io::Result<()> {
        if self.line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        self.markdown_line(&String::from_utf8_lossy(&line))
    }

    /// Markdown: one line of text — a paragraph break when blank, else the line (indentation
    /// left out, which Markdown would read as code) with a hard break after it.
    fn markdown_line(&mut self, line: &str) -> io::Result<()> {
        let text = line.trim();
        if text.is_empty() {
            return self.end_paragraph();
        }
        self.in_paragraph = true;
        writeln!(self.out, "{}  ", markdown::escape(text))
    }

    fn end_paragraph(&mut self) -> io::Result<()> {
        if self.in_paragraph {
            self.in_paragraph = false;
            writeln!(self.out)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Printer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("format", &self.format)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Write for Printer<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.format {
            Format::Text => self.out.write_all(buf)?,
            Format::Csv => {}
            Format::Markdown => {
                for &b in buf {
                    if b == b'\n' {
                        let line = std::mem::take(&mut self.line);
                        self.markdown_line(&String::from_utf8_lossy(&line))?;
                    } else {
                        self.line.push(b);
                    }
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// What a writer prints in `format` on a plain, unlimited terminal (for tests).
#[cfg(test)]
pub(crate) fn printed(
    format: Format,
    write: impl FnOnce(&mut Printer<'_>) -> io::Result<()>,
) -> String {
    printed_with(format, &TextOptions::default(), write)
}

/// What a writer prints in `format` with `opts` (for tests).
#[cfg(test)]
pub(crate) fn printed_with(
    format: Format,
    opts: &TextOptions,
    write: impl FnOnce(&mut Printer<'_>) -> io::Result<()>,
) -> String {
    let mut out = Vec::new();
    let mut p = Printer::new(&mut out, format, opts);
    write(&mut p).expect("written to memory");
    p.finish().expect("written to memory");
    String::from_utf8(out).expect("UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Align;

    fn grid() -> Grid {
        let mut g = Grid::default();
        g.keep("lock", Align::Left).keep("wait", Align::Right);
        g.add_row(vec!["a|b".into(), "1.2 ms".into()]);
        g.add_row(vec!["c, d".into(), "3 µs".into()]);
        g.add_row(vec!["Mutex<T>::lock".into(), "1 ns".into()]);
        g
    }

    fn printed(format: Format) -> String {
        let mut out = Vec::new();
        let mut p = Printer::new(&mut out, format, &TextOptions::default());
        writeln!(p, "kernel locks at N=2").unwrap();
        writeln!(p, "  no loss").unwrap();
        writeln!(p).unwrap();
        p.table(&grid()).unwrap();
        write!(p, "a last line").unwrap();
        p.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn markdown_makes_paragraphs_and_pipe_tables() {
        assert_eq!(
            printed(Format::Markdown),
            "kernel locks at N=2  \nno loss  \n\n| lock | wait |\n|:--|--:|\n\
             | a\\|b | 1.2 ms |\n| c, d | 3 µs |\n| Mutex\\<T>::lock | 1 ns |\n\n\
             a last line  \n"
        );
    }

    #[test]
    fn csv_keeps_the_tables_only() {
        assert_eq!(
            printed(Format::Csv),
            "lock,wait\na|b,1.2 ms\n\"c, d\",3 µs\nMutex<T>::lock,1 ns\n"
        );
    }

    #[test]
    fn text_writes_lines_as_given_and_draws_the_table() {
        let text = printed(Format::Text);
        assert!(text.starts_with("kernel locks at N=2\n  no loss\n\n"));
        assert!(text.contains("a|b") && text.ends_with("a last line"));
    }
}
