//! A run's files in the store (table `run_files`): the perf.data files and kallsyms snapshot of
//! its profile folder, put there by `push --with-profiles` and read back by
//! [`crate::profile_files::fetch`] on a host that does not have them. Each file is one value
//! (SQLite BLOB, PostgreSQL bytea), written in its own transaction; a file already stored
//! under a run's name is never replaced (a run's files do not change once it is recorded).

use super::backend::vals;
use crate::error::StoreError;
use crate::handle::Store;

impl Store {
    /// The names and sizes (bytes) of the files stored for run `id`, by name.
    pub fn run_file_names(&self, id: i64) -> Result<Vec<(String, u64)>, StoreError> {
        self.require_run(id)?;
        self.db.read(&self.location, |tx| {
            tx.query(
                "SELECT name, size FROM run_files WHERE run_id = ?1 ORDER BY name",
                vals![id],
            )?
            .into_iter()
            .map(|r| Ok((r.text(0)?, u64::try_from(r.int(1)?).unwrap_or(0))))
            .collect()
        })
    }

    /// The file `name` of run `id`, when it is stored.
    pub fn run_file(&self, id: i64, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.db.read(&self.location, |tx| {
            tx.query_opt(
                "SELECT data FROM run_files WHERE run_id = ?1 AND name = ?2",
                vals![id, name],
            )?
            .map(|r| r.bytes(0))
            .transpose()
        })
    }

    /// Stores `data` as the file `name` of run `id` unless the run has a file of that name
    /// already; true when it was stored now.
    pub fn put_run_file(&mut self, id: i64, name: &str, data: &[u8]) -> Result<bool, StoreError> {
        self.require_run(id)?;
        let size = i64::try_from(data.len()).unwrap_or(i64::MAX);
        let changed = self.write(|w| {
            w.tx.execute(
                "INSERT INTO run_files (run_id, name, size, data) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id, name) DO NOTHING",
                vals![id, name, size, data],
            )
        })?;
        Ok(changed > 0)
    }
}
