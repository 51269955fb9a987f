//! The team lab end to end, on a real PostgreSQL (a throwaway server, see `store::test_server`; these
//! tests print why and return when none can be started, and CI starts one): eight writers
//! killed at random moments lose no finished trial and leave no run `running`; `push` twice
//! copies each run once, and the copy exports as the original did; `history --host-class`
//! keeps machine classes apart; the dashboard renders in headless Chromium without console
//! errors, plots drawn, hostile names escaped, and its history pages give `--check`'s verdict.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Lab;
use crate::report::{chromium_installed, headless};
use crate::test_server;

const HOSTILE: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>&\"'";

/// `ls --json` of the store at `db`.
fn ls(lab: &Lab, db: &str) -> Vec<Value> {
    lab.json(&["--db", db, "ls", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

/// Eight `scalelab run` writers into one PostgreSQL, four of them killed (SIGKILL) at
/// pseudo-random moments: every trial a writer had committed before it died is there, no run
/// reads `running`, the killed runs read `incomplete`, and `ls` lists each run once.
#[test]
fn eight_writers_into_one_postgres_killed_at_random_lose_no_finished_trial() {
    let Some(url) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    const TRIALS: u64 = 8;
    let mut writers: Vec<Child> = (0..8)
        .map(|i| {
            lab.cmd()
                .args(["--db", &url, "run", "spin", "--tasks", "1", "--runs"])
                .arg(TRIALS.to_string())
                .args(["--duration", "200ms", "--warmup", "0", "--quiet", "--name"])
                .arg(format!("writer {i}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // A fixed linear congruential sequence: "random" moments, the same on every run of the test.
    let mut seed: u64 = 0x5eed_cafe;
    let mut next = || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        seed >> 33
    };
    let mut kills: Vec<(Duration, usize)> = (0..8)
        .filter(|i| i % 2 == 0)
        .map(|i| (Duration::from_millis(300 + next() % 1500), i))
        .collect();
    kills.sort();
    let start = Instant::now();
    let mut committed_before_kill = std::collections::HashMap::new();
    for (at, i) in &kills {
        if let Some(wait) = at.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let name = format!("writer {i}");
        let before = ls(&lab, &url)
            .into_iter()
            .find(|r| r["name"] == name.as_str())
            .map_or(0, |r| r["trials_ok"].as_u64().unwrap());
        writers[*i].kill().unwrap();
        committed_before_kill.insert(name, before);
    }
    for (i, w) in writers.into_iter().enumerate() {
        let out = w.wait_with_output().unwrap();
        if i % 2 == 1 {
            assert!(
                out.status.success(),
                "writer {i}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // The server drops a dead writer's connection, and with it the run's lock, at once; allow
    // it a moment on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(20);
    let runs = loop {
        let runs = ls(&lab, &url);
        if runs.iter().all(|r| r["status"] != "running") || Instant::now() > deadline {
            break runs;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), runs.len(), "a run listed twice: {runs:#?}");
    for r in &runs {
        let name = r["name"].as_str().unwrap();
        let killed = committed_before_kill.get(name);
        match killed {
            None => {
                assert_eq!(r["status"], "complete", "{r}");
                assert_eq!(r["trials_ok"], TRIALS, "{r}");
            }
            Some(&before) => {
                assert!(
                    r["status"] == "incomplete" || r["status"] == "complete",
                    "a killed writer's run: {r}"
                );
                let now = r["trials_ok"].as_u64().unwrap();
                assert!(
                    now >= before,
                    "{name}: {before} trials committed before the kill, {now} after: {r}"
                );
            }
        }
    }
    // Every surviving writer's run is there, and `ls` lists every run once; the kills did
    // land mid-run (a writer needs over 1.6 s of measuring windows alone).
    assert!(runs.len() >= 4, "{runs:#?}");
    let incomplete = runs.iter().filter(|r| r["status"] == "incomplete").count();
    assert!(incomplete >= 1, "no kill landed mid-run: {runs:#?}");
    eprintln!(
        "{} runs, {incomplete} incomplete; trials committed before each kill: {committed_before_kill:?}; after: {:?}",
        runs.len(),
        runs.iter()
            .map(|r| (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["trials_ok"].as_u64().unwrap_or(0),
                r["status"].as_str().unwrap_or_default().to_owned()
            ))
            .collect::<Vec<_>>()
    );
    let text = lab.ok(&["--db", &url, "ls"]);
    assert_eq!(
        text.lines().filter(|l| l.contains("spin")).count(),
        runs.len(),
        "{text}"
    );
    assert!(!text.contains("running"), "{text}");
}

/// Measured offline into SQLite, pushed twice: each run arrives once, and its export from
/// PostgreSQL is the export from SQLite (ids aside), which imports back into SQLite equal.
#[test]
fn push_twice_copies_each_run_once_and_the_round_trip_is_lossless() {
    let Some(url) = test_server::fresh_url() else {
        return;
    };
    let lab = Lab::new();
    lab.short_spin(&["--name", HOSTILE, "--tag", "kernel=6.8"]);
    lab.short_spin(&["--variant", "patched"]);
    let first = lab.json(&["push", "--to", &url, "--json"]);
    assert_eq!(first["copied"].as_array().unwrap().len(), 2, "{first}");
    let second = lab.json(&["push", "--to", &url, "--json"]);
    assert_eq!(second["copied"].as_array().unwrap().len(), 0, "{second}");
    assert_eq!(second["present"], first["copied"], "{second}");
    assert_eq!(ls(&lab, &url).len(), 2);
    // Another SQLite file is a push target too.
    let copy = lab.path("copy.db");
    let copy = copy.to_str().unwrap();
    lab.ok(&["push", "--to", copy]);
    let again = lab.ok(&["push", "--to", copy]);
    assert!(again.contains("0 runs copied, 2 already in"), "{again}");

    let strip = |mut v: Value| {
        let meta = &mut v["run"]["meta"];
        meta["id"] = Value::Null;
        meta["origin_id"] = Value::Null;
        v
    };
    for pair in first["copied"].as_array().unwrap() {
        let (from, to) = (pair["id"].to_string(), pair["target_id"].to_string());
        let sqlite = lab.json(&["export", &from]);
        let postgres = lab.json(&["--db", &url, "export", &to]);
        assert_eq!(postgres["run"]["meta"]["origin_id"].to_string(), from);
        assert_eq!(strip(sqlite.clone()), strip(postgres.clone()));
        // And back into a fresh SQLite file, equal again.
        let file = lab.path(&format!("pg-{to}.json"));
        std::fs::write(&file, postgres.to_string()).unwrap();
        let back = lab.path("back.db");
        let back = back.to_str().unwrap();
        lab.ok(&["--db", back, "import", file.to_str().unwrap()]);
        let reimported = lab.json(&["--db", back, "export", "last"]);
        assert_eq!(strip(reimported), strip(sqlite));
        // Importing the same run again stores nothing.
        let again = lab.ok(&["--db", back, "import", file.to_str().unwrap()]);
        assert!(again.contains("not imported again"), "{again}");
    }
    // The password of a URL is never printed, nor stored with the runs it measures.
    let secret = format!(
        "{}&password=hunter2",
        url.replace("postgres:///", "postgres://scalelab_test:hunter2@/")
    );
    lab.short_spin(&["--db", &secret]);
    let exported = lab.ok(&["--db", &url, "export", "last"]);
    assert!(!exported.contains("hunter2"), "{exported}");
    assert!(exported.contains("scalelab_test:***@"), "{exported}");
}

/// A copy of `export` (an exported run) as another run: a fresh UUID, its host and CPUs, and
/// every trial's ops scaled by `factor`.
fn variant_of(export: &Value, host: &str, cpus: u64, factor: f64, i: usize) -> Value {
    let mut v = export.clone();
    let meta = &mut v["run"]["meta"];
    meta["uuid"] = Value::String(format!("00000000-0000-4000-8000-{i:012}"));
    meta["env"]["hostname"] = Value::String(host.into());
    meta["env"]["online_cpus"] = cpus.into();
    meta["started_at"] = Value::String(format!("2026-01-{:02}T00:00:00Z", 1 + i % 28));
    meta["tags"] = serde_json::json!({});
    for t in v["run"]["trials"].as_array_mut().unwrap() {
        if let Some(ops) = t["outcome"]["task_ops"].as_array_mut() {
            for o in ops {
                *o = ((o.as_f64().unwrap() * factor).round() as u64).into();
            }
        }
    }
    v
}

/// A store seeded with two machine classes of the same workload: class A (4 CPUs) regressed
/// by 40% in its newest runs, class B (48 CPUs, another host) steady; besides the run measured
/// here (this machine's class), with a hostile name and tag.
fn seeded(lab: &Lab, db: &str) {
    lab.ok(&[
        "--db",
        db,
        "run",
        "spin",
        "--tasks",
        "1",
        "--runs",
        "3",
        "--duration",
        "50ms",
        "--warmup",
        "0",
        "--quiet",
        "--name",
        HOSTILE,
        "--tag",
        "team=<b>perf</b>",
    ]);
    let export = lab.json(&["--db", db, "export", "last"]);
    let mut files = Vec::new();
    for i in 0..24 {
        let (host, cpus, factor) = if i % 2 == 0 {
            ("vm-a", 4, if i >= 16 { 0.6 } else { 1.0 })
        } else {
            ("box-b", 48, 1.0)
        };
        let noise = 1.0 + (i % 3) as f64 * 0.003;
        let file = lab.path(&format!("seed-{i}.json"));
        std::fs::write(
            &file,
            variant_of(&export, host, cpus, factor * noise, i).to_string(),
        )
        .unwrap();
        files.push(file.to_str().unwrap().to_owned());
    }
    let mut args = vec!["--db", db, "import"];
    args.extend(files.iter().map(String::as_str));
    lab.ok(&args);
}

/// The store the dashboard test reads: PostgreSQL when a server can be started, else SQLite.
fn dashboard_store(lab: &Lab) -> String {
    test_server::fresh_url().unwrap_or_else(|| lab.db().to_str().unwrap().to_owned())
}

#[test]
fn history_by_host_class_never_mixes_classes_and_checks_each() {
    let lab = Lab::new();
    let db = dashboard_store(&lab);
    seeded(&lab, &db);
    let classes = lab.json_exit(
        1,
        &[
            "--db",
            &db,
            "history",
            "spin",
            "--host-class",
            "--check",
            "--json",
        ],
    );
    let classes = classes.as_array().unwrap();
    assert_eq!(classes.len(), 3, "{classes:#?}"); // the measured run's own machine, A and B
    let verdict = |cpus: &str| {
        classes
            .iter()
            .find(|c| {
                c["host_class"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("· {cpus} CPUs ·"))
            })
            .map(|c| c["history"]["newest_regressed"].as_bool().unwrap())
    };
    assert_eq!(verdict("4"), Some(true));
    assert_eq!(verdict("48"), Some(false));
    let one = lab.ok(&["--db", &db, "history", "spin", "--host", "box-b"]);
    assert!(one.contains("12"), "{one}");
    let text = lab.expect(
        1,
        &["--db", &db, "history", "spin", "--host-class", "--check"],
    );
    assert_eq!(text.matches("machine class: ").count(), 3, "{text}");
}

/// `history --json` and the dashboard's history pages build their series in one place
/// (`app::history`): on the same store, each machine class's page shows the same runs, change
/// points and verdict as the command's JSON, and the index lists the same classes.
#[test]
fn the_dashboards_history_pages_agree_with_history_json() {
    let lab = Lab::new();
    let db = lab.db().to_str().unwrap().to_owned();
    seeded(&lab, &db);
    let classes = lab.json(&["--db", &db, "history", "spin", "--host-class", "--json"]);
    let classes = classes.as_array().unwrap();
    assert_eq!(classes.len(), 3, "{classes:#?}");
    let server = Server::start(&lab, &db);
    let (status, index) = get(&server.base, "/history/spin");
    assert_eq!(status, 200, "{index}");
    let mut regressed = 0;
    for c in classes {
        let class = c["host_class"].as_str().unwrap();
        let h = &c["history"];
        let points = h["points"].as_array().unwrap();
        let changes = h["changes"].as_array().unwrap();
        let newest_regressed = h["newest_regressed"].as_bool().unwrap();
        regressed += usize::from(newest_regressed);
        let encoded: String = class
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        assert!(
            index.contains(&encoded),
            "{class} not in the index: {index}"
        );
        let (status, page) = get(&server.base, &format!("/history/spin?class={encoded}"));
        assert_eq!(status, 200, "{class}: {page}");
        let runs = points.len();
        let summary = format!(
            "{runs} {} of spin; {} change {};",
            if runs == 1 { "run" } else { "runs" },
            changes.len(),
            if changes.len() == 1 {
                "point"
            } else {
                "points"
            }
        );
        assert!(page.contains(&summary), "{class}: no `{summary}` in {page}");
        for change in changes {
            let row = format!("<tr><td>{}</td>", change["run"]);
            assert!(
                page.contains(&row),
                "{class}: no change row {row} in {page}"
            );
        }
        assert_eq!(
            page.contains("history --check: REGRESSED"),
            newest_regressed,
            "{class}: {page}"
        );
    }
    assert_eq!(regressed, 1, "{classes:#?}");
    assert_eq!(index.matches(">REGRESSED").count(), regressed, "{index}");
}

/// A screenshot shows a plot: coloured lines (blue-ish against the white page), as
/// `report::assert_drawn` checks, without its bar for how much of a long report is ink.
fn assert_plotted(png: &std::path::Path) {
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let colored = buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| channels >= 3 && (i32::from(p[2]) - i32::from(p[0])).abs() > 60)
        .count();
    assert!(
        colored > 500,
        "{}: no coloured plot lines ({colored} pixels)",
        png.display()
    );
}

/// `scalelab serve` on a port of its own, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Server {
    pub(crate) fn start(lab: &Lab, db: &str) -> Server {
        let mut child = lab
            .cmd()
            .args(["--db", db, "serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in: {line}"))
            .trim_end_matches('/')
            .to_owned();
        Server { child, base }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` by hand over TCP (no HTTP client crate in the tests): status and body.
pub(crate) fn get(base: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// An attribute value as a browser reads it.
fn unescape(href: &str) -> String {
    href.replace("&#x2f;", "/").replace("&amp;", "&")
}

#[test]
fn the_dashboard_renders_in_headless_chromium_escaped_with_plots_and_verdicts() {
    let lab = Lab::new();
    let db = dashboard_store(&lab);
    seeded(&lab, &db);
    let server = Server::start(&lab, &db);

    let (status, index) = get(&server.base, "/history/spin");
    assert_eq!(status, 200, "{index}");
    let hrefs: Vec<String> = index
        .split("href=\"")
        .skip(1)
        .filter_map(|h| h.split('"').next())
        .filter(|h| h.contains("class="))
        .map(unescape)
        .collect();
    assert_eq!(hrefs.len(), 3, "{index}");
    assert_eq!(index.matches(">REGRESSED").count(), 1, "{index}");
    let regressed_class = hrefs
        .iter()
        .find(|h| h.contains("%204%20CPUs"))
        .unwrap()
        .clone();
    let (status, page) = get(&server.base, &regressed_class);
    assert_eq!(status, 200);
    assert!(page.contains("history --check: REGRESSED"), "{page}");
    assert!(page.contains("<svg"), "no plot in the history page");

    let (status, runs) = get(&server.base, "/?tag=team%3D%3Cb%3Eperf%3C%2Fb%3E");
    assert_eq!(status, 200);
    assert!(runs.contains("1 of 1 matching runs"), "{runs}");
    for (path, expected) in [
        ("/nope".to_owned(), 404),
        ("/run/99999".to_owned(), 404),
        ("/run/x".to_owned(), 400),
    ] {
        assert_eq!(get(&server.base, &path).0, expected, "{path}");
    }
    // An N no run measured is an error naming those measured (was: an empty series, "no
    // regression").
    let (status, page) = get(&server.base, "/history/spin?at=0");
    assert_eq!(status, 400, "{page}");
    assert!(
        page.contains("measured N=0; these runs measured N = "),
        "{page}"
    );

    // Drawn in Chromium where it is installed (the checks above and below need no browser).
    let browser = chromium_installed();
    let pages = [
        ("/".to_owned(), "Runs", false),
        ("/run/1".to_owned(), "Run 1", true),
        ("/compare/1/2".to_owned(), "Run 2 against run 1", true),
        ("/history/spin".to_owned(), "History of spin", false),
        (regressed_class, "History of spin", true),
    ];
    for (i, (path, heading, plotted)) in pages.iter().enumerate().filter(|_| browser) {
        let url = format!("{}{path}", server.base);
        let (dom, log) = headless(&lab, 1280, &["--dump-dom".into(), url.clone()]);
        let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
        assert!(console.is_empty(), "{path}: console messages: {console:#?}");
        assert!(dom.contains(heading), "{path}: no {heading}: {dom}");
        assert!(
            !dom.contains("<img src=x"),
            "{path}: a hostile name is markup"
        );
        assert!(
            !dom.contains("<b>perf</b>"),
            "{path}: a hostile tag is markup"
        );
        if *plotted {
            assert!(dom.contains("<svg"), "{path}: no plot");
            let png = lab.path(&format!("dashboard-{i}.png"));
            headless(
                &lab,
                1280,
                &[format!("--screenshot={}", png.display()), url.clone()],
            );
            assert_plotted(&png);
        }
    }
    // The runs page shows the hostile name as text.
    let (_, runs) = get(&server.base, "/");
    assert!(
        runs.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{runs}"
    );
    // The comparison crosses machine classes when run 1 and a seeded run differ in CPUs.
    let (_, cross) = get(&server.base, "/compare/1/3");
    assert!(cross.contains("different machine classes"), "{cross}");
}

/// No page writes: a POST is refused and the store is unchanged.
#[test]
fn the_dashboard_refuses_to_write() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let db = lab.db().to_str().unwrap().to_owned();
    let server = Server::start(&lab, &db);
    use std::io::{Read, Write};
    let addr = server.base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 405"), "{text}");
    let (_, page) = get(&server.base, "/");
    assert!(page.contains("1 of 1 matching runs"), "{page}");
    let csp = {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut t = String::new();
        s.read_to_string(&mut t).unwrap();
        t
    };
    assert!(
        csp.contains("content-security-policy: default-src 'none'"),
        "{csp}"
    );
}
