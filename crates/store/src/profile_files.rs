//! A run's profile files between hosts. A profile is a perf.data file in the run's folder on
//! the host that recorded it (`<db dir>/profiles/<db name>/<run UUID>/`, with the kallsyms
//! snapshot its kernel frames are named by); the store keeps only its path.
//!
//! - [`copy`] (for `push --with-profiles`): stores a run's files in the target store's
//!   `run_files` table, those it lacks, read from this host's run folder — only the run's own
//!   regular files, never through a link — or else from the source store's stored copies.
//! - [`fetch_profiles`]: on a host where a profile's recorded path is not there, writes the
//!   store's copies into this host's folder for that store (made 0700, files 0600 with
//!   `O_EXCL|O_NOFOLLOW`, written under a temporary name and renamed into place) and points
//!   the run's profiles at them, so every reader of profiles (`profile`, `explain`, `report`,
//!   `serve`) works on them unchanged. Names read from a store are checked: a plain file name
//!   that a profile of the run names, or the kallsyms snapshot.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use crate::error::StoreError;
use crate::handle::Store;
use model::profile_path::check_own_profile;
use model::record::KALLSYMS;
use model::record::RunData;
use sys::owned_dir::{NewEntryError, OwnedDir};

/// The largest file `push --with-profiles` stores (PostgreSQL's `bytea` holds at most 1 GB).
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// What [`copy`] did for one run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FilesCopied {
    /// Files stored now.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files the target had already.
    pub present: usize,
    /// Files that could not be copied, each with why (a sentence naming the run and trial).
    pub missing: Vec<String>,
}

/// A profile of the run: its trial, the file's name, the recorded path.
struct ProfileFile {
    n: u32,
    index: u32,
    name: String,
    path: String,
}

/// Every profile file of the run: each profiled trial's, and its servers' beside it.
fn profile_files(run: &RunData) -> Vec<ProfileFile> {
    run.trials
        .iter()
        .filter_map(|t| Some((t, t.outcome.measurement()?.profile.as_ref()?)))
        .flat_map(|(t, pr)| {
            std::iter::once(&pr.path)
                .chain(pr.servers_path.as_ref())
                .filter_map(|path| {
                    let name = Path::new(path).file_name()?.to_str()?.to_string();
                    Some(ProfileFile {
                        n: t.n,
                        index: t.index,
                        name,
                        path: path.clone(),
                    })
                })
        })
        .collect()
}

/// Reads the file `path` of this host: a regular file, not through a link, at most
/// [`MAX_FILE_BYTES`].
fn read_local(path: &Path) -> Result<Vec<u8>, String> {
    let (folder, name) = sys::owned_dir::split(path).map_err(|e| e.to_string())?;
    let mut file = OwnedDir::open(&folder)
        .and_then(|d| d.open_file(&name))
        .map_err(|e| e.to_string())?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{}: {} bytes, more than the {} MiB a stored file may have; copy it by hand",
            path.display(),
            meta.len(),
            MAX_FILE_BYTES >> 20
        ));
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut data)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(data)
}

/// Stores the profile files of `run` (run `from_id` of `from`) as files of run `to_id` of
/// `to`, those `to` does not have: each from this host's run folder when it is there, else
/// from `from`'s stored copy. A file found in neither place is listed in
/// [`FilesCopied::missing`]; the copy goes on.
pub(crate) fn copy(
    from: &Store,
    from_id: i64,
    run: &RunData,
    to: &mut Store,
    to_id: i64,
) -> Result<FilesCopied, StoreError> {
    let mut out = FilesCopied::default();
    let files = profile_files(run);
    if files.is_empty() {
        return Ok(out);
    }
    let there: HashMap<String, u64> = to.run_file_names(to_id)?.into_iter().collect();
    let stored: HashMap<String, u64> = from.run_file_names(from_id)?.into_iter().collect();
    // (file name, its path here or why it is not read here)
    let mut wanted: Vec<(String, Result<String, String>)> = Vec::new();
    for f in files {
        // Only the run's own regular files: a path outside its folder is another run's.
        let path = check_own_profile(&run.meta, f.n, f.index, &f.path)
            .map(|()| f.path)
            .map_err(|e| e.to_string());
        wanted.push((f.name, path));
    }
    // The kallsyms snapshot beside the profiles (one per run folder); a run recorded where
    // /proc/kallsyms was unreadable has none.
    let kallsyms = wanted
        .iter()
        .find_map(|(_, p)| p.as_ref().ok())
        .map(|p| Path::new(p).with_file_name(KALLSYMS).display().to_string())
        .ok_or_else(|| format!("run {}: no kallsyms snapshot here", run.meta.id));
    wanted.push((KALLSYMS.into(), kallsyms));
    for (name, path) in wanted {
        if there.contains_key(&name) {
            out.present += 1;
            continue;
        }
        let local = path.and_then(|p| read_local(Path::new(&p)));
        let data = match local {
            Ok(d) => d,
            Err(why) => match stored.contains_key(&name) {
                true => match from.run_file(from_id, &name)? {
                    Some(d) => d,
                    None => {
                        out.missing.push(why);
                        continue;
                    }
                },
                false if name == KALLSYMS => continue,
                false => {
                    out.missing.push(why);
                    continue;
                }
            },
        };
        if to.put_run_file(to_id, &name, &data)? {
            out.files += 1;
            out.bytes += data.len() as u64;
        } else {
            out.present += 1;
        }
    }
    Ok(out)
}

