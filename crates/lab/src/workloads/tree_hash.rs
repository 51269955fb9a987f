//! `tree_hash`: checksum every file of a directory tree, the middle of the old "untar a source
//! tree, md5 every file, diff against the original, delete it" procedure used to compare
//! filesystems and kernels — here without the noise of the archive and the disk.
//!
//! The tree (`files` files of `size` bytes, 32 to a directory) is generated before the gate
//! opens, one per task (`shared=false`, written by the task after it is pinned) or one for all
//! (`shared=true`), so every page is in the page cache. An op opens the next file by its path,
//! reads it whole, closes it and hashes the bytes with 64-bit FNV-1a (Fowler–Noll–Vo, offset
//! basis 0xcbf29ce484222325, prime 0x100000001b3, one byte at a time: simple, exactly specified,
//! and like md5 a few cycles per byte). The hash is compared with the one recorded when the file
//! was written — the "diff" step — and a difference counts in `hash_mismatches`, which must stay
//! 0. Tasks walk the files in order, wrapping; with `shared=true` they all start at the first
//! file, so they look up the same dentries and read the same cached pages.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::owned_path::{OwnedPath, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "tree_hash";
const FILES_PER_DIR: usize = 32;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one file of the tree opened by path, read whole, closed and hashed (64-bit FNV-1a), and the hash checked",
    stresses: "path walk through the tree's directories (dentry cache), open/read/close of cached files (page-cache read), plus user-space hashing; shared=true: the same dentries, inodes and pages for every task",
    params: &[
        ParamSpec {
            name: "files",
            default: "256",
            kind: ParamKind::Count {
                min: 1,
                max: 1_000_000,
            },
            help: "files in the tree (32 per directory)",
        },
        ParamSpec {
            name: "size",
            default: "4K",
            kind: ParamKind::Size {
                min: 1,
                max: 1 << 30,
            },
            help: "bytes per file",
        },
        ParamSpec {
            name: "shared",
            default: "false",
            kind: ParamKind::Bool,
            help: "true: all tasks hash one tree; false: one tree per task",
        },
    ],
    uses_files: true,
};

/// 64-bit FNV-1a of `bytes`.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// A generated tree: its files' paths and their expected hashes. Removed on drop.
struct Tree {
    paths: Vec<PathBuf>,
    hashes: Vec<u64>,
    size: usize,
    _root: OwnedPath,
}

impl Tree {
    /// Writes `files` files of `size` pseudo-random bytes (different in every file) under `root`.
    fn generate(root: PathBuf, files: usize, size: usize) -> Result<Tree, LabError> {
        let root = OwnedPath::create_dir(root)?;
        let mut paths = Vec::with_capacity(files);
        let mut hashes = Vec::with_capacity(files);
        let mut content = vec![0u8; size];
        for k in 0..files {
            let dir = root.path().join(format!("d{:04}", k / FILES_PER_DIR));
            if k % FILES_PER_DIR == 0 {
                std::fs::create_dir(&dir)
                    .map_err(|e| LabError::io(format!("{NAME}: creating {}", dir.display()), e))?;
            }
            let path = dir.join(format!("f{:02}", k % FILES_PER_DIR));
            let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (k as u64 + 1);
            for b in content.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = (state >> 32) as u8;
            }
            File::create(&path)
                .and_then(|mut f| f.write_all(&content))
                .map_err(|e| LabError::io(format!("{NAME}: writing {}", path.display()), e))?;
            hashes.push(fnv1a64(&content));
            paths.push(path);
        }
        Ok(Tree {
            paths,
            hashes,
            size,
            _root: root,
        })
    }
}

pub(super) struct TreeHash;

impl Workload for TreeHash {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        let dir = scratch_dir(ctx, NAME)?;
        let files = params.count("files")? as usize;
        let size = params.size("size")? as usize;
        let shared = if params.flag("shared")? {
            Some(Tree::generate(
                dir.join(format!("{NAME}.shared")),
                files,
                size,
            )?)
        } else {
            None
        };
        Ok(Box::new(TreePrepared {
            dir,
            files,
            size,
            shared,
        }))
    }
}

struct TreePrepared {
    dir: PathBuf,
    files: usize,
    size: usize,
    shared: Option<Tree>,
}

impl Prepared for TreePrepared {
    fn extra_names(&self) -> &'static [&'static str] {
        &["hash_mismatches"]
    }
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let tree = match &self.shared {
            Some(t) => TreeRef::Shared(t),
            None => TreeRef::Own(Tree::generate(
                self.dir.join(format!("{NAME}.{index}")),
                self.files,
                self.size,
            )?),
        };
        Ok(Box::new(TreeTask {
            buf: vec![0; self.size],
            tree,
            next: 0,
            mismatches: 0,
        }))
    }
}

enum TreeRef<'a> {
    Shared(&'a Tree),
    Own(Tree),
}

struct TreeTask<'a> {
    tree: TreeRef<'a>,
    buf: Vec<u8>,
    next: usize,
    mismatches: u64,
}

/// Reads up to `buf.len()` bytes of the file at `path`: open, read until full or end of file,
/// close. Returns how many bytes were read.
fn read_file(path: &Path, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut file = File::open(path)?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

impl TaskLoop for TreeTask<'_> {
    /// One file per step: a few microseconds for small files.
    fn step(&mut self) -> Result<u64, LabError> {
        let tree = match &self.tree {
            TreeRef::Shared(t) => *t,
            TreeRef::Own(t) => t,
        };
        let k = self.next;
        let path = &tree.paths[k];
        let n = read_file(path, &mut self.buf)
            .map_err(|e| LabError::io(format!("{NAME}: reading {}", path.display()), e))?;
        if n != tree.size || fnv1a64(&self.buf[..n]) != tree.hashes[k] {
            self.mismatches += 1;
        }
        self.next = if k + 1 == tree.paths.len() { 0 } else { k + 1 };
        Ok(1)
    }
    fn extras(&self) -> Vec<(&'static str, u64)> {
        vec![("hash_mismatches", self.mismatches)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_changed_file_is_counted_as_a_mismatch() {
        let base = tempfile::tempdir().unwrap();
        let tree = Tree::generate(base.path().join("t"), 40, 100).unwrap();
        assert_eq!(tree.paths.len(), 40);
        assert!(base.path().join("t/d0001/f07").exists());
        assert_ne!(tree.hashes[0], tree.hashes[1], "files differ");
        std::fs::write(&tree.paths[1], vec![0u8; 100]).unwrap();
        let mut task = TreeTask {
            tree: TreeRef::Own(tree),
            buf: vec![0; 100],
            next: 0,
            mismatches: 0,
        };
        for _ in 0..80 {
            assert_eq!(task.step().unwrap(), 1);
        }
        assert_eq!(task.mismatches, 2, "file 1, read twice");
        drop(task);
        assert!(
            !base.path().join("t").exists(),
            "the tree is removed on drop"
        );
    }
}
