//! The dashboard's sockets and connections: every address `--listen` resolves to is listened
//! on, and connections are accepted bounded in number and in time, so that one client cannot
//! starve the rest.
//!
//! - **Time.** A connection may wait at most `--timeout` (default 10 s) for a request's head to
//!   arrive whole — at its start, between keep-alive requests, and while a response it does not
//!   read is pending; a client sending a byte a second is dropped then. Pages themselves take
//!   what they take.
//! - **Number.** At most `--max-connections` (default 256, and never more than the open-file
//!   limit leaves room for) are open at once. A new one past that closes the connection idle
//!   the longest (no request in progress) to make room; when every one is busy, the new one is
//!   refused. Either way a line on stderr says so (at most one a second, with how many more).
//!   So idle connections held by anyone never keep a page from being served.
//! - **Size.** A request's head is read into at most 64 KiB.
//!
//! Each request goes through `request_guard` (the `Host` check, the security headers) around
//! the pages' router. HTTP/1.1 only, as before (hyper, the server axum itself runs on).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use tower_service::Service;

use super::request_guard::{self, AllowedHosts};

/// The bounds on connections (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_connections: usize,
    pub(super) timeout: Duration,
}

/// The most bytes of a request head kept in memory.
const MAX_HEAD: usize = 64 * 1024;

/// One open connection, as the accept loop sees it.
struct Conn {
    peer: SocketAddr,
    /// A request is being answered.
    busy: AtomicBool,
    /// Milliseconds since `Shared::start` when it last became idle.
    idle_since: AtomicU64,
    abort: Mutex<Option<AbortHandle>>,
}

/// What every connection shares.
struct Shared {
    app: Router,
    hosts: AllowedHosts,
    limits: Limits,
    start: Instant,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    log: Mutex<RateLimitedLog>,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Lines on stderr, at most one a second; the ones held back are counted in the next.
#[derive(Default)]
struct RateLimitedLog {
    last: Option<Instant>,
    held: u64,
}

impl RateLimitedLog {
    fn line(&mut self, text: &str) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            self.held += 1;
            return;
        }
        let more = match self.held {
            0 => String::new(),
            n => format!(" ({n} more such lines held back in the last second)"),
        };
        eprintln!("serve: {text}{more}");
        self.last = Some(now);
        self.held = 0;
    }
}

/// Listens on every address `listen` (ADDR:PORT or HOST:PORT) resolves to: the listeners,
/// their addresses, and the addresses that could not be listened on (with why); an error when
/// none could.
pub(super) async fn bind(
    listen: &str,
) -> anyhow::Result<(Vec<TcpListener>, Vec<SocketAddr>, Vec<String>)> {
    use anyhow::Context;
    let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host(listen)
        .await
        .with_context(|| format!("--listen {listen}: not an ADDR:PORT or HOST:PORT that resolves"))?
        .collect();
    addrs.sort();
    addrs.dedup();
    let mut listeners = Vec::new();
    let mut failures = Vec::new();
    for addr in &addrs {
        match TcpListener::bind(addr).await {
            Ok(l) => listeners.push(l),
            Err(e) => failures.push(format!("{addr}: {e}")),
        }
    }
    if listeners.is_empty() {
        anyhow::bail!(
            "--listen {listen}: cannot listen there ({})",
            failures.join("; ")
        );
    }
    let mut bound = Vec::new();
    for l in &listeners {
        bound.push(l.local_addr().context("reading the bound address")?);
    }
    Ok((listeners, bound, failures))
}

/// The machine's host name, which clients on the network may use to reach it.
pub(super) fn machine_host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// `wanted`, or fewer when the open-file limit (`ulimit -n`) leaves room for fewer: 32 files
/// are kept for the store and the rest of the process.
pub(super) fn connection_limit(wanted: usize) -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .and_then(|v| v.parse::<usize>().ok());
    match soft {
        Some(soft) => wanted.min(soft.saturating_sub(32)).max(1),
        None => wanted,
    }
}

