//! The automatic bisection: [`start`] checks the range and stores the bisection, [`resume`]
//! takes a stopped one back; both then drive it — build the ends, confirm the regression (step
//! 0), then test commits one step at a time until the search has its answer.
//!
//! Crash safety comes from the order of writes: a step is stored as `measuring` before its
//! build, its runs commit every trial as it ends, and its verdict is stored with its run ids in
//! one transaction once decided. A killed scalelab leaves at most one step `measuring`; resuming
//! replays every decided step from the store (nothing decided is measured again) and redoes
//! that one, with the same step number and fresh runs.

use super::build::{self, Area, Built};
use super::error::BisectError;
use super::git::{self, Commit};
use super::search::{Mark, Next, Search};
use super::spec::BisectSpec;
use super::state::{BisectEnd, BisectOutcome, latest_unfinished};
use super::step::{Builds, Confirmation, confirmed_points, decided, run_build, test_commit};
use crate::lifecycle::Session;
use model::bisection::short;
use model::number_text::plural;
use model::timestamp::now_rfc3339;
use store::{BisectCommit, BisectRecord, BisectStatus, StepVerdict};

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
        None => latest_unfinished(session.store)?.ok_or_else(|| {
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
    let bisected = match confirmed_points(id, spec, &record, &builds, session)? {
        Confirmation::At(bisected) => bisected,
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
        let Some(done) = test_commit(id, spec, step, commit, &builds, &bisected, session)? else {
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
    for (end, tree, commit) in [
        ("good", build::GOOD, &record.commits[0]),
        ("bad", build::BAD, &record.commits[record.commits.len() - 1]),
    ] {
        let dir = area.worktree(&spec.repo, tree, &commit.hash)?;
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
                // Nothing can resume a bisection whose end does not build: its worktrees go now
                // (the log stays, for the fix).
                let _ = area.remove_worktrees(&spec.repo);
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
