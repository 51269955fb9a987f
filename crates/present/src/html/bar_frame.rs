//! The frame of the report's hand-drawn bar charts (the explain pictures): the SVG element, its
//! title, and a time axis (y, in ns per op) with light grid lines at `ticks`' steps, drawn as
//! `plot.rs` draws its charts (sans-serif, 18 px title, 13 px labels, grey grid). Text is
//! escaped here.

use std::fmt::Write as _;

use super::legend::escape;
use super::ticks::nice_step;
use crate::number_format::duration;

/// At most this many ticks on the time axis.
const MAX_TICKS: usize = 7;

/// Where the plotting area lies and which values it spans.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    y0: f64,
    y1: f64,
    step: f64,
}

impl Frame {
    /// A plotting area from (`left`, `top`) to (`right`, `bottom`) spanning `lo..=hi` (0 always
    /// inside), rounded out to whole tick steps.
    pub(super) fn new(left: f64, right: f64, top: f64, bottom: f64, lo: f64, hi: f64) -> Frame {
        let (lo, hi) = (lo.min(0.0), hi.max(0.0));
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = nice_step(hi - lo, MAX_TICKS);
        Frame {
            left,
            right,
            top,
            bottom,
            // A value within rounding of a tick ends the axis there.
            y0: (lo / step + 1e-9).floor() * step,
            y1: (hi / step - 1e-9).ceil() * step,
            step,
        }
    }

    /// The pixel row of value `v`.
    pub(super) fn y(&self, v: f64) -> f64 {
        self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)
    }

    /// The grid lines, tick labels (as durations) and the axis name, `label`.
    pub(super) fn y_axis(&self, label: &str) -> String {
        let mut g = String::from("<g class=\"axis\" font-family=\"sans-serif\" font-size=\"13\">");
        let ticks = ((self.y1 - self.y0) / self.step).round() as i64;
        for k in 0..=ticks {
            let v = self.y0 + k as f64 * self.step;
            let v = if v.abs() < self.step * 1e-9 { 0.0 } else { v };
            let y = self.y(v);
            // Writing to a String cannot fail.
            let _ = write!(
                g,
                "<line x1=\"{}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"rgb(225,225,225)\"/>\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#222\">{}</text>",
                self.left,
                self.right,
                self.left - 6.0,
                y + 4.0,
                duration(v)
            );
        }
        let _ = write!(
            g,
            "<line x1=\"{l}\" y1=\"{}\" x2=\"{l}\" y2=\"{}\" stroke=\"#222\"/>\
             <line x1=\"{l}\" y1=\"{b:.1}\" x2=\"{}\" y2=\"{b:.1}\" stroke=\"#222\"/>\
             <text transform=\"translate(16,{:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#222\">{}</text></g>",
            self.top,
            self.bottom,
            self.right,
            (self.top + self.bottom) / 2.0,
            escape(label),
            l = self.left,
            b = self.y(0.0),
        );
        g
    }
}

/// The opening of a chart `width` × `height` pixels: the `<svg>` element (scalable, with its
/// `data-chart` name), a white ground and the title.
pub(super) fn open(width: f64, height: f64, name: &str, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width} {height:.0}\" data-chart=\"{name}\">\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height:.0}\" fill=\"#fff\"/>\
         <text x=\"{:.1}\" y=\"26\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"18\" fill=\"#222\">{}</text>",
        width / 2.0,
        escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_spans_zero_and_the_values_in_whole_steps() {
        let f = Frame::new(80.0, 880.0, 40.0, 340.0, 0.0, 2345.0);
        // The axis starts at 0, not a step below it.
        assert_eq!(f.y(0.0), 340.0);
        assert!(!f.y_axis("t").contains(">-"), "a tick below zero");
        assert!(f.y(2345.0) >= 40.0 && f.y(2345.0) < 100.0, "{f:?}");
        let axis = f.y_axis("time per op");
        assert!(
            axis.contains(">0</text>") && axis.contains("time per op"),
            "{axis}"
        );
        // Below zero: the zero line lies inside.
        let f = Frame::new(80.0, 880.0, 40.0, 340.0, -500.0, 1000.0);
        assert!(f.y(0.0) < 340.0 && f.y(-500.0) <= 340.0, "{f:?}");
    }
}
