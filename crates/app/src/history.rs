//! `history`: one metric at one N over the stored runs of a series (a workload and its
//! parameters), whole or one series per machine class, with change points. `scalelab history`
//! and the dashboard's history pages both build theirs here.
//!
//! Invariants: a series is chosen by [`analysis::series::series_runs`]; runs of different machine
//! classes are never mixed when classes are asked for; an N no run measured is an error naming
//! the N measured, never an empty "no regression".

use std::borrow::Borrow;
use std::collections::BTreeMap;

use analysis::history::{self, History, Metric};
use analysis::series;
use model::env::MachineClass;
use model::record::RunData;
use stats::ChangePointOptions;
use store::{RunFilter, Store};

use crate::error::{AppError, Input};

/// Which runs make the series, and how it is read.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// The workload (`cmd` for commands).
    pub workload: String,
    /// The series' parameters (for `cmd`, those its runs must all have); `None`: those of the
    /// newest stored run of `workload`.
    pub params: Option<BTreeMap<String, String>>,
    /// Only runs of this variant.
    pub variant: Option<String>,
    /// Only runs measured on this host.
    pub host: Option<String>,
    /// One series, one per machine class, or one class's.
    pub classes: Classes,
    /// The metric's name, built-in or a figure the runs' command printed; `None`: throughput.
    pub metric: Option<String>,
    /// The N the metric is read at; `None`: the newest run's largest N.
    pub at: Option<u32>,
    /// How strict change-point detection is.
    pub options: ChangePointOptions,
}

/// How a series treats machine classes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Classes {
    /// One series of every matching run.
    #[default]
    Together,
    /// One series per machine class, in the classes' order.
    Each,
    /// The series of one machine class only (its runs alone are loaded).
    Only(String),
}

/// One series and what it was built from.
#[derive(Debug, Clone)]
pub struct ClassHistory {
    /// Its machine class; `None` when classes were not asked for.
    pub class: Option<String>,
    /// How many stored runs it read (those that measured its N make `history.points`).
    pub runs: usize,
    /// The hosts of those runs, sorted, once each.
    pub hosts: Vec<String>,
    /// The series with its change points.
    pub history: History,
}

/// The series `query` asks for. `load` reads the runs of the ids given, in that order (the
/// dashboard reads them through its cache of finished runs).
pub fn histories<R, L>(
    store: &Store,
    query: &HistoryQuery,
    load: L,
) -> Result<Vec<ClassHistory>, AppError>
where
    R: Borrow<RunData>,
    L: FnOnce(&[i64]) -> Result<Vec<R>, AppError>,
{
    let workload = query.workload.as_str();
    let metas = store.list_runs(&RunFilter {
        workload: Some(workload.to_owned()),
        variant: query.variant.clone(),
        host: query.host.clone(),
        ..RunFilter::default()
    })?;
    let wanted = match &query.params {
        Some(params) => params.clone(),
        None => match metas.last() {
            Some(newest) => newest.params.clone(),
            None => {
                return Err(AppError::NotFound(format!(
                    "no stored runs of `{workload}`"
                )));
            }
        },
    };
    let metas =
        series::series_runs(workload, &wanted, metas).map_err(AppError::invalid(Input::Series))?;
    let in_series = !metas.is_empty();
    let ids: Vec<i64> = metas
        .iter()
        .filter(|m| match &query.classes {
            Classes::Only(class) => *class == MachineClass::of(&m.env).to_string(),
            _ => true,
        })
        .map(|m| m.id)
        .collect();
    let runs = load(&ids)?;
    if runs.is_empty() {
        return Err(AppError::NotFound(match &query.classes {
            Classes::Only(class) if in_series => {
                format!("no runs of `{workload}` on machine class {class}")
            }
            _ => format!("no stored runs of `{workload}` with these parameters"),
        }));
    }
    let metric = match &query.metric {
        Some(name) => Metric::resolve(name, &runs).map_err(AppError::invalid(Input::Metric))?,
        None => Metric::Throughput,
    };
    if let Some(at) = query.at {
        history::check_measured(workload, &runs, at).map_err(AppError::invalid(Input::At(at)))?;
    }
    let groups: Vec<(Option<String>, Vec<R>)> = if query.classes == Classes::Together {
        vec![(None, runs)]
    } else {
        let mut by_class: BTreeMap<String, Vec<R>> = BTreeMap::new();
        for run in runs {
            let class = MachineClass::of(&run.borrow().meta.env).to_string();
            by_class.entry(class).or_default().push(run);
        }
        by_class.into_iter().map(|(c, r)| (Some(c), r)).collect()
    };
    Ok(groups
        .into_iter()
        .map(|(class, runs)| {
            let at = query.at.unwrap_or_else(|| newest_largest_n(&runs));
            let mut hosts: Vec<String> = runs
                .iter()
                .map(|r| r.borrow().meta.env.hostname.clone())
                .collect();
            hosts.sort_unstable();
            hosts.dedup();
            ClassHistory {
                class,
                runs: runs.len(),
                hosts,
                history: history::build(workload, &runs, at, metric.clone(), &query.options),
            }
        })
        .collect())
}

