//! The HTML page of a bisection (`scalelab report --bisect ID`): the answer, one chart per
//! bisected N with the commits of the range along the x axis (first-parent order, the good end
//! at 0) and each tested commit's change against the good end with its interval — green good,
//! red bad, grey skipped, the bad end as measured in step 0 — the first bad commit marked; then
//! the steps' table. Every figure comes from the [`BisectView`].

use analysis::bisect::{BisectView, PointChange, StepView};
use model::bisection::StepVerdict;
use model::bisection::short;
use model::number_text::{comma_list, percent, plural, signed_percent};
use serde::Serialize;

use super::page::Table;
use super::plot::{self, Chart, ErrorBars, Series, Style};
use crate::error::PresentError;
use crate::number_format::duration;

/// What the bisection template fills.
#[derive(Debug, Clone, Serialize)]
pub(super) struct BisectPage {
    pub(super) title: String,
    pub(super) tool_version: String,
    pub(super) answer: String,
    pub(super) details: Vec<String>,
    pub(super) summary: String,
    pub(super) charts: Vec<String>,
    pub(super) steps: Table,
    pub(super) commits: Table,
}

/// Palette indices (see `plot::PALETTE`): good green, bad red, skipped grey, ends blue.
const GOOD: usize = 2;
const BAD: usize = 1;
const SKIP: usize = 5;
const ENDS: usize = 0;

/// The page of `v`, headed `title`.
pub(super) fn bisect_page(v: &BisectView, title: &str) -> Result<BisectPage, PresentError> {
    let (answer, details) = answer(v);
    let charts = chart_points(v)
        .into_iter()
        .map(|chart| plot::render(&chart, 1000, 420).map_err(PresentError::Chart))
        .collect::<Result<_, _>>()?;
    Ok(BisectPage {
        title: title.to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        answer,
        details,
        summary: format!(
            "{} in {} from {} ({}) to {} ({}), {} between; {} measured at N={} against both \
             ends ({}), threshold ±{} (commits judged at ±{}), alpha {}; {}, {} skipped, {} \
             building and measuring.",
            v.build
                .as_deref()
                .map_or("commits booted by hand".to_string(), |b| format!(
                    "built with `{b}`"
                )),
            v.repo,
            v.good_spec,
            short(&v.commits[0].hash),
            v.bad_spec,
            short(&v.commits[v.commits.len() - 1].hash),
            plural(v.commits.len() - 2, "commit"),
            v.measured,
            comma_list(&v.at),
            v.metric,
            percent(v.threshold),
            percent(v.step_threshold),
            v.alpha,
            plural(v.steps.len(), "step"),
            v.skips,
            duration(v.elapsed_ns as f64),
        ),
        charts,
        steps: steps_table(v),
        commits: commits_table(v),
    })
}

fn answer(v: &BisectView) -> (String, Vec<String>) {
    match &v.first_bad {
        Some(a) => {
            let mut details = Vec::new();
            if let Some(j) = &a.judged {
                for p in &j.vs_good {
                    details.push(format!(
                        "change at it, N={}: {} against the good end",
                        p.n,
                        change(p)
                    ));
                }
            }
            if let Some(p) = &a.parent {
                details.push(format!(
                    "before it: {} {} is good",
                    short(&p.commit.hash),
                    p.commit.subject
                ));
            }
            (
                format!("first bad commit: {} {}", a.commit.hash, a.commit.subject),
                details,
            )
        }
        None => match v.status {
            model::bisection::BisectStatus::NotRegression => (
                "not a regression: nothing to bisect".into(),
                v.ends.iter().filter_map(|e| e.reason.clone()).collect(),
            ),
            model::bisection::BisectStatus::Unresolved => (
                "only skipped commits are left: the first bad commit is one of".into(),
                v.candidates
                    .iter()
                    .map(|c| format!("{} {}", c.hash, c.subject))
                    .collect(),
            ),
            status => (format!("bisection {status}"), Vec::new()),
        },
    }
}

fn change(p: &PointChange) -> String {
    match p.change {
        Some(c) => {
            let r = c.relative_shift;
            format!(
                "{} [{}, {}] {}",
                signed_percent(r.point),
                signed_percent(r.lower),
                signed_percent(r.upper),
                c.verdict
            )
        }
        None => "not compared".into(),
    }
}

