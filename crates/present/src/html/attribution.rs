//! The attribution tables of a run in the HTML report — where the CPU went and which locks
//! waited: top functions, what grows, the flame graph, and the lock_stat-like kernel and user
//! lock tables.

use lab::analysis::lock_contention::{LockSide, PointLocks};
use lab::analysis::profile::GrowthReport;
use lab::analysis::profile::PointProfile;
use lab::number_text::si;

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
        });
    }
    let mut svg = Vec::new();
    match write_flamegraph(&mut svg, last, format!("N={} ({})", last.n, last.event)) {
        Ok(()) => flames.push(Flame {
            title: format!("Flame graph at N={}", last.n),
            svg: String::from_utf8_lossy(&svg).into_owned(),
        }),
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
        let caption = format!(
            "{} locks at N={n}: {} ({})",
            side.as_str(),
            if rows.is_empty() {
                "no contention seen"
            } else {
                "most wait first"
            },
            lab::number_text::plural(point.trials, "traced trial")
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
        });
    }
}
