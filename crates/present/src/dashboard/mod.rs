//! The pages of `scalelab serve` that the HTML report does not have: the list of runs (with
//! its filter form), the index of a workload's history by machine class, the lab's queue (jobs,
//! recurring jobs with their history, agents), an error page, and
//! the navigation bar and banners put on top of the report's own pages (one run, two compared,
//! one history), which [`crate::html`] renders as for `scalelab report`.
//!
//! Every string from the store — names, tags, hosts, classes, commands — is escaped by the
//! template's auto-escape (or by [`escape`] for the banners); links are built here from
//! percent-encoded parts and escaped again as attribute values. No script, no external font.

use minijinja::Environment;
use serde::Serialize;

use crate::error::PresentError;
use crate::queue_table::{AgentLine, JobLine, ScheduleLine};

/// The runs page's filter, as given (shown back in the form).
#[derive(Debug, Default, Clone, Serialize)]
pub struct RunsFilter {
    /// `workload=`.
    pub workload: String,
    /// `host=`.
    pub host: String,
    /// `tag=KEY=VAL`.
    pub tag: String,
    /// `variant=`.
    pub variant: String,
}

/// One row of the runs page.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// The run id.
    pub id: i64,
    /// Its link.
    pub href: String,
    /// `--name`, or empty.
    pub name: String,
    /// The workload (`cmd` for commands).
    pub workload: String,
    /// The variant, or empty.
    pub variant: String,
    /// `key=value` pairs, comma-separated.
    pub tags: String,
    /// The host name.
    pub host: String,
    /// The machine class.
    pub host_class: String,
    /// `complete`, `running`, `interrupted`, `incomplete`.
    pub status: String,
    /// RFC 3339.
    pub started_at: String,
    /// Trials that measured.
    pub trials_ok: usize,
    /// Trials that failed.
    pub trials_failed: usize,
    /// The history of its workload.
    pub history_href: String,
    /// Its comparison with the run of the same workload before it, if any.
    pub compare_href: Option<String>,
}

/// One machine class of a workload's history index.
#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    /// The class, as `MachineClass` displays it.
    pub class: String,
    /// Its history page.
    pub href: String,
    /// Runs in its series.
    pub runs: usize,
    /// Its hosts, comma-separated.
    pub hosts: String,
    /// `history --check`'s verdict on the newest segment.
    pub verdict: String,
    /// `REGRESSED` or `ok`, for the colour.
    pub verdict_class: String,
}

/// One job of the queue page: its line as `scalelab queue` prints it, and its runs' page.
#[derive(Debug, Clone, Serialize)]
pub struct QueueJobRow {
    /// The job.
    pub line: JobLine,
    /// The runs page filtered to its runs (`/?tag=job=ID`), when it stored any.
    pub runs_href: Option<String>,
}

/// One recurring job of the queue page, with its series' history page (change points).
#[derive(Debug, Clone, Serialize)]
pub struct QueueScheduleRow {
    /// The recurring job.
    pub line: ScheduleLine,
    /// Its series' history page, for a `run` of a workload.
    pub history_href: Option<String>,
}

/// The queue page's content.
#[derive(Debug, Default, Clone, Serialize)]
pub struct QueueView {
    /// The newest jobs, oldest first.
    pub jobs: Vec<QueueJobRow>,
    /// The recurring jobs.
    pub schedules: Vec<QueueScheduleRow>,
    /// The agents.
    pub agents: Vec<AgentLine>,
}

#[derive(Serialize)]
struct Page<'a> {
    kind: &'a str,
    title: &'a str,
    nav: String,
    filters: Option<&'a RunsFilter>,
    rows: &'a [RunRow],
    shown: usize,
    total: usize,
    classes: &'a [ClassRow],
    message: &'a str,
    queue: Option<&'a QueueView>,
}

const NAV_STYLE: &str = "nav.dash { margin: 0 0 1em; padding: .4em 0; border-bottom: 1px solid #ddd; } nav.dash a { margin-right: 1em; }";

/// The navigation bar every page opens with (static text only).
fn nav() -> String {
    format!(
        "<style>{NAV_STYLE}</style><nav class=\"dash\"><a href=\"/\">runs</a><a href=\"/queue\">queue</a><span class=\"muted\">scalelab dashboard · read-only</span></nav>"
    )
}

fn render(page: &Page<'_>) -> Result<String, PresentError> {
    let mut env = Environment::new();
    let template_error = |e: minijinja::Error| PresentError::Template(format!("{e:#}"));
    env.add_template("dashboard.html", include_str!("dashboard.html"))
        .map_err(template_error)?;
    env.get_template("dashboard.html")
        .and_then(|t| t.render(minijinja::value::Serde(page)))
        .map_err(template_error)
}

