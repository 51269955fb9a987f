//! A PostgreSQL URL made into the servers to try, in the order libpq tries them, so that a URL
//! `psql` accepts reaches the server `psql` reaches — or is refused, naming the parameter
//! scalelab does not support.
//!
//! Sources, first wins, as in libpq: the URL (`uri`: its query parameters over its other
//! parts), the service it or `PGSERVICE` names (`files`), the `PG…` environment variables,
//! then libpq's defaults (Debian's socket folder `/var/run/postgresql`, port 5432, the effective
//! user's name as user and database). The host list is split as libpq splits it (`hosts`);
//! each entry gets its password from the URL, `PGPASSWORD` or the password file looked up for
//! that entry's host and port.
//!
//! Every libpq parameter is used, accepted as changing nothing of where or as whom it connects,
//! or refused naming it; the table of which is which: `docs/notes/store.md`.
//!
//! Nothing here prints or keeps the password outside the returned configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use postgres::Config;
use postgres::config::{ChannelBinding, SslNegotiation, TargetSessionAttrs};

use super::error::{ConfigError, invalid, unsupported};
use super::files;
use super::hosts::{self, Target, To};
use super::tls::{RootCerts, SslMode, TlsSettings, TlsVersions};
use super::uri::{self, KEYWORDS, Options, set};
use crate::address::PgUrl;

/// How long a connection attempt to one host may take when nothing says (`connect_timeout`);
/// libpq waits forever.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The servers a URL names, in the order to try them, and the TLS settings for all.
#[derive(Debug)]
pub(crate) struct Targets {
    pub(crate) hosts: Vec<Target>,
    pub(crate) tls: TlsSettings,
}

/// The servers `url` names; see the module doc for the order of sources.
pub(crate) fn config(url: &PgUrl) -> Result<Targets, ConfigError> {
    let mut options = uri::parse(url.secret_text())?;
    let env = |k: &str| std::env::var(k).ok();
    if let Some(name) = options.get("service").cloned().or_else(|| env("PGSERVICE")) {
        for (key, value) in files::service(&name)? {
            options.entry(key).or_insert(value);
        }
    }
    for (key, var) in KEYWORDS {
        if let (Some(var), false) = (var, options.contains_key(key)) {
            if let Some(value) = env(var) {
                options.insert(key, value);
            }
        }
    }
    if !options.contains_key("sslmode") && env("PGREQUIRESSL").is_some_and(|v| v.starts_with('1')) {
        options.insert("sslmode", "require".into());
    }
    build(&options)
}

/// An integer parameter, as libpq's `parse_int_param` reads one (spaces around allowed).
fn int(options: &Options, keyword: &'static str) -> Result<Option<i64>, ConfigError> {
    set(options, keyword)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| invalid(keyword, v, "it must be an integer"))
        })
        .transpose()
}

fn build(options: &Options) -> Result<Targets, ConfigError> {
    check_unsupported(options)?;
    let tls = tls_settings(options)?;
    let user = match set(options, "user") {
        Some(u) => u.to_owned(),
        None => files::os_user().ok_or_else(|| {
            ConfigError::Url(
                "no user given, and the effective user has no name: add USER@ to the URL".into(),
            )
        })?,
    };
    let dbname = set(options, "dbname").map_or_else(|| user.clone(), str::to_owned);
    let mut common = Config::new();
    common.user(&user).dbname(&dbname);
    if let Some(o) = set(options, "options") {
        common.options(o);
    }
    common.application_name(set(options, "application_name").unwrap_or("scalelab"));
    connection_timeouts(&mut common, options)?;
    session_settings(&mut common, options, &tls)?;
    let random = match set(options, "load_balance_hosts") {
        None | Some("disable") => false,
        Some("random") => true,
        Some(v) => return Err(invalid("load_balance_hosts", v, "one of disable, random")),
    };
    let mut hosts = host_targets(&common, options, &user, &dbname)?;
    if random {
        hosts::shuffle(&mut hosts);
    }
    Ok(Targets { hosts, tls })
}