/// The history a report of `run` ends with: its series' throughput at its largest N, when at
/// least one other stored run shares its workload and parameters; else `None`.
pub fn of_run(store: &Store, run: &RunData) -> Result<Option<History>, AppError> {
    let meta = &run.meta;
    let Some(&at) = meta.points.iter().max() else {
        return Ok(None);
    };
    let query = HistoryQuery {
        workload: meta.workload.clone(),
        params: Some(meta.params.clone()),
        at: Some(at),
        ..HistoryQuery::default()
    };
    let load = |ids: &[i64]| Ok(store.load_runs(ids)?);
    match histories(store, &query, load) {
        Ok(mut series) if series.first().is_some_and(|s| s.runs >= 2) => {
            Ok(Some(series.swap_remove(0).history))
        }
        Ok(_) | Err(AppError::NotFound(_) | AppError::Invalid { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The largest N of the newest run (1 when there is none).
fn newest_largest_n<R: Borrow<RunData>>(runs: &[R]) -> u32 {
    runs.last()
        .and_then(|r| r.borrow().meta.points.iter().max().copied())
        .unwrap_or(1)
}

/// `history --check`'s judgement of the newest segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The newest segment made the metric worse (exit 1).
    Regressed,
    /// The series was judged and the newest segment is not a regression (exit 0).
    Clear,
    /// Too few runs for change-point detection: neither regressed nor clear (exit 2).
    Unjudged,
}

impl Verdict {
    /// The verdict on `h`.
    pub fn of(h: &History) -> Verdict {
        if !h.judged {
            Verdict::Unjudged
        } else if h.newest_regressed {
            Verdict::Regressed
        } else {
            Verdict::Clear
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::record::RunStatus;
    use model::test_runs;

    /// A SQLite store holding `spin` runs with these throughputs at N=1 and N=2, oldest first.
    fn store_of(values: &[f64]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
        for (i, &x) in values.iter().enumerate() {
            let run = test_runs::run(i as i64 + 1, "spin", &[(1, &[x]), (2, &[x * 1.5])]);
            let id = store.begin_run(&run.meta).unwrap();
            for trial in &run.trials {
                store.add_trial(id, trial).unwrap();
            }
            store
                .finish_run(id, RunStatus::Complete, "2025-02-01T00:00:00Z")
                .unwrap();
        }
        (dir, store)
    }

    fn query() -> HistoryQuery {
        HistoryQuery {
            workload: "spin".into(),
            ..HistoryQuery::default()
        }
    }

    fn series(store: &Store, q: &HistoryQuery) -> Result<Vec<ClassHistory>, AppError> {
        histories(store, q, |ids: &[i64]| Ok(store.load_runs(ids)?))
    }

    #[test]
    fn one_series_of_the_newest_runs_parameters_at_its_largest_n() {
        let (_dir, store) = store_of(&[100.0, 102.0, 98.0]);
        let got = series(&store, &query()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].class, None);
        assert_eq!(got[0].runs, 3);
        let h = &got[0].history;
        assert_eq!(h.at, 2);
        let values: Vec<f64> = h.points.iter().map(|p| p.value).collect();
        assert_eq!(values, [150.0, 153.0, 147.0]);
    }

    #[test]
    fn classes_are_never_mixed_and_a_missing_class_is_not_found() {
        let (_dir, store) = store_of(&[100.0, 101.0]);
        let each = series(
            &store,
            &HistoryQuery {
                classes: Classes::Each,
                ..query()
            },
        )
        .unwrap();
        assert_eq!(each.len(), 1);
        let class = each[0].class.clone().unwrap();
        let only = series(
            &store,
            &HistoryQuery {
                classes: Classes::Only(class),
                ..query()
            },
        )
        .unwrap();
        assert_eq!(only[0].history.points.len(), 2);
        let missing = series(
            &store,
            &HistoryQuery {
                classes: Classes::Only("elsewhere".into()),
                ..query()
            },
        );
        assert!(
            matches!(&missing, Err(AppError::NotFound(m)) if m.contains("machine class elsewhere")),
            "{missing:?}"
        );
    }

    #[test]
    fn each_wrong_input_is_named() {
        let (_dir, store) = store_of(&[100.0, 101.0]);
        let at = series(
            &store,
            &HistoryQuery {
                at: Some(7),
                ..query()
            },
        );
        assert!(
            matches!(
                at,
                Err(AppError::Invalid {
                    input: Input::At(7),
                    ..
                })
            ),
            "{at:?}"
        );
        let metric = series(
            &store,
            &HistoryQuery {
                metric: Some("no_such_metric".into()),
                ..query()
            },
        );
        assert!(
            matches!(
                metric,
                Err(AppError::Invalid {
                    input: Input::Metric,
                    ..
                })
            ),
            "{metric:?}"
        );
        let none = series(
            &store,
            &HistoryQuery {
                workload: "atomic".into(),
                ..query()
            },
        );
        assert!(
            matches!(&none, Err(AppError::NotFound(m)) if m == "no stored runs of `atomic`"),
            "{none:?}"
        );
    }

    #[test]
    fn a_report_has_a_history_only_with_another_run_of_its_series() {
        let (_dir, store) = store_of(&[100.0]);
        let run = store.load_run(1).unwrap();
        assert!(of_run(&store, &run).unwrap().is_none());
        let (_dir, store) = store_of(&[100.0, 90.0]);
        let run = store.load_run(2).unwrap();
        let h = of_run(&store, &run).unwrap().unwrap();
        assert_eq!(h.points.len(), 2);
    }
}
