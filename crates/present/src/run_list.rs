//! The stored runs, one line each (`scalelab ls`): id, start time, status, what ran, the N
//! measured, trials, and name/variant/tags. Columns stay aligned however long a command line
//! is: each is as wide as its widest cell, and when a width limit applies (see
//! [`TextOptions`]) the two free-text columns are cut with `…` to fit — what ran first (down
//! to 12 columns), then the labels (down to 12) — and `ls --json` has the full text. In
//! Markdown and CSV the list is one table with every cell whole.

use std::io::{self, Write};

use model::record::RunMeta;
use model::safe_text::printable;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::grid::Grid;
use crate::printer::{Format, Printer};

/// One stored run and its trial counts.
#[derive(Debug, Clone, Copy)]
pub struct RunListEntry<'a> {
    /// The run.
    pub meta: &'a RunMeta,
    /// Trials that produced a measurement.
    pub trials_ok: usize,
    /// Trials that failed.
    pub trials_failed: usize,
}

const HEADERS: [&str; 7] = [
    "id",
    "started",
    "status",
    "workload",
    "N",
    "trials",
    "name/variant/tags",
];
/// The column of what ran, and its narrowest width when cut.
const WHAT: usize = 3;
const WHAT_MIN: usize = 12;
/// The labels column (the last), and its narrowest width when cut.
const LABELS: usize = 6;
const LABELS_MIN: usize = 12;
const GAP: &str = "  ";

/// Writes the header line and one line per run.
pub fn write_run_list(out: &mut Printer<'_>, entries: &[RunListEntry<'_>]) -> io::Result<()> {
    if out.format() != Format::Text {
        // Markdown and CSV: one table, every cell whole.
        let mut grid = Grid::plain(&HEADERS, 0, &[], None);
        for entry in entries {
            grid.add_row(cells(entry).to_vec());
        }
        return out.table(&grid);
    }
    let opts = *out.options();
    let mut lines: Vec<[String; 7]> = vec![HEADERS.map(str::to_owned)];
    lines.extend(entries.iter().map(cells));
    let mut widths = [0usize; 7];
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.width());
        }
    }
    if let Some(limit) = opts.width {
        let total = |w: &[usize; 7]| w.iter().sum::<usize>() + GAP.len() * (w.len() - 1);
        for (col, min) in [(WHAT, WHAT_MIN), (LABELS, LABELS_MIN)] {
            let over = total(&widths).saturating_sub(limit);
            let floor = min.min(widths[col]);
            widths[col] -= over.min(widths[col] - floor);
        }
    }
    for line in &lines {
        let mut text = String::new();
        for (i, (cell, &width)) in line.iter().zip(&widths).enumerate() {
            let cell = cut(cell, width);
            let pad = " ".repeat(width - cell.width());
            match i {
                0 | 5 => text.push_str(&format!("{pad}{cell}")),
                LABELS => text.push_str(&cell),
                _ => text.push_str(&format!("{cell}{pad}")),
            }
            if i != LABELS {
                text.push_str(GAP);
            }
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

/// A run's cells, made printable.
fn cells(entry: &RunListEntry<'_>) -> [String; 7] {
    let m = entry.meta;
    let params: Vec<String> = m.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let what = format!("{} {}", m.workload, params.join(" "));
    let points: Vec<String> = m.points.iter().map(u32::to_string).collect();
    let trials = if entry.trials_failed > 0 {
        format!("{}+{}✗", entry.trials_ok, entry.trials_failed)
    } else {
        entry.trials_ok.to_string()
    };
    let mut labels = Vec::new();
    if let Some(n) = &m.name {
        labels.push(format!("\"{n}\""));
    }
    if let Some(v) = &m.variant {
        labels.push(format!("variant={v}"));
    }
    labels.extend(m.tags.iter().map(|(k, v)| format!("{k}={v}")));
    [
        m.id.to_string(),
        printable(&m.started_at).into_owned(),
        m.status.to_string(),
        printable(what.trim()).into_owned(),
        points.join(","),
        trials,
        printable(&labels.join(" ")).into_owned(),
    ]
}

/// `text` cut to `width` terminal columns, ending in `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(ch);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use lab::test_runs::run;

    use super::*;
    use crate::printer::{Format, printed_with};
    use crate::text_options::TextOptions;

    fn listed(width: Option<usize>) -> String {
        let mut short = run(1, "spin", &[(1, &[1.0])]).meta;
        short.variant = Some("stock".into());
        let mut long = run(2, "cmd", &[(1, &[1.0])]).meta;
        long.params.insert(
            "cmd".into(),
            format!("sh -c 'echo {} > /dev/null'", "x".repeat(120)),
        );
        let entries = [&short, &long].map(|meta| RunListEntry {
            meta,
            trials_ok: 3,
            trials_failed: 0,
        });
        let opts = TextOptions {
            width,
            ..TextOptions::plain()
        };
        printed_with(Format::Text, &opts, |o| write_run_list(o, &entries))
    }

    /// Every line's `N` column starts at the header's `N`, in terminal columns.
    fn assert_n_aligned(text: &str) {
        let header = text.lines().next().unwrap();
        let n_at = header[..header.find("  N  ").unwrap() + 2].width();
        for line in text.lines().skip(1) {
            let mut col = 0;
            let mut chars = line.chars();
            while col < n_at {
                col += chars.next().and_then(|c| c.width()).unwrap_or(0);
            }
            assert!(
                col == n_at && chars.next().is_some_and(|c| c.is_ascii_digit()),
                "N column misaligned:\n{text}"
            );
        }
    }

    #[test]
    fn ls_keeps_its_columns_aligned_with_a_long_command_line() {
        let full = listed(None);
        assert!(
            full.contains(&"x".repeat(120)),
            "unlimited: the whole command\n{full}"
        );
        assert_n_aligned(&full);
    }

    #[test]
    fn ls_cuts_the_command_line_to_fit_80_columns() {
        let fitted = listed(Some(80));
        assert!(fitted.lines().all(|l| l.width() <= 80), "{fitted}");
        assert!(fitted.contains("cmd cmd=sh -c…"), "{fitted}");
        assert!(fitted.contains("variant=stock"), "{fitted}");
        assert_n_aligned(&fitted);
    }

    #[test]
    fn cut_ends_in_an_ellipsis_within_the_width() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("日本語です", 5), "日本…");
    }
}
