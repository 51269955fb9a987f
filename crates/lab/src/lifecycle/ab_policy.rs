//! How an A/B experiment is scheduled and when it grows ([`AbPolicy`]): what `ab` runs under,
//! and what the interleaved loop ([`interleave`](super::interleave)) reads to grow it.

use stats::CompareOptions;

use crate::error::{Field, LabError};
use crate::plan::Plan;
use analysis::comparison::TrialMetric;

/// How an A/B experiment is scheduled and when it grows.
#[derive(Debug, Clone, PartialEq)]
pub struct AbPolicy {
    /// Seed of the random pair order.
    pub seed: u64,
    /// Pairs per point to grow to while some N cannot decide (at least the plans' runs).
    pub max_runs: u32,
    /// The statistics the growth rule reads (the threshold; pairs are judged paired).
    pub options: CompareOptions,
    /// The per-trial value the growth rule compares (`ab`: throughput).
    pub metric: TrialMetric,
}

impl AbPolicy {
    /// Refuses a cap below the plan's first pairs.
    pub fn check(&self, plan: &Plan) -> Result<(), LabError> {
        if self.max_runs < plan.trials_per_point {
            return Err(LabError::invalid(
                Field::MaxRuns,
                format!(
                    "{} is below the {} planned first: it is the most pairs ab may grow to \
                     when the first ones cannot decide; raise it or drop it",
                    self.max_runs,
                    model::number_text::plural(plan.trials_per_point as usize, "pair")
                ),
            ));
        }
        Ok(())
    }
}
