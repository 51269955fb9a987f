//! Moving runs out of and into the store: JSON export (the lossless, versioned form that
//! `import` reads back), CSV export (one row per trial, for spreadsheets and scripts).
//!
//! The JSON is a [`RunExport`] envelope, its strings' control characters `\u`-escaped
//! ([`model::safe_text::write_json`]); [`read_export`] refuses a newer `schema_version` before
//! looking at anything else, so the error names both versions instead of a missing field, and
//! refuses a run no measurement could produce ([`super::validation`]). CSV
//! quoting is hand-rolled (RFC 4180: a field holding a comma, quote, CR or LF is quoted, quotes
//! doubled); no CSV crate is needed for one writer. Its text cells (workload, variant, status,
//! failure) are neutralised against spreadsheet formulas and control characters
//! ([`model::safe_text::csv_text`]); its numeric cells are our own numbers, written as they are.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::StoreError;
use model::record::{EXPORT_SCHEMA_VERSION, RunData, RunExport, TrialOutcome};
use model::safe_text::csv_text;

/// Writes `data` as a pretty-printed [`RunExport`] with the current `schema_version`.
pub fn export_json(data: &RunData, out: &mut dyn Write) -> Result<(), StoreError> {
    /// The same JSON as [`RunExport`], borrowing the run instead of cloning it.
    #[derive(Serialize)]
    struct Envelope<'a> {
        schema_version: u32,
        tool_version: &'a str,
        run: &'a RunData,
    }
    let envelope = Envelope {
        schema_version: EXPORT_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        run: data,
    };
    model::safe_text::write_json(out, &envelope)
        .and_then(|()| out.flush())
        .map_err(|source| StoreError::Write { source })
}

/// The CSV columns, in order.
pub(crate) const CSV_HEADER: [&str; 23] = [
    "run_id",
    "workload",
    "variant",
    "n",
    "trial",
    "status",
    "window_s",
    "ops",
    "ops_per_sec",
    "user_s",
    "sys_s",
    "minor_faults",
    "major_faults",
    "voluntary_switches",
    "involuntary_switches",
    "block_in",
    "block_out",
    "run_delay_s",
    "max_rss_kib",
    "cycles",
    "instructions",
    "cache_misses",
    "failure",
];

/// Writes one CSV row per trial of `data`, after a header row (`CSV_HEADER`). A failed
/// trial's measurement columns are empty; so are `cycles`/`instructions` when not counted and
/// `run_delay_s` and `max_rss_kib` (peak memory, KiB) when not measured.
pub fn export_csv(data: &RunData, out: &mut dyn Write) -> Result<(), StoreError> {
    let write = |out: &mut dyn Write, cells: &[String]| -> std::io::Result<()> {
        writeln!(out, "{}", cells.join(","))
    };
    write(out, &CSV_HEADER.map(str::to_owned)).map_err(|source| StoreError::Write { source })?;
    let meta = &data.meta;
    for trial in &data.trials {
        // Text cells go through `csv_text`; the rest are numbers this function formats.
        let mut row = vec![
            meta.id.to_string(),
            csv_text(&meta.workload),
            csv_text(meta.variant.as_deref().unwrap_or_default()),
            trial.n.to_string(),
            trial.index.to_string(),
        ];
        match &trial.outcome {
            TrialOutcome::Ok(m) => {
                let u = &m.usage;
                let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
                row.extend([
                    "ok".to_owned(),
                    m.window.as_secs_f64().to_string(),
                    m.task_ops
                        .iter()
                        .fold(0u64, |a, &b| a.saturating_add(b))
                        .to_string(),
                    m.ops_over_window().to_string(),
                    u.user.as_secs_f64().to_string(),
                    u.sys.as_secs_f64().to_string(),
                    u.minor_faults.to_string(),
                    u.major_faults.to_string(),
                    u.voluntary_switches.to_string(),
                    u.involuntary_switches.to_string(),
                    u.block_in.to_string(),
                    u.block_out.to_string(),
                    u.run_delay
                        .map(|d| d.as_secs_f64().to_string())
                        .unwrap_or_default(),
                    opt(u.max_rss_kib),
                    opt(m.counter("cycles")),
                    opt(m.counter("instructions")),
                    opt(m.counter("cache-misses")),
                    String::new(),
                ]);
            }
            TrialOutcome::Failed { reason } => {
                row.push("failed".to_owned());
                row.extend(std::iter::repeat_n(
                    String::new(),
                    CSV_HEADER.len() - row.len() - 1,
                ));
                row.push(csv_text(reason));
            }
        }
        write(out, &row).map_err(|source| StoreError::Write { source })?;
    }
    out.flush().map_err(|source| StoreError::Write { source })
}

