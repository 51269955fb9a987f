//! The USL reading: with four or more N, the fitted σ (serialisation: waits, locks) against κ
//! (coherency: CPU per op growing without waiting), each term's weight at the largest N, and
//! whether the top named cause (run-queue wait aside: it is neither) is of the same kind.

use serde::Serialize;

use super::cause::Mechanism;
use model::record::RunData;

/// σ against κ, and whether the named causes agree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UslReading {
    /// Fitted serialisation σ.
    pub sigma: f64,
    /// Fitted coherency κ.
    pub kappa: f64,
    /// σ(N−1) at the largest N: serialisation's share of the slowdown.
    pub sigma_term: f64,
    /// κN(N−1) at the largest N.
    pub kappa_term: f64,
    /// Which term is larger.
    pub dominant: Mechanism,
    /// The mechanism of the top named cause that grew, run-queue wait left out (it is neither
    /// term), if one was named.
    pub top_cause: Option<Mechanism>,
    /// Whether the top cause and the dominant term agree (`None` without a named cause).
    pub agrees: Option<bool>,
}

/// The reading, `None` with fewer than four N or when the model cannot be fitted.
pub(crate) fn read(data: &RunData, top: Option<Mechanism>) -> Option<UslReading> {
    let mut ns: Vec<u32> = data.meta.points.clone();
    ns.sort_unstable();
    ns.dedup();
    if ns.len() < stats::USL_MIN_DISTINCT_N {
        return None;
    }
    let model = crate::scaling_model::fit_run(data, &[], true).ok()?;
    let n = *ns.last()? as f64;
    let sigma = model.fit.sigma.point;
    let kappa = model.fit.kappa.point;
    let sigma_term = sigma * (n - 1.0);
    let kappa_term = kappa * n * (n - 1.0);
    let dominant = if sigma_term >= kappa_term {
        Mechanism::Serialisation
    } else {
        Mechanism::Coherency
    };
    Some(UslReading {
        sigma,
        kappa,
        sigma_term,
        kappa_term,
        dominant,
        top_cause: top,
        agrees: top.map(|t| t == dominant),
    })
}