/// A name read from a store that may become a file here: plain, not hidden, of the characters
/// scalelab's own names use.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// Where the profiles of `run` are read from when their recorded paths are not on this host:
/// the store's copies (stored by `push --with-profiles`) are written into this host's folder
/// for the store, beside `local_db_file` (the SQLite file, or for a PostgreSQL store the
/// default local file), unless already there, and the run's profiles point at them. Returns
/// how many profiles now point at such copies; profiles the store has no copy of are left as
/// they are (reading them then says they are gone).
pub fn fetch_profiles(
    store: &Store,
    run: &mut RunData,
    local_db_file: &Path,
) -> Result<usize, StoreError> {
    let absent = |p: &str| std::fs::symlink_metadata(p).is_err();
    if !profile_files(run).iter().any(|f| absent(&f.path)) {
        return Ok(0);
    }
    let stored: HashMap<String, u64> = store.run_file_names(run.meta.id)?.into_iter().collect();
    if stored.is_empty() {
        return Ok(0);
    }
    let dir =
        profiles_of(local_db_file)?.private_subdir(&run.meta.uuid.hyphenated().to_string())?;
    let mut written: HashMap<String, String> = HashMap::new();
    let mut pointed = 0;
    for t in &mut run.trials {
        let Some(m) = t.outcome.measurement_mut() else {
            continue;
        };
        let Some(pr) = m.profile.as_mut() else {
            continue;
        };
        for path in std::iter::once(&mut pr.path).chain(pr.servers_path.as_mut()) {
            if !absent(path) {
                continue;
            }
            let Some(name) = Path::new(path.as_str())
                .file_name()
                .and_then(|n| n.to_str())
            else {
                continue;
            };
            let name = name.to_string();
            let Some(&size) = stored.get(&name) else {
                continue;
            };
            if !plain_name(&name) {
                return Err(StoreError::Files(format!(
                    "run {}: a stored profile is named {:?}, not a plain file name; not written",
                    run.meta.id, name
                )));
            }
            if !written.contains_key(&name) {
                let file = materialise(store, run.meta.id, &dir, &name, size)?;
                written.insert(name.clone(), file);
            }
            *path = written[&name].clone();
            pointed += 1;
        }
    }
    if pointed > 0 {
        if let Some(&size) = stored.get(KALLSYMS) {
            materialise(store, run.meta.id, &dir, KALLSYMS, size)?;
        }
    }
    Ok(pointed)
}

/// Writes the stored file `name` of run `id` into `dir` unless a regular file of that name and
/// `size` is there; returns its path.
fn materialise(
    store: &Store,
    id: i64,
    dir: &OwnedDir,
    name: &str,
    size: u64,
) -> Result<String, StoreError> {
    let path = dir.join(name);
    if let Some(st) = dir.entry(name)? {
        let regular = rustix::fs::FileType::from_raw_mode(st.st_mode).is_file();
        if regular && st.st_size as u64 == size {
            return Ok(path.display().to_string());
        }
        return Err(StoreError::Files(format!(
            "{} is there but is not the stored copy ({} bytes; a link or a file of another size); remove it and try again",
            path.display(),
            size
        )));
    }
    let data = store
        .run_file(id, name)?
        .ok_or_else(|| StoreError::Files(format!("run {id}: {name} left the store")))?;
    let partial = format!(".{name}.{}.partial", std::process::id());
    let mut file = dir
        .create_file(&partial)
        .map_err(sys::owned_dir::PathError::from)?;
    let written = file
        .write_all(&data)
        .and_then(|()| file.sync_all())
        .map_err(|source| StoreError::FileIo {
            context: format!("writing {}", dir.join(&partial).display()),
            source,
        });
    let placed = written.and_then(|()| match dir.rename_new(&partial, name) {
        // Another reader placed it meanwhile: theirs is the same file.
        Ok(()) | Err(NewEntryError::Exists(_)) => Ok(()),
        Err(NewEntryError::Refused(e)) => Err(e.into()),
    });
    let _ = std::fs::remove_file(dir.join(&partial));
    placed.map(|()| path.display().to_string())
}

/// The folder holding the run folders of the database `db`, `<db dir>/profiles/<db file
/// name>/`, made (0700) when missing; every step through trusted links only
/// ([`sys::owned_dir`]).
pub fn profiles_of(db: &Path) -> Result<OwnedDir, StoreError> {
    let (folder, db_name) = sys::owned_dir::split(db)?;
    // A PostgreSQL store's profiles go beside the default local database, whose folder a host
    // that never used SQLite does not have yet (made 0700, through trusted links only).
    if !folder.exists() {
        OwnedDir::open_or_create(&folder)?;
    }
    Ok(OwnedDir::open_anchor(&folder)?
        .private_subdir("profiles")?
        .private_subdir(&db_name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_from_a_store_become_files() {
        for ok in ["n1-t1.perf.data", "kallsyms", "n128-t10.perf.data"] {
            assert!(plain_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            ".hidden",
            "x\0y",
            "n1 t1",
            "é.perf.data",
        ] {
            assert!(!plain_name(bad), "{bad:?}");
        }
    }
}
