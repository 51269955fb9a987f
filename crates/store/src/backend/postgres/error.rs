//! Why a PostgreSQL URL cannot be made into servers to try ([`ConfigError`]), for every module
//! that reads one (`uri`, `files`, `hosts`, `tls`, `config`), never quoting the
//! password.

/// Why a URL cannot be made into servers to try (never quoting the password).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The URL does not parse, or its parts do not fit together.
    #[error(
        "not a valid PostgreSQL URL: {0} — write it as postgres://USER@HOST[:PORT]/DATABASE (or postgres:///DATABASE?host=/socket/dir)"
    )]
    Url(String),
    /// A query parameter libpq does not know.
    #[error("`{0}` is not a PostgreSQL connection parameter (psql refuses it too)")]
    Unknown(String),
    /// A value a parameter cannot take.
    #[error("{keyword}={value}: {expected}")]
    Invalid {
        /// The parameter.
        keyword: &'static str,
        /// Its value.
        value: String,
        /// What it may be.
        expected: String,
    },
    /// A parameter (or value) scalelab does not support; psql would use it.
    #[error(
        "{keyword}={value}: {why} — scalelab does not support it; leave it out of the URL, service and PG… variables"
    )]
    Unsupported {
        /// The parameter.
        keyword: &'static str,
        /// Its value (never a secret's).
        value: String,
        /// What it would do.
        why: &'static str,
    },
    /// The service it names is in no service file.
    #[error(
        "service `{0}` is not defined in any service file (PGSERVICEFILE, ~/.pg_service.conf, PGSYSCONFDIR/pg_service.conf)"
    )]
    Service(String),
}

/// A value `keyword` cannot take, and what it may be.
pub(crate) fn invalid(keyword: &'static str, value: &str, expected: &str) -> ConfigError {
    ConfigError::Invalid {
        keyword,
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

/// A parameter scalelab does not support, and what it would do.
pub(crate) fn unsupported(keyword: &'static str, value: &str, why: &'static str) -> ConfigError {
    ConfigError::Unsupported {
        keyword,
        value: value.to_owned(),
        why,
    }
}
