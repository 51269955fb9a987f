//! Drives the real `scalelab` binary through its output choices (issue 13): colour
//! (`--color`, `NO_COLOR`; never an escape in a pipe or in JSON unless asked), tables that fit
//! `COLUMNS` and say what they left out, `ls` aligned with long command lines, Markdown and CSV
//! (`--format`, `--json` kept as an alias) and `report -o -`.

use std::process::Output;

use unicode_width::UnicodeWidthStr;

use crate::common::{Lab, parse};
use crate::compare::stock_and_patched;

impl Lab {
    /// scalelab with extra environment variables.
    fn run_env(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut c = self.cmd();
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(args).output().unwrap()
    }

    /// stdout of scalelab with COLUMNS=`columns`, expecting exit status `code`.
    fn at_columns(&self, columns: &str, code: i32, args: &[&str]) -> String {
        let out = self.run_env(&[("COLUMNS", columns)], args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// `text` without its colour escapes (`ESC [ … letter`).
fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for ch in text.chars() {
        match (in_escape, ch) {
            (false, '\x1b') => in_escape = true,
            (true, c) if c.is_ascii_alphabetic() => in_escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

/// The lines of the boxed tables in `text`.
fn table_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        .collect()
}

#[test]
fn color_always_paints_verdicts_and_a_pipe_or_json_gets_no_escape() {
    let lab = Lab::new();
    let (a, b) = stock_and_patched(&lab);
    let piped = lab.expect(1, &["compare", &a, &b]);
    assert!(!piped.contains('\x1b'), "auto into a pipe: {piped:?}");

    let coloured = lab.expect(1, &["compare", &a, &b, "--color", "always"]);
    assert!(
        coloured.contains("\x1b[31mREGRESSED\x1b[0m"),
        "{coloured:?}"
    );
    assert!(coloured.contains("\x1b[33mwarning:\x1b[0m"), "{coloured:?}");
    // comfy-table paints the verdict cell after measuring it: the table keeps its width.
    let width = |t: &str| table_lines(t).iter().map(|l| l.width()).max().unwrap();
    assert_eq!(strip_escapes(&coloured), piped);
    assert_eq!(width(&strip_escapes(&coloured)), width(&piped));

    // The flag wins over NO_COLOR (no-color.org: an explicit option may override it).
    let out = lab.run_env(
        &[("NO_COLOR", "1")],
        &["compare", &a, &b, "--color", "always"],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\x1b[31m"));
    let never = lab.expect(1, &["compare", &a, &b, "--color", "never"]);
    assert_eq!(never, piped);

    let json = lab.expect(1, &["compare", &a, &b, "--json", "--color", "always"]);
    assert!(!json.contains('\x1b'), "JSON never carries colour");
    parse(&["compare", "--json"], &json);

    let err = lab.run(&["show", "no-such-run", "--color", "always"]);
    assert_eq!(err.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&err.stderr).starts_with("\x1b[1m\x1b[31merror:\x1b[0m "),
        "{:?}",
        String::from_utf8_lossy(&err.stderr)
    );
    let plain = lab.run(&["show", "no-such-run"]);
    assert!(String::from_utf8_lossy(&plain.stderr).starts_with("error: "));
}

#[test]
fn tables_fit_80_columns_say_what_they_left_out_and_keep_it_all_at_200() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let narrow = lab.at_columns("80", 0, &["show", "last"]);
    for line in table_lines(&narrow) {
        assert!(line.width() <= 80, "{} columns:\n{narrow}", line.width());
    }
    assert!(
        narrow.contains("columns left out at 80 columns: ") && narrow.contains("cyc/op"),
        "{narrow}"
    );
    assert!(narrow.contains("(--wide or COLUMNS="), "{narrow}");
    assert!(!table_lines(&narrow).iter().any(|l| l.contains("cyc/op")));

    let full = lab.at_columns("200", 0, &["show", "last"]);
    assert!(!full.contains("left out"), "{full}");
    assert!(full.contains("cyc/op") && full.contains("ins/op"), "{full}");
    assert_eq!(lab.ok(&["show", "last"]), full, "a pipe keeps every column");
    assert_eq!(lab.at_columns("80", 0, &["show", "last", "--wide"]), full);

    let (a, b) = stock_and_patched(&lab);
    let compared = lab.at_columns("80", 1, &["compare", &a, &b]);
    for line in table_lines(&compared) {
        assert!(line.width() <= 80, "{compared}");
    }
    assert!(compared.contains("REGRESSED"), "{compared}");
    assert!(
        compared.contains("columns left out at 80 columns:"),
        "{compared}"
    );
}

/// The profile and lock tables fit 80 columns too: cost columns and the spread of waits go
/// first, then a long function or caller name is cut with `…`, and a line says so; a pipe
/// keeps them whole.
#[test]
fn profile_and_lock_tables_fit_80_columns() {
    let lab = Lab::new();
    let out = lab.run(&[
        "run",
        "futex_mutex",
        "-p",
        "shared=true",
        "--tasks",
        "2",
        "--runs",
        "1",
        "--duration",
        "200ms",
        "--warmup",
        "0",
        "--profile",
        "--locks=user",
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (what, args) in [
        ("profile", &["profile", "last", "--at", "2"][..]),
        ("locks", &["locks", "last", "--at", "2"][..]),
    ] {
        let perf = std::process::Command::new("perf")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if what == "profile" && !perf {
            eprintln!(
                "skipped the profile table: `perf` is not installed (apt-get install linux-perf)"
            );
            continue;
        }
        if what == "locks" && stderr.contains("lock tracing unavailable") {
            eprintln!("skipped the lock table: {stderr}");
            continue;
        }
        let narrow = lab.at_columns("80", 0, args);
        assert!(!table_lines(&narrow).is_empty(), "{what}: {narrow}");
        for line in table_lines(&narrow) {
            assert!(
                line.width() <= 80,
                "{what}: {} columns:\n{narrow}",
                line.width()
            );
        }
        assert!(
            narrow.contains("columns left out at 80 columns: "),
            "{what}: {narrow}"
        );
        let piped = lab.ok(args);
        assert!(!piped.contains("left out"), "{what}: {piped}");
    }
}

#[test]
fn ls_keeps_columns_aligned_with_long_command_lines() {
    let lab = Lab::new();
    lab.short_spin(&["--variant", "stock"]);
    let long = format!("true {}", "x".repeat(150));
    lab.ok(&[
        "run", "--cmd", &long, "--tasks", "1", "--runs", "1", "--quiet",
    ]);
    lab.short_spin(&[]);

    let full = lab.ok(&["ls"]);
    assert!(full.contains(&long), "{full}");
    let narrow = lab.at_columns("80", 0, &["ls"]);
    assert!(narrow.lines().all(|l| l.width() <= 80), "{narrow}");
    assert!(narrow.contains("cmd cmd=true"), "{narrow}");
    assert!(narrow.contains('…') && !narrow.contains(&long), "{narrow}");
    assert!(narrow.contains("variant=stock"), "{narrow}");
    for text in [&full, &narrow] {
        let header = text.lines().next().unwrap();
        let n_at = header[..header.find("  N  ").unwrap() + 2].width();
        for line in text.lines().skip(1) {
            let mut col = 0;
            let mut chars = line.chars();
            while col < n_at {
                col += unicode_width::UnicodeWidthChar::width(chars.next().unwrap()).unwrap_or(0);
            }
            assert_eq!(chars.next(), Some('1'), "N column misaligned:\n{text}");
        }
    }
    let json = lab.json(&["ls", "--json"]);
    assert!(
        json.to_string().contains(&long),
        "--json has the full command line"
    );
}

#[test]
fn markdown_tables_for_show_export_and_compare() {
    let lab = Lab::new();
    let (a, b) = stock_and_patched(&lab);
    let md = lab.expect(1, &["compare", &a, &b, "--format", "markdown"]);
    insta::assert_snapshot!("compare_markdown", md);

    lab.short_spin(&[]);
    let shown = lab.ok(&["show", "last", "--format", "markdown"]);
    assert!(shown.starts_with("run 2 · spin · "), "{shown}");
    assert!(shown.contains("\n| N | trials | ops/s |"), "{shown}");
    assert!(shown.contains("\n|--:|--:|--:|"), "{shown}");
    assert!(!shown.contains('┌'), "{shown}");
    assert_eq!(lab.ok(&["export", "last", "--format", "markdown"]), shown);
}

#[test]
fn compare_csv_has_one_row_per_n_and_json_stays_an_alias() {
    let lab = Lab::new();
    let (a, b) = stock_and_patched(&lab);
    let csv = lab.expect(1, &["compare", &a, &b, "--format", "csv"]);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4, "a header and N=1,2,4:\n{csv}");
    assert_eq!(rows[0][0], "n");
    let verdict = rows[0].iter().position(|h| *h == "verdict").unwrap();
    let change = rows[0].iter().position(|h| *h == "change").unwrap();
    assert_eq!((rows[2][0], rows[2][verdict]), ("2", "regressed"), "{csv}");
    let at2: f64 = rows[2][change].parse().unwrap();
    assert!((at2 + 0.03).abs() < 0.005, "N=2 is 3% slower: {csv}");

    let alias = lab.expect(1, &["compare", &a, &b, "--json"]);
    assert_eq!(
        alias,
        lab.expect(1, &["compare", &a, &b, "--format", "json"])
    );
    lab.fails(&["compare", &a, &b, "--json", "--format", "csv"]);
    lab.fails(&["show", "last", "--format", "csv"]);
}

/// The output seam (issue 30): the commands whose results are one table offer csv, those
/// whose results are a report of tables and sentences offer markdown; each --help lists only
/// its own formats, and a format a command does not offer is refused.
#[test]
fn history_and_ls_print_csv_and_markdown_and_explain_prints_markdown() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    lab.short_spin(&["--name", "two, with a comma"]);
    let csv = lab.ok(&["ls", "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "id,started,status,workload,N,trials,name/variant/tags"
    );
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows[2].starts_with("2,") && rows[2].ends_with(",\"\"\"two, with a comma\"\"\""),
        "{csv}"
    );
    let md = lab.ok(&["ls", "--format", "markdown"]);
    assert!(md.starts_with("| id | started |"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 4, "{md}");

    let history = lab.ok(&["history", "spin", "--format", "csv"]);
    let rows: Vec<&str> = history.lines().collect();
    assert_eq!(
        rows[0], "run,started,value,variant,label,change,p",
        "{history}"
    );
    assert_eq!(rows.len(), 3, "one row per run, no sentence:\n{history}");
    let value: f64 = rows[1].split(',').nth(2).unwrap().parse().unwrap();
    assert!(value > 0.0, "a plain number: {history}");
    let history_md = lab.ok(&["history", "spin", "--format", "markdown"]);
    assert!(
        history_md.contains("| run | started | value |"),
        "{history_md}"
    );
    assert!(history_md.contains("too few runs"), "{history_md}");

    let explained = lab.ok(&["explain", "last", "--format", "markdown"]);
    assert!(explained.contains("\n|"), "pipe tables:\n{explained}");
    assert!(
        !explained.contains('┌') && !explained.contains('\x1b'),
        "{explained}"
    );
    assert_eq!(
        lab.ok(&["explain", "last", "--json"]),
        lab.ok(&["explain", "last", "--format", "json"])
    );
    let refused = lab.fails(&["explain", "last", "--format", "csv"]);
    assert!(
        refused.contains("[possible values: text, json, markdown]"),
        "{refused}"
    );
    let help = lab.ok(&["history", "--help"]);
    assert!(
        help.contains("csv (the table, for a spreadsheet or a"),
        "{help}"
    );
}

#[test]
fn report_to_stdout_with_dash() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let (page, stderr) = lab.ok_with_stderr(&["report", "last", "-o", "-"]);
    assert!(
        page.trim_start().starts_with("<!DOCTYPE html>"),
        "{}",
        &page[..page.len().min(200)]
    );
    assert!(page.trim_end().ends_with("</html>"));
    assert!(stderr.contains("wrote the page to stdout"), "{stderr}");
    assert!(!lab.path("-").exists(), "no file named `-`");
}

/// `scalelab ARGS` on a pseudo-terminal of 80 columns (util-linux `script`, in every Debian),
/// with `env` set: what a person at a terminal sees.
fn on_a_terminal(lab: &Lab, env: &[(&str, &str)], args: &str) -> String {
    let out = terminal_output(lab, env, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// As [`on_a_terminal`], whatever the exit status.
fn terminal_output(lab: &Lab, env: &[(&str, &str)], args: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("scalelab");
    let mut c = std::process::Command::new("script");
    c.args([
        "-qec",
        &format!("stty rows 24 cols 80; {} {args}", bin.display()),
        "/dev/null",
    ])
    .env("SCALELAB_DB", lab.db())
    .env_remove("COLUMNS")
    .env_remove("NO_COLOR")
    .env("TERM", "xterm")
    .current_dir(lab.dir.path())
    .stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .expect("`script` (util-linux/bsdutils) runs a command on a pseudo-terminal: install it")
}

/// clap's own usage errors follow `--color` too (they come before it is parsed): on a
/// terminal they are coloured unless `--color never` or `NO_COLOR`.
#[test]
fn usage_errors_follow_the_color_flag() {
    let lab = Lab::new();
    let coloured = terminal_output(&lab, &[], "run --bogus");
    assert_eq!(coloured.status.code(), Some(2));
    let coloured = String::from_utf8_lossy(&coloured.stdout).into_owned();
    assert!(
        coloured.contains("--bogus") && coloured.contains('\x1b'),
        "{coloured:?}"
    );
    for (env, args) in [
        (&[][..], "--color never run --bogus"),
        (&[][..], "run --bogus --color=never"),
        (&[("NO_COLOR", "1")][..], "run --bogus"),
    ] {
        let out = terminal_output(&lab, env, args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("--bogus") && !text.contains('\x1b'),
            "{args}: {text:?}"
        );
    }
}

#[test]
fn on_a_terminal_auto_colours_unless_no_color_and_fits_its_width() {
    let lab = Lab::new();
    lab.short_spin(&[]);
    let seen = on_a_terminal(&lab, &[], "show last");
    assert!(seen.contains("\x1b[33mwarning:\x1b[0m"), "{seen:?}");
    assert!(seen.contains("columns left out at 80 columns: "), "{seen}");

    let no_color = on_a_terminal(&lab, &[("NO_COLOR", "1")], "show last");
    assert!(!no_color.contains('\x1b'), "NO_COLOR: {no_color:?}");
    assert!(
        no_color.contains("columns left out at 80 columns: "),
        "{no_color}"
    );
    let empty = on_a_terminal(&lab, &[("NO_COLOR", "")], "show last");
    assert!(
        empty.contains("\x1b[33m"),
        "an empty NO_COLOR counts as unset: {empty:?}"
    );

    let wide = on_a_terminal(&lab, &[], "show last --wide --color never");
    assert!(
        !wide.contains("left out") && !wide.contains('\x1b'),
        "{wide}"
    );
}
