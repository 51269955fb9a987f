//! Axis ticks for the report's charts: where they go and how they read. Value axes get "nice"
//! steps (1, 2 or 5 × 10^k) labelled with as many decimals as the step needs, so ticks never
//! read alike (not ten `12.0M`); axes of counted things (N, runs) get ticks only at the values
//! measured, thinned where their labels would collide.

/// SI prefixes by power of 1000, as `model::number_text::si` writes them.
const PREFIXES: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];

/// A step of 1, 2 or 5 × 10^k that cuts `span` into at most `max_ticks - 1` intervals.
pub(super) fn nice_step(span: f64, max_ticks: usize) -> f64 {
    let intervals = max_ticks.saturating_sub(1).max(1) as f64;
    if !span.is_finite() || span <= 0.0 {
        return 1.0;
    }
    let raw = span / intervals;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&step| step >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// Ticks of a value axis over `lo..=hi`: every multiple of [`nice_step`] inside, with that step.
pub(super) fn value_ticks(lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64) {
    let step = nice_step(hi - lo, max_ticks);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    let ticks = (first..=last)
        // Multiply rather than accumulate, so 0.1 + 0.2 never shows as 0.30000000000000004.
        .map(|k| k as f64 * step)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect();
    (ticks, step)
}

/// How a value axis with ticks `step` apart, reaching `largest` in magnitude, writes a tick:
/// one SI prefix for the whole axis and as many decimals as the step needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ValueFormat {
    scale: f64,
    prefix: &'static str,
    decimals: usize,
}

impl ValueFormat {
    /// The format for ticks `step` apart on an axis whose largest magnitude is `largest`.
    pub(super) fn new(step: f64, largest: f64) -> ValueFormat {
        let (scale, prefix) = PREFIXES
            .into_iter()
            .find(|(s, _)| largest.abs() >= *s)
            .unwrap_or((1.0, ""));
        let scaled = step / scale;
        // Nice steps have one significant digit: 10^k needs -k decimals when k < 0.
        let decimals = if scaled.is_finite() && scaled > 0.0 {
            (-(scaled.log10() + 1e-9).floor()).max(0.0) as usize
        } else {
            0
        };
        ValueFormat {
            scale,
            prefix,
            decimals,
        }
    }

    /// One tick's label.
    pub(super) fn label(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        format!("{:.*}{}", self.decimals, v / self.scale, self.prefix)
    }
}

/// The ticks of a counted axis (N, runs): one at each of `values` (sorted, labelled), keeping
/// a tick only when its label clears the last kept one on an axis of `pixels` for `span`.
/// The first and the last value are always kept: they bound what was measured.
pub(super) fn counted_ticks(
    values: &[(f64, String)],
    span: (f64, f64),
    pixels: f64,
) -> Vec<(f64, String)> {
    let width = span.1 - span.0;
    if width <= 0.0 || values.is_empty() {
        return values.to_vec();
    }
    let px = |v: f64| (v - span.0) / width * pixels;
    // About 7 px a character at the 12 px axis font, plus a gap.
    let room = |a: &str, b: &str| (a.chars().count() + b.chars().count()) as f64 * 3.5 + 10.0;
    let mut kept: Vec<(f64, String)> = Vec::new();
    for (i, (v, label)) in values.iter().enumerate() {
        let fits = |prev: &(f64, String)| px(*v) - px(prev.0) >= room(&prev.1, label);
        match kept.last() {
            None => kept.push((*v, label.clone())),
            Some(prev) if fits(prev) => kept.push((*v, label.clone())),
            Some(_) if i == values.len() - 1 => {
                // The last value wins over the one before it (never over the first).
                while kept.len() > 1 && !fits(kept.last().expect("non-empty")) {
                    kept.pop();
                }
                if kept.len() > 1 || fits(&kept[0]) {
                    kept.push((*v, label.clone()));
                }
            }
            Some(_) => {}
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(lo: f64, hi: f64) -> Vec<String> {
        let (ticks, step) = value_ticks(lo, hi, 8);
        let f = ValueFormat::new(step, lo.abs().max(hi.abs()));
        ticks.iter().map(|&v| f.label(v)).collect()
    }

    #[test]
    fn a_narrow_range_of_millions_gets_distinct_tick_labels() {
        // The bug: a history of runs around 12.0M drew ten ticks all reading `12.0M`.
        let l = labels(11.95e6, 12.06e6);
        assert_eq!(
            l,
            ["11.96M", "11.98M", "12.00M", "12.02M", "12.04M", "12.06M"]
        );
    }

    #[test]
    fn value_ticks_are_nice_steps_with_as_many_decimals_as_needed() {
        assert_eq!(
            labels(0.0, 1.2e6),
            ["0", "0.2M", "0.4M", "0.6M", "0.8M", "1.0M", "1.2M"]
        );
        assert_eq!(labels(0.0, 1.08), ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        assert_eq!(labels(0.0, 37.0), ["0", "10", "20", "30"]);
        assert_eq!(
            labels(-0.3, 0.3),
            ["-0.3", "-0.2", "-0.1", "0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(nice_step(0.0, 6), 1.0);
        for (span, max) in [(7.3, 6), (1234.0, 8), (0.004, 5), (9.9e9, 6)] {
            let step = nice_step(span, max);
            assert!(
                span / step <= (max - 1) as f64 + 1e-9,
                "{span} {max} {step}"
            );
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|m| (m - mantissa).abs() < 1e-9),
                "{step}"
            );
        }
    }

    fn n(values: &[u32]) -> Vec<(f64, String)> {
        values
            .iter()
            .map(|&v| (f64::from(v), v.to_string()))
            .collect()
    }

    fn kept(values: &[u32], pixels: f64) -> Vec<String> {
        let v = n(values);
        let span = (v[0].0 - 0.5, v[v.len() - 1].0 + 0.5);
        counted_ticks(&v, span, pixels)
            .into_iter()
            .map(|t| t.1)
            .collect()
    }

    #[test]
    fn counted_ticks_are_the_measured_values_thinned_where_labels_collide() {
        assert_eq!(kept(&[1, 2], 450.0), ["1", "2"]);
        assert_eq!(
            kept(&[1, 2, 3, 4, 6, 8], 450.0),
            ["1", "2", "3", "4", "6", "8"]
        );
        // pow2 up to 64 on a linear axis: 1, 2 and 4 crowd at the left.
        let pow2 = kept(&[1, 2, 4, 8, 16, 32, 64], 450.0);
        assert_eq!(pow2.first().map(String::as_str), Some("1"));
        assert_eq!(pow2.last().map(String::as_str), Some("64"));
        assert!(
            pow2.contains(&"32".to_string()) && !pow2.contains(&"2".to_string()),
            "{pow2:?}"
        );
        // 1..=200 keeps the ends and spaces the rest.
        let dense: Vec<u32> = (1..=200).collect();
        let d = kept(&dense, 450.0);
        assert_eq!(d.first().map(String::as_str), Some("1"));
        assert_eq!(d.last().map(String::as_str), Some("200"));
        assert!(d.len() > 5 && d.len() < 30, "{d:?}");
        assert_eq!(kept(&[4], 450.0), ["4"]);
    }
}
