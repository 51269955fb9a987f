//! The HTML report end to end: real runs (one profiled and lock-traced, with a hostile name), a
//! history, rendered by headless Chromium (Debian's `chromium`, installed by `scripts/test`) at
//! 1280 and at 800 px: no console errors, plots drawn (the screenshots are far from blank), and
//! — measured in the page by a probe that loads the report in a frame — the comparison comes
//! first, each run's explain pictures are drawn, N axes tick at the measured N, no legend covers
//! a plotted point, line or bar, the flame
//! graph fills the content column's width, no table is empty, the page never scrolls sideways.
//! The screenshots are kept in `target/test-artifacts/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Lab, perf_available};

const HOSTILE: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>&\"'";

/// The widths a reader's window has: a laptop's and a half screen's.
const WIDTHS: [u32; 2] = [1280, 800];

fn ok(c: &mut Command) -> (String, String) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The headless browser's program, where one is installed.
fn find_chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// True when headless Chromium is installed; a test that renders pages calls it first and
/// returns when it says no (printing that it skipped and why). Where `CI` is set a missing
/// Chromium fails the test instead: `scripts/test` installs it.
pub(crate) fn chromium_installed() -> bool {
    let ok = find_chromium().is_some();
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "headless Chromium is not installed: scripts/test installs it (apt-get install chromium)"
        );
        println!(
            "skipped: headless Chromium is not installed (Debian: apt-get install chromium; \
             scripts/test installs it)"
        );
    }
    ok
}

pub(crate) fn chromium() -> &'static str {
    find_chromium().unwrap_or_else(|| {
        panic!("headless Chromium is needed for this test: call chromium_installed() first")
    })
}

/// Headless Chromium with a fresh profile in the lab, a window `width` wide, and `args`;
/// returns its stderr (the console log).
pub(crate) fn headless(lab: &Lab, width: u32, args: &[String]) -> (String, String) {
    let profile = lab.dir.path().join(format!("chromium-profile-{width}"));
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            // Frames of another origin (the sandboxed flame graph) are drawn by another process,
            // which headless screenshots leave blank; a reader's browser shows them.
            "--disable-site-isolation-trials",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--window-size={width},2000"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks a screenshot is far from blank and shows coloured plot lines.
pub(crate) fn assert_drawn(png: &Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels = bytes.len() / channels;
    let non_white = bytes
        .chunks(channels)
        .filter(|p| p.iter().take(3).any(|&c| c < 200))
        .count();
    let colored = bytes
        .chunks(channels)
        .filter(|p| channels >= 3 && (i32::from(p[2]) - i32::from(p[0])).abs() > 60)
        .count();
    assert!(
        non_white * 100 > pixels,
        "{}: nearly blank: {non_white} of {pixels} pixels",
        png.display()
    );
    assert!(
        colored > 500,
        "{}: no coloured plot lines ({colored} pixels)",
        png.display()
    );
}

/// The probe: loads the report in a frame `width` px wide (same origin: both are files, with
/// `--allow-file-access-from-files`), measures it once the flame graph's script has run, and
/// writes the measurements as JSON into its own DOM, which `--dump-dom` prints.
const PROBE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body style="margin:0">
<pre id="out">pending</pre>
<iframe id="report" src="REPORT" style="width:WIDTHpx;height:2000px;border:0"></iframe>
<script>
"use strict";
function rect(e) { const r = e.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; }
function overlaps(a, b) { return a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b; }
function measure() {
  const d = document.getElementById("report").contentDocument;
  const out = {};
  out.sections = [...d.querySelectorAll("body > section")].map(s => s.id);
  out.page_width = d.documentElement.clientWidth;
  out.scroll_width = d.documentElement.scrollWidth;
  out.charts = [...d.querySelectorAll(".chart svg")].map(svg => {
    const texts = [...svg.querySelectorAll("text")];
    const legend = svg.querySelector("g.legend");
    const plotted = [...svg.querySelectorAll("circle, polyline, rect[data-ns]")].filter(e => !e.closest("g.legend"));
    const svgRect = rect(svg);
    const legendRect = legend ? rect(legend) : null;
    // The x axis's tick labels: the texts just below the plotting area, between the lowest
    // plotted element and the legend.
    const bottom = Math.max(...plotted.map(e => rect(e).b));
    return {
      title: texts.length ? texts[0].textContent.trim() : "",
      x_ticks: texts.filter(t => { const r = rect(t); return r.t >= bottom - 2 && r.t < bottom + 22 && /^[0-9]/.test(t.textContent.trim()); })
                    .map(t => t.textContent.trim()),
      legend: legend ? [...legend.querySelectorAll("text")].map(t => t.textContent) : [],
      legend_inside: legendRect ? legendRect.b <= svgRect.b + 1 && legendRect.r <= svgRect.r + 1 : true,
      covered: legendRect ? plotted.filter(e => overlaps(rect(e), legendRect)).length : 0,
      plotted: plotted.length,
      width: svgRect.r - svgRect.l,
    };
  });
  out.empty_lines = [...d.querySelectorAll("p.empty")].map(p => p.textContent);
  out.tables_without_rows = [...d.querySelectorAll("table")].filter(t => t.rows.length < 2 && !t.classList.contains("meta")).length;
  const flame = d.querySelector("iframe.flame");
  if (!flame) { return finish(out); }
  out.flame_width = flame.getBoundingClientRect().width;
  out.column_width = flame.parentElement.clientWidth;
  // The frame is sandboxed (no access from here), so its document is drawn again in a frame
  // of the same size that the probe can read.
  const copy = document.createElement("iframe");
  copy.style.cssText = "border:0;width:" + flame.clientWidth + "px;height:" + flame.clientHeight + "px";
  copy.onload = () => setTimeout(() => {
    const svg = copy.contentDocument.querySelector("svg");
    out.flame_frame_inner = flame.clientWidth;
    out.flame_svg_width = svg ? svg.getBoundingClientRect().width : 0;
    out.flame_svg_height = svg ? svg.getBoundingClientRect().height : 0;
    out.flame_frame_height = flame.clientHeight;
    finish(out);
  }, 300);
  copy.srcdoc = flame.getAttribute("srcdoc");
  document.body.appendChild(copy);
}
function finish(out) { document.getElementById("out").textContent = JSON.stringify(out); }
window.addEventListener("load", () => setTimeout(measure, 300));
</script>
</body></html>
"#;

fn probe(lab: &Lab, html: &Path, width: u32) -> Value {
    let path = lab.path(&format!("probe-{width}.html"));
    let page = PROBE
        .replace("REPORT", html.file_name().unwrap().to_str().unwrap())
        .replace("WIDTH", &width.to_string());
    std::fs::write(&path, page).unwrap();
    let (dom, log) = headless(
        lab,
        width,
        &[
            "--allow-file-access-from-files".into(),
            "--virtual-time-budget=15000".into(),
            "--dump-dom".into(),
            format!("file://{}", path.display()),
        ],
    );
    let start = dom.find("<pre id=\"out\">").expect("the probe's output") + 14;
    let text = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("probe at {width} px: {e}: {text}\n{log}"))
}

