//! One step of an automatic bisection: step 0 measures the bad end against the good end and
//! says what is bisected (or refuses the range); every later step builds a commit in the `C`
//! worktree and measures it in groups of three against both ends' builds, then stores its
//! verdict with the ids of the runs it measured, in one write.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::build::{self, Area, Built};
use super::error::BisectError;
use super::spec::{BisectSpec, Role, SideOf};
use crate::lifecycle::interleave::{Decided, Sides, interleave};
use crate::lifecycle::{AbPolicy, Session, SweepEnd};
use analysis::bisect::decide::{self, Bisected, Class};
use analysis::comparison::Comparison;
use model::bisection::short;
use model::number_text::{plural, signed_percent};
use model::record::{RunData, TrialOutcome};
use model::timestamp::now_rfc3339;
use store::{BisectCommit, BisectRecord, BisectStep, StepVerdict};

/// Whether a stored step has its verdict (a `measuring` one is redone).
pub(super) fn decided(v: StepVerdict) -> bool {
    !matches!(v, StepVerdict::Measuring)
}

/// The bisection's folder, and each end's commit and worktree.
pub(super) struct Builds {
    pub(super) area: Area,
    pub(super) good: PathBuf,
    pub(super) bad: PathBuf,
    pub(super) good_hash: String,
    pub(super) bad_hash: String,
}

/// Builds the worktree `dir` with the bisection's `--build`, its output into `log`.
pub(super) fn run_build(
    spec: &BisectSpec,
    dir: &Path,
    log: std::fs::File,
    session: &Session<'_>,
) -> Result<Built, BisectError> {
    let command = spec.build.as_deref().unwrap_or("true");
    build::build(
        command,
        dir,
        log,
        spec.build_timeout.as_duration(),
        session.stop,
    )
}

/// What step 0 found: what to bisect, a range that is not a regression, or a stop.
pub(super) enum Confirmation {
    At(Bisected),
    Refused,
    Interrupted,
}

/// Step 0: the bad end against the good end, measured unless already decided. The N at which
/// it REGRESSED are the ones bisected, at the threshold its gap sets (see `decide`).
pub(super) fn confirmed_points(
    id: i64,
    spec: &BisectSpec,
    record: &BisectRecord,
    builds: &Builds,
    session: &mut Session<'_>,
) -> Result<Confirmation, BisectError> {
    if let Some(s) = record
        .steps
        .iter()
        .find(|s| s.step == 0 && decided(s.verdict))
    {
        if s.verdict == StepVerdict::NotRegressed {
            return Ok(Confirmation::Refused);
        }
        let (good, bad) = (load(session, s.run_good)?, load(session, s.run_bad)?);
        let ends = spec.compare(&good, &bad, spec.threshold);
        return Ok(match decide::bisected(&ends) {
            Some(b) => Confirmation::At(b),
            None => Confirmation::Refused,
        });
    }
    let (good_hash, bad_hash) = (&record.good, &record.bad);
    let started = Instant::now();
    let mut row = measuring(0, record.commits.len() as u32 - 1);
    session.store.put_bisect_step(id, &row)?;
    session.progress.note(&format!(
        "bisect {id}: step 0: is bad {} slower than good {}?",
        short(bad_hash),
        short(good_hash)
    ));
    let sides = [
        SideOf {
            role: Role::Good,
            hash: good_hash,
            dir: Some(&builds.good),
        },
        SideOf {
            role: Role::Bad,
            hash: bad_hash,
            dir: Some(&builds.bad),
        },
    ];
    let mut plans = sides
        .iter()
        .map(|&side| spec.plan(id, 0, side, None))
        .collect::<Result<Vec<_>, _>>()?;
    let ends_at = (spec.threshold, ['G', 'B'].as_slice());
    let ids = match measure(spec, 0, &mut plans, ends_at, &[(0, 1)], None, session)? {
        Some(ids) => ids,
        None => return Ok(Confirmation::Interrupted),
    };
    let (good, bad) = (load(session, Some(ids[0]))?, load(session, Some(ids[1]))?);
    for (end, data) in [("good", &good), ("bad", &bad)] {
        require_measured(id, end, data)?;
    }
    let ends = spec.compare(&good, &bad, spec.threshold);
    let bisected = decide::bisected(&ends);
    row.run_good = Some(ids[0]);
    row.run_bad = Some(ids[1]);
    row.elapsed_ns = Some(nanos(started.elapsed()));
    row.finished_at = Some(now_rfc3339());
    match &bisected {
        None => {
            row.verdict = StepVerdict::NotRegressed;
            row.reason = Some(decide::not_regressed_reason(&ends, &spec.metric));
        }
        Some(b) => {
            row.verdict = StepVerdict::Regressed;
            row.reason = Some(ends_summary(&ends, b));
        }
    }
    session.store.put_bisect_step(id, &row)?;
    session.progress.note(&format!(
        "bisect {id}: step 0: {}",
        row.reason.as_deref().unwrap_or_default()
    ));
    Ok(match bisected {
        None => Confirmation::Refused,
        Some(b) => Confirmation::At(b),
    })
}

