//! Which agent may take a queued job: the class an agent advertises, and a job's `--class` filter.
//!
//! An agent advertises an [`AgentClass`]: its host, architecture and [`MachineClass`] (CPU model,
//! online CPUs, memory in GiB, hypervisor or `bare`). A job carries a [`ClassFilter`], parsed
//! from text such as `cpus>=32,arch=x86_64`; an agent takes the job only if every term holds.
//!
//! Grammar: `any`, or comma-separated terms `FIELD OP VALUE` with whitespace allowed around each
//! token. `cpus` and `mem` (GiB) are whole numbers and take `=` `!=` `>=` `<=` `>` `<`; `arch`,
//! `cpu` (the CPU model), `hypervisor` (`bare` for none) and `host` are text and take `=` `!=`
//! (equality ignoring case and runs of whitespace) and `~` (substring, ignoring case). The
//! operator is the whole run of operator characters after the field, so `>=` is never read as
//! `>` and `==` is refused rather than read as `=` with a value `=…`. Values may hold spaces
//! (`cpu~EPYC 7R13`) but no commas. An agent whose memory is unknown fails every `mem` term but
//! `!=`. [`ClassFilter`]'s `Display` is canonical (`any`, or terms joined by `,` without spaces)
//! and parses back to an equal filter.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use super::fingerprint::Fingerprint;
use super::machine_class::MachineClass;

/// The fields a term may name, in the order error messages list them.
const FIELDS: &str = "cpus, mem, arch, cpu, hypervisor, host";
/// The characters operators are made of; a value may not start with one.
const OP_CHARS: &[char] = &['=', '!', '<', '>', '~'];
/// The keys of an identity override, in the order error messages list them.
const OVERRIDE_KEYS: &str = "host, arch, cpu, cpus, mem, hypervisor";

/// A `--class` filter or identity override that does not parse; each message names the bad term
/// and says what is accepted.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ClassFilterError {
    /// The filter text is empty or only whitespace.
    #[error("the class filter is empty; give `any` or terms such as `cpus>=32,arch=x86_64`")]
    Empty,
    /// Two commas with nothing between them, or a leading or trailing comma.
    #[error("class filter `{text}` has an empty term; separate terms with single commas")]
    EmptyTerm {
        /// The whole filter text.
        text: String,
    },
    /// A term that starts with an operator.
    #[error("`{term}` has no field before its operator; fields: {FIELDS}")]
    MissingField {
        /// The term.
        term: String,
    },
    /// A term naming a field that does not exist.
    #[error("`{term}`: unknown field `{field}`; fields: {FIELDS} (or `any` alone)")]
    UnknownField {
        /// The term.
        term: String,
        /// The field as given.
        field: String,
    },
    /// A term with no operator after its field.
    #[error(
        "`{term}` has no operator after `{field}`; write FIELD OP VALUE, e.g. `cpus>=32` or `cpu~EPYC`"
    )]
    MissingOp {
        /// The term.
        term: String,
        /// The field.
        field: String,
    },
    /// A run of operator characters that is no operator (`==`, `=>`, `! =`).
    #[error("`{term}`: unknown operator `{op}`; operators: = != >= <= > < ~")]
    UnknownOp {
        /// The term.
        term: String,
        /// The operator as given.
        op: String,
    },
    /// An operator that does not apply to the field (`arch>=x`, `cpus~3`).
    #[error("`{term}`: `{op}` does not apply to `{field}`; it takes {accepted}")]
    OpNotForField {
        /// The term.
        term: String,
        /// The operator.
        op: String,
        /// The field.
        field: String,
        /// The operators the field takes, space-separated.
        accepted: String,
    },
    /// A term with nothing after its operator.
    #[error("`{term}` has no value after its operator; write FIELD OP VALUE, e.g. `arch=x86_64`")]
    EmptyValue {
        /// The term.
        term: String,
    },
    /// A `cpus` or `mem` value that is not a whole number.
    #[error("`{term}`: `{value}` is not a whole number; `{field}` takes one{unit}")]
    BadNumber {
        /// The term.
        term: String,
        /// The field.
        field: String,
        /// The value as given.
        value: String,
        /// `" (GiB)"` for `mem`, else empty.
        unit: &'static str,
    },
    /// Two `=` terms on one field, which no agent could satisfy unless they agree.
    #[error("`{first}` and `{second}` both fix `{field}`; give `{field}=` once")]
    FieldTwice {
        /// The field.
        field: String,
        /// The first `=` term.
        first: String,
        /// The second `=` term.
        second: String,
    },
    /// An identity override item that is not `KEY=VALUE` with a non-empty value.
    #[error(
        "identity override `{item}` is not KEY=VALUE; write e.g. `host=a1,cpus=32,mem=64` (keys: {OVERRIDE_KEYS})"
    )]
    OverrideMalformed {
        /// The item as given.
        item: String,
    },
    /// An identity override with a key that is not one of the agent's fields.
    #[error("identity override: unknown key `{key}`; keys: {OVERRIDE_KEYS}")]
    OverrideUnknownKey {
        /// The key as given.
        key: String,
    },
    /// An identity override `cpus` or `mem` that is not a whole number.
    #[error("identity override `{key}={value}`: `{value}` is not a whole number")]
    OverrideBadNumber {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
    },
}

