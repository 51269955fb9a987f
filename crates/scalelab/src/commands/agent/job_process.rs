//! A job's process: `scalelab JOB` with the job's tags, as the CLI runs it, in a child that dies
//! with the agent (`sys::die_with_parent`: an agent killed with SIGKILL leaves no measurement
//! behind, and its run reads `incomplete`). Its output is kept to its last lines, for the
//! reason a failed job gives.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use store::Claimed;

use crate::job_args::{ATTEMPT_TAG, JOB_TAG};

/// The most of a job's output kept (bytes, its end).
const TAIL_BYTES: usize = 8 * 1024;

/// How long a job stopped by SIGTERM has to store what it finished before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// How a job's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its exit status.
    Exit(i32),
    /// Killed by this signal.
    Signal(String),
}

/// A running job.
pub struct JobProcess {
    child: Child,
    tail: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

impl JobProcess {
    /// Starts `scalelab ARGS…` for `job`, its runs tagged with the job and attempt, its store
    /// `db` (through `SCALELAB_DB`).
    pub fn start(job: &Claimed, db: &OsStr) -> Result<JobProcess> {
        let exe = std::env::current_exe().context("locating the scalelab binary to run a job")?;
        let mut command = Command::new(exe);
        let (sub, rest) = job.args.split_first().context("a job without arguments")?;
        command
            .arg(sub)
            .args(["--tag", &format!("{JOB_TAG}={}", job.id)])
            .args(["--tag", &format!("{ATTEMPT_TAG}={}", job.attempt)])
            .args(rest)
            .env("SCALELAB_DB", db)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sys::die_with_parent(&mut command);
        let mut child = command.spawn().context("starting the job's scalelab")?;
        let tail = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        let outputs: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|e| Box::new(e) as Box<dyn Read + Send>),
        ];
        for mut out in outputs.into_iter().flatten() {
            let tail = Arc::clone(&tail);
            readers.push(std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = out.read(&mut buf) {
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    let over = t.len().saturating_sub(TAIL_BYTES);
                    t.drain(..over);
                }
            }));
        }
        Ok(JobProcess {
            child,
            tail,
            readers,
        })
    }

    /// How it ended, once it has; `None` while it runs.
    pub fn ended(&mut self) -> Result<Option<Ended>> {
        let Some(status) = self
            .child
            .try_wait()
            .context("waiting for the job's scalelab")?
        else {
            return Ok(None);
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        use std::os::unix::process::ExitStatusExt;
        Ok(Some(match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Exit(code),
            (None, Some(sig)) => Ended::Signal(sys::signal_name(sig)),
            (None, None) => Ended::Signal("an unknown signal".into()),
        }))
    }

    /// Stops it as `scalelab run` is stopped by SIGTERM (its finished trials stored, its run
    /// marked interrupted), then SIGKILL after a grace period.
    pub fn stop(&mut self) {
        let pid = self.child.id() as i32;
        let _ = sys::send_signal(pid, signal_hook::consts::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last line of its output that says what went wrong (an `error:` line, else its
    /// last line), escaped.
    pub fn last_error(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        telling_line(&String::from_utf8_lossy(&tail))
    }
}

/// The line of a scalelab's output that says what happened: its last `error:` line, else its
/// last line; escaped.
fn telling_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("no output");
    model::safe_text::printable(line.trim()).into_owned()
}

/// `scalelab ARGS…` on the store `db`, to its end: its exit status (`None`: killed) and the
/// last line of its output that says what it found (an `error:` line, else its last line).
pub fn run_to_end(args: &[String], db: &OsStr) -> Result<(Option<i32>, String)> {
    let exe = std::env::current_exe().context("locating the scalelab binary")?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .env("SCALELAB_DB", db)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    sys::die_with_parent(&mut command);
    let out = command.output().context("running scalelab")?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.code(), telling_line(&text)))
}

/// The host name this machine's runs are stored under (their fingerprint's).
pub fn runs_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_telling_line_is_the_last_error_else_the_last_line_escaped() {
        assert_eq!(telling_line("a\nerror: x\nb\n\n"), "error: x");
        assert_eq!(telling_line("a\nb\n  \n"), "b");
        assert_eq!(telling_line(""), "no output");
        assert!(!telling_line("error: \u{1b}[31mred").contains('\u{1b}'));
    }
}
