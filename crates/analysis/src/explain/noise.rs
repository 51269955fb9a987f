//! The noise rule: a cause's growth is named only when it is beyond the trial-to-trial noise
//! at the two N compared.
//!
//! - Where the cause has a value in every one of at least two trials at each N (the
//!   accounting's parts; lock waits and off-CPU sites of the traced trials; functions, when
//!   two or more trials per N were profiled, as `run --explain` does), its growth is
//!   beyond noise when the two sets of trials do not overlap: every trial at the larger N above
//!   every trial at the smaller N (or every one below, for a shrinking cause). That is the
//!   Mann-Whitney U statistic at its extreme (U = 0); with 3 trials a side, the chance of it
//!   by luck is 1 in 20 per direction.
//! - Where only one value per N exists (one profiled trial per N; one traced trial per N),
//!   the growth must exceed the noise of the whole: the larger, over the two N, of the CV of
//!   the trials' `ns/op/task` times that N's median `ns/op/task`.
//! - With one trial per N and nothing else, the noise is not measured: causes are named, and
//!   the verdict says `unmeasured`.
//! - Whatever the rule, a cause whose growth is under 1% of the total growth (in size) is not
//!   named: a trace that saw a handful of waits at the larger N only is beyond noise and
//!   immaterial. Where the total grew less than the whole's noise (CV × ns/op/task at either
//!   N), the 1% is of that noise instead.

use serde::Serialize;

/// Which rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseRule {
    /// Per-trial values at both N, compared: the trials do not overlap.
    TrialsSeparate,
    /// One value per N: the growth against CV × ns/op/task.
    CvBound,
    /// One trial per N: no noise estimate.
    Unmeasured,
}

/// The decision for one cause.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseVerdict {
    /// The rule used.
    pub rule: NoiseRule,
    /// For [`NoiseRule::CvBound`]: the bound the growth had to exceed, ns per op.
    pub bound_ns: Option<f64>,
    /// Whether the growth is beyond noise (true under [`NoiseRule::Unmeasured`]).
    pub beyond: bool,
}

/// The noise of the whole at one N: CV of `ns/op/task` × its median, when measured.
pub(crate) fn whole_noise(cv: Option<f64>, total: f64) -> Option<f64> {
    cv.map(|cv| cv * total)
}

/// The smallest share of the total growth a cause is named with.
pub const MATERIAL_SHARE: f64 = 0.01;

/// Decides whether a growth `delta` from `from` (per-trial values at the smaller N) to `to`
/// is beyond noise, given the whole's noise at the two N, and material: at least
/// [`MATERIAL_SHARE`] of the total growth `whole` in size.
pub(crate) fn decide(
    delta: f64,
    whole: f64,
    from: &[f64],
    to: &[f64],
    noise: (Option<f64>, Option<f64>),
) -> NoiseVerdict {
    let mut v = decide_noise(delta, from, to, noise.0, noise.1);
    v.beyond &= is_material(delta, whole, noise);
    v
}

/// Whether a growth `delta` matters: at least 1% of the total growth, or the whole's noise
/// where that is larger. A total that grew less than the trials spread is itself noise, and 1%
/// of it is no yardstick (the case that showed it: docs/notes/explain.md).
pub(crate) fn is_material(delta: f64, whole: f64, noise: (Option<f64>, Option<f64>)) -> bool {
    let scale = whole
        .abs()
        .max(noise.0.unwrap_or(0.0))
        .max(noise.1.unwrap_or(0.0));
    delta.abs() >= MATERIAL_SHARE * scale
}

fn decide_noise(
    delta: f64,
    from: &[f64],
    to: &[f64],
    noise_from: Option<f64>,
    noise_to: Option<f64>,
) -> NoiseVerdict {
    if from.len() >= 2 && to.len() >= 2 {
        let (lo_from, hi_from) = range(from);
        let (lo_to, hi_to) = range(to);
        let beyond = (delta > 0.0 && lo_to > hi_from) || (delta < 0.0 && hi_to < lo_from);
        return NoiseVerdict {
            rule: NoiseRule::TrialsSeparate,
            bound_ns: None,
            beyond,
        };
    }
    match (noise_from, noise_to) {
        (None, None) => NoiseVerdict {
            rule: NoiseRule::Unmeasured,
            bound_ns: None,
            beyond: delta != 0.0,
        },
        (a, b) => {
            let bound = a.unwrap_or(0.0).max(b.unwrap_or(0.0));
            NoiseVerdict {
                rule: NoiseRule::CvBound,
                bound_ns: Some(bound),
                beyond: delta.abs() > bound,
            }
        }
    }
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// The rule in one paragraph, for the output's footnote.
pub const NOISE_RULE: &str = "A cause is named only when its growth is beyond trial-to-trial \
noise: with a value per trial (accounting, lock waits, off-CPU sites, and functions when two or \
more trials per N were profiled) every trial at the larger N must lie beyond every trial at the \
smaller N (Mann-Whitney U at its extreme); with one value per N (one profiled trial) the growth \
must exceed CV × ns/op/task at either N. With one trial \
per N the noise is not measured and causes are named unchecked. A cause under 1% of the growth (or \
of CV × ns/op/task, where the growth is smaller) is not named.";