/// What an agent advertises about its machine; displayed as
/// `host · arch · CPU model · N CPUs · M GiB · hypervisor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentClass {
    /// The host name (the fingerprint's `hostname`).
    pub host: String,
    /// The CPU architecture, as `std::env::consts::ARCH` names it (`x86_64`, `aarch64`).
    pub arch: String,
    /// The CPU model name, whitespace collapsed.
    pub cpu_model: String,
    /// CPUs online.
    pub cpus: usize,
    /// Memory in GiB, rounded (`None`: unknown).
    pub mem_gib: Option<u64>,
    /// The hypervisor, or `bare` without one.
    pub hypervisor: String,
}

impl AgentClass {
    /// The class of the machine `fp` was captured on, whose architecture is `arch`.
    pub fn of(fp: &Fingerprint, arch: &str) -> AgentClass {
        let class = MachineClass::of(fp);
        AgentClass {
            host: fp.hostname.clone(),
            arch: arch.to_owned(),
            cpu_model: class.cpu_model,
            cpus: class.cpus,
            mem_gib: class.mem_gib,
            hypervisor: class.hypervisor,
        }
    }

    /// The machine class part (everything but host and architecture).
    pub fn machine_class(&self) -> MachineClass {
        MachineClass {
            cpu_model: self.cpu_model.clone(),
            cpus: self.cpus,
            mem_gib: self.mem_gib,
            hypervisor: self.hypervisor.clone(),
        }
    }

    /// Applies a test-only identity override such as
    /// `host=a1,cpus=32,arch=x86_64,mem=64,cpu=AMD EPYC 7R13,hypervisor=bare` over `self`.
    /// Every key is optional, a later one wins, and empty items (`a=1,,b=2`) are skipped.
    pub fn with_overrides(mut self, text: &str) -> Result<AgentClass, ClassFilterError> {
        if text.trim().is_empty() {
            return Ok(self);
        }
        for item in text.split(',').filter(|item| !item.trim().is_empty()) {
            let malformed = || ClassFilterError::OverrideMalformed {
                item: item.trim().to_owned(),
            };
            let (key, value) = item.split_once('=').ok_or_else(malformed)?;
            let (key, value) = (key.trim(), collapse(value));
            if key.is_empty() || value.is_empty() {
                return Err(malformed());
            }
            let bad_number = || ClassFilterError::OverrideBadNumber {
                key: key.to_owned(),
                value: value.clone(),
            };
            match key {
                "cpus" => {
                    self.cpus = parse_number(&value)
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(bad_number)?;
                }
                "mem" => self.mem_gib = Some(parse_number(&value).ok_or_else(bad_number)?),
                "host" => self.host = value,
                "arch" => self.arch = value,
                "cpu" => self.cpu_model = value,
                "hypervisor" => self.hypervisor = value,
                _ => {
                    return Err(ClassFilterError::OverrideUnknownKey {
                        key: key.to_owned(),
                    });
                }
            }
        }
        Ok(self)
    }
}

