//! The rows of a small CSV-like file of measurements: the one reader behind `model --csv`
//! (`N,throughput`) and `history --csv` (`value` or `label,value`).
//!
//! Rules, the same for both:
//! - Lines are trimmed (a leading byte-order mark too); blank lines and lines starting with `#`
//!   are skipped wherever they are.
//! - Fields are split on commas; a line without a comma on tabs, then semicolons, then runs of
//!   spaces (what spreadsheets and `paste` write). Empty fields are dropped.
//! - The first row left may be a header, but only when none of its fields looks like a number
//!   (begins with a digit, or a sign or point then a digit): `N,throughput` is a header, while
//!   a typo such as `1OO.5` is an error naming its line, not a header dropped in silence.

use std::fmt;
use std::path::Path;

use crate::error::SpecError;
use crate::safe_text::excerpt;

/// The most characters of a bad line an error quotes (a 50 MB line is cut in the middle).
const QUOTED_LINE: usize = 200;

/// The text of a CSV file the user named, within [`sys::InputKind::Csv`]'s limit.
pub fn read_file(path: &Path) -> Result<String, SpecError> {
    let bytes = sys::read_input(path, sys::InputKind::Csv)?;
    String::from_utf8(bytes).map_err(|e| {
        SpecError::BadFile(format!(
            "{}: not UTF-8 text (byte {} is not): a CSV file is text",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// One data row: its fields and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvRow<'a> {
    /// 1-based line number in the file.
    pub line: usize,
    /// The line as written (trimmed).
    pub text: &'a str,
    /// Its fields, split as the rules above say.
    pub fields: Vec<&'a str>,
}

impl CsvRow<'_> {
    /// An error about this row: `line 4: `3,2688,01`: 3 fields, expected 2; {format}`.
    pub fn error(&self, reason: impl fmt::Display, format: &str) -> SpecError {
        SpecError::BadFile(format!(
            "line {}: `{}`: {reason}; {format}",
            self.line,
            excerpt(self.text, QUOTED_LINE)
        ))
    }

    /// Field `index` as a number, or an error naming it as `what`.
    pub fn number(&self, index: usize, what: &str, format: &str) -> Result<f64, SpecError> {
        let field = self.fields[index];
        field.parse().map_err(|_| {
            self.error(
                format!("{what} `{}` is not a number", excerpt(field, 40)),
                format,
            )
        })
    }
}

/// The data rows of `text`, the header (if any) left out. Empty when there are none.
pub fn rows(text: &str) -> Vec<CsvRow<'_>> {
    let mut rows = Vec::new();
    let mut first = true;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim().trim_start_matches('\u{feff}').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split(line);
        let header = first && !fields.iter().any(|f| looks_numeric(f));
        first = false;
        if header {
            continue;
        }
        rows.push(CsvRow {
            line: i + 1,
            text: line,
            fields,
        });
    }
    rows
}

fn split(line: &str) -> Vec<&str> {
    let fields: Vec<&str> = match [',', '\t', ';'].into_iter().find(|c| line.contains(*c)) {
        Some(sep) => line.split(sep).collect(),
        None => line.split(' ').collect(),
    };
    fields
        .into_iter()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect()
}

/// Whether a field is, or was meant to be, a number: it parses, or it begins with a digit, or
/// with a sign or point followed by a digit.
fn looks_numeric(field: &str) -> bool {
    if field.parse::<f64>().is_ok() {
        return true;
    }
    let rest = field.trim_start_matches(['+', '-']).trim_start_matches('.');
    rest.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<(usize, Vec<&str>)> {
        rows(text).into_iter().map(|r| (r.line, r.fields)).collect()
    }

    #[test]
    fn headers_comments_blanks_and_separators() {
        let text = "\u{feff}# from a spreadsheet\nN;X\n1; 10\n\n# moved racks\n2\t19\n4  35\n";
        assert_eq!(
            fields(text),
            [
                (3, vec!["1", "10"]),
                (6, vec!["2", "19"]),
                (7, vec!["4", "35"])
            ]
        );
        // A comma wins over the spaces inside a label.
        assert_eq!(
            fields("build 20, 1000.5"),
            [(1, vec!["build 20", "1000.5"])]
        );
        assert_eq!(fields("label,value\n"), []);
        assert_eq!(fields(""), []);
    }

    #[test]
    fn a_typo_on_the_first_row_is_data_not_a_header() {
        // Each was dropped as a header before; now the caller sees the row and refuses it.
        for typo in ["1OO.5", "1O,955.16", "-1x", ".5e", "build-3,1OO.5"] {
            let got = rows(typo);
            assert_eq!(got.len(), 1, "{typo}");
            assert_eq!(got[0].line, 1);
        }
        // Only the first row may be a header.
        assert_eq!(fields("N,X\nlabel,value\n").len(), 1);
        assert_eq!(fields("# note\n\nvalue\n1\n"), [(4, vec!["1"])]);
    }

    #[test]
    fn numbers_and_errors_name_the_line() {
        let row = &rows("N,X\n3,abc\n")[0];
        assert_eq!(row.number(0, "N", "fmt").unwrap(), 3.0);
        let err = row
            .number(1, "throughput", "each row is `N,X`")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: `3,abc`: throughput `abc` is not a number; each row is `N,X`"
        );
    }
}
