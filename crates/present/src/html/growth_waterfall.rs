//! The explain picture of what grew: a waterfall from the time per op at the smallest N to the
//! largest, one bar per named cause's growth (up where it grew, down where it shrank), then the
//! unexplained rest — the numbers of the explanation's growth table (`growth` in `explain
//! --json`): `from_ns + Σ named delta_ns + unexplained_ns = to_ns`.
//!
//! Hand-drawn SVG; each bar is a `<rect class="step">` with a `<title>` (hover) and data
//! attributes: `data-step` (`start`, `cause`, `unexplained`, `end`), `data-ns` (the total, or
//! the growth, in ns per op), and a cause's names as the cost bars give them. A cause's colour
//! is its colour in the cost bars ([`colour_of`](super::cost_parts::colour_of)).

use std::fmt::Write as _;

use analysis::explain::{Explanation, GrowthAccount};

use super::bar_frame::{Frame, open};
use super::cost_parts::{CostParts, cause_attributes, colour_of, cost_parts};
use super::legend::escape;
use super::plot::palette_rgb;
use crate::explain_text::{cause_label, signed};
use crate::number_format::duration;

const WIDTH: f64 = 900.0;
const TOP: f64 = 44.0;
const PLOT: f64 = 280.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 20.0;
/// Room below the plot for the slanted labels.
const BELOW: f64 = 170.0;
/// The longest label drawn whole; a longer one is cut (its title has it whole).
const LABEL_CHARS: usize = 34;

/// One bar: where it starts and ends, what it is.
struct Step {
    kind: &'static str,
    label: String,
    attributes: String,
    from: f64,
    to: f64,
    /// Its value: the total (start, end) or the growth.
    ns: f64,
    rgb: (u8, u8, u8),
}

/// The waterfall of `e`'s growth, or `None` with one N.
pub(super) fn growth_waterfall(e: &Explanation) -> Option<String> {
    let g = e.growth.as_ref()?;
    let parts = cost_parts(e);
    let steps = steps(g, &parts);
    let lo = steps.iter().map(|s| s.from.min(s.to)).fold(0.0, f64::min);
    let hi = steps.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max);
    let frame = Frame::new(LEFT, WIDTH - RIGHT, TOP, TOP + PLOT, lo, hi);
    let mut svg = open(
        WIDTH,
        TOP + PLOT + BELOW,
        "growth",
        &format!(
            "What grew from N={} to N={}: {} per {}",
            g.from_n,
            g.to_n,
            signed(g.delta_ns),
            e.per
        ),
    );
    svg.push_str(&frame.y_axis(&format!("time per {} per task", e.per)));
    let slot = (frame.right - frame.left) / steps.len() as f64;
    let bar = (slot * 0.6).min(70.0);
    svg.push_str("<g class=\"bars\">");
    for (i, s) in steps.iter().enumerate() {
        let cx = frame.left + slot * (i as f64 + 0.5);
        let x = cx - bar / 2.0;
        let (y_hi, y_lo) = (frame.y(s.from.max(s.to)), frame.y(s.from.min(s.to)));
        let (r, gr, b) = s.rgb;
        let style = if s.kind == "unexplained" {
            format!("fill=\"rgb({r},{gr},{b})\" stroke=\"#777\" stroke-dasharray=\"3 2\"")
        } else {
            format!("fill=\"rgb({r},{gr},{b})\"")
        };
        let value = if matches!(s.kind, "start" | "end") {
            duration(s.ns)
        } else {
            signed(s.ns)
        };
        // Writing to a String cannot fail.
        let _ = write!(
            svg,
            "<rect class=\"step\" x=\"{x:.1}\" y=\"{y_hi:.2}\" width=\"{bar:.1}\" height=\"{:.2}\" {style} data-step=\"{}\"{} data-from-n=\"{}\" data-to-n=\"{}\" data-ns=\"{}\"><title>{}: {value} per {}</title></rect>",
            (y_lo - y_hi).max(0.5),
            s.kind,
            s.attributes,
            g.from_n,
            g.to_n,
            s.ns,
            escape(&s.label),
            escape(&e.per),
        );
        // The value beside the bar's far end: above a rise, below a fall.
        let ty = if s.to >= s.from {
            y_hi - 5.0
        } else {
            y_lo + 14.0
        };
        let _ = write!(
            svg,
            "<text x=\"{cx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">{value}</text>"
        );
        if i + 1 < steps.len() {
            // A thin connector from this bar's end to the next bar's start.
            let y = frame.y(s.to);
            let _ = write!(
                svg,
                "<line x1=\"{:.1}\" y1=\"{y:.2}\" x2=\"{:.1}\" y2=\"{y:.2}\" stroke=\"#999\" stroke-dasharray=\"2 2\"/>",
                x + bar,
                cx + slot - bar / 2.0
            );
        }
        let _ = write!(
            svg,
            "<text transform=\"translate({cx:.1},{:.1}) rotate(-35)\" text-anchor=\"end\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">{}</text>",
            frame.bottom + 14.0,
            escape(&cut(&s.label))
        );
    }
    svg.push_str("</g></svg>");
    Some(svg)
}

