//! `--no-build`: bisecting what only a reboot (or an install) can switch — a kernel, a module,
//! a system library. scalelab builds nothing: [`next`] says which commit to boot, and after the
//! reboot [`mark`] measures what runs now and records the verdict, which sets the next commit.
//! The good end is marked first, then the bad end (their comparison confirms the regression or
//! refuses the range), then the commits the search asks for.
//!
//! A reboot cannot interleave builds, so each mark is a plain run of `--runs` trials, judged
//! against the ends' runs as independent samples (Mann-Whitney) at half the gap between the
//! ends, as the automatic steps are (`analysis::bisect::decide`): the machine's drift between reboots is not
//! cancelled as the paired steps cancel it, so only a change well above that drift bisects
//! this way. Every run keeps the kernel it measured in its fingerprint for the reader to check.

use super::error::BisectError;
use super::git::Commit;
use super::search::{Next, Search};
use super::spec::{BisectSpec, Role, SideOf};
use super::state::{BisectEnd, BisectOutcome, latest_unfinished};
use crate::lifecycle::{self, Session, SweepEnd};
use analysis::bisect::decide::{self, Class};
use model::bisection::short;
use model::number_text::plural;
use model::record::RunData;
use model::timestamp::now_rfc3339;
use store::{BisectCommit, BisectRecord, BisectStatus, BisectStep, StepVerdict, Store};

/// What a `--no-build` bisection waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// Boot (or install) an end of the range, then mark it.
    End {
        /// `good` or `bad`.
        end: &'static str,
        /// The commit.
        commit: BisectCommit,
    },
    /// Boot (or install) this commit, then mark it.
    Commit {
        /// The step it will be.
        step: u32,
        /// The commit.
        commit: BisectCommit,
        /// Steps left at most, this one included.
        steps_left: u32,
    },
    /// Nothing: the bisection is finished.
    Done(BisectStatus),
}

/// Stores a new `--no-build` bisection of `commits`; it waits for its good end.
pub(crate) fn begin(
    spec: &BisectSpec,
    commits: &[Commit],
    session: &mut Session<'_>,
) -> Result<BisectOutcome, BisectError> {
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
    session
        .store
        .put_bisect_step(id, &ends_row(commits.len() as u32 - 1))?;
    Ok(BisectOutcome {
        id,
        end: BisectEnd::Waiting,
    })
}

