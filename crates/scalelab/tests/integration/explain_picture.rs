//! The explain pictures end to end, on a real two-N run (`futex_mutex -p shared=true --tasks
//! 1,2 --runs 2 --explain`): the numbers the report's SVG carries in its data attributes are
//! `scalelab explain RUN --json`'s, part by part, to the nanosecond — the time per op by part
//! at each N and the growth by cause — and the dashboard's run page draws the same; headless
//! Chromium shows the report without a console message (the screenshot is kept in
//! `target/test-artifacts/explain-picture-1280.png`). A run of one N has no waterfall.

use std::collections::HashMap;

use serde_json::Value;

use crate::common::{Lab, perf_available};
use crate::report::{artifacts, assert_drawn, chromium_installed, headless};
use crate::team_lab::{Server, get};

/// Within this many ns per op a drawn value is the explanation's: sums may round differently,
/// and serde_json reads a number back to within a unit in the last place.
const NS: f64 = 0.001;

/// The one `<svg>` of `page` named `data-chart="NAME"`.
fn chart<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let at = page.find(&format!("data-chart=\"{name}\""))?;
    let start = page[..at].rfind("<svg")?;
    let end = at + page[at..].find("</svg>")? + 6;
    Some(&page[start..end])
}

/// The attributes of every `<rect class="CLASS"` of `svg`, unescaped, in order.
fn rects(svg: &str, class: &str) -> Vec<HashMap<String, String>> {
    svg.split(&format!("<rect class=\"{class}\""))
        .skip(1)
        .map(|r| {
            let tag = &r[..r.find('>').unwrap()];
            let mut attrs = HashMap::new();
            let mut rest = tag;
            while let Some(eq) = rest.find("=\"") {
                let name = rest[..eq].trim().rsplit(' ').next().unwrap().to_owned();
                let value_end = eq + 2 + rest[eq + 2..].find('"').unwrap();
                let value = rest[eq + 2..value_end]
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&amp;", "&");
                attrs.insert(name, value);
                rest = &rest[value_end + 1..];
            }
            attrs
        })
        .collect()
}

fn ns(attrs: &HashMap<String, String>) -> f64 {
    attrs["data-ns"].parse().unwrap()
}

/// Whether a drawn part is `part` of the JSON (kind, what, object, caller).
fn names(attrs: &HashMap<String, String>, cause: &Value) -> bool {
    ["kind", "what", "object", "caller"]
        .iter()
        .all(|k| attrs.get(&format!("data-{k}")).map(String::as_str) == cause[*k].as_str())
}

fn close(drawn: f64, json: f64, what: &str) {
    assert!(
        (drawn - json).abs() <= NS,
        "{what}: drawn {drawn} ns, explain --json {json} ns"
    );
}

/// The stacked bars against `points[]`: each named part is its cause's value, each folded part
/// the rest of its kind, the unexplained rests and the totals are the JSON's.
fn check_cost_bars(svg: &str, e: &Value) {
    let parts = rects(svg, "part");
    for p in e["points"].as_array().unwrap() {
        let n = p["n"].as_u64().unwrap().to_string();
        let at: Vec<&HashMap<String, String>> = parts.iter().filter(|a| a["data-n"] == n).collect();
        assert!(!at.is_empty(), "N={n}: no part drawn");
        let json_parts = p["parts"].as_array().unwrap();
        let mut matched = vec![false; json_parts.len()];
        for a in at.iter().filter(|a| a.contains_key("data-what")) {
            let mut sum = 0.0;
            for (i, j) in json_parts.iter().enumerate() {
                if names(a, &j["cause"]) {
                    sum += j["ns_per_op"].as_f64().unwrap();
                    matched[i] = true;
                }
            }
            close(ns(a), sum, &format!("N={n} {}", a["data-part"]));
        }
        for a in at.iter().filter(|a| a.contains_key("data-rest")) {
            let kind = a["data-kind"].as_str();
            let rest: f64 = json_parts
                .iter()
                .zip(&matched)
                .filter(|(j, m)| !**m && j["cause"]["kind"] == kind)
                .map(|(j, _)| j["ns_per_op"].as_f64().unwrap())
                .sum();
            close(ns(a), rest, &format!("N={n} {}", a["data-part"]));
        }
        // Every part of the JSON is in one drawn part, named or folded.
        let causes: f64 = at
            .iter()
            .filter(|a| a.contains_key("data-what") || a.contains_key("data-rest"))
            .map(|a| ns(a))
            .sum();
        let json_sum: f64 = json_parts
            .iter()
            .map(|j| j["ns_per_op"].as_f64().unwrap())
            .sum();
        close(causes, json_sum, &format!("N={n}: the causes"));
        for (kind, key) in [
            ("cpu_unexplained", "cpu_unexplained_ns"),
            ("offcpu_unexplained", "offcpu_unexplained_ns"),
        ] {
            let drawn: Vec<f64> = at
                .iter()
                .filter(|a| a["data-kind"] == kind)
                .map(|a| ns(a))
                .collect();
            match p[key].as_f64() {
                Some(v) => {
                    assert_eq!(drawn.len(), 1, "N={n}: {kind} drawn {drawn:?}");
                    close(drawn[0], v, &format!("N={n} {kind}"));
                }
                None => assert!(drawn.is_empty(), "N={n}: {kind} drawn without a value"),
            }
        }
        let total = p["accounting"]["ns_per_op_task"].as_f64().unwrap();
        let all: f64 = at.iter().map(|a| ns(a)).sum();
        assert!(
            (all - total).abs() <= 1e-6 * total,
            "N={n}: the bar's parts {all} ≠ ns/op/task {total}"
        );
        let marked = svg
            .split(&format!("data-n=\"{n}\" data-total=\""))
            .nth(1)
            .and_then(|t| t[..t.find('"')?].parse::<f64>().ok())
            .unwrap_or_else(|| panic!("N={n}: the total is not marked"));
        close(marked, total, &format!("N={n}: the total"));
    }
}

