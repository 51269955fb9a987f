//! Embeds the git commit of the scalelab source as `SCALELAB_GIT_COMMIT` for the environment
//! fingerprint; "unknown" outside a git checkout.
//!
//! Reads `.git` directly (no `git` binary needed): `HEAD`, the ref it points to (loose or in
//! `packed-refs`), and worktrees' `gitdir:` / `commondir` indirections. Packagers building from
//! a tarball may set `SCALELAB_GIT_COMMIT` themselves.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=SCALELAB_GIT_COMMIT");
    let commit = match std::env::var("SCALELAB_GIT_COMMIT") {
        Ok(preset) if !preset.trim().is_empty() => preset.trim().to_string(),
        _ => {
            let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
            manifest
                .and_then(|dir| git_commit(&dir))
                .unwrap_or_else(|| "unknown".to_string())
        }
    };
    println!("cargo:rustc-env=SCALELAB_GIT_COMMIT={commit}");
}

/// The commit `HEAD` resolves to in the checkout containing `start`, announcing every file it
/// read to cargo so a commit or branch switch rebuilds.
fn git_commit(start: &Path) -> Option<String> {
    let git_dir = find_git_dir(start)?;
    let common_dir = fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|rel| git_dir.join(rel.trim()))
        .unwrap_or_else(|| git_dir.clone());

    let head_path = git_dir.join("HEAD");
    rerun_if_changed(&head_path);
    let head = fs::read_to_string(&head_path).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return is_hash(head).then(|| head.to_string());
    };

    for dir in [&git_dir, &common_dir] {
        let loose = dir.join(reference);
        if loose.is_file() {
            rerun_if_changed(&loose);
            let hash = fs::read_to_string(&loose).ok()?;
            return is_hash(hash.trim()).then(|| hash.trim().to_string());
        }
    }
    // The ref may become loose later; watching its directory catches that.
    if let Some(parent) = common_dir.join(reference).parent().filter(|p| p.is_dir()) {
        rerun_if_changed(parent);
    }
    let packed_path = common_dir.join("packed-refs");
    rerun_if_changed(&packed_path);
    let packed = fs::read_to_string(packed_path).ok()?;
    packed.lines().find_map(|line| {
        let (hash, name) = line.split_once(' ')?;
        (name.trim() == reference && is_hash(hash)).then(|| hash.to_string())
    })
}

/// The `.git` directory of the nearest checkout at or above `start`, following a worktree's
/// `.git` file (`gitdir: …`).
fn find_git_dir(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        if dot_git.is_file() {
            let text = fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(dir.join(target));
        }
    }
    None
}

fn is_hash(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
