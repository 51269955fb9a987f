//! Executes trials: trial children, tasks, the start gate, pinning and the sampler, external
//! commands and their steps. Every process it starts is started by the rules of
//! [`process`](crate::process) (owner marks, leftovers, the guard).

mod child_io;
pub mod command;
pub mod control;
pub mod executor;
mod ops_regex;
pub mod perf_record;
pub mod placement;
mod schedstat;
pub mod spec;
mod step;
mod task;
pub mod trial;

pub use command::CommandExecutor;
pub use executor::{ChildExecutor, Execution, Executor, FakeExecutor};
pub use perf_record::{ProfileRequest, ProfileSettings};
pub use spec::{BuiltinWork, CommandSpec, OpsSource, TrialSpec, Work};
pub use trial::run_trial;
