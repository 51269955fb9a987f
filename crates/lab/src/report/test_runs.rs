//! Synthetic runs for the view tests (chosen throughputs per N, one trial each, 1 s windows),
//! and an export that passes import's checks, for the import tests.

use crate::record::{
    EXPORT_SCHEMA_VERSION, Mode, Nanos, Pin, RunData, RunExport, RunMeta, RunStatus, SampleRecord,
    TrialMeasurement, TrialOutcome, TrialRecord, Usage,
};

/// A run of `workload` with, for each `(n, values)`, one successful trial per value whose
/// throughput is exactly that value (ops/s).
pub fn run(id: i64, workload: &str, points: &[(u32, &[f64])]) -> RunData {
    let mut trials = Vec::new();
    for &(n, values) in points {
        for (index, &x) in values.iter().enumerate() {
            trials.push(TrialRecord {
                n,
                index: index as u32,
                started_at: format!("2025-01-01T00:00:{index:02}Z"),
                outcome: TrialOutcome::Ok(measurement(x)),
            });
        }
    }
    RunData {
        meta: meta(
            id,
            workload,
            &points.iter().map(|p| p.0).collect::<Vec<_>>(),
        ),
        trials,
    }
}

/// A 1 s window with `ops_per_sec` ops. Built through serde, so fields added to the records
/// with a default need no change here.
pub fn measurement(ops_per_sec: f64) -> TrialMeasurement {
    serde_json::from_value(serde_json::json!({
        "window": 1_000_000_000u64,
        "task_ops": [ops_per_sec.round() as u64],
        "usage": Usage::default(),
        "counters": [],
        "extras": {},
        "placement": [null],
        "samples": [],
    }))
    .expect("a valid measurement")
}

pub fn meta(id: i64, workload: &str, points: &[u32]) -> RunMeta {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "origin_id": null,
        "uuid": uuid::Uuid::nil(),
        "name": null,
        "workload": workload,
        "params": {},
        "op_unit": "one op",
        "mode": Mode::Threads,
        "pin": Pin::Auto,
        "points": points,
        "runs": 1,
        "duration": Nanos(1_000_000_000),
        "warmup": Nanos(0),
        "variant": null,
        "tags": {},
        "started_at": format!("2025-01-0{id}T00:00:00Z"),
        "finished_at": null,
        "status": RunStatus::Complete,
        "env": {},
        "warnings": [],
        "command_line": "",
    }))
    .expect("a valid run")
}
/// `n` values around `center` with a fixed ±`spread` relative pattern (median exactly `center`
/// for odd `n`).
pub fn around(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let k = i as f64 - (n as f64 - 1.0) / 2.0;
            center * (1.0 + spread * k / n as f64)
        })
        .collect()
}

/// An export of run 7 that import accepts: spin at N=1,2, two trials each, one count and one
/// placement per task and two samples per trial, as the runner writes them.
pub fn importable_export() -> serde_json::Value {
    let mut run = run(7, "spin", &[(1, &[1000.0, 1010.0]), (2, &[1900.0, 1950.0])]);
    run.meta.runs = 2;
    run.meta.name = Some("nightly".into());
    run.meta.tags.insert("kernel".into(), "6.8".into());
    for t in &mut run.trials {
        let n = t.n as usize;
        if let TrialOutcome::Ok(m) = &mut t.outcome {
            m.task_ops = vec![500; n];
            m.placement = vec![None; n];
            m.samples = vec![
                SampleRecord {
                    t: Nanos(500_000_000),
                    task_ops: vec![200; n],
                },
                SampleRecord {
                    t: m.window,
                    task_ops: m.task_ops.clone(),
                },
            ];
        }
    }
    serde_json::to_value(RunExport {
        schema_version: EXPORT_SCHEMA_VERSION,
        tool_version: "test".into(),
        run,
    })
    .expect("a serialisable run")
}
