//! Safe wrappers over the raw Linux primitives scalelab's runner and workloads need: shared and
//! private anonymous memory, futexes, fork/wait/signals, CPU affinity, resource usage and clock
//! reads.
//!
//! Where [rustix](https://docs.rs/rustix) wraps a call safely it is used — futexes, pipes, `poll`,
//! signals, `prctl` (parent-death signal, child subreaper), `gettid` and `sched_yield`; `getppid`
//! is the C library's through std (the op `null_syscall` counts, as will-it-scale does). What is
//! still written here by hand,
//! each file saying why: `wait4` and `getrusage` (rustix has no call that returns the resource
//! usage), CPU affinity (rustix's `CpuSet` stops at 1024 CPUs), `fork` in a process that may be
//! multi-threaded and `posix_spawn` (the `spawn` workload), anonymous mappings (rustix's `mmap`
//! is as unsafe as libc's) and the clock reads the `clock` workload measures through the C library
//! on purpose.
//!
//! Two safe modules live here too, as the bottom layer every crate above may use:
//! [`owned_dir`] (files and folders created as root without following links),
//! [`proc_table`] (what `/proc` says about other processes) and [`MachineLock`] (one process of
//! a kind per machine).
//!
//! This crate and `scalelab-perf` hold all of the project's `unsafe` code. Every `unsafe` block
//! carries a `// SAFETY:` comment, every resource is owned by a type whose `Drop` releases it,
//! and every failure is a [`SysError`] naming the system call, the errno and the fix.
#![warn(missing_docs, unreachable_pub)]

mod affinity;
mod anon_mapping;
mod child;
mod clocks;
mod error;
mod futex;
mod input_file;
mod machine_lock;
mod mapping;
mod mempolicy;
pub mod owned_dir;
mod pipe;
pub mod proc_table;
mod process;
mod rusage;
mod scheduling;
mod shared_region;
mod signal;
mod spawn;

pub use affinity::{MAX_CPU, current_affinity, set_current_affinity, set_thread_affinity};
pub use anon_mapping::AnonMapping;
pub use child::{
    ChildExit, ExitKind, OwnCpu, any_child_ended, try_wait_child, wait_child, wait_child_own_cpu,
};
pub use clocks::{
    ClockId, clock_gettime_syscall, clock_gettime_vdso, gettimeofday_syscall, gettimeofday_vdso,
    thread_cpu_time,
};
pub use error::{Errno, SysError};
pub use futex::{futex_wait, futex_wake};
pub use input_file::{InputFile, InputKind, bytes_text, check_input, read_input};
pub use machine_lock::{MachineLock, MachineLockError};
pub use mapping::page_size;
pub use mempolicy::{MAX_NODE, MemPolicy, current_mempolicy, set_mempolicy};
pub use pipe::{Pipe, pipe, wait_readable};
pub use process::{
    ForkResult, ORPHANED_AT_BIRTH, die_with_parent, exit_immediately, fork_single_threaded,
    getppid, gettid, sched_yield, set_child_subreaper, set_parent_death_signal, thread_count,
};
pub use rusage::{ResourceUsage, children_usage, process_usage, thread_usage};
pub use scheduling::{is_realtime, run_realtime};
pub use shared_region::SharedRegion;
pub use signal::{send_signal, signal_name};
pub use spawn::{Program, fork_exit_wait};

#[cfg(test)]
mod tests {
    #[test]
    fn owned_memory_types_can_cross_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<crate::SharedRegion>();
        assert_send_sync::<crate::AnonMapping>();
        assert_send_sync::<crate::SysError>();
    }
}
