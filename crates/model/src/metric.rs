//! `--metric NAME=REGEX`: a figure the command reports itself (dbench's MB/sec, sysbench's
//! events/s, pgbench's tps and latency, fio's IOPS), read from its output per trial.
//!
//! Syntax: `NAME=REGEX` (higher is better), `NAME=higher:REGEX` or `NAME=lower:REGEX` (a
//! latency, a time). The regex matches within one line, the first line that matches in step
//! order gives the value: its first capture group, or the whole match — a decimal number,
//! with `,` thousands separators allowed, optionally followed by an SI multiplier (`12.5k`,
//! `3M`; `m` is milli, as in `12m` only when nothing follows). The unit shown beside the value
//! is the literal text after the capture group in the pattern (`Throughput ([0-9.]+) MB/sec`
//! reads `MB/sec`), or none.
//!
//! The first `--metric` (or the one `--primary` names) is the run's X(N): S(N), "scales to",
//! compare, ab, history, bisect and the USL model read it, as a rate — its value when higher
//! is better, its reciprocal when lower is (so S(N) of a time T is T(1)/T(N)). The others are
//! kept beside it. A trial whose output has no line a metric matches, or whose match is not a
//! number, fails with the pattern and the line.

use regex::bytes::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

/// Compiles an `--ops-regex` or a `--metric`'s pattern (multi-line: `^`/`$` at line edges).
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .multi_line(true)
        .build()
        .map_err(|e| format!("--ops-regex `{pattern}`: {e}"))
}

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// A rate: more is better.
    Higher,
    /// A time or latency: less is better.
    Lower,
}

/// Which output a metric is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    /// Standard output.
    #[default]
    Stdout,
    /// Standard error.
    Stderr,
}

/// One `--metric`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Its name (`throughput`, `latency`).
    pub name: String,
    /// The regex, as given.
    pub pattern: String,
    /// Which way is better.
    pub direction: Direction,
    /// The unit printed beside the value (`MB/sec`), empty when none.
    pub unit: String,
    /// Where it is read.
    #[serde(default)]
    pub from: OutputStream,
}

/// The longest metric name.
const MAX_NAME: usize = 64;

impl MetricSpec {
    /// Whether `name` is a metric's name as `--metric` takes it (and so as a stored run may
    /// carry it): 1 to 64 letters, digits, `_`, `-` or `.`.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(format!(
                "the name `{}` must be 1 to {MAX_NAME} letters, digits, `_`, `-` or `.`",
                crate::safe_text::excerpt(name, 80)
            ));
        }
        Ok(())
    }

    /// Parses `NAME=[higher:|lower:]REGEX` (read from `from`); the error names the part that is
    /// wrong and shows the form.
    pub fn parse(arg: &str, from: OutputStream) -> Result<MetricSpec, String> {
        let form = "the form is NAME=REGEX, NAME=higher:REGEX or NAME=lower:REGEX, e.g. \
                    'throughput=Throughput ([0-9.]+) MB/sec'";
        let (name, rest) = arg
            .split_once('=')
            .ok_or_else(|| format!("--metric `{arg}`: no `=`; {form}"))?;
        let name = name.trim();
        if let Err(why) = MetricSpec::check_name(name) {
            return Err(format!("--metric `{arg}`: {why}; {form}"));
        }
        let (direction, pattern) = if let Some(p) = rest.strip_prefix("higher:") {
            (Direction::Higher, p)
        } else if let Some(p) = rest.strip_prefix("lower:") {
            (Direction::Lower, p)
        } else {
            (Direction::Higher, rest)
        };
        if pattern.is_empty() {
            return Err(format!("--metric `{arg}`: the regex is empty; {form}"));
        }
        compile_pattern(pattern)
            .map_err(|e| format!("--metric {name}: {}", e.replace("--ops-regex ", "")))?;
        Ok(MetricSpec {
            name: name.to_string(),
            pattern: pattern.to_string(),
            direction,
            unit: unit_after_group(pattern),
            from,
        })
    }

    /// The value as a rate, X(N)'s sense: itself when higher is better, its reciprocal when
    /// lower is; `None` for a lower-is-better value of 0 or less (no rate).
    pub fn as_rate(&self, value: f64) -> Option<f64> {
        match self.direction {
            Direction::Higher => Some(value),
            Direction::Lower => (value > 0.0).then(|| 1.0 / value),
        }
    }

    /// One unit of the work a rate counts, for "1 MB costs …": the unit's part before `/`
    /// (`MB/sec` → `MB`), else `unit of NAME`.
    pub fn unit_of_work(&self) -> String {
        match self.unit.split_once('/') {
            Some((u, _)) if !u.trim().is_empty() => u.trim().to_string(),
            _ => format!("unit of {}", self.name),
        }
    }

    /// `name (unit)`, or the name alone.
    pub fn label(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.unit)
        }
    }
}

/// The literal text right after the pattern's first capture group, up to a regex
/// metacharacter or the end (`Throughput ([0-9.]+) MB/sec` → `MB/sec`); empty without one.
fn unit_after_group(pattern: &str) -> String {
    let Some(open) = pattern.find('(') else {
        return String::new();
    };
    let mut depth = 0usize;
    let mut close = None;
    let mut escaped = false;
    for (i, c) in pattern[open..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return String::new();
    };
    let after = &pattern[close + 1..];
    let literal: String = after
        .chars()
        .take_while(|c| !"()[]{}|*+?^$\\".contains(*c))
        .collect();
    literal
        .trim()
        .trim_end_matches('.')
        .trim()
        .chars()
        .take(24)
        .collect()
}

