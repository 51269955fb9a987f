//! The attribution tables of a run in the HTML report — where the CPU went and which locks
//! waited: top functions, what grows, the flame graph, and the lock_stat-like kernel and user
//! lock tables.

use analysis::lock_contention::{LockSide, PointLocks};
use analysis::profile::GrowthReport;
use analysis::profile::PointProfile;
use model::number_text::si;

use super::page::{Flame, Table};
use crate::flame_graph::write_flamegraph;
use crate::number_format::duration;

/// The top functions at the largest profiled N, what grows with N, and that N's flame graph.
pub(super) fn profile_tables(
    points: &[PointProfile],
    growth: Option<&GrowthReport>,
    tables: &mut Vec<Table>,
    flames: &mut Vec<Flame>,
    warnings: &mut Vec<String>,
) {
    const TOP: usize = 15;
    let Some(last) = points.last() else {
        return;
    };
    let rows = last
        .functions
        .iter()
        .take(TOP)
        .map(|f| {
            vec![
                f.name.clone(),
                f.dso.clone(),
                format!("{:.2}%", f.self_share),
                format!("{:.2}%", f.total_share),
                f.self_samples.to_string(),
                f.cost_per_op.map_or_else(|| "n/a".into(), si),
            ]
        })
        .collect();
    tables.push(Table {
        caption: format!(
            "Profile at N={}: top functions by self share ({}; cost per op in {})",
            last.n, last.event, last.unit
        ),
        headers: [
            "function",
            "dso",
            "self",
            "total",
            "samples",
            "self cost/op",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        left_columns: 2,
        empty: format!("No samples at N={}.", last.n),
    });
    if let Some(report) = growth {
        let rows = report
            .rows
            .iter()
            .take(TOP)
            .map(|g| {
                vec![
                    format!("{}{}", g.name, if g.lock { " (lock)" } else { "" }),
                    g.dso.clone(),
                    g.cost_first.map_or_else(|| "—".into(), si),
                    si(g.cost_last),
                    g.ratio.map_or_else(|| "new".into(), |r| format!("×{r:.2}")),
                    si(g.growth),
                ]
            })
            .collect();
        let (first, last_n) = (
            report.points.first().copied().unwrap_or(0),
            report.points.last().copied().unwrap_or(0),
        );
        tables.push(Table {
            caption: format!(
                "What grows: cost per op ({}) at N={last_n} over N={first}",
                report.unit
            ),
            headers: [
                "function",
                "dso",
                &format!("N={first}"),
                &format!("N={last_n}"),
                "ratio",
                "growth/op",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            left_columns: 2,
            empty: format!(
                "No function's cost per op was measured at both N={first} and N={last_n}."
            ),
        });
    }
    let mut svg = Vec::new();
    match write_flamegraph(&mut svg, last, format!("N={} ({})", last.n, last.event)) {
        Ok(()) => {
            let svg = String::from_utf8_lossy(&svg).into_owned();
            flames.push(Flame {
                title: format!("Flame graph at N={}", last.n),
                height: svg_height(&svg).unwrap_or(FLAME_HEIGHT),
                svg: framed(&svg),
            });
        }
        Err(e) => warnings.push(format!("flame graph not drawn: {e}")),
    }
}

/// Kernel and user lock tables at the largest traced N (lock_stat-like columns).
pub(super) fn lock_tables(point: &PointLocks, tables: &mut Vec<Table>, warnings: &mut Vec<String>) {
    const TOP: usize = 15;
    let n = point.n;
    if point.lost_records > 0 {
        warnings.push(format!(
            "locks at N={n}: {} records lost (ring buffer full): waits are undercounted",
            point.lost_records
        ));
    }
    warnings.extend(
        point
            .notes
            .iter()
            .map(|note| format!("locks at N={n}: {note}")),
    );
    for side in [LockSide::Kernel, LockSide::User] {
        let rows: Vec<Vec<String>> = point
            .rows
            .iter()
            .filter(|r| r.side == side)
            .take(TOP)
            .map(|r| {
                vec![
                    r.lock.clone(),
                    r.kind.clone(),
                    r.caller.clone(),
                    r.contentions.to_string(),
                    duration(r.wait_total_ns as f64),
                    duration(r.wait_max_ns as f64),
                    duration(r.wait_min_ns as f64),
                    duration(r.wait_avg_ns),
                    duration(r.wait_per_op_ns),
                ]
            })
            .collect();
        let trials = model::number_text::plural(point.trials, "traced trial");
        let caption = format!(
            "{} locks at N={n}: most wait first ({trials})",
            capitalized(side.as_str())
        );
        let empty = format!(
            "{} locks at N={n}: no contention seen ({trials}).",
            capitalized(side.as_str())
        );
        tables.push(Table {
            caption,
            headers: [
                "lock",
                "type",
                "caller",
                "contentions",
                "wait total",
                "max",
                "min",
                "avg",
                "wait/op",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            left_columns: 3,
            empty,
        });
    }
}

/// A frame's height when the flame graph's own cannot be read.
const FLAME_HEIGHT: u32 = 520;

/// The height inferno gave the drawing (`<svg … height="NNN"`), which depends on the deepest
/// stack.
fn svg_height(svg: &str) -> Option<u32> {
    let tag = &svg[svg.find("<svg")?..];
    let tag = &tag[..tag.find('>')?];
    let value = &tag[tag.find(" height=\"")? + 9..];
    value[..value.find('"')?].parse().ok()
}

/// The flame graph as the HTML document its frame shows. A frame's `srcdoc` is parsed as
/// HTML, where an `<svg>` without a width is drawn 300 px wide — and inferno's script drops the
/// width to make the drawing "fluid". So the SVG goes in a page whose style gives it the full
/// width of the frame, with no margin; the XML prologue, meaningless in HTML, is dropped.
fn framed(svg: &str) -> String {
    let body = svg.find("<svg").map_or(svg, |i| &svg[i..]);
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>\
         html,body{{margin:0;padding:0}}svg{{display:block;width:100%}}\
         </style></head><body>{body}</body></html>"
    )
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
