//! The guard: a small process that `run` and `ab` start before any trial (the scalelab binary
//! again, with a hidden subcommand), which outlives scalelab by a moment however scalelab ends —
//! SIGKILL and the OOM killer included — and then kills every process still carrying
//! scalelab's owner mark ([`owner`](super::owner)). The parent-death signal reaches only
//! scalelab's direct children (the trial child, `perf record`, a step's `sh`); without the
//! guard, a command's own children, or a daemon it started, would run on and disturb the next
//! run.
//!
//! It learns that scalelab has ended from its stdin: a pipe whose only write end scalelab holds
//! for as long as it lives (close-on-exec, so no other child inherits it) reads end of file
//! when scalelab is gone. It kills only once its owner is seen dead, runs in its own process
//! group (a terminal's Ctrl-C is for scalelab, not for it), carries no owner mark (it is not a
//! process to clean up) and, on purpose, no parent-death signal.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::owner::{Mark, OWNER_VAR, Owner};
use crate::error::LabError;
use sys::proc_table;

/// How long the guard waits, after end of file, for its owner to be gone; a live owner's
/// processes are never touched.
const OWNER_EXIT_WAIT: Duration = Duration::from_secs(2);

/// How long the guard keeps killing (marked processes may still be forking).
const KILL_LIMIT: Duration = Duration::from_secs(5);

/// The write end of the guard's stdin, held until this process exits.
static GUARD: OnceLock<ChildStdin> = OnceLock::new();

/// Starts the guard of this process (once; later calls do nothing): `program subcommand OWNER`,
/// where `program subcommand` ends up calling [`serve`] with OWNER.
pub(crate) fn start(program: &Path, subcommand: &str) -> Result<(), LabError> {
    if GUARD.get().is_some() {
        return Ok(());
    }
    let mut child = Command::new(program)
        .arg(subcommand)
        .arg(Owner::current().to_string())
        .env_remove(OWNER_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| LabError::io(format!("starting the guard {}", program.display()), e))?;
    if let Some(stdin) = child.stdin.take() {
        let _ = GUARD.set(stdin);
    }
    Ok(())
}

/// The guard's body: waits for its owner to end, then kills the owner's processes; returns how
/// many it killed.
pub fn serve_guard(owner: &str) -> Result<usize, LabError> {
    let owner: Owner = owner
        .parse()
        .map_err(|e: String| LabError::BadOption(format!("the guard's owner: {e}")))?;
    // Nothing is ever written: this returns when the owner has closed its end, by exiting.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    let started = Instant::now();
    while owner.is_alive() {
        if started.elapsed() > OWNER_EXIT_WAIT {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(kill_owned_by(owner))
}

/// Kills every live process whose mark names `owner`, in rounds until none is left or
/// [`KILL_LIMIT`] passes; returns how many there were.
pub(crate) fn kill_owned_by(owner: Owner) -> usize {
    let me = std::process::id() as i32;
    let started = Instant::now();
    let mut killed = std::collections::BTreeSet::new();
    loop {
        let live: Vec<i32> = proc_table::all_pids()
            .into_iter()
            .filter(|&pid| pid != me)
            .filter(|&pid| proc_table::stat(pid).is_some_and(|s| !s.is_zombie()))
            .filter(|&pid| Mark::of(pid).is_some_and(|m| m.owner == owner))
            .collect();
        if live.is_empty() || started.elapsed() > KILL_LIMIT {
            return killed.len();
        }
        for pid in live {
            let _ = sys::send_signal(pid, libc::SIGKILL);
            killed.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
