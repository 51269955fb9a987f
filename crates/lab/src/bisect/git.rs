//! The git a bisection needs, run as `git -C DIR …` subprocesses: resolving the ends to
//! commits, the range between them in first-parent order, and the worktrees builds happen in
//! (`git worktree add --detach`, so the user's checkout — its files, index and HEAD — is never
//! touched; git records the worktree under the repository's `.git/worktrees`, and
//! [`remove_worktree`] takes it away again).
//!
//! Why first-parent: binary search needs a line of commits, and a merge's second-parent history
//! is not one; as `git bisect --first-parent` does, a merge counts as one change (a regression
//! brought in by a merged branch is found at its merge commit).
//!
//! Every git is started as every child of scalelab is (dies with it, marked), with stdin closed
//! and no terminal prompt, and without the caller's `GIT_DIR`-style variables, which would
//! point it at another repository.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::BisectError;
use crate::process::owner::adopt;

/// A commit of the range: its full hash and subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Commit {
    pub hash: String,
    pub subject: String,
}

/// Runs `git -C dir ARGS…` and returns its stdout; an error names the command and git's words.
fn git(dir: &Path, args: &[&str]) -> Result<String, BisectError> {
    let out = command(dir, args).output().map_err(|e| BisectError::Git {
        command: shown(dir, args),
        detail: format!("cannot run git: {e} — install git or put it on PATH"),
    })?;
    if !out.status.success() {
        return Err(BisectError::Git {
            command: shown(dir, args),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY");
    adopt(&mut c);
    c
}

fn shown(dir: &Path, args: &[&str]) -> String {
    format!("git -C {} {}", dir.display(), args.join(" "))
}

/// The top of the repository `dir` is in, as an absolute path.
pub(crate) fn toplevel(dir: &Path) -> Result<PathBuf, BisectError> {
    let top = git(dir, &["rev-parse", "--show-toplevel"]).map_err(|e| match e {
        BisectError::Git { detail, .. } => BisectError::NotARepository {
            path: dir.to_path_buf(),
            detail,
        },
        other => other,
    })?;
    Ok(PathBuf::from(top.trim()))
}

/// The full hash of the commit `rev` names in `repo`.
pub(crate) fn resolve(repo: &Path, rev: &str, flag: &'static str) -> Result<String, BisectError> {
    let spec = format!("{rev}^{{commit}}");
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .ok()
    .map(|s| s.trim().to_string())
    .filter(|h| !h.is_empty())
    .ok_or_else(|| BisectError::UnknownRevision {
        flag,
        rev: rev.to_string(),
        repo: repo.to_path_buf(),
    })
}

/// Whether `ancestor` is an ancestor of (or is) `descendant`.
pub(crate) fn is_ancestor(
    repo: &Path,
    ancestor: &str,
    descendant: &str,
) -> Result<bool, BisectError> {
    let args = ["merge-base", "--is-ancestor", ancestor, descendant];
    let status = command(repo, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| BisectError::Git {
            command: shown(repo, &args),
            detail: format!("cannot run git: {e}"),
        })?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(BisectError::Git {
            command: shown(repo, &args),
            detail: format!("{status}"),
        }),
    }
}

/// The range from `good` to `bad` in first-parent order, oldest first: `good` itself, then
/// every commit on `bad`'s first-parent line that `good` cannot reach, ending with `bad`.
pub(crate) fn range(repo: &Path, good: &str, bad: &str) -> Result<Vec<Commit>, BisectError> {
    let subject = |hash: &str| -> Result<String, BisectError> {
        Ok(git(repo, &["log", "-1", "--format=%s", hash])?
            .trim_end()
            .to_string())
    };
    let mut commits = vec![Commit {
        hash: good.to_string(),
        subject: subject(good)?,
    }];
    let text = git(
        repo,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H %s",
            &format!("{good}..{bad}"),
        ],
    )?;
    for line in text.lines() {
        let (hash, subject) = line.split_once(' ').unwrap_or((line, ""));
        commits.push(Commit {
            hash: hash.to_string(),
            subject: subject.to_string(),
        });
    }
    Ok(commits)
}

/// Makes a worktree of `repo` at `path` (which must not exist; its parent must), detached at
/// `commit`.
pub(crate) fn add_worktree(repo: &Path, path: &Path, commit: &str) -> Result<(), BisectError> {
    let path = path.to_string_lossy();
    git(
        repo,
        &["worktree", "add", "--quiet", "--detach", &path, commit],
    )?;
    Ok(())
}

/// Moves the worktree at `dir` to `commit`, discarding what the last build changed in tracked
/// files; untracked build products stay, so an incremental build only redoes what changed.
pub(crate) fn checkout(dir: &Path, commit: &str) -> Result<(), BisectError> {
    git(dir, &["checkout", "--quiet", "--force", "--detach", commit])?;
    Ok(())
}

/// Removes the worktree at `path` (and git's record of it in `repo`), whatever it holds.
pub(crate) fn remove_worktree(repo: &Path, path: &Path) -> Result<(), BisectError> {
    let shown_path = path.to_string_lossy();
    git(repo, &["worktree", "remove", "--force", &shown_path])?;
    Ok(())
}

/// Forgets worktrees of `repo` whose directory is gone.
pub(crate) fn prune_worktrees(repo: &Path) -> Result<(), BisectError> {
    git(repo, &["worktree", "prune"])?;
    Ok(())
}
