//! Executes trials: trial children, tasks, the start gate, pinning and the sampler, external
//! commands and their steps. Every process it starts is started by the rules of
//! `process` (owner marks, leftovers, the guard).

mod child_io;
pub(crate) mod command;
pub(crate) mod control;
mod counter_window;
pub(crate) mod executor;
#[cfg(any(test, feature = "test-support"))]
mod fake_executor;
pub use model::metric;
mod ops_regex;
pub(crate) mod placement;
mod schedstat;
pub(crate) mod spec;
mod step;
pub(crate) mod system;
mod task;
pub(crate) mod trial;

pub use crate::profile::scope::{EVERY_CPU_FREQUENCY, SWITCHES_FOR_EVERY_CPU};
pub use crate::profile::{ProfileRequest, ProfileScope, ProfileSettings};
pub use command::CommandExecutor;
pub(crate) use executor::ChildExecutor;
pub use executor::{Execution, Executor};
#[cfg(any(test, feature = "test-support"))]
pub(crate) use fake_executor::FakeExecutor;
pub use spec::{
    AttachSpec, BuiltinWork, CommandSpec, OpsSource, ServerCpus, SystemSpec, TrialSpec, Work,
};
pub use trial::run_trial;