/// What the ends' comparison says at the N bisected.
fn ends_summary(ends: &Comparison, bisected: &Bisected) -> String {
    let at = &bisected.at;
    let parts: Vec<String> = ends
        .points
        .iter()
        .filter(|p| at.contains(&p.n))
        .filter_map(|p| p.change.map(|c| (p.n, c)))
        .map(|(n, c)| {
            format!(
                "N={n}: REGRESSED {} [{}, {}]",
                signed_percent(c.relative_shift.point),
                signed_percent(c.relative_shift.lower),
                signed_percent(c.relative_shift.upper)
            )
        })
        .collect();
    format!(
        "the bad end is slower: {}; bisecting at N={}, commits judged at ±{}",
        parts.join("; "),
        model::number_text::comma_list(at),
        model::number_text::percent(bisected.threshold)
    )
}

/// A step row as stored before its build.
fn measuring(step: u32, position: u32) -> BisectStep {
    BisectStep {
        step,
        position,
        verdict: StepVerdict::Measuring,
        reason: None,
        run_good: None,
        run_commit: None,
        run_bad: None,
        build_log: None,
        build_ns: None,
        elapsed_ns: None,
        started_at: now_rfc3339(),
        finished_at: None,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Builds and measures `commit` against both ends at the N bisected, and stores the verdict.
/// `None` when interrupted (the step stays `measuring`, to be redone).
pub(super) fn test_commit(
    id: i64,
    spec: &BisectSpec,
    step: u32,
    commit: &BisectCommit,
    builds: &Builds,
    bisected: &Bisected,
    session: &mut Session<'_>,
) -> Result<Option<BisectStep>, BisectError> {
    let at = bisected.at.as_slice();
    let started = Instant::now();
    let mut row = measuring(step, commit.position);
    session.store.put_bisect_step(id, &row)?;
    let dir = builds
        .area
        .worktree(&spec.repo, build::STEP, &commit.hash)?;
    let (log, log_path) = builds
        .area
        .new_log(&format!("step{step}-{}", short(&commit.hash)))?;
    row.build_log = Some(log_path.display().to_string());
    let built = run_build(spec, &dir, log, session)?;
    let skip = |row: &mut BisectStep, reason: String| {
        row.verdict = StepVerdict::Skip;
        row.reason = Some(reason);
    };
    match built {
        Built::Interrupted => return Ok(None),
        Built::Failed(reason) => skip(&mut row, format!("build failed: {reason}")),
        Built::Ok(took) => {
            row.build_ns = Some(nanos(took));
            let sides = [
                (Role::Good, builds.good_hash.as_str(), &builds.good),
                (Role::Commit, commit.hash.as_str(), &dir),
                (Role::Bad, builds.bad_hash.as_str(), &builds.bad),
            ];
            let plans = sides
                .iter()
                .map(|(role, hash, dir)| {
                    let side = SideOf {
                        role: *role,
                        hash,
                        dir: Some(dir.as_path()),
                    };
                    spec.plan(id, step, side, Some(at))
                })
                .collect::<Result<Vec<_>, _>>();
            match plans {
                // The commit's build has no runnable command: it cannot be measured.
                Err(e) => skip(&mut row, format!("cannot measure this build: {e}")),
                Ok(mut plans) => {
                    let watch = [(0, 1), (2, 1)];
                    let sides = (bisected.threshold, ['G', 'C', 'B'].as_slice());
                    let decided = |c: &[Comparison], runs: &[RunData]| {
                        let midpoint = spec.midpoint(&runs[0], &runs[2], &runs[1]);
                        !matches!(
                            decide::classify(&c[0], &c[1], &midpoint, at),
                            Class::Undecided(_)
                        )
                    };
                    let Some(ids) = measure(
                        spec,
                        step,
                        &mut plans,
                        sides,
                        &watch,
                        Some(&decided),
                        session,
                    )?
                    else {
                        return Ok(None);
                    };
                    row.run_good = Some(ids[0]);
                    row.run_commit = Some(ids[1]);
                    row.run_bad = Some(ids[2]);
                    let good = load(session, Some(ids[0]))?;
                    let candidate = load(session, Some(ids[1]))?;
                    let bad = load(session, Some(ids[2]))?;
                    require_measured(id, "good", &good)?;
                    require_measured(id, "bad", &bad)?;
                    match first_failure_if_all_failed(&candidate) {
                        Some(reason) => {
                            skip(
                                &mut row,
                                format!("every trial failed (the first: {reason})"),
                            );
                        }
                        None => {
                            let vs_good = spec.compare(&good, &candidate, bisected.threshold);
                            let vs_bad = spec.compare(&bad, &candidate, bisected.threshold);
                            let midpoint = spec.midpoint(&good, &bad, &candidate);
                            match decide::classify(&vs_good, &vs_bad, &midpoint, at) {
                                Class::Good => row.verdict = StepVerdict::Good,
                                Class::Bad => row.verdict = StepVerdict::Bad,
                                Class::Unstable(why) => skip(
                                    &mut row,
                                    format!(
                                        "after {} per N: {why}",
                                        plural(candidate.meta.runs as usize, "group")
                                    ),
                                ),
                                Class::Undecided(why) => skip(
                                    &mut row,
                                    format!(
                                        "undecided after {} per N: {why}",
                                        plural(candidate.meta.runs as usize, "group")
                                    ),
                                ),
                            }
                        }
                    }
                }
            }
        }
    }
    row.elapsed_ns = Some(nanos(started.elapsed()));
    row.finished_at = Some(now_rfc3339());
    session.store.put_bisect_step(id, &row)?;
    Ok(Some(row))
}

/// Measures `plans` (named by `letters`) interleaved with step `step`'s seed, growing while a
/// watched comparison cannot decide ±`threshold` or `decided` says no; their run ids, or `None`
/// when interrupted.
fn measure(
    spec: &BisectSpec,
    step: u32,
    plans: &mut [crate::plan::Plan],
    (threshold, letters): (f64, &[char]),
    watch: &[(usize, usize)],
    decided: Option<&Decided<'_>>,
    session: &mut Session<'_>,
) -> Result<Option<Vec<i64>>, BisectError> {
    let policy = AbPolicy {
        seed: spec.step_seed(step),
        max_runs: spec.max_runs,
        options: spec.options_at(threshold),
        metric: spec.metric.clone(),
    };
    let sides = Sides {
        name: "bisect",
        letters,
        watch,
        decided,
    };
    let done = interleave(plans, &sides, &policy, session, None)?;
    Ok((done.end == SweepEnd::Complete).then_some(done.ids))
}

fn load(session: &Session<'_>, run: Option<i64>) -> Result<RunData, BisectError> {
    let run = run.ok_or_else(|| {
        BisectError::Invalid("a decided step without its runs (a damaged database)".into())
    })?;
    Ok(session.store.load_run(run)?)
}

/// The first failure when no trial of the run succeeded.
fn first_failure_if_all_failed(data: &RunData) -> Option<String> {
    let mut first = None;
    for t in &data.trials {
        match &t.outcome {
            TrialOutcome::Ok(_) => return None,
            TrialOutcome::Failed { reason } => {
                first.get_or_insert_with(|| reason.clone());
            }
        }
    }
    Some(first.unwrap_or_else(|| "no trial ran".into()))
}

pub(super) fn require_measured(
    id: i64,
    end: &'static str,
    data: &RunData,
) -> Result<(), BisectError> {
    match first_failure_if_all_failed(data) {
        Some(reason) => Err(BisectError::EndMeasuredNothing {
            end,
            run: data.meta.id,
            bisect: id,
            reason,
        }),
        None => Ok(()),
    }
}
