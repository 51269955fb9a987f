//! How busy the machine is when a fingerprint is taken: load average and available memory.
//!
//! These readings are volatile (they differ between any two captures), so
//! [`Fingerprint::differences`](super::fingerprint::Fingerprint::differences) ignores them; [`checks`](super::checks)
//! uses them to warn that other work competes with the measurement.

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`.
pub(super) fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut fields = text
        .split_whitespace()
        .map(|field| field.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// One `Key:   1234 kB` value of `/proc/meminfo`, in KiB.
pub(super) fn parse_meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.trim() != key {
            return None;
        }
        value.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_takes_the_three_averages() {
        assert_eq!(
            parse_loadavg("0.59 0.47 0.19 2/87 5032\n"),
            Some([0.59, 0.47, 0.19])
        );
        assert_eq!(parse_loadavg("0.59 x"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn meminfo_values_are_kib() {
        let text = "MemTotal:       24684092 kB\nMemFree:        24002936 kB\nMemAvailable:   24373280 kB\nHugePages_Total:       0\n";
        assert_eq!(parse_meminfo_kib(text, "MemTotal"), Some(24_684_092));
        assert_eq!(parse_meminfo_kib(text, "MemAvailable"), Some(24_373_280));
        assert_eq!(parse_meminfo_kib(text, "HugePages_Total"), Some(0));
        assert_eq!(parse_meminfo_kib(text, "Mem"), None);
    }
}
