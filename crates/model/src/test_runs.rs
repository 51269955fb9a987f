//! Synthetic runs for the tests of the analysis and of its presentation (chosen throughputs
//! per N, one trial each, 1 s windows; the two runs of one `ab`; a swept run from the fake
//! executor), runs with their own accounting, lock and off-CPU reports (for `explain`), the
//! Cisco rows of the USL literature, and an export that passes import's checks,
//! for the import tests.
//!
//! Built with `cfg(test)` and with the `test-support` feature, which the tests of the analysis,
//! the engine and `present` turn on: `present`'s tests render the very runs the analysis's tests
//! read. A run swept by the engine's fake executor is `lab::test_runs::swept_run`.

use crate::record::{
    EXPORT_SCHEMA_VERSION, LockContention, LockReport, Mode, Nanos, OffCpuReport, OffCpuSite, Pin,
    RunData, RunExport, RunMeta, RunStatus, SampleRecord, TrialMeasurement, TrialOutcome,
    TrialRecord, Usage,
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

/// The description of a complete run `id` of `workload` over `points` (one trial per point of 1 s,
/// no warm-up), started on day `id` of January 2025, with an empty fingerprint.
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
        "pin": Pin::Cores,
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

/// The two runs of one `ab` experiment: a machine whose speed swings by ±20% from pair to pair,
/// B 3% slower than A within each pair; trial 3 of B failed.
pub fn ab_runs() -> (RunData, RunData) {
    let speed = |i: usize| 100_000.0 * (1.0 + 0.2 * ((i * 7 % 11) as f64 / 10.0 - 0.5));
    let a_values: Vec<f64> = (0..12).map(speed).collect();
    let b_values: Vec<f64> = (0..12)
        .map(|i| speed(i) * 0.97 * (1.0 + 0.001 * (i % 3) as f64))
        .collect();
    let mut a = run(1, "cmd", &[(1, &a_values)]);
    let mut b = run(2, "cmd", &[(1, &b_values)]);
    b.trials[3].outcome = TrialOutcome::Failed {
        reason: "exit status 1".into(),
    };
    for (data, variant) in [(&mut a, "a"), (&mut b, "b")] {
        data.meta.variant = Some(variant.into());
        data.meta.tags.insert("ab_seed".into(), "42".into());
        data.meta
            .tags
            .insert("ab_order".into(), "ABBAABBAABBA".into());
    }
    (a, b)
}

/// Baron Schwartz, *Practical Scalability Analysis with the USL*: Cisco, N = 1..32.
pub const CISCO: [f64; 32] = [
    955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
    8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
    11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
    12118.04, 12140.4, 12074.39,
];

/// [`CISCO`] as `N,throughput` rows under a header.
pub fn cisco_csv() -> String {
    let mut text = String::from("N,throughput\n");
    for (i, x) in CISCO.iter().enumerate() {
        text.push_str(&format!("{},{x}\n", i + 1));
    }
    text
}

/// One trial of a 1 s window at `n` tasks with `ops` ops, `user`/`sys`/`runq` ns of user CPU,
/// system CPU and run-queue wait (all tasks), and the given off-CPU and lock reports.
pub fn accounted_trial(
    n: u32,
    index: u32,
    ops: u64,
    [user, sys, runq]: [u64; 3],
    offcpu: Option<OffCpuReport>,
    locks: Option<LockReport>,
) -> TrialRecord {
    let mut m = measurement(0.0);
    m.task_ops = vec![ops / n as u64; n as usize];
    m.task_ops[0] += ops % n as u64;
    m.placement = vec![None; n as usize];
    m.usage.user = Nanos(user);
    m.usage.sys = Nanos(sys);
    m.usage.run_delay = Some(Nanos(runq));
    m.offcpu = offcpu;
    m.locks = locks;
    TrialRecord {
        n,
        index,
        started_at: format!("2025-01-01T00:00:{index:02}Z"),
        outcome: TrialOutcome::Ok(m),
    }
}

/// An off-CPU site: `kind` on `object` from `caller`, `total` ns over `count` episodes.
pub fn offcpu_site(kind: &str, object: &str, caller: &str, total: u64) -> OffCpuSite {
    OffCpuSite {
        kind: kind.into(),
        object: object.into(),
        caller: caller.into(),
        stack: vec![format!("{kind}_wait+0x10"), "__schedule+0x20".into()],
        user_stack: vec![format!("{caller}+0x8"), "main+0x40".into()],
        count: 100,
        total: Nanos(total),
        max: Nanos(total / 10),
        woken_by: Vec::new(),
        sampled: None,
        via: None,
    }
}

/// An off-CPU report of `sites`, its total their sum.
pub fn offcpu_report(sites: Vec<OffCpuSite>) -> OffCpuReport {
    OffCpuReport {
        total: Nanos(sites.iter().map(|s| s.total.0).sum()),
        sites,
        lost_records: 0,
        unwoken: None,
        silent_idle_cpus: Vec::new(),
        threads: Vec::new(),
        sampling: None,
        stolen: None,
        runq_holders: Vec::new(),
        notes: Vec::new(),
    }
}

/// A lock wait on `lock` of `kind` from `caller`, `total` ns.
pub fn lock_wait(lock: &str, kind: &str, caller: &str, total: u64) -> LockContention {
    LockContention {
        lock: lock.into(),
        kind: kind.into(),
        caller: caller.into(),
        contentions: 100,
        wait_total: Nanos(total),
        wait_max: Nanos(total / 10),
        wait_min: Nanos(1),
        call_sites: vec![(format!("{caller}+0x10"), 100)],
        sampled: None,
    }
}

/// A user lock that serialises two tasks, traced with `--offcpu`: run 9 at N=1,2, three trials
/// each. N=1: 1 M ops, 0.8 s user, 0.1 s sys, no run-queue wait, 0.1 s blocked in `nanosleep`.
/// N=2: 1.25 M ops (2 s owned: 1.6 µs/op), 0.9 s user, 0.2 s sys, 0.02 s run-queue wait,
/// 0.7 s blocked on the futex from `worker_lock` and 0.1 s in `nanosleep` (the trace sees
/// 0.8 s of the 0.88 s blocked). Trial-to-trial spread ±1% in ops.
pub fn explained_run() -> RunData {
    let mut trials = Vec::new();
    for i in 0..3u32 {
        let wobble = [0.99, 1.0, 1.01][i as usize];
        let ops = |x: f64| (x * wobble) as u64;
        trials.push(accounted_trial(
            1,
            i,
            ops(1_000_000.0),
            [800_000_000, 100_000_000, 0],
            Some(offcpu_report(vec![offcpu_site(
                "sleep",
                "nanosleep",
                "do_nanosleep",
                100_000_000,
            )])),
            None,
        ));
    }
    for i in 0..3u32 {
        let wobble = [0.99, 1.0, 1.01][i as usize];
        trials.push(accounted_trial(
            2,
            i,
            (1_250_000.0 * wobble) as u64,
            [900_000_000, 200_000_000, 20_000_000],
            Some(offcpu_report(vec![
                offcpu_site(
                    "futex",
                    "0x7f00aa10",
                    "worker_lock",
                    700_000_000 + i as u64 * 1_000_000,
                ),
                offcpu_site("sleep", "nanosleep", "do_nanosleep", 100_000_000),
            ])),
            None,
        ));
    }
    let mut meta = meta(9, "futex_mutex", &[1, 2]);
    meta.runs = 3;
    meta.params.insert("shared".into(), "true".into());
    RunData { meta, trials }
}
