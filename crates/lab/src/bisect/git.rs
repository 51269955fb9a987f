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
//!
//! scalelab usually runs as root, and nothing of the repository runs but the `--build` command:
//! every git runs with the repository's hooks off (`core.hooksPath=/dev/null`: `post-checkout`,
//! `reference-transaction` and the rest), no file-system monitor (`core.fsmonitor=false`, a
//! command the repository's config may name) and every filter driver the repository's config
//! defines emptied (`filter.NAME.smudge`/`clean`/`process`, as for Git LFS), so a checkout
//! writes the committed bytes and starts no program.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::BisectError;
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

/// The settings every git runs with, so that nothing of the repository runs (see the module
/// doc).
const NOTHING_RUNS: [&str; 8] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
];

/// `git -C dir` with [`NOTHING_RUNS`], the caller's repository variables removed, no prompt.
fn bare_command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.args(NOTHING_RUNS)
        .arg("-C")
        .arg(dir)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT");
    adopt(&mut c);
    c
}

/// `git -C dir ARGS…` that runs nothing of the repository: [`NOTHING_RUNS`], and every filter
/// driver its config defines emptied.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = bare_command(dir);
    for name in filter_drivers(dir) {
        for key in ["smudge", "clean", "process"] {
            c.arg("-c").arg(format!("filter.{name}.{key}="));
        }
        c.arg("-c").arg(format!("filter.{name}.required=false"));
    }
    c.args(args);
    c
}

/// The names of the filter drivers the configuration of the repository at `dir` defines
/// (`filter.NAME.smudge` …); reading configuration runs nothing.
fn filter_drivers(dir: &Path) -> Vec<String> {
    let out = bare_command(dir)
        .args(["config", "--name-only", "--get-regexp", r"^filter\."])
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|key| {
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// Was: `bisect` (as root) ran the repository's `post-checkout` hook at every worktree it
    /// made and every commit it checked out, and would have run its filter drivers too.
    #[test]
    fn git_runs_no_hook_and_no_filter_of_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let marks = dir.path().join("marks");
        std::fs::create_dir(&marks).unwrap();
        run(dir.path(), &["init", "-q", repo.to_str().unwrap()]);
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        std::fs::write(repo.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
        run(&repo, &["add", "."]);
        run(&repo, &["commit", "-q", "-m", "one"]);
        std::fs::write(repo.join("a.txt"), "two\n").unwrap();
        run(&repo, &["commit", "-q", "-am", "two"]);
        let mark = |what: &str| format!("#!/bin/sh\ntouch {}/{what}\ncat\n", marks.display());
        for hook in ["post-checkout", "reference-transaction", "pre-auto-gc"] {
            let path = repo.join(".git/hooks").join(hook);
            std::fs::write(&path, mark(hook)).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let filter = dir.path().join("filter.sh");
        std::fs::write(&filter, mark("filter")).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&filter, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let smudge = filter.to_str().unwrap();
        run(&repo, &["config", "filter.evil.smudge", smudge]);
        run(&repo, &["config", "filter.evil.clean", smudge]);
        run(&repo, &["config", "filter.evil.required", "true"]);
        run(&repo, &["config", "core.fsmonitor", smudge]);

        let good = resolve(&repo, "HEAD~1", "--good").unwrap();
        let bad = resolve(&repo, "HEAD", "--bad").unwrap();
        let tree = dir.path().join("tree");
        add_worktree(&repo, &tree, &good).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("a.txt")).unwrap(),
            "one\n"
        );
        checkout(&tree, &bad).unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("a.txt")).unwrap(),
            "two\n"
        );
        assert_eq!(range(&repo, &good, &bad).unwrap().len(), 2);
        remove_worktree(&repo, &tree).unwrap();
        prune_worktrees(&repo).unwrap();
        let ran: Vec<_> = std::fs::read_dir(&marks)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(ran.is_empty(), "the repository's programs ran: {ran:?}");
    }
}
