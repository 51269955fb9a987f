//! Executes a plan: trial children, tasks, the start gate, pinning and the sampler; and keeps
//! track of every process it starts (owner marks, leftovers, the guard, orphans).

mod child_io;
pub mod command;
pub mod control;
pub mod executor;
pub mod guard;
mod leftovers;
mod ops_regex;
pub mod owner;
pub mod perf_record;
pub mod placement;
mod proc_table;
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