/// One chart per bisected N: each tested commit's change against the good end (in %).
fn chart_points(v: &BisectView) -> Vec<Chart> {
    let at: Vec<u32> = match &v.ends {
        Some(e) if v.at.is_empty() => e.vs_good.iter().map(|p| p.n).collect(),
        _ => v.at.clone(),
    };
    at.iter()
        .map(|&n| {
            let mut series = Vec::new();
            let mut bars = Vec::new();
            let ends: Vec<&StepView> = v.ends.iter().collect();
            let groups: [(&str, usize, Vec<&StepView>); 4] = [
                ("ends (step 0: bad against good)", ENDS, ends),
                ("good", GOOD, by_verdict(v, StepVerdict::Good)),
                ("bad", BAD, by_verdict(v, StepVerdict::Bad)),
                ("skipped", SKIP, by_verdict(v, StepVerdict::Skip)),
            ];
            for (name, color, steps) in groups {
                let mut points = Vec::new();
                let mut errors = Vec::new();
                for s in steps {
                    let Some(c) = s.vs_good.iter().find(|p| p.n == n).and_then(|p| p.change) else {
                        continue;
                    };
                    let x = f64::from(s.commit.position);
                    let r = c.relative_shift;
                    points.push((x, 100.0 * r.point));
                    errors.push((x, 100.0 * r.lower, 100.0 * r.upper));
                }
                if name.starts_with("ends") {
                    // The good end is the reference: 0 by definition.
                    points.push((0.0, 0.0));
                }
                if !points.is_empty() {
                    series.push(Series {
                        name: name.into(),
                        points,
                        style: Style::Points,
                        color,
                    });
                    bars.push(ErrorBars {
                        points: errors,
                        color,
                    });
                }
            }
            Chart {
                title: format!("Change against the good end at N={n}, by commit"),
                x_label: "commit (first-parent order; 0 = the good end)".into(),
                y_label: format!("change in {} (%)", v.metric),
                series,
                error_bars: bars,
                markers: v
                    .first_bad
                    .iter()
                    .map(|a| (f64::from(a.commit.position) - 0.5, "first bad".to_string()))
                    .collect(),
                ..Chart::default()
            }
        })
        .collect()
}

fn by_verdict(v: &BisectView, verdict: StepVerdict) -> Vec<&StepView> {
    v.steps.iter().filter(|s| s.verdict == verdict).collect()
}

fn steps_table(v: &BisectView) -> Table {
    let mut rows = Vec::new();
    for s in v.ends.iter().chain(&v.steps) {
        let against_bad = |n: u32| {
            s.vs_bad
                .iter()
                .find(|p| p.n == n)
                .map_or_else(String::new, change)
        };
        let runs = [s.run_good, s.run_commit, s.run_bad]
            .iter()
            .map(|r| r.map_or("-".into(), |r| r.to_string()))
            .collect::<Vec<_>>()
            .join(" / ");
        if s.vs_good.is_empty() {
            rows.push(vec![
                s.step.to_string(),
                short(&s.commit.hash).to_string(),
                s.commit.subject.clone(),
                s.verdict.to_string(),
                s.reason.clone().unwrap_or_default(),
                String::new(),
                String::new(),
                String::new(),
                s.elapsed_ns.map_or("-".into(), |ns| duration(ns as f64)),
                runs.clone(),
            ]);
        }
        for p in &s.vs_good {
            rows.push(vec![
                s.step.to_string(),
                short(&s.commit.hash).to_string(),
                s.commit.subject.clone(),
                s.verdict.to_string(),
                if s.verdict == StepVerdict::Skip {
                    s.reason.clone().unwrap_or_default()
                } else {
                    format!("N={}", p.n)
                },
                change(p),
                against_bad(p.n),
                s.runs.to_string(),
                s.elapsed_ns.map_or("-".into(), |ns| duration(ns as f64)),
                runs.clone(),
            ]);
        }
    }
    Table {
        caption: "Steps (step 0: the bad end against the good end)".into(),
        headers: [
            "step",
            "commit",
            "subject",
            "verdict",
            "at",
            "against good",
            "against bad",
            "groups",
            "time",
            "runs (good / commit / bad)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        left_columns: 5,
        empty: "No step was taken.".into(),
    }
}

fn commits_table(v: &BisectView) -> Table {
    let verdict = |position: u32| -> String {
        if position == 0 {
            return "good end".into();
        }
        if position as usize == v.commits.len() - 1 {
            return "bad end".into();
        }
        v.steps
            .iter()
            .rev()
            .find(|s| s.commit.position == position)
            .map_or_else(String::new, |s| format!("{} (step {})", s.verdict, s.step))
    };
    Table {
        caption: "The range, in first-parent order".into(),
        headers: ["#", "commit", "subject", "verdict"]
            .map(String::from)
            .to_vec(),
        rows: v
            .commits
            .iter()
            .map(|c| {
                vec![
                    c.position.to_string(),
                    short(&c.hash).to_string(),
                    c.subject.clone(),
                    verdict(c.position),
                ]
            })
            .collect(),
        left_columns: 4,
        empty: String::new(),
    }
}
