//! Relative changes as people read them: `+1.23%`, `-12.3%`, `0.5%`.

/// A relative change as a signed percentage: `+1.23%`, `-12.3%`.
pub fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() < 10.0 {
        format!("{p:+.2}%")
    } else {
        format!("{p:+.1}%")
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
