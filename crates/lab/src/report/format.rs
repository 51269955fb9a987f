//! Formatting shared by every text output: three significant figures with SI prefixes, the csh
//! `time` line people have read for decades (`101.320u 78.930s 5:39.94 53.0%`), and
//! [`printable`], which every string from a user, an imported file or a profiled program goes
//! through before it reaches a terminal (from [`crate::safe_text`]).

pub use crate::safe_text::{printable, printable_lines, write_json};

/// `1234567.0` -> `1.23M`; `0.000123` -> `123µ`; three significant figures.
pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    let (scaled, prefix) = if a >= 1e12 {
        (x / 1e12, "T")
    } else if a >= 1e9 {
        (x / 1e9, "G")
    } else if a >= 1e6 {
        (x / 1e6, "M")
    } else if a >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    format!("{}{prefix}", sig3(scaled))
}

/// Three significant figures without a prefix: `12.3`, `0.123`, `123`.
pub fn sig3(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

pub fn opt_si(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), si)
}

pub fn opt_sig3(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), sig3)
}

/// The csh `time` line: user, system, elapsed (m:ss.ss), CPU%.
pub fn time_line(user_s: f64, sys_s: f64, wall_s: f64, cpu_pct: f64) -> String {
    let minutes = (wall_s / 60.0).floor();
    format!(
        "{user_s:.3}u {sys_s:.3}s {}:{:05.2} {cpu_pct:.1}%",
        minutes as u64,
        wall_s - minutes * 60.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(0.5), "0.500");
        assert_eq!(si(f64::NAN), "n/a");
        assert_eq!(
            time_line(101.32, 78.93, 339.94, 53.0),
            "101.320u 78.930s 5:39.94 53.0%"
        );
    }
}
