//! Terminal tables for profiles (`scalelab profile`): one point's top functions, "what grows"
//! across N, and the function-by-function diff of two runs. Each profile's caveats
//! (throttling, lost samples, missing symbols) follow its table with their fixes.

use std::io::{self, Write};

use analysis::profile::PointProfile;
use analysis::profile::{FunctionDiff, Presence};
use analysis::profile::{GrowthReport, MIN_SHARE};
use model::number_text::{plural, si, sig3};
use model::safe_text::printable;

use crate::grid::Grid;
use crate::number_format::opt_sig3;
use crate::printer::Printer;

fn function_label(name: &str, kernel: bool) -> String {
    let mut n: String = name.chars().take(70).collect();
    if n.len() < name.len() {
        n.push('…');
    }
    format!("{} {}", if kernel { "[k]" } else { "[.]" }, printable(&n))
}

/// A mapped file's or symbol's name as read from a perf.data or an ELF file: printable.
fn label(text: &str) -> String {
    printable(text).into_owned()
}

/// The caveats of one point's profile, one `warning:` line each.
pub fn warnings(p: &PointProfile) -> Vec<String> {
    let mut w = Vec::new();
    if p.throttled > 0 {
        w.push(format!(
            "N={}: perf was throttled {} times (PERF_RECORD_THROTTLE): the kernel dropped the sampling rate, so some intervals are missing — lower --profile frequency or raise kernel.perf_cpu_time_max_percent",
            p.n, p.throttled
        ));
    }
    if p.lost > 0 {
        w.push(format!(
            "N={}: perf lost {} (ring buffer full) — profile fewer trials or a shorter --duration",
            p.n,
            plural(p.lost as usize, "sample")
        ));
    }
    for note in &p.notes {
        w.push(format!("N={}: {note}", p.n));
    }
    w
}

/// What the header line says was dropped: samples outside the window, and samples of
/// scalelab's own threads in the trial child.
fn dropped(p: &PointProfile) -> String {
    let mut out = String::new();
    if p.outside_window > 0 {
        out.push_str(&format!(
            " · {} outside the window dropped",
            plural(p.outside_window as usize, "sample")
        ));
    }
    if p.other_threads > 0 {
        out.push_str(&format!(
            " · {} of scalelab's sampler and tracers dropped",
            plural(p.other_threads as usize, "sample")
        ));
    }
    out
}

/// The top functions of one point, kernel and user, by self share.
pub fn write_top(
    out: &mut Printer<'_>,
    p: &PointProfile,
    top: usize,
    load: bool,
) -> io::Result<()> {
    let opts = *out.options();
    let unit = &p.unit;
    writeln!(
        out,
        "N={} · {} · {} · {} ops in the window{}",
        p.n,
        label(&p.event),
        plural(p.samples as usize, "sample"),
        si(p.ops),
        dropped(p)
    )?;
    for f in &p.files {
        writeln!(out, "  perf report -i {}", label(f))?;
    }
    let self_cost = format!("self {unit}/op");
    let total_cost = format!("total {unit}/op");
    let mut headers = vec!["self %", "total %", "samples", &self_cost, &total_cost];
    if load {
        headers.push("load");
    }
    headers.extend(["function", "dso"]);
    let numeric = headers.len() - 2;
    let mut t = Grid::plain(
        &headers,
        numeric,
        &[total_cost.as_str(), "samples", self_cost.as_str(), "dso"],
        Some("function"),
    );
    for f in p.functions.iter().take(top) {
        let mut row = vec![
            format!("{:.2}", f.self_share),
            format!("{:.2}", f.total_share),
            f.self_samples.to_string(),
            opt_sig3(f.cost_per_op),
            opt_sig3(f.total_cost_per_op),
        ];
        if load {
            row.push(f.load.map_or_else(|| "n/a".into(), |l| format!("{l:.3}")));
        }
        row.push(function_label(&f.name, f.kernel));
        row.push(label(&f.dso));
        t.add_row(row);
    }
    out.table(&t)?;
    let mut d = Grid::plain(&["self %", "samples", "dso"], 2, &[], Some("dso"));
    for x in p.dsos.iter().filter(|x| x.samples > 0).take(6) {
        d.add_row(vec![
            format!("{:.2}", x.share),
            x.samples.to_string(),
            label(&x.dso),
        ]);
    }
    out.table(&d)?;
    for w in warnings(p) {
        writeln!(out, "{} {}", opts.palette.warning(), label(&w))?;
    }
    Ok(())
}

