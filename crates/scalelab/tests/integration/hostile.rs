//! Hostile input through the real CLI: an exported run whose every string carries terminal
//! escapes (clear screen, OSC window title, BEL, C1 CSI, a bidi override) and spreadsheet
//! formulas is imported, then listed, shown, compared, exported and refused — and no raw control
//! character reaches stdout or stderr, and every CSV text cell that could start a formula is
//! neutralised.

use serde_json::{Value, json};

use crate::common::Lab;

/// Clear screen, a window title (OSC … BEL), a C1 CSI and a right-to-left override.
const ESCAPES: &str = "\u{1b}[2J\u{1b}]0;owned\u{7}\u{9b}31m\u{202e}";

/// Control characters a terminal acts on: C0 but newline, DEL, C1, and the bidi controls.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

/// A real two-point export with hostile strings in every text field an import keeps.
fn hostile_export(lab: &Lab) -> Value {
    lab.ok(&[
        "run",
        "spin",
        "--tasks",
        "1,2",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--warmup",
        "0",
        "--no-counters",
        "--quiet",
    ]);
    let mut v: Value = serde_json::from_str(&lab.ok(&["export", "last"])).unwrap();
    let meta = &mut v["run"]["meta"];
    meta["workload"] = json!(format!("spin{ESCAPES}"));
    meta["name"] = json!(format!("=cmd|' /C calc'!A0{ESCAPES}"));
    meta["variant"] = json!(format!("=HYPERLINK(\"http://x\"){ESCAPES}"));
    meta["tags"] = json!({ format!("+tag{ESCAPES}"): format!("-2+3{ESCAPES}") });
    meta["params"] = json!({ format!("p{ESCAPES}"): format!("@v{ESCAPES}") });
    meta["op_unit"] = json!(format!("one op{ESCAPES}"));
    meta["warnings"] = json!([format!("planted{ESCAPES}\nsecond line")]);
    meta["command_line"] = json!(format!("scalelab run{ESCAPES}"));
    meta["env"]["hostname"] = json!(format!("host{ESCAPES}"));
    meta["env"]["kernel_release"] = json!(format!("6.8{ESCAPES}"));
    meta["env"]["cpu_model"] = json!(format!("cpu{ESCAPES}"));
    let trials = v["run"]["trials"].as_array_mut().unwrap();
    trials[1]["outcome"] = json!({
        "status": "failed",
        "reason": format!("@SUM(A1){ESCAPES}\r\nfake line"),
    });
    let m = &mut trials[0]["outcome"];
    m["extras"] = json!({ format!("extra{ESCAPES}"): 1 });
    m["counters"] = json!([{
        "event": format!("cycles{ESCAPES}"),
        "value": null,
        "multiplexed": false,
        "note": format!("note{ESCAPES}"),
    }]);
    v
}

#[test]
fn imported_escapes_never_reach_the_terminal_and_csv_formulas_are_neutralised() {
    let lab = Lab::new();
    let source = Lab::new();
    let export = hostile_export(&source);
    let file = lab.path("hostile.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let file = file.to_str().unwrap();
    let mut impossible = export.clone();
    impossible["run"]["trials"][0]["outcome"]["window"] = json!(0);
    let bad = lab.path("impossible.json");
    std::fs::write(&bad, impossible.to_string()).unwrap();
    let bad = bad.to_str().unwrap();
    // A second run (its own UUID: importing one run twice stores it once) to compare with.
    let mut second = export.clone();
    second["run"]["meta"]["uuid"] = json!("00000000-0000-4000-8000-000000000002");
    let file2 = lab.path("hostile2.json");
    std::fs::write(&file2, second.to_string()).unwrap();
    let file2 = file2.to_str().unwrap();
    let workload = format!("spin{ESCAPES}");

    let commands: Vec<Vec<&str>> = vec![
        vec!["import", file],
        vec!["import", file2],
        vec!["import", file],
        vec!["ls"],
        vec!["ls", "--json"],
        vec!["show", "last"],
        vec!["show", "last", "--json"],
        vec!["show", file],
        vec!["export", "last", "--format", "csv"],
        vec!["export", "last"],
        vec!["compare", "1", "2"],
        vec!["compare", "1", "2", "--json"],
        vec!["history", &workload],
        vec!["model", "last"],
        vec!["locks", "last"],
        vec!["profile", "last"],
        vec!["import", bad],
        vec!["show", bad],
    ];
    for args in &commands {
        let out = lab.run(args);
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            let raw = raw_controls(&text);
            assert!(
                raw.is_empty(),
                "scalelab {args:?} wrote raw {raw:?} to {stream}:\n{text}"
            );
        }
    }
    // The refusal still names the run, escaped.
    let err = lab.fails(&["import", bad]);
    assert!(err.contains("spin\\x1b[2J"), "{err}");

    // CSV: text cells that could start a formula are quoted with a leading quote; numbers
    // are left alone.
    let csv = lab.ok(&["export", "last", "--format", "csv"]);
    let mut rows = csv.lines().skip(1);
    let ok_row = rows.next().unwrap();
    assert!(
        ok_row.contains(",\"'=HYPERLINK(\"\"http://x\"\")\\x1b[2J"),
        "{ok_row}"
    );
    let failed_row = rows.next().unwrap();
    assert!(failed_row.contains(",\"'@SUM(A1)\\x1b[2J"), "{failed_row}");
    let ops_per_sec = ok_row.split(',').nth(8).unwrap();
    assert!(ops_per_sec.parse::<f64>().is_ok(), "{ok_row}");
}
