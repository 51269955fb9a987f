//! Ctrl-C and SIGTERM for the commands that own a store connection (`run`, `ab`, `bisect`,
//! `agent`): the signal raises a flag the owner checks between steps, and a statement that is
//! still waiting on the server [`GRACE`] after the signal (a lock another session holds) is
//! cancelled, so that a stop signal always ends the process — a commit that is merely slow gets
//! the grace to finish, so a finished trial is not lost to the signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// How long after a stop signal a statement in flight may go on before it is cancelled (and how
/// long it must have been running).
pub const GRACE: Duration = Duration::from_secs(5);

/// Installs the handlers: returns the flag Ctrl-C and SIGTERM raise. With `interrupter` (a
/// PostgreSQL store), a thread cancels its statement still waiting [`GRACE`] after the signal.
pub fn install(interrupter: Option<store::Interrupter>) -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the Ctrl-C and SIGTERM handlers")?;
    }
    if let Some(interrupter) = interrupter {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("stop-signal".into())
            .spawn(move || watch(&stop, &interrupter))
            .context("starting the stop-signal watcher")?;
    }
    Ok(stop)
}

/// Waits for the stop flag, then cancels a statement that outlasts the grace; ends with the
/// process.
fn watch(stop: &AtomicBool, interrupter: &store::Interrupter) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let raised = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        if raised.elapsed() >= GRACE && interrupter.cancel_if_waiting(GRACE) {
            eprintln!(
                "scalelab: stopping: cancelled a statement still waiting on the store {} s after the signal",
                GRACE.as_secs()
            );
        }
    }
}
