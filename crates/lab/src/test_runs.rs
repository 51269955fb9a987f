//! Runs made by the engine for tests: a sweep measured by the fake executor (the synthetic
//! runs that need no engine are `model::test_runs`).
//!
//! Built with `cfg(test)` and with the `test-support` feature, which `present`'s tests turn on.

use model::record::{Mode, Nanos, Pin, RunData, RunMeta, RunStatus};

pub use model::test_runs::*;

/// A deterministic page_fault sweep at N=1,2,4, three 2 s trials each, from the fake executor
/// (250k ops/s at N=1, contention 0.2, 2% noise): run 7 "snapshot", variant stock, a tag and a
/// stored warning — the run the run-table snapshot pins.
pub fn swept_run() -> RunData {
    use std::sync::atomic::AtomicBool;

    use crate::lifecycle::measure_unstored;
    use crate::plan::{Plan, RunConfig};
    use crate::runner::FakeExecutor;

    let mut cfg = RunConfig::new("page_fault");
    cfg.tasks = Some("1,2,4".parse().expect("a valid task spec"));
    cfg.trials_per_point = 3;
    cfg.duration = Nanos(2_000_000_000);
    let plan = Plan::new(cfg, 4).expect("a valid plan");
    let mut exec = FakeExecutor::new(250_000.0, 0.2);
    exec.noise = 0.02;
    let trials = measure_unstored(&plan, &mut exec, &AtomicBool::new(false));
    let meta = RunMeta {
        id: 7,
        origin_id: None,
        uuid: uuid::Uuid::nil(),
        name: Some("snapshot".into()),
        workload: "page_fault".into(),
        params: plan.params.as_map().clone(),
        op_unit: plan.info.op.into(),
        mode: Mode::Threads,
        pin: Pin::Cores,
        membind: model::record::Membind::FirstTouch,
        points: plan.points.clone(),
        runs: 3,
        duration: Nanos(2_000_000_000),
        warmup: Nanos(1_000_000_000),
        variant: Some("stock".into()),
        tags: [("kernel".to_string(), "6.1".to_string())].into(),
        started_at: "2026-11-22T00:00:00Z".into(),
        finished_at: None,
        status: RunStatus::Complete,
        env: Default::default(),
        warnings: vec!["hypervisor: running under KVM".into()],
        command_line: String::new(),
    };
    RunData { meta, trials }
}

#[cfg(test)]
mod tests {
    use model::test_runs::meta;

    /// Issue 13 (a record's description, tested here where runs are made): a command run's header said `threads, pin auto`, which mean nothing for a
    /// command (it runs with its affinity limited to N CPUs), and `1 trials per point`.
    #[test]
    fn a_command_run_is_described_as_a_command_with_its_affinity() {
        let mut m = meta(4, "cmd", &[1, 2]);
        m.params.insert("cmd".into(), "make -j{n}".into());
        let d = m.description();
        assert!(
            d.contains("cmd=make -j{n} · command, affinity N CPUs · 1 trial per point ·"),
            "{d}"
        );
        assert!(!d.contains("threads") && !d.contains("pin"), "{d}");
        m.runs = 3;
        assert!(m.description().contains(" · 3 trials per point ·"));
        let builtin = meta(5, "spin", &[1]);
        assert!(
            builtin
                .description()
                .contains("spin · threads, pin cores · 1×1.000s"),
            "{}",
            builtin.description()
        );
    }
}
