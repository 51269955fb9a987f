//! The results store through its public API: nothing written is lost or altered, nothing it
//! did not write is touched, and two writers at once both succeed.
//!
//! Everything lives in `mod store` so that `cargo test -p scalelab-lab store` runs it.

mod store {

    use std::collections::BTreeMap;
    use std::fs;
    use std::path::Path;

    use model::env::Fingerprint;
    use model::record::{
        ClockWindow, CounterValue, EXPORT_SCHEMA_VERSION, HarnessCost, LockContention, LockReport,
        LockSampling, Membind, Mode, Nanos, OffCpuReport, OffCpuSite, Pin, ProfileRef, RunData,
        RunMeta, RunStatus, SampleRecord, StepRecord, TrialMeasurement, TrialOutcome, TrialRecord,
        UntracedReference, UnwokenEpisodes, Usage,
    };
    use proptest::prelude::*;
    use store::{Location, RunFilter, Store, StoreError, export_csv, export_json, read_export};

    use crate::test_server;

    /// Which database a test of the store API runs on: the suite below runs on both.
    #[derive(Debug, Clone, Copy)]
    enum Backend {
        Sqlite,
        Postgres,
    }

    /// A fresh empty store of `backend`, with what keeps it alive (a temporary folder for
    /// SQLite); `None` when no PostgreSQL server can be started here (the reason is printed).
    fn fresh(backend: Backend) -> Option<(Option<tempfile::TempDir>, Store)> {
        match backend {
            Backend::Sqlite => {
                let (dir, store) = open_temp();
                Some((Some(dir), store))
            }
            Backend::Postgres => {
                let url = test_server::fresh_url()?;
                let location = Location::parse(Path::new(&url)).unwrap();
                Some((None, Store::open_at(&location, true).unwrap()))
            }
        }
    }

    /// The same store, opened again by another connection.
    fn reopen(store: &Store) -> Store {
        Store::open_at(store.location(), true).unwrap()
    }

