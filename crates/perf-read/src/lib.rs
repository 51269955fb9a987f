//! Reading what the kernel's perf recorded, offline: `perf record` files read, symbolised and
//! aggregated ([`read_profile`], [`Profile`]), kernel and user addresses to names ([`Kallsyms`],
//! [`UserSymbols`]), and the DWARF unwinder of captured user stacks ([`unwind`]), which the live
//! tracers of `perf` use too. Nothing here opens a perf event: the analysis depends on this
//! crate and never links the live capture.
//!
//! Every failure is a [`PerfError`] naming what failed and the fix.
#![warn(missing_docs, unreachable_pub)]

mod elf_symbols;
pub mod error;
mod kallsyms;
#[cfg(any(test, feature = "test-support"))]
pub mod mutation;
mod profile;
pub mod unwind;
mod user_symbols;

pub use error::PerfError;
pub use kallsyms::{Kallsyms, KernelSymbol};
pub use profile::{
    DsoCost, FunctionCost, NO_KALLSYMS_NOTE, Profile, ProfileOptions, SampleTally, StackCost,
    kallsyms_has_addresses, read_profile, workload_span,
};
pub use unwind::{DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MappedFile, check_stack_size};
pub use user_symbols::{UserFrame, UserSymbols};