/// "What grows": cost per op at every N, ranked by last N over first.
pub fn write_grows(out: &mut Printer<'_>, r: &GrowthReport, top: usize) -> io::Result<()> {
    let (first, last) = (r.points[0], r.points[r.points.len() - 1]);
    writeln!(
        out,
        "what grows: self {}/op at N={last} over N={first} (functions under {MIN_SHARE}% at N={last} ranked last)",
        r.unit
    )?;
    let cols: Vec<String> = r.points.iter().map(|n| format!("N={n}")).collect();
    let mut headers: Vec<&str> = cols.iter().map(String::as_str).collect();
    let share = format!("% @N={last}");
    headers.extend(["×", "Δ/op", share.as_str()]);
    headers.extend(["function", "dso", "note"]);
    let numeric = headers.len() - 3;
    // The middle N go first at a narrow width, then the share, the dso and Δ/op.
    let mut optional: Vec<&str> = cols[1..cols.len().saturating_sub(1).max(1)]
        .iter()
        .map(String::as_str)
        .collect();
    optional.extend([share.as_str(), "dso", "Δ/op"]);
    let mut t = Grid::plain(&headers, numeric, &optional, Some("function"));
    for g in r.rows.iter().take(top) {
        let mut row: Vec<String> = g.by_n.iter().map(|c| opt_sig3(*c)).collect();
        row.push(g.ratio.map_or_else(|| "new".into(), |x| format!("{x:.2}")));
        row.push(format!(
            "{}{}",
            if g.growth >= 0.0 { "+" } else { "" },
            sig3(g.growth)
        ));
        row.push(format!("{:.2}", g.share_last));
        row.push(function_label(&g.name, g.kernel));
        row.push(label(&g.dso));
        let mut note = Vec::new();
        if g.only_at_higher {
            note.push(format!("only at N>{first}"));
        }
        if g.lock {
            note.push("kernel lock/spin".to_string());
        }
        row.push(note.join(", "));
        t.add_row(row);
    }
    out.table(&t)?;
    let mut by_growth: Vec<_> = r.rows.iter().collect();
    by_growth.sort_by(|a, b| b.growth.total_cmp(&a.growth));
    let names: Vec<String> = by_growth
        .iter()
        .take(5)
        .filter(|g| g.growth > 0.0)
        .map(|g| format!("{} (+{} {}/op)", label(&g.name), sig3(g.growth), r.unit))
        .collect();
    if !names.is_empty() {
        writeln!(out, "largest absolute growth: {}", names.join(", "))?;
    }
    let locks: Vec<&str> = r
        .rows
        .iter()
        .filter(|g| g.lock && g.share_last >= MIN_SHARE && g.ratio.is_none_or(|x| x > 1.2))
        .map(|g| g.name.as_str())
        .collect();
    if !locks.is_empty() {
        writeln!(
            out,
            "kernel lock/spin functions growing with N: {}",
            label(&locks.join(", "))
        )?;
    }
    Ok(())
}

