//! Which stored runs make one history series: runs of one workload with one set of parameters.
//!
//! A built-in workload's parameters are resolved with their defaults before they get here, so
//! its series is the runs with exactly those parameters. An external command's parameters are
//! its command line, steps, prepare, cleanup and op count (`cmd`, `step1.NAME`, `prepare`, …):
//! runs of different commands measure different things, so they are never one series. A
//! selection that still holds several commands is refused, listing each with the flags that
//! pick it.

use std::collections::BTreeMap;

use crate::AnalysisError;
use model::number_text::plural;
use model::record::RunMeta;
use model::safe_text::printable;

/// The runs of `workload` (`runs`, already of that workload, oldest first) that form its series
/// for the parameters `wanted`: for a built-in workload, exactly those parameters; for `cmd`,
/// every run whose parameters include `wanted`, which must then all be of one command (else an
/// error lists the commands and how to pick one). No matching run is an empty series, not an
/// error.
pub fn series_runs(
    workload: &str,
    wanted: &BTreeMap<String, String>,
    runs: Vec<RunMeta>,
) -> Result<Vec<RunMeta>, AnalysisError> {
    let command = workload == "cmd";
    let runs: Vec<RunMeta> = runs
        .into_iter()
        .filter(|m| {
            if command {
                wanted.iter().all(|(k, v)| m.params.get(k) == Some(v))
            } else {
                m.params == *wanted
            }
        })
        .collect();
    let mut keys: Vec<(&BTreeMap<String, String>, Vec<i64>)> = Vec::new();
    for m in &runs {
        match keys.iter_mut().find(|(params, _)| **params == m.params) {
            Some((_, ids)) => ids.push(m.id),
            None => keys.push((&m.params, vec![m.id])),
        }
    }
    if keys.len() > 1 {
        let listed: Vec<String> = keys
            .iter()
            .map(|(params, ids)| format!("  {}  ({})", picking_flags(params), run_ids(ids)))
            .collect();
        return Err(AnalysisError::Input(format!(
            "runs of {} match: a history follows one command, so pick it with --cmd (and \
             -p KEY=VAL for its other settings):\n{}",
            plural(keys.len(), "command"),
            listed.join("\n")
        )));
    }
    Ok(runs)
}

/// `--cmd 'make -j{n}' -p 'prepare=make clean'`: the flags that select runs with `params`.
fn picking_flags(params: &BTreeMap<String, String>) -> String {
    let mut flags = Vec::new();
    if let Some(cmd) = params.get("cmd") {
        flags.push(format!("--cmd {}", shell_quoted(cmd)));
    }
    flags.extend(
        params
            .iter()
            .filter(|(k, _)| *k != "cmd")
            .map(|(k, v)| format!("-p {}", shell_quoted(&format!("{k}={v}")))),
    );
    printable(&flags.join(" ")).into_owned()
}

/// `text` in single quotes for a POSIX shell (`'` as `'\''`).
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `run 3` or `runs 1, 4, 7`.
fn run_ids(ids: &[i64]) -> String {
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    if ids.len() == 1 {
        format!("run {}", list[0])
    } else {
        format!("runs {}", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::test_runs::meta;

    fn command(id: i64, params: &[(&str, &str)]) -> RunMeta {
        let mut m = meta(id, "cmd", &[1]);
        m.params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        m
    }

    fn wanted(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn ids(runs: &[RunMeta]) -> Vec<i64> {
        runs.iter().map(|m| m.id).collect()
    }

    /// Issue 13: `history cmd` mixed unrelated commands in one series.
    #[test]
    fn a_command_series_is_keyed_by_its_command_line() {
        let stored = vec![
            command(1, &[("cmd", "make -j{n}")]),
            command(2, &[("cmd", "./bench 'x'")]),
            command(3, &[("cmd", "make -j{n}")]),
            command(4, &[("cmd", "make -j{n}"), ("prepare", "make clean")]),
        ];
        let err = series_runs("cmd", &wanted(&[]), stored.clone())
            .unwrap_err()
            .to_string();
        for needle in [
            "runs of 3 commands match",
            "  --cmd 'make -j{n}'  (runs 1, 3)",
            r"  --cmd './bench '\''x'\'''  (run 2)",
            "  --cmd 'make -j{n}' -p 'prepare=make clean'  (run 4)",
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        let bench = series_runs("cmd", &wanted(&[("cmd", "./bench 'x'")]), stored.clone());
        assert_eq!(ids(&bench.unwrap()), [2]);
        // The same command with and without a prepare step are still two series.
        let make = series_runs("cmd", &wanted(&[("cmd", "make -j{n}")]), stored.clone());
        assert!(make.unwrap_err().to_string().contains("2 commands"));
        let clean = wanted(&[("cmd", "make -j{n}"), ("prepare", "make clean")]);
        assert_eq!(
            ids(&series_runs("cmd", &clean, stored.clone()).unwrap()),
            [4]
        );
        let none = series_runs("cmd", &wanted(&[("cmd", "false")]), stored).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_built_in_series_is_its_exact_parameters() {
        let mut a = meta(1, "atomic", &[1]);
        a.params = wanted(&[("mode", "fetch_add")]);
        let mut b = meta(2, "atomic", &[1]);
        b.params = wanted(&[("mode", "private")]);
        let runs = series_runs("atomic", &wanted(&[("mode", "private")]), vec![a, b]).unwrap();
        assert_eq!(ids(&runs), [2]);
    }
}
