//! `pipe_pingpong`: a byte bounced through two pipes between a task and its echo partner, the
//! classic context-switch benchmark (lmbench's `lat_ctx`, the BYTE/UnixBench "pipe-based context
//! switching" test).
//!
//! What N means: each of the N tasks owns one pair — itself and an echo partner it creates
//! while setting up (a thread with `--mode threads`, a forked process with `--mode processes`,
//! so a switch between them does or does not change address space, like the tasks themselves).
//! The task writes a byte into one pipe and reads the echo from the other; the partner reads
//! and writes it back. N=1 is one pair; N pairs never talk to each other, so a perfect kernel
//! scales them linearly. With `partner=same_cpu` (the default) the partner inherits the task's
//! pinning (with `--pin none`, neither is pinned), so both run on one CPU and every round trip
//! is two wake-ups and two context switches on that CPU; with `partner=any` the partner may run
//! on any CPU the trial may use and the scheduler places it. Pipe wake-ups are "sync" wake-ups
//! (the waker is about to sleep), which pull the partner onto the waker's CPU when that looks
//! cheaper, so `any` often ends up close to `same_cpu`: comparing the two shows what the
//! scheduler chose, and cross-CPU wake-ups (IPIs, remote wake lists) where it spreads the pair.
//!
//! Only the task is measured: ops, `user`/`sys` and context switches are the task's side of
//! the pair; the partner's equal share is not included, except that the trial reads the
//! partner's CPU time too ([`TaskLoop::partner`]) when it is profiled, so that the profile can be
//! checked over the pair: cpu-clock samples land in whichever of the two runs when they fire. No task ever waits on another task,
//! only on its own partner, which answers until the task closes its pipe, so a stopped window
//! never leaves anyone blocked (the partner sees end-of-file, exits, and is reaped).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, workload_error};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};
use model::record::Mode;

const NAME: &str = "pipe_pingpong";
/// Round trips per step: a few tens of microseconds.
const BATCH: u64 = 4;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one round trip: the task writes 1 byte to its partner's pipe and reads the echo from its own (2 wake-ups, at least 2 context switches)",
    stresses: "scheduler wake-up (try_to_wake_up, run-queue locks, IPIs with partner=any) and context switch (between threads of one mm, or processes: address-space switch), pipe read/write and its wait queues",
    params: &[ParamSpec {
        name: "partner",
        default: "same_cpu",
        kind: ParamKind::Choice(&["same_cpu", "any"]),
        help: "where each task's echo partner runs: pinned with the task, or wherever the scheduler puts it",
    }],
    uses_files: false,
};

pub(super) struct PipePingpong;

impl Workload for PipePingpong {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        // Read before any task is pinned: the CPUs the whole trial may use.
        let anywhere = match params.text("partner")? {
            "any" => Some(
                sys::current_affinity()
                    .map_err(|e| LabError::sys(format!("{NAME}: reading the CPU affinity"), e))?,
            ),
            _ => None,
        };
        Ok(Box::new(PingpongPrepared {
            mode: ctx.mode,
            anywhere,
        }))
    }
}

struct PingpongPrepared {
    mode: Mode,
    /// `partner=any`: the CPUs the partner is allowed on; `None`: it inherits the task's.
    anywhere: Option<Vec<usize>>,
}

