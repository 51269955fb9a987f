//! The automatic bisection: [`start`] checks the range and stores the bisection, [`resume`]
//! takes a stopped one back; both then drive it — build the ends, confirm the regression (step
//! 0), then test commits one step at a time until the search has its answer.
//!
//! Crash safety comes from the order of writes: a step is stored as `measuring` before its
//! build, its runs commit every trial as it ends, and its verdict is stored with its run ids in
//! one transaction once decided. A killed scalelab leaves at most one step `measuring`; resuming
//! replays every decided step from the store (nothing decided is measured again) and redoes
//! that one, with the same step number and fresh runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::build::{self, Area, Built};
use super::decide::{self, Class};
use super::git::{self, Commit};
use super::search::{Mark, Next, Search};
use super::spec::{BisectSpec, Role, SideOf};
use super::{BisectEnd, BisectError, BisectOutcome, short};
use crate::analysis::comparison::Comparison;
use crate::lifecycle::interleave::{Sides, interleave};
use crate::lifecycle::{AbPolicy, Session, SweepEnd};
use crate::number_text::{plural, signed_percent};
use crate::record::{RunData, TrialOutcome};
use crate::store::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict};
use crate::timestamp::now_rfc3339;

/// Checks the range of `spec` (resolving its repository to the top folder), stores the
/// bisection and drives it (with `--no-build`: stores it and waits for the first mark).
pub fn start(
    mut spec: BisectSpec,
    session: &mut Session<'_>,
) -> Result<BisectOutcome, BisectError> {
    spec.repo = git::toplevel(&spec.repo)?;
    let commits = checked_range(&spec)?;
    if spec.build.is_none() {
        return super::manual::begin(&spec, &commits, session);
    }
    if spec.measure.command.is_none() {
        return Err(BisectError::Invalid(
            "a built-in workload measures what is installed, so the good end, the bad end and \
             a commit cannot be measured side by side: bisect it with --no-build (install or \
             boot each commit, then `scalelab bisect mark`), or measure a command of the build \
             with --cmd"
                .into(),
        ));
    }
    let stored: Vec<BisectCommit> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| BisectCommit {
            position: i as u32,
            hash: c.hash.clone(),
            subject: c.subject.clone(),
        })
        .collect();
    let id = session
        .store
        .begin_bisect(&spec.to_json()?, &stored, &now_rfc3339())?;
    session.progress.note(&format!(
        "bisect {id}: {} between good {} and bad {}; roughly {} (`scalelab bisect --resume {id}` \
         continues after Ctrl-C)",
        plural(commits.len() - 2, "commit"),
        short(&commits[0].hash),
        short(&commits[commits.len() - 1].hash),
        plural(
            Search::new(commits.len() as u32).steps_left() as usize,
            "step"
        ),
    ));
    drive(id, &spec, session)
}

/// Takes back bisection `id` (the newest unfinished one when `None`) and drives it on; a
/// finished one is returned as it is.
pub fn resume(id: Option<i64>, session: &mut Session<'_>) -> Result<BisectOutcome, BisectError> {
    let id = match id {
        Some(id) => id,
        None => super::latest_unfinished(session.store)?.ok_or_else(|| {
            BisectError::Nothing(
                "no unfinished bisection to resume in this database (`scalelab bisect --list` \
                 lists them)"
                    .into(),
            )
        })?,
    };
    let record = session.store.bisect(id)?;
    if record.status.is_finished() {
        return Ok(BisectOutcome {
            id,
            end: BisectEnd::Finished(record.status),
        });
    }
    let spec = BisectSpec::from_json(id, &record.spec)?;
    if spec.build.is_none() {
        return Err(BisectError::Nothing(format!(
            "bisection {id} builds nothing (--no-build): boot or install the commit \
             `scalelab bisect next {id}` names, then `scalelab bisect mark {id}`"
        )));
    }
    session.store.claim_bisect(id)?;
    session.progress.note(&format!(
        "bisect {id}: resuming after {}",
        plural(
            record.steps.iter().filter(|s| decided(s.verdict)).count(),
            "decided step"
        )
    ));
    drive(id, &spec, session)
}

