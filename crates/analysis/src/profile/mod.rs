//! Profiles across a run: each point's profiled trials read back from their perf.data (only
//! the samples inside each trial's measurement window), merged per N and normalised per op.
//!
//! Cost per op of function f at N = samples(f) × period ÷ ops done in those trials' windows:
//! ns per op for `cpu-clock` (its period is in ns), cycles per op for `cycles`. Comparable across
//! N and across runs, unlike shares, which always add up to 100%. Cross-run analyses live beside
//! this: [`what_grows`] (what grows with N) and [`diff()`] (run against run).

mod diff;
mod grows;
mod point;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use perf_read::{Profile, ProfileOptions, read_profile};

use crate::AnalysisError;
use model::profile_path::check_own_profile;
use model::record::RunData;

pub use self::diff::{FunctionDiff, Presence, diff};
pub use self::grows::{Growth, GrowthReport, MIN_SHARE, what_grows};
use self::point::function_key;
#[cfg(test)]
use self::point::is_lock_function;
pub use self::point::{DsoRow, FunctionRow, PointProfile, TrialProfile};

/// The kallsyms snapshot kept beside a run's profiles (never through a link).
pub(crate) fn kallsyms_for(perf_data: &Path) -> Option<PathBuf> {
    let p = perf_data.parent()?.join(model::record::KALLSYMS);
    std::fs::symlink_metadata(&p)
        .is_ok_and(|m| m.is_file())
        .then_some(p)
}

/// The profiles of `run` read back ([`load_run`]) when any trial recorded one; none otherwise.
pub fn load_if_profiled(run: &RunData) -> Result<Vec<PointProfile>, AnalysisError> {
    let profiled = run
        .trials
        .iter()
        .any(|t| t.outcome.measurement().is_some_and(|m| m.profile.is_some()));
    if profiled {
        load_run(run)
    } else {
        Ok(Vec::new())
    }
}

/// Reads every profiled trial of `run`, merged per N in the run's point order.
pub fn load_run(run: &RunData) -> Result<Vec<PointProfile>, AnalysisError> {
    let mut points = Vec::new();
    for &n in &run.meta.points {
        let mut parts = Vec::new();
        let mut servers = Vec::new();
        let mut servers_unread = Vec::new();
        for t in run.trials.iter().filter(|t| t.n == n) {
            let Some(m) = t.outcome.measurement() else {
                continue;
            };
            let Some(pr) = &m.profile else { continue };
            check_own_profile(&run.meta, n, t.index, &pr.path).map_err(AnalysisError::Input)?;
            let path = Path::new(&pr.path);
            let options = ProfileOptions {
                kallsyms: kallsyms_for(path),
                window: m.clock_window.map(|w| (w.start.0, w.end.0)),
                threads: (!pr.threads.is_empty()).then(|| {
                    let mut t = pr.threads.clone();
                    t.sort_unstable();
                    t
                }),
                partners: {
                    let mut t = pr.partner_threads.clone();
                    t.sort_unstable();
                    t
                },
                roots: Vec::new(),
            };
            let mut profile = read_profile(path, &options)?;
            for note in profile
                .notes
                .iter_mut()
                .filter(|n| n.as_str() == perf_read::NO_KALLSYMS_NOTE)
            {
                note.push_str(" (set kernel.kptr_restrict=0, or run as root, when recording)");
            }
            parts.push((pr.path.clone(), m.work(), profile));
            if let Some(path) = &pr.servers_path {
                // The servers' file is evidence beside the command's: one that cannot be read
                // is said, not an error.
                match read_servers(run, (n, t.index), (path, &pr.servers_pids), m.clock_window) {
                    Ok(p) => servers.push((path.clone(), m.work(), p)),
                    Err(why) => servers_unread.push(why),
                }
            }
        }
        if !parts.is_empty() {
            let mut point = merge(n, parts);
            if !servers.is_empty() {
                let mut s = merge(n, servers);
                s.notes.extend(servers_unread);
                point.servers = Some(Box::new(s));
            }
            points.push(point);
        }
    }
    Ok(points)
}

/// One trial's servers' profile (`perf record -a` beside the command): the samples of
/// processes `pids` and of what they forked, inside the trial's window.
fn read_servers(
    run: &RunData,
    (n, index): (u32, u32),
    (path, pids): (&str, &[u32]),
    window: Option<model::record::ClockWindow>,
) -> Result<Profile, String> {
    check_own_profile(&run.meta, n, index, path)?;
    if pids.is_empty() {
        return Err(format!(
            "the servers' profile {path} names no process; not read"
        ));
    }
    let path = Path::new(path);
    let options = ProfileOptions {
        kallsyms: kallsyms_for(path),
        window: window.map(|w| (w.start.0, w.end.0)),
        threads: None,
        partners: Vec::new(),
        roots: pids.to_vec(),
    };
    read_profile(path, &options)
        .map_err(|e| format!("the servers' profile {}: {e}", path.display()))
}