/// `connect_timeout` (as libpq reads it, with scalelab's default) and the keepalive and TCP
/// timeouts, set on `common`.
fn connection_timeouts(common: &mut Config, options: &Options) -> Result<(), ConfigError> {
    match int(options, "connect_timeout")? {
        None => {
            common.connect_timeout(CONNECT_TIMEOUT);
        }
        // libpq: 0 or less waits forever, and 1 is taken as 2.
        Some(t) if t <= 0 => {}
        Some(t) => {
            common.connect_timeout(Duration::from_secs(t.max(2) as u64));
        }
    }
    if let Some(k) = int(options, "keepalives")? {
        common.keepalives(k != 0);
    }
    let seconds = |k: &'static str| -> Result<Option<Duration>, ConfigError> {
        Ok(int(options, k)?
            .filter(|&v| v > 0)
            .map(|v| Duration::from_secs(v as u64)))
    };
    if let Some(d) = seconds("keepalives_idle")? {
        common.keepalives_idle(d);
    }
    if let Some(d) = seconds("keepalives_interval")? {
        common.keepalives_interval(d);
    }
    if let Some(n) = int(options, "keepalives_count")?.filter(|&v| v > 0) {
        common.keepalives_retries(u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(ms) = int(options, "tcp_user_timeout")?.filter(|&v| v > 0) {
        common.tcp_user_timeout(Duration::from_millis(ms as u64));
    }
    Ok(())
}

/// `channel_binding`, `target_session_attrs` and `sslnegotiation`, set on `common` (checked
/// against the TLS settings where they depend on them).
fn session_settings(
    common: &mut Config,
    options: &Options,
    tls: &TlsSettings,
) -> Result<(), ConfigError> {
    if let Some(v) = set(options, "channel_binding") {
        common.channel_binding(match v {
            "disable" => ChannelBinding::Disable,
            "prefer" => ChannelBinding::Prefer,
            "require" => ChannelBinding::Require,
            _ => {
                return Err(invalid(
                    "channel_binding",
                    v,
                    "one of disable, prefer, require",
                ));
            }
        });
    }
    if let Some(v) = set(options, "target_session_attrs") {
        common.target_session_attrs(match v {
            "any" => TargetSessionAttrs::Any,
            "read-write" => TargetSessionAttrs::ReadWrite,
            "read-only" => TargetSessionAttrs::ReadOnly,
            "primary" | "standby" | "prefer-standby" => {
                return Err(unsupported(
                    "target_session_attrs",
                    v,
                    "it tells primaries from standbys by recovery state; use read-write or read-only",
                ));
            }
            _ => {
                return Err(invalid(
                    "target_session_attrs",
                    v,
                    "one of any, read-write, read-only, primary, standby, prefer-standby",
                ));
            }
        });
    }
    if let Some(v) = set(options, "sslnegotiation") {
        common.ssl_negotiation(match v {
            "postgres" => SslNegotiation::Postgres,
            "direct"
                if matches!(
                    tls.mode,
                    SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
                ) =>
            {
                SslNegotiation::Direct
            }
            "direct" => {
                return Err(invalid(
                    "sslnegotiation",
                    v,
                    "direct needs sslmode require, verify-ca or verify-full",
                ));
            }
            _ => return Err(invalid("sslnegotiation", v, "one of postgres, direct")),
        });
    }
    Ok(())
}

/// One target per entry of the host list, each `common` with its host, port and password
/// (from the URL, else the password file).
fn host_targets(
    common: &Config,
    options: &Options,
    user: &str,
    dbname: &str,
) -> Result<Vec<Target>, ConfigError> {
    let password = set(options, "password").map(str::to_owned);
    let passfile = set(options, "passfile").map(PathBuf::from);
    let mut hosts = Vec::new();
    for entry in hosts::entries(options)? {
        let mut config = common.clone();
        let (shown, key) = match &entry.to {
            To::Socket(dir) => {
                config.host_path(dir);
                (
                    format!("{}/.s.PGSQL.{}", dir.trim_end_matches('/'), entry.port),
                    dir.clone(),
                )
            }
            To::Tcp { name, addr } => {
                config.host(name);
                if let Some(addr) = addr {
                    config.hostaddr(*addr);
                }
                (format!("{name}:{}", entry.port), name.clone())
            }
        };
        config.port(entry.port);
        let secret = password.clone().or_else(|| {
            files::password(
                passfile.as_deref(),
                &key,
                &entry.port.to_string(),
                dbname,
                user,
            )
        });
        if let Some(pw) = secret {
            config.password(pw);
        }
        hosts.push(Target { config, shown });
    }
    Ok(hosts)
}

/// Refuses what scalelab cannot do as libpq would; accepts what changes nothing of where or as
/// whom it connects (see the module doc).
fn check_unsupported(options: &Options) -> Result<(), ConfigError> {
    for (&key, value) in options {
        let v = value.as_str();
        if v.is_empty() {
            continue;
        }
        match key {
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(unsupported(
                    key,
                    if key == "sslpassword" { "***" } else { v },
                    "a client certificate",
                ));
            }
            "sslcertmode" => match v {
                "disable" | "allow" => {}
                "require" => return Err(unsupported(key, v, "a client certificate")),
                _ => return Err(invalid(key, v, "one of disable, allow, require")),
            },
            "sslcrl" | "sslcrldir" => {
                return Err(unsupported(
                    key,
                    v,
                    "checking certificates against revocation lists",
                ));
            }
            "requirepeer" => {
                return Err(unsupported(
                    key,
                    v,
                    "checking the user at the socket's other end",
                ));
            }
            "require_auth" => {
                return Err(unsupported(
                    key,
                    v,
                    "limiting the authentication methods the server may ask for",
                ));
            }
            "gssencmode" => match v {
                "disable" | "prefer" => {}
                "require" => return Err(unsupported(key, v, "GSSAPI encryption")),
                _ => return Err(invalid(key, v, "one of disable, prefer, require")),
            },
            "sslsni" => match v {
                "1" => {}
                "0" => return Err(unsupported(key, v, "TLS without the server's name (SNI)")),
                _ => return Err(invalid(key, v, "0 or 1")),
            },
            "replication" => match v {
                "0" | "false" | "off" | "no" => {}
                _ => return Err(unsupported(key, v, "a replication connection")),
            },
            _ => {}
        }
    }
    Ok(())
}

