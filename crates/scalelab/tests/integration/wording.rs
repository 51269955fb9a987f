//! Issue 13's wording and logic slips through the real CLI: a command run's header and per-task
//! column, `history` of commands keyed by the command line (and `ls --cmd`), `model` and task
//! counts past the CPUs, and `doctor` naming each check once.

use serde_json::{Value, json};

use crate::common::Lab;

/// One quiet trial of the command `cmd` at each of `tasks`.
fn command_run(lab: &Lab, cmd: &str, tasks: &str) {
    lab.ok(&[
        "run", "--cmd", cmd, "--tasks", tasks, "--runs", "1", "--quiet",
    ]);
}

fn ids(value: &Value, key: &str) -> Vec<i64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[key].as_i64().unwrap())
        .collect()
}

/// Issue 13: a `--cmd` run's header said `threads, pin auto` (meaningless for a command) and
/// its `task min..max` showed the whole command's rate.
#[test]
fn a_command_run_is_headed_as_a_command_without_a_per_task_spread() {
    let lab = Lab::new();
    command_run(&lab, "true", "1,2");
    let shown = lab.ok(&["show", "last"]);
    let header = shown.lines().next().unwrap();
    assert!(
        header.contains("cmd cmd=true · command, affinity N CPUs · 1 trial per point"),
        "{header}"
    );
    assert!(
        !header.contains("threads") && !header.contains("pin"),
        "{header}"
    );
    let json = lab.json(&["show", "last", "--json"]);
    for p in json["points"].as_array().unwrap() {
        assert!(p["task_min"].is_null() && p["task_max"].is_null(), "{p}");
        assert!(p["ops_per_sec_per_task"].is_number(), "{p}");
    }
}

/// Issue 13: `history cmd` mixed unrelated commands in one series. A command's series is keyed
/// by its command line; without one, history refuses and lists the commands stored.
#[test]
fn history_of_commands_is_keyed_by_the_command_line() {
    let lab = Lab::new();
    command_run(&lab, "true", "1");
    command_run(&lab, "sleep 0", "1");
    command_run(&lab, "true", "1");
    let err = lab.fails(&["history", "cmd"]);
    for needle in ["2 commands", "true", "sleep 0", "--cmd"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    let h = lab.json(&["history", "cmd", "--cmd", "true", "--json"]);
    assert_eq!(ids(&h["points"], "run"), [1, 3], "{h}");
    assert_eq!(h["params"]["cmd"], "true", "{h}");
    let h = lab.json(&["history", "--cmd", "sleep 0", "--json"]);
    assert_eq!(ids(&h["points"], "run"), [2], "{h}");
    let h = lab.json(&["history", "cmd", "-p", "cmd=sleep 0", "--json"]);
    assert_eq!(ids(&h["points"], "run"), [2], "{h}");
    let err = lab.fails(&["history", "cmd", "--cmd", "false"]);
    assert!(err.contains("no stored runs"), "{err}");
    // ls filters by the command line too.
    assert_eq!(
        ids(&lab.json(&["ls", "--cmd", "sleep", "--json"]), "id"),
        [2]
    );
    assert_eq!(
        ids(&lab.json(&["ls", "--cmd", "true", "--json"]), "id"),
        [1, 3]
    );
    let table = lab.ok(&["ls", "--cmd", "sleep"]);
    assert!(
        table.contains("sleep 0") && !table.contains("cmd=true"),
        "{table}"
    );
}

/// A stored command run remade as a sweep over N=1,2,3,4,8 on a 4-CPU machine, throughput
/// following the USL, imported: the model's input with one N past the CPUs.
fn oversubscribed_run(lab: &Lab) {
    command_run(lab, "true", "1");
    let mut export: Value = serde_json::from_str(&lab.ok(&["export", "last"])).unwrap();
    let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.01 * n * (n - 1.0));
    let template = export["run"]["trials"][0].clone();
    let mut trials = Vec::new();
    for n in [1u32, 2, 3, 4, 8] {
        for (index, wobble) in [0.99, 1.01].into_iter().enumerate() {
            let mut t = template.clone();
            t["n"] = json!(n);
            t["index"] = json!(index);
            let m = &mut t["outcome"];
            m["window"] = json!(1_000_000_000u64);
            m["task_ops"] = json!([(usl(f64::from(n)) * wobble).round() as u64]);
            trials.push(t);
        }
    }
    let run = &mut export["run"];
    run["trials"] = json!(trials);
    run["meta"]["points"] = json!([1, 2, 3, 4, 8]);
    run["meta"]["runs"] = json!(2);
    run["meta"]["env"]["online_cpus"] = json!(4);
    // A run of its own (a run already stored is not imported again).
    run["meta"]["uuid"] = json!("00000000-0000-4000-8000-0000000005e9");
    let file = lab.path("sweep.json");
    std::fs::write(&file, export.to_string()).unwrap();
    lab.ok(&["import", file.to_str().unwrap()]);
}

/// Issue 13: `model` fitted N past the CPUs without a word, although its own refusal says they
/// measure time-sharing and mislead the fit. By default they are left out, and the output says
/// which and why; `--all-n` fits them, with a warning.
#[test]
fn model_leaves_out_task_counts_past_the_cpus_unless_asked() {
    let lab = Lab::new();
    oversubscribed_run(&lab);
    let model = lab.json(&["model", "last", "--json"]);
    assert_eq!(model["fit"]["distinct_n"], 4, "{model}");
    assert_eq!(model["fit"]["max_n"], 4.0, "{model}");
    let left_out = model["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "oversubscribed")
        .unwrap_or_else(|| panic!("{model}"));
    assert_eq!(left_out["n"], json!([8]));
    assert_eq!(left_out["included"], false);
    let text = lab.ok(&["model", "last"]);
    for needle in ["N=8", "4 online CPUs", "left out", "--all-n"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let all = lab.json(&["model", "last", "--all-n", "--json"]);
    assert_eq!(all["fit"]["distinct_n"], 5, "{all}");
    let text = lab.ok(&["model", "last", "--all-n"]);
    assert!(
        text.contains("N=8") && text.contains("time-sharing"),
        "{text}"
    );
}

/// Issue 13: `doctor` printed `perf_event_paranoid perf_event_paranoid 2`.
#[test]
fn doctor_names_each_check_once() {
    let lab = Lab::new();
    let out = lab.ok(&["doctor"]);
    let mut checked = 0;
    for line in out.lines().skip(1).filter(|l| !l.starts_with(' ')) {
        let mut words = line.split_whitespace();
        let (_mark, name) = (words.next().unwrap(), words.next().unwrap());
        let first = words.next().unwrap_or_default().to_ascii_lowercase();
        let first = first.trim_end_matches([':', ',']);
        assert_ne!(first, name.to_ascii_lowercase(), "{line}");
        checked += 1;
    }
    assert!(checked >= 15, "{out}");
}
