//! A PostgreSQL connection URI read as libpq reads it (`conninfo_uri_parse_options` in
//! `fe-connect.c`), into libpq's keywords: so that a URL that `psql` accepts names the same
//! server, database and user here.
//!
//! `postgresql://[user[:password]@][host][:port][,host[:port]…][/dbname][?keyword=value&…]`
//! (or `postgres://`). Every part may be percent-encoded, and is decoded after it is cut out:
//! a host of `%2Fvar%2Frun%2Fpostgresql` is a socket folder. The hosts and ports become one
//! `host` and one `port` value, comma-separated as libpq keeps them; a query parameter replaces
//! what the URL's other parts said (`?host=/sock` wins over the authority's host, `?port=` over
//! its ports). `ssl=true` means `sslmode=require` and `requiressl=1` too, as in libpq. A keyword
//! libpq does not know is refused, naming it.

use std::collections::BTreeMap;

use super::error::ConfigError;

/// libpq's connection keywords (PostgreSQL 17), with the environment variable that supplies
/// each when nothing else does.
pub(crate) const KEYWORDS: &[(&str, Option<&str>)] = &[
    ("service", Some("PGSERVICE")),
    ("user", Some("PGUSER")),
    ("password", Some("PGPASSWORD")),
    ("passfile", Some("PGPASSFILE")),
    ("channel_binding", Some("PGCHANNELBINDING")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("dbname", Some("PGDATABASE")),
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("client_encoding", Some("PGCLIENTENCODING")),
    ("options", Some("PGOPTIONS")),
    ("application_name", Some("PGAPPNAME")),
    ("fallback_application_name", None),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("keepalives_interval", None),
    ("keepalives_count", None),
    ("tcp_user_timeout", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslnegotiation", Some("PGSSLNEGOTIATION")),
    ("sslcompression", Some("PGSSLCOMPRESSION")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("sslcertmode", Some("PGSSLCERTMODE")),
    ("sslpassword", None),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcrl", Some("PGSSLCRL")),
    ("sslcrldir", Some("PGSSLCRLDIR")),
    ("sslsni", Some("PGSSLSNI")),
    ("requirepeer", Some("PGREQUIREPEER")),
    ("require_auth", Some("PGREQUIREAUTH")),
    ("ssl_min_protocol_version", Some("PGSSLMINPROTOCOLVERSION")),
    ("ssl_max_protocol_version", Some("PGSSLMAXPROTOCOLVERSION")),
    ("gssencmode", Some("PGGSSENCMODE")),
    ("krbsrvname", Some("PGKRBSRVNAME")),
    ("gsslib", Some("PGGSSLIB")),
    ("gssdelegation", Some("PGGSSDELEGATION")),
    ("replication", None),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("load_balance_hosts", Some("PGLOADBALANCEHOSTS")),
];

/// Connection keywords and their values, as libpq keeps them before defaults are added.
pub(crate) type Options = BTreeMap<&'static str, String>;

/// The value of `key`, when set and not empty (an empty value means the default, in libpq).
pub(crate) fn set<'a>(options: &'a Options, key: &str) -> Option<&'a str> {
    options
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The keyword `name` as libpq spells it, when it is one.
pub(crate) fn keyword(name: &str) -> Option<&'static str> {
    KEYWORDS.iter().map(|(k, _)| *k).find(|k| *k == name)
}

/// Reads `uri` into libpq's keywords; the error says what libpq would.
pub(crate) fn parse(uri: &str) -> Result<Options, ConfigError> {
    let bad = |detail: String| ConfigError::Url(detail);
    let lower: String = uri
        .chars()
        .take(13)
        .collect::<String>()
        .to_ascii_lowercase();
    let rest = if lower.starts_with("postgresql://") {
        &uri[13..]
    } else if lower.starts_with("postgres://") {
        &uri[11..]
    } else {
        return Err(bad(
            "a PostgreSQL URL starts with postgres:// or postgresql://".into(),
        ));
    };
    let mut options = Options::new();
    let store = |options: &mut Options, key: &'static str, raw: &str| -> Result<(), ConfigError> {
        options.insert(key, decode(raw)?);
        Ok(())
    };
    // libpq looks for `@` before the first `/` (anywhere, the query included).
    let mut p = rest;
    if let Some(at) = p.find(['@', '/']).filter(|&i| p.as_bytes()[i] == b'@') {
        let userinfo = &p[..at];
        let (user, password) = match userinfo.split_once(':') {
            Some((u, pw)) => (u, Some(pw)),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            store(&mut options, "user", user)?;
        }
        if let Some(pw) = password.filter(|pw| !pw.is_empty()) {
            store(&mut options, "password", pw)?;
        }
        p = &p[at + 1..];
    }
    // netloc[:port][,netloc[:port]…]
    let mut hosts = String::new();
    let mut ports = String::new();
    let terminator = loop {
        let host;
        if let Some(inner) = p.strip_prefix('[') {
            let close = inner
                .find(']')
                .ok_or_else(|| bad("an IPv6 address in [ has no closing ]".into()))?;
            if close == 0 {
                return Err(bad("an IPv6 host address may not be empty ([])".into()));
            }
            host = &inner[..close];
            p = &inner[close + 1..];
            if let Some(c) = p
                .chars()
                .next()
                .filter(|c| !matches!(c, ':' | '/' | '?' | ','))
            {
                return Err(bad(format!(
                    "unexpected `{c}` after an IPv6 address (expected `:`, `/`, `?` or `,`)"
                )));
            }
        } else {
            let end = p.find([':', '/', '?', ',']).unwrap_or(p.len());
            host = &p[..end];
            p = &p[end..];
        }
        hosts.push_str(host);
        let mut next = p.chars().next();
        if next == Some(':') {
            let end = p[1..].find(['/', '?', ',']).map_or(p.len(), |i| i + 1);
            ports.push_str(&p[1..end]);
            p = &p[end..];
            next = p.chars().next();
        }
        if next != Some(',') {
            break next;
        }
        p = &p[1..];
        hosts.push(',');
        ports.push(',');
    };
    if !hosts.is_empty() {
        store(&mut options, "host", &hosts)?;
    }
    if !ports.is_empty() {
        store(&mut options, "port", &ports)?;
    }
    let mut query = None;
    match terminator {
        Some('/') => {
            let path = &p[1..];
            let (db, q) = match path.split_once('?') {
                Some((db, q)) => (db, Some(q)),
                None => (path, None),
            };
            if !db.is_empty() {
                store(&mut options, "dbname", db)?;
            }
            query = q;
        }
        Some('?') => query = Some(&p[1..]),
        _ => {}
    }
    if let Some(query) = query {
        let pairs: Vec<&str> = query.split('&').collect();
        for (i, pair) in pairs.iter().enumerate() {
            // A trailing `&` ends the list; an empty parameter elsewhere is an error (libpq).
            if pair.is_empty() && i + 1 == pairs.len() {
                break;
            }
            let Some((key, value)) = pair.split_once('=') else {
                return Err(bad(format!(
                    "missing key/value separator `=` in URI query parameter `{pair}`"
                )));
            };
            if value.contains('=') {
                return Err(bad(format!(
                    "extra key/value separator `=` in URI query parameter `{key}`"
                )));
            }
            let (key, value) = (decode(key)?, decode(value)?);
            let (key, value) = match (key.as_str(), value.as_str()) {
                ("ssl", "true") => ("sslmode".to_owned(), "require".to_owned()),
                ("requiressl", v) => (
                    "sslmode".to_owned(),
                    if v.starts_with('1') {
                        "require"
                    } else {
                        "prefer"
                    }
                    .to_owned(),
                ),
                _ => (key, value),
            };
            let Some(key) = keyword(&key) else {
                return Err(ConfigError::Unknown(key));
            };
            options.insert(key, value);
        }
    }
    Ok(options)
}

