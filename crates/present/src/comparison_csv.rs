//! A comparison as CSV (`scalelab compare --format csv`): one row per N with the figures as
//! numbers (medians in the metric's unit, changes as fractions: -0.05 is -5%), for a
//! spreadsheet or a script; the verdict as the JSON names it (`regressed`, `no_change`…). A point not compared has empty figures and says why in `note`.

use std::io::{self, Write};

use analysis::comparison::Comparison;
use model::safe_text::printable;
use stats::Verdict;

/// The header row, in column order.
pub const CSV_HEADER: [&str; 16] = [
    "n",
    "runs_a",
    "runs_b",
    "pairs",
    "median_a",
    "median_b",
    "change",
    "shift",
    "shift_lower",
    "shift_upper",
    "level",
    "p_value",
    "verdict",
    "min_detectable",
    "runs_needed",
    "note",
];

/// Writes the header and one row per N.
pub fn write_compare_csv(out: &mut dyn Write, comparison: &Comparison) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_HEADER)?;
    let opt = |v: Option<String>| v.unwrap_or_default();
    for p in &comparison.points {
        let c = p.change;
        let figure = |f: &dyn Fn(&stats::Change) -> String| opt(c.as_ref().map(f));
        w.write_record([
            p.n.to_string(),
            p.runs_a.to_string(),
            p.runs_b.to_string(),
            opt(p.pairs.map(|k| k.to_string())),
            figure(&|c| c.median_a.to_string()),
            figure(&|c| c.median_b.to_string()),
            figure(&|c| c.relative.to_string()),
            figure(&|c| c.relative_shift.point.to_string()),
            figure(&|c| c.relative_shift.lower.to_string()),
            figure(&|c| c.relative_shift.upper.to_string()),
            figure(&|c| c.relative_shift.level.to_string()),
            figure(&|c| c.p_value.to_string()),
            figure(&|c| verdict_name(c.verdict)),
            opt(c.and_then(|c| c.min_detectable).map(|d| d.to_string())),
            opt(c.and_then(|c| c.runs_needed).map(|k| k.to_string())),
            printable(p.note.as_deref().unwrap_or_default()).into_owned(),
        ])?;
    }
    w.flush()
}

/// The verdict as JSON names it (`regressed`, `no_change`…): one word a script can match.
fn verdict_name(verdict: Verdict) -> String {
    match verdict {
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::NoChange => "no_change",
        Verdict::Inconclusive => "inconclusive",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use analysis::comparison::compare_runs;
    use lab::test_runs::{around, run};
    use stats::CompareOptions;

    use super::*;

    #[test]
    fn one_row_per_n_with_numbers_a_script_can_read() {
        let a = run(
            1,
            "spin",
            &[
                (1, &around(1000.0, 0.01, 10)),
                (2, &around(2000.0, 0.01, 10)),
            ],
        );
        let b = run(
            2,
            "spin",
            &[
                (1, &around(1000.0, 0.01, 10)),
                (2, &around(1800.0, 0.01, 10)),
            ],
        );
        let c = compare_runs(&a, &b, &CompareOptions::default(), false);
        let mut out = Vec::new();
        write_compare_csv(&mut out, &c).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut rows = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(rows.headers().unwrap(), CSV_HEADER.as_slice());
        let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert_eq!(&rows[1][0], "2");
        assert_eq!(&rows[1][12], "regressed");
        let change: f64 = rows[1][6].parse().unwrap();
        assert!((change - -0.1).abs() < 0.02, "{text}");
        let median_a: f64 = rows[1][4].parse().unwrap();
        assert!((median_a - 2000.0).abs() < 50.0, "{text}");
    }
}
