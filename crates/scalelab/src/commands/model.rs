//! `scalelab model RUN | --csv FILE`: fit the Universal Scalability Law (lab's
//! `analysis::scaling_model`, statistics from `stats`) and print it as text or JSON.

use std::path::Path;
use std::process::ExitCode;

use analysis::scaling_model;
use anyhow::{Context, Result};
use present::model_table::write_model;

use super::show;
use crate::arguments::ModelArgs;

pub fn run(db: Option<&Path>, args: &ModelArgs) -> Result<ExitCode> {
    let model = match (&args.csv, &args.run) {
        (Some(path), _) => {
            let shown = path.display().to_string();
            let text = model::csv_rows::read_file(path)
                .with_context(|| format!("reading --csv {shown}"))?;
            let points =
                scaling_model::parse_csv(&text).with_context(|| format!("--csv {shown}"))?;
            scaling_model::fit_csv(&shown, &points, &args.predict)?
        }
        (None, Some(spec)) => {
            let data = show::load(db, spec)?;
            scaling_model::fit_run(&data, &args.predict, args.all_n)
                .with_context(|| format!("run {}", data.meta.id))?
        }
        (None, None) => anyhow::bail!("give a RUN or --csv FILE"),
    };
    crate::output::print_result(args.output.chosen(), &model, |p| write_model(p, &model))?;
    Ok(ExitCode::SUCCESS)
}
