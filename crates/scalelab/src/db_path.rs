//! Where the results database lives: `--db`, else `SCALELAB_DB` (both handled by clap), else
//! `$XDG_DATA_HOME/scalelab/scalelab.db`, else `~/.local/share/scalelab/scalelab.db`. Only the
//! commands that store runs create it; the others refuse a missing one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lab::store::Store;

pub fn resolve(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("scalelab/scalelab.db"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".local/share/scalelab/scalelab.db")),
        None => bail!(
            "cannot place the database: neither HOME nor XDG_DATA_HOME is set; pass --db PATH or set SCALELAB_DB"
        ),
    }
}

/// Opens the database for a command that stores runs (`run`, `ab`, `import`), creating it.
pub fn open(explicit: Option<&Path>) -> Result<Store> {
    let path = resolve(explicit)?;
    Store::open(&path).with_context(|| format!("opening the results database {}", path.display()))
}

/// Opens the database for a command that only reads: a missing one is an error, not created.
pub fn open_existing(explicit: Option<&Path>) -> Result<Store> {
    let path = resolve(explicit)?;
    Store::open_existing(&path)
        .with_context(|| format!("opening the results database {}", path.display()))
}
