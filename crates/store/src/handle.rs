//! The handle on a results database, [`Store`]: opening it (a SQLite file or a PostgreSQL
//! server) and where it is. What it does is in one file per concern (`runs` writes, `query`
//! reads, `bisect`, `run_files`, `push`), each an `impl Store` of its own.

use std::cell::RefCell;
use std::path::Path;

use crate::address::Location;
use crate::backend::{Db, Lite, Pg};
use crate::error::StoreError;
use crate::{liveness, schema};

/// An open results database.
#[derive(Debug)]
pub struct Store {
    pub(crate) db: Db,
    pub(crate) location: Location,
    /// This process as a run owner, read once at open.
    pub(crate) me: liveness::Owner,
}

impl Store {
    /// Opens (creating it and its parent directories when missing) the SQLite database at
    /// `path`, migrating an older schema forward: for the commands that store runs.
    ///
    /// Refused, with the file left untouched: a file that is not a SQLite database, a SQLite
    /// database of another application, a database written by a newer scalelab, a path through
    /// a link another user made, a database file that is a link. A location that cannot be
    /// created or written is an error too. A new file is 0600, new folders 0700.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at(&Location::File(path.to_path_buf()), true)
    }

    /// Opens the existing SQLite database at `path`, as [`Store::open`] does, for the commands
    /// that only read: a missing or empty file is refused and nothing is created.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        Store::open_at(&Location::File(path.to_path_buf()), false)
    }

    /// Opens the store at `location`, a file or a PostgreSQL server. When `create`, a missing
    /// database (file, or scalelab's tables on the server) is created and an older schema
    /// migrated; otherwise a missing one is refused. A server that cannot be reached is an
    /// error naming the URL without its password.
    pub fn open_at(location: &Location, create: bool) -> Result<Store, StoreError> {
        let db = match location {
            Location::File(path) => Db::Sqlite(Lite {
                conn: schema::open(path, create)?,
            }),
            Location::Postgres(url) => {
                Db::Postgres(Box::new(RefCell::new(Pg::open(url, location, create)?)))
            }
        };
        Ok(Store {
            db,
            location: location.clone(),
            me: liveness::Owner::current(),
        })
    }

    /// What cancels this store's statement in flight from another thread (a stop signal's
    /// handler: a statement waiting for a lock does not see a stop flag); `None` on SQLite,
    /// whose waits are bounded by its busy timeout.
    pub fn interrupter(&self) -> Option<crate::backend::Interrupter> {
        match &self.db {
            Db::Postgres(pg) => Some(pg.borrow().interrupter()),
            Db::Sqlite(_) => None,
        }
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The database file, for a SQLite store.
    pub fn path(&self) -> Option<&Path> {
        self.location.path()
    }

    /// The store as shown in messages (a URL without its password).
    pub(crate) fn shown(&self) -> String {
        self.location.to_string()
    }
}
