//! Plans measured side by side in interleaved groups: the one loop behind `ab` (two sides, A
//! and B) and `bisect` (three: the good build, the commit under test, the bad build).
//!
//! Every (N, repetition) is a group of one trial per side, back to back, in a random order of
//! its own ([`ab_schedule`](super::ab_schedule)); each side is stored as a run of its own (each
//! trial committed as it ends, like `run`), and all of them carry the tags `ab_seed` and
//! `ab_order`, which make any two of them partners that `compare` judges pair by pair. With
//! `max_runs`, the schedule grows while a watched comparison cannot decide at some N
//! ([`ab_extension`](super::ab_extension)) — the same seed's longer order, of which the first
//! one is a prefix — and every run's planned count and `ab_order` tag are updated in the store
//! before the new trials. A stop between trials leaves every run `interrupted` with what
//! finished.
//!
//! `ab` grows on precision alone, which never reads a verdict, so looking again cannot inflate
//! its false alarms. A caller may also ask to grow while its verdicts leave it undecided
//! ([`Sides::decided`]): `bisect` does, because its question is which of two far-apart levels
//! a commit sits at — at least three thresholds apart — and looking again only settles a
//! commit whose interval straddles a threshold, never moves it to the other level.

use super::ab_extension::{extension, undecided};
use super::ab_policy::AbPolicy;
use super::ab_schedule::{self, Slot as AbSlot};
use super::progress::Replan;
use super::session::{Session, before_trials, executor_for};
use super::sweep::{Slot, Underway, run_slots};
use super::sweep::{SweepEnd, finish};
use crate::error::LabError;
use crate::plan::Plan;
use crate::runner::Executor;
use analysis::comparison::{Comparison, compare_runs_on};
use model::env::Fingerprint;
use model::record::RunData;

/// The sides of an interleaved experiment.
#[derive(Clone, Copy)]
pub(crate) struct Sides<'a> {
    /// What the notes call the experiment (`ab`, `bisect`).
    pub name: &'a str,
    /// One letter per plan, in the plans' order: how the order is printed and tagged.
    pub letters: &'a [char],
    /// The comparisons (baseline, candidate), by plan index, whose precision grows the
    /// schedule.
    pub watch: &'a [(usize, usize)],
    /// Whether the watched comparisons (in `watch`'s order) decide what the caller needs; while
    /// they do not, the schedule also grows once they are precise. `None`: precision alone.
    pub decided: Option<&'a Decided<'a>>,
}

/// Whether an experiment's comparisons (in `watch`'s order) and its runs so far (in the plans'
/// order) decide what its caller needs (see [`Sides::decided`]).
pub(crate) type Decided<'a> = dyn Fn(&[Comparison], &[RunData]) -> bool + 'a;

/// How an interleaved experiment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interleaved {
    /// The runs' ids, in the plans' order.
    pub ids: Vec<i64>,
    /// Whether every planned group ran or the stop flag ended the experiment.
    pub end: SweepEnd,
    /// Trials committed, every side together.
    pub stored: usize,
}

