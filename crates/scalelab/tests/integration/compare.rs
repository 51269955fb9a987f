//! Drives the real `scalelab` binary through `compare`, `ab` and `model`: text and JSON output
//! (insta snapshots over runs with chosen per-trial throughputs, so the figures are fixed),
//! refusals with exit 2, the exit-1 regression gate, interleaved A/B runs on real commands,
//! and the USL fit of the Cisco data set from Baron Schwartz's book through `--csv`.
//!
//! Runs with chosen throughputs are exported JSON files built from a real export (so they
//! follow the export format as it evolves) with their trials replaced: a 1 s window, `ops` ops
//! shared by the point's N tasks.

use serde_json::{Value, json};

use crate::common::Lab;

impl Lab {
    /// A real export to build synthetic runs from (kept once per lab).
    fn template(&self) -> Value {
        let file = self.path("template.json");
        if !file.exists() {
            self.short_spin(&["--no-counters"]);
            std::fs::write(&file, self.expect(0, &["export", "last"])).unwrap();
        }
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
    }

    /// Writes an exported run `name.json` with, per `(n, values)`, one trial per value whose
    /// throughput is that value; `edit` adjusts the run's meta.
    pub(crate) fn synthetic(
        &self,
        name: &str,
        id: i64,
        points: &[(u32, Vec<f64>)],
        edit: impl FnOnce(&mut Value),
    ) -> String {
        let mut export = self.template();
        let trial = export["run"]["trials"][0].clone();
        let mut trials = Vec::new();
        for (n, values) in points {
            for (index, x) in values.iter().enumerate() {
                let mut t = trial.clone();
                t["n"] = json!(n);
                t["index"] = json!(index);
                t["started_at"] = json!(format!("2025-03-0{id}T10:00:{index:02}Z"));
                let m = &mut t["outcome"];
                m["window"] = json!(1_000_000_000u64);
                // One count per task, as a built-in workload's trial has them.
                let (ops, tasks) = (x.round() as u64, u64::from(*n));
                let per_task: Vec<u64> = (0..tasks)
                    .map(|t| ops / tasks + u64::from(t < ops % tasks))
                    .collect();
                m["task_ops"] = json!(per_task);
                m["placement"] = json!(vec![Value::Null; *n as usize]);
                m["samples"] = json!([]);
                m["counters"] = json!([]);
                m["extras"] = json!({});
                trials.push(t);
            }
        }
        let meta = &mut export["run"]["meta"];
        meta["id"] = json!(id);
        meta["points"] = json!(points.iter().map(|p| p.0).collect::<Vec<_>>());
        meta["runs"] = json!(points[0].1.len());
        meta["duration"] = json!(1_000_000_000u64);
        meta["warmup"] = json!(0);
        meta["started_at"] = json!(format!("2025-03-0{id}T10:00:00Z"));
        meta["finished_at"] = json!(format!("2025-03-0{id}T10:01:00Z"));
        meta["warnings"] = json!([]);
        meta["command_line"] = json!("scalelab run spin");
        meta["op_unit"] = json!("one test op");
        meta["env"] = json!({"hostname": "lab", "kernel_release": "6.8.0", "cpu_model": "Test CPU", "online_cpus": 16});
        edit(meta);
        export["run"]["trials"] = Value::Array(trials);
        let file = self.path(&format!("{name}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(&export).unwrap()).unwrap();
        file.to_str().unwrap().to_string()
    }
}

/// Ten values around `center`, spread ±`spread` (relative) in a fixed, shuffled pattern.
fn ten(center: f64, spread: f64) -> Vec<f64> {
    const PATTERN: [f64; 10] = [0.1, -0.7, 0.5, -0.3, 0.9, -0.1, 0.3, -0.9, 0.7, -0.5];
    PATTERN
        .iter()
        .map(|p| center * (1.0 + spread * p))
        .collect()
}

/// A stock kernel and a patched one: N=1 unchanged, N=2 3% slower, N=4 too noisy to tell; one
/// trial of B at N=1 hit by something else; a governor that changed between the runs.
pub(crate) fn stock_and_patched(lab: &Lab) -> (String, String) {
    let a = lab.synthetic(
        "stock",
        1,
        &[
            (1, ten(1.0e6, 0.004)),
            (2, ten(1.9e6, 0.004)),
            (4, ten(3.2e6, 0.02)),
        ],
        |m| {
            m["variant"] = json!("stock");
            m["env"]["governor"] = json!("performance");
        },
    );
    let mut b1 = ten(1.0e6, 0.004);
    b1[3] = 0.7e6;
    let b = lab.synthetic(
        "patched",
        2,
        &[(1, b1), (2, ten(1.843e6, 0.004)), (4, ten(3.25e6, 0.06))],
        |m| {
            m["variant"] = json!("patched");
            m["env"]["kernel_release"] = json!("6.9.0-patched");
            m["env"]["governor"] = json!("powersave");
        },
    );
    (a, b)
}

#[test]
fn compare_text_names_each_verdict_the_curve_and_every_caveat() {
    let lab = Lab::new();
    let (a, b) = stock_and_patched(&lab);
    let text = lab.expect(1, &["compare", &a, &b]);
    insta::assert_snapshot!("compare_text", text);
    for needle in [
        "higher is better",
        "REGRESSED",
        "NO CHANGE",
        "INCONCLUSIVE",
        "worst point: N=2",
        "note: kernel_release",
        "warning: environment differs, governor",
        "trial #3 (started 2025-03-02T10:00:03Z) is an outlier",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
}

#[test]
fn compare_json_carries_the_same_figures() {
    let lab = Lab::new();
    let (a, b) = stock_and_patched(&lab);
    let view = lab.json_exit(1, &["compare", &a, &b, "--json"]);
    insta::assert_json_snapshot!("compare_json", view);
    let points = view["points"].as_array().unwrap();
    let verdicts: Vec<&str> = points
        .iter()
        .map(|p| p["change"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["no_change", "regressed", "inconclusive"]);
    let at2 = &points[1]["change"];
    // B's N=2 trials are A's scaled by 0.97: medians and shift are exactly -3%.
    assert!(
        (at2["relative"].as_f64().unwrap() + 0.03).abs() < 1e-6,
        "{at2}"
    );
    assert!(
        at2["relative_shift"]["lower"].as_f64().unwrap() < -0.03
            && at2["relative_shift"]["upper"].as_f64().unwrap() > -0.03
    );
    assert_eq!(view["metric"]["direction"], "higher_is_better");
    assert_eq!(view["regressed"], true);
    assert_eq!(view["summary"]["worst"]["n"], 2);
    assert!(points[2]["change"]["runs_needed"].as_u64().unwrap() > 10);
}

#[test]
fn compare_exits_0_without_a_regression_and_reads_the_threshold_either_way() {
    let lab = Lab::new();
    let a = lab.synthetic("a", 1, &[(1, ten(1.0e6, 0.004))], |_| {});
    let b = lab.synthetic("b", 2, &[(1, ten(1.02e6, 0.004))], |_| {});
    let pct = lab.json(&["compare", &a, &b, "--json", "--threshold", "1%"]);
    assert_eq!(pct["points"][0]["change"]["verdict"], "improved");
    let fraction = lab.json(&["compare", &a, &b, "--json", "--threshold", "0.01"]);
    assert_eq!(pct, fraction);
    // A 5% threshold makes the 2% gain too small to matter.
    let wide = lab.json(&["compare", &a, &b, "--json", "--threshold", "5%"]);
    assert_eq!(wide["points"][0]["change"]["verdict"], "no_change");
    // Swapped, B is the slower one: a regression, exit 1.
    lab.expect(1, &["compare", &b, &a]);
    let strict = lab.json(&["compare", &a, &b, "--json", "--alpha", "0.00001"]);
    assert_eq!(strict["points"][0]["change"]["verdict"], "inconclusive");
    for (args, needle) in [
        (vec!["--threshold", "1"], "would mean 100%"),
        (vec!["--threshold", "lots"], "write 1% or 0.01"),
        (vec!["--alpha", "1.5"], "strictly between 0 and 1"),
    ] {
        let mut all = vec!["compare", a.as_str(), b.as_str()];
        all.extend(args);
        assert!(lab.fails(&all).contains(needle), "{all:?}");
    }
}

#[test]
fn runs_of_different_workloads_params_or_task_counts_are_refused_unless_forced() {
    let lab = Lab::new();
    let a = lab.synthetic(
        "a",
        1,
        &[(1, ten(1.0e6, 0.004)), (2, ten(1.9e6, 0.004))],
        |_| {},
    );
    let other_workload = lab.synthetic(
        "w",
        2,
        &[(1, ten(1.0e6, 0.004)), (2, ten(1.9e6, 0.004))],
        |m| m["workload"] = json!("clock"),
    );
    let other_param = lab.synthetic(
        "p",
        3,
        &[(1, ten(1.0e6, 0.004)), (2, ten(1.9e6, 0.004))],
        |m| m["params"] = json!({"size": "1M"}),
    );
    let other_points = lab.synthetic(
        "n",
        4,
        &[(1, ten(1.0e6, 0.004)), (4, ten(3.0e6, 0.004))],
        |_| {},
    );
    for (b, needle) in [
        (
            &other_workload,
            "different workloads: A is `spin`, B is `clock`",
        ),
        (
            &other_param,
            "parameter `size` differs: A has `(not set)`, B has `1M`",
        ),
        (
            &other_points,
            "different task counts: A swept N=1,2, B swept N=1,4",
        ),
    ] {
        let err = lab.fails(&["compare", &a, b]);
        assert!(
            err.contains("refusing to compare run 1")
                && err.contains(needle)
                && err.contains("--force"),
            "{err}"
        );
    }
    let forced = lab.json(&["compare", &a, &other_points, "--force", "--json"]);
    assert_eq!(
        forced["points"].as_array().unwrap().len(),
        1,
        "only N=1 is in both"
    );
    let kinds: Vec<&str> = forced["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"forced") && kinds.contains(&"only_in_one"),
        "{kinds:?}"
    );
    let text = lab.expect(0, &["compare", &a, &other_points, "--force"]);
    assert!(
        text.contains("note: compared anyway: different task counts")
            && text.contains("N=2 measured only by A"),
        "{text}"
    );
    assert!(
        lab.fails(&["compare", &a, "no-such-run"])
            .contains("loading run B")
    );
}

#[test]
fn stored_runs_compare_by_id_and_three_trials_a_side_can_never_reach_alpha() {
    let lab = Lab::new();
    let args = [
        "run",
        "spin",
        "--tasks",
        "1",
        "--runs",
        "3",
        "--duration",
        "100ms",
        "--warmup",
        "0",
        "--quiet",
        "--no-counters",
    ];
    lab.expect(0, &args);
    lab.expect(0, &args);
    // With 3 vs 3 the smallest p is 0.1: never a verdict, so never exit 1.
    let view = lab.json(&["compare", "last~1", "last", "--json"]);
    assert_eq!(view["a"]["id"], 1);
    assert_eq!(view["b"]["id"], 2);
    assert_eq!(view["points"][0]["runs_a"], 3);
    let c = &view["points"][0]["change"];
    assert!((c["min_achievable_p"].as_f64().unwrap() - 0.1).abs() < 1e-12);
    assert!(
        ["inconclusive", "no_change"].contains(&c["verdict"].as_str().unwrap()),
        "{c}"
    );
    let w = &view["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "too_few_runs")
        .expect("too_few_runs")["points"];
    assert_eq!(w, &json!([1]));
    let text = lab.expect(0, &["compare", "1", "2"]);
    assert!(text.contains("can never reach p < 0.05"), "{text}");
}

#[test]
fn ab_interleaves_two_commands_stores_both_and_gates_on_a_regression() {
    let lab = Lab::new();
    // B sleeps 20 ms per completion: far slower than A's `true`.
    let out = lab.run(&[
        "ab",
        "--a",
        "true",
        "--b",
        "sleep 0.02",
        "--runs",
        "6",
        "--tasks",
        "1",
        "--seed",
        "7",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("seed 7") && stderr.contains("order: "),
        "{stderr}"
    );
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["points"][0]["change"]["verdict"], "regressed");
    // The pairs ran back to back: judged pair by pair (6 pairs reach p = 2/2⁶ = 0.031).
    assert_eq!(view["paired"], true);
    assert_eq!(view["points"][0]["pairs"], 6);
    assert_eq!(view["points"][0]["change"]["method"], "signed_rank");
    assert_eq!(
        (view["a"]["variant"].as_str(), view["b"]["variant"].as_str()),
        (Some("a"), Some("b"))
    );
    let order = view["a"]["tags"]["ab_order"].as_str().unwrap().to_string();
    assert_eq!(order.len(), 6, "one letter per pair: {order}");
    assert!(order.chars().all(|c| c == 'A' || c == 'B'), "{order}");
    assert_eq!(view["b"]["tags"]["ab_seed"], "7");
    // Both runs are stored, each with its 6 trials, and compare the same way again; or as
    // independent samples on request.
    let runs = lab.json(&["ls", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["trials_ok"] == 6), "{runs:?}");
    let again = lab.expect(1, &["compare", "1", "2"]);
    assert!(again.contains("Wilcoxon signed-rank p"), "{again}");
    let unpaired = lab.json_exit(1, &["compare", "1", "2", "--unpaired", "--json"]);
    assert_eq!(unpaired["paired"], false);
    assert_eq!(unpaired["points"][0]["change"]["method"], "mann_whitney");
    // The same seed repeats the order.
    let again = lab.json_exit(
        1,
        &[
            "ab",
            "--a",
            "true",
            "--b",
            "sleep 0.02",
            "--runs",
            "6",
            "--tasks",
            "1",
            "--seed",
            "7",
            "--json",
            "--threshold",
            "2%",
        ],
    );
    assert_eq!(again["a"]["tags"]["ab_order"], order.as_str());
    // A command that does not exist is refused before anything runs.
    assert!(
        lab.fails(&["ab", "--a", "true", "--b", "no-such-program-xyz"])
            .contains("no-such-program-xyz")
    );
    assert_eq!(lab.json(&["ls", "--json"]).as_array().unwrap().len(), 4);
}

#[test]
fn ab_adds_pairs_while_the_noise_hides_the_threshold_up_to_max_runs() {
    let lab = Lab::new();
    // No pair of real processes is alike to 0.001%: 4 pairs cannot see such a change, so ab
    // grows to the cap.
    let out = lab.run(&[
        "ab",
        "--a",
        "true",
        "--b",
        "true",
        "--runs",
        "4",
        "--max-runs",
        "8",
        "--threshold",
        "0.001%",
        "--tasks",
        "1",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("4 pairs cannot yet tell ±0.001% from no change at N=1; adding pairs up to"),
        "{stderr}"
    );
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["points"][0]["pairs"], 8, "{view}");
    assert_eq!(view["a"]["tags"]["ab_order"].as_str().unwrap().len(), 8);
    let runs = lab.json(&["ls", "--json"]);
    for run in runs.as_array().unwrap() {
        assert_eq!(
            (run["runs"].as_u64(), run["trials_ok"].as_u64()),
            (Some(8), Some(8)),
            "{run}"
        );
    }
    // A threshold far above the noise needs no more pairs.
    let wide = lab.json(&[
        "ab",
        "--a",
        "true",
        "--b",
        "true",
        "--runs",
        "6",
        "--max-runs",
        "40",
        "--threshold",
        "1000%",
        "--tasks",
        "1",
        "--json",
    ]);
    assert_eq!(wide["points"][0]["pairs"], 6, "{wide}");
    assert!(
        lab.fails(&[
            "ab",
            "--a",
            "true",
            "--b",
            "true",
            "--runs",
            "6",
            "--max-runs",
            "4"
        ])
        .contains("--max-runs: 4 is below the 6 pairs planned first")
    );
}

#[test]
fn ab_text_output_is_the_comparison() {
    let lab = Lab::new();
    let text = lab.expect(
        0,
        &[
            "ab", "--a", "true", "--b", "true", "--runs", "2", "--tasks", "1", "--seed", "1",
        ],
    );
    assert!(
        text.starts_with("A: run 1 · cmd cmd=true") && text.contains("variant b"),
        "{text}"
    );
    assert!(
        text.contains("with 2 pairs the signed-rank test can never reach p < 0.05"),
        "2 pairs: {text}"
    );
}

/// Baron Schwartz, *Practical Scalability Analysis with the Universal Scalability Law*: the
/// Cisco data set, N = 1..32.
const CISCO: [f64; 32] = [
    955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
    8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
    11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
    12118.04, 12140.4, 12074.39,
];

fn cisco_csv(lab: &Lab) -> String {
    let mut text = String::from("N,throughput\n");
    for (i, x) in CISCO.iter().enumerate() {
        text.push_str(&format!("{},{x}\n", i + 1));
    }
    let file = lab.path("cisco.csv");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

fn close(got: &Value, want: f64) -> bool {
    (got.as_f64().unwrap() - want).abs() / want.abs() < 1e-3
}

#[test]
fn model_of_the_cisco_csv_reproduces_the_book_within_a_tenth_of_a_percent() {
    let lab = Lab::new();
    let csv = cisco_csv(&lab);
    let model = lab.json(&["model", "--csv", &csv, "--json", "--predict", "35,64,100"]);
    let fit = &model["fit"];
    assert!(
        close(&fit["sigma"]["point"], 0.026_715_91),
        "σ {}",
        fit["sigma"]
    );
    assert!(
        close(&fit["kappa"]["point"], 7.690_945e-4),
        "κ {}",
        fit["kappa"]
    );
    assert!(
        close(&fit["lambda"]["point"], 995.648_6),
        "λ {}",
        fit["lambda"]
    );
    assert_eq!(
        fit["n_star"].as_f64().unwrap().floor(),
        35.0,
        "N* {}",
        fit["n_star"]
    );
    assert!(
        close(&fit["x_at_n_star"], 12_341.0),
        "X(N*) {}",
        fit["x_at_n_star"]
    );
    assert!(close(&model["predictions"][0]["x"]["point"], 12_341.0));
    assert_eq!(model["predictions"][2]["extrapolated"], true);
    let kinds: Vec<&str> = model["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["fit", "extrapolated"],
        "N* outside the data, N=100 beyond 2× 32"
    );
    let mut model = model;
    model["source"]["path"] = json!("cisco.csv");
    insta::assert_json_snapshot!("model_cisco_json", model);
    let text = lab.expect(0, &["model", "--csv", &csv, "--predict", "35,64,100"]);
    let text = text.replace(&csv, "cisco.csv");
    insta::assert_snapshot!("model_cisco_text", text);
}

#[test]
fn model_of_a_run_fits_every_trial_and_defaults_to_predicting_twice_the_largest_n() {
    let lab = Lab::new();
    let usl = |n: f64| 2.0e5 * n / (1.0 + 0.04 * (n - 1.0) + 0.001 * n * (n - 1.0));
    let points: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8, 16]
        .iter()
        .map(|&n| {
            (
                n,
                vec![
                    usl(f64::from(n)) * 0.99,
                    usl(f64::from(n)),
                    usl(f64::from(n)) * 1.01,
                ],
            )
        })
        .collect();
    let run = lab.synthetic("usl", 1, &points, |_| {});
    let model = lab.json(&["model", &run, "--json"]);
    assert_eq!(model["fit"]["points"], 15);
    assert_eq!(model["source"]["kind"], "run");
    assert!(
        close(&model["fit"]["sigma"]["point"], 0.04)
            && close(&model["fit"]["kappa"]["point"], 0.001),
        "{}",
        model["fit"]
    );
    assert_eq!(model["predictions"][0]["n"], 32.0);
    let text = lab.expect(0, &["model", &run]);
    insta::assert_snapshot!("model_run_text", text);
}

#[test]
fn model_refuses_too_few_task_counts_and_bad_csv_rows_by_line() {
    let lab = Lab::new();
    let two = lab.synthetic(
        "two",
        1,
        &[(1, ten(1.0e6, 0.01)), (2, ten(1.9e6, 0.01))],
        |m| m["env"]["online_cpus"] = json!(2),
    );
    let err = lab.fails(&["model", &two]);
    for needle in [
        "at least 4 distinct task counts",
        "(N=1,2)",
        "2 online CPUs",
        "default sweep (N=1,2) is too short",
        "--csv",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    let bad = lab.path("bad.csv");
    std::fs::write(&bad, "N,X\n1,955.16\n2,1878.91\n3,2688,01\n").unwrap();
    let err = lab.fails(&["model", "--csv", bad.to_str().unwrap()]);
    assert!(
        err.contains("line 4: `3,2688,01`: 3 fields, expected 2"),
        "{err}"
    );
    assert!(
        lab.fails(&["model", "--csv", "/nonexistent.csv"])
            .contains("reading --csv /nonexistent.csv")
    );
    assert!(
        lab.fails(&["model", "--csv", bad.to_str().unwrap(), "--predict", "0"])
            .contains("task count")
    );
    let usage = lab.run(&["model"]);
    assert_eq!(usage.status.code(), Some(2), "a RUN or --csv is required");
}

#[test]
fn model_of_a_real_two_point_sweep_is_refused() {
    let lab = Lab::new();
    lab.expect(
        0,
        &[
            "run",
            "spin",
            "--tasks",
            "1,2",
            "--runs",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--quiet",
            "--no-counters",
        ],
    );
    let err = lab.fails(&["model", "last"]);
    assert!(
        err.contains("at least 4 distinct task counts") && err.contains("N=1,2"),
        "{err}"
    );
}

#[test]
fn tied_runs_three_against_three_never_reach_alpha_with_ties() {
    // Every A trial 1000 ops/s, every B trial 980: the normal approximation gave p = 0.047 and
    // REGRESSED; the exact conditional p over the 20 relabellings is 2/20 = 0.1.
    let lab = Lab::new();
    let a = lab.synthetic("a", 1, &[(1, vec![1000.0; 3])], |_| {});
    let b = lab.synthetic("b", 2, &[(1, vec![980.0; 3])], |_| {});
    let view = lab.json(&["compare", &a, &b, "--json"]);
    let c = &view["points"][0]["change"];
    assert_ne!(c["verdict"], "regressed", "{c}");
    let p = c["p_value"].as_f64().unwrap();
    assert!((p - 0.1).abs() < 1e-12, "{c}");
    assert!(p >= c["min_achievable_p"].as_f64().unwrap(), "{c}");
    assert_eq!(c["exact"], true, "{c}");
    let text = lab.expect(0, &["compare", &a, &b]);
    assert!(!text.contains("REGRESSED"), "{text}");
}

#[test]
fn tied_pairs_five_pairs_all_two_percent_slower_never_reach_alpha_with_ties() {
    // Five ab pairs, every B exactly 0.98·A: the normal approximation gave p = 0.037 and
    // REGRESSED; the exact sign-flip p is 2/2⁵ = 0.0625.
    let lab = Lab::new();
    let a_values = vec![1000.0, 1100.0, 1200.0, 1300.0, 1400.0];
    let b_values: Vec<f64> = a_values.iter().map(|x| x * 0.98).collect();
    let ab = |m: &mut Value| {
        m["tags"] = json!({"ab_seed": "7", "ab_order": "ABABA"});
    };
    let a = lab.synthetic("a", 1, &[(1, a_values)], ab);
    let b = lab.synthetic("b", 2, &[(1, b_values)], ab);
    let view = lab.json(&["compare", &a, &b, "--json"]);
    assert_eq!(view["paired"], true, "{view}");
    let c = &view["points"][0]["change"];
    assert_eq!(c["method"], "signed_rank", "{c}");
    assert_ne!(c["verdict"], "regressed", "{c}");
    let p = c["p_value"].as_f64().unwrap();
    assert!((p - 0.0625).abs() < 1e-12, "{c}");
    let text = lab.expect(0, &["compare", &a, &b]);
    assert!(!text.contains("REGRESSED"), "{text}");
}

#[test]
fn model_csv_refuses_a_typo_in_the_first_row_instead_of_dropping_it_as_a_header() {
    let lab = Lab::new();
    let mut text = String::from("1O,955.16\n");
    for (i, x) in CISCO.iter().enumerate().skip(1) {
        text.push_str(&format!("{},{x}\n", i + 1));
    }
    let file = lab.path("typo.csv");
    std::fs::write(&file, text).unwrap();
    let err = lab.fails(&["model", "--csv", file.to_str().unwrap()]);
    assert!(
        err.contains("line 1: `1O,955.16`: N `1O` is not a number"),
        "{err}"
    );
}

/// `run --cmd … --metric` of a command that prints a rate and a latency, `runs` trials at N=1.
fn printed_figures(lab: &Lab, latency_ms: &str) {
    let cmd = format!("echo 'rate 100 MB/sec'; echo 'latency {latency_ms} ms'");
    lab.ok(&[
        "run",
        "--cmd",
        &cmd,
        "--tasks",
        "1",
        "--runs",
        "5",
        "--metric",
        "rate=rate ([0-9.]+) MB/sec",
        "--metric",
        "latency=lower:latency ([0-9.]+) ms",
        "-q",
    ]);
}

#[test]
fn compare_metric_judges_a_printed_figure_in_its_own_direction() {
    let lab = Lab::new();
    printed_figures(&lab, "5.0");
    printed_figures(&lab, "6.0");
    // X(N) is the rate, which did not move; the latency rose 20%, and lower is better.
    let x = lab.json(&["compare", "last~1", "last", "--json"]);
    assert_eq!(x["points"][0]["change"]["verdict"], "no_change", "{x}");
    let lat = lab.json_exit(
        1,
        &["compare", "last~1", "last", "--metric", "latency", "--json"],
    );
    assert_eq!(lat["metric"]["name"], "latency");
    assert_eq!(lat["metric"]["unit"], "ms");
    assert_eq!(lat["metric"]["direction"], "lower_is_better");
    let at1 = &lat["points"][0];
    assert_eq!(at1["change"]["verdict"], "regressed", "{lat}");
    assert!(
        (at1["change"]["median_a"].as_f64().unwrap() - 5.0).abs() < 1e-9,
        "{at1}"
    );
    assert!(
        (at1["change"]["median_b"].as_f64().unwrap() - 6.0).abs() < 1e-9,
        "{at1}"
    );
    // The parameter's spelling works too, and the text names the figure and its unit.
    let text = lab.expect(
        1,
        &["compare", "last~1", "last", "--metric", "metric.latency"],
    );
    assert!(
        text.contains("metric: latency in ms (lower is better)"),
        "{text}"
    );
    assert!(text.contains("A ms"), "{text}");
    // A figure the runs do not have is refused, naming the ones they have.
    let err = lab.fails(&["compare", "last~1", "last", "--metric", "tps"]);
    assert!(
        err.contains("no figure `tps`") && err.contains("its figures: rate, latency"),
        "{err}"
    );
}
