//! The self-contained HTML report (`scalelab report`): one file, no network, no external
//! scripts or fonts.
//!
//! [`render`] turns a [`ReportData`] — assembled by `analysis::report_data`, which loaded
//! the profiles and computed every statistic — into a page of strings, tables and inline SVG
//! charts, then fills the `minijinja` templates with it, escaping every string (auto-escape
//! for `.html` templates); only chart SVG drawn by `plot.rs` from numbers is inserted as markup.
//!
//! With two or more runs the page opens with the comparison (every run's curve in one chart,
//! the verdict and interval per N), then each run's detail, then the history.
//!
//! Its parts, imported one way: `page.rs` (what the templates fill), `ticks.rs` (axis ticks)
//! and `legend.rs` (legend strips) import nothing of the others; `plot.rs` (SVG from numbers)
//! uses those two; `charts.rs` draws a run's charts with `plot`; the explain pictures are drawn
//! by hand: `cost_parts.rs` picks the parts and colours, `bar_frame.rs` draws the frame,
//! `cost_bars.rs` (time per op by part at each N) and `growth_waterfall.rs` (what grew) the
//! bars; `attribution.rs` (profile and
//! lock tables, the flame graph) fills `page` tables; `run_section.rs`,
//! `comparison_section.rs` and `history_section.rs` build the sections; this module fills the
//! templates. `bisect_page.rs` builds the page of a bisection (`report --bisect`), its own
//! template sharing the report's style.

mod attribution;
mod bar_frame;
mod bisect_page;
mod charts;
mod comparison_section;
mod cost_bars;
mod cost_parts;
mod growth_waterfall;
mod history_section;
mod legend;
mod page;
mod plot;
mod run_section;
mod ticks;

use analysis::bisect::BisectView;
use analysis::report_data::ReportData;
use minijinja::Environment;

use self::comparison_section::{comparison_section, runs_chart};
use self::history_section::history_section;
use self::page::Page;
use self::run_section::run_section;
use crate::error::PresentError;

/// The longest workload or command text a default title quotes.
const TITLE_SUBJECT_CHARS: usize = 80;

/// Renders the report of `data`, headed `title`, into one HTML document.
pub fn render(data: &ReportData, title: &str) -> Result<String, PresentError> {
    let comparison_chart = if data.runs.len() > 1 {
        Some(plot::render(&runs_chart(&data.runs), 900, 380).map_err(PresentError::Chart)?)
    } else {
        None
    };
    let page = Page {
        title: title.to_string(),
        tool_version: data.tool_version.clone(),
        generated_at: data.generated_at.clone(),
        runs: data
            .runs
            .iter()
            .map(run_section)
            .collect::<Result<_, _>>()?,
        comparison_chart,
        comparisons: data.comparisons.iter().map(comparison_section).collect(),
        history: data.history.as_ref().map(history_section).transpose()?,
    };
    fill(&page)
}

/// The title of a report without `--title`: what was measured — the workload, or the command
/// of a `--cmd` run — and the variants compared, e.g. `page_fault: stock vs patched`.
pub fn default_title(data: &ReportData) -> String {
    let mut subjects: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for run in &data.runs {
        let meta = &run.meta;
        let subject = match meta.params.get("cmd") {
            Some(command) if meta.workload == "cmd" => command.clone(),
            _ => meta.workload.clone(),
        };
        let subject = model::safe_text::printable(&subject).into_owned();
        let subject = if subject.chars().count() > TITLE_SUBJECT_CHARS {
            let cut: String = subject.chars().take(TITLE_SUBJECT_CHARS - 1).collect();
            format!("{cut}…")
        } else {
            subject
        };
        if !subjects.contains(&subject) {
            subjects.push(subject);
        }
        if let Some(v) = &meta.variant {
            if !variants.contains(v) {
                variants.push(v.clone());
            }
        }
    }
    match (subjects.as_slice(), variants.len()) {
        ([], _) => "scalelab report".into(),
        ([one], 2..) => format!("{one}: {}", variants.join(" vs ")),
        (many, _) => format!("scalelab: {}", many.join(" vs ")),
    }
}

/// Renders the page of a bisection (`report --bisect`), headed `title`: its answer, its
/// commits along the x axis with their changes and intervals, its steps.
pub fn render_bisect(view: &BisectView, title: &str) -> Result<String, PresentError> {
    let page = bisect_page::bisect_page(view, title)?;
    let env = environment()?;
    env.get_template("bisect.html")
        .and_then(|t| t.render(minijinja::value::Serde(&page)))
        .map_err(|e| PresentError::Template(format!("{e:#}")))
}