impl fmt::Display for AgentClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} · {} · {}",
            self.host,
            self.arch,
            self.machine_class()
        )
    }
}

/// A field a term tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Cpus,
    Mem,
    Arch,
    Cpu,
    Hypervisor,
    Host,
}

impl Field {
    fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "cpus" => Field::Cpus,
            "mem" => Field::Mem,
            "arch" => Field::Arch,
            "cpu" => Field::Cpu,
            "hypervisor" => Field::Hypervisor,
            "host" => Field::Host,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Field::Cpus => "cpus",
            Field::Mem => "mem",
            Field::Arch => "arch",
            Field::Cpu => "cpu",
            Field::Hypervisor => "hypervisor",
            Field::Host => "host",
        }
    }

    fn is_number(self) -> bool {
        matches!(self, Field::Cpus | Field::Mem)
    }
}

/// A comparison; numbers take all but `~`, text takes `=`, `!=` and `~`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Ge,
    Le,
    Gt,
    Lt,
    Contains,
}

impl Op {
    fn parse(text: &str) -> Option<Op> {
        Some(match text {
            "=" => Op::Eq,
            "!=" => Op::Ne,
            ">=" => Op::Ge,
            "<=" => Op::Le,
            ">" => Op::Gt,
            "<" => Op::Lt,
            "~" => Op::Contains,
            _ => return None,
        })
    }

    fn text(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Ge => ">=",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Lt => "<",
            Op::Contains => "~",
        }
    }

    fn fits(self, field: Field) -> bool {
        match self {
            Op::Eq | Op::Ne => true,
            Op::Ge | Op::Le | Op::Gt | Op::Lt => field.is_number(),
            Op::Contains => !field.is_number(),
        }
    }
}

/// A term's value: a number for `cpus` and `mem`, whitespace-collapsed text for the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Number(u64),
    Text(String),
}

/// One `FIELD OP VALUE` term.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: Field,
    op: Op,
    value: Value,
}

impl Term {
    fn parse(term: &str) -> Result<Term, ClassFilterError> {
        let owned = || term.to_owned();
        let field_end = term
            .find(|c: char| OP_CHARS.contains(&c) || c.is_whitespace())
            .unwrap_or(term.len());
        let (name, rest) = term.split_at(field_end);
        if name.is_empty() {
            return Err(ClassFilterError::MissingField { term: owned() });
        }
        let field = Field::parse(name).ok_or_else(|| ClassFilterError::UnknownField {
            term: owned(),
            field: name.to_owned(),
        })?;
        let op_end = rest
            .find(|c: char| !OP_CHARS.contains(&c) && !c.is_whitespace())
            .unwrap_or(rest.len());
        let (op_text, value) = (rest[..op_end].trim(), collapse(&rest[op_end..]));
        if op_text.is_empty() {
            return Err(ClassFilterError::MissingOp {
                term: owned(),
                field: name.to_owned(),
            });
        }
        let op = Op::parse(op_text).ok_or_else(|| ClassFilterError::UnknownOp {
            term: owned(),
            op: op_text.to_owned(),
        })?;
        if !op.fits(field) {
            let accepted = if field.is_number() {
                "= != >= <= > <"
            } else {
                "= != ~"
            };
            return Err(ClassFilterError::OpNotForField {
                term: owned(),
                op: op_text.to_owned(),
                field: name.to_owned(),
                accepted: accepted.to_owned(),
            });
        }
        if value.is_empty() {
            return Err(ClassFilterError::EmptyValue { term: owned() });
        }
        let value = if field.is_number() {
            Value::Number(
                parse_number(&value).ok_or_else(|| ClassFilterError::BadNumber {
                    term: owned(),
                    field: name.to_owned(),
                    value,
                    unit: if field == Field::Mem { " (GiB)" } else { "" },
                })?,
            )
        } else {
            Value::Text(value)
        };
        Ok(Term { field, op, value })
    }