    /// One `#[test]` per backend for each test function taking a [`Backend`].
    macro_rules! on_both_backends {
        ($($name:ident),* $(,)?) => {
            mod sqlite {
                $(#[test] fn $name() { super::$name(super::Backend::Sqlite) })*
            }
            mod postgres {
                $(#[test] fn $name() { super::$name(super::Backend::Postgres) })*
            }
        };
    }

    on_both_backends!(
        run_round_trips_exactly,
        every_pin_strategy_is_stored_and_read_back,
        json_export_imports_to_an_equal_run_with_origin_id,
        imported_running_run_reads_incomplete,
        an_impossible_run_is_refused_by_import_and_nothing_is_stored,
        csv_has_a_header_and_one_quoted_row_per_trial,
        resolve_accepts_id_last_and_last_k_and_explains_the_rest,
        list_filters_by_workload_variant_tags_and_params_oldest_first,
        an_extended_plan_updates_runs_and_tags_where_filters_see_them,
        writes_to_a_missing_run_are_errors,
        two_writers_at_once_both_succeed,
        push_twice_copies_each_run_once,
        push_with_profiles_stores_the_files_once_and_another_host_reads_them,
        a_run_whose_writer_is_gone_reads_incomplete_to_every_reader,
        many_runs_load_at_once_as_each_loads_alone,
    );

    fn meta(workload: &str) -> RunMeta {
        RunMeta {
            id: 0,
            origin_id: None,
            uuid: uuid::Uuid::new_v4(),
            name: Some("bench, \"quoted\" — ünïcode".into()),
            workload: workload.into(),
            params: BTreeMap::from([
                ("pages".into(), "64".into()),
                ("shared".into(), "true".into()),
            ]),
            op_unit: "one page faulted in".into(),
            mode: Mode::Threads,
            pin: Pin::Cores,
            // Not the default, so the round trips show it is stored.
            membind: Membind::Interleave,
            points: vec![1, 2, 4],
            runs: 2,
            duration: Nanos(5_000_000_000),
            // The longest warm-up a run accepts.
            warmup: model::limits::MAX_DURATION,
            variant: Some("stock".into()),
            tags: BTreeMap::from([
                ("kernel".into(), "6.8".into()),
                ("host".into(), "a,b".into()),
            ]),
            started_at: "2025-01-01T00:00:00Z".into(),
            finished_at: None,
            status: RunStatus::Running,
            env: Fingerprint::default(),
            warnings: vec!["frequency scaling is on — set the governor to performance".into()],
            command_line: "scalelab run page_fault -p pages=64".into(),
        }
    }

    fn ok_trial(n: u32, index: u32) -> TrialRecord {
        let task_ops: Vec<u64> = (0..u64::from(n)).map(|t| 1000 + t).collect();
        TrialRecord {
            n,
            index,
            started_at: format!("2025-01-01T00:00:{index:02}Z"),
            outcome: TrialOutcome::Ok(TrialMeasurement {
                window: Nanos(5_000_123_456),
                task_ops: task_ops.clone(),
                usage: Usage {
                    user: Nanos(4_000_000_000),
                    // The most user + sys can hold, past i64::MAX.
                    sys: Nanos(u64::MAX - 4_000_000_000),
                    minor_faults: 12,
                    major_faults: 0,
                    voluntary_switches: 3,
                    involuntary_switches: 4,
                    block_in: 5,
                    block_out: 6,
                    run_delay: (index % 2 == 0).then_some(Nanos(777)),
                    max_rss_kib: (index % 2 == 1).then_some(u64::MAX - 5),
                },
                counters: vec![
                    CounterValue {
                        event: "cycles".into(),
                        value: Some(123_456_789),
                        multiplexed: true,
                        note: None,
                    },
                    CounterValue {
                        event: "instructions".into(),
                        value: None,
                        multiplexed: false,
                        note: Some("perf_event_paranoid=3".into()),
                    },
                ],
                extras: BTreeMap::from([("time_backwards".into(), u64::MAX)]),
                placement: (0..n as usize).map(|i| (i % 2 == 0).then_some(i)).collect(),
                samples: (0..3u64)
                    .map(|s| SampleRecord {
                        t: Nanos(s * 1_000_000),
                        task_ops: task_ops.iter().map(|o| o * s).collect(),
                    })
                    .collect(),
                // Steps only on odd trials, so both the empty and the full case are stored.
                steps: (0..index % 2).map(step_record).collect(),
                // Profile, locks and clock edges on even trials only, for the same reason.
                clock_window: (index % 2 == 0).then_some(ClockWindow {
                    start: Nanos(10),
                    end: Nanos(u64::MAX),
                }),
                profile: (index % 2 == 0).then(|| ProfileRef {
                    path: "/x/n1-t0.perf.data".into(),
                    event: "cpu-clock".into(),
                    frequency: 999,
                    // A built-in trial's task threads, its partners and their CPU round-trip.
                    threads: vec![41, 42],
                    partner_threads: vec![43],
                    partner_on_cpu: Some(Nanos(123_456)),
                    every_cpu: true,
                    servers_path: Some("/x/n1-t0.servers.perf.data".into()),
                    servers_pids: vec![600, 601],
                }),
                locks: (index % 2 == 0).then(|| LockReport {
                    kernel: vec![LockContention {
                        lock: "rename_lock".into(),
                        kind: "spinlock".into(),
                        caller: "d_move".into(),
                        contentions: 3,
                        wait_total: Nanos(300),
                        wait_max: Nanos(200),
                        wait_min: Nanos(20),
                        call_sites: vec![("do_renameat2".into(), 3)],
                        sampled: None,
                    }],
                    user: vec![],
                    lost_records: 2,
                    futex_waits_seen: None,
                    futex_waits_counted: None,
                    notes: vec!["frames lost".into()],
                    sampling: Some(LockSampling {
                        waits: 30,
                        sampled: 3,
                        lost: 1,
                        unsummed: 0,
                        threads_untraced: 0,
                        programs_time: Some(Nanos(7_000)),
                        rate_lowered_to: Some(31),
                    }),
                }),
                offcpu: (index % 2 == 0).then(offcpu_report),
                harness: (index % 2 == 1).then_some(HarnessCost {
                    sampler_cpu: Nanos(1_234),
                    start: Nanos(5_678),
                    stop: Nanos(u64::MAX),
                    sampler_realtime: Some(true),
                    untraced: (index == 1).then_some(UntracedReference {
                        window: Nanos(999_000_000),
                        ops: u64::MAX,
                        switches: Some(51_014),
                        usage: Some(Usage {
                            user: Nanos(1_700_000_123),
                            sys: Nanos(u64::MAX),
                            voluntary_switches: 40_321,
                            involuntary_switches: 10_693,
                            run_delay: Some(Nanos(7)),
                            ..Usage::default()
                        }),
                    }),
                }),
                reported: (index == 0).then(|| model::record::Reported {
                    values: [
                        ("throughput".to_string(), 86.5842),
                        ("lat".to_string(), 0.25),
                    ]
                    .into(),
                    primary: model::record::MetricSpec::parse(
                        "throughput=Throughput ([0-9.]+) MB/sec",
                        model::record::OutputStream::Stdout,
                    )
                    .ok(),
                }),
            }),
        }
    }

    /// Step `i` of a command trial, with its own profile and lock report: they round-trip too.
    fn step_record(i: u32) -> StepRecord {
        StepRecord {
            perf_record_cpu: None,
            wrapper_wall: None,
            name: format!("build {i}"),
            wall: Nanos(7),
            usage: Usage {
                minor_faults: 1,
                ..Usage::default()
            },
            // A command step's own profile and lock report round-trip too.
            profile: Some(ProfileRef {
                path: format!("/x/n1-t0-s{i}.perf.data"),
                event: "cycles".into(),
                frequency: 997,
                ..ProfileRef::default()
            }),
            locks: Some(LockReport {
                user: vec![LockContention {
                    lock: "0x7f00".into(),
                    kind: "futex".into(),
                    caller: "take_the_lock".into(),
                    contentions: 9,
                    wait_total: Nanos(90),
                    wait_max: Nanos(30),
                    wait_min: Nanos(1),
                    call_sites: vec![],
                    sampled: None,
                }],
                ..LockReport::default()
            }),
            offcpu: None,
        }
    }

    /// An off-CPU report with every field set, threads by role included.
    fn offcpu_report() -> OffCpuReport {
        OffCpuReport {
            total: Nanos(5_000),
            sites: vec![OffCpuSite {
                kind: "io".into(),
                object: "fsync".into(),
                caller: "do_fsync".into(),
                stack: vec!["schedule".into(), "do_fsync".into()],
                user_stack: vec!["fsync".into(), "main".into()],
                count: 4,
                total: Nanos(5_000),
                max: Nanos(2_000),
                woken_by: vec![model::record::WokenShare {
                    by: "an I/O completion".into(),
                    total: Nanos(5_000),
                }],
                sampled: Some(model::record::SiteSample {
                    episodes: 2,
                    error: Nanos(1_500),
                }),
                via: Some(model::record::ChainVia {
                    server: "postgres".into(),
                    kernel_thread: false,
                    waited_in: "poll_schedule_timeout (other) from pgbench+0x11466".into(),
                }),
            }],
            threads: vec![
                model::record::ThreadGroup {
                    role: model::record::ThreadRole::Supervisor,
                    comm: "sh".into(),
                    threads: 1,
                    life: Nanos(9_000),
                    on_cpu: Nanos(100),
                    runq: Nanos(50),
                    blocked: Nanos(8_750),
                    stolen: Nanos(100),
                    waiting_for_started: Nanos(8_700),
                    cpu_serving: Nanos(0),
                    tids: vec![42],
                },
                model::record::ThreadGroup {
                    role: model::record::ThreadRole::Server,
                    comm: "postgres".into(),
                    threads: 2,
                    life: Nanos(18_000),
                    on_cpu: Nanos(900),
                    runq: Nanos(100),
                    blocked: Nanos(17_000),
                    stolen: Nanos(0),
                    waiting_for_started: Nanos(0),
                    cpu_serving: Nanos(600),
                    tids: vec![43, 44],
                },
            ],
            lost_records: 1,
            unwoken: Some(UnwokenEpisodes {
                count: 3,
                total: Nanos(4_000),
            }),
            silent_idle_cpus: vec![1],
            sampling: Some(model::record::OffCpuSampling {
                blocking_switches: 40,
                sampled: 20,
                lost: 1,
                threads_untraced: 0,
                long: 2,
                programs_time: Some(Nanos(9_000)),
                rate_lowered_to: None,
            }),
            stolen: Some(Nanos(300)),
            runq_holders: Vec::new(),
            notes: vec!["stacks truncated".into()],
        }
    }

    fn failed_trial(n: u32, index: u32) -> TrialRecord {
        TrialRecord {
            n,
            index,
            started_at: "2025-01-01T00:01:00Z".into(),
            outcome: TrialOutcome::Failed {
                reason: "killed by SIGKILL, \"OOM\"\nat deadline".into(),
            },
        }
    }

    /// A finished run as the runner would write it, and what `load_run` must return for it.
    fn store_run(store: &mut Store, workload: &str) -> RunData {
        let mut meta = meta(workload);
        let trials = vec![
            ok_trial(1, 0),
            ok_trial(1, 1),
            failed_trial(2, 0),
            ok_trial(2, 1),
            ok_trial(4, 0),
        ];
        meta.id = store.begin_run(&meta).unwrap();
        for t in &trials {
            store.add_trial(meta.id, t).unwrap();
        }
        let extra = vec!["tasks > CPUs at N=4".to_owned()];
        store.add_warnings(meta.id, &extra).unwrap();
        store
            .finish_run(meta.id, RunStatus::Complete, "2025-01-01T00:02:00Z")
            .unwrap();
        meta.warnings.extend(extra);
        meta.status = RunStatus::Complete;
        meta.finished_at = Some("2025-01-01T00:02:00Z".into());
        RunData { meta, trials }
    }

    fn open_temp() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("scalelab.db")).unwrap();
        (dir, store)
    }

