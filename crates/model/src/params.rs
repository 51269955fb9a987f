//! Workload parameters: the `-p KEY=VAL` pairs, checked against a workload's declared specs.
//!
//! Validation happens once, when the plan is built, so a typo fails before any trial runs and
//! the stored run always carries every parameter with its default filled in.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::SpecError;

/// What values a parameter accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A byte size: `4096`, `64K`, `128M`, `1G` (powers of 1024).
    Size {
        /// Smallest accepted size, in bytes.
        min: u64,
        /// Largest accepted size, in bytes.
        max: u64,
    },
    /// A whole number in a range.
    Count {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// `true` or `false`.
    Bool,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Choice(words) => write!(f, "{}", words.join("|")),
            ParamKind::Size { min, max } => {
                write!(f, "size {}..{}", format_size(*min), format_size(*max))
            }
            ParamKind::Count { min, max } => write!(f, "integer {min}..{max}"),
            ParamKind::Bool => f.write_str("true|false"),
        }
    }
}

/// One declared parameter of a workload.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// The key in `-p KEY=VAL`.
    pub name: &'static str,
    /// The value used when the run does not set it.
    pub default: &'static str,
    /// What values it accepts.
    pub kind: ParamKind,
    /// One line for `scalelab list`: what the parameter changes.
    pub help: &'static str,
}

/// Validated parameters: every declared key present, every value well-formed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Params {
    values: BTreeMap<String, String>,
}

impl Params {
    /// Checks user-given pairs against `specs` and fills in defaults.
    pub fn resolve(
        workload: &str,
        specs: &[ParamSpec],
        given: &[(String, String)],
    ) -> Result<Params, SpecError> {
        let mut values: BTreeMap<String, String> = specs
            .iter()
            .map(|s| (s.name.to_string(), s.default.to_string()))
            .collect();
        for (key, value) in given {
            let Some(spec) = specs.iter().find(|s| s.name == key) else {
                let valid: Vec<String> = specs
                    .iter()
                    .map(|s| format!("{}={}", s.name, s.kind))
                    .collect();
                return Err(SpecError::UnknownParam {
                    workload: workload.to_string(),
                    key: key.clone(),
                    valid: if valid.is_empty() {
                        "(none: this workload takes no parameters)".into()
                    } else {
                        valid.join(", ")
                    },
                });
            };
            check_value(workload, spec, value)?;
            values.insert(key.clone(), canonical(spec, value));
        }
        Ok(Params { values })
    }

    /// Rebuilds parameters that were validated before (e.g. read back in a trial child).
    pub fn from_map(values: BTreeMap<String, String>) -> Params {
        Params { values }
    }

    /// The parameters as key → value, defaults included.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// Parameter `key`'s text (validated when the parameters were made).
    pub fn text(&self, key: &str) -> Result<&str, SpecError> {
        self.values.get(key).map(String::as_str).ok_or_else(|| {
            SpecError::Internal(format!("parameter `{key}` missing after validation"))
        })
    }

    /// Parameter `key` as a size in bytes (`4k`, `1M`).
    pub fn size(&self, key: &str) -> Result<u64, SpecError> {
        let text = self.text(key)?;
        parse_size(text)
            .ok_or_else(|| SpecError::Internal(format!("parameter `{key}`={text} is not a size")))
    }

    /// Parameter `key` as a whole number.
    pub fn count(&self, key: &str) -> Result<u64, SpecError> {
        let text = self.text(key)?;
        text.parse()
            .map_err(|_| SpecError::Internal(format!("parameter `{key}`={text} is not a number")))
    }

    /// Parameter `key` as a flag (`true` or `false`).
    pub fn flag(&self, key: &str) -> Result<bool, SpecError> {
        Ok(self.text(key)? == "true")
    }
}

fn check_value(workload: &str, spec: &ParamSpec, value: &str) -> Result<(), SpecError> {
    let ok = match spec.kind {
        ParamKind::Choice(words) => words.contains(&value),
        ParamKind::Size { min, max } => parse_size(value).is_some_and(|v| v >= min && v <= max),
        ParamKind::Count { min, max } => value.parse::<u64>().is_ok_and(|v| v >= min && v <= max),
        ParamKind::Bool => matches!(value, "true" | "false" | "1" | "0" | "yes" | "no"),
    };
    if ok {
        Ok(())
    } else {
        Err(SpecError::BadParamValue {
            workload: workload.to_string(),
            key: spec.name.to_string(),
            value: value.to_string(),
            expected: spec.kind.to_string(),
        })
    }
}

fn canonical(spec: &ParamSpec, value: &str) -> String {
    match spec.kind {
        ParamKind::Bool => matches!(value, "true" | "1" | "yes").to_string(),
        _ => value.to_string(),
    }
}

/// Parses `4096`, `4K`, `64k`, `128M`, `1G`, `2T` (binary multiples; a trailing `B`/`iB` is allowed).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1u64 << shift)
}

/// Formats bytes with the largest exact binary unit: 134217728 -> "128M".
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Splits a `KEY=VAL` argument.
pub fn split_pair(text: &str) -> Result<(String, String), SpecError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(SpecError::MalformedPair(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec {
            name: "size",
            default: "128M",
            kind: ParamKind::Size {
                min: 4096,
                max: 1 << 40,
            },
            help: "",
        },
        ParamSpec {
            name: "mode",
            default: "a",
            kind: ParamKind::Choice(&["a", "b"]),
            help: "",
        },
        ParamSpec {
            name: "shared",
            default: "false",
            kind: ParamKind::Bool,
            help: "",
        },
    ];

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("128M"), Some(128 << 20));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("12"), Some(12));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("-1M"), None);
        assert_eq!(format_size(128 << 20), "128M");
        assert_eq!(format_size(1000), "1000");
    }

    #[test]
    fn defaults_fill_in_and_values_are_checked() {
        let p = Params::resolve(
            "w",
            SPECS,
            &[("mode".into(), "b".into()), ("shared".into(), "yes".into())],
        )
        .unwrap();
        assert_eq!(p.size("size").unwrap(), 128 << 20);
        assert_eq!(p.text("mode").unwrap(), "b");
        assert!(p.flag("shared").unwrap());
    }

    #[test]
    fn unknown_key_lists_the_valid_ones() {
        let err = Params::resolve("w", SPECS, &[("sise".into(), "1M".into())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sise") && err.contains("size=") && err.contains("mode=a|b"),
            "{err}"
        );
    }

    #[test]
    fn malformed_value_names_what_is_expected() {
        let err = Params::resolve("w", SPECS, &[("size".into(), "lots".into())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("lots") && err.contains("size 4K.."), "{err}");
        assert!(Params::resolve("w", SPECS, &[("mode".into(), "c".into())]).is_err());
        assert!(split_pair("novalue").is_err());
        assert!(split_pair("=x").is_err());
        assert_eq!(split_pair("a=b=c").unwrap(), ("a".into(), "b=c".into()));
    }
}
