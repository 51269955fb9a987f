//! One timed step of a command run, seen as a run of its own ([`select`]): each trial's profile
//! and lock report replaced by that step's, so that every profile and lock analysis
//! ([`super::profile`], [`super::lock_contention`]) works on a step exactly as on a run. A
//! command trial's own profile and lock report are its main command's (`cmd`), so no selection
//! means the main command.

use crate::AnalysisError;
use model::record::{RunData, TrialOutcome};

/// The name of the main command's step (`--cmd` itself).
pub const MAIN_STEP: &str = "cmd";

/// The timed steps of a command run, in order (`cmd` first), from its measured trials and, when
/// none was measured, from its parameters; empty for a built-in workload's run.
pub fn step_names(run: &RunData) -> Vec<String> {
    if let Some(m) = run
        .trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .find(|m| !m.steps.is_empty())
    {
        return m.steps.iter().map(|s| s.name.clone()).collect();
    }
    if !run.meta.params.contains_key(MAIN_STEP) {
        return Vec::new();
    }
    // `cmd`, then `step<I>.<name>` in the order of I.
    let mut steps: Vec<(usize, String)> = run
        .meta
        .params
        .keys()
        .filter_map(|k| {
            let (i, name) = k.strip_prefix("step")?.split_once('.')?;
            Some((i.parse().ok()?, name.to_string()))
        })
        .collect();
    steps.sort();
    std::iter::once(MAIN_STEP.to_string())
        .chain(steps.into_iter().map(|(_, n)| n))
        .collect()
}

/// `run` with every trial's profile and lock report replaced by those of its step `name`.
/// Refused, naming the steps there are, for an unknown step or a built-in workload's run.
pub fn select(run: &RunData, name: &str) -> Result<RunData, AnalysisError> {
    let names = step_names(run);
    if names.is_empty() {
        return Err(AnalysisError::Input(format!(
            "--step {name}: run {} is a built-in workload ({}), which has no steps; --step selects a step of a `run --cmd … --step NAME=CMD` run",
            run.meta.id, run.meta.workload
        )));
    }
    if !names.iter().any(|n| n == name) {
        return Err(AnalysisError::Input(format!(
            "--step {name}: run {} has no step `{name}`; its steps are: {}",
            run.meta.id,
            names.join(", ")
        )));
    }
    let mut out = run.clone();
    for t in &mut out.trials {
        if let TrialOutcome::Ok(m) = &mut t.outcome {
            let step = m.steps.iter().find(|s| s.name == name);
            m.profile = step.and_then(|s| s.profile.clone());
            m.locks = step.and_then(|s| s.locks.clone());
            m.offcpu = step.and_then(|s| s.offcpu.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::{
        LockReport, Nanos, ProfileRef, StepRecord, TrialMeasurement, TrialRecord, Usage,
    };

    fn step(name: &str, tag: &str) -> StepRecord {
        StepRecord {
            perf_record_cpu: None,
            wrapper_wall: None,
            name: name.into(),
            wall: Nanos(1),
            usage: Usage::default(),
            profile: Some(ProfileRef {
                path: format!("/p/{tag}.perf.data"),
                event: "cpu-clock".into(),
                frequency: 99,
                ..ProfileRef::default()
            }),
            locks: Some(LockReport {
                notes: vec![tag.into()],
                ..LockReport::default()
            }),
            offcpu: None,
        }
    }

    fn command_run() -> RunData {
        let steps = vec![step("cmd", "main"), step("md5", "second")];
        let m = TrialMeasurement {
            profile: steps[0].profile.clone(),
            locks: steps[0].locks.clone(),
            steps,
            ..TrialMeasurement::default()
        };
        let mut run = RunData {
            meta: model::test_runs::meta(1, "cmd", &[1]),
            trials: vec![TrialRecord {
                n: 1,
                index: 0,
                started_at: String::new(),
                outcome: TrialOutcome::Ok(m),
            }],
        };
        run.meta.params.insert("cmd".into(), "tar xf a.tar".into());
        run.meta.params.insert("step1.md5".into(), "md5sum".into());
        run
    }

    #[test]
    fn a_step_is_read_as_the_run_and_cmd_is_the_main_command() {
        let run = command_run();
        assert_eq!(step_names(&run), ["cmd", "md5"]);
        let md5 = select(&run, "md5").unwrap();
        let m = md5.trials[0].outcome.measurement().unwrap();
        assert_eq!(m.profile.as_ref().unwrap().path, "/p/second.perf.data");
        assert_eq!(m.locks.as_ref().unwrap().notes, ["second"]);
        let main = select(&run, MAIN_STEP).unwrap();
        assert_eq!(main, run);
    }

    #[test]
    fn an_unknown_step_is_refused_listing_the_steps() {
        let run = command_run();
        let err = select(&run, "nope").unwrap_err().to_string();
        assert!(
            err.contains("no step `nope`") && err.contains("cmd, md5"),
            "{err}"
        );
        let mut unmeasured = run.clone();
        unmeasured.trials.clear();
        assert_eq!(step_names(&unmeasured), ["cmd", "md5"]);
        let mut builtin = run;
        builtin.trials.clear();
        builtin.meta.params.clear();
        let err = select(&builtin, "md5").unwrap_err().to_string();
        assert!(err.contains("has no steps"), "{err}");
    }
}
