//! How figures read in tables, beyond the number text the engine's warnings share with them
//! (`model::number_text`: `1.23M`, `+1.23%`, `1,2,4`): `n/a` for a missing figure, durations with
//! a unit (`12.5µs`), memory (`12.3 MiB`), and the csh `time` line people have read for decades
//! (`101.320u 78.930s 5:39.94 53.0%`).

use model::number_text::{kib, si, sig3};

/// [`si`], or `n/a` for a missing figure.
pub(crate) fn opt_si(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), si)
}

/// [`kib`] (`12.3 MiB`), or `n/a` for a missing figure.
pub(crate) fn opt_kib(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), kib)
}

/// [`sig3`], or `n/a` for a missing figure.
pub(crate) fn opt_sig3(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), sig3)
}

/// The csh `time` line: user, system, elapsed (m:ss.ss), CPU%.
pub(crate) fn time_line(user_s: f64, sys_s: f64, wall_s: f64, cpu_pct: f64) -> String {
    let minutes = (wall_s / 60.0).floor();
    format!(
        "{user_s:.3}u {sys_s:.3}s {}:{:05.2} {cpu_pct:.1}%",
        minutes as u64,
        wall_s - minutes * 60.0
    )
}

/// A duration in ns as `850ns`, `12.5µs`, `3.17ms`, `1.20s`.
pub(crate) fn duration(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".into();
    }
    let a = ns.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{}s", sig3(ns / 1e9))
    } else if a >= 1e6 {
        format!("{}ms", sig3(ns / 1e6))
    } else if a >= 1e3 {
        format!("{}µs", sig3(ns / 1e3))
    } else {
        format!("{}ns", sig3(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(opt_si(Some(12_345.0)), "12.3k");
        assert_eq!(opt_si(None), "n/a");
        assert_eq!(
            time_line(101.32, 78.93, 339.94, 53.0),
            "101.320u 78.930s 5:39.94 53.0%"
        );
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(duration(850.0), "850ns");
        assert_eq!(duration(12_500.0), "12.5µs");
        assert_eq!(duration(3_170_000.0), "3.17ms");
        assert_eq!(duration(1.2e9), "1.20s");
        assert_eq!(duration(0.0), "0");
    }
}
