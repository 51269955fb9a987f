//! What every request and response of the dashboard passes: the `Host` check and the security
//! headers.
//!
//! A page in a browser on this machine could otherwise read every run through DNS rebinding:
//! its own name (`evil.example`) made to resolve to 127.0.0.1, it fetches
//! `http://evil.example:8080/run/2` as same-origin. The browser still sends `Host:
//! evil.example:8080`, so a request is answered only when its `Host` is one the dashboard
//! listens as — the address the connection came in on, `localhost` on a loopback address, the
//! name given to `--listen`, the machine's host name when it listens beyond loopback, or an
//! `--allowed-host` — with the port it listens on; anything else gets 421 Misdirected Request.
//!
//! Every response, errors and 405 included, carries a Content-Security-Policy that loads
//! nothing from anywhere, runs no script and lets no page frame it (`frame-ancestors 'none'`,
//! and `X-Frame-Options: DENY` for older browsers), `X-Content-Type-Options: nosniff`, no
//! referrer, and `Cache-Control: no-store` (the pages show a store that changes, and may be
//! private). The one exception: a page that embeds a flame graph ([`FlameFrames`]) lets inline
//! scripts run, which only inferno's script in the graph's frame is — a `srcdoc` frame inherits
//! its page's policy, and the frame is sandboxed without `allow-same-origin`, so the script
//! runs in an opaque origin that can read nothing of the dashboard's.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderValue, header};

/// The names a request's `Host` may carry, besides the address the connection came in on.
#[derive(Debug, Clone, Default)]
pub(super) struct AllowedHosts {
    /// Lower-case names, without a trailing dot.
    names: Vec<String>,
}

impl AllowedHosts {
    /// `names`: the name given to `--listen` (when it is one), the `--allowed-host`s and, when
    /// listening beyond loopback, the machine's host name.
    pub(super) fn new(names: impl IntoIterator<Item = String>) -> AllowedHosts {
        let mut names: Vec<String> = names.into_iter().map(|n| normal(&n)).collect();
        names.sort();
        names.dedup();
        AllowedHosts { names }
    }

    /// Whether `host` (a `Host` header's value) names this dashboard, reached at `local`.
    pub(super) fn allows(&self, host: &str, local: SocketAddr) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        let port_ok = match port {
            Some(p) => p == local.port(),
            None => local.port() == 80,
        };
        if !port_ok {
            return false;
        }
        let local_ip = canonical(local.ip());
        if let Ok(ip) = name.parse::<IpAddr>() {
            return canonical(ip) == local_ip;
        }
        let name = normal(name);
        (name == "localhost" && local_ip.is_loopback()) || self.names.contains(&name)
    }

    /// The ways to reach the dashboard at `local`, for the refusal's message.
    pub(super) fn shown(&self, local: SocketAddr) -> String {
        let ip = canonical(local.ip());
        let mut all = vec![match ip {
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        }];
        if ip.is_loopback() {
            all.push("localhost".into());
        }
        all.extend(self.names.iter().cloned());
        all.dedup();
        all.iter()
            .map(|n| format!("{n}:{}", local.port()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An IPv4 address in IPv6 clothes (`::ffff:127.0.0.1`, from a dual-stack socket) as itself.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn normal(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `name[:port]` or `[v6][:port]`; `None` when it is neither.
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        let (addr, after) = rest.split_once(']')?;
        return match after {
            "" => Some((addr, None)),
            p => Some((addr, Some(p.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match host.rsplit_once(':') {
        // A bare IPv6 address has colons but no brackets: not a valid Host.
        Some((name, _)) if name.contains(':') => None,
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None if host.is_empty() => None,
        None => Some((host, None)),
    }
}

/// Marks a response whose page embeds a flame graph's sandboxed frame (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(super) struct FlameFrames;

/// The policy of every page: nothing loaded from elsewhere, no script, no framing.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'; \
     img-src data:; frame-src 'self' data:; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// The policy of a page with flame graphs: their frames' inline script may run.
const FLAME_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; \
     script-src 'unsafe-inline'; img-src data:; frame-src 'self' data:; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// Sets the security headers on a response (see the module doc).
pub(super) fn secure<B>(response: &mut axum::http::Response<B>) {
    let policy = if response.extensions().get::<FlameFrames>().is_some() {
        FLAME_POLICY
    } else {
        POLICY
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(policy),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_page_with_flame_graphs_lets_inline_scripts_run() {
        let mut plain = axum::http::Response::new(());
        secure(&mut plain);
        let policy = plain.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(policy.contains("script-src 'none'"), "{policy}");
        let mut flames = axum::http::Response::new(());
        flames.extensions_mut().insert(FlameFrames);
        secure(&mut flames);
        let policy = flames.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(policy.contains("script-src 'unsafe-inline'"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    }

    #[test]
    fn only_the_hosts_it_listens_as_are_allowed() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let hosts = AllowedHosts::new(["Lab.Example.".to_string()]);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "lab.example:8080",
        ] {
            assert!(hosts.allows(ok, local), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1:9090",
            "127.0.0.1",
            "127.0.0.2:8080",
            "[::1]:8080",
            "",
            "localhost:8080:1",
            "::1",
        ] {
            assert!(!hosts.allows(bad, local), "{bad}");
        }
        let any: SocketAddr = "[::ffff:10.0.0.5]:80".parse().unwrap();
        assert!(hosts.allows("10.0.0.5", any));
        assert!(!hosts.allows("localhost", any), "10.0.0.5 is not loopback");
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(hosts.allows("[::1]:8080", v6) && hosts.allows("localhost:8080", v6));
        assert_eq!(
            hosts.shown(local),
            "127.0.0.1:8080, localhost:8080, lab.example:8080"
        );
    }
}
