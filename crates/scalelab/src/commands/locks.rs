//! `scalelab locks RUN`: lock contention of a run traced with `--locks` — what grows with N
//! (lock wait per op by lock and caller, ranked by growth), or with `--at N` the
//! `lock_stat`-like table at one point.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use lab::analysis::lock_contention::{self, LockSide, LockSides};
use present::lock_table;

use super::show;
use crate::cli::{Chosen, LocksArgs};

pub fn run(db: Option<&Path>, args: &LocksArgs) -> Result<ExitCode> {
    let data = show::load(db, &args.run)?;
    let data = match args.step.as_deref() {
        Some(name) => lab::analysis::step::select(&data, name)?,
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
            lab::safe_text::printable(name)
        ),
        None => data.meta.description(),
    };
    let mut out = crate::stdout::stdout();
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
            match args.output.chosen() {
                Chosen::Json => lab::safe_text::write_json(&mut out, &point)?,
                Chosen::Printed(format) => {
                    let mut p = crate::output::printer(&mut out, format);
                    lock_table::write_point(&mut p, &header, &point, &shown, args.top)?;
                    p.finish()?;
                }
            }
        }
        None => {
            let Some(growth) = lock_contention::what_grows(&data, sides) else {
                bail!("run {} has no traced trial", data.meta.id);
            };
            match args.output.chosen() {
                Chosen::Json => lab::safe_text::write_json(&mut out, &growth)?,
                Chosen::Printed(format) => {
                    let mut p = crate::output::printer(&mut out, format);
                    lock_table::write_growth(&mut p, &header, &growth, &shown, args.top)?;
                    p.finish()?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