/// One perf.data on its own (no run, no ops): `scalelab profile --perf-data FILE`.
pub fn load_file(path: &Path, kallsyms: Option<&Path>) -> Result<PointProfile, AnalysisError> {
    let options = ProfileOptions {
        kallsyms: kallsyms.map(Path::to_path_buf),
        window: None,
        threads: None,
        partners: Vec::new(),
        roots: Vec::new(),
    };
    let mut profile = read_profile(path, &options)?;
    // A file from anywhere: its kernel's symbols are the recording machine's, not ours.
    for note in profile
        .notes
        .iter_mut()
        .filter(|n| n.as_str() == perf_read::NO_KALLSYMS_NOTE)
    {
        note.push_str(
            " — give the recording machine's symbols with --kallsyms FILE (a copy of its \
             /proc/kallsyms, taken as root while the recorded kernel ran)",
        );
    }
    Ok(merge(0, vec![(path.display().to_string(), 0.0, profile)]))
}

/// (name, dso, kernel): how functions are matched across the trials of one point.
type FunctionKey = (String, String, bool);
/// (self samples, self period, total samples, total period, size).
type FunctionSums = (u64, u64, u64, u64, Option<u64>);

/// Merges the profiles of one point's trials, matching functions by name and DSO.
pub(crate) fn merge(n: u32, parts: Vec<(String, f64, Profile)>) -> PointProfile {
    let event = parts
        .first()
        .map(|(_, _, p)| p.event.clone())
        .unwrap_or_default();
    let unit = if event.contains("clock") {
        "ns"
    } else {
        "cycles"
    }
    .to_string();
    let mut out = PointProfile {
        n,
        event,
        unit,
        files: Vec::new(),
        ops: 0.0,
        samples: 0,
        period: 0,
        outside_window: 0,
        other_threads: 0,
        partner_period: 0,
        throttled: 0,
        lost: 0,
        functions: Vec::new(),
        dsos: Vec::new(),
        folded: Vec::new(),
        notes: Vec::new(),
        trials: Vec::new(),
        servers: None,
    };
    // (name, dso, kernel) -> (self samples, self period, total samples, total period, size)
    let mut funcs: HashMap<FunctionKey, FunctionSums> = HashMap::new();
    let mut dsos: HashMap<(String, bool), (u64, u64)> = HashMap::new();
    let mut folded: HashMap<String, u64> = HashMap::new();
    for (file, ops, p) in parts {
        out.files.push(file);
        out.ops += ops;
        out.samples += p.tally.samples;
        out.period += p.tally.period;
        out.outside_window += p.tally.outside_window;
        out.other_threads += p.tally.other_threads;
        out.partner_period += p.tally.partner_period;
        out.throttled += p.tally.throttled;
        out.lost += p.tally.lost;
        for note in p.notes {
            if !out.notes.contains(&note) {
                out.notes.push(note);
            }
        }
        let mut trial = TrialProfile {
            ops,
            self_period: HashMap::new(),
        };
        for f in &p.functions {
            *trial
                .self_period
                .entry(function_key(&f.name, &f.dso))
                .or_default() += f.self_period;
            let e = funcs
                .entry((f.name.clone(), f.dso.clone(), f.kernel))
                .or_insert((0, 0, 0, 0, f.size));
            e.0 += f.self_samples;
            e.1 += f.self_period;
            e.2 += f.total_samples;
            e.3 += f.total_period;
        }
        for d in &p.dsos {
            let e = dsos.entry((d.dso.clone(), d.kernel)).or_default();
            e.0 += d.samples;
            e.1 += d.period;
        }
        for s in &p.stacks {
            let line: Vec<String> = s
                .frames
                .iter()
                .map(|&i| {
                    let f = &p.functions[i as usize];
                    let name = f.name.replace(';', ":");
                    if f.kernel {
                        format!("{name}_[k]")
                    } else if name == "[unknown]" {
                        // Code of a stripped binary: which binary it is, at least.
                        function_key(&name, &f.dso.replace(';', ":"))
                    } else {
                        name
                    }
                })
                .collect();
            *folded.entry(line.join(";")).or_default() += s.samples;
        }
        out.trials.push(trial);
    }
    let total = out.period.max(1) as f64;
    let per_op = |period: u64| (out.ops > 0.0).then(|| period as f64 / out.ops);
    out.functions = funcs
        .into_iter()
        .map(
            |((name, dso, kernel), (ss, sp, ts, tp, size))| FunctionRow {
                name,
                dso,
                kernel,
                self_share: 100.0 * sp as f64 / total,
                total_share: 100.0 * tp as f64 / total,
                self_samples: ss,
                total_samples: ts,
                cost_per_op: per_op(sp),
                total_cost_per_op: per_op(tp),
                size,
                load: size.filter(|&s| s > 0).map(|s| ss as f64 / s as f64),
            },
        )
        .collect();
    out.functions.sort_by(|a, b| {
        b.self_share
            .total_cmp(&a.self_share)
            .then(b.total_share.total_cmp(&a.total_share))
            .then_with(|| a.name.cmp(&b.name))
    });
    out.dsos = dsos
        .into_iter()
        .map(|((dso, kernel), (samples, period))| DsoRow {
            dso,
            kernel,
            share: 100.0 * period as f64 / total,
            samples,
        })
        .collect();
    out.dsos
        .sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.dso.cmp(&b.dso)));
    out.folded = folded.into_iter().collect();
    out.folded.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_read::{FunctionCost, StackCost};

    fn func(name: &str, self_period: u64, total_period: u64) -> FunctionCost {
        FunctionCost {
            name: name.into(),
            dso: "[kernel]".into(),
            kernel: true,
            self_samples: self_period / 10,
            self_period,
            total_samples: total_period / 10,
            total_period,
            size: Some(100),
        }
    }

    #[test]
    fn a_perf_data_outside_the_runs_own_folder_is_refused() {
        let meta = model::test_runs::meta(3, "spin", &[1]);
        let own = format!("/db/profiles/lab.db/{}/n1-t1.perf.data", meta.uuid);
        let base = tempfile::tempdir().unwrap();
        let real = base.path().join(meta.uuid.to_string());
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("n1-t1.perf.data"), b"x").unwrap();
        let real = real.join("n1-t1.perf.data").display().to_string();
        check_own_profile(&meta, 1, 0, &real).unwrap();
        for (stored, says) in [
            (
                "/db/profiles/lab.db/00000000-0000-4000-8000-000000000000/n1-t1.perf.data"
                    .to_string(),
                "another run",
            ),
            (
                "/db/profiles/run3/n1-t1.perf.data".to_string(),
                "older scalelab",
            ),
            (own.replace("/n1-t1", "/../x/n1-t1"), "another run"),
            (own.clone(), "gone"),
        ] {
            let err = check_own_profile(&meta, 1, 0, &stored)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&stored) && err.contains(says), "{err}");
        }
        let link = base.path().join(meta.uuid.to_string()).join("link");
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        let err = check_own_profile(&meta, 1, 0, link.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn merging_trials_sums_periods_and_ops_and_normalises() {
        let p = Profile {
            event: "cpu-clock".into(),
            tally: perf_read::SampleTally {
                samples: 10,
                period: 100,
                ..perf_read::SampleTally::default()
            },
            functions: vec![
                func("clear_page_erms", 60, 60),
                func("exc_page_fault", 40, 100),
            ],
            stacks: vec![StackCost {
                frames: vec![1, 0],
                samples: 6,
                period: 60,
            }],
            ..Profile::default()
        };
        let m = merge(
            2,
            vec![("a".into(), 50.0, p.clone()), ("b".into(), 50.0, p)],
        );
        assert_eq!(m.unit, "ns");
        assert_eq!(m.ops, 100.0);
        let top = &m.functions[0];
        assert_eq!(top.name, "clear_page_erms");
        assert!((top.self_share - 60.0).abs() < 1e-9);
        assert_eq!(top.cost_per_op, Some(1.2));
        assert_eq!(top.load, Some(0.12));
        // Each file is kept as a trial of its own, with its ops.
        assert_eq!(m.trials.len(), 2);
        assert_eq!(m.trials[1].ops, 50.0);
        assert_eq!(m.trials[1].cost_per_op("clear_page_erms"), Some(1.2));
        assert_eq!(m.trials[1].cost_per_op("absent"), Some(0.0));
        assert_eq!(
            m.folded,
            vec![("exc_page_fault_[k];clear_page_erms_[k]".to_string(), 12)]
        );
        assert!(is_lock_function("native_queued_spin_lock_slowpath"));
        assert!(!is_lock_function("clear_page_erms"));
    }

    /// Issue 13: `find_get_block_common` was called a kernel lock because "block" contains
    /// "lock"; whole name parts are matched now.
    #[test]
    fn lock_functions_are_matched_by_whole_name_parts() {
        for name in [
            "native_queued_spin_lock_slowpath",
            "_raw_spin_lock_irqsave",
            "_raw_spin_unlock_irqrestore",
            "queued_read_lock_slowpath",
            "__mutex_lock.constprop.0",
            "mutex_unlock",
            "rwsem_down_write_slowpath",
            "osq_lock",
            "futex_wait_queue",
            "do_raw_spin_trylock",
            "lockref_get_not_zero",
            "rcu_read_unlock_strict",
            "__pv_queued_spin_unlock_slowpath",
            "_raw_read_lock",
        ] {
            assert!(is_lock_function(name), "{name}");
        }
        for name in [
            "find_get_block_common",
            "__find_get_block",
            "block_write_end",
            "clockevents_program_event",
            "ktime_get_update_offsets_now",
            "blockable_page_cache_readahead",
            "clear_page_erms",
        ] {
            assert!(!is_lock_function(name), "{name}");
        }
    }
}
