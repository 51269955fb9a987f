//! `scalelab history` through the real CLI: series from stored runs, change points and the
//! `--check` exit status on series with and without a planted step.

use serde_json::Value;

mod common;
use common::Lab;

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
