//! Text that is safe to put on a terminal or in a spreadsheet, whatever a user, an imported file
//! or a profiled program put in it.
//!
//! Names, tags, parameters, command lines, failure reasons, symbol and file names can hold
//! control characters: `ESC [2J` clears the screen, `ESC ] 0; … BEL` retitles the window, the C1
//! `CSI` (U+009B) does the same without an `ESC`, and the bidi overrides (U+202E) show text
//! reversed. [`printable`] writes each as a visible escape (`\x1b`, `\u{202e}`) before text
//! reaches a terminal; [`write_json`] writes JSON whose strings carry them as `\u` escapes
//! (serde_json escapes C0 only), which decode to the same text; `csv_text` also neutralises
//! spreadsheet formulas (OWASP's CSV-injection rule).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

/// True for what a terminal acts on or a reader cannot see: control characters (C0, DEL, C1)
/// and the Unicode marks that reorder or hide text (zero-width, bidi embeddings, overrides and
/// isolates).
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character (tab and newline too) written as a visible escape:
/// `\t`, `\n`, `\r`, `\x1b`, `\u{9b}`, `\u{202e}`. Everything else, other Unicode included,
/// is kept as is.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// [`printable`] for text of several lines (messages, CSV cells): keeps `\n`.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// At most `max` characters of `text` for quoting it in a message, cut in the middle with
/// `…` and the number of characters left out when longer (a 50 MB line is quoted as its
/// first and last characters, never whole).
pub fn excerpt(text: &str, max: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= max {
        return Cow::Borrowed(text);
    }
    let head = max / 2;
    let tail = max.saturating_sub(head + 1);
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    Cow::Owned(format!(
        "{start}…[{} characters]…{end}",
        count - head - tail
    ))
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let escaped = |c: char| is_unsafe(c) && !(keep_newlines && c == '\n');
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !escaped(c) => out.push(c),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// One CSV cell of text: [`printable_lines`] (newlines stay, inside the quotes; a tab or a
/// carriage return becomes `\t`, `\r`, so neither can start a cell), and a cell that a
/// spreadsheet would run as a formula — starting with `=`, `+`, `-` or `@` — gets a leading `'`
/// and quotes (OWASP). Numbers are not text cells: a numeric column writes its numbers as they
/// are, `-3.5` included.
pub fn csv_text(text: &str) -> String {
    let text = printable_lines(text);
    let formula = text.starts_with(['=', '+', '-', '@']);
    if formula {
        format!("\"'{}\"", text.replace('"', "\"\""))
    } else if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.into_owned()
    }
}

/// Writes `value` as pretty JSON and a newline, with the unsafe characters of its strings as
/// `\u` escapes.
pub fn write_json(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        &mut *out,
        EscapingFormatter(PrettyFormatter::new()),
    );
    value.serialize(&mut ser).map_err(io::Error::from)?;
    writeln!(out)
}

/// serde_json's pretty layout, with [`is_unsafe`] characters escaped inside strings.
struct EscapingFormatter(PrettyFormatter<'static>);

impl Formatter for EscapingFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_long_text_in_the_middle() {
        assert_eq!(excerpt("short", 10), "short");
        let long = format!("{}x{}", "a".repeat(5_000_000), "b".repeat(5_000_000));
        let shown = excerpt(&long, 200);
        assert!(shown.chars().count() < 240, "{}", shown.len());
        assert!(
            shown.starts_with("aaaa") && shown.ends_with("bbbb"),
            "{shown}"
        );
        assert!(shown.contains("…[9999802 characters]…"), "{shown}");
    }

    #[test]
    fn control_characters_are_printed_as_visible_escapes() {
        assert!(matches!(printable("nightly ünïcode"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[2J\u{1b}]0;owned\u{7}b"),
            "a\\x1b[2J\\x1b]0;owned\\x07b"
        );
        assert_eq!(printable("two\nlines\tand\r"), "two\\nlines\\tand\\r");
        assert_eq!(printable_lines("two\nlines\u{7}"), "two\nlines\\x07");
        assert_eq!(printable("\u{9b}31m \u{7f}"), "\\u{9b}31m \\x7f");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
    }

    #[test]
    fn formula_cells_are_neutralised_and_plain_text_is_not() {
        assert_eq!(csv_text("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_text("+1"), "\"'+1\"");
        assert_eq!(csv_text("@SUM(A1)"), "\"'@SUM(A1)\"");
        // Tab and CR are escaped, so they cannot start a cell.
        assert_eq!(csv_text("\tcmd"), "\\tcmd");
        assert_eq!(csv_text("\r=1"), "\\r=1");
        // In a text column even a negative number is text, and neutralised.
        assert_eq!(csv_text("-3.5"), "\"'-3.5\"");
        assert_eq!(csv_text("stock"), "stock");
        assert_eq!(csv_text("a,b"), "\"a,b\"");
        assert_eq!(csv_text("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_text("bell\u{7}"), "bell\\x07");
        assert_eq!(csv_text(""), "");
    }

    #[test]
    fn json_strings_carry_unsafe_characters_escaped_and_decode_to_the_same_text() {
        let value = serde_json::json!({ "name": "a\u{1b}[2J\u{9b}\u{202e}ü", "n": [1, 2] });
        let mut out = Vec::new();
        write_json(&mut out, &value).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.chars().any(|c| is_unsafe(c) && c != '\n'), "{text}");
        assert!(text.contains(r"\u001b[2J\u009b\u202eü"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
        assert_eq!(
            text,
            format!(
                "{}\n",
                serde_json::to_string_pretty(&value)
                    .unwrap()
                    .replace("\u{1b}", "\\u001b")
                    .replace('\u{9b}', "\\u009b")
                    .replace('\u{202e}', "\\u202e")
            )
        );
    }
}
