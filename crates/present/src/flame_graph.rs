//! Flame graphs as interactive, searchable SVG (the `inferno` crate): one point's call chains,
//! or a differential graph of two (red: grew in the second, blue: shrank), from the folded
//! stacks a [`PointProfile`] keeps. Kernel frames carry inferno's `_[k]` mark and colour.

use std::io::{self, Write};

use analysis::profile::PointProfile;
use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};

fn folded_text(p: &PointProfile) -> String {
    let mut s = String::new();
    for (line, count) in &p.folded {
        s.push_str(line);
        s.push(' ');
        s.push_str(&count.to_string());
        s.push('\n');
    }
    s
}

fn options(title: String) -> Options<'static> {
    let mut o = Options::default();
    o.title = title;
    o.colors = Palette::Multi(MultiPalette::Java);
    o.count_name = "samples".into();
    o
}

/// One point's flame graph.
pub fn write_flamegraph(out: impl Write, p: &PointProfile, title: String) -> io::Result<()> {
    let text = folded_text(p);
    let mut o = options(title);
    flamegraph::from_lines(&mut o, text.lines(), out).map_err(io::Error::other)
}

/// A differential flame graph: the shape of `b`, coloured by the change from `a` (normalised so
/// different sample counts compare).
pub fn write_differential(
    out: impl Write,
    a: &PointProfile,
    b: &PointProfile,
    title: String,
) -> io::Result<()> {
    let (ta, tb) = (folded_text(a), folded_text(b));
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: false,
        },
        ta.as_bytes(),
        tb.as_bytes(),
        &mut merged,
    )?;
    let merged = String::from_utf8_lossy(&merged).into_owned();
    let mut o = options(title);
    flamegraph::from_lines(&mut o, merged.lines(), out).map_err(io::Error::other)
}
