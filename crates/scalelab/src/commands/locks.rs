//! `scalelab locks RUN`: lock contention of a run traced with `--locks` — what grows with N
//! (lock wait per op by lock and caller, ranked by growth), or with `--at N` the
//! `lock_stat`-like table at one point.

use std::path::Path;
use std::process::ExitCode;

use analysis::lock_contention::{self, LockSide, LockSides};
use anyhow::{Result, bail};
use present::lock_table;

use super::show;
use crate::arguments::LocksArgs;
use crate::output::print_result;

pub fn run(db: Option<&Path>, args: &LocksArgs) -> Result<ExitCode> {
    let data = show::load(db, &args.run)?;
    let data = match args.step.as_deref() {
        Some(name) => analysis::step::select(&data, name)?,
        None => data,
    };
    let sides = match (args.kernel, args.user) {
        (true, false) => LockSides {
            kernel: true,
            user: false,
        },
        (false, true) => LockSides {
            kernel: false,
            user: true,
        },
        _ => LockSides::BOTH,
    };
    let shown: Vec<LockSide> = [
        (sides.kernel, LockSide::Kernel),
        (sides.user, LockSide::User),
    ]
    .into_iter()
    .filter_map(|(on, s)| on.then_some(s))
    .collect();
    let traced = data
        .trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .any(|m| m.locks.is_some());
    if !traced {
        if let Some(w) = data
            .meta
            .warnings
            .iter()
            .find(|w| w.starts_with("--locks:"))
        {
            bail!("run {} has no lock data: {w}", data.meta.id);
        }
        bail!(
            "run {} has no lock data: it was run without --locks (or lock tracing was unavailable; see `scalelab show {}` for its warnings) — rerun with `scalelab run … --locks`",
            data.meta.id,
            data.meta.id
        );
    }
    let header = match &args.step {
        Some(name) => format!(
            "{} · step {}",
            data.meta.description(),
            model::safe_text::printable(name)
        ),
        None => data.meta.description(),
    };
    match args.at {
        Some(n) => {
            let Some(point) = lock_contention::at_point(&data, n, sides) else {
                let ns: Vec<String> = data.meta.points.iter().map(u32::to_string).collect();
                bail!(
                    "--at {n}: run {} has no traced trial at N={n} (its points: {})",
                    data.meta.id,
                    ns.join(", ")
                );
            };
            print_result(args.output.chosen(), &point, |p| {
                lock_table::write_point(p, &header, &point, &shown, args.top)
            })?;
        }
        None => {
            let Some(growth) = lock_contention::what_grows(&data, sides) else {
                bail!("run {} has no traced trial", data.meta.id);
            };
            print_result(args.output.chosen(), &growth, |p| {
                lock_table::write_growth(p, &header, &growth, &shown, args.top)
            })?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
