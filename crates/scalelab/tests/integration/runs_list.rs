//! The dashboard's runs page tells command runs apart (issue 53): over a store of real command
//! runs — dbench twice and pgbench against a PostgreSQL its `--server` starts (zstd where no
//! PostgreSQL can be made, as `system_under_test` says why) — each row shows its command line
//! (cut, the whole on hover), the filter by command text (`/?cmd=`, or a program's name typed
//! into the filter's box) keeps one command's runs, a row's
//! history link opens its command's series, a row compares with its series' previous run, and
//! in headless Chromium, checking two rows with the mouse and pressing compare opens their
//! comparison — with no console message on any of these pages.

use serde_json::Value;

use crate::browser::Browser;
use crate::common::Lab;
use crate::real_programs::installed;
use crate::report::chromium_installed;
use crate::system_under_test::Postgres;
use crate::team_lab::{Server, get};

/// One quiet trial of `cmd` at N=1, plus `extra`; its run id.
fn command_run(lab: &Lab, cmd: &str, extra: &[&str]) -> i64 {
    let mut args = vec![
        "run", "--cmd", cmd, "--tasks", "1", "--runs", "1", "--quiet",
    ];
    args.extend_from_slice(extra);
    lab.ok(&args);
    let runs = lab.json(&["ls", "--json"]);
    runs.as_array().unwrap().last().unwrap()["id"]
        .as_i64()
        .unwrap()
}

/// The second command: pgbench with the server it starts, or zstd where there is none.
fn second_run(lab: &Lab) -> (i64, String) {
    if let Some(pg) = Postgres::prepare(lab) {
        let (server, ready) = (pg.server_command(), pg.ready_command());
        let cmd = pg.pgbench();
        let id = command_run(lab, &cmd, &["--server", &server, "--ready", &ready]);
        return (id, cmd);
    }
    let input = lab.path("zstd-input");
    let text: String = (0..200_000)
        .map(|i| format!("{i} {}\n", i * 7919 % 1000))
        .collect();
    std::fs::write(&input, text).unwrap();
    let cmd = format!(
        "zstd -q -f -T{{n}} -19 {} -o {}.zst",
        input.display(),
        input.display()
    );
    (command_run(lab, &cmd, &[]), cmd)
}

/// The runs table's command cells, as the browser shows them: (run, cell text, hover text).
fn command_cells(browser: &mut Browser) -> Vec<(i64, String, String)> {
    let cells = browser.eval(
        "[...document.querySelectorAll('#runs tr')].slice(1).map(tr => { \
           const c = tr.querySelector('code.command'); \
           return [Number(tr.querySelector('input[name=run]').value), \
                   c ? c.textContent : '', c ? c.title : '']; })",
    );
    cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c[0].as_i64().unwrap(),
                c[1].as_str().unwrap().to_owned(),
                c[2].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn heading(browser: &mut Browser) -> String {
    browser
        .eval("document.querySelector('h1').textContent")
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_runs_page_names_commands_filters_by_them_and_compares_two_checked_rows() {
    let loadfile = "/usr/share/dbench/client.txt";
    if !installed("dbench") {
        return;
    }
    let lab = Lab::new();
    let dir = lab.path("dbench");
    std::fs::create_dir_all(&dir).unwrap();
    let dbench = format!("dbench -t 1 -D {} -c {loadfile} {{n}}", dir.display());
    let first = command_run(&lab, &dbench, &[]);
    let (other, other_cmd) = second_run(&lab);
    println!("the second command: {other_cmd}");
    let again = command_run(&lab, &dbench, &[]);

    let db = lab.db().to_str().unwrap().to_owned();
    let server = Server::start(&lab, &db);
    // The filter by command text, as the form sends it.
    let (status, page) = get(&server.base, "/?cmd=dbench");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("2 of 2 matching runs"), "{page}");
    assert!(page.contains("name=\"cmd\" value=\"dbench\""), "{page}");
    // The predecessor of the same command, not the run just before.
    assert!(
        page.contains(&format!("href=\"&#x2f;compare&#x2f;{first}&#x2f;{again}\"")),
        "{page}"
    );

    // What the checkboxes send: two runs redirect to their comparison, one is refused.
    let (status, _) = get(&server.base, &format!("/compare?run={other}&run={first}"));
    assert_eq!(status, 303);
    let (status, page) = get(&server.base, &format!("/compare?run={first}"));
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("check exactly two runs"), "{page}");

    if !chromium_installed() {
        return;
    }
    let mut browser = Browser::start(lab.dir.path());
    browser.open(&format!("{}/", server.base));
    let cells = command_cells(&mut browser);
    let ids: Vec<i64> = cells.iter().map(|c| c.0).collect();
    assert_eq!(ids, [again, other, first], "newest first: {cells:?}");
    for (id, shown, whole) in &cells {
        let cmd = if *id == other { &other_cmd } else { &dbench };
        assert_eq!(whole, cmd, "run {id}: the whole command on hover");
        assert!(
            shown == cmd || (shown.ends_with('…') && cmd.starts_with(shown.trim_end_matches('…'))),
            "run {id}: {shown:?} is not {cmd:?} cut"
        );
    }

    // Typed into the filter's command box, a program's name keeps that command's runs.
    let program = other_cmd
        .split(' ')
        .next()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    browser.click("input[name=cmd]");
    browser.type_text(program);
    browser.click("form[action=\"/\"] button[type=submit]");
    browser.wait_for("the filtered runs", |h| h.contains("cmd="));
    let kept = command_cells(&mut browser);
    assert_eq!(
        kept.iter().map(|c| c.0).collect::<Vec<_>>(),
        [other],
        "{kept:?}"
    );

    // A row's history link opens its command's series, named by its command line.
    browser.open(&format!("{}/", server.base));
    browser.click(&format!(
        "#runs tr:has(input[value=\"{again}\"]) a[href^=\"/history/\"]"
    ));
    let href = browser.wait_for("the history page", |h| h.contains("/history/cmd?"));
    assert!(href.contains("p=cmd%3Ddbench"), "{href}");
    assert_eq!(heading(&mut browser), format!("History of {dbench}"));

    // Two rows checked with the mouse, then compare: the older run is the baseline.
    browser.open(&format!("{}/", server.base));
    browser.click(&format!("input[name=run][value=\"{other}\"]"));
    browser.click(&format!("input[name=run][value=\"{first}\"]"));
    browser.click("#compare-checked");
    let href = browser.wait_for("the comparison", |h| h.contains("/compare/"));
    assert!(
        href.ends_with(&format!("/compare/{first}/{other}")),
        "{href}"
    );
    assert_eq!(
        heading(&mut browser),
        format!("Run {other} against run {first}")
    );
    let text = browser.eval("document.body.innerText");
    let text = text.as_str().unwrap();
    for cmd in [&dbench, &other_cmd] {
        assert!(
            text.contains(cmd.as_str()),
            "{cmd} not on the comparison: {text}"
        );
    }
    let console: Vec<&Value> = browser.console.iter().collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
}
