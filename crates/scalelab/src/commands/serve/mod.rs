//! `scalelab serve`: a read-only dashboard over the store (axum on tokio), bound to 127.0.0.1
//! unless told otherwise.
//!
//! Pages (GET only; any other method is 405, and no page writes): `/` the runs, filtered by
//! workload, command text (`cmd=`), host, tag and variant, a command run named by its command
//! line; `/run/ID` one run, as the HTML report shows it; `/compare/A/B` two runs compared, with
//! a warning when their machine classes differ (`/compare?run=A&run=B`, what the runs page's
//! checkboxes send, redirects there, the older run first); `/history/WORKLOAD[?p=KEY=VAL…]` its
//! series (a command run's: `/history/cmd?p=cmd=…`) per machine class with `history --check`'s
//! verdict, and
//! `/history/WORKLOAD?class=C[&at=N][&metric=M][&p=KEY=VAL]` one class's series with its change
//! points. The store is read under one lock in a blocking task; finished runs are kept in
//! memory once loaded (a run changes only while `running`).
//!
//! Around the pages: `listener` (connections bounded in number and time, so that idle or slow
//! clients cannot starve the rest) and `request_guard` (only the `Host`s it listens as are
//! answered — no DNS rebinding — and every response carries the security headers).

mod listener;
mod request_guard;
mod runs_list;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use analysis::history::History;
use anyhow::{Context, Result};
use app::history::{Classes, HistoryQuery, Verdict};
use app::{AppError, Input};
use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use model::record::{RunData, RunStatus};
use present::dashboard::{self, ClassRow, QueueJobRow, QueueScheduleRow, QueueView, url_part};
use stats::CompareOptions;
use store::{Store, StoreError};

use crate::arguments::ServeArgs;
use crate::{db_path, queue_lines};

/// The most rows the runs page lists (the newest matching).
const PAGE_ROWS: usize = 500;

/// What every handler shares.
struct Dashboard {
    store: Mutex<Store>,
    /// Finished runs already loaded, by id.
    cache: Mutex<HashMap<i64, Arc<RunData>>>,
}