/// The waterfall against `growth`: start, each named cause in order, unexplained, end.
fn check_waterfall(svg: &str, g: &Value) {
    let steps = rects(svg, "step");
    let named = g["named"].as_array().unwrap();
    assert_eq!(steps.len(), named.len() + 3, "{steps:?}");
    assert_eq!(steps[0]["data-step"], "start");
    close(ns(&steps[0]), g["from_ns"].as_f64().unwrap(), "start");
    for (s, c) in steps[1..].iter().zip(named) {
        assert_eq!(s["data-step"], "cause");
        assert!(names(s, &c["cause"]), "{s:?} is not {c}");
        close(ns(s), c["delta_ns"].as_f64().unwrap(), &s["data-part"]);
    }
    let last = steps.len() - 1;
    assert_eq!(steps[last - 1]["data-step"], "unexplained");
    close(
        ns(&steps[last - 1]),
        g["unexplained_ns"].as_f64().unwrap(),
        "unexplained",
    );
    assert_eq!(steps[last]["data-step"], "end");
    close(ns(&steps[last]), g["to_ns"].as_f64().unwrap(), "end");
    for s in &steps {
        assert_eq!(s["data-from-n"], g["from_n"].to_string());
        assert_eq!(s["data-to-n"], g["to_n"].to_string());
    }
}

#[test]
fn the_explain_pictures_carry_explains_numbers_in_the_report_and_on_the_dashboard() {
    // `--explain` records a profile with perf.
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    let (_, stderr) = lab.ok_with_stderr(&[
        "run",
        "futex_mutex",
        "-p",
        "shared=true",
        "--tasks",
        "1,2",
        "--runs",
        "2",
        "--duration",
        "300ms",
        "--warmup",
        "100ms",
        "--explain",
        "--quiet",
    ]);
    if stderr.contains("lock tracing unavailable") {
        eprintln!("skipped: {stderr}");
        return;
    }
    let e = lab.json(&["explain", "last", "--json"]);
    let id = e["run_id"].as_i64().unwrap().to_string();
    let html = lab.path("explain.html");
    lab.ok(&["report", &id, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    let bars = chart(&page, "cost-per-op").expect("the time per op by part");
    let waterfall = chart(&page, "growth").expect("the growth's waterfall");
    check_cost_bars(bars, &e);
    check_waterfall(waterfall, &e["growth"]);
    let picture = page.find("data-chart=\"cost-per-op\"").unwrap();
    let table = page.find("Time per op (ns").expect("the accounting table");
    assert!(picture < table, "the pictures come before the tables");

    // The dashboard's run page draws the same pictures from the same numbers.
    let server = Server::start(&lab, lab.db().to_str().unwrap());
    let (status, run_page) = get(&server.base, &format!("/run/{id}"));
    assert_eq!(status, 200, "{run_page}");
    let served = chart(&run_page, "cost-per-op").expect("the dashboard's cost bars");
    check_cost_bars(served, &e);
    check_waterfall(
        chart(&run_page, "growth").expect("the dashboard's waterfall"),
        &e["growth"],
    );
    drop(server);

    // Headless Chromium: drawn, and no console message.
    if !chromium_installed() {
        return;
    }
    let png = artifacts().join("explain-picture-1280.png");
    let _ = std::fs::remove_file(&png);
    let (_, log) = headless(
        &lab,
        1280,
        &[
            format!("--screenshot={}", png.display()),
            format!("file://{}", html.display()),
        ],
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(png.exists(), "no screenshot: {log}");
    assert_drawn(&png);
}

#[test]
fn a_run_of_one_n_has_its_bar_and_no_waterfall() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "spin",
        "--tasks",
        "1",
        "--runs",
        "2",
        "--duration",
        "100ms",
        "--warmup",
        "0",
        "--quiet",
    ]);
    let e = lab.json(&["explain", "last", "--json"]);
    assert!(e["growth"].is_null(), "{e}");
    let id = e["run_id"].as_i64().unwrap().to_string();
    let html = lab.path("one.html");
    lab.ok(&["report", &id, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    check_cost_bars(chart(&page, "cost-per-op").expect("the bar"), &e);
    assert!(chart(&page, "growth").is_none(), "a waterfall of one N");
}