/// Serves `app` on every listener until `stop` completes.
pub(super) async fn serve(
    listeners: Vec<TcpListener>,
    app: Router,
    hosts: AllowedHosts,
    limits: Limits,
    stop: impl std::future::Future<Output = ()>,
) {
    let shared = Arc::new(Shared {
        app,
        hosts,
        limits,
        start: Instant::now(),
        open: Mutex::new(HashMap::new()),
        log: Mutex::new(RateLimitedLog::default()),
    });
    let loops: Vec<_> = listeners
        .into_iter()
        .map(|l| tokio::spawn(accept_loop(l, Arc::clone(&shared))))
        .collect();
    stop.await;
    for l in &loops {
        l.abort();
    }
    let open: Vec<Arc<Conn>> = shared
        .open
        .lock()
        .map(|o| o.values().cloned().collect())
        .unwrap_or_default();
    for conn in open {
        if let Some(h) = conn.abort.lock().ok().and_then(|a| a.clone()) {
            h.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut next_id: u64 = 0;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, or the peer gave up: say so, and try again shortly.
                log(&shared, &format!("accepting a connection failed: {e}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        next_id += 1;
        let id = next_id;
        let Some(conn) = admit(&shared, id, peer) else {
            drop(stream);
            continue;
        };
        let task = tokio::spawn(serve_one(
            stream,
            id,
            Arc::clone(&conn),
            Arc::clone(&shared),
        ));
        if let Ok(mut slot) = conn.abort.lock() {
            *slot = Some(task.abort_handle());
        }
    }
}

/// Makes room for a new connection from `peer` (closing the one idle the longest when all
/// places are taken) and records it; `None` when every open connection is busy.
fn admit(shared: &Shared, id: u64, peer: SocketAddr) -> Option<Arc<Conn>> {
    let max = shared.limits.max_connections;
    let mut open = shared.open.lock().ok()?;
    if open.len() >= max {
        let oldest = open
            .iter()
            .filter(|(_, c)| !c.busy.load(Ordering::Acquire))
            .min_by_key(|(_, c)| c.idle_since.load(Ordering::Acquire))
            .map(|(id, c)| (*id, Arc::clone(c)));
        match oldest {
            Some((old_id, old)) => {
                open.remove(&old_id);
                if let Some(h) = old.abort.lock().ok().and_then(|a| a.clone()) {
                    h.abort();
                }
                let idle = shared
                    .now_ms()
                    .saturating_sub(old.idle_since.load(Ordering::Acquire));
                drop(open);
                log(
                    shared,
                    &format!(
                        "{max} connections open (--max-connections): closed the one idle longest ({}, idle {:.1} s) for a new one from {peer}",
                        old.peer,
                        idle as f64 / 1000.0
                    ),
                );
                open = shared.open.lock().ok()?;
            }
            None => {
                drop(open);
                log(
                    shared,
                    &format!(
                        "refused a connection from {peer}: all {max} connections are answering requests (--max-connections)"
                    ),
                );
                return None;
            }
        }
    }
    let conn = Arc::new(Conn {
        peer,
        busy: AtomicBool::new(false),
        idle_since: AtomicU64::new(shared.now_ms()),
        abort: Mutex::new(None),
    });
    open.insert(id, Arc::clone(&conn));
    Some(conn)
}

fn log(shared: &Shared, text: &str) {
    if let Ok(mut l) = shared.log.lock() {
        l.line(text);
    }
}

/// Forgets connection `id` when its task ends, however it ends (aborted too).
struct Forget {
    id: u64,
    shared: Arc<Shared>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        if let Ok(mut open) = self.shared.open.lock() {
            open.remove(&self.id);
        }
    }
}

async fn serve_one(stream: TcpStream, id: u64, conn: Arc<Conn>, shared: Arc<Shared>) {
    let _forget = Forget {
        id,
        shared: Arc::clone(&shared),
    };
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let service = {
        let (conn, shared) = (Arc::clone(&conn), Arc::clone(&shared));
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let (conn, shared) = (Arc::clone(&conn), Arc::clone(&shared));
            async move {
                conn.busy.store(true, Ordering::Release);
                let response = answer(req, local, &shared).await;
                conn.idle_since.store(shared.now_ms(), Ordering::Release);
                conn.busy.store(false, Ordering::Release);
                Ok::<_, std::convert::Infallible>(response)
            }
        })
    };
    let timeout = shared.limits.timeout;
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .max_buf_size(MAX_HEAD)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = connection => {}
        () = idle_too_long(&conn, &shared, timeout) => {}
    }
}

/// Completes once the connection has been idle (no request in progress) longer than `timeout`.
async fn idle_too_long(conn: &Conn, shared: &Shared, timeout: Duration) {
    let step = (timeout / 4).clamp(Duration::from_millis(20), Duration::from_millis(500));
    let limit = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    loop {
        tokio::time::sleep(step).await;
        let idle = shared
            .now_ms()
            .saturating_sub(conn.idle_since.load(Ordering::Acquire));
        if !conn.busy.load(Ordering::Acquire) && idle > limit {
            return;
        }
    }
}

/// One request: the `Host` check, the page, the security headers.
async fn answer(req: Request<Incoming>, local: SocketAddr, shared: &Shared) -> Response<Body> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let mut response = match host {
        Some(h) if shared.hosts.allows(&h, local) => {
            let mut app = shared.app.clone();
            match app.call(req.map(Body::new)).await {
                Ok(r) => r,
                Err(never) => match never {},
            }
        }
        other => misdirected(other.as_deref(), &shared.hosts.shown(local)),
    };
    request_guard::secure(&mut response);
    response
}

/// 421 Misdirected Request: the `Host` is not one this dashboard answers to.
fn misdirected(host: Option<&str>, shown: &str) -> Response<Body> {
    let detail = match host {
        Some(h) => format!(
            "This dashboard does not answer to the host `{}`: it is reached as {shown}. To serve it under another name, start it with --allowed-host NAME.",
            model::safe_text::excerpt(h, 100)
        ),
        None => format!("The request names no host; this dashboard is reached as {shown}."),
    };
    let html = present::dashboard::error_page("Misdirected request", &detail)
        .unwrap_or_else(|_| "Misdirected request".to_owned());
    let mut r = Response::new(Body::from(html));
    *r.status_mut() = StatusCode::MISDIRECTED_REQUEST;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}
