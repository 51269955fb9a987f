//! The runs page of `scalelab serve` (`/`) and what its rows link to: the filter (workload,
//! command text, host, tag, variant) read from the query, each command run named by its command
//! line, its series' history page and its predecessor in that series, and `/compare?run=A&run=B`
//! — what the page's checked rows send, a plain GET form — redirected to `/compare/A/B`.
//!
//! A run's series is its workload and parameters (a command's parameters are its command line
//! and steps), as `history` keys it; its predecessor is found among every stored run, not only
//! those the filter shows.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use model::env::MachineClass;
use present::dashboard::{self, RunRow, RunsFilter, url_part};
use store::RunFilter;

use super::{
    Dashboard, Failure, PAGE_ROWS, bad_request, internal, page, parse_id, query_pairs, with_store,
};

/// `/`: the newest [`PAGE_ROWS`] runs the query's filter matches, newest first.
pub(super) async fn runs_page(
    State(state): State<Arc<Dashboard>>,
    RawQuery(q): RawQuery,
) -> Response {
    with_store(state, move |d| {
        let q = query_pairs(q.as_deref());
        let get = |k: &str| {
            q.iter()
                .rev()
                .find(|(key, v)| key == k && !v.is_empty())
                .map(|(_, v)| v.clone())
        };
        let tag = get("tag");
        let tags = match &tag {
            Some(t) => match t.split_once('=') {
                Some((k, v)) => vec![(k.to_owned(), v.to_owned())],
                None => return Err(bad_request("tag: give it as KEY=VAL")),
            },
            None => Vec::new(),
        };
        let filter = RunFilter {
            workload: get("workload"),
            variant: get("variant"),
            host: get("host"),
            command_contains: get("cmd"),
            tags,
            ..RunFilter::default()
        };
        let store = d.store()?;
        let runs = store
            .list_runs(&filter)
            .map_err(|e| internal(&e.to_string()))?;
        // A run's predecessor in its series may be one the filter leaves out.
        let filtered = filter.workload.is_some()
            || filter.variant.is_some()
            || filter.host.is_some()
            || filter.command_contains.is_some()
            || !filter.tags.is_empty();
        let every = if !filtered {
            None
        } else {
            Some(
                store
                    .list_runs(&RunFilter::default())
                    .map_err(|e| internal(&e.to_string()))?,
            )
        };
        let counts = store
            .all_trial_counts()
            .map_err(|e| internal(&e.to_string()))?;
        let total = runs.len();
        // The run of the same series (workload and parameters; a command's are its command line
        // and steps) before each, for "compare with previous".
        let mut previous: HashMap<i64, i64> = HashMap::new();
        let mut last_of: HashMap<(&str, &BTreeMap<String, String>), i64> = HashMap::new();
        for m in every.as_ref().unwrap_or(&runs) {
            if let Some(p) = last_of.insert((m.workload.as_str(), &m.params), m.id) {
                previous.insert(m.id, p);
            }
        }
        let rows: Vec<RunRow> = runs
            .iter()
            .rev()
            .take(PAGE_ROWS)
            .map(|m| {
                let (ok, failed) = counts.get(&m.id).copied().unwrap_or((0, 0));
                RunRow {
                    id: m.id,
                    href: format!("/run/{}", m.id),
                    name: m.name.clone().unwrap_or_default(),
                    workload: m.workload.clone(),
                    command: command_of(&m.workload, &m.params)
                        .unwrap_or_default()
                        .to_owned(),
                    variant: m.variant.clone().unwrap_or_default(),
                    tags: m
                        .tags
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    host: m.env.hostname.clone(),
                    host_class: MachineClass::of(&m.env).to_string(),
                    status: m.status.to_string(),
                    started_at: m.started_at.clone(),
                    trials_ok: ok,
                    trials_failed: failed,
                    history_href: history_href(&m.workload, &m.params),
                    compare_href: previous
                        .get(&m.id)
                        .map(|p| format!("/compare/{p}/{}", m.id)),
                }
            })
            .collect();
        let shown = RunsFilter {
            workload: get("workload").unwrap_or_default(),
            host: get("host").unwrap_or_default(),
            tag: tag.unwrap_or_default(),
            variant: get("variant").unwrap_or_default(),
            cmd: get("cmd").unwrap_or_default(),
        };
        dashboard::runs_page(&shown, &rows, total).map_err(|e| internal(&e.to_string()))
    })
    .await
}

/// A command run's command line (its `cmd` parameter); `None` for a built-in workload.
pub(super) fn command_of<'a>(
    workload: &str,
    params: &'a BTreeMap<String, String>,
) -> Option<&'a str> {
    (workload == "cmd")
        .then(|| params.get("cmd").map(String::as_str))
        .flatten()
}

/// The history page of a run's series: its workload with every parameter (for a command run,
/// its command line and steps), so that it shows this run's series, not the newest run's.
fn history_href(workload: &str, params: &BTreeMap<String, String>) -> String {
    let params: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("p={}", url_part(&format!("{k}={v}"))))
        .collect();
    let mut href = format!("/history/{}", url_part(workload));
    if !params.is_empty() {
        href.push('?');
        href.push_str(&params.join("&"));
    }
    href
}

/// `/compare?run=A&run=B` (the runs page's checked rows): a redirect to `/compare/A/B`, the
/// older run first; any other number of runs is a page saying how to pick two.
pub(super) async fn compare_checked(RawQuery(q): RawQuery) -> Response {
    let picked: Result<Vec<i64>, Failure> = query_pairs(q.as_deref())
        .into_iter()
        .filter(|(k, _)| k == "run")
        .map(|(_, v)| parse_id(&v))
        .collect();
    let mut picked = match picked {
        Ok(ids) => ids,
        Err(failure) => return page(StatusCode::OK, Err(failure)),
    };
    picked.sort_unstable();
    picked.dedup();
    let [a, b] = picked[..] else {
        return page(
            StatusCode::OK,
            Err(bad_request(&format!(
                "check exactly two runs on the runs page to compare them ({} checked)",
                picked.len()
            ))),
        );
    };
    let mut r = StatusCode::SEE_OTHER.into_response();
    let location = format!("/compare/{a}/{b}");
    r.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&location).expect("digits and slashes make a header value"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_runs_history_is_its_own_command_series() {
        let params: BTreeMap<String, String> = [
            ("cmd".to_owned(), "dbench -t 1 {n}".to_owned()),
            ("prepare".to_owned(), "rm -rf /tmp/d".to_owned()),
        ]
        .into();
        assert_eq!(
            history_href("cmd", &params),
            "/history/cmd?p=cmd%3Ddbench%20-t%201%20%7Bn%7D&p=prepare%3Drm%20-rf%20%2Ftmp%2Fd"
        );
        assert_eq!(command_of("cmd", &params), Some("dbench -t 1 {n}"));
        assert_eq!(command_of("spin", &params), None);
        assert_eq!(history_href("spin", &BTreeMap::new()), "/history/spin");
    }
}
