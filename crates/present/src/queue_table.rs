//! `scalelab queue` as text: the jobs (one line each: where it is, what it runs, and where or
//! why), the recurring jobs (when, next, their jobs) and the agents (class, what they allow, last heartbeat, current job). The command
//! builds the lines from the store's rows; this module only lays them out (`grid`), so that
//! the presentation layer needs nothing of the store.

use std::io::{self, Write};

use crate::grid::Grid;
use crate::text_options::TextOptions;
use model::safe_text::printable;

/// One job, as text.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JobLine {
    /// Job id.
    pub id: i64,
    /// `queued`, `running`, `done`, `failed`, `cancelled` (with `regressed` for a done A/B).
    pub state: String,
    /// Its machine class filter.
    pub class: String,
    /// The scalelab arguments it runs.
    pub job: String,
    /// Where it runs and since when, its runs, or why it waits or failed.
    pub detail: String,
}

/// One recurring job, as text.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScheduleLine {
    /// Schedule id.
    pub id: i64,
    /// When it comes due (`mon 03:00 UTC`), or `stopped`.
    pub every: String,
    /// Its machine class filter.
    pub class: String,
    /// The scalelab arguments it runs.
    pub job: String,
    /// Its next occurrence.
    pub next: String,
    /// Its jobs so far and the last one's state.
    pub jobs: String,
}

/// One agent, as text.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AgentLine {
    /// Its host.
    pub host: String,
    /// `alive` or `gone`.
    pub state: String,
    /// Its machine class.
    pub class: String,
    /// Which commands it runs.
    pub allow: String,
    /// How long ago it was last heard of.
    pub heartbeat: String,
    /// The job it runs now, or `-`.
    pub job: String,
}

/// Writes the jobs table and the agents table (each with a title; `none` when empty).
pub fn write_queue(
    out: &mut dyn Write,
    jobs: &[JobLine],
    schedules: &[ScheduleLine],
    agents: &[AgentLine],
    opts: &TextOptions,
) -> io::Result<()> {
    writeln!(out, "Jobs")?;
    if jobs.is_empty() {
        writeln!(out, "  none queued yet (`scalelab submit … run WORKLOAD`)")?;
    } else {
        let mut grid = Grid::plain(
            &["ID", "STATE", "CLASS", "JOB", "WHERE / WHY"],
            1,
            &["CLASS"],
            Some("JOB"),
        );
        for j in jobs {
            grid.add_row(vec![
                j.id.to_string(),
                printable(&j.state).into_owned(),
                printable(&j.class).into_owned(),
                printable(&j.job).into_owned(),
                printable(&j.detail).into_owned(),
            ]);
        }
        grid.write_terminal(out, opts)?;
    }
    if !schedules.is_empty() {
        writeln!(out)?;
        writeln!(out, "Recurring")?;
        let mut grid = Grid::plain(
            &["ID", "EVERY", "CLASS", "JOB", "NEXT", "JOBS"],
            1,
            &["CLASS"],
            Some("JOB"),
        );
        for r in schedules {
            grid.add_row(vec![
                r.id.to_string(),
                printable(&r.every).into_owned(),
                printable(&r.class).into_owned(),
                printable(&r.job).into_owned(),
                printable(&r.next).into_owned(),
                printable(&r.jobs).into_owned(),
            ]);
        }
        grid.write_terminal(out, opts)?;
    }
    writeln!(out)?;
    writeln!(out, "Agents")?;
    if agents.is_empty() {
        writeln!(
            out,
            "  none has registered (`scalelab agent` on each lab machine)"
        )?;
        return Ok(());
    }
    let mut grid = Grid::plain(
        &["HOST", "STATE", "CLASS", "ALLOWS", "HEARD", "JOB"],
        0,
        &["ALLOWS", "CLASS"],
        None,
    );
    for a in agents {
        grid.add_row(vec![
            printable(&a.host).into_owned(),
            printable(&a.state).into_owned(),
            printable(&a.class).into_owned(),
            printable(&a.allow).into_owned(),
            printable(&a.heartbeat).into_owned(),
            printable(&a.job).into_owned(),
        ]);
    }
    grid.write_terminal(out, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_and_agents_are_laid_out_with_their_details_and_hostile_text_escaped() {
        let jobs = [JobLine {
            id: 7,
            state: "queued".into(),
            class: "cpus>=32".into(),
            job: "run page_fault --tasks all".into(),
            detail: "no live agent of class cpus>=32\x1b[31m".into(),
        }];
        let agents = [AgentLine {
            host: "lab-1".into(),
            state: "alive".into(),
            class: "x86_64 · 2 CPUs".into(),
            allow: "built-ins".into(),
            heartbeat: "3 s ago".into(),
            job: "-".into(),
        }];
        let mut out = Vec::new();
        let schedules = [ScheduleLine {
            id: 2,
            every: "mon 03:00 UTC".into(),
            class: "any".into(),
            job: "run create_unlink".into(),
            next: "2026-11-30T03:00:00Z".into(),
            jobs: "1 (last: 9, done)".into(),
        }];
        write_queue(&mut out, &jobs, &schedules, &agents, &TextOptions::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("run page_fault --tasks all"), "{text}");
        assert!(text.contains("lab-1") && text.contains("3 s ago"), "{text}");
        assert!(
            text.contains("Recurring") && text.contains("mon 03:00 UTC"),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "{text}");
    }

    #[test]
    fn an_empty_queue_says_how_to_fill_it() {
        let mut out = Vec::new();
        write_queue(&mut out, &[], &[], &[], &TextOptions::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("scalelab submit") && text.contains("scalelab agent"),
            "{text}"
        );
    }
}