/// The bars: the start, each named cause, the unexplained rest, the end.
fn steps(g: &GrowthAccount, parts: &CostParts) -> Vec<Step> {
    let total = palette_rgb(5);
    let mut steps = vec![Step {
        kind: "start",
        label: format!("at N={}", g.from_n),
        attributes: String::new(),
        from: 0.0,
        to: g.from_ns,
        ns: g.from_ns,
        rgb: total,
    }];
    let mut at = g.from_ns;
    for c in &g.named {
        let cause = &c.cause;
        let label = cause_label(cause);
        steps.push(Step {
            kind: "cause",
            attributes: cause_attributes(&label, cause),
            label,
            from: at,
            to: at + c.delta_ns,
            ns: c.delta_ns,
            rgb: colour_of(parts, cause),
        });
        at += c.delta_ns;
    }
    steps.push(Step {
        kind: "unexplained",
        label: "unexplained".into(),
        attributes: " data-part=\"unexplained\"".into(),
        from: at,
        to: at + g.unexplained_ns,
        ns: g.unexplained_ns,
        rgb: (235, 235, 235),
    });
    steps.push(Step {
        kind: "end",
        label: format!("at N={}", g.to_n),
        attributes: String::new(),
        from: 0.0,
        to: g.to_ns,
        ns: g.to_ns,
        rgb: total,
    });
    steps
}

/// `label`, cut to [`LABEL_CHARS`] with an ellipsis.
fn cut(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let head: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use analysis::explain::explain;
    use lab::test_runs::explained_run;

    use super::*;

    /// (data-step, data-ns) of every bar of `svg`.
    fn bars(svg: &str) -> Vec<(String, f64)> {
        svg.split("<rect class=\"step\"")
            .skip(1)
            .map(|r| {
                let attr = |name: &str| {
                    let v = &r[r.find(&format!(" {name}=\"")).unwrap() + name.len() + 3..];
                    v[..v.find('"').unwrap()].to_string()
                };
                (attr("data-step"), attr("data-ns").parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn the_bars_walk_from_the_first_ns_to_the_last_by_the_growth_tables_numbers() {
        let e = explain(&explained_run(), &[]).unwrap();
        let g = e.growth.as_ref().unwrap();
        let svg = growth_waterfall(&e).unwrap();
        let b = bars(&svg);
        assert_eq!(b.len(), g.named.len() + 3, "{b:?}");
        assert_eq!(b[0], ("start".into(), g.from_ns));
        assert_eq!(b[b.len() - 1], ("end".into(), g.to_ns));
        assert_eq!(b[b.len() - 2], ("unexplained".into(), g.unexplained_ns));
        for (bar, c) in b[1..].iter().zip(&g.named) {
            assert_eq!(bar, &("cause".to_string(), c.delta_ns));
        }
        let walked: f64 = b[..b.len() - 1].iter().map(|s| s.1).sum();
        assert!(
            (walked - g.to_ns).abs() <= 1e-6 * g.to_ns,
            "{walked} ≠ {}",
            g.to_ns
        );
        assert_eq!(svg.matches("<title>").count(), b.len());

        // One N: no growth, no waterfall.
        let mut one = e.clone();
        one.growth = None;
        assert!(growth_waterfall(&one).is_none());
    }

    #[test]
    fn a_long_label_is_cut_and_whole_in_its_title() {
        let long = "x".repeat(80);
        assert_eq!(cut(&long).chars().count(), LABEL_CHARS);
        assert!(cut(&long).ends_with('…'));
        assert_eq!(cut("futex wait"), "futex wait");
    }
}