fn ends_row(bad_position: u32) -> BisectStep {
    BisectStep {
        step: 0,
        position: bad_position,
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

/// What bisection `id` (the newest unfinished one when `None`) waits for.
pub fn next(store: &Store, id: Option<i64>) -> Result<(i64, Pending), BisectError> {
    let id = manual_id(store, id)?;
    let record = store.bisect(id)?;
    Ok((id, pending(&record)))
}

fn manual_id(store: &Store, id: Option<i64>) -> Result<i64, BisectError> {
    let id = match id {
        Some(id) => id,
        None => latest_unfinished(store)?.ok_or_else(|| {
            BisectError::Nothing(
                "no unfinished bisection in this database: start one with `scalelab bisect \
                 --no-build …`"
                    .into(),
            )
        })?,
    };
    let record = store.bisect(id)?;
    if BisectSpec::from_json(id, &record.spec)?.build.is_some() {
        return Err(BisectError::Nothing(format!(
            "bisection {id} builds its commits itself: `scalelab bisect --resume {id}` \
             continues it (next and mark are for --no-build)"
        )));
    }
    Ok(id)
}

fn pending(record: &BisectRecord) -> Pending {
    if record.status.is_finished() {
        return Pending::Done(record.status);
    }
    let last = record.commits.len() - 1;
    match record.steps.iter().find(|s| s.step == 0) {
        Some(s) if s.verdict == StepVerdict::NotRegressed => {
            return Pending::Done(BisectStatus::NotRegression);
        }
        Some(s) if s.run_good.is_some() && s.run_bad.is_some() => {}
        Some(s) if s.run_good.is_some() => {
            return Pending::End {
                end: "bad",
                commit: record.commits[last].clone(),
            };
        }
        _ => {
            return Pending::End {
                end: "good",
                commit: record.commits[0].clone(),
            };
        }
    }
    let search = Search::of(record);
    match search.next() {
        Next::Test(p) => Pending::Commit {
            step: record.steps.iter().map(|s| s.step).max().unwrap_or(0) + 1,
            commit: record.commits[p as usize].clone(),
            steps_left: search.steps_left(),
        },
        Next::Found(_) => Pending::Done(BisectStatus::Found),
        Next::OnlySkipped(_) => Pending::Done(BisectStatus::Unresolved),
    }
}

/// Measures what runs now as the commit bisection `id` waits for (or records it skipped, when
/// it cannot be booted or built), and says what comes next.
pub fn mark(
    id: Option<i64>,
    skip: bool,
    session: &mut Session<'_>,
) -> Result<(BisectOutcome, Pending), BisectError> {
    let id = manual_id(session.store, id)?;
    session.store.claim_bisect(id)?;
    let record = session.store.bisect(id)?;
    let spec = BisectSpec::from_json(id, &record.spec)?;
    let waiting = pending(&record);
    let started = std::time::Instant::now();
    let elapsed = |before: Option<u64>| {
        let now = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Some(before.unwrap_or(0).saturating_add(now))
    };
    let interrupted = |pending| {
        Ok((
            BisectOutcome {
                id,
                end: BisectEnd::Interrupted,
            },
            pending,
        ))
    };
    match &waiting {
        Pending::Done(status) => {
            return Ok((
                BisectOutcome {
                    id,
                    end: BisectEnd::Finished(*status),
                },
                waiting,
            ));
        }
        Pending::End { end, .. } if skip => {
            return Err(BisectError::Invalid(format!(
                "the {end} end cannot be skipped: it is what the commits are judged against — \
                 boot it, or start again with another --{end}"
            )));
        }
        Pending::End { end, commit } => {
            let role = if *end == "good" {
                Role::Good
            } else {
                Role::Bad
            };
            let Some(run) = measure_now(&spec, id, 0, role, commit, None, session)? else {
                return interrupted(waiting);
            };
            let mut row = record
                .steps
                .iter()
                .find(|s| s.step == 0)
                .cloned()
                .unwrap_or_else(|| ends_row(record.commits.len() as u32 - 1));
            match role {
                Role::Good => row.run_good = Some(run.meta.id),
                _ => row.run_bad = Some(run.meta.id),
            }
            row.elapsed_ns = elapsed(row.elapsed_ns);
            if let (Some(g), Some(b)) = (row.run_good, row.run_bad) {
                let (good, bad) = (session.store.load_run(g)?, session.store.load_run(b)?);
                let ends = spec.compare(&good, &bad, spec.threshold);
                row.finished_at = Some(now_rfc3339());
                if decide::bisected(&ends).is_none() {
                    row.verdict = StepVerdict::NotRegressed;
                    row.reason = Some(decide::not_regressed_reason(&ends, &spec.metric));
                } else {
                    row.verdict = StepVerdict::Regressed;
                }
            }
            session.store.put_bisect_step(id, &row)?;
        }
        Pending::Commit { step, commit, .. } => {
            let mut row = ends_row(commit.position);
            row.step = *step;
            if skip {
                row.verdict = StepVerdict::Skip;
                row.reason = Some("marked skip (could not be booted or built)".into());
            } else {
                let ends = record
                    .steps
                    .iter()
                    .find(|s| s.step == 0)
                    .cloned()
                    .unwrap_or_else(|| ends_row(0));
                let good = load(session, ends.run_good)?;
                let bad = load(session, ends.run_bad)?;
                let Some(bisected) = decide::bisected(&spec.compare(&good, &bad, spec.threshold))
                else {
                    return Err(BisectError::Invalid(format!(
                        "bisection {id}: its ends do not differ, nothing to mark"
                    )));
                };
                let at = bisected.at.as_slice();
                let Some(run) =
                    measure_now(&spec, id, *step, Role::Commit, commit, Some(at), session)?
                else {
                    return interrupted(waiting);
                };
                row.run_good = ends.run_good;
                row.run_bad = ends.run_bad;
                row.run_commit = Some(run.meta.id);
                let vs_good = spec.compare(&good, &run, bisected.threshold);
                let vs_bad = spec.compare(&bad, &run, bisected.threshold);
                // Measured alone, unpaired: no group has a midpoint of its own.
                match decide::classify(&vs_good, &vs_bad, &[], at) {
                    Class::Good => row.verdict = StepVerdict::Good,
                    Class::Bad => row.verdict = StepVerdict::Bad,
                    Class::Unstable(why) => {
                        row.verdict = StepVerdict::Skip;
                        row.reason = Some(format!(
                            "after {}: {why}",
                            plural(run.meta.runs as usize, "trial")
                        ));
                    }
                    Class::Undecided(why) => {
                        row.verdict = StepVerdict::Skip;
                        row.reason = Some(format!(
                            "undecided after {}: {why}",
                            plural(run.meta.runs as usize, "trial")
                        ));
                    }
                }
            }
            row.elapsed_ns = elapsed(None);
            row.finished_at = Some(now_rfc3339());
            session.store.put_bisect_step(id, &row)?;
        }
    }
    let record = session.store.bisect(id)?;
    let after = pending(&record);
    let end = match &after {
        Pending::Done(status) => {
            let step0 = record.steps.iter().find(|s| s.step == 0);
            let status = if step0.is_some_and(|s| s.verdict == StepVerdict::NotRegressed) {
                BisectStatus::NotRegression
            } else {
                *status
            };
            session
                .store
                .set_bisect_status(id, status, Some(&now_rfc3339()))?;
            BisectEnd::Finished(status)
        }
        _ => BisectEnd::Waiting,
    };
    let after = match end {
        BisectEnd::Finished(status) => Pending::Done(status),
        _ => after,
    };
    Ok((BisectOutcome { id, end }, after))
}

/// Runs the bisection's measurement now, as `role` at `commit`; `None` when interrupted.
fn measure_now(
    spec: &BisectSpec,
    id: i64,
    step: u32,
    role: Role,
    commit: &BisectCommit,
    at: Option<&[u32]>,
    session: &mut Session<'_>,
) -> Result<Option<RunData>, BisectError> {
    session.progress.note(&format!(
        "bisect {id}: measuring {} ({} {}) as it runs now",
        role.name(),
        short(&commit.hash),
        commit.subject
    ));
    let side = SideOf {
        role,
        hash: &commit.hash,
        dir: None,
    };
    let plan = spec.plan(id, step, side, at)?;
    let outcome = lifecycle::run(plan, session, None)?;
    if outcome.end == SweepEnd::Interrupted {
        return Ok(None);
    }
    Ok(Some(session.store.load_run(outcome.id)?))
}

fn load(session: &Session<'_>, run: Option<i64>) -> Result<RunData, BisectError> {
    let run = run.ok_or_else(|| {
        BisectError::Invalid("the ends of this bisection have not been measured yet".into())
    })?;
    Ok(session.store.load_run(run)?)
}
