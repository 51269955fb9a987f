//! `--tasks`: which task counts a sweep visits.
//!
//! Forms: `1,2,4` (a list), `1..8` (every N), `1..16:2` (a step), `pow2` (1,2,4,… up to the
//! online CPUs, plus that count), `all` (1..=CPUs). Forms combine with commas: `pow2,12`.
//! The result is sorted and deduplicated. Task counts above the online CPUs are allowed
//! (oversubscription is a legitimate experiment); the caller warns about them.
//!
//! A [`TaskSpec`] is checked when it is parsed (the CLI's value parser), and becomes task counts
//! once the online CPUs are known ([`TaskSpec::points`]).

use std::fmt;
use std::str::FromStr;

use crate::error::SpecError;
use crate::limits::MAX_TASKS;

/// A checked `--tasks` value; the plan turns it into task counts once the online CPUs are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec(String);

impl FromStr for TaskSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<TaskSpec, SpecError> {
        // `pow2` and `all` are checked against one CPU: their form, not their size.
        parse_tasks(text, 1)?;
        Ok(TaskSpec(text.to_string()))
    }
}

impl fmt::Display for TaskSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TaskSpec {
    /// The task counts on a machine with `cpus` online CPUs, sorted and deduplicated.
    pub fn points(&self, cpus: u32) -> Result<Vec<u32>, SpecError> {
        parse_tasks(&self.0, cpus)
    }
}

/// The default sweep: powers of two up to `cpus`, plus `cpus` itself.
pub fn default_points(cpus: u32) -> Vec<u32> {
    pow2_points(cpus.max(1))
}

fn pow2_points(limit: u32) -> Vec<u32> {
    let mut points = Vec::new();
    let mut n = 1u32;
    while n <= limit {
        points.push(n);
        n = match n.checked_mul(2) {
            Some(next) => next,
            None => break,
        };
    }
    if points.last() != Some(&limit) {
        points.push(limit);
    }
    points
}

/// Parses a `--tasks` value against the number of online CPUs.
pub fn parse_tasks(spec: &str, cpus: u32) -> Result<Vec<u32>, SpecError> {
    let bad = |reason: &str| SpecError::BadTasks {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    if spec.trim().is_empty() {
        return Err(bad("empty"));
    }
    let mut points = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        match part {
            "" => return Err(bad("empty element")),
            "pow2" => points.extend(pow2_points(cpus.max(1))),
            "all" => points.extend(1..=cpus.max(1)),
            _ => {
                if let Some((range, step)) = part.split_once("..") {
                    let (end, step) = match step.split_once(':') {
                        Some((end, step)) => (end, Some(step)),
                        None => (step, None),
                    };
                    let start = parse_count(range).map_err(|r| bad(&r))?;
                    let end = parse_count(end).map_err(|r| bad(&r))?;
                    let step = match step {
                        Some(s) => parse_count(s).map_err(|r| bad(&format!("step: {r}")))?,
                        None => 1,
                    };
                    if end < start {
                        return Err(bad(&format!("range {start}..{end} runs backwards")));
                    }
                    points.extend((start..=end).step_by(step as usize));
                } else {
                    points.push(parse_count(part).map_err(|r| bad(&r))?);
                }
            }
        }
    }
    points.sort_unstable();
    points.dedup();
    Ok(points)
}

fn parse_count(text: &str) -> Result<u32, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("`{text}` is negative; task counts start at 1"));
    }
    let n: u64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if n == 0 {
        return Err("0 tasks: task counts start at 1".to_string());
    }
    if n > u64::from(MAX_TASKS) {
        return Err(format!("{n} exceeds the limit of {MAX_TASKS} tasks"));
    }
    Ok(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_forms_parse() {
        assert_eq!(parse_tasks("1,2,4", 2).unwrap(), vec![1, 2, 4]);
        assert_eq!(parse_tasks("1..4", 2).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_tasks("1..16:4", 2).unwrap(), vec![1, 5, 9, 13]);
        assert_eq!(parse_tasks("pow2", 12).unwrap(), vec![1, 2, 4, 8, 12]);
        assert_eq!(parse_tasks("pow2", 16).unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_tasks("all", 3).unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_tasks("4,1,4,pow2", 2).unwrap(), vec![1, 2, 4]);
        assert_eq!(default_points(1), vec![1]);
        assert_eq!(default_points(6), vec![1, 2, 4, 6]);
        assert_eq!(default_points(1024).len(), 11);
    }

    #[test]
    fn bad_forms_are_refused_with_the_reason() {
        for (spec, needle) in [
            ("0", "start at 1"),
            ("-2", "negative"),
            ("", "empty"),
            ("1,,2", "empty element"),
            ("8..2", "backwards"),
            ("two", "not a whole number"),
            ("1..8:0", "step"),
            ("999999999", "exceeds"),
        ] {
            let err = parse_tasks(spec, 2).unwrap_err().to_string();
            assert!(err.contains(needle), "{spec}: {err}");
            assert!(err.contains("accepted forms"), "{err}");
        }
    }
}