    fn run_round_trips_exactly(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let written = store_run(&mut store, "page_fault");
        assert_eq!(store.load_run(written.meta.id).unwrap(), written);
        assert_eq!(store.trial_counts(written.meta.id).unwrap(), (4, 1));
        // And again after reopening the file.
        let reopened = reopen(&store);
        assert_eq!(reopened.load_run(written.meta.id).unwrap(), written);
        assert_eq!(
            reopened.list_runs(&RunFilter::default()).unwrap(),
            vec![written.meta]
        );
    }

    /// Issue 16: the schema's CHECK on `pin` refused every new `--pin` strategy
    /// ("CHECK constraint failed: pin IN ('auto', 'core', 'none')").
    fn every_pin_strategy_is_stored_and_read_back(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        for pin in [
            Pin::Cores,
            Pin::Compact,
            Pin::SpreadNodes,
            Pin::None,
            Pin::Cpus(vec![3, 0, 1, 2]),
        ] {
            let mut meta = meta("page_fault");
            meta.pin = pin.clone();
            let id = store.begin_run(&meta).unwrap();
            assert_eq!(store.load_run(id).unwrap().meta.pin, pin);
        }
    }

    fn json_export_imports_to_an_equal_run_with_origin_id(b: Backend) {
        let Some((_dir2, mut target)) = fresh(b) else {
            return;
        };
        let (dir, mut source) = open_temp();
        let original = store_run(&mut source, "page_fault");
        let mut json = Vec::new();
        export_json(&original, &mut json).unwrap();
        let file = dir.path().join("run.json");
        fs::write(&file, &json).unwrap();

        let export = read_export(&file).unwrap();
        assert_eq!(export.schema_version, EXPORT_SCHEMA_VERSION);
        assert_eq!(export.run, original);

        store_run(&mut target, "other"); // so the new id differs from the original
        let id = target.import(&export).unwrap();
        assert_ne!(id, original.meta.id);
        let mut loaded = target.load_run(id).unwrap();
        assert_eq!(
            (loaded.meta.id, loaded.meta.origin_id),
            (id, Some(original.meta.id))
        );
        loaded.meta.id = original.meta.id;
        loaded.meta.origin_id = None;
        assert_eq!(loaded, original);
    }

    fn imported_running_run_reads_incomplete(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let mut data = store_run(&mut store, "page_fault");
        data.meta.status = RunStatus::Running;
        let export = model::record::RunExport {
            schema_version: EXPORT_SCHEMA_VERSION,
            tool_version: "0".into(),
            run: data,
        };
        let id = store.import(&export).unwrap();
        assert_eq!(
            store.load_run(id).unwrap().meta.status,
            RunStatus::Incomplete
        );
    }

    fn an_impossible_run_is_refused_by_import_and_nothing_is_stored(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let mut trial = ok_trial(2, 0);
        if let TrialOutcome::Ok(m) = &mut trial.outcome {
            m.window = Nanos(0);
        }
        let export = model::record::RunExport {
            schema_version: EXPORT_SCHEMA_VERSION,
            tool_version: "0".into(),
            run: RunData {
                meta: meta("page_fault"),
                trials: vec![trial],
            },
        };
        let err = store.import(&export).unwrap_err();
        assert!(matches!(err, StoreError::ImpossibleRun { .. }), "{err}");
        assert!(
            err.to_string().contains("trials[0] (N=2, trial 0).window"),
            "{err}"
        );
        assert!(store.list_runs(&RunFilter::default()).unwrap().is_empty());
        // A metric name the CLI refuses (`--metric 'a b=…'`) is refused by import too.
        let mut bad_metric = export.clone();
        bad_metric.run.trials = vec![ok_trial(2, 0)];
        bad_metric
            .run
            .meta
            .params
            .insert("metric.a b\u{1b}[2J".into(), "higher:([0-9]+)".into());
        let err = store.import(&bad_metric).unwrap_err();
        assert!(matches!(err, StoreError::ImpossibleRun { .. }), "{err}");
        assert!(err.to_string().contains("params.metric.a b"), "{err}");
        assert!(store.list_runs(&RunFilter::default()).unwrap().is_empty());
    }