/// The range of `spec`, checked: two different commits, the good one an ancestor of the bad.
pub(crate) fn checked_range(spec: &BisectSpec) -> Result<Vec<Commit>, BisectError> {
    let good = git::resolve(&spec.repo, &spec.good, "--good")?;
    let bad = git::resolve(&spec.repo, &spec.bad, "--bad")?;
    if good == bad {
        return Err(BisectError::BadRange(format!(
            "--good {} and --bad {} are the same commit {}: nothing lies between them",
            spec.good,
            spec.bad,
            short(&good)
        )));
    }
    if !git::is_ancestor(&spec.repo, &good, &bad)? {
        let hint = if git::is_ancestor(&spec.repo, &bad, &good)? {
            "it is newer: swap --good and --bad (bisect looks for the change that made the \
             newer commit slower)"
        } else {
            "they are on separate branches: choose a --good that --bad descends from (`git \
             merge-base GOOD BAD` is one)"
        };
        return Err(BisectError::BadRange(format!(
            "--good {} is not an ancestor of --bad {}: {hint}",
            spec.good, spec.bad
        )));
    }
    git::range(&spec.repo, &good, &bad)
}

fn decided(v: StepVerdict) -> bool {
    !matches!(v, StepVerdict::Measuring)
}

/// The bisection's folder, and each end's commit and worktree.
struct Builds {
    area: Area,
    good: PathBuf,
    bad: PathBuf,
    good_hash: String,
    bad_hash: String,
}