/// Reads an exported run, refusing a format newer than this build knows. The file is read
/// once, within [`sys::InputKind::Export`]'s limit, and parsed from its bytes straight into the
/// run: it needs the file's size and the run's, not a JSON tree beside them.
pub fn read_export(path: &Path) -> Result<RunExport, StoreError> {
    let bytes = sys::read_input(path, sys::InputKind::Export)
        .map_err(|source| StoreError::ReadExport { source })?;
    parse_export(path, &bytes)
}

/// Parses the text of an export read from `path`: its `schema_version` first (without building
/// anything of the rest), then the run, once.
fn parse_export(path: &Path, text: &[u8]) -> Result<RunExport, StoreError> {
    /// The envelope's version as written, the rest of the file skipped unbuilt.
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        schema_version: Option<&'a serde_json::value::RawValue>,
    }
    let bad = |detail: String| StoreError::BadExport {
        path: path.to_path_buf(),
        detail,
    };
    let envelope: Envelope<'_> =
        serde_json::from_slice(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let raw = envelope
        .schema_version
        .ok_or_else(|| bad("no `schema_version` field".into()))?
        .get();
    match raw.parse::<u64>() {
        Ok(found) if found > u64::from(EXPORT_SCHEMA_VERSION) => {
            return Err(StoreError::NewerExport {
                path: path.to_path_buf(),
                found,
                supported: EXPORT_SCHEMA_VERSION,
            });
        }
        Ok(found) if found >= 1 => {}
        _ => {
            return Err(bad(format!(
                "`schema_version` {} is not an export format version; this scalelab reads {}",
                model::safe_text::excerpt(raw, 60),
                readable_versions()
            )));
        }
    }
    let export: RunExport = serde_json::from_slice(text).map_err(|e| bad(e.to_string()))?;
    crate::validation::validate(&export.run).map_err(|detail| StoreError::ImpossibleRun {
        origin: path.display().to_string(),
        detail,
    })?;
    Ok(export)
}