/// A short spin run; with `extra` options.
fn spin(lab: &Lab, extra: &[&str]) -> String {
    let mut run = lab.cmd();
    run.args([
        "run",
        "spin",
        "--tasks",
        "1,2",
        "--runs",
        "2",
        "--duration",
        "100ms",
        "--warmup",
        "0",
        "--quiet",
    ])
    .args(extra);
    ok(&mut run).1
}

#[test]
fn report_reads_well_in_headless_chromium_at_1280_and_800_px() {
    // The report's flame graph needs perf.
    if !chromium_installed() || !perf_available() {
        return;
    }
    let lab = Lab::new();
    let note = format!("note={HOSTILE}");
    let stderr = spin(
        &lab,
        &[
            "--name",
            HOSTILE,
            "--tag",
            &note,
            "--variant",
            "stock",
            "--profile",
            "--locks",
        ],
    );
    assert!(
        !stderr.contains("lock tracing unavailable"),
        "lock tracing is needed for the report's lock tables (root and a mounted tracefs; scripts/test mounts it): {stderr}"
    );
    spin(&lab, &[]);
    spin(&lab, &["--variant", "patched"]);
    let html = lab.dir.path().join("report.html");
    ok(lab.cmd().args([
        "report",
        "1",
        "3",
        "-o",
        html.to_str().unwrap(),
        "--title",
        HOSTILE,
    ]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<img src=x") && !page.contains("<script>alert"),
        "user strings must be escaped"
    );
    assert!(
        page.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "the hostile name is shown, escaped"
    );
    assert!(
        page.contains("<svg")
            && page.contains("Throughput X(N)")
            && page.contains("Comparison")
            && page.contains("History")
            && page.contains("Flame graph at N=2")
    );
    assert!(
        !page.contains("<link") && !page.contains("<script src") && !page.contains("src=\"http"),
        "self-contained"
    );

    // Without --title the page is named after what was measured and the variants compared.
    let plain = lab.dir.path().join("plain.html");
    ok(lab
        .cmd()
        .args(["report", "1", "3", "-o", plain.to_str().unwrap()]));
    let plain = std::fs::read_to_string(&plain).unwrap();
    assert!(
        plain.contains("<title>spin: stock vs patched</title>"),
        "{}",
        &plain[..plain.find("</title>").unwrap_or(0)]
    );

    for width in WIDTHS {
        check_report_at(&lab, &html, &page, width);
    }
}

/// The report at `width` px in headless Chromium: no console message, drawn, sections in order,
/// no sideways scroll, every chart legible, the flame graph fitting its frame.
fn check_report_at(lab: &Lab, html: &Path, page: &str, width: u32) {
    let png = artifacts().join(format!("report-{width}.png"));
    let _ = std::fs::remove_file(&png);
    let (_, log) = headless(
        lab,
        width,
        &[
            format!("--screenshot={}", png.display()),
            format!("file://{}", html.display()),
        ],
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "{width} px: console messages: {console:#?}"
    );
    assert!(png.exists(), "{width} px: no screenshot: {log}");
    assert_drawn(&png);

    let m = probe(lab, html, width);
    let sections: Vec<&str> = m["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        sections,
        ["comparison", "run-1", "run-3", "history"],
        "{width} px: the comparison comes first"
    );
    assert!(
        m["scroll_width"].as_f64() <= m["page_width"].as_f64(),
        "{width} px: the page scrolls sideways: {m}"
    );
    let charts = m["charts"].as_array().unwrap();
    assert!(charts.len() >= 8, "{width} px: charts {charts:#?}");
    for chart in charts {
        let title = chart["title"].as_str().unwrap();
        assert_eq!(
            chart["covered"], 0,
            "{width} px: a legend covers a line: {chart}"
        );
        assert_eq!(
            chart["legend_inside"], true,
            "{width} px: legend clipped: {chart}"
        );
        assert!(chart["plotted"].as_u64() > Some(0), "{width} px: {chart}");
        if title.contains("X(N)") || title.contains("S(N)") {
            assert_eq!(
                chart["x_ticks"],
                serde_json::json!(["1", "2"]),
                "{width} px: the N axis ticks at the measured N: {chart}"
            );
        }
    }
    let comparison = charts
        .iter()
        .find(|c| c["title"] == "Throughput X(N) of every run")
        .expect("the comparison's chart");
    let legend = comparison["legend"].to_string();
    assert!(
        legend.contains("run 1 · stock") && legend.contains("run 3 · patched"),
        "{legend}"
    );
    // Each run's explain pictures: the bars by part with their legend, the growth's waterfall
    // (every run here has two N), checked above like every chart.
    for title in [
        "Where the time per op goes, at each N",
        "What grew from N=1 to N=2",
    ] {
        let drawn = charts
            .iter()
            .filter(|c| c["title"].as_str().unwrap().starts_with(title))
            .count();
        assert_eq!(drawn, 2, "{width} px: `{title}` once per run: {charts:#?}");
    }
    let history = charts
        .iter()
        .find(|c| c["title"].as_str().unwrap().contains("by run"))
        .expect("the history's chart");
    assert_eq!(
        history["x_ticks"],
        serde_json::json!(["1", "2", "3"]),
        "the history ticks at each run: {history}"
    );
    assert_eq!(
        m["tables_without_rows"], 0,
        "{width} px: an empty table: {m}"
    );
    if page.contains("; 0 change points;") {
        let empty = m["empty_lines"].to_string();
        assert!(empty.contains("No change points"), "{width} px: {empty}");
    }
    let (flame, column) = (
        m["flame_width"].as_f64().unwrap(),
        m["column_width"].as_f64().unwrap(),
    );
    assert!(
        (flame - column).abs() <= 1.0,
        "{width} px: the flame graph's frame is {flame} px in a {column} px column"
    );
    let (svg, inner) = (
        m["flame_svg_width"].as_f64().unwrap(),
        m["flame_frame_inner"].as_f64().unwrap(),
    );
    assert!(
        (svg - inner).abs() <= 1.0,
        "{width} px: the flame graph is drawn {svg} px wide in its {inner} px frame"
    );
    assert!(
        m["flame_svg_height"].as_f64() <= m["flame_frame_height"].as_f64().map(|h| h + 1.0),
        "{width} px: the flame graph is cut off: {m}"
    );
}