/// Measures `plans` in interleaved groups (see the module doc). The plans must have the same
/// points and runs; the first one's are used.
pub(crate) fn interleave(
    plans: &mut [Plan],
    sides: &Sides<'_>,
    policy: &AbPolicy,
    session: &mut Session<'_>,
    executor: Option<&mut dyn Executor>,
) -> Result<Interleaved, LabError> {
    let k = plans.len();
    if k < 2 || sides.letters.len() != k {
        return Err(LabError::Internal(format!(
            "an interleaved experiment of {k} plans named by {} letters",
            sides.letters.len()
        )));
    }
    policy.check(&plans[0])?;
    let points = plans[0].points.clone();
    let mut planned = plans[0].trials_per_point;
    let mut order = ab_schedule::groups(&points, planned, policy.seed, k);
    for p in plans.iter_mut() {
        p.tags.insert("ab_seed".into(), policy.seed.to_string());
        p.tags.insert(
            "ab_order".into(),
            ab_schedule::order_tag(&order, sides.letters),
        );
    }
    let warnings = before_trials(session);
    let cwd =
        std::env::current_dir().map_err(|e| LabError::io("reading the working directory", e))?;
    let fingerprint = Fingerprint::capture(&cwd);
    let mut ids = Vec::with_capacity(k);
    for p in plans.iter() {
        let meta = p.run_meta(
            fingerprint.clone(),
            warnings.clone(),
            session.command_line.clone(),
        );
        ids.push(session.store.begin_run(&meta)?);
    }
    session
        .progress
        .note(&begun_note(sides, &ids, &order, policy.seed));
    session.progress.begun(&ids, order.len());
    let mut default_executor;
    let executor = match executor {
        Some(e) => e,
        None => {
            default_executor = executor_for(&plans[0], session.helpers)?;
            default_executor.as_mut()
        }
    };
    let runs: Vec<Underway<'_>> = plans
        .iter()
        .zip(&ids)
        .zip(sides.letters)
        .map(|((plan, &id), &letter)| Underway {
            plan,
            id,
            side: Some(letter),
        })
        .collect();
    let mut stored = 0;
    // Every error below still finishes every run (as interrupted, with what it stored).
    let mut measure = || -> Result<SweepEnd, LabError> {
        loop {
            let slots: Vec<Slot> = order[stored..].iter().map(slot).collect();
            let end = run_slots(session, &runs, &slots, executor, None, &mut stored)?;
            if end == SweepEnd::Interrupted || planned >= policy.max_runs {
                return Ok(end);
            }
            let mut more = None;
            let mut open = Vec::new();
            let mut compared = Vec::new();
            let so_far_runs = ids
                .iter()
                .map(|&id| session.store.load_run(id))
                .collect::<Result<Vec<_>, _>>()?;
            for &(base, candidate) in sides.watch {
                let so_far = compare_runs_on(
                    &so_far_runs[base],
                    &so_far_runs[candidate],
                    &policy.options,
                    true,
                    policy.metric.clone(),
                );
                more = more.max(extension(&so_far, planned, policy.max_runs));
                open.extend(undecided(&so_far));
                compared.push(so_far);
            }
            if more.is_none()
                && sides
                    .decided
                    .is_some_and(|decided| !decided(&compared, &so_far_runs))
            {
                // Precise, yet not decided: half as many again, then look again.
                more = Some((planned + planned.div_ceil(2)).min(policy.max_runs));
                open.extend(points.iter().copied());
            }
            let Some(more) = more else {
                return Ok(SweepEnd::Complete);
            };
            open.sort_unstable();
            open.dedup();
            order = ab_schedule::groups(&points, more, policy.seed, k);
            let tag = ab_schedule::order_tag(&order, sides.letters);
            for &id in &ids {
                session
                    .store
                    .extend_plan(id, more, &[("ab_order", tag.as_str())])?;
            }
            session.progress.replanned(&Replan {
                pairs: planned,
                more,
                max_runs: policy.max_runs,
                threshold: policy.options.threshold,
                undecided: open,
                trials: order.len(),
            });
            planned = more;
        }
    };
    let ended = measure();
    let end = finish(session.store, &ids, stored, ended)?;
    Ok(Interleaved { ids, end, stored })
}

/// Which run each side is and the order drawn, as the experiment begins.
fn begun_note(sides: &Sides<'_>, ids: &[i64], order: &[AbSlot], seed: u64) -> String {
    let named: Vec<String> = sides
        .letters
        .iter()
        .zip(ids)
        .map(|(letter, id)| format!("{letter} is run {id}"))
        .collect();
    let groups = if ids.len() == 2 {
        "pairs of random order".to_string()
    } else {
        format!("groups of {} in random order", ids.len())
    };
    // `ab --seed` is this seed; a bisection derives each step's from its own `--seed`.
    let repeat = if sides.name == "ab" {
        format!("; --seed {seed} repeats it")
    } else {
        String::new()
    };
    format!(
        "{}: {}; {} trials in {groups} (seed {seed}{repeat})\norder: {}",
        sides.name,
        named.join(", "),
        order.len(),
        ab_schedule::letters(order, sides.letters),
    )
}

fn slot(s: &AbSlot) -> Slot {
    Slot {
        run: s.side,
        n: s.n,
        index: s.index,
    }
}
