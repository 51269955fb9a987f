//! How numbers read in the engine's messages (warnings and their hints) and in every table the
//! `present` crate draws: three significant figures with SI prefixes (`1.23M`), percentages
//! (`+1.23%`, `0.5%`), memory in binary units (`12.3 MiB`), lists of task counts (`1,2,4`) and counted nouns (`1 trial`,
//! `2 trials`). One definition each, so a figure reads the same in a warning and in the table
//! above it.

/// `1234567.0` -> `1.23M`; `0.000123` -> `0.000`; three significant figures, with SI prefixes
/// up to E (1e18) and scientific notation beyond (`1.23e21`).
pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    const PREFIXES: [(f64, &str); 6] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let a = x.abs();
    if a >= 1e21 {
        return scientific(x);
    }
    match PREFIXES.iter().find(|(scale, _)| a >= *scale) {
        Some((scale, prefix)) => format!("{}{prefix}", sig3(x / scale)),
        None => sig3(x),
    }
}

/// A size in KiB (`ru_maxrss`'s unit) as three significant figures of KiB, MiB, GiB or TiB:
/// `812 KiB`, `12.3 MiB`, `1.50 GiB`.
pub fn kib(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    const UNITS: [(f64, &str); 3] = [
        (1024.0 * 1024.0 * 1024.0, "TiB"),
        (1024.0 * 1024.0, "GiB"),
        (1024.0, "MiB"),
    ];
    match UNITS.iter().find(|(scale, _)| x.abs() >= *scale) {
        Some((scale, unit)) => format!("{} {unit}", sig3(x / scale)),
        None => format!("{} KiB", sig3(x)),
    }
}

/// `1.23e21`: three significant figures in scientific notation.
fn scientific(x: f64) -> String {
    format!("{x:.2e}")
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

/// A relative change as a signed percentage: `+1.23%`, `-12.3%`, `+1.00e17%` beyond a million
/// percent.
pub fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    if x.is_finite() && !p.is_finite() {
        // x·100 overflows: scale the mantissa instead (1e308 → +1.00e310%).
        let text = format!("{x:+.2e}");
        if let Some((mantissa, exp)) = text.split_once('e') {
            let exp: i32 = exp.parse().unwrap_or(0);
            return format!("{mantissa}e{}%", exp + 2);
        }
    }
    if p.abs() < 10.0 {
        format!("{p:+.2}%")
    } else if p.abs() < 1e6 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.2e}%")
    }
}

/// A change between two means: [`signed_percent`] of the relative change, or `from 0` when the
/// mean before was 0 (no percentage exists).
pub fn relative_change(relative: Option<f64>) -> String {
    match relative {
        Some(r) => signed_percent(r),
        None => "from 0".into(),
    }
}

/// An unsigned percentage to three significant figures, trailing zeros dropped: `1%`, `0.5%`,
/// `2.5%`, `47.1%`.
pub fn percent(x: f64) -> String {
    let p = x * 100.0;
    let text = if p.abs() >= 10.0 {
        format!("{p:.1}")
    } else if p.abs() >= 1.0 {
        format!("{p:.2}")
    } else {
        format!("{p:.3}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}%")
}

/// A count with its noun, plural unless the count is 1: `1 trial`, `3 trials`, `0 runs`,
/// `2 processes` (nouns ending in `s`, `x`, `ch` or `sh` take `es`).
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{count} {noun}es")
    } else {
        format!("{count} {noun}s")
    }
}

/// Task counts as a comma-separated list: `1,2,4`.
pub fn comma_list(ns: &[u32]) -> String {
    ns.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn kib_reads_in_binary_units() {
        assert_eq!(kib(812.0), "812 KiB");
        assert_eq!(kib(12.3 * 1024.0), "12.3 MiB");
        assert_eq!(kib(1.5 * 1024.0 * 1024.0), "1.50 GiB");
        assert_eq!(kib(2048.0 * 1024.0 * 1024.0), "2.00 TiB");
        assert_eq!(kib(f64::NAN), "n/a");
    }

    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(0.5), "0.500");
        assert_eq!(si(f64::NAN), "n/a");
    }

    /// Was: 1e15 printed `1000T`, 1e300 a 289-digit number ending in `T`, and a change of
    /// 1e15 times `+100079991719344256.0%`.
    #[test]
    fn large_numbers_use_prefixes_up_to_e_then_scientific() {
        assert_eq!(si(1e15), "1.00P");
        assert_eq!(si(-2.5e18), "-2.50E");
        assert_eq!(si(999e18), "999E");
        assert_eq!(si(1e21), "1.00e21");
        assert_eq!(si(1e308), "1.00e308");
        assert_eq!(si(-1.5e300), "-1.50e300");
        assert_eq!(signed_percent(1e15), "+1.00e17%");
        assert_eq!(signed_percent(1e308), "+1.00e310%");
        assert_eq!(signed_percent(123.456), "+12345.6%");
        assert_eq!(relative_change(None), "from 0");
        assert_eq!(relative_change(Some(-0.5)), "-50.0%");
    }

    #[test]
    fn percentages_read_well() {
        assert_eq!(percent(0.01), "1%");
        assert_eq!(percent(0.005), "0.5%");
        assert_eq!(percent(0.025), "2.5%");
        assert_eq!(percent(0.4709), "47.1%");
        assert_eq!(percent(0.00485), "0.485%");
        assert_eq!(percent(0.1), "10%");
        assert_eq!(signed_percent(-0.0291), "-2.91%");
        assert_eq!(signed_percent(0.123), "+12.3%");
    }

    /// Issue 13: "1 trials", "1 runs".
    #[test]
    fn counts_take_the_plural_unless_one() {
        assert_eq!(plural(1, "trial"), "1 trial");
        assert_eq!(plural(0, "run"), "0 runs");
        assert_eq!(plural(3, "pair"), "3 pairs");
        assert_eq!(plural(2, "process"), "2 processes");
        assert_eq!(plural(1, "process"), "1 process");
        assert_eq!(plural(2, "CPU"), "2 CPUs");
        assert_eq!(plural(2, "change point"), "2 change points");
    }

    #[test]
    fn task_counts_are_listed_with_commas() {
        assert_eq!(comma_list(&[1, 2, 4]), "1,2,4");
        assert_eq!(comma_list(&[]), "");
    }
}
