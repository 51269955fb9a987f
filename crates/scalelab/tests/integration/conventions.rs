//! The conventions of a command-line tool, through the real binary (issue 13): help that shows
//! what was written (`{n}`, unwrapped examples, a description for every argument, honest usage
//! lines, exit statuses), a closed pipe as a quiet end, exit statuses that tell (every trial
//! failed: 2; Ctrl-C: 130), options that do not apply refused, `-q` printing run ids, and
//! completions and a man page generated from the argument definitions.

use std::process::{Command, Stdio};

use crate::common::Lab;

/// Every subcommand a user sees, as clap lists them under `Commands:` in `scalelab --help`
/// (hidden ones are not listed): a new subcommand is checked without being added here.
fn subcommands(lab: &Lab) -> Vec<String> {
    let top = help_at(lab, &["--help"], 200);
    let names: Vec<String> = top
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    for expected in ["run", "explain", "bisect", "push", "serve", "help"] {
        assert!(
            names.iter().any(|n| n == expected),
            "`{expected}` not among {names:?}"
        );
    }
    names
}

/// `scalelab ARGS` on a terminal `columns` wide (clap reads COLUMNS when stdout is a pipe).
fn help_at(lab: &Lab, args: &[&str], columns: u32) -> String {
    let out = lab
        .cmd()
        .args(args)
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "scalelab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of the help's EXAMPLES block (up to the first blank line).
fn examples_block(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "EXAMPLES:")
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// One output seam (issue 30): every subcommand that prints results as JSON (`--json`) takes
/// `--format` with `json` among its values, and `--format json` prints what `--json` prints.
#[test]
fn every_command_with_json_output_takes_format_json_as_its_alias() {
    let lab = Lab::new();
    let mut with_json = Vec::new();
    for sub in subcommands(&lab) {
        let help = help_at(&lab, &[sub.as_str(), "--help"], 200);
        if !help.contains("--json") {
            continue;
        }
        with_json.push(sub.clone());
        let format = help
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--format <FORMAT>"))
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            format.contains("[possible values: text, json"),
            "`{sub}` has --json but no --format json: {format:?}"
        );
    }
    for expected in [
        "list", "ls", "show", "compare", "history", "explain", "profile", "doctor",
    ] {
        assert!(with_json.iter().any(|s| s == expected), "{with_json:?}");
    }
    let by_flag = lab.cmd().args(["list", "--json"]).output().unwrap();
    let by_format = lab
        .cmd()
        .args(["list", "--format", "json"])
        .output()
        .unwrap();
    assert!(by_flag.status.success() && by_format.status.success());
    assert_eq!(by_flag.stdout, by_format.stdout);
    let both = lab
        .cmd()
        .args(["list", "--json", "--format", "text"])
        .output()
        .unwrap();
    assert_eq!(
        both.status.code(),
        Some(2),
        "contradictory flags are refused"
    );
}

#[test]
fn help_shows_braces_n_literally_instead_of_a_line_break() {
    let lab = Lab::new();
    let run = help_at(&lab, &["run", "--help"], 100);
    assert!(run.contains("`{n}` is replaced"), "{run}");
    assert!(run.contains("make -j{n} vmlinux"), "{run}");
    let ab = help_at(&lab, &["ab", "--help"], 100);
    assert!(ab.contains("`{n}` is replaced"), "{ab}");
    assert!(ab.contains("--b 'CC=clang make -j{n}'"), "{ab}");
    let top = help_at(&lab, &["--help"], 100);
    assert!(top.contains("--cmd 'make -j{n} vmlinux'"), "{top}");
    assert!(
        !run.contains('\x1b'),
        "no escape sequence reaches a pipe: {run:?}"
    );
}

#[test]
fn examples_are_never_wrapped_at_80_or_200_columns() {
    let lab = Lab::new();
    let subcommands = subcommands(&lab);
    let mut pages = vec![vec!["--help"]];
    pages.extend(subcommands.iter().map(|s| vec![s.as_str(), "--help"]));
    let mut with_examples = 0;
    for page in &pages {
        let narrow = examples_block(&help_at(&lab, page, 80));
        let wide = examples_block(&help_at(&lab, page, 200));
        assert_eq!(narrow, wide, "{page:?}: the examples change with the width");
        for line in &narrow {
            assert!(line.chars().count() <= 80, "{page:?}: {line}");
        }
        with_examples += usize::from(!narrow.is_empty());
    }
    assert!(
        with_examples >= 12,
        "only {with_examples} pages have examples"
    );
}