/// `%xy` decoded; a bad escape or `%00` is an error, as in libpq.
pub(crate) fn decode(text: &str) -> Result<String, ConfigError> {
    let bytes = text.as_bytes();
    let hex = |i: usize| bytes.get(i).and_then(|&b| char::from(b).to_digit(16));
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let (Some(high), Some(low)) = (hex(i + 1), hex(i + 2)) else {
            return Err(ConfigError::Url(
                "invalid percent-encoded token (a % not followed by two hex digits)".into(),
            ));
        };
        if high == 0 && low == 0 {
            return Err(ConfigError::Url(
                "forbidden value %00 in a percent-encoded value".into(),
            ));
        }
        out.push((high * 16 + low) as u8);
        i += 3;
    }
    String::from_utf8(out)
        .map_err(|_| ConfigError::Url("a percent-encoded value is not UTF-8 text".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(uri: &str) -> Vec<(&'static str, String)> {
        parse(uri).unwrap().into_iter().collect()
    }

    fn o(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        let mut v: Vec<_> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        v.sort();
        v
    }

    #[test]
    fn uris_read_as_libpq_reads_them() {
        assert_eq!(
            opts("postgres://lab@localhost:55433/labdb?host=/s&port=55432&sslmode=disable"),
            o(&[
                ("user", "lab"),
                ("host", "/s"),
                ("port", "55432"),
                ("dbname", "labdb"),
                ("sslmode", "disable"),
            ])
        );
        assert_eq!(
            opts("postgresql://u:p%40ss@%2Fsock%2Fdir/db?port=5"),
            o(&[
                ("user", "u"),
                ("password", "p@ss"),
                ("host", "/sock/dir"),
                ("dbname", "db"),
                ("port", "5")
            ])
        );
        assert_eq!(
            opts("postgres://[::1]:1,h2,:3/db"),
            o(&[("host", "::1,h2,"), ("port", "1,,3"), ("dbname", "db")])
        );
        assert_eq!(opts("postgres://"), o(&[]));
        assert_eq!(opts("postgres:///?ssl=true"), o(&[("sslmode", "require")]));
        assert_eq!(
            opts("POSTGRES://h?requiressl=0"),
            o(&[("host", "h"), ("sslmode", "prefer")])
        );
        assert_eq!(
            opts("postgres://a:b:c@d@h/db"),
            o(&[
                ("user", "a"),
                ("password", "b:c"),
                ("host", "d@h"),
                ("dbname", "db")
            ])
        );
    }

    #[test]
    fn bad_uris_and_unknown_keywords_are_named() {
        for (uri, says) in [
            ("postgres://h/db?nope=1", "`nope`"),
            ("postgres://h/db?port", "missing key/value separator"),
            ("postgres://h/db?a=b=c", "extra key/value separator"),
            ("postgres://[::1/db", "closing ]"),
            ("postgres://[::1]x/db", "unexpected `x`"),
            ("postgres://h/d%zz", "invalid percent-encoded"),
            ("postgres://h/d%00", "%00"),
            ("postgres://h/db?ssl=1", "`ssl`"),
            (
                "postgres://h/db?port=1&&sslmode=disable",
                "missing key/value separator",
            ),
        ] {
            let err = parse(uri).unwrap_err().to_string();
            assert!(err.contains(says), "{uri}: {err}");
        }
    }
}
