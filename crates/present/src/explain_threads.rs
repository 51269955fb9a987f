//! The threads of an explained command, by role: which counted as workers (their whole life is
//! task time), which as supervising or idle (their waiting is not), and why — the rule each
//! role follows. Formats `PointExplain::threads`; computes nothing.

use std::io::{self, Write};

use analysis::explain::Explanation;
use model::record::ThreadRole;
use model::safe_text::printable;

use crate::explain_text::Detail;
use crate::grid::Grid;
use crate::number_format::duration;
use crate::printer::Printer;

/// The header line of the accounting table: what `ns/op/task` is for this run.
pub fn accounting_header(e: &Explanation) -> &'static str {
    if e.points.iter().any(|p| !p.threads.is_empty()) {
        "time per op (ns/op/task = task time ÷ ops, task time being the command's threads' time: every worker's life, and the supervising threads' CPU and run-queue wait, not their waiting; each part the median over the point's trials, off-CPU the rest)"
    } else {
        "time per op (ns/op/task = N·W ÷ ops; each part the median over the point's trials, off-CPU the rest)"
    }
}

/// The workers per trial at a point, as the accounting table shows them: `2`, or `2–3` where
/// trials differed; empty for a built-in.
pub fn workers_cell(workers: &[u32]) -> String {
    match (workers.iter().min(), workers.iter().max()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}–{b}"),
        _ => String::new(),
    }
}

/// The threads table and the rule behind each role (one line of them at [`Detail::Brief`]);
/// nothing for a run without them. True when the rules were shortened.
pub fn write(out: &mut Printer<'_>, e: &Explanation, detail: Detail) -> io::Result<bool> {
    if e.points.iter().all(|p| p.threads.is_empty()) {
        return Ok(false);
    }
    writeln!(out)?;
    let has = |role| {
        e.points
            .iter()
            .flat_map(|p| &p.threads)
            .any(|g| g.role == role)
    };
    let whose = match (has(ThreadRole::Server), has(ThreadRole::Kernel)) {
        (false, false) => "the command's threads",
        (true, false) => "the threads of the command and its servers",
        (false, true) => "the threads of the command and the kernel threads that woke them",
        (true, true) => {
            "the threads of the command, its servers and the kernel threads that woke them"
        }
    };
    writeln!(
        out,
        "{whose} by role (each point's first traced trial; times inside the window, summed over the threads)"
    )?;
    // Steal, where the in-kernel tracer measured any: the rest of a life beside the three.
    let stolen = e
        .points
        .iter()
        .flat_map(|p| &p.threads)
        .any(|g| g.stolen.0 > 0);
    let mut headers = vec!["N", "threads", "on CPU", "run queue", "blocked"];
    if stolen {
        headers.push("stolen");
    }
    headers.extend(["waiting for what it started", "role", "name"]);
    let mut t = Grid::plain(&headers, headers.len() - 2, &[], Some("name"));
    let mut roles = Vec::new();
    for p in &e.points {
        for g in &p.threads {
            if !roles.contains(&g.role) {
                roles.push(g.role);
            }
            let mut row = vec![
                p.n.to_string(),
                g.threads.to_string(),
                duration(g.on_cpu.0 as f64),
                duration(g.runq.0 as f64),
                duration(g.blocked.0 as f64),
            ];
            if stolen {
                row.push(duration(g.stolen.0 as f64));
            }
            row.extend([
                if g.role == ThreadRole::Worker && g.waiting_for_started.0 == 0 {
                    String::new()
                } else {
                    duration(g.waiting_for_started.0 as f64)
                },
                g.role.name().into(),
                printable(&g.comm).into_owned(),
            ]);
            t.add_row(row);
        }
    }
    out.table(&t)?;
    if detail == Detail::Brief {
        writeln!(
            out,
            "  a worker's waits are causes; the other roles' waiting is shown here only"
        )?;
        return Ok(true);
    }
    roles.sort();
    for r in roles {
        writeln!(out, "  {}: {}", r.name(), r.rule())?;
    }
    writeln!(
        out,
        "  a worker's waits are causes, except its waits for what it started (their own time holds those); a supervising or idle thread's waiting is shown here only, never a cause, and its CPU stays in the accounting"
    )?;
    Ok(false)
}