fn blank<'a>(kind: &'a str, title: &'a str) -> Page<'a> {
    Page {
        kind,
        title,
        nav: nav(),
        filters: None,
        rows: &[],
        shown: 0,
        total: 0,
        classes: &[],
        message: "",
        queue: None,
    }
}

/// The runs page: `rows` (already the newest `rows.len()` of `total` matching).
pub fn runs_page(
    filters: &RunsFilter,
    rows: &[RunRow],
    total: usize,
) -> Result<String, PresentError> {
    render(&Page {
        filters: Some(filters),
        rows,
        shown: rows.len(),
        total,
        ..blank("runs", "Runs")
    })
}

/// A workload's history index: one row per machine class.
pub fn history_index(workload: &str, classes: &[ClassRow]) -> Result<String, PresentError> {
    let title = format!("History of {workload}");
    render(&Page {
        classes,
        ..blank("history_index", &title)
    })
}

/// The lab's queue; `message` (e.g. that a SQLite store has no queue) instead when given.
pub fn queue_page(view: &QueueView, message: &str) -> Result<String, PresentError> {
    render(&Page {
        queue: Some(view),
        message,
        ..blank("queue", "Queue")
    })
}

/// An error page saying `message`.
pub fn error_page(title: &str, message: &str) -> Result<String, PresentError> {
    render(&Page {
        message,
        ..blank("error", title)
    })
}

/// A report page (from [`crate::html::render`]) with the navigation bar and `banners` (plain
/// text, escaped here; each a warning line) at the top of its body.
pub fn with_nav(report: &str, banners: &[String]) -> String {
    let mut top = nav();
    for b in banners {
        top.push_str(&format!(
            "<div class=\"warn\" role=\"status\">{}</div>",
            escape(b)
        ));
    }
    match report.find("<body>") {
        Some(at) => {
            let at = at + "<body>".len();
            format!("{}\n{top}{}", &report[..at], &report[at..])
        }
        None => format!("{top}{report}"),
    }
}

/// `text` as HTML text or attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '/' => out.push_str("&#x2f;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` percent-encoded for a URL path segment or query value.
pub fn url_part(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "<img src=x onerror=alert(1)>\"'&";

    #[test]
    fn every_store_string_is_escaped() {
        let row = RunRow {
            id: 1,
            href: format!("/run/{}", url_part(HOSTILE)),
            name: HOSTILE.into(),
            workload: HOSTILE.into(),
            variant: HOSTILE.into(),
            tags: HOSTILE.into(),
            host: HOSTILE.into(),
            host_class: HOSTILE.into(),
            status: "complete".into(),
            started_at: "t".into(),
            trials_ok: 1,
            trials_failed: 0,
            history_href: "/history/x".into(),
            compare_href: None,
        };
        let filters = RunsFilter {
            workload: HOSTILE.into(),
            ..RunsFilter::default()
        };
        let page = runs_page(&filters, &[row], 1).unwrap();
        assert!(!page.contains("<img"), "{page}");
        assert!(
            page.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{page}"
        );
        let page = with_nav("<html><body><p>x</p></body></html>", &[HOSTILE.into()]);
        assert!(!page.contains("<img"), "{page}");
        let view = QueueView {
            jobs: vec![QueueJobRow {
                line: JobLine {
                    id: 3,
                    state: "queued".into(),
                    class: HOSTILE.into(),
                    job: HOSTILE.into(),
                    detail: HOSTILE.into(),
                },
                runs_href: Some(format!("/?tag={}", url_part("job=3"))),
            }],
            schedules: vec![QueueScheduleRow {
                line: ScheduleLine {
                    id: 1,
                    every: "mon 03:00 UTC".into(),
                    class: "any".into(),
                    job: HOSTILE.into(),
                    next: "t".into(),
                    jobs: "none yet".into(),
                },
                history_href: Some(format!("/history/{}", url_part(HOSTILE))),
            }],
            agents: vec![AgentLine {
                host: HOSTILE.into(),
                state: "alive".into(),
                class: HOSTILE.into(),
                allow: "built-ins".into(),
                heartbeat: "1 s ago".into(),
                job: "-".into(),
            }],
        };
        let page = queue_page(&view, "").unwrap();
        assert!(!page.contains("<img"), "{page}");
        assert!(
            page.contains("?tag=job%3D3") && page.contains("mon 03:00 UTC"),
            "{page}"
        );
        let page = error_page("t", HOSTILE).unwrap();
        assert!(!page.contains("<img"), "{page}");
        assert_eq!(url_part("a b/é"), "a%20b%2F%C3%A9");
    }
}