/// Two runs at one N, function by function (perf diff semantics).
pub fn write_diff(
    out: &mut Printer<'_>,
    rows: &[FunctionDiff],
    labels: (&str, &str),
    n: u32,
    unit: &str,
    top: usize,
) -> io::Result<()> {
    let (a, b) = labels;
    writeln!(
        out,
        "profile diff at N={n}: {} → {} (Δ: percentage points of self share)",
        label(a),
        label(b)
    )?;
    let ha = format!("% {a}");
    let hb = format!("% {b}");
    let ca = format!("{unit}/op {a}");
    let cb = format!("{unit}/op {b}");
    let mut t = Grid::plain(
        &[
            &ha, &hb, "Δ pp", &ca, &cb, "Δ cost", "function", "dso", "note",
        ],
        6,
        &[&ca, &cb, "dso", "Δ cost"],
        Some("function"),
    );
    for r in rows.iter().take(top) {
        t.add_row(vec![
            format!("{:.2}", r.share_a),
            format!("{:.2}", r.share_b),
            format!("{:+.2}", r.delta_share),
            opt_sig3(r.cost_a),
            opt_sig3(r.cost_b),
            r.cost_change_pct
                .map_or_else(String::new, |x| format!("{x:+.1}%")),
            function_label(&r.name, r.kernel),
            label(&r.dso),
            match r.presence {
                Presence::Both => String::new(),
                Presence::New => format!("new in {b}"),
                Presence::Vanished => format!("gone from {b}"),
            },
        ]);
    }
    out.table(&t)?;
    let new: Vec<&str> = rows
        .iter()
        .filter(|r| r.presence == Presence::New && r.share_b >= MIN_SHARE)
        .map(|r| r.name.as_str())
        .collect();
    let gone: Vec<&str> = rows
        .iter()
        .filter(|r| r.presence == Presence::Vanished && r.share_a >= MIN_SHARE)
        .map(|r| r.name.as_str())
        .collect();
    if !new.is_empty() {
        writeln!(out, "new (≥{MIN_SHARE}%): {}", label(&new.join(", ")))?;
    }
    if !gone.is_empty() {
        writeln!(out, "vanished (≥{MIN_SHARE}%): {}", label(&gone.join(", ")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use analysis::profile::{DsoRow, FunctionRow};

    use super::*;
    use crate::printer::{Format, printed_with};
    use crate::text_options::TextOptions;

    fn function(name: &str, share: f64) -> FunctionRow {
        FunctionRow {
            name: name.into(),
            dso: "libstdc++.so.6".into(),
            kernel: false,
            self_share: share,
            total_share: share,
            self_samples: 100,
            total_samples: 100,
            cost_per_op: Some(1234.5),
            total_cost_per_op: Some(2345.6),
            size: None,
            load: None,
        }
    }

    fn point() -> PointProfile {
        PointProfile {
            n: 2,
            event: "cpu-clock".into(),
            unit: "ns".into(),
            files: vec![],
            ops: 1000.0,
            samples: 200,
            period: 250_000,
            outside_window: 0,
            other_threads: 0,
            partner_period: 0,
            throttled: 0,
            lost: 0,
            functions: vec![
                function(
                    "std::map<std::string, std::pair<std::string, long>>::_M_insert_unique",
                    60.0,
                ),
                function("private_work_a", 40.0),
            ],
            dsos: vec![DsoRow {
                dso: "libstdc++.so.6".into(),
                kernel: false,
                share: 100.0,
                samples: 200,
            }],
            folded: vec![],
            notes: vec![],
            trials: vec![],
            servers: None,
        }
    }

    /// Issue 13: tables fit the terminal. A profile's top table at 80 columns leaves out the
    /// cost columns first, then cuts a long function name, and says so; without a limit (a
    /// pipe) it is whole.
    #[test]
    fn the_top_functions_fit_80_columns_cutting_the_name_last() {
        let p = point();
        let draw = |width| {
            let opts = TextOptions {
                width,
                ..TextOptions::plain()
            };
            printed_with(Format::Text, &opts, |o| write_top(o, &p, 10, false))
        };
        let narrow = draw(Some(80));
        for line in narrow
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= 80,
                "{narrow}"
            );
        }
        assert!(
            narrow.contains("columns left out at 80 columns: "),
            "{narrow}"
        );
        let table: String = narrow.lines().filter(|l| l.starts_with('│')).collect();
        assert!(!table.contains("total ns/op"), "{narrow}");
        assert!(narrow.contains("[.] std::map<"), "{narrow}");
        assert!(narrow.contains("[.] private_work_a"), "{narrow}");
        assert!(narrow.contains("self %"), "{narrow}");
        let whole = draw(None);
        assert!(whole.contains("_M_insert_unique"), "{whole}");
        assert!(whole.contains("self ns/op"), "{whole}");
        assert!(!whole.contains("left out"), "{whole}");
    }
}
