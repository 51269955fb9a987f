//! The explain picture of where the time per op goes: one stacked bar per N of its parts
//! ([`cost_parts`](super::cost_parts)), a legend below, the total above each bar. Hand-drawn
//! SVG; each part is a `<rect class="part">` with a `<title>` (hover) and its exact value as
//! data attributes — `data-n`, `data-ns` (ns per op, as `explain --json` has it) and the part's
//! names ([`PartKey::data_attributes`](super::cost_parts::PartKey::data_attributes)).
//!
//! A part below zero (an unexplained rest where a trace saw more than the accounting) is drawn
//! as a pale, outlined block taken off the top of the stack, so the bar ends at the total.

use std::fmt::Write as _;

use analysis::explain::Explanation;

use super::bar_frame::{Frame, open};
use super::cost_parts::{CostParts, PointParts, cost_parts};
use super::legend::{self, Entry, Mark, escape};
use crate::number_format::duration;

const WIDTH: f64 = 900.0;
const TOP: f64 = 44.0;
const PLOT: f64 = 300.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 20.0;
/// Room below the plot for the N labels and the axis name.
const BELOW: f64 = 46.0;

/// The stacked bars of `e`, one per N.
pub(super) fn cost_bars(e: &Explanation) -> String {
    let parts = cost_parts(e);
    let entries: Vec<Entry> = parts
        .keys
        .iter()
        .map(|k| Entry {
            name: k.label.clone(),
            rgb: k.rgb,
            mark: if k.unexplained() {
                Mark::Outline
            } else {
                Mark::Block
            },
        })
        .collect();
    let (_, strip) = legend::layout(&entries, WIDTH);
    let height = TOP + PLOT + BELOW + strip;
    let (lo, hi) = extent(&parts);
    let frame = Frame::new(LEFT, WIDTH - RIGHT, TOP, TOP + PLOT, lo, hi);
    let mut svg = open(
        WIDTH,
        height,
        "cost-per-op",
        &format!("Where the time per {} goes, at each N", e.per),
    );
    svg.push_str(&frame.y_axis(&format!("time per {} per task", e.per)));
    let slot = (frame.right - frame.left) / parts.points.len().max(1) as f64;
    let bar = (slot * 0.55).min(90.0);
    svg.push_str("<g class=\"bars\">");
    for (i, PointParts { n, total, values }) in parts.points.iter().enumerate() {
        let x = frame.left + slot * (i as f64 + 0.5) - bar / 2.0;
        let mut top = 0.0;
        let mut highest: f64 = 0.0;
        let drawn = values
            .iter()
            .filter(|v| v.1 >= 0.0)
            .chain(values.iter().filter(|v| v.1 < 0.0));
        for &(k, ns) in drawn {
            let key = &parts.keys[k];
            let (from, to) = (top, top + ns);
            top = to;
            highest = highest.max(from.max(to));
            let (y_hi, y_lo) = (frame.y(from.max(to)), frame.y(from.min(to)));
            let (r, g, b) = key.rgb;
            let style = if ns < 0.0 {
                format!(
                    "fill=\"#fff\" fill-opacity=\"0.75\" stroke=\"rgb({r},{g},{b})\" stroke-dasharray=\"4 3\""
                )
            } else if key.unexplained() {
                format!("fill=\"rgb({r},{g},{b})\" stroke=\"#777\" stroke-dasharray=\"3 2\"")
            } else {
                format!("fill=\"rgb({r},{g},{b})\" stroke=\"#fff\" stroke-width=\"0.5\"")
            };
            let share = if *total > 0.0 {
                format!(" ({:.0}% of {})", ns / total * 100.0, duration(*total))
            } else {
                String::new()
            };
            // Writing to a String cannot fail.
            let _ = write!(
                svg,
                "<rect class=\"part\" x=\"{x:.1}\" y=\"{y_hi:.2}\" width=\"{bar:.1}\" height=\"{:.2}\" {style}{} data-n=\"{n}\" data-ns=\"{ns}\"><title>N={n} · {}: {} per {}{share}</title></rect>",
                (y_lo - y_hi).max(0.0),
                key.data_attributes(),
                escape(&key.label),
                duration(ns),
                escape(&e.per),
            );
        }
        let cx = x + bar / 2.0;
        let _ = write!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{y:.2}\" x2=\"{:.1}\" y2=\"{y:.2}\" stroke=\"#222\" stroke-width=\"2\" data-n=\"{n}\" data-total=\"{total}\"/>\
             <text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"13\" fill=\"#222\">{}</text>\
             <text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"13\" fill=\"#222\">N={n}</text>",
            x - 4.0,
            x + bar + 4.0,
            frame.y(highest.max(*total)) - 6.0,
            duration(*total),
            frame.bottom + 18.0,
            y = frame.y(*total),
        );
    }
    svg.push_str("</g>");
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"13\" fill=\"#222\">N (tasks)</text>",
        (frame.left + frame.right) / 2.0,
        frame.bottom + 38.0
    );
    svg.push_str(&legend::svg(&entries, WIDTH, TOP + PLOT + BELOW));
    svg.push_str("</svg>");
    svg
}

/// The lowest and highest value a bar reaches: its stack of positive parts and its total.
fn extent(parts: &CostParts) -> (f64, f64) {
    parts
        .points
        .iter()
        .fold((0.0, 0.0), |(lo, hi): (f64, f64), p| {
            let up: f64 = p.values.iter().map(|v| v.1).filter(|v| *v > 0.0).sum();
            (lo.min(p.total), hi.max(up).max(p.total))
        })
}

#[cfg(test)]
mod tests {
    use analysis::explain::explain;
    use lab::test_runs::explained_run;

    use super::*;

    /// Every `data-ns` of `svg`'s parts at `n`.
    fn values(svg: &str, n: u32) -> Vec<f64> {
        svg.split("<rect class=\"part\"")
            .skip(1)
            .filter(|r| r.contains(&format!(" data-n=\"{n}\" ")))
            .map(|r| {
                let v = &r[r.find(" data-ns=\"").unwrap() + 10..];
                v[..v.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn each_bar_holds_its_parts_adding_up_to_the_time_per_op_with_a_title_each() {
        let e = explain(&explained_run(), &[]).unwrap();
        let svg = cost_bars(&e);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        for p in &e.points {
            let v = values(&svg, p.n);
            assert!(!v.is_empty(), "N={}: no part", p.n);
            let sum: f64 = v.iter().sum();
            let total = p.accounting.ns_per_op_task;
            assert!(
                (sum - total).abs() <= 1e-6 * total,
                "N={}: {sum} ≠ {total}",
                p.n
            );
            assert!(svg.contains(&format!("data-total=\"{total}\"")));
        }
        assert_eq!(
            svg.matches("<rect class=\"part\"").count(),
            svg.matches("<title>N=").count()
        );
        assert!(svg.contains("<g class=\"legend\""), "a legend");
        assert!(svg.contains("futex wait"), "the lock wait is named: {svg}");
    }
}
