//! The legend of a report chart, laid out in a strip below the plotting area so that it never
//! covers a line or a point (plotters' own legend box sits inside the plot, over the data).
//! It is SVG markup of its own, a `<g class="legend">` the report's browser test can find;
//! entry names are escaped here, as they may carry a run's variant or name.

use std::fmt::Write as _;

/// How an entry's sample is drawn, matching its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    Line,
    Dashed,
    Dot,
    Band,
    /// A solid block (a bar's part).
    Block,
    /// A dashed outline (an unexplained rest).
    Outline,
}

/// One entry: a sample mark in the series' colour, then its name.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) name: String,
    pub(super) rgb: (u8, u8, u8),
    pub(super) mark: Mark,
}

const ROW: f64 = 18.0;
const PAD: f64 = 6.0;
const LEFT: f64 = 12.0;
const SAMPLE: f64 = 20.0;
const GAP: f64 = 18.0;
/// A generous width per character of the 12 px legend font, so entries never run together.
const CHAR: f64 = 7.0;

/// Where each entry starts (x, row) in a strip `width` pixels wide, and the strip's height.
pub(super) fn layout(entries: &[Entry], width: f64) -> (Vec<(f64, usize)>, f64) {
    if entries.is_empty() {
        return (Vec::new(), 0.0);
    }
    let mut at = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (LEFT, 0);
    for e in entries {
        let w = SAMPLE + 4.0 + e.name.chars().count() as f64 * CHAR;
        if x > LEFT && x + w > width - LEFT {
            x = LEFT;
            row += 1;
        }
        at.push((x, row));
        x += w + GAP;
    }
    (at, (row + 1) as f64 * ROW + 2.0 * PAD)
}

/// The legend's SVG group for a strip starting at `top` in a chart `width` pixels wide.
pub(super) fn svg(entries: &[Entry], width: f64, top: f64) -> String {
    let (at, _) = layout(entries, width);
    let mut g = String::from("<g class=\"legend\" font-family=\"sans-serif\" font-size=\"12\">");
    for (e, (x, row)) in entries.iter().zip(at) {
        let y = top + PAD + ROW * row as f64 + ROW / 2.0;
        let (r, gr, b) = e.rgb;
        let c = format!("rgb({r},{gr},{b})");
        // Writing to a String cannot fail.
        let _ = match e.mark {
            Mark::Line => write!(
                g,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{c}\" stroke-width=\"2\"/>",
                x + SAMPLE
            ),
            Mark::Dashed => write!(
                g,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{c}\" stroke-width=\"1\" stroke-dasharray=\"6 4\"/>",
                x + SAMPLE
            ),
            Mark::Dot => write!(
                g,
                "<circle cx=\"{}\" cy=\"{y}\" r=\"3\" fill=\"{c}\" fill-opacity=\"0.6\"/>",
                x + SAMPLE / 2.0
            ),
            Mark::Band => write!(
                g,
                "<rect x=\"{x}\" y=\"{}\" width=\"{SAMPLE}\" height=\"10\" fill=\"{c}\" fill-opacity=\"0.2\"/>",
                y - 5.0
            ),
            Mark::Block => write!(
                g,
                "<rect x=\"{x}\" y=\"{}\" width=\"{SAMPLE}\" height=\"10\" fill=\"{c}\"/>",
                y - 5.0
            ),
            Mark::Outline => write!(
                g,
                "<rect x=\"{x}\" y=\"{}\" width=\"{SAMPLE}\" height=\"10\" fill=\"{c}\" stroke=\"#777\" stroke-dasharray=\"3 2\"/>",
                y - 5.0
            ),
        };
        let _ = write!(
            g,
            "<text x=\"{}\" y=\"{}\" fill=\"#222\">{}</text>",
            x + SAMPLE + 4.0,
            y + 4.0,
            escape(&e.name)
        );
    }
    g.push_str("</g>");
    g
}

/// `text` escaped for SVG text and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.into(),
            rgb: (1, 2, 3),
            mark: Mark::Line,
        }
    }

    #[test]
    fn entries_wrap_into_rows_within_the_width() {
        let entries: Vec<Entry> = (0..6)
            .map(|i| entry(&format!("series number {i}")))
            .collect();
        let (at, height) = layout(&entries, 400.0);
        let rows = at.iter().map(|a| a.1).max().unwrap() + 1;
        assert!(rows > 1, "{at:?}");
        assert_eq!(height, rows as f64 * ROW + 2.0 * PAD);
        for (e, (x, _)) in entries.iter().zip(&at) {
            let end = x + SAMPLE + 4.0 + e.name.len() as f64 * CHAR;
            assert!(end <= 400.0 - LEFT, "{} ends at {end}", e.name);
        }
        assert_eq!(layout(&entries[..1], 400.0).1, ROW + 2.0 * PAD);
        assert_eq!(layout(&[], 400.0), (Vec::new(), 0.0));
    }

    #[test]
    fn legend_names_are_escaped() {
        let g = svg(&[entry("run 2 · <b>&\"x\"")], 400.0, 300.0);
        assert!(g.starts_with("<g class=\"legend\""), "{g}");
        assert!(g.contains("run 2 · &lt;b&gt;&amp;&quot;x&quot;"), "{g}");
        assert!(!g.contains("<b>"));
    }
}
