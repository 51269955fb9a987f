//! libpq's host list (`pqConnectOptions2` in `fe-connect.c`): one entry per `hostaddr` item,
//! else per `host` item (one when neither is given); one port for every entry or one each; an
//! empty host meaning the default socket folder and an empty port 5432; a host starting with `/`
//! a socket folder. The entries are tried in this order (shuffled for
//! `load_balance_hosts=random`).

use std::net::IpAddr;

use postgres::Config;

use super::error::{ConfigError, invalid, unsupported};
use super::files::DEFAULT_SOCKET_DIR;
use super::uri::{Options, set};

/// Where one entry of the host list connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum To {
    /// A Unix socket in this folder.
    Socket(String),
    /// TCP to `name` (resolved), or to `addr` when given (`hostaddr`), `name` then being the
    /// name TLS checks and the password file looks up.
    Tcp { name: String, addr: Option<IpAddr> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) to: To,
    pub(crate) port: u16,
}

/// The host list of `options` (see the module doc).
pub(crate) fn entries(options: &Options) -> Result<Vec<Entry>, ConfigError> {
    let list =
        |k: &str| set(options, k).map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>());
    let addrs = list("hostaddr");
    let hosts = list("host");
    let n = addrs
        .as_ref()
        .map(Vec::len)
        .or(hosts.as_ref().map(Vec::len))
        .unwrap_or(1);
    if let (Some(a), Some(h)) = (&addrs, &hosts) {
        if a.len() != h.len() {
            return Err(ConfigError::Url(format!(
                "could not match {} host names to {} hostaddr values (host and hostaddr must list as many)",
                h.len(),
                a.len()
            )));
        }
    }
    let ports: Vec<String> = match list("port") {
        None => vec![String::new(); n],
        Some(p) if p.len() == 1 => vec![p[0].clone(); n],
        Some(p) if p.len() == n => p,
        Some(p) => {
            return Err(ConfigError::Url(format!(
                "could not match {} port numbers to {n} hosts (give one port, or one per host)",
                p.len()
            )));
        }
    };
    let mut entries = Vec::with_capacity(n);
    for (i, port) in ports.iter().enumerate() {
        let host = hosts.as_ref().map(|h| h[i].as_str()).unwrap_or_default();
        let addr = addrs.as_ref().map(|a| a[i].as_str()).unwrap_or_default();
        let to = if !addr.is_empty() {
            let ip: IpAddr = addr.parse().map_err(|_| {
                invalid(
                    "hostaddr",
                    addr,
                    "a numeric IP address (give names in host)",
                )
            })?;
            To::Tcp {
                name: if host.is_empty() {
                    addr.to_owned()
                } else {
                    host.to_owned()
                },
                addr: Some(ip),
            }
        } else if host.starts_with('/') {
            To::Socket(host.to_owned())
        } else if host.starts_with('@') {
            return Err(unsupported(
                "host",
                host,
                "an abstract Unix socket (a name starting with @)",
            ));
        } else if host.is_empty() {
            To::Socket(DEFAULT_SOCKET_DIR.to_owned())
        } else {
            To::Tcp {
                name: host.to_owned(),
                addr: None,
            }
        };
        let port = if port.trim().is_empty() {
            5432
        } else {
            port.trim()
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| invalid("port", port, "a port number, 1 to 65535"))?
        };
        entries.push(Entry { to, port });
    }
    Ok(entries)
}

/// One server to try: its configuration and how it is shown in messages.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) config: Config,
    /// `host:port`, or the socket file (`/run/pg/.s.PGSQL.5432`).
    pub(crate) shown: String,
}

/// `load_balance_hosts=random`: the order to try shuffled (Fisher-Yates over random bytes).
pub(crate) fn shuffle(hosts: &mut [Target]) {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    for i in (1..hosts.len()).rev() {
        let r = u64::from(bytes[i % bytes.len()]) << 8 | u64::from(bytes[(i * 7) % bytes.len()]);
        hosts.swap(i, (r % (i as u64 + 1)) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&'static str, &str)]) -> Result<Vec<Entry>, ConfigError> {
        let options: Options = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        entries(&options)
    }

    fn tcp(name: &str, port: u16) -> Entry {
        Entry {
            to: To::Tcp {
                name: name.into(),
                addr: None,
            },
            port,
        }
    }

    fn socket(dir: &str, port: u16) -> Entry {
        Entry {
            to: To::Socket(dir.into()),
            port,
        }
    }

    #[test]
    fn host_lists_split_as_libpq_splits_them() {
        assert_eq!(list(&[]).unwrap(), [socket(DEFAULT_SOCKET_DIR, 5432)]);
        assert_eq!(
            list(&[("host", "/s,h,"), ("port", "1")]).unwrap(),
            [socket("/s", 1), tcp("h", 1), socket(DEFAULT_SOCKET_DIR, 1)]
        );
        assert_eq!(
            list(&[("host", "a,b"), ("port", ",7")]).unwrap(),
            [tcp("a", 5432), tcp("b", 7)]
        );
        let e = list(&[("host", "db.example"), ("hostaddr", "127.0.0.1")]).unwrap();
        assert_eq!(
            e[0].to,
            To::Tcp {
                name: "db.example".into(),
                addr: Some("127.0.0.1".parse().unwrap())
            }
        );
        for (pairs, says) in [
            (
                &[("host", "a,b"), ("port", "1,2,3")][..],
                "could not match 3 port numbers to 2 hosts",
            ),
            (
                &[("host", "a,b"), ("hostaddr", "1.2.3.4")][..],
                "could not match 2 host names to 1 hostaddr",
            ),
            (&[("hostaddr", "db.example")][..], "hostaddr=db.example"),
            (&[("port", "70000")][..], "port=70000"),
            (&[("host", "@abstract")][..], "host=@abstract"),
        ] {
            let err = list(pairs).unwrap_err().to_string();
            assert!(err.contains(says), "{pairs:?}: {err}");
        }
    }
}
