//! The HTML report end to end: real runs, a hostile run name, a history, rendered by headless
//! Chromium (Debian's `chromium`, installed by `.ci/run`): no console errors, plots drawn (the
//! screenshot is far from blank). The screenshot is kept in `target/test-artifacts/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Lab;

const HOSTILE: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>&\"'";

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn report_renders_escaped_and_drawn_in_headless_chromium() {
    let lab = Lab::new();
    for k in 0..3 {
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
        ]);
        if k == 0 {
            run.args(["--name", HOSTILE, "--tag", &format!("note={HOSTILE}")]);
        }
        ok(&mut run);
    }
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
            && page.contains("Comparisons")
            && page.contains("History")
    );
    assert!(
        !page.contains("http://") || !page.contains("src=\"http"),
        "no external resources"
    );
    assert!(
        !page.contains("<link") && !page.contains("<script src"),
        "self-contained"
    );

    let Some(chromium) = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        panic!(
            "headless Chromium is needed for this test: apt-get install chromium (.ci/run does it)"
        );
    };
    let png = artifacts().join("report.png");
    let _ = std::fs::remove_file(&png);
    let profile = lab.dir.path().join("chromium-profile");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(png.exists(), "no screenshot: {log}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
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
        "screenshot is nearly blank: {non_white} of {pixels} pixels"
    );
    assert!(
        colored > 500,
        "no coloured plot lines in the screenshot ({colored} pixels)"
    );
}
