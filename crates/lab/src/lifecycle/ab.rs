//! An A/B experiment: two plans measured in interleaved pairs, each pair in a random order
//! ([`ab_schedule`](super::ab_schedule)), stored as two runs (each trial committed as it ends,
//! like `run`); with `max_runs`, the schedule grows while some N cannot decide
//! ([`ab_extension`](super::ab_extension)) — the same seed's longer order, of which the first
//! one is a prefix — and both runs' planned count and `ab_order` tag are updated in the store
//! before the new trials.
//!
//! Both runs share one environment fingerprint and the tags `ab_seed` (which, with the points
//! and runs, repeats the order) and `ab_order` (the side that went first in each pair, in
//! execution order). A stop between trials leaves both runs `interrupted` with what finished.

use stats::CompareOptions;

use super::ab_extension::{extension, undecided};
use super::ab_schedule::{self, Slot as AbSlot};
use super::progress::Replan;
use super::sweep::{Slot, Underway, run_slots};
use super::{Session, SweepEnd, before_trials, executor_for, finish};
use crate::analysis::comparison::{Side, compare_runs};
use crate::env::Fingerprint;
use crate::error::{Field, LabError};
use crate::plan::Plan;
use crate::runner::Executor;

/// How an A/B experiment is scheduled and when it grows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbPolicy {
    /// Seed of the random pair order.
    pub seed: u64,
    /// Pairs per point to grow to while some N cannot decide (at least the plans' runs).
    pub max_runs: u32,
    /// The statistics the growth rule reads (the threshold; pairs are judged paired).
    pub options: CompareOptions,
}

impl AbPolicy {
    /// Refuses a cap below the plan's first pairs.
    pub fn check(&self, plan: &Plan) -> Result<(), LabError> {
        if self.max_runs < plan.runs {
            return Err(LabError::invalid(
                Field::MaxRuns,
                format!(
                    "{} is below the {} planned first: it is the most pairs ab may grow to \
                     when the first ones cannot decide; raise it or drop it",
                    self.max_runs,
                    crate::number_text::plural(plan.runs as usize, "pair")
                ),
            ));
        }
        Ok(())
    }
}

/// How an A/B experiment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbOutcome {
    /// Run A's id in the database.
    pub id_a: i64,
    /// Run B's id in the database.
    pub id_b: i64,
    /// Whether every planned pair ran or the stop flag ended the experiment.
    pub end: SweepEnd,
    /// Trials committed, both sides together.
    pub stored: usize,
}

/// Measures `a` against `b` (see the module doc).
pub fn ab(
    mut a: Plan,
    mut b: Plan,
    policy: &AbPolicy,
    session: &mut Session<'_>,
    executor: Option<&mut dyn Executor>,
) -> Result<AbOutcome, LabError> {
    policy.check(&a)?;
    let mut planned = a.runs;
    let mut order = ab_schedule::schedule(&a.points, planned, policy.seed);
    for p in [&mut a, &mut b] {
        p.tags.insert("ab_seed".into(), policy.seed.to_string());
        p.tags
            .insert("ab_order".into(), ab_schedule::firsts(&order));
    }
    let warnings = before_trials(session);
    let cwd =
        std::env::current_dir().map_err(|e| LabError::io("reading the working directory", e))?;
    let fingerprint = Fingerprint::capture(&cwd);
    let meta_a = a.run_meta(
        fingerprint.clone(),
        warnings.clone(),
        session.command_line.clone(),
    );
    let meta_b = b.run_meta(fingerprint, warnings, session.command_line.clone());
    let id_a = session.store.begin_run(&meta_a)?;
    let id_b = session.store.begin_run(&meta_b)?;
    session.progress.note(&format!(
        "ab: A is run {id_a}, B is run {id_b}; {} trials in pairs of random order (seed {seed}; \
         --seed {seed} repeats it)\norder: {}",
        order.len(),
        ab_schedule::letters(&order),
        seed = policy.seed,
    ));
    session.progress.begun(&[id_a, id_b], order.len());
    let mut default_executor;
    let executor = match executor {
        Some(e) => e,
        None => {
            default_executor = executor_for(&a, session.helpers)?;
            default_executor.as_mut()
        }
    };
    let runs = [
        Underway {
            plan: &a,
            id: id_a,
            side: Some(Side::A),
        },
        Underway {
            plan: &b,
            id: id_b,
            side: Some(Side::B),
        },
    ];
    let mut stored = 0;
    // Every error below still finishes both runs (as interrupted, with what they stored).
    let mut measure = || -> Result<SweepEnd, LabError> {
        loop {
            let slots: Vec<Slot> = order[stored..].iter().map(slot).collect();
            let end = run_slots(session, &runs, &slots, executor, None, &mut stored)?;
            if end == SweepEnd::Interrupted || planned >= policy.max_runs {
                return Ok(end);
            }
            let so_far = compare_runs(
                &session.store.load_run(id_a)?,
                &session.store.load_run(id_b)?,
                &policy.options,
                true,
            );
            let Some(more) = extension(&so_far, planned, policy.max_runs) else {
                return Ok(SweepEnd::Complete);
            };
            order = ab_schedule::schedule(&a.points, more, policy.seed);
            let firsts = ab_schedule::firsts(&order);
            for id in [id_a, id_b] {
                session
                    .store
                    .extend_plan(id, more, &[("ab_order", firsts.as_str())])?;
            }
            session.progress.replanned(&Replan {
                pairs: planned,
                more,
                max_runs: policy.max_runs,
                threshold: policy.options.threshold,
                undecided: undecided(&so_far),
                trials: order.len(),
            });
            planned = more;
        }
    };
    let ended = measure();
    let end = finish(session.store, &[id_a, id_b], stored, ended)?;
    Ok(AbOutcome {
        id_a,
        id_b,
        end,
        stored,
    })
}

fn slot(s: &AbSlot) -> Slot {
    Slot {
        run: match s.side {
            Side::A => 0,
            Side::B => 1,
        },
        n: s.n,
        index: s.index,
    }
}