pub fn run(db: Option<&Path>, args: &ServeArgs) -> Result<ExitCode> {
    if args.timeout.0 == 0 {
        anyhow::bail!("--timeout 0: a client needs some time to send a request (e.g. 10s)");
    }
    let location = db_path::resolve(db)?;
    let store = db_path::open_location(&location, false)?;
    let state = Arc::new(Dashboard {
        store: Mutex::new(store),
        cache: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the web server's runtime")?;
    runtime.block_on(async move {
        let listen = args.listen.as_str();
        let (listeners, bound, failures) = listener::bind(listen).await?;
        let shown: Vec<String> = bound.iter().map(|a| format!("http://{a}/")).collect();
        eprintln!(
            "serving {location} on {} (read-only; Ctrl-C stops)",
            shown.join(" and ")
        );
        for f in &failures {
            eprintln!("{} --listen {listen}: not listening on {f}", crate::output::stderr().warning());
        }
        // The names a request's Host may carry (see `request_guard`).
        let mut names: Vec<String> = args.allowed_hosts.clone();
        let (host_part, _) = listen.rsplit_once(':').unwrap_or((listen, ""));
        let host_part = host_part.trim_start_matches('[').trim_end_matches(']');
        if host_part.parse::<std::net::IpAddr>().is_err() && !host_part.is_empty() {
            names.push(host_part.to_owned());
        }
        let exposed: Vec<String> = bound
            .iter()
            .filter(|a| !a.ip().is_loopback())
            .map(ToString::to_string)
            .collect();
        if !exposed.is_empty() {
            names.extend(listener::machine_host_name());
            eprintln!(
                "{} the dashboard is unauthenticated: anyone who can reach {} reads every run in {location}; put it behind your own authentication, or listen on 127.0.0.1",
                crate::output::stderr().warning(),
                exposed.join(", ")
            );
        }
        let wanted = usize::try_from(args.max_connections).unwrap_or(usize::MAX);
        let limits = listener::Limits {
            max_connections: listener::connection_limit(wanted),
            timeout: std::time::Duration::from_nanos(args.timeout.0),
        };
        if limits.max_connections < wanted {
            eprintln!(
                "{} --max-connections {}: only {} (the open-file limit, ulimit -n, leaves room for no more)",
                crate::output::stderr().warning(),
                args.max_connections,
                limits.max_connections
            );
        }
        listener::serve(
            listeners,
            router(state),
            request_guard::AllowedHosts::new(names),
            limits,
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        )
        .await;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn router(state: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(runs_list::runs_page))
        .route("/run/{id}", get(run_page))
        .route("/compare", get(runs_list::compare_checked))
        .route("/compare/{a}/{b}", get(compare_page))
        .route("/history/{workload}", get(history_page))
        .route("/queue", get(queue_page))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(|| async { page(StatusCode::NOT_FOUND, Err(not_found("No such page."))) })
        .with_state(state)
}

/// A page's HTML, or an error page.
type Html = Result<String, Failure>;

fn page(status: StatusCode, html: Html) -> Response {
    let (status, body) = match html {
        Ok(body) => (status, body),
        Err((status, body)) => (status, body),
    };
    let frames = body.contains("<iframe class=\"flame\"");
    let mut r = (status, body).into_response();
    if frames {
        r.extensions_mut().insert(request_guard::FlameFrames);
    }
    // The security headers are added to every response, this one too, by `request_guard`.
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// Runs `f` on the store in a blocking task and makes its page a response.
async fn with_store(
    state: Arc<Dashboard>,
    f: impl FnOnce(&Dashboard) -> Html + Send + 'static,
) -> Response {
    let html = tokio::task::spawn_blocking(move || f(&state))
        .await
        .unwrap_or_else(|e| Err(internal(&e.to_string())));
    page(StatusCode::OK, html)
}

/// An error page: its status and its HTML.
type Failure = (StatusCode, String);

fn fail(status: StatusCode, title: &str, detail: &str) -> Failure {
    let html = dashboard::error_page(title, detail).unwrap_or_else(|_| title.to_owned());
    (status, html)
}

fn internal(detail: &str) -> Failure {
    fail(StatusCode::INTERNAL_SERVER_ERROR, "Error", detail)
}

fn not_found(detail: &str) -> Failure {
    fail(StatusCode::NOT_FOUND, "Not found", detail)
}

fn bad_request(detail: &str) -> Failure {
    fail(StatusCode::BAD_REQUEST, "Bad request", detail)
}

/// `key=value&…` decoded, keys repeated as given.
fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(b) = hex {
                    out.push(b);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Dashboard {
    fn store(&self) -> Result<std::sync::MutexGuard<'_, Store>, Failure> {
        self.store
            .lock()
            .map_err(|_| internal("the store's lock was poisoned"))
    }

    /// Run `id`, from memory when finished and seen before.
    fn run(&self, store: &Store, id: i64) -> Result<Arc<RunData>, Failure> {
        if let Some(run) = self.cache.lock().ok().and_then(|c| c.get(&id).cloned()) {
            return Ok(run);
        }
        let mut run = store.load_run(id).map_err(|e| match e {
            store::StoreError::RunNotFound { .. } => not_found(&e.to_string()),
            e => internal(&e.to_string()),
        })?;
        // Profiles recorded on another host: the store's copies, when pushed with them (if
        // that fails, the page says the profiles could not be read).
        if let Ok(local) = db_path::local_file(store.location()) {
            let _ = store::profile_files::fetch_profiles(store, &mut run, &local);
        }
        let run = Arc::new(run);
        if run.meta.status != RunStatus::Running {
            if let Ok(mut cache) = self.cache.lock() {
                cache.insert(id, Arc::clone(&run));
            }
        }
        Ok(run)
    }

    /// Runs `ids`, in that order: those not in memory yet read in one batch.
    fn runs(&self, store: &Store, ids: &[i64]) -> Result<Vec<Arc<RunData>>, StoreError> {
        let cached: HashMap<i64, Arc<RunData>> = match self.cache.lock() {
            Ok(c) => ids
                .iter()
                .filter_map(|id| Some((*id, c.get(id)?.clone())))
                .collect(),
            Err(_) => HashMap::new(),
        };
        let missing: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| !cached.contains_key(id))
            .collect();
        let loaded = store.load_runs(&missing)?;
        let mut loaded: HashMap<i64, Arc<RunData>> = loaded
            .into_iter()
            .map(|r| (r.meta.id, Arc::new(r)))
            .collect();
        if let Ok(mut cache) = self.cache.lock() {
            for (id, run) in &loaded {
                if run.meta.status != RunStatus::Running {
                    cache.insert(*id, Arc::clone(run));
                }
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| cached.get(id).cloned().or_else(|| loaded.remove(id)))
            .collect())
    }
}

/// The lab's queue: jobs (with their runs), recurring jobs (with their series' change points)
/// and agents; on a SQLite store, why there is none.
async fn queue_page(State(state): State<Arc<Dashboard>>) -> Response {
    with_store(state, move |d| {
        let store = d.store()?;
        let render = |view: &QueueView, message: &str| {
            dashboard::queue_page(view, message).map_err(|e| internal(&e.to_string()))
        };
        let read = match app::queue::snapshot(&store, PAGE_ROWS) {
            Ok(read) => read,
            Err(e) => return render(&QueueView::default(), &format!("{e:#}")),
        };
        let view = QueueView {
            jobs: queue_lines::job_lines(&read)
                .into_iter()
                .zip(&read.jobs)
                .map(|(line, j)| QueueJobRow {
                    runs_href: (!j.runs.is_empty())
                        .then(|| format!("/?tag={}", url_part(&format!("job={}", j.id)))),
                    line,
                })
                .collect(),
            schedules: queue_lines::schedule_lines(&read)
                .into_iter()
                .zip(&read.schedules)
                .map(|(line, r)| QueueScheduleRow {
                    history_href: series_href(&r.args),
                    line,
                })
                .collect(),
            agents: queue_lines::agent_lines(&read),
        };
        render(&view, "")
    })
    .await
}

/// The history page of a `run` job's series (a built-in workload and its parameters, or a
/// command's: `/history/cmd?p=cmd=…`).
fn series_href(args: &[String]) -> Option<String> {
    let series = crate::job_args::check(args).ok()?.series?;
    let (workload, rest) = series.split_first()?;
    if workload == "--cmd" {
        let cmd = rest.first()?;
        return Some(format!(
            "/history/cmd?p={}",
            url_part(&format!("cmd={cmd}"))
        ));
    }
    let params: String = rest
        .chunks(2)
        .filter_map(|kv| kv.get(1))
        .map(|kv| format!("&p={}", url_part(kv)))
        .collect();
    Some(format!(
        "/history/{}?{}",
        url_part(workload),
        params.trim_start_matches('&')
    ))
}

fn report(runs: &[RunData], history: Option<History>, title: &str, banners: &[String]) -> Html {
    let data = app::report::of_runs(runs, history, &CompareOptions::default());
    present::html::render(&data, title)
        .map(|html| dashboard::with_nav(&html, banners))
        .map_err(|e| internal(&e.to_string()))
}

fn parse_id(text: &str) -> Result<i64, Failure> {
    text.parse()
        .map_err(|_| bad_request("a run is its number, e.g. /run/42"))
}

async fn run_page(State(state): State<Arc<Dashboard>>, UrlPath(id): UrlPath<String>) -> Response {
    with_store(state, move |d| {
        let id = parse_id(&id)?;
        let store = d.store()?;
        let run = d.run(&store, id)?;
        let title = format!("Run {id}: {}", run.meta.workload);
        report(&[(*run).clone()], None, &title, &[])
    })
    .await
}

async fn compare_page(
    State(state): State<Arc<Dashboard>>,
    UrlPath((a, b)): UrlPath<(String, String)>,
) -> Response {
    with_store(state, move |d| {
        let (a, b) = (parse_id(&a)?, parse_id(&b)?);
        let store = d.store()?;
        let (ra, rb) = (d.run(&store, a)?, d.run(&store, b)?);
        let mut banners = Vec::new();
        if let Some((ca, cb)) = app::compare::classes_differ(&ra, &rb) {
            banners.push(format!(
                "The runs were measured on different machine classes: run {a} on {ca}, run {b} on {cb}. A difference may be the machine's, not the change's."
            ));
        }
        let title = format!("Run {b} against run {a}");
        report(&[(*ra).clone(), (*rb).clone()], None, &title, &banners)
    })
    .await
}

async fn history_page(
    State(state): State<Arc<Dashboard>>,
    UrlPath(workload): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Response {
    with_store(state, move |d| {
        let q = query_pairs(q.as_deref());
        let get = |k: &str| {
            q.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let metric_name = get("metric");
        let at: Option<u32> = match get("at") {
            Some(n) => Some(n.parse().map_err(|_| bad_request("at: a task count"))?),
            None => None,
        };
        let given: BTreeMap<String, String> = q
            .iter()
            .filter(|(k, _)| k == "p")
            .filter_map(|(_, kv)| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect();
        let class = get("class");
        let query = HistoryQuery {
            workload: workload.clone(),
            // Without p=KEY=VAL, the series of the newest run's parameters.
            params: (!given.is_empty()).then_some(given),
            classes: match &class {
                Some(c) => Classes::Only(c.clone()),
                None => Classes::Each,
            },
            metric: metric_name,
            at,
            ..HistoryQuery::default()
        };
        let series = {
            let store = d.store()?;
            let load = |ids: &[i64]| Ok(d.runs(&store, ids)?);
            app::history::histories(&store, &query, load)
        };
        let series = series.map_err(|e| match e {
            AppError::NotFound(e) => not_found(&e),
            AppError::Invalid {
                input: Input::At(at),
                source,
            } => bad_request(&format!("at={at}: {source}")),
            AppError::Invalid { source, .. } => bad_request(&source.to_string()),
            e => internal(&e.to_string()),
        })?;
        let params: String = series
            .first()
            .map(|s| &s.history.params)
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("&p={}", url_part(&format!("{k}={v}"))))
            .collect();
        // A command's series is named by its command line, not `cmd`.
        let name = series
            .first()
            .and_then(|s| runs_list::command_of(&workload, &s.history.params))
            .unwrap_or(&workload)
            .to_owned();
        match class {
            None => {
                let rows: Vec<ClassRow> = series
                    .iter()
                    .map(|s| {
                        let class = s.class.clone().unwrap_or_default();
                        let h = &s.history;
                        ClassRow {
                            href: format!(
                                "/history/{}?class={}{params}",
                                url_part(&workload),
                                url_part(&class)
                            ),
                            class,
                            runs: s.runs,
                            hosts: s.hosts.join(", "),
                            verdict: check_verdict(h).into(),
                            verdict_class: match Verdict::of(h) {
                                Verdict::Unjudged => "INCONCLUSIVE",
                                Verdict::Regressed => "REGRESSED",
                                Verdict::Clear => "ok",
                            }
                            .into(),
                        }
                    })
                    .collect();
                dashboard::history_index(&name, &rows).map_err(|e| internal(&e.to_string()))
            }
            Some(class) => {
                let Some(h) = series.into_iter().next().map(|s| s.history) else {
                    return Err(not_found(&format!(
                        "no runs of `{workload}` on machine class {class}"
                    )));
                };
                let banners = vec![format!(
                    "Machine class {class}. history --check: {}",
                    check_verdict(&h)
                )];
                let title = format!("History of {name}");
                report(&[], Some(h), &title, &banners)
            }
        }
    })
    .await
}

/// `history --check`'s verdict on the newest segment, in words.
fn check_verdict(h: &History) -> &'static str {
    match Verdict::of(h) {
        Verdict::Unjudged => "cannot judge — too few runs for change-point detection (exit 2)",
        Verdict::Regressed => "REGRESSED — the newest segment is a regression (exit 1)",
        Verdict::Clear => "no regression in the newest segment (exit 0)",
    }
}