/// The echo partner's loop: read a byte, write it back, until end-of-file. Returns the exit code
/// for a partner process (0: the task closed its end).
fn echo(mut from_task: File, mut to_task: File) -> i32 {
    let mut byte = [0u8; 1];
    loop {
        match from_task.read(&mut byte) {
            Ok(0) => return 0,
            Ok(_) => {
                if to_task.write_all(&byte).is_err() {
                    return 1;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return 1,
        }
    }
}

impl Prepared for PingpongPrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let sys_err = |what: &str, e| LabError::sys(format!("{NAME}: task {index}: {what}"), e);
        let to_partner = sys::pipe().map_err(|e| sys_err("creating a pipe", e))?;
        let to_task = sys::pipe().map_err(|e| sys_err("creating a pipe", e))?;
        let anywhere = self.anywhere.clone();
        let partner = match self.mode {
            Mode::Threads => {
                let (from_task, reply) = (File::from(to_partner.read), File::from(to_task.write));
                let (tid_tx, tid_rx) = std::sync::mpsc::sync_channel(1);
                let handle = std::thread::Builder::new()
                    .name(format!("echo-{index}"))
                    .spawn(move || {
                        let _ = tid_tx.send(sys::gettid() as u32);
                        if let Some(cpus) = anywhere {
                            sys::set_current_affinity(&cpus).map_err(|e| e.to_string())?;
                        }
                        match echo(from_task, reply) {
                            0 => Ok(()),
                            _ => Err("the pipe to the task failed".to_string()),
                        }
                    })
                    .map_err(|e| {
                        LabError::io(format!("{NAME}: task {index}: starting the echo thread"), e)
                    })?;
                let tid = tid_rx.recv().map_err(|_| {
                    workload_error(NAME, format!("task {index}: the echo thread ended at once"))
                })?;
                Partner::Thread(Some(handle), tid)
            }
            Mode::Processes => {
                let task_pid = std::process::id() as i32;
                match sys::fork_single_threaded()
                    .map_err(|e| sys_err("forking the echo partner", e))?
                {
                    sys::ForkResult::Child => {
                        drop(to_partner.write);
                        drop(to_task.read);
                        let _ = sys::set_parent_death_signal(libc::SIGKILL);
                        if sys::getppid() != task_pid {
                            sys::exit_immediately(2); // the task died before the signal was set
                        }
                        if let Some(cpus) = anywhere {
                            if sys::set_current_affinity(&cpus).is_err() {
                                sys::exit_immediately(3);
                            }
                        }
                        let code = echo(File::from(to_partner.read), File::from(to_task.write));
                        sys::exit_immediately(code);
                    }
                    sys::ForkResult::Parent { child } => {
                        drop(to_partner.read);
                        drop(to_task.write);
                        Partner::Process(Some(child))
                    }
                }
            }
        };
        Ok(Box::new(PingpongTask {
            to_partner: Some(File::from(to_partner.write)),
            from_partner: File::from(to_task.read),
            partner,
            index,
        }))
    }
}

/// The other half of a task's pair, ended and reaped when the task's loop is dropped.
enum Partner {
    /// The echo thread and its thread id.
    Thread(Option<std::thread::JoinHandle<Result<(), String>>>, u32),
    /// The echo process's pid (`None` once reaped).
    Process(Option<i32>),
}

struct PingpongTask {
    /// `None` only while dropping: closing it tells the partner to exit.
    to_partner: Option<File>,
    from_partner: File,
    partner: Partner,
    index: usize,
}

impl PingpongTask {
    fn broken(&self, what: &str) -> LabError {
        workload_error(
            NAME,
            format!(
                "task {}: {what}: the echo partner is gone (killed, or failed to start)",
                self.index
            ),
        )
    }
}

impl TaskLoop for PingpongTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        let mut byte = [0x2a_u8; 1];
        let Some(out) = self.to_partner.as_mut() else {
            return Err(self.broken("writing"));
        };
        for _ in 0..BATCH {
            match out.write(&byte) {
                Ok(1) => {}
                Ok(_) | Err(_) => return Err(self.broken("writing")),
            }
            loop {
                match self.from_partner.read(&mut byte) {
                    Ok(1) => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Ok(_) | Err(_) => return Err(self.broken("reading the echo")),
                }
            }
        }
        Ok(BATCH)
    }

    fn partner(&self) -> Option<(u32, u32)> {
        match self.partner {
            Partner::Thread(_, tid) => Some((std::process::id(), tid)),
            Partner::Process(pid) => pid.map(|p| (p as u32, p as u32)),
        }
    }
}

impl Drop for PingpongTask {
    fn drop(&mut self) {
        drop(self.to_partner.take()); // end-of-file for the partner, which then exits
        match &mut self.partner {
            Partner::Thread(handle, _) => {
                if let Some(h) = handle.take() {
                    let _ = h.join();
                }
            }
            Partner::Process(pid) => {
                if let Some(pid) = pid.take() {
                    let _ = sys::wait_child(pid);
                }
            }
        }
    }
}
