//! The pages of `scalelab serve` that the HTML report does not have: the list of runs (with
//! its filter form, each command run named by its command line, and a form whose two checked
//! rows open their comparison — a plain GET form, no script), the index of a workload's history by machine class, the lab's queue (jobs,
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
    /// `cmd=`: text the command line contains.
    pub cmd: String,
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
    /// A command run's command line (its `cmd` parameter), or empty.
    pub command: String,
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
    /// The history of its series (its workload and parameters: a command run's, its command's).
    pub history_href: String,
    /// Its comparison with the run of the same series before it, if any.
    pub compare_href: Option<String>,
}

/// A row as the runs page renders it: the command line shortened for the cell.
#[derive(Serialize)]
struct RowView<'a> {
    #[serde(flatten)]
    row: &'a RunRow,
    /// [`RunRow::command`] cut to [`COMMAND_CHARS`], the full text on hover.
    command_short: String,
}

/// The most characters of a command line the runs table shows.
const COMMAND_CHARS: usize = 48;

/// `command` cut to `chars` characters, the last of them `…` when cut.
fn shortened(command: &str, chars: usize) -> String {
    if command.chars().count() <= chars {
        return command.to_owned();
    }
    let mut out: String = command.chars().take(chars.saturating_sub(1)).collect();
    out.push('…');
    out
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
    rows: Vec<RowView<'a>>,
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
        rows: Vec::new(),
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
        rows: rows
            .iter()
            .map(|row| RowView {
                row,
                command_short: shortened(&row.command, COMMAND_CHARS),
            })
            .collect(),
        shown: rows.len(),
        total,
        ..blank("runs", "Runs")
    })
}

/// A series' history index: one row per machine class; `series` names it (a workload, or a
/// command line).
pub fn history_index(series: &str, classes: &[ClassRow]) -> Result<String, PresentError> {
    let title = format!("History of {series}");
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
            command: HOSTILE.into(),
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
            cmd: HOSTILE.into(),
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

    #[test]
    fn a_command_run_shows_its_command_cut_with_the_whole_on_hover() {
        let long = format!("dbench -t 1 {{n}} {}", "x".repeat(80));
        let row = |id: i64, workload: &str, command: &str| RunRow {
            id,
            href: format!("/run/{id}"),
            name: String::new(),
            workload: workload.into(),
            command: command.into(),
            variant: String::new(),
            tags: String::new(),
            host: "h".into(),
            host_class: "c".into(),
            status: "complete".into(),
            started_at: "t".into(),
            trials_ok: 1,
            trials_failed: 0,
            history_href: "/history/x".into(),
            compare_href: None,
        };
        let rows = [row(2, "cmd", &long), row(1, "spin", "")];
        let page = runs_page(&RunsFilter::default(), &rows, 2).unwrap();
        let short = shortened(&long, COMMAND_CHARS);
        assert_eq!(short.chars().count(), COMMAND_CHARS);
        assert!(short.starts_with("dbench -t 1 {n} xx") && short.ends_with('…'));
        assert!(
            page.contains(&format!(
                "<code class=\"command\" title=\"{long}\">{short}</code>"
            )),
            "{page}"
        );
        assert!(page.contains("<td>spin</td>"), "{page}");
        // Two checkboxes in one GET form to /compare.
        assert!(page.contains("action=\"/compare\""), "{page}");
        assert_eq!(page.matches("type=\"checkbox\" name=\"run\"").count(), 2);
        assert_eq!(shortened("pgbench", COMMAND_CHARS), "pgbench");
    }
}
