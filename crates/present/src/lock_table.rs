//! Terminal tables for `scalelab locks`: the `lock_stat`-like table at one N, and "what grows"
//! (lock wait per op at each N, ranked by growth), each followed by the losses and notes.
//! Formats what `analysis::lock_contention` derived; computes nothing.

use std::io::{self, Write};

use analysis::lock_contention::{LockGrowth, LockSide, PointLocks};
use model::number_text::{plural, sig3};
use model::safe_text::printable;

use crate::grid::Grid;
use crate::number_format::duration;
use crate::printer::Printer;

/// Left out first at a narrow width (then the caller's name is cut).
const OPTIONAL: [&str; 4] = ["min wait", "max wait", "avg wait", "total wait"];

fn side_title(side: LockSide) -> &'static str {
    match side {
        LockSide::Kernel => "kernel locks (lock:contention_begin/end)",
        LockSide::User => "user locks (futex waits)",
    }
}

/// The lock table at one N: per side, the `top` rows with the most wait, then the top call
/// sites of the first rows, the losses and the notes.
pub fn write_point(
    out: &mut Printer<'_>,
    header: &str,
    p: &PointLocks,
    sides: &[LockSide],
    top: usize,
) -> io::Result<()> {
    writeln!(out, "{header}")?;
    writeln!(
        out,
        "locks at N={}: {}, {:.3}s of windows, {} ops; figures summed over the trials, wait/op = total wait / ops",
        p.n,
        plural(p.trials, "traced trial"),
        p.window_s,
        p.ops
    )?;
    for &side in sides {
        let rows: Vec<_> = p.rows.iter().filter(|r| r.side == side).collect();
        writeln!(out)?;
        writeln!(out, "{}", side_title(side))?;
        if rows.is_empty() {
            writeln!(out, "  no contention seen")?;
            continue;
        }
        let mut t = Grid::plain(
            &[
                "contended",
                "total wait",
                "max wait",
                "min wait",
                "avg wait",
                "wait/op",
                "type",
                "lock",
                "caller",
            ],
            6,
            &OPTIONAL,
            Some("caller"),
        );
        for r in rows.iter().take(top) {
            t.add_row(vec![
                r.contentions.to_string(),
                match r.sampled {
                    Some((_, error)) if error > 0 => format!(
                        "{} ±{}",
                        duration(r.wait_total_ns as f64),
                        duration(error as f64)
                    ),
                    _ => duration(r.wait_total_ns as f64),
                },
                duration(r.wait_max_ns as f64),
                duration(r.wait_min_ns as f64),
                duration(r.wait_avg_ns),
                duration(r.wait_per_op_ns),
                printable(&r.kind).into_owned(),
                printable(&r.lock).into_owned(),
                printable(&r.caller).into_owned(),
            ]);
        }
        out.table(&t)?;
        if rows.len() > top {
            writeln!(out, "  … {} more rows (--top)", rows.len() - top)?;
        }
        for r in rows.iter().take(3) {
            if r.call_sites.is_empty() {
                continue;
            }
            writeln!(
                out,
                "  call sites of {} ({}):",
                printable(&r.caller),
                printable(&r.kind)
            )?;
            for (site, k) in &r.call_sites {
                writeln!(out, "    {k:>8}  {}", printable(site))?;
            }
        }
    }
    write_footer(out, p.lost_records, &p.notes, sides)
}

/// "What grows": wait per op at each N by lock and caller, most growth first.
pub fn write_growth(
    out: &mut Printer<'_>,
    header: &str,
    g: &LockGrowth,
    sides: &[LockSide],
    top: usize,
) -> io::Result<()> {
    writeln!(out, "{header}")?;
    let (first, last) = (g.points.first(), g.points.last());
    writeln!(
        out,
        "lock wait per op by lock and caller, ranked by growth from N={} to N={} (scalelab locks RUN --at N for one point)",
        first.copied().unwrap_or(0),
        last.copied().unwrap_or(0)
    )?;
    for &side in sides {
        writeln!(out)?;
        writeln!(out, "{}", side_title(side))?;
        if let Some((_, totals)) = g.totals.iter().find(|(s, _)| *s == side) {
            let line: Vec<String> = totals
                .iter()
                .map(|(n, w)| format!("N={n}: {}", duration(*w)))
                .collect();
            writeln!(out, "  total wait/op  {}", line.join("  "))?;
        }
        let rows: Vec<_> = g.rows.iter().filter(|r| r.side == side).collect();
        if rows.is_empty() {
            writeln!(out, "  no contention seen")?;
            continue;
        }
        let mut headers: Vec<String> = g.points.iter().map(|n| format!("wait/op N={n}")).collect();
        headers.push("growth".into());
        headers.push(format!("contended/trial N={}", last.copied().unwrap_or(0)));
        let right = headers.len();
        headers.extend(["type", "lock", "caller"].map(String::from));
        let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        // The middle N go first at a narrow width; the first and last N and the growth stay.
        let middle: Vec<&str> = header_refs[1..g.points.len().saturating_sub(1).max(1)].to_vec();
        let contended = headers[right - 1].as_str();
        let mut optional = vec![contended];
        optional.extend(middle);
        let mut t = Grid::plain(&header_refs, right, &optional, Some("caller"));
        for r in rows.iter().take(top) {
            let mut cells: Vec<String> =
                r.wait_per_op_ns.iter().map(|(_, w)| duration(*w)).collect();
            cells.push(if r.growth_ns >= 0.0 {
                format!("+{}", duration(r.growth_ns))
            } else {
                format!("-{}", duration(-r.growth_ns))
            });
            cells.push(sig3(r.contentions_per_trial.last().map_or(0.0, |c| c.1)));
            cells.push(printable(&r.kind).into_owned());
            cells.push(printable(&r.lock).into_owned());
            cells.push(printable(&r.caller).into_owned());
            t.add_row(cells);
        }
        out.table(&t)?;
        if rows.len() > top {
            writeln!(out, "  … {} more rows (--top)", rows.len() - top)?;
        }
    }
    write_footer(out, g.lost_records, &g.notes, sides)
}

