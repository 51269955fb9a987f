//! `spawn`: create a child process and reap it — the cost under every shell pipeline, `make`
//! job and CGI request.
//!
//! `method=fork`: `fork()` (glibc's wrapper, with its at-fork handling), the child calls
//! `_exit(0)` at once, the parent waits for it. The cost is copying the parent's address space
//! (page tables, VMAs, marking pages copy-on-write) and tearing the copy down again, so it grows
//! with the size of the forking process — here the trial process. With `--mode threads` all
//! tasks fork the same address space, and `fork` takes its mmap lock for writing while it copies.
//! `method=posix_spawn`: `posix_spawn("/bin/true")` with an empty environment, which glibc does
//! with `clone(CLONE_VM | CLONE_VFORK)` and `execve`, then wait: no address-space copy, but a
//! whole program load (exec, the dynamic loader, libc start-up) and exit instead.
//!
//! The child's own CPU time is not in the task's `user`/`sys` (the kernel charges it to the
//! child); the task's side is the fork or spawn, the wait, and the reaping.

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, workload_error};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "spawn";
const PROGRAM: &str = "/bin/true";

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one child process created, ended and reaped (fork + _exit + wait4, or posix_spawn of /bin/true + wait4)",
    stresses: "process creation and teardown: fork's address-space copy (mmap lock of the forking mm, page-table copy, COW setup) or exec's program load; pid allocation, exit and reaping (tasklist_lock)",
    params: &[ParamSpec {
        name: "method",
        default: "fork",
        kind: ParamKind::Choice(&["fork", "posix_spawn"]),
        help: "fork: a child that only _exits; posix_spawn: run /bin/true",
    }],
    uses_files: false,
};

pub(super) struct Spawn;

impl Workload for Spawn {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, params: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        let program = match params.text("method")? {
            "posix_spawn" => Some(
                sys::Program::new(PROGRAM, &[])
                    .map_err(|e| LabError::sys(format!("{NAME}: {PROGRAM}"), e))?,
            ),
            _ => None,
        };
        Ok(Box::new(SpawnPrepared { program }))
    }
}

struct SpawnPrepared {
    /// `Some` for posix_spawn, `None` for fork.
    program: Option<sys::Program>,
}

impl Prepared for SpawnPrepared {
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        Ok(Box::new(SpawnTask {
            program: self.program.as_ref(),
        }))
    }
}

struct SpawnTask<'a> {
    program: Option<&'a sys::Program>,
}

impl TaskLoop for SpawnTask<'_> {
    /// One op per step: a child takes tens of microseconds (fork) to a millisecond (exec).
    fn step(&mut self) -> Result<u64, LabError> {
        let status = match self.program {
            None => sys::fork_exit_wait().map_err(|e| LabError::sys(format!("{NAME}: fork"), e))?,
            Some(p) => p
                .run()
                .map_err(|e| LabError::sys(format!("{NAME}: posix_spawn {PROGRAM}"), e))?,
        };
        if !status.success() {
            return Err(workload_error(NAME, format!("the child {status}")));
        }
        Ok(1)
    }
}