/// `sslmode`, `sslrootcert` and the protocol versions, with libpq's defaults.
fn tls_settings(options: &Options) -> Result<TlsSettings, ConfigError> {
    let root_cert = match set(options, "sslrootcert") {
        None => RootCerts::Default,
        Some("system") => RootCerts::System,
        Some(file) => RootCerts::File(Path::new(file).to_path_buf()),
    };
    let mode = match set(options, "sslmode") {
        Some(m) => SslMode::parse(m)?,
        // libpq 16: sslrootcert=system makes verify-full the default.
        None if root_cert == RootCerts::System => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if root_cert == RootCerts::System && mode != SslMode::VerifyFull {
        return Err(invalid(
            "sslmode",
            set(options, "sslmode").unwrap_or_default(),
            "sslrootcert=system needs sslmode=verify-full",
        ));
    }
    let version = |key: &'static str| -> Result<Option<u8>, ConfigError> {
        match set(options, key) {
            None => Ok(None),
            Some("TLSv1") => Ok(Some(0)),
            Some("TLSv1.1") => Ok(Some(1)),
            Some("TLSv1.2") => Ok(Some(2)),
            Some("TLSv1.3") => Ok(Some(3)),
            Some(v) => Err(invalid(key, v, "one of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3")),
        }
    };
    let min = version("ssl_min_protocol_version")?.unwrap_or(2);
    let max = version("ssl_max_protocol_version")?.unwrap_or(3);
    if min > max {
        return Err(invalid(
            "ssl_max_protocol_version",
            set(options, "ssl_max_protocol_version").unwrap_or_default(),
            "below ssl_min_protocol_version (an empty range)",
        ));
    }
    if max < 2 {
        return Err(unsupported(
            "ssl_max_protocol_version",
            set(options, "ssl_max_protocol_version").unwrap_or_default(),
            "TLS older than 1.2",
        ));
    }
    Ok(TlsSettings {
        mode,
        root_cert,
        versions: TlsVersions {
            tls12: min <= 2,
            tls13: max >= 3,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_parameters_are_named_and_harmless_ones_accepted() {
        let check = |k: &'static str, v: &str| {
            let options: Options = [(k, v.to_string())].into_iter().collect();
            check_unsupported(&options).and_then(|()| tls_settings(&options).map(drop))
        };
        for (k, v) in [
            ("gssencmode", "disable"),
            ("gssencmode", "prefer"),
            ("client_encoding", "LATIN1"),
            ("fallback_application_name", "x"),
            ("sslsni", "1"),
            ("ssl_min_protocol_version", "TLSv1.2"),
        ] {
            check(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        for (k, v) in [
            ("sslcert", "/c.pem"),
            ("requirepeer", "postgres"),
            ("gssencmode", "require"),
            ("sslsni", "0"),
            ("require_auth", "scram-sha-256"),
            ("ssl_max_protocol_version", "TLSv1.1"),
            ("sslmode", "allow"),
        ] {
            let err = check(k, v).unwrap_err().to_string();
            assert!(err.contains(k), "{k}={v}: {err}");
        }
        let err = check("sslpassword", "hunter2").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
