//! Where a run's profile files are, and whether a stored path is the run's own: the analysis
//! reads only those, and `push --with-profiles` copies only those.

use std::path::{Component, Path};

use crate::record::RunMeta;

/// Refuses a trial's perf.data that is not the run's own: it must be a regular file (not a
/// link) in the run's folder, the one named after its UUID. Profiles recorded before runs had
/// UUIDs lived in `profiles/run<ID>`, shared by every database of a folder, so they cannot be
/// told apart from another database's and are refused too.
pub fn check_own_profile(meta: &RunMeta, n: u32, index: u32, stored: &str) -> Result<(), String> {
    let path = Path::new(stored);
    let trial = format!("run {}: the profile of N={n} trial {}", meta.id, index + 1);
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|f| f.to_str())
        .unwrap_or_default();
    let plain = path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain || folder != meta.uuid.hyphenated().to_string() {
        let legacy = folder
            .strip_prefix("run")
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
        let why = if legacy {
            "was recorded by an older scalelab, whose profiles folders two databases could share, so it may be another run's"
        } else {
            "belongs to another run or database"
        };
        return Err(format!(
            "{trial} is {stored}, outside the run's own folder (…/{}/): it {why}; not read — record the run again with --profile",
            meta.uuid
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(format!(
            "{trial} ({stored}) is not a regular file (a link?); not read"
        )),
        Err(_) => Err(format!(
            "{trial} is gone ({stored}); profiles live beside the database they were recorded with"
        )),
    }
}