#[test]
fn every_argument_has_a_description() {
    let lab = Lab::new();
    for sub in subcommands(&lab) {
        let help = help_at(&lab, &[&sub, "--help"], 200);
        let mut section = false;
        let lines: Vec<&str> = help.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.ends_with(':') && !line.starts_with(' ') {
                section = matches!(*line, "Arguments:" | "Options:");
                continue;
            }
            if !section || line.trim().is_empty() {
                continue;
            }
            let entry = line.trim_start();
            let is_entry = line.starts_with("  ")
                && !line.starts_with("     ")
                && (entry.starts_with('-') || entry.starts_with('<') || entry.starts_with('['));
            if !is_entry {
                continue;
            }
            // `  --json  Print …`, or the description on the next, deeper-indented line.
            let described = entry.contains("  ")
                || lines
                    .get(i + 1)
                    .is_some_and(|next| next.starts_with("          ") && !next.trim().is_empty());
            assert!(described, "`scalelab {sub}`: {entry} has no description");
        }
    }
    let list = help_at(&lab, &["list", "--help"], 200);
    assert!(
        list.lines().any(|l| l.contains("--json ")
            && l.ends_with("Print the results as JSON on stdout (the same as --format json)")),
        "{list}"
    );
}

#[test]
fn usage_lines_say_what_is_required() {
    let lab = Lab::new();
    for (sub, usage) in [
        ("model", "<RUN|--csv <FILE>>"),
        ("history", "<WORKLOAD|--csv <FILE>|--cmd <CMD>>"),
        ("profile", "<RUN|--perf-data <FILE>>"),
        ("run", "<WORKLOAD|--cmd <CMD>>"),
    ] {
        let help = help_at(&lab, &[sub, "--help"], 200);
        assert!(help.contains(usage), "{sub}: {help}");
        let out = lab.run(&[sub]);
        assert_eq!(out.status.code(), Some(2), "{sub} with neither");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(usage),
            "{sub}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn help_help_explains_help_and_help_command_is_command_help() {
    let lab = Lab::new();
    let help = help_at(&lab, &["help", "--help"], 100);
    assert!(help.contains("Usage: scalelab help"), "{help}");
    assert_eq!(
        help_at(&lab, &["help", "run"], 100),
        help_at(&lab, &["run", "--help"], 100)
    );
    assert_eq!(
        help_at(&lab, &["help"], 100),
        help_at(&lab, &["--help"], 100)
    );
    let out = lab.run(&["help", "no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn exit_statuses_are_documented_in_help() {
    let lab = Lab::new();
    let top = help_at(&lab, &["--help"], 100);
    for code in ["0 ", "1 ", "2 ", "130 "] {
        assert!(
            top.lines()
                .skip_while(|l| l.trim() != "EXIT STATUS:")
                .any(|l| l.trim_start().starts_with(code)),
            "exit {code}: {top}"
        );
    }
    for sub in ["compare", "ab", "history", "run"] {
        let help = help_at(&lab, &[sub, "--help"], 100);
        assert!(help.contains("EXIT STATUS:"), "{sub}: {help}");
    }
}

/// `scalelab ARGS` writing into a pipe whose reader is already gone.
fn into_closed_pipe(lab: &Lab, args: &[&str]) -> std::process::Output {
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    drop(reader);
    lab.cmd()
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_every_command_quietly_with_status_0() {
    let lab = Lab::new();
    lab.short_spin(&["--no-counters"]);
    let cases: &[&[&str]] = &[
        &["list"],
        &["list", "--json"],
        &["ls"],
        &["show", "last"],
        &["show", "last", "--json"],
        &["export", "last"],
        &["export", "last", "--format", "csv"],
        &["doctor"],
        &["history", "spin", "--at", "1"],
        &["ls", "--json"],
        &["completions", "bash"],
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--no-counters",
        ],
    ];
    for args in cases {
        let out = into_closed_pipe(&lab, args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
    let runs = lab.json(&["ls", "--json"]);
    assert_eq!(
        runs.as_array().unwrap().len(),
        2,
        "the run whose tables met a closed pipe is stored"
    );
}

/// Exit 2 with `error: …` after the lines of the failed trials, nothing on stdout.
fn fails_after_trials(lab: &Lab, args: &[&str]) -> String {
    let out = lab.run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed on stdout");
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{args:?}: no error line: {stderr}"))
        .to_string()
}

#[test]
fn a_run_in_which_every_trial_failed_exits_2_and_is_stored() {
    let lab = Lab::new();
    let err = fails_after_trials(
        &lab,
        &["run", "--cmd", "false", "--tasks", "1", "--runs", "2"],
    );
    assert!(err.contains("every trial"), "{err}");
    assert!(err.contains("show 1 --json"), "{err}");
    let run = &lab.json(&["ls", "--json"])[0];
    assert_eq!(run["trials_failed"], 2, "{run}");
    // -q still names the stored run.
    let out = lab.run(&["run", "--cmd", "false", "--tasks", "1", "--runs", "1", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2\n");
    // One failure among successes is a warning, not an error.
    lab.ok(&[
        "run",
        "--cmd",
        "test -e flag || { touch flag; exit 1; }",
        "--tasks",
        "1",
        "--runs",
        "2",
        "-q",
    ]);
    let err = fails_after_trials(
        &lab,
        &[
            "ab", "--a", "false", "--b", "true", "--tasks", "1", "--runs", "2",
        ],
    );
    assert!(
        err.contains("side A") && err.contains("every trial"),
        "{err}"
    );
}

#[test]
fn options_of_built_in_workloads_are_refused_with_cmd() {
    let lab = Lab::new();
    for (flag, value, advice) in [
        ("--duration", Some("1s"), "--runs"),
        ("--warmup", Some("1s"), "--prepare"),
        ("--mode", Some("processes"), "{n}"),
        ("--pin", Some("core"), "first N CPUs"),
        ("--workdir", Some("/tmp"), "cd DIR"),
        ("--no-counters", None, "counters"),
    ] {
        let mut args = vec!["run", "--cmd", "true", "--tasks", "1", flag];
        args.extend(value);
        let err = lab.fails(&args);
        assert!(
            err.contains(flag) && err.contains("--cmd") && err.contains(advice),
            "{flag}: {err}"
        );
    }
    // A command's options with a built-in workload (clap's `requires` alone let these through).
    for (args, flag) in [
        (&["run", "spin", "--ops", "5"][..], "--ops"),
        (
            &["run", "page_fault", "--ops-regex", "(\\d+)"],
            "--ops-regex",
        ),
        (&["run", "spin", "--prepare", "true"], "--prepare"),
        (&["run", "spin", "--cleanup", "true"], "--cleanup"),
        (&["run", "spin", "--step", "a=true"], "--step"),
        (&["run", "spin", "--timeout", "1s"], "--timeout"),
        (&["profile", "last", "--kallsyms", "k"], "--kallsyms"),
    ] {
        let err = lab.fails(args);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    for args in [
        &[
            "run",
            "--cmd",
            "true",
            "--ops",
            "1",
            "--ops-regex",
            "(\\d+)",
        ][..],
        &[
            "ab",
            "--a",
            "true",
            "--b",
            "true",
            "--ops",
            "1",
            "--ops-regex",
            "x",
        ],
        &["run", "spin", "--cmd", "true"],
        &["history", "--csv", "series.csv", "-p", "lines=8"],
        &["history", "--csv", "series.csv", "--variant", "a"],
        &["history", "--csv", "series.csv", "--at", "2"],
        &["profile", "--perf-data", "perf.data", "--at", "2"],
    ] {
        let out = lab.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?} was accepted");
    }
    assert!(!lab.db().exists(), "nothing ran");
}

#[test]
fn ab_counts_ops_as_run_does() {
    let lab = Lab::new();
    let ids = lab.ok(&[
        "ab",
        "--a",
        "echo done 7",
        "--b",
        "echo done 7",
        "--ops-regex",
        "done ([0-9]+)",
        "--tasks",
        "1",
        "--runs",
        "2",
        "-q",
    ]);
    let ids: Vec<&str> = ids.split_whitespace().collect();
    assert_eq!(ids, ["1", "2"], "-q prints both run ids, A then B");
    for id in ids {
        let export = lab.json(&["export", id]);
        for t in export["run"]["trials"].as_array().unwrap() {
            let ops: u64 = t["outcome"]["task_ops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .sum();
            assert_eq!(ops, 7, "{t}");
        }
    }
    lab.ok(&[
        "ab", "--a", "true", "--b", "true", "--ops", "3", "--tasks", "1", "--runs", "2", "-q",
    ]);
    let export = lab.json(&["export", "last"]);
    assert_eq!(
        export["run"]["meta"]["params"]["ops"], "3",
        "{}",
        export["run"]["meta"]
    );
}

#[test]
fn quiet_run_prints_only_its_run_id() {
    let lab = Lab::new();
    let first = lab.short_spin(&["--no-counters"]);
    let second = lab.short_spin(&["--no-counters"]);
    assert_eq!((first.as_str(), second.as_str()), ("1\n", "2\n"));
    assert_eq!(lab.json(&["show", "2", "--json"])["run"]["id"], 2);
}

#[test]
fn high_variance_advice_for_a_command_is_one_it_accepts() {
    let lab = Lab::new();
    // Every other trial sleeps: a coefficient of variation far past any threshold.
    let (out, err) = lab.ok_with_stderr(&[
        "run",
        "--cmd",
        "if [ -e slow ]; then rm slow; sleep 0.3; else touch slow; fi",
        "--tasks",
        "1",
        "--runs",
        "4",
    ]);
    let text = format!("{out}{err}");
    assert!(text.contains("(CV)"), "no variance warning: {text}");
    assert!(
        !text.contains("--duration"),
        "advice a command cannot take: {text}"
    );
    assert!(text.contains("--max-runs"), "{text}");
}

#[test]
fn completions_and_man_page_come_from_the_definitions() {
    let lab = Lab::new();
    let bash = lab.ok(&["completions", "bash"]);
    for sub in ["compare", "history", "completions", "--ops-regex"] {
        assert!(bash.contains(sub), "bash completion lacks {sub}");
    }
    assert!(bash.contains("complete -F"), "{bash}");
    assert!(
        lab.ok(&["completions", "zsh"])
            .starts_with("#compdef scalelab")
    );
    assert!(
        lab.ok(&["completions", "fish"])
            .contains("complete -c scalelab")
    );
    for shell in ["elvish", "powershell"] {
        assert!(
            lab.ok(&["completions", shell]).contains("scalelab"),
            "{shell}"
        );
    }
    let man = lab.ok(&["completions", "man"]);
    for section in [
        ".TH scalelab",
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH SUBCOMMANDS",
    ] {
        assert!(man.contains(section), "man page lacks {section}");
    }
    assert!(!man.contains('\x1b'), "no escape sequence in the man page");
    let page = lab.path("scalelab.1");
    std::fs::write(&page, &man).unwrap();
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output();
    match rendered {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("scalelab-run"), "{text}");
            assert!(text.contains("EXIT STATUS"), "{text}");
        }
        Ok(out) => panic!(
            "man -l failed to render the page: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("man is not installed ({e}): checked the roff sections only"),
    }
    // Every page, for a man directory: the top page's SUBCOMMANDS name them.
    let dir = lab.path("man1");
    std::fs::create_dir(&dir).unwrap();
    lab.ok(&["completions", "man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(dir.join("scalelab.1")).unwrap(),
        man
    );
    let run = std::fs::read_to_string(dir.join("scalelab-run.1")).unwrap();
    assert!(
        run.contains(".TH scalelab-run") && run.contains("ops\\-regex"),
        "{run}"
    );
    assert!(dir.join("scalelab-completions.1").exists());
    assert!(
        !dir.join("scalelab-__trial.1").exists(),
        "hidden commands have no page"
    );
    let err = lab.fails(&["completions", "bash", "--dir", dir.to_str().unwrap()]);
    assert!(err.contains("--dir applies to `man`"), "{err}");
}

#[test]
fn ctrl_c_on_a_terminal_clears_the_progress_line_and_exits_130() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("script (util-linux) is not installed: no terminal to press Ctrl-C on; skipped");
        return;
    }
    let lab = Lab::new();
    let scalelab = lab.cmd().get_program().to_owned();
    let typescript = lab.path("typescript");
    // `script` gives scalelab a terminal (so it draws its progress bar) and turns the ^C
    // written to its stdin into SIGINT for the foreground process group, as a keyboard does.
    let mut script = Command::new("script")
        .arg("-qfec")
        .arg(format!(
            "exec '{}' run spin --tasks 1 --runs 200 --duration 100ms --warmup 0 --no-counters",
            scalelab.to_string_lossy()
        ))
        .arg(&typescript)
        .env("SCALELAB_DB", lab.db())
        .env_remove("XDG_DATA_HOME")
        .current_dir(lab.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut keyboard = script.stdin.take().unwrap();
    let started = std::time::Instant::now();
    // The database may not be a database yet: poll without expecting success.
    let trials_ok = || {
        let out = lab.run(&["ls", "--json"]);
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        runs[0]["trials_ok"].as_u64().unwrap_or(0)
    };
    while trials_ok() < 2 {
        assert!(started.elapsed().as_secs() < 60, "no 2 trials within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::io::Write::write_all(&mut keyboard, b"\x03").unwrap();
    let status = loop {
        if let Some(status) = script.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed().as_secs() < 120,
            "scalelab still runs after Ctrl-C"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(keyboard);
    assert_eq!(status.code(), Some(130), "128 + SIGINT");
    let screen = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).to_string();
    let last_bar = screen.rfind(" trials, ").expect("a progress bar was drawn");
    let after = &screen[last_bar..];
    let cleared = after.find("\x1b[2K").expect("the bar is cleared");
    let error = after
        .find("error: interrupted")
        .unwrap_or_else(|| panic!("no interrupted error: {after:?}"));
    assert!(cleared < error, "{after:?}");
    assert_eq!(lab.json(&["ls", "--json"])[0]["status"], "interrupted");
}