/// The export format versions this build reads, in words: `1`, or `1 to 3`.
fn readable_versions() -> String {
    if EXPORT_SCHEMA_VERSION == 1 {
        "version 1".into()
    } else {
        format!("versions 1 to {EXPORT_SCHEMA_VERSION}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_text("plain"), "plain");
        assert_eq!(csv_text("a,b"), "\"a,b\"");
        assert_eq!(csv_text("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_text("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_text(""), "");
    }

    fn write_file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    /// Was accepted, then shown and stored: data no measurement can produce.
    #[test]
    fn impossible_runs_are_refused_naming_the_run_and_the_field() {
        use model::test_runs::importable_export;
        use serde_json::{Value, json};
        type Edit = fn(&mut Value);
        let cases: &[(&str, Edit, &str)] = &[
            (
                "window 0",
                |v| v["run"]["trials"][0]["outcome"]["window"] = json!(0),
                "trials[0] (N=1, trial 0).window",
            ),
            (
                "N 0",
                |v| v["run"]["meta"]["points"] = json!([0, 2]),
                "points: N=0",
            ),
            (
                "no points",
                |v| v["run"]["meta"]["points"] = json!([]),
                "points: empty",
            ),
            (
                "ops beyond u64",
                |v| v["run"]["trials"][2]["outcome"]["task_ops"] = json!([u64::MAX, 1]),
                "trials[2] (N=2, trial 0).task_ops: the total overflows",
            ),
            (
                "trial N not among the points",
                |v| v["run"]["trials"][0]["n"] = json!(3),
                "trials[0] (N=3, trial 0).n",
            ),
            (
                "task_ops length is not N",
                |v| v["run"]["trials"][3]["outcome"]["task_ops"] = json!([1000]),
                "trials[3] (N=2, trial 1).task_ops: 1 counts for N=2",
            ),
            (
                "a negative load average",
                |v| v["run"]["meta"]["env"]["loadavg"] = json!([-1.0, 0.0, 0.0]),
                "env.loadavg[0]",
            ),
            (
                "samples out of order",
                |v| {
                    let samples = &mut v["run"]["trials"][1]["outcome"]["samples"];
                    samples.as_array_mut().unwrap().reverse();
                },
                "trials[1] (N=1, trial 1).samples[1]",
            ),
            (
                "the same trial twice",
                |v| v["run"]["trials"][1]["index"] = json!(0),
                "trials[1] (N=1, trial 0).index",
            ),
            (
                "more trials than planned",
                |v| v["run"]["meta"]["runs"] = json!(1),
                "trials: 4 trials, more than the 2 planned",
            ),
            (
                "a 584-year warm-up",
                |v| v["run"]["meta"]["warmup"] = json!(u64::MAX),
                "warmup",
            ),
            (
                "user + sys beyond u64",
                |v| {
                    let usage = &mut v["run"]["trials"][0]["outcome"]["usage"];
                    usage["user"] = json!(u64::MAX);
                    usage["sys"] = json!(1);
                },
                "trials[0] (N=1, trial 0).usage.sys",
            ),
        ];
        let valid = write_file(&importable_export().to_string());
        read_export(valid.path()).expect("the valid export is accepted");
        for (what, edit, field) in cases {
            let mut v = importable_export();
            edit(&mut v);
            let f = write_file(&v.to_string());
            let err = read_export(f.path()).expect_err(what).to_string();
            assert!(err.contains("run 7 (spin): "), "{what}: {err}");
            assert!(err.contains(field), "{what}: {err}");
            assert!(
                err.contains(&f.path().display().to_string()),
                "{what}: {err}"
            );
        }
    }

    #[test]
    fn newer_export_names_both_versions() {
        let f = write_file(r#"{"schema_version": 99, "whatever": true}"#);
        let err = read_export(f.path()).unwrap_err().to_string();
        assert!(
            err.contains("99") && err.contains(&EXPORT_SCHEMA_VERSION.to_string()),
            "{err}"
        );
        assert!(err.contains("upgrade scalelab"), "{err}");
    }

    /// Was: "no `schema_version` field" for a version that is there but no u64.
    #[test]
    fn an_impossible_schema_version_is_named_with_the_versions_read() {
        for (version, shown) in [
            ("18446744073709551616", "18446744073709551616"),
            ("-1", "-1"),
            ("1.5", "1.5"),
            ("\"1\"", "\"1\""),
            ("0", "0"),
        ] {
            let f = write_file(&format!(r#"{{"schema_version": {version}, "run": {{}}}}"#));
            let err = read_export(f.path()).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "`schema_version` {shown} is not an export format version"
                )),
                "{version}: {err}"
            );
            assert!(err.contains("this scalelab reads version 1"), "{err}");
        }
    }

    #[test]
    fn non_exports_are_explained() {
        for text in [
            "not json",
            "{}",
            r#"{"schema_version": 0}"#,
            r#"{"schema_version": 1}"#,
        ] {
            let f = write_file(text);
            let err = read_export(f.path()).unwrap_err();
            assert!(matches!(err, StoreError::BadExport { .. }), "{text}: {err}");
            assert!(
                err.to_string().contains(&f.path().display().to_string()),
                "{err}"
            );
        }
        let err = read_export(Path::new("/nonexistent/x.json")).unwrap_err();
        assert!(matches!(err, StoreError::ReadExport { .. }), "{err}");
    }
}
