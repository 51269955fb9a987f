//! `scalelab history` through the real CLI: series from stored runs, change points and the
//! `--check` exit status on series with and without a planted step.

use serde_json::Value;

use crate::common::Lab;

/// Deterministic ±1% noise around 1000, with an optional step of `step` from index 20 on.
fn series(step: f64) -> String {
    (0..36)
        .map(|i| {
            let noise = 1.0 + 0.01 * (((i * 7919) % 13) as f64 / 6.0 - 1.0);
            let level = if i >= 20 { 1.0 + step } else { 1.0 };
            format!("build-{i},{:.3}\n", 1000.0 * level * noise)
        })
        .collect()
}

#[test]
fn check_exits_1_on_a_planted_regression_and_0_otherwise() {
    let lab = Lab::new();
    for (name, step, code) in [("drop", -0.05, 1), ("rise", 0.05, 0), ("flat", 0.0, 0)] {
        let file = lab.dir.path().join(format!("{name}.csv"));
        std::fs::write(&file, format!("label,value\n{}", series(step))).unwrap();
        let out = lab
            .cmd()
            .args([
                "history",
                "--csv",
                file.to_str().unwrap(),
                "--check",
                "--json",
            ])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let h: Value = serde_json::from_slice(&out.stdout).unwrap();
        let changes = h["changes"].as_array().unwrap();
        if step == 0.0 {
            assert!(changes.is_empty(), "{name}: {changes:?}");
        } else {
            assert_eq!(changes.len(), 1, "{name}: {changes:?}");
            assert_eq!(changes[0]["index"], 20);
            assert!((changes[0]["relative"].as_f64().unwrap() - step).abs() < 0.01);
        }
    }
    let text = String::from_utf8(
        lab.cmd()
            .args([
                "history",
                "--csv",
                lab.dir.path().join("drop.csv").to_str().unwrap(),
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("REGRESSION") && text.contains("build-20"),
        "{text}"
    );
}

#[test]
fn history_follows_stored_runs_of_the_same_workload_and_parameters() {
    let lab = Lab::new();
    for mode in ["fetch_add", "fetch_add", "private"] {
        let out = lab
            .cmd()
            .args([
                "run",
                "atomic",
                "-p",
                &format!("mode={mode}"),
                "--tasks",
                "1,2",
                "--runs",
                "1",
                "--duration",
                "50ms",
                "--warmup",
                "0",
                "--quiet",
                "--tag",
                "commit=abc",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = lab
        .cmd()
        .args(["history", "atomic", "--json", "--metric", "ns_per_op"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h: Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = h["points"].as_array().unwrap();
    assert_eq!(
        points.len(),
        2,
        "only the two runs with the default mode=fetch_add"
    );
    assert_eq!(h["at"], 2);
    assert_eq!(h["higher_is_better"], false);
    assert!(
        points
            .iter()
            .all(|p| p["label"].as_str().unwrap().contains("commit=abc"))
    );
    let private = lab
        .cmd()
        .args([
            "history",
            "atomic",
            "-p",
            "mode=private",
            "--at",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    let h: Value = serde_json::from_slice(&private.stdout).unwrap();
    assert_eq!(h["points"].as_array().unwrap().len(), 1);
    let bad = lab
        .cmd()
        .args(["history", "atomic", "--metric", "speed"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("throughput"));
    let none = lab.cmd().args(["history", "spin"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
}

/// Was: `history spin --at 7 --check` with N=7 never measured exited 0 with "0 runs", and a
/// `--check` over too few runs for any change point read as no regression: a CI job set up
/// so could never fail.
#[test]
fn check_over_an_unmeasured_n_or_too_few_runs_never_passes() {
    let lab = Lab::new();
    lab.ok(&[
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
    ]);
    let out = lab.run(&["history", "spin", "--at", "7", "--check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("--at 7: no stored run of `spin` measured N=7; these runs measured N = 1, 2"),
        "{stderr}"
    );
    let out = lab.run(&["history", "spin", "--check"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--check cannot judge: 1 run at N=2, and change-point detection needs at least 6"
        ),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no verdict"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Without --check the series is shown and the command succeeds.
    lab.ok(&["history", "spin"]);
    let file = csv(&lab, "short.csv", "1\n2\n3\n4\n5\n");
    let out = lab.run(&["history", "--csv", &file, "--check", "--min-segment", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("5 runs"));
}

/// Writes `text` to `name` in the lab and returns its path.
fn csv(lab: &Lab, name: &str, text: &str) -> String {
    let file = lab.path(name);
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn history_csv_refuses_a_typo_on_the_first_line_instead_of_dropping_it_as_a_header() {
    let lab = Lab::new();
    let typo = csv(&lab, "typo.csv", &format!("1OO.5\n{}", series(0.0)));
    let err = lab.fails(&["history", "--csv", &typo]);
    assert!(
        err.contains("line 1: `1OO.5`") && err.contains("not a number"),
        "{err}"
    );
    // The same typo as a labelled row.
    let typo = csv(
        &lab,
        "typo2.csv",
        &format!("build-x,1OO.5\n{}", series(0.0)),
    );
    assert!(lab.fails(&["history", "--csv", &typo]).contains("line 1"));
}

#[test]
fn history_csv_skips_comments_and_blank_lines_anywhere_like_model() {
    let lab = Lab::new();
    let mut text = String::from("# exported from the weekly job\nlabel,value\n");
    for (i, line) in series(0.0).lines().enumerate() {
        if i == 10 {
            text.push_str("# the lab moved racks here\n\n");
        }
        text.push_str(line);
        text.push('\n');
    }
    let file = csv(&lab, "commented.csv", &text);
    let h = lab.json(&["history", "--csv", &file, "--json"]);
    assert_eq!(h["points"].as_array().unwrap().len(), 36, "{h}");
    assert_eq!(h["points"][10]["label"], "build-10");
}

#[test]
fn history_of_negative_values_reports_a_rise_with_a_plus_sign() {
    // −100 → −90 is a rise of 10%; it was reported as −10.1%.
    let lab = Lab::new();
    let text: String = (0..36)
        .map(|i| {
            let noise = 1.0 + 0.01 * (((i * 7919) % 13) as f64 / 6.0 - 1.0);
            let level = if i >= 20 { -90.0 } else { -100.0 };
            format!("build-{i},{:.3}\n", level * noise)
        })
        .collect();
    let file = csv(&lab, "negative.csv", &text);
    let h = lab.json(&["history", "--csv", &file, "--json"]);
    let c = &h["changes"][0];
    assert_eq!(c["index"], 20, "{h}");
    assert!((c["relative"].as_f64().unwrap() - 0.1).abs() < 0.01, "{c}");
    assert_eq!(c["regression"], false, "{c}");
    let shown = lab.ok(&["history", "--csv", &file]);
    assert!(
        shown.contains("change +10.") && shown.contains("improvement"),
        "{shown}"
    );
}

#[test]
fn history_finds_the_same_change_points_at_any_scale() {
    // Values of 1e-170: the variances underflowed (change points in a flat series); 1e306: they
    // overflowed (a 10% step missed), near f64::MAX the means did (a panic).
    let lab = Lab::new();
    let scaled = |step: f64, scale: f64| -> String {
        series(step)
            .lines()
            .map(|l| {
                let (label, v) = l.rsplit_once(',').unwrap();
                format!("{label},{:e}\n", v.parse::<f64>().unwrap() * scale)
            })
            .collect()
    };
    for scale in [1e-173, 1e303, f64::MAX / 2000.0] {
        let flat = csv(&lab, "flat.csv", &scaled(0.0, scale));
        let h = lab.json(&["history", "--csv", &flat, "--json"]);
        assert_eq!(h["changes"], serde_json::json!([]), "scale {scale:e}: {h}");
        let drop = csv(&lab, "drop.csv", &scaled(-0.1, scale));
        let out = lab.run(&["history", "--csv", &drop, "--json", "--check"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "scale {scale:e}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let h: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(h["changes"][0]["index"], 20, "scale {scale:e}: {h}");
        assert!(
            (h["changes"][0]["relative"].as_f64().unwrap() + 0.1).abs() < 0.01,
            "scale {scale:e}: {h}"
        );
    }
}

#[test]
fn history_follows_a_figure_the_command_printed_in_its_own_direction() {
    let lab = Lab::new();
    let cmd = "echo 'latency 7.5 ms'";
    for _ in 0..3 {
        lab.ok(&[
            "run",
            "--cmd",
            cmd,
            "--tasks",
            "1",
            "--runs",
            "2",
            "--metric",
            "latency=lower:latency ([0-9.]+) ms",
            "-q",
        ]);
    }
    for spelling in ["latency", "metric.latency"] {
        let h = lab.json(&["history", "--cmd", cmd, "--metric", spelling, "--json"]);
        assert_eq!(h["metric"], "latency");
        assert_eq!(h["higher_is_better"], false);
        let values: Vec<f64> = h["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["value"].as_f64().unwrap())
            .collect();
        assert_eq!(values, [7.5, 7.5, 7.5]);
    }
    let err = lab.fails(&["history", "--cmd", cmd, "--metric", "tps"]);
    assert!(
        err.contains("`tps` is not a metric of this series") && err.contains("printed: latency"),
        "{err}"
    );
}