/// Reads a number as a metric's match gives it: `1,234.5`, `12.5k`, `3M`, `-0.5`, `1e3`.
pub fn parse_value(text: &str) -> Result<f64, String> {
    let t = text.trim().replace(',', "");
    const SI: [(&str, f64); 8] = [
        ("k", 1e3),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("m", 1e-3),
        ("u", 1e-6),
        ("µ", 1e-6),
    ];
    let (digits, scale) = SI
        .iter()
        .find_map(|&(suffix, f)| t.strip_suffix(suffix).map(|d| (d, f)))
        .unwrap_or((t.as_str(), 1.0));
    match digits.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v * scale),
        _ => Err(format!("`{}` is not a number", text.trim())),
    }
}

/// What a trial read for each metric, in `specs` order; an error names the first metric that
/// had no match or no number, with the pattern and the line. `found[i]` is `(the captured
/// text, the whole line)` of `specs[i]`'s first match over the steps.
pub fn values(
    specs: &[MetricSpec],
    found: &[Option<(String, String)>],
) -> Result<Vec<f64>, String> {
    specs
        .iter()
        .zip(found)
        .map(|(spec, f)| {
            let from = match spec.from {
                OutputStream::Stdout => "stdout",
                OutputStream::Stderr => "stderr",
            };
            let (text, line) = f.as_ref().ok_or_else(|| {
                format!(
                    "--metric {}: no line of the command's {from} matched `{}`",
                    spec.name, spec.pattern
                )
            })?;
            parse_value(text).map_err(|why| {
                format!(
                    "--metric {}: could not read a number from the line `{}` ({why})",
                    spec.name,
                    shorten(line)
                )
            })
        })
        .collect()
}

/// At most 200 characters of a line, for an error.
fn shorten(line: &str) -> String {
    let line = line.trim();
    if line.chars().count() <= 200 {
        return line.to_string();
    }
    let cut: String = line.chars().take(200).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_directions_and_units_are_read_from_the_argument() {
        let m = MetricSpec::parse(
            "throughput=Throughput ([0-9.]+) MB/sec",
            OutputStream::Stdout,
        )
        .unwrap();
        assert_eq!(
            (m.name.as_str(), m.direction, m.unit.as_str()),
            ("throughput", Direction::Higher, "MB/sec")
        );
        let m = MetricSpec::parse(
            "latency=lower:latency average = ([0-9.]+) ms",
            OutputStream::Stderr,
        )
        .unwrap();
        assert_eq!(
            (m.direction, m.unit.as_str(), m.from),
            (Direction::Lower, "ms", OutputStream::Stderr)
        );
        assert_eq!(m.pattern, "latency average = ([0-9.]+) ms");
        assert_eq!(m.as_rate(4.0), Some(0.25));
        assert_eq!(m.as_rate(0.0), None);
        let m = MetricSpec::parse(
            r"events=events/s \(eps\):\s+([0-9.]+)",
            OutputStream::Stdout,
        )
        .unwrap();
        assert_eq!(m.unit, "");
        for bad in ["noequals", "=x", "a b=x", "x=", "x=lower:", "x=(unclosed"] {
            assert!(
                MetricSpec::parse(bad, OutputStream::Stdout).is_err(),
                "{bad}"
            );
        }
        let err = MetricSpec::parse("x=(", OutputStream::Stdout).unwrap_err();
        assert!(err.starts_with("--metric x:"), "{err}");
    }

    #[test]
    fn values_take_separators_and_si_multipliers() {
        assert_eq!(parse_value("86.5842"), Ok(86.5842));
        assert_eq!(parse_value(" 1,234.5 "), Ok(1234.5));
        assert_eq!(parse_value("12.5k"), Ok(12500.0));
        assert_eq!(parse_value("3M"), Ok(3e6));
        assert_eq!(parse_value("1e3"), Ok(1000.0));
        assert_eq!(parse_value("250m"), Ok(0.25));
        assert!(parse_value("fast").is_err());
        assert!(parse_value("inf").is_err());
        assert!(parse_value("").is_err());
    }

    #[test]
    fn a_metric_that_did_not_match_or_is_no_number_fails_naming_the_line() {
        let specs =
            vec![MetricSpec::parse("tput=Throughput (\\S+) MB/sec", OutputStream::Stdout).unwrap()];
        assert_eq!(
            values(
                &specs,
                &[Some(("86.5".into(), "Throughput 86.5 MB/sec".into()))]
            ),
            Ok(vec![86.5])
        );
        let err = values(&specs, &[None]).unwrap_err();
        assert!(
            err.contains("no line of the command's stdout matched"),
            "{err}"
        );
        let err = values(
            &specs,
            &[Some(("n/a".into(), "Throughput n/a MB/sec".into()))],
        )
        .unwrap_err();
        assert!(
            err.contains("could not read a number from the line `Throughput n/a MB/sec`"),
            "{err}"
        );
        let long = "x".repeat(10_000);
        let err = values(&specs, &[Some(("x".into(), long))]).unwrap_err();
        assert!(err.len() < 400, "a long line is cut: {} chars", err.len());
    }
}