/// The losses and the notes; a note about one side (`kernel locks: …`, `user locks: …`) only
/// when that side is shown.
fn write_footer(
    out: &mut Printer<'_>,
    lost: u64,
    notes: &[String],
    sides: &[LockSide],
) -> io::Result<()> {
    let opts = *out.options();
    let notes: Vec<&String> = notes
        .iter()
        .filter(|n| {
            (!n.starts_with("kernel locks:") || sides.contains(&LockSide::Kernel))
                && (!n.starts_with("user locks:") || sides.contains(&LockSide::User))
        })
        .collect();
    if lost > 0 || !notes.is_empty() {
        writeln!(out)?;
    }
    if lost > 0 {
        writeln!(
            out,
            "{} {lost} trace records lost (ring buffers full): counts are lower bounds",
            opts.palette.warning()
        )?;
    }
    for note in notes {
        writeln!(out, "note: {}", printable(note))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use analysis::lock_contention::LockRow;

    use super::*;
    use crate::printer::{Format, printed, printed_with};
    use crate::text_options::TextOptions;

    fn point(caller: &str) -> PointLocks {
        PointLocks {
            n: 2,
            trials: 1,
            ops: 1000,
            window_s: 1.0,
            rows: vec![LockRow {
                side: LockSide::User,
                lock: "0x561ddbb4b0c0".into(),
                kind: "futex".into(),
                caller: caller.into(),
                contentions: 1161,
                wait_total_ns: 94_104_970,
                wait_max_ns: 2_129_065,
                wait_min_ns: 3517,
                wait_avg_ns: 81_055.1,
                contentions_per_trial: 1161.0,
                wait_per_trial_ns: 94_104_970.0,
                wait_per_op_ns: 94_104_970.0,
                call_sites: vec![],
                sampled: None,
            }],
            lost_records: 0,
            notes: vec![],
        }
    }

    /// Issue 13: tables fit the terminal. At 80 columns the lock table leaves out the spread
    /// of waits, then cuts a long caller's name, and says so; without a limit it is whole.
    #[test]
    fn the_lock_table_fits_80_columns_cutting_the_caller_last() {
        let caller =
            "std::sync::poison::mutex::Mutex<T>::lock::contend_on_a_std_mutex_with_a_long_name";
        let p = point(caller);
        let draw = |width| {
            let opts = TextOptions {
                width,
                ..TextOptions::plain()
            };
            printed_with(Format::Text, &opts, |o| {
                write_point(o, "run 1", &p, &[LockSide::User], 10)
            })
        };
        let narrow = draw(Some(80));
        let table: Vec<&str> = narrow
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
            .collect();
        assert!(!table.is_empty(), "{narrow}");
        for line in &table {
            assert!(
                unicode_width::UnicodeWidthStr::width(*line) <= 80,
                "{narrow}"
            );
        }
        assert!(
            narrow.contains(
                "columns left out at 80 columns: total wait, max wait, min wait, avg wait"
            ),
            "{narrow}"
        );
        assert!(narrow.contains("`caller` cut to"), "{narrow}");
        assert!(narrow.contains("std::sync::poison::mutex"), "{narrow}");
        assert!(narrow.contains('…'), "{narrow}");
        assert!(narrow.contains("wait/op"), "{narrow}");
        let whole = draw(None);
        assert!(whole.contains(caller), "{whole}");
        assert!(!whole.contains("left out"), "{whole}");
    }

    #[test]
    fn the_point_table_names_every_column_and_the_call_sites() {
        let p = PointLocks {
            n: 2,
            trials: 1,
            ops: 1000,
            window_s: 1.0,
            rows: vec![LockRow {
                side: LockSide::Kernel,
                lock: "0xffff88820eef2db8".into(),
                kind: "rwsem:write".into(),
                caller: "do_unlinkat".into(),
                contentions: 42,
                wait_total_ns: 133_250_000,
                wait_max_ns: 12_460_000,
                wait_min_ns: 1000,
                wait_avg_ns: 3_170_000.0,
                contentions_per_trial: 42.0,
                wait_per_trial_ns: 133_250_000.0,
                wait_per_op_ns: 133_250.0,
                call_sites: vec![("do_unlinkat+0x134 ← __x64_sys_unlink+0x3b".into(), 42)],
                sampled: Some((7, 20_000_000)),
            }],
            lost_records: 3,
            notes: vec!["a note".into()],
        };
        let sides = [LockSide::Kernel, LockSide::User];
        let text = printed(Format::Text, |o| write_point(o, "run 1", &p, &sides, 10));
        for needle in [
            "contended",
            "133ms ±20.0ms",
            "rwsem:write",
            "do_unlinkat",
            "133µs",
            "call sites of do_unlinkat",
            "user locks (futex waits)",
            "no contention seen",
            "3 trace records lost",
            "note: a note",
        ] {
            assert!(text.contains(needle), "{needle} missing:\n{text}");
        }
    }
}