/// Fills the templates with the page.
fn fill(page: &Page) -> Result<String, PresentError> {
    let env = environment()?;
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(page)))
        .map_err(|e| PresentError::Template(format!("{e:#}")))
}

/// The templates, with the verdicts the tables colour.
fn environment() -> Result<Environment<'static>, PresentError> {
    let mut env = Environment::new();
    let template_error = |e: minijinja::Error| PresentError::Template(format!("{e:#}"));
    env.add_template("style.html", include_str!("style.html"))
        .map_err(template_error)?;
    env.add_template("bisect.html", include_str!("bisect.html"))
        .map_err(template_error)?;
    env.add_template("report.html", include_str!("report.html"))
        .map_err(template_error)?;
    env.add_template("table.html", include_str!("table.html"))
        .map_err(template_error)?;
    env.add_global(
        "verdicts",
        minijinja::Value::from(minijinja::value::Serde(["REGRESSED", "IMPROVED"])),
    );
    Ok(env)
}

#[cfg(test)]
mod tests {
    use analysis::history::{self, Metric};
    use lab::test_runs::run;
    use stats::{ChangePointOptions, CompareOptions};

    use super::*;

    fn usl(n: f64) -> f64 {
        1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0))
    }

    #[test]
    fn the_page_shows_every_section_of_the_data_and_escapes_user_text() {
        let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8]
            .iter()
            .map(|&n| (n, vec![usl(f64::from(n)) * 1.01, usl(f64::from(n)) * 0.99]))
            .collect();
        let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let mut runs = vec![run(1, "spin", &points), run(2, "spin", &points)];
        runs[1].meta.name = Some("<script>alert(1)</script>".into());
        let h = history::build(
            "spin",
            &runs,
            8,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        let data = ReportData::from_runs(&runs, Some(h), &CompareOptions::default());
        let page = render(&data, "spin & co").unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        for needle in [
            "<title>spin &amp; co</title>",
            "Run 1",
            "Throughput X(N)",
            "USL σ=",
            "(B) against run 1 (A)",
            "<h2>History</h2>",
            "&lt;script&gt;alert(1)&lt;&#x2f;script&gt;",
        ] {
            assert!(page.contains(needle), "{needle} missing");
        }
        assert!(!page.contains("<script>alert(1)"));
    }

    #[test]
    fn a_run_section_opens_with_why_it_stops_scaling() {
        let mut data = lab::test_runs::explained_run();
        // A hostile caller name is escaped like every user string.
        for t in &mut data.trials {
            if let model::record::TrialOutcome::Ok(m) = &mut t.outcome {
                for s in &mut m.offcpu.as_mut().unwrap().sites {
                    if s.caller == "worker_lock" {
                        s.caller = "<b>worker_lock</b>".into();
                    }
                }
            }
        }
        let report = ReportData::from_runs(&[data], None, &CompareOptions::default());
        let page = render(&report, "explain").unwrap();
        let why = page
            .find("Why it stops scaling")
            .expect("the explain section");
        let charts = page.find("Throughput X(N)").expect("the charts");
        assert!(
            why < charts,
            "the explanation comes first in the run's section"
        );
        for needle in [
            "93% of that is futex wait from &lt;b&gt;worker_lock&lt;&#x2f;b&gt;",
            "Time per op (ns&#x2f;op&#x2f;task",
            "Growth from N=1 to N=2 by cause",
            "no profile: user and system time are not split by function — run with --profile",
            "<code>scalelab explain 9</code>",
        ] {
            assert!(page.contains(needle), "{needle} missing");
        }
        assert!(!page.contains("<b>worker_lock"));
    }

    fn two_runs() -> Vec<model::record::RunData> {
        let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4]
            .iter()
            .map(|&n| {
                (
                    n,
                    vec![
                        usl(f64::from(n)) * 1.01,
                        usl(f64::from(n)) * 0.99,
                        usl(f64::from(n)),
                    ],
                )
            })
            .collect();
        let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let mut runs = vec![run(1, "spin", &points), run(2, "spin", &points)];
        runs[0].meta.variant = Some("stock".into());
        runs[1].meta.variant = Some("patched".into());
        runs
    }

    #[test]
    fn the_comparison_comes_before_the_runs_with_every_curve_in_one_chart() {
        let data = ReportData::from_runs(&two_runs(), None, &CompareOptions::default());
        let page = render(&data, "t").unwrap();
        let at = |needle: &str| {
            page.find(needle)
                .unwrap_or_else(|| panic!("{needle} missing"))
        };
        assert!(at("<section id=\"comparison\">") < at("<section id=\"run-1\""));
        assert!(at("<section id=\"run-1\"") < at("<section id=\"run-2\""));
        let comparison = &page[at("<section id=\"comparison\">")..at("<section id=\"run-1\"")];
        for needle in [
            "Throughput X(N) of every run",
            "run 1 · stock",
            "run 2 · patched",
            "run 2 · patched (B) against run 1 · stock (A)",
            "class=\"verdict verdict-",
            "shift CI",
        ] {
            assert!(
                comparison.contains(needle),
                "{needle} missing from the comparison"
            );
        }
        // One run: no comparison section at all.
        let one = ReportData::from_runs(&two_runs()[..1], None, &CompareOptions::default());
        assert!(!render(&one, "t").unwrap().contains("id=\"comparison\""));
    }

    /// Issue 16: the throughput plot marks the first N past a topology boundary.
    #[test]
    fn the_throughput_plot_marks_topology_boundaries() {
        let mut runs = vec![run(1, "spin", &[(1, &[1.0, 1.1]), (2, &[1.9, 2.0])])];
        let place = |cpu: usize| model::env::CpuPlace {
            cpu,
            package: cpu as u32,
            die: 0,
            node: None,
            core: cpu as u32,
            thread: 0,
            l2: None,
            l3: None,
        };
        runs[0].meta.env.topology = Some(model::env::CpuTopology {
            cpus: vec![place(0), place(1)],
            ..Default::default()
        });
        let data = ReportData::from_runs(&runs, None, &CompareOptions::default());
        let page = render(&data, "t").unwrap();
        assert!(
            page.contains("↑ 2nd socket"),
            "no boundary mark in the page"
        );
    }

    #[test]
    fn default_title_names_the_command_of_a_cmd_run_not_cmd() {
        // The bug: a report of `--cmd` runs was titled `scalelab: cmd`.
        let mut runs = vec![run(1, "cmd", &[(1, &[1.0, 2.0])])];
        runs[0]
            .meta
            .params
            .insert("cmd".into(), "make -j{n} -C /src".into());
        let data = ReportData::from_runs(&runs, None, &CompareOptions::default());
        assert_eq!(default_title(&data), "scalelab: make -j{n} -C /src");

        let data = ReportData::from_runs(&two_runs(), None, &CompareOptions::default());
        assert_eq!(default_title(&data), "spin: stock vs patched");

        let mut mixed = two_runs();
        mixed[1].meta.workload = "page_fault".into();
        mixed[1].meta.variant = None;
        let data = ReportData::from_runs(&mixed, None, &CompareOptions::default());
        assert_eq!(default_title(&data), "scalelab: spin vs page_fault");

        let mut long = vec![run(1, "cmd", &[(1, &[1.0, 2.0])])];
        long[0].meta.params.insert("cmd".into(), "x".repeat(500));
        let title = default_title(&ReportData::from_runs(
            &long,
            None,
            &CompareOptions::default(),
        ));
        assert!(
            title.chars().count() < 100 && title.ends_with('…'),
            "{title}"
        );
    }

    #[test]
    fn empty_tables_are_one_line_saying_so() {
        let runs = two_runs();
        let h = history::build(
            "spin",
            &runs,
            4,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        assert!(h.changes.is_empty());
        let mut data = ReportData::from_runs(&runs, Some(h), &CompareOptions::default());
        data.runs[0].locks = Some(analysis::lock_contention::PointLocks {
            n: 4,
            trials: 3,
            ops: 1000,
            window_s: 3.0,
            rows: Vec::new(),
            lost_records: 0,
            notes: Vec::new(),
        });
        let page = render(&data, "t").unwrap();
        for line in [
            "<p class=\"empty\">No change points: the 2 runs form one segment.</p>",
            "<p class=\"empty\">Kernel locks at N=4: no contention seen (3 traced trials).</p>",
            "<p class=\"empty\">User locks at N=4: no contention seen (3 traced trials).</p>",
        ] {
            assert!(page.contains(line), "{line} missing");
        }
        for header in ["<th>direction</th>", "<th>contentions</th>"] {
            assert!(!page.contains(header), "an empty table is drawn: {header}");
        }
    }

    #[test]
    fn a_command_runs_steps_are_not_shown_as_p_options() {
        let mut runs = vec![run(1, "cmd", &[(1, &[1.0, 2.0])])];
        runs[0]
            .meta
            .params
            .insert("cmd".into(), "make -j{n}".into());
        let page = render(
            &ReportData::from_runs(&runs, None, &CompareOptions::default()),
            "t",
        )
        .unwrap();
        assert!(
            page.contains("<tr><td>cmd</td><td><code>make -j{n}</code></td></tr>"),
            "{page}"
        );
        assert!(!page.contains("-p cmd"));
    }
}