fn drive(
    id: i64,
    spec: &BisectSpec,
    session: &mut Session<'_>,
) -> Result<BisectOutcome, BisectError> {
    let record = session.store.bisect(id)?;
    let commits = &record.commits;
    let mut search = Search::of(&record);
    let Some(builds) = build_ends(id, spec, &record, session)? else {
        return Ok(interrupted(id));
    };
    let at = match confirmed_points(id, spec, &record, &builds, session)? {
        Confirmation::At(points) => points,
        Confirmation::Refused => {
            return finish(id, spec, &builds, BisectStatus::NotRegression, session);
        }
        Confirmation::Interrupted => return Ok(interrupted(id)),
    };
    let mut step = record
        .steps
        .iter()
        .filter(|s| decided(s.verdict))
        .map(|s| s.step)
        .max()
        .unwrap_or(0)
        + 1;
    loop {
        let position = match search.next() {
            Next::Test(p) => p,
            Next::Found(_) => return finish(id, spec, &builds, BisectStatus::Found, session),
            Next::OnlySkipped(_) => {
                return finish(id, spec, &builds, BisectStatus::Unresolved, session);
            }
        };
        let commit = &commits[position as usize];
        session.progress.note(&format!(
            "bisect {id}: step {step}: testing {} {} ({} left after it at most)",
            short(&commit.hash),
            commit.subject,
            plural(search.steps_left().saturating_sub(1) as usize, "step"),
        ));
        let Some(done) = test_commit(id, spec, step, commit, &builds, &at, session)? else {
            return Ok(interrupted(id));
        };
        session.progress.note(&format!(
            "bisect {id}: step {step}: {} is {}{}",
            short(&commit.hash),
            done.verdict,
            done.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
        search.mark(
            position,
            match done.verdict {
                StepVerdict::Good => Mark::Good,
                StepVerdict::Bad => Mark::Bad,
                _ => Mark::Skip,
            },
        );
        step += 1;
    }
}

fn interrupted(id: i64) -> BisectOutcome {
    BisectOutcome {
        id,
        end: BisectEnd::Interrupted,
    }
}

/// Builds both ends in their worktrees (again when resumed: an incremental build is quick, and
/// a crash may have cut one short). `None` when interrupted.
fn build_ends(
    id: i64,
    spec: &BisectSpec,
    record: &BisectRecord,
    session: &mut Session<'_>,
) -> Result<Option<Builds>, BisectError> {
    let area = Area::open(session.db_file, id)?;
    let mut dirs = Vec::new();
    for (end, commit) in [
        ("good", &record.commits[0]),
        ("bad", &record.commits[record.commits.len() - 1]),
    ] {
        let dir = area.worktree(&spec.repo, end, &commit.hash)?;
        session.progress.note(&format!(
            "bisect {id}: building the {end} end {} in {}",
            short(&commit.hash),
            dir.display()
        ));
        let (log, log_path) = area.new_log(&format!("{end}-{}", short(&commit.hash)))?;
        match run_build(spec, &dir, log, session)? {
            Built::Ok(_) => dirs.push(dir),
            Built::Interrupted => return Ok(None),
            Built::Failed(reason) => {
                let status = BisectStatus::Failed;
                session
                    .store
                    .set_bisect_status(id, status, Some(&now_rfc3339()))?;
                return Err(BisectError::EndBuild {
                    end,
                    hash: commit.hash.clone(),
                    reason,
                    log: log_path.display().to_string(),
                });
            }
        }
    }
    let bad = dirs.pop().unwrap_or_default();
    let good = dirs.pop().unwrap_or_default();
    Ok(Some(Builds {
        area,
        good,
        bad,
        good_hash: record.good.clone(),
        bad_hash: record.bad.clone(),
    }))
}

fn run_build(
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

enum Confirmation {
    At(Vec<u32>),
    Refused,
    Interrupted,
}

/// Step 0: the bad end against the good end, measured unless already decided. The N at which
/// it REGRESSED are the ones bisected.
fn confirmed_points(
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
        return Ok(Confirmation::At(decide::regressed_points(
            &spec.compare(&good, &bad),
        )));
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
    let ids = match measure(spec, 0, &mut plans, &['G', 'B'], &[(0, 1)], session)? {
        Some(ids) => ids,
        None => return Ok(Confirmation::Interrupted),
    };
    let (good, bad) = (load(session, Some(ids[0]))?, load(session, Some(ids[1]))?);
    for (end, data) in [("good", &good), ("bad", &bad)] {
        require_measured(id, end, data)?;
    }
    let ends = spec.compare(&good, &bad);
    let at = decide::regressed_points(&ends);
    row.run_good = Some(ids[0]);
    row.run_bad = Some(ids[1]);
    row.elapsed_ns = Some(nanos(started.elapsed()));
    row.finished_at = Some(now_rfc3339());
    if at.is_empty() {
        row.verdict = StepVerdict::NotRegressed;
        row.reason = Some(decide::not_regressed_reason(&ends));
    } else {
        row.verdict = StepVerdict::Regressed;
        row.reason = Some(ends_summary(&ends, &at));
    }
    session.store.put_bisect_step(id, &row)?;
    session.progress.note(&format!(
        "bisect {id}: step 0: {}",
        row.reason.as_deref().unwrap_or_default()
    ));
    Ok(if at.is_empty() {
        Confirmation::Refused
    } else {
        Confirmation::At(at)
    })
}

/// What the ends' comparison says at the N bisected.
fn ends_summary(ends: &Comparison, at: &[u32]) -> String {
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
        "the bad end is slower: {}; bisecting at N={}",
        parts.join("; "),
        crate::number_text::comma_list(at)
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

/// Builds and measures `commit` against both ends at the N in `at`, and stores the verdict.
/// `None` when interrupted (the step stays `measuring`, to be redone).
fn test_commit(
    id: i64,
    spec: &BisectSpec,
    step: u32,
    commit: &BisectCommit,
    builds: &Builds,
    at: &[u32],
    session: &mut Session<'_>,
) -> Result<Option<BisectStep>, BisectError> {
    let started = Instant::now();
    let mut row = measuring(step, commit.position);
    session.store.put_bisect_step(id, &row)?;
    let dir = builds.area.worktree(&spec.repo, "step", &commit.hash)?;
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
                    let Some(ids) =
                        measure(spec, step, &mut plans, &['G', 'C', 'B'], &watch, session)?
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
                            let vs_good = spec.compare(&good, &candidate);
                            let vs_bad = spec.compare(&bad, &candidate);
                            match decide::classify(&vs_good, &vs_bad, at) {
                                Class::Good => row.verdict = StepVerdict::Good,
                                Class::Bad => row.verdict = StepVerdict::Bad,
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

/// Measures `plans` interleaved with step `step`'s seed; their run ids, or `None` when
/// interrupted.
fn measure(
    spec: &BisectSpec,
    step: u32,
    plans: &mut [crate::plan::Plan],
    letters: &[char],
    watch: &[(usize, usize)],
    session: &mut Session<'_>,
) -> Result<Option<Vec<i64>>, BisectError> {
    let policy = AbPolicy {
        seed: spec.step_seed(step),
        max_runs: spec.max_runs,
        options: spec.options(),
        metric: spec.metric,
    };
    let sides = Sides {
        name: "bisect",
        letters,
        watch,
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

fn require_measured(id: i64, end: &'static str, data: &RunData) -> Result<(), BisectError> {
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

/// Stores how the bisection ended and removes its worktrees (the logs stay).
fn finish(
    id: i64,
    spec: &BisectSpec,
    builds: &Builds,
    status: BisectStatus,
    session: &mut Session<'_>,
) -> Result<BisectOutcome, BisectError> {
    session
        .store
        .set_bisect_status(id, status, Some(&now_rfc3339()))?;
    if let Err(e) = builds.area.remove_worktrees(&spec.repo) {
        session.progress.warning(&format!(
            "bisect {id}: could not remove its worktrees ({e}); `git worktree prune` in {} \
             forgets them once {} is removed",
            spec.repo.display(),
            builds.area.path().display()
        ));
    }
    Ok(BisectOutcome {
        id,
        end: BisectEnd::Finished(status),
    })
}
