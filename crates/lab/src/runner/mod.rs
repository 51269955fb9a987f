//! Executes a plan: trial children, tasks, the start gate, pinning and the sampler.

mod child_io;
pub mod command;
pub mod control;
pub mod executor;
pub mod perf_record;
pub mod placement;
mod schedstat;
pub mod sweep;
mod task;
pub mod trial;

pub use command::{CommandExecutor, CommandSpec, OpsSource};
pub use executor::{ChildExecutor, Execution, Executor, FakeExecutor};
pub use perf_record::{ProfileRequest, ProfileSettings};
pub use sweep::{SweepEnd, SweepEvent, run_sweep};
pub use trial::{TrialSpec, run_trial};
