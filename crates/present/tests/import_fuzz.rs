//! CI's fuzzing of JSON import: 2,000 seeded mutations of a valid export, each read with
//! [`read_export`] and, when accepted, imported, summarized, printed and exported again — every
//! step either succeeds or returns an error; nothing panics. It lives beside the presentation
//! because its path ends in the terminal tables (`lab` cannot print; this crate can import).
//!
//! Two thirds of the cases edit the JSON tree (a value anywhere replaced by an extreme one —
//! 0, -1, u64::MAX and past it, 1e308, an empty or nested array, a control-character string —
//! a key dropped, an array element repeated); the rest edit the text's bytes (flips,
//! truncation, copied chunks), which mostly tests the JSON parser's errors. Every case has its
//! own ChaCha8 generator seeded from (seed, case), so a failure names a case that reproduces
//! alone.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use analysis::summary::summarize;
use lab::test_runs::importable_export;
use present::TextOptions;
use present::run_table::{write_run, write_run_markdown};
use store::{Store, export_csv, export_json, read_export};

const CASES: u64 = 2_000;
const SEED: u64 = 0x1a_b0a7;

#[test]
fn mutated_exports_are_imported_or_refused_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("fuzz.db")).unwrap();
    let valid = importable_export();
    let (mut imported, mut refused) = (0u64, 0u64);
    let mut panics = Vec::new();
    for case in 0..CASES {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let text = if rng.random_range(0..3) < 2 {
            let mut v = valid.clone();
            for _ in 0..rng.random_range(1..=3) {
                edit_tree(&mut v, &mut rng);
            }
            v.to_string().into_bytes()
        } else {
            edit_bytes(valid.to_string().into_bytes(), &mut rng)
        };
        // A new file each time: rewriting one in place makes ext4 flush it on every close.
        let file = dir.path().join(format!("case{case}.json"));
        std::fs::write(&file, &text).unwrap();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let Ok(export) = read_export(&file) else {
                return false;
            };
            let id = store
                .import(&export)
                .expect("what read_export accepts imports");
            let data = store.load_run(id).expect("an imported run loads");
            let summary = summarize(&data);
            let mut out = Vec::new();
            write_run(&mut out, &data.meta, &summary, &TextOptions::plain()).unwrap();
            let narrow = TextOptions {
                width: Some(40),
                ..TextOptions::plain()
            };
            write_run(&mut out, &data.meta, &summary, &narrow).unwrap();
            write_run_markdown(&mut out, &data.meta, &summary).unwrap();
            export_csv(&data, &mut out).unwrap();
            export_json(&data, &mut out).unwrap();
            true
        }));
        match outcome {
            Ok(true) => imported += 1,
            Ok(false) => refused += 1,
            Err(_) => panics.push(case),
        }
        std::fs::remove_file(&file).unwrap();
    }
    assert!(
        panics.is_empty(),
        "{} of {CASES} mutated exports panicked (seed {SEED:#x}): cases {panics:?}",
        panics.len()
    );
    assert!(
        imported > 0 && refused > 0,
        "{imported} imported, {refused} refused"
    );
    // Straight to stderr, past libtest's capture: CI's log shows how many mutations ran.
    let _ = writeln!(
        std::io::stderr(),
        "JSON import mutations: {CASES} ran (seed {SEED:#x}): {imported} imported and shown, \
         {refused} refused, 0 panics"
    );
}

/// A value that breaks arithmetic, bounds or terminals: of the same JSON type as `like` two
/// times in three (so that more cases get past the typed parse to the checks), else any.
fn extreme(like: &Value, rng: &mut ChaCha8Rng) -> Value {
    let numbers = [
        json!(0),
        json!(1),
        json!(-1),
        json!(u32::MAX),
        json!(u64::MAX),
        json!(18_446_744_073_709_551_616.0),
        json!(i64::MIN),
        json!(1e308),
        json!(0.5),
    ];
    let strings = [
        json!(""),
        json!("\u{1b}[2J\u{1b}]0;pwned\u{7}"),
        json!("=HYPERLINK(\"http://x\")"),
        json!("-3.5"),
    ];
    let arrays = [
        json!([]),
        json!([0]),
        json!(vec![u64::MAX; 3]),
        (0..200).fold(json!(0), |inner, _| Value::Array(vec![inner])),
    ];
    let others = [json!(null), json!(true), json!({})];
    let pool: Vec<&Value> = if rng.random_range(0..3) < 2 {
        match like {
            Value::Number(_) => numbers.iter().collect(),
            Value::String(_) => strings.iter().collect(),
            Value::Array(_) => arrays.iter().collect(),
            _ => others.iter().collect(),
        }
    } else {
        numbers
            .iter()
            .chain(&strings)
            .chain(&arrays)
            .chain(&others)
            .collect()
    };
    pool[rng.random_range(0..pool.len())].clone()
}

/// One edit somewhere in the tree: a value replaced, a key dropped or an element repeated.
fn edit_tree(v: &mut Value, rng: &mut ChaCha8Rng) {
    // Walk down a random path; stop at a random depth or at a leaf.
    let mut node = v;
    loop {
        let go_on = rng.random_range(0..4) != 0;
        let children = match node {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if children == 0 || !go_on {
            break;
        }
        let i = rng.random_range(0..children);
        node = match node {
            Value::Object(m) => m.values_mut().nth(i).unwrap(),
            Value::Array(a) => &mut a[i],
            _ => unreachable!(),
        };
    }
    match (rng.random_range(0..6), &mut *node) {
        (0, Value::Object(m)) if !m.is_empty() => {
            let key = m.keys().nth(rng.random_range(0..m.len())).unwrap().clone();
            m.remove(&key);
        }
        (1, Value::Array(a)) if !a.is_empty() => {
            let i = rng.random_range(0..a.len());
            let copy = a[i].clone();
            a.insert(i, copy);
        }
        (2, Value::Array(a)) if !a.is_empty() => {
            a.remove(rng.random_range(0..a.len()));
        }
        _ => *node = extreme(node, rng),
    }
}

/// Byte edits of the JSON text.
fn edit_bytes(mut text: Vec<u8>, rng: &mut ChaCha8Rng) -> Vec<u8> {
    for _ in 0..rng.random_range(1..=4) {
        if text.is_empty() {
            break;
        }
        let at = rng.random_range(0..text.len());
        match rng.random_range(0..4) {
            0 => text[at] ^= 1 << rng.random_range(0..8),
            1 => text[at] = b"0123456789-.eE\"[]{},:"[rng.random_range(0..21)],
            2 => text.truncate(at),
            _ => {
                let from = rng.random_range(0..text.len());
                let len = rng.random_range(1..=32).min(text.len() - from);
                let chunk = text[from..from + len].to_vec();
                text.splice(at..at, chunk);
            }
        }
    }
    text
}
