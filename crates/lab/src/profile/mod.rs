//! `--profile`: what a profiled trial asks for ([`ProfileRequest`]), what the run prepares
//! before its first trial ([`perf_record`]: perf on the PATH, the sampled event, the run's
//! folder and its kallsyms snapshot), and the observer that wraps the program creating the
//! trial's tasks in `perf record` ([`session::ProfileSession`]). Reading a profile back is
//! analysis (`analysis::profile`).

pub(crate) mod perf_record;
pub(crate) mod scope;
pub(crate) mod session;

pub use perf_record::{ProfileRequest, ProfileSettings};
pub use scope::ProfileScope;