    /// Why `c` fails this term (`it has 2`), or `None` when it holds.
    fn failure(&self, c: &AgentClass) -> Option<String> {
        match &self.value {
            Value::Number(want) => {
                let have = match self.field {
                    Field::Cpus => Some(u64::try_from(c.cpus).unwrap_or(u64::MAX)),
                    _ => c.mem_gib,
                };
                let Some(have) = have else {
                    return (self.op != Op::Ne).then(|| "its memory is unknown".to_owned());
                };
                let holds = match self.op {
                    Op::Eq => have == *want,
                    Op::Ne => have != *want,
                    Op::Ge => have >= *want,
                    Op::Le => have <= *want,
                    Op::Gt => have > *want,
                    Op::Lt => have < *want,
                    Op::Contains => false,
                };
                let unit = if self.field == Field::Mem { " GiB" } else { "" };
                (!holds).then(|| format!("it has {have}{unit}"))
            }
            Value::Text(want) => {
                let have = match self.field {
                    Field::Arch => &c.arch,
                    Field::Cpu => &c.cpu_model,
                    Field::Hypervisor => &c.hypervisor,
                    _ => &c.host,
                };
                let (h, w) = (fold(have), fold(want));
                let holds = match self.op {
                    Op::Eq => h == w,
                    Op::Ne => h != w,
                    _ => h.contains(&w),
                };
                (!holds).then(|| format!("it is {have}"))
            }
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.field.name(), self.op.text())?;
        match &self.value {
            Value::Number(n) => write!(f, "{n}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// A parsed `--class` expression: every term must hold for an agent to match (none: `any`).
/// Stored and sent as its canonical text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassFilter {
    terms: Vec<Term>,
}

impl ClassFilter {
    /// Parses `any` or comma-separated `FIELD OP VALUE` terms (see the module docs).
    pub fn parse(text: &str) -> Result<ClassFilter, ClassFilterError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(ClassFilterError::Empty);
        }
        if trimmed.eq_ignore_ascii_case("any") {
            return Ok(ClassFilter::any());
        }
        let mut terms: Vec<Term> = Vec::new();
        for piece in trimmed.split(',') {
            let piece = piece.trim();
            if piece.is_empty() {
                return Err(ClassFilterError::EmptyTerm {
                    text: trimmed.to_owned(),
                });
            }
            let term = Term::parse(piece)?;
            let earlier = terms
                .iter()
                .find(|t| t.op == Op::Eq && term.op == Op::Eq && t.field == term.field);
            if let Some(earlier) = earlier {
                return Err(ClassFilterError::FieldTwice {
                    field: term.field.name().to_owned(),
                    first: earlier.to_string(),
                    second: term.to_string(),
                });
            }
            terms.push(term);
        }
        Ok(ClassFilter { terms })
    }

    /// The filter every agent matches.
    pub fn any() -> ClassFilter {
        ClassFilter { terms: Vec::new() }
    }

    /// The filter only host `name` matches (ignoring case); `name` is a host name as agents
    /// advertise it, without commas.
    pub fn host(name: &str) -> ClassFilter {
        ClassFilter {
            terms: vec![Term {
                field: Field::Host,
                op: Op::Eq,
                value: Value::Text(collapse(name)),
            }],
        }
    }

    /// Whether agent `c` may take a job with this filter.
    pub fn matches(&self, c: &AgentClass) -> bool {
        self.why_not(c).is_none()
    }

    /// The first term `c` fails, with what `c` has (`cpus>=32: it has 2`); `None` when it
    /// matches.
    pub fn why_not(&self, c: &AgentClass) -> Option<String> {
        self.terms
            .iter()
            .find_map(|t| t.failure(c).map(|why| format!("{t}: {why}")))
    }
}

impl fmt::Display for ClassFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("any");
        }
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

impl FromStr for ClassFilter {
    type Err = ClassFilterError;

    fn from_str(text: &str) -> Result<ClassFilter, ClassFilterError> {
        ClassFilter::parse(text)
    }
}

impl Serialize for ClassFilter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClassFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ClassFilter, D::Error> {
        let text = String::deserialize(deserializer)?;
        ClassFilter::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `text` with runs of whitespace made one space and the ends trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` collapsed and lower-cased, for comparisons that ignore case and spacing.
fn fold(text: &str) -> String {
    collapse(text).to_lowercase()
}

/// A whole number written with digits only (no sign).
fn parse_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests;