    fn csv_has_a_header_and_one_quoted_row_per_trial(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let data = store_run(&mut store, "page_fault");
        let mut out = Vec::new();
        export_csv(&data, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "run_id,workload,variant,n,trial,status,window_s,ops,ops_per_sec,user_s,sys_s,minor_faults,\
         major_faults,voluntary_switches,involuntary_switches,block_in,block_out,run_delay_s,max_rss_kib,\
         cycles,instructions,cache_misses,failure"
        );
        let first = lines.next().unwrap();
        assert_eq!(
            first,
            format!(
                "{},page_fault,stock,1,0,ok,5.000123456,1000,{},4,{},12,0,3,4,5,6,0.000000777,,123456789,,,",
                data.meta.id,
                1000.0 / 5.000123456,
                (u64::MAX - 4_000_000_000) as f64 / 1e9
            )
        );
        // The failed trial's reason holds a comma, quotes and a newline: one quoted field.
        assert!(
            text.contains(
                ",failed,,,,,,,,,,,,,,,,,\"killed by SIGKILL, \"\"OOM\"\"\nat deadline\"\n"
            ),
            "{text}"
        );
        assert_eq!(text.matches("page_fault,stock").count(), data.trials.len());
    }

    fn resolve_accepts_id_last_and_last_k_and_explains_the_rest(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let path = store.location().to_string();
        let err = store.resolve("last").unwrap_err().to_string();
        assert_eq!(err, format!("no runs stored yet in {path}"));
        assert_eq!(
            store.resolve("42").unwrap_err().to_string(),
            "run 42 not found (see `scalelab ls`)"
        );

        let ids: Vec<i64> = (0..3)
            .map(|_| store.begin_run(&meta("w")).unwrap())
            .collect();
        assert_eq!(store.resolve("last").unwrap(), ids[2]);
        assert_eq!(store.resolve(" last ").unwrap(), ids[2]);
        assert_eq!(store.resolve("last~0").unwrap(), ids[2]);
        assert_eq!(store.resolve("last~2").unwrap(), ids[0]);
        assert_eq!(store.resolve(&ids[1].to_string()).unwrap(), ids[1]);
        assert_eq!(
            store.resolve("last~5").unwrap_err().to_string(),
            "`last~5`: only 3 runs stored (see `scalelab ls`)"
        );
        assert!(matches!(
            store.resolve("last~3"),
            Err(StoreError::NotEnoughRuns { stored: 3, .. })
        ));
        for bad in ["foo", "last~", "last~x", "last~-1", "lastx", "last~+1", ""] {
            let err = store.resolve(bad).unwrap_err();
            assert!(matches!(err, StoreError::BadRunSpec { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("`last~K`"), "{err}");
        }
    }

    fn list_filters_by_workload_variant_tags_and_params_oldest_first(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let a = store.begin_run(&meta("page_fault")).unwrap();
        let mut other = meta("open_close");
        other.variant = Some("patched".into());
        other.tags.insert("kernel".into(), "6.9".into());
        other.params.insert("pages".into(), "128".into());
        let b = store.begin_run(&other).unwrap();
        let c = store.begin_run(&meta("page_fault")).unwrap();

        let ids = |f: RunFilter| {
            store
                .list_runs(&f)
                .unwrap()
                .iter()
                .map(|m| m.id)
                .collect::<Vec<_>>()
        };
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(ids(RunFilter::default()), vec![a, b, c]);
        assert_eq!(
            ids(RunFilter {
                workload: Some("page_fault".into()),
                ..Default::default()
            }),
            vec![a, c]
        );
        assert_eq!(
            ids(RunFilter {
                variant: Some("patched".into()),
                ..Default::default()
            }),
            vec![b]
        );
        assert_eq!(
            ids(RunFilter {
                tags: vec![pair("kernel", "6.9")],
                ..Default::default()
            }),
            vec![b]
        );
        assert_eq!(
            ids(RunFilter {
                tags: vec![pair("kernel", "6.8"), pair("host", "a,b")],
                ..Default::default()
            }),
            vec![a, c]
        );
        assert_eq!(
            ids(RunFilter {
                tags: vec![pair("kernel", "6.8"), pair("host", "x")],
                ..Default::default()
            }),
            Vec::<i64>::new()
        );
        assert_eq!(
            ids(RunFilter {
                params: vec![pair("pages", "128")],
                ..Default::default()
            }),
            vec![b]
        );
        let both = RunFilter {
            workload: Some("page_fault".into()),
            params: vec![pair("pages", "64")],
            ..Default::default()
        };
        assert_eq!(ids(both), vec![a, c]);
    }

    fn an_extended_plan_updates_runs_and_tags_where_filters_see_them(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let mut m = meta("cmd");
        m.tags.insert("ab_order".into(), "AB".into());
        m.tags.insert("kernel".into(), "6.8".into());
        let id = store.begin_run(&m).unwrap();
        store
            .extend_plan(id, 8, &[("ab_order", "ABBA"), ("extended", "yes")])
            .unwrap();
        let loaded = store.load_run(id).unwrap().meta;
        assert_eq!(loaded.runs, 8);
        let tags: Vec<(&str, &str)> = loaded
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            tags,
            [
                ("ab_order", "ABBA"),
                ("extended", "yes"),
                ("host", "a,b"),
                ("kernel", "6.8")
            ]
        );
        let found = store
            .list_runs(&RunFilter {
                tags: vec![("ab_order".into(), "ABBA".into())],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(found.len(), 1);
        let stale = store
            .list_runs(&RunFilter {
                tags: vec![("ab_order".into(), "AB".into())],
                ..Default::default()
            })
            .unwrap();
        assert!(stale.is_empty());
    }

    fn writes_to_a_missing_run_are_errors(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let not_found =
            |r: Result<(), StoreError>| matches!(r, Err(StoreError::RunNotFound { id: 7 }));
        assert!(not_found(store.add_trial(7, &ok_trial(1, 0))));
        assert!(not_found(store.add_warnings(7, &["w".into()])));
        assert!(not_found(store.extend_plan(7, 4, &[("k", "v")])));
        assert!(not_found(store.finish_run(7, RunStatus::Complete, "t")));
        assert!(matches!(
            store.load_run(7),
            Err(StoreError::RunNotFound { id: 7 })
        ));
        assert!(matches!(
            store.trial_counts(7),
            Err(StoreError::RunNotFound { id: 7 })
        ));
    }

    /// Rewrites the owner columns of a run, as a run left behind by another process would have them.
    fn set_owner(path: &Path, id: i64, pid: i64, start_time: Option<i64>, boot_id: &str) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute(
        "UPDATE runs SET owner_pid = ?1, owner_start_time = ?2, owner_boot_id = ?3 WHERE id = ?4",
        rusqlite::params![pid, start_time, boot_id, id],
    )
    .unwrap();
    }

    fn start_time_of(pid: u32) -> i64 {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(19)
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn running_run_of_a_gone_owner_reads_incomplete() {
        let (_dir, mut store) = open_temp();
        let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .unwrap()
            .trim()
            .to_owned();
        let me = start_time_of(std::process::id());
        let status = |store: &Store, id| store.load_run(id).unwrap().meta.status;

        let mine = store.begin_run(&meta("w")).unwrap();
        assert_eq!(
            status(&store, mine),
            RunStatus::Running,
            "this very process owns it"
        );

        let other_boot = store.begin_run(&meta("w")).unwrap();
        set_owner(
            store.path().unwrap(),
            other_boot,
            i64::from(std::process::id()),
            Some(me),
            "another-boot",
        );
        assert_eq!(status(&store, other_boot), RunStatus::Incomplete);

        // pid_max is at most 2^22, so this pid never exists.
        let no_pid = store.begin_run(&meta("w")).unwrap();
        set_owner(
            store.path().unwrap(),
            no_pid,
            i64::from(i32::MAX),
            Some(1),
            &boot,
        );
        assert_eq!(status(&store, no_pid), RunStatus::Incomplete);

        // A live process (pid 1) with its real start time is a live owner; with another, a reused pid.
        let init = start_time_of(1);
        let alive = store.begin_run(&meta("w")).unwrap();
        set_owner(store.path().unwrap(), alive, 1, Some(init), &boot);
        assert_eq!(status(&store, alive), RunStatus::Running);
        let reused = store.begin_run(&meta("w")).unwrap();
        set_owner(store.path().unwrap(), reused, 1, Some(init + 1), &boot);
        assert_eq!(status(&store, reused), RunStatus::Incomplete);

        // Finished runs keep their status whatever became of their owner.
        store
            .finish_run(no_pid, RunStatus::Interrupted, "2025-01-01T00:03:00Z")
            .unwrap();
        assert_eq!(status(&store, no_pid), RunStatus::Interrupted);

        let listed: Vec<RunStatus> = store
            .list_runs(&RunFilter::default())
            .unwrap()
            .iter()
            .map(|m| m.status)
            .collect();
        use RunStatus::*;
        assert_eq!(
            listed,
            vec![Running, Incomplete, Interrupted, Running, Incomplete]
        );
    }

    #[test]
    fn garbage_file_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let header_then_junk: Vec<u8> = b"SQLite format 3\0"
            .iter()
            .copied()
            .chain((0..8192u32).map(|i| (i * 7) as u8))
            .collect();
        for (name, bytes) in [
            (
                "notes.txt",
                b"these are my notes, not a database\n".repeat(200),
            ),
            ("short", b"SQLite".to_vec()),
            ("fake.db", header_then_junk),
        ] {
            let path = dir.path().join(name);
            fs::write(&path, &bytes).unwrap();
            let err = Store::open(&path).unwrap_err();
            let text = err.to_string();
            assert!(
                matches!(err, StoreError::NotADatabase { .. }),
                "{name}: {text}"
            );
            assert!(
                text.contains(&path.display().to_string()) && text.contains("left untouched"),
                "{text}"
            );
            assert_eq!(fs::read(&path).unwrap(), bytes, "{name} was modified");
        }
        let mut left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["fake.db", "notes.txt", "short"],
            "no -wal/-shm/journal files created"
        );
    }

    #[test]
    fn newer_schema_is_refused_and_never_downgraded() {
        let (_dir, store) = open_temp();
        let path = store.path().unwrap().to_path_buf();
        drop(store);
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", store::SCHEMA_VERSION + 1)
                .unwrap();
        }
        let before = fs::read(&path).unwrap();
        let err = Store::open(&path).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, StoreError::NewerSchema { .. }), "{text}");
        assert!(
            text.contains("newer scalelab") && text.contains(&path.display().to_string()),
            "{text}"
        );
        assert_eq!(fs::read(&path).unwrap(), before);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, store::SCHEMA_VERSION + 1);
    }

    #[test]
    fn missing_parents_are_created_and_impossible_locations_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c/scalelab.db");
        Store::open(&deep).unwrap();
        assert!(deep.is_file());

        let err = Store::open(Path::new("/proc/scalelab-cannot-exist/x.db")).unwrap_err();
        assert!(matches!(err, StoreError::CreateDir { .. }), "{err}");
        assert!(
            err.to_string().contains("/proc/scalelab-cannot-exist")
                && err.to_string().contains("--db"),
            "{err}"
        );

        // A parent that is a file.
        let file = dir.path().join("plain");
        fs::write(&file, "x").unwrap();
        let err = Store::open(&file.join("x.db")).unwrap_err().to_string();
        assert!(
            err.contains("plain/x.db") && err.contains("Not a directory"),
            "{err}"
        );
    }

    #[test]
    fn read_only_location_is_a_clear_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        fs::create_dir(&ro).unwrap();
        let db = ro.join("scalelab.db");
        Store::open(&db).unwrap();
        fs::set_permissions(&db, fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        let privileged = fs::write(ro.join("probe"), "x").is_ok();
        let result = Store::open(&db);
        let new = Store::open(&ro.join("new.db"));
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).unwrap();
        if privileged {
            eprintln!("running with privileges that ignore permissions; nothing to check");
            return;
        }
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
        assert!(err.to_string().contains(&db.display().to_string()), "{err}");
        let err = new.unwrap_err();
        assert!(err.to_string().contains("new.db"), "{err}");
    }

    fn two_writers_at_once_both_succeed(b: Backend) {
        let Some((_dir, first)) = fresh(b) else {
            return;
        };
        let path = first.location().clone();
        drop(first);
        const TRIALS: u32 = 25;
        let writers: Vec<_> = ["alpha", "beta"]
            .into_iter()
            .map(|workload| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open_at(&path, true).unwrap();
                    let mut ids = Vec::new();
                    for _ in 0..2 {
                        let id = store.begin_run(&meta(workload)).unwrap();
                        for i in 0..TRIALS {
                            store.add_trial(id, &ok_trial(1 + i % 4, i)).unwrap();
                            store.add_warnings(id, &[format!("w{i}")]).unwrap();
                            store.list_runs(&RunFilter::default()).unwrap();
                        }
                        store
                            .finish_run(id, RunStatus::Complete, "2025-01-01T00:02:00Z")
                            .unwrap();
                        ids.push(id);
                    }
                    ids
                })
            })
            .collect();
        let ids: Vec<i64> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let store = Store::open_at(&path, false).unwrap();
        assert_eq!(store.list_runs(&RunFilter::default()).unwrap().len(), 4);
        for id in ids {
            let run = store.load_run(id).unwrap();
            assert_eq!(run.meta.status, RunStatus::Complete);
            assert_eq!(run.trials.len(), TRIALS as usize);
            assert_eq!(run.meta.warnings.len(), 1 + TRIALS as usize);
            assert!(
                run.trials
                    .iter()
                    .all(|t| t.outcome.measurement().unwrap().samples.len() == 3)
            );
        }
    }

    /// Set in the environment of a child writer process (see below).
    const CHILD_DB: &str = "SCALELAB_STORE_TEST_DB";

    #[test]
    fn two_writer_processes_at_once_both_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scalelab.db");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["alpha", "beta"]
            .into_iter()
            .map(|workload| {
                std::process::Command::new(&exe)
                    .args(["--exact", "store_api::store::writer_process", "--ignored"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .env(CHILD_DB, &path)
                    .env("SCALELAB_STORE_TEST_WORKLOAD", workload)
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "writer process failed:\n{text}");
        }
        let store = Store::open(&path).unwrap();
        let runs = store.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(runs.len(), 2);
        for run in runs {
            assert_eq!(run.status, RunStatus::Complete);
            assert_eq!(store.trial_counts(run.id).unwrap(), (20, 0));
        }
    }

    /// One writer process of `two_writer_processes_at_once_both_succeed`.
    #[test]
    #[ignore = "run by two_writer_processes_at_once_both_succeed as a child process"]
    fn writer_process() {
        let Some(path) = std::env::var_os(CHILD_DB) else {
            return;
        };
        let workload = std::env::var("SCALELAB_STORE_TEST_WORKLOAD").unwrap();
        let mut store = Store::open(Path::new(&path)).unwrap();
        let id = store.begin_run(&meta(&workload)).unwrap();
        for i in 0..20 {
            store.add_trial(id, &ok_trial(1 + i % 4, i)).unwrap();
        }
        store
            .finish_run(id, RunStatus::Complete, "2025-01-01T00:02:00Z")
            .unwrap();
    }

    /// `push` of the same runs twice, to a store of each backend: each run arrives once, equal
    /// to the original but for its id (whose `origin_id` it keeps), and the export of the copy
    /// is the export of the original (SQLite -> PostgreSQL -> export is lossless).
    fn push_twice_copies_each_run_once(b: Backend) {
        let Some((_dir, mut target)) = fresh(b) else {
            return;
        };
        let (_src_dir, mut source) = open_temp();
        let originals = [
            store_run(&mut source, "page_fault"),
            store_run(&mut source, "open_close"),
        ];
        // Still being written by this process: left for a later push.
        let running = source.begin_run(&meta("spin")).unwrap();
        store_run(&mut target, "already_there");

        let first = store::push(&source, &mut target, &RunFilter::default(), false).unwrap();
        assert_eq!(first.copied.len(), 2, "{first:?}");
        assert!(first.present.is_empty(), "{first:?}");
        assert_eq!(first.running, vec![running]);
        let second = store::push(&source, &mut target, &RunFilter::default(), false).unwrap();
        assert!(second.copied.is_empty(), "{second:?}");
        assert_eq!(second.present, first.copied);
        assert_eq!(target.list_runs(&RunFilter::default()).unwrap().len(), 3);

        for (original, (from, to)) in originals.iter().zip(&first.copied) {
            assert_eq!(*from, original.meta.id);
            let mut copy = target.load_run(*to).unwrap();
            assert_eq!(copy.meta.origin_id, Some(original.meta.id));
            assert_eq!(copy.meta.uuid, original.meta.uuid);
            copy.meta.id = original.meta.id;
            copy.meta.origin_id = None;
            assert_eq!(&copy, original);
            let (mut a, mut c) = (Vec::new(), Vec::new());
            export_json(original, &mut a).unwrap();
            export_json(&copy, &mut c).unwrap();
            assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(c).unwrap());
        }
    }

    /// `push --with-profiles`: a run's perf.data files and kallsyms snapshot reach the target
    /// once (a run pushed before without them gets them; a second push copies nothing), a file
    /// that is gone is named, and a host that lacks the files reads the stored copies, written
    /// into its own profiles folder (0700, files 0600) and reused.
    fn push_with_profiles_stores_the_files_once_and_another_host_reads_them(b: Backend) {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let Some((_dir, mut target)) = fresh(b) else {
            return;
        };
        let (src_dir, mut source) = open_temp();
        let mut m = meta("page_fault");
        let folder = src_dir
            .path()
            .join("profiles/scalelab.db")
            .join(m.uuid.to_string());
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&folder)
            .unwrap();
        let perf_data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(folder.join("n1-t1.perf.data"), &perf_data).unwrap();
        fs::write(folder.join("kallsyms"), b"ffffffff81000000 T _stext\n").unwrap();
        let profiled = |n: u32, index: u32, name: &str| {
            let mut t = ok_trial(n, index);
            if let TrialOutcome::Ok(me) = &mut t.outcome {
                me.profile = Some(ProfileRef {
                    path: folder.join(name).display().to_string(),
                    event: "cpu-clock".into(),
                    frequency: 999,
                    ..ProfileRef::default()
                });
            }
            t
        };
        m.status = RunStatus::Running;
        let id = source.begin_run(&m).unwrap();
        // N=2's file is gone from this host (deleted, or never kept).
        for t in [
            profiled(1, 0, "n1-t1.perf.data"),
            profiled(2, 0, "n2-t1.perf.data"),
        ] {
            source.add_trial(id, &t).unwrap();
        }
        source
            .finish_run(id, RunStatus::Complete, "2025-01-01T00:02:00Z")
            .unwrap();

        let plain = store::push(&source, &mut target, &RunFilter::default(), false).unwrap();
        assert!(plain.files.is_empty(), "{plain:?}");
        let there = plain.copied[0].1;
        assert!(target.run_file_names(there).unwrap().is_empty());

        let with = store::push(&source, &mut target, &RunFilter::default(), true).unwrap();
        assert_eq!(with.present, vec![(id, there)]);
        let (_, files) = &with.files[0];
        assert_eq!(files.files, 2, "{files:?}");
        assert_eq!(files.bytes, perf_data.len() as u64 + 26);
        assert_eq!(files.missing.len(), 1, "{files:?}");
        assert!(
            files.missing[0].contains("N=2 trial 1")
                && files.missing[0].contains("n2-t1")
                && files.missing[0].contains("gone"),
            "{files:?}"
        );
        assert_eq!(
            target.run_file_names(there).unwrap(),
            vec![
                ("kallsyms".to_string(), 26),
                ("n1-t1.perf.data".to_string(), perf_data.len() as u64)
            ]
        );
        let again = store::push(&source, &mut target, &RunFilter::default(), true).unwrap();
        let (_, files) = &again.files[0];
        assert_eq!((files.files, files.present), (0, 2), "{files:?}");

        // Another host: the recorded paths are not there.
        fs::remove_dir_all(&folder).unwrap();
        let reader = tempfile::tempdir().unwrap();
        let local_db = reader.path().join("scalelab.db");
        let mut run = target.load_run(there).unwrap();
        let pointed = store::profile_files::fetch_profiles(&target, &mut run, &local_db).unwrap();
        assert_eq!(pointed, 1);
        let copy = reader
            .path()
            .join("profiles/scalelab.db")
            .join(m.uuid.to_string());
        let profile = |run: &RunData, n: u32| {
            run.trials
                .iter()
                .find(|t| t.n == n)
                .and_then(|t| t.outcome.measurement())
                .and_then(|me| me.profile.clone())
                .unwrap()
                .path
        };
        assert_eq!(
            profile(&run, 1),
            copy.join("n1-t1.perf.data").display().to_string()
        );
        assert!(profile(&run, 2).starts_with(&folder.display().to_string()));
        assert_eq!(fs::read(copy.join("n1-t1.perf.data")).unwrap(), perf_data);
        assert_eq!(fs::read(copy.join("kallsyms")).unwrap().len(), 26);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&copy), 0o700);
        assert_eq!(mode(&copy.join("n1-t1.perf.data")), 0o600);
        // A second reader finds them in place.
        let mut again = target.load_run(there).unwrap();
        assert_eq!(
            store::profile_files::fetch_profiles(&target, &mut again, &local_db).unwrap(),
            1
        );
        assert_eq!(profile(&again, 1), profile(&run, 1));
        // Not the stored copy (another size): refused, not overwritten.
        fs::write(copy.join("n1-t1.perf.data"), b"other").unwrap();
        let mut third = target.load_run(there).unwrap();
        let err = store::profile_files::fetch_profiles(&target, &mut third, &local_db)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the stored copy"), "{err}");
    }

    /// A writer that dies (its connection, or its process, gone) leaves a `running` run that
    /// every other reader sees as `incomplete`, while a live writer's run reads `running`.
    fn a_run_whose_writer_is_gone_reads_incomplete_to_every_reader(b: Backend) {
        let Some((_dir, mut writer)) = fresh(b) else {
            return;
        };
        let reader = reopen(&writer);
        let id = writer.begin_run(&meta("w")).unwrap();
        writer.add_trial(id, &ok_trial(1, 0)).unwrap();
        assert_eq!(reader.load_run(id).unwrap().meta.status, RunStatus::Running);
        let done = writer.begin_run(&meta("w")).unwrap();
        writer
            .finish_run(done, RunStatus::Complete, "2025-01-01T00:02:00Z")
            .unwrap();
        match b {
            // The owner is this very process: only another boot id makes it gone.
            Backend::Sqlite => {
                let path = writer.path().unwrap().to_path_buf();
                drop(writer);
                set_owner(
                    &path,
                    id,
                    i64::from(std::process::id()),
                    None,
                    "another-boot",
                );
            }
            // The connection ends: the server drops the run's lock.
            Backend::Postgres => drop(writer),
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while reader.load_run(id).unwrap().meta.status == RunStatus::Running
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let runs = reader.list_runs(&RunFilter::default()).unwrap();
        let status: Vec<_> = runs.iter().map(|m| (m.id, m.status)).collect();
        assert_eq!(
            status,
            vec![(id, RunStatus::Incomplete), (done, RunStatus::Complete)]
        );
        assert_eq!(reader.load_run(id).unwrap().trials.len(), 1);
    }

    /// A run lock is the database's own: another database on the same server, whose run of the
    /// same id is running, does not keep a run whose writer is gone `running` (advisory locks
    /// are per database, and the liveness query read every database's).
    #[test]
    fn a_run_lock_held_in_another_database_keeps_no_run_running() {
        let Some((_a, mut other)) = fresh(Backend::Postgres) else {
            return;
        };
        let Some((_b, mut writer)) = fresh(Backend::Postgres) else {
            return;
        };
        let reader = reopen(&writer);
        let id = writer.begin_run(&meta("w")).unwrap();
        let held = other.begin_run(&meta("w")).unwrap();
        assert_eq!(
            held, id,
            "both databases' first run: the same id, the same lock key"
        );
        drop(writer);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while reader.load_run(id).unwrap().meta.status == RunStatus::Running
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(
            reader.load_run(id).unwrap().meta.status,
            RunStatus::Incomplete
        );
        assert_eq!(
            other.load_run(held).unwrap().meta.status,
            RunStatus::Running,
            "the other database's run still runs"
        );
    }

    /// `load_runs` (a history's batch) returns what `load_run` returns for each, in the order
    /// asked, across its chunks; a missing id is an error.
    fn many_runs_load_at_once_as_each_loads_alone(b: Backend) {
        let Some((_dir, mut store)) = fresh(b) else {
            return;
        };
        let mut ids: Vec<i64> = (0..3)
            .map(|i| store_run(&mut store, &format!("w{i}")).meta.id)
            .collect();
        ids.reverse();
        let alone: Vec<RunData> = ids.iter().map(|&id| store.load_run(id).unwrap()).collect();
        assert_eq!(store.load_runs(&ids).unwrap(), alone);
        assert!(store.load_runs(&[]).unwrap().is_empty());
        let many: Vec<i64> = (0..1200).map(|i| ids[i % 3]).collect();
        let loaded = store.load_runs(&many).unwrap();
        assert_eq!(loaded.len(), 1200);
        assert!(loaded.iter().zip(&many).all(|(r, &id)| r.meta.id == id));
        assert!(matches!(
            store.load_runs(&[ids[0], 999]),
            Err(StoreError::RunNotFound { id: 999 })
        ));
    }

    /// PostgreSQL: a database of another application, or of a newer scalelab, is refused and
    /// left untouched; a reading command never creates the tables.
    #[test]
    fn postgres_refuses_foreign_newer_and_missing_schemas() {
        let Some(server) = test_server::server_or_skip() else {
            return;
        };
        let open =
            |url: &str, create| Store::open_at(&Location::parse(Path::new(url)).unwrap(), create);
        let empty = server.create_database();
        let err = open(&empty, false).unwrap_err();
        assert!(matches!(err, StoreError::NoPgSchema { .. }), "{err}");
        let db = empty
            .split('?')
            .next()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        assert_eq!(
            server
                .psql(
                    &db,
                    "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                )
                .trim(),
            "0"
        );

        let foreign = server.create_database();
        let fdb = foreign
            .split('?')
            .next()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        server.psql(&fdb, "CREATE TABLE runs (x int)");
        let err = open(&foreign, true).unwrap_err();
        assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
        assert_eq!(
            server
                .psql(
                    &fdb,
                    "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                )
                .trim(),
            "1"
        );

        let newer = server.create_database();
        let ndb = newer
            .split('?')
            .next()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        drop(open(&newer, true).unwrap());
        server.psql(
            &ndb,
            &format!(
                "UPDATE scalelab_schema SET version = {}",
                store::SCHEMA_VERSION + 1
            ),
        );
        let err = open(&newer, true).unwrap_err();
        assert!(matches!(err, StoreError::NewerPgSchema { .. }), "{err}");
        assert_eq!(
            server
                .psql(&ndb, "SELECT version FROM scalelab_schema")
                .trim(),
            (store::SCHEMA_VERSION + 1).to_string()
        );
    }

    /// A password given in the URL never shows in an error.
    #[test]
    fn a_password_never_shows_in_a_connection_error() {
        let url = "postgres://team:hunter2@127.0.0.1:1/perf?connect_timeout=2";
        let err = Store::open_at(&Location::parse(Path::new(url)).unwrap(), true).unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("postgres://team:***@127.0.0.1:1/perf"),
            "{text}"
        );
        assert!(matches!(err, StoreError::Connect { .. }), "{text}");
    }

    fn trial_strategy() -> impl Strategy<Value = TrialRecord> {
        let usage = (
            prop::array::uniform8(any::<u64>()),
            any::<Option<u64>>(),
            any::<Option<u64>>(),
        )
            .prop_map(|(u, d, rss)| Usage {
                user: Nanos(u[0]),
                sys: Nanos(u[1]),
                minor_faults: u[2],
                major_faults: u[3],
                voluntary_switches: u[4],
                involuntary_switches: u[5],
                block_in: u[6],
                block_out: u[7],
                run_delay: d.map(Nanos),
                max_rss_kib: rss,
            });
        let counter = (
            ".{0,8}",
            any::<Option<u64>>(),
            any::<bool>(),
            any::<Option<String>>(),
        )
            .prop_map(|(event, value, multiplexed, note)| CounterValue {
                event,
                value,
                multiplexed,
                note,
            });
        let sample =
            (any::<u64>(), prop::collection::vec(any::<u64>(), 0..4)).prop_map(|(t, task_ops)| {
                SampleRecord {
                    t: Nanos(t),
                    task_ops,
                }
            });
        let step =
            (any::<String>(), any::<u64>(), usage.clone()).prop_map(|(name, wall, usage)| {
                StepRecord {
                    perf_record_cpu: None,
                    wrapper_wall: None,
                    name,
                    wall: Nanos(wall),
                    usage,
                    profile: None,
                    locks: None,
                    offcpu: None,
                }
            });
        let measurement = (
            any::<u64>(),
            prop::collection::vec(any::<u64>(), 0..6),
            usage,
            prop::collection::vec(counter, 0..3),
            prop::collection::btree_map(".{0,6}", any::<u64>(), 0..3),
            prop::collection::vec(any::<Option<usize>>(), 0..6),
            prop::collection::vec(sample, 0..4),
            prop::collection::vec(step, 0..3),
        )
            .prop_map(
                |(window, task_ops, usage, counters, extras, placement, samples, steps)| {
                    TrialOutcome::Ok(TrialMeasurement {
                        window: Nanos(window),
                        task_ops,
                        usage,
                        counters,
                        extras,
                        placement,
                        samples,
                        steps,
                        clock_window: None,
                        profile: None,
                        locks: None,
                        offcpu: None,
                        harness: None,
                        reported: None,
                    })
                },
            );
        let outcome = prop_oneof![
            measurement,
            any::<String>().prop_map(|reason| TrialOutcome::Failed { reason })
        ];
        (any::<u32>(), any::<u32>(), any::<String>(), outcome).prop_map(
            |(n, index, started_at, outcome)| TrialRecord {
                n,
                index,
                started_at,
                outcome,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn any_trials_round_trip(trials in prop::collection::vec(trial_strategy(), 0..5)) {
            let (_dir, mut store) = open_temp();
            let id = store.begin_run(&meta("w")).unwrap();
            for t in &trials {
                store.add_trial(id, t).unwrap();
            }
            prop_assert_eq!(store.load_run(id).unwrap().trials, trials);
        }
    }
}
