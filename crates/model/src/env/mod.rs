//! The environment a run measures in: its fingerprint, and what in it will make numbers noisy.
//!
//! [`Fingerprint::capture`] records the machine with every run (kernel, CPUs, frequency policy,
//! THP, mitigations, clocksource, hypervisor, perf permissions, the filesystem under the working
//! directory, the scalelab build); `Fingerprint::differences` lists what differs before two
//! runs are compared. [`checks`] judges a fingerprint (no I/O, so stored runs can be judged
//! again) and [`perf_checks`] probes whether profiling and lock tracing can work; together they
//! are `scalelab doctor`, and the `Warn` entries of [`checks`] are shown under a run's results.
//!
//! Readings come from `/proc` and `/sys` text through pure parsers, each tested on literal file
//! contents; nothing here needs privileges or unsafe code, and nothing fails: what cannot be
//! read is `None` or empty and shows up as an `Info` check.

mod agent_class;
mod checks;
mod cpu;
mod fingerprint;
mod host_fs;
mod kernel;
mod machine_class;
mod mount;
mod perf_support;
mod process;
mod system_load;
mod topology;
#[cfg(any(test, feature = "test-support"))]
mod topology_fake;
mod topology_reader;

pub use agent_class::{AgentClass, ClassFilter, ClassFilterError};
pub use checks::{Check, Severity, checks};
pub use cpu::format_cpu_list;
pub use fingerprint::Fingerprint;
pub use kernel::MitigationState;
pub use machine_class::MachineClass;
pub use perf_support::perf_checks;
pub use topology::{CpuPlace, CpuTopology};
#[cfg(any(test, feature = "test-support"))]
pub use topology_fake::topology_512;
