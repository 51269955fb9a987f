//! Where a bisection builds, and how: one scalelab-owned folder per bisection beside the
//! database, `<db dir>/bisect/<db file name>/<id>/`, holding the worktrees (`G` and `B`, the
//! good and the bad end — kept aside for the whole bisection, measured at every step — and `C`,
//! the commit under test, moved from commit to commit so that an incremental build redoes only
//! what changed; named as the sides' letters in the printed order) and `logs/`, where every
//! build's output is kept.
//!
//! The three worktree names have the same length on purpose: a command runs in its worktree,
//! so its `PWD` — and with it the size of its environment, which sets where its stack starts
//! and so the alignment of everything on it — must not differ by a byte between the sides
//! (what a byte moved: docs/notes/bisect.md).
//!
//! The folder is made as profiles are (`owned_dir`: 0700, never through a link, the database's
//! folder checked so no other user can swap a folder for a link); git creates each worktree by
//! name inside it, which only scalelab can write. A build is `sh -c BUILD` in the worktree, its
//! stdout and stderr into a new log file (0600, `O_EXCL`), in its own process group, started as
//! every child of scalelab (it dies with scalelab); it is killed at its limit or when the stop
//! flag is raised, and whatever it left running is killed when it ends.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::error::BisectError;
use super::git;
use crate::process::leftovers::Leftovers;
use crate::process::owner::adopt;
use sys::owned_dir::{self, NewEntryError, OwnedDir};

/// How often the stop flag and the limit are checked while a build runs.
const TICK: Duration = Duration::from_millis(50);

/// A bisection's folder.
#[derive(Debug)]
pub(crate) struct Area {
    dir: OwnedDir,
    logs: OwnedDir,
}

impl Area {
    /// Opens (making it when missing) the folder of bisection `id` of the database `db`.
    pub(crate) fn open(db: &Path, id: i64) -> Result<Area, BisectError> {
        let (folder, db_name) = owned_dir::split(db)?;
        let dir = OwnedDir::open_anchor(&folder)?
            .private_subdir("bisect")?
            .private_subdir(&db_name)?
            .private_subdir(&id.to_string())?;
        let logs = dir.private_subdir("logs")?;
        Ok(Area { dir, logs })
    }

    /// The folder itself.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The worktree `name` at `commit`: made with `git worktree add` the first time, moved to
    /// `commit` when it exists (a resumed bisection).
    pub(crate) fn worktree(
        &self,
        repo: &Path,
        name: &str,
        commit: &str,
    ) -> Result<PathBuf, BisectError> {
        let path = self.dir.join(name);
        match self.dir.entry(name)? {
            None => {
                // A worktree whose folder was removed by hand is still registered: forget it.
                git::prune_worktrees(repo)?;
                git::add_worktree(repo, &path, commit)?;
            }
            Some(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                git::checkout(&path, commit).map_err(|e| BisectError::StaleWorktree {
                    path: path.clone(),
                    detail: e.to_string(),
                })?;
            }
            Some(_) => {
                return Err(BisectError::StaleWorktree {
                    path: path.clone(),
                    detail: "not a directory".into(),
                });
            }
        }
        Ok(path)
    }

    /// Removes every worktree of the folder from `repo` (the logs stay).
    pub(crate) fn remove_worktrees(&self, repo: &Path) -> Result<(), BisectError> {
        for name in WORKTREES {
            if self.dir.entry(name)?.is_some() {
                git::remove_worktree(repo, &self.dir.join(name))?;
            }
        }
        git::prune_worktrees(repo)
    }

    /// A new, empty log file named after `stem` (`stem.log`, or `stem-2.log`… when taken).
    pub(crate) fn new_log(&self, stem: &str) -> Result<(File, PathBuf), BisectError> {
        for k in 1..1000 {
            let name = match k {
                1 => format!("{stem}.log"),
                k => format!("{stem}-{k}.log"),
            };
            match self.logs.create_file(&name) {
                Ok(file) => return Ok((file, self.logs.join(&name))),
                Err(NewEntryError::Exists(_)) => continue,
                Err(NewEntryError::Refused(e)) => return Err(e.into()),
            }
        }
        Err(BisectError::Path(owned_dir::PathError::from(
            NewEntryError::Exists(self.logs.join(&format!("{stem}.log"))),
        )))
    }
}

/// The worktrees a bisection makes, by name.
pub(crate) const WORKTREES: [&str; 3] = [GOOD, BAD, STEP];

/// The good end's worktree.
pub(crate) const GOOD: &str = "G";
/// The bad end's worktree.
pub(crate) const BAD: &str = "B";
/// The worktree of the commit under test.
pub(crate) const STEP: &str = "C";

/// How a build ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Built {
    /// It exited 0 after this long.
    Ok(Duration),
    /// It failed (exit status, signal, limit); the reason says which.
    Failed(String),
    /// The stop flag was raised; it was killed.
    Interrupted,
}

/// Runs `sh -c command` in `dir`, its output into `log`, up to `limit` (see the module doc).
pub(crate) fn build(
    command: &str,
    dir: &Path,
    log: File,
    limit: Duration,
    stop: &AtomicBool,
) -> Result<Built, BisectError> {
    let err_log = log
        .try_clone()
        .map_err(|e| BisectError::io("sharing the build log between stdout and stderr", e))?;
    let mut sh = Command::new("sh");
    sh.args(["-c", command])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0);
    // Spawned on this thread, which waits for it below (the parent-death signal follows the
    // spawning thread).
    let mark = adopt(&mut sh);
    let child = sh
        .spawn()
        .map_err(|e| BisectError::io("starting the build (sh)", e))?;
    let pid = child.id() as i32;
    let leftovers = Leftovers {
        leader: pid,
        pgid: pid,
        mark,
    };
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(sys::wait_child(pid));
    });
    let ended = loop {
        match rx.recv_timeout(TICK) {
            Ok(exit) => break Some(exit),
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::SeqCst) || started.elapsed() >= limit {
                    let _ = sys::send_signal(-pid, libc::SIGKILL);
                    let _ = rx.recv_timeout(Duration::from_secs(5));
                    leftovers.kill();
                    return Ok(if stop.load(Ordering::SeqCst) {
                        Built::Interrupted
                    } else {
                        Built::Failed(format!(
                            "timed out after {:.0}s (--build-timeout); killed",
                            limit.as_secs_f64()
                        ))
                    });
                }
            }
        }
    };
    let wall = started.elapsed();
    leftovers.kill();
    Ok(match ended {
        Some(Ok(exit)) => match exit.status {
            sys::ExitKind::Exited(0) => Built::Ok(wall),
            status => Built::Failed(format!("`{command}` {status}")),
        },
        Some(Err(e)) => Built::Failed(format!("waiting for the build: {e}")),
        None => Built::Failed("lost track of the build".into()),
    })
}
