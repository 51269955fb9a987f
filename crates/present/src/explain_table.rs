//! Terminal text for `scalelab explain`: the ranked answer first, then the accounting per N,
//! the growth by cause, the evidence behind the top causes, the USL reading, what evidence is
//! missing (with the command that gets it), and how noise was decided. Its words are
//! `explain_text`'s; each note is one line by default ([`Detail::Brief`]) and whole with
//! `--verbose`.

use std::io::{self, Write};

use analysis::explain::{CauseGrowth, CauseKind, Explanation, GrowthAccount, NoiseRule};
use model::safe_text::printable;

use crate::explain_text::Detail;
use crate::explain_text::{
    TOP, agreement_rows, answer, blocking_change_note, call_sites_line, cause_label, chain_note,
    measuring_note, mechanism, partner_note, pct, share_with_interval, signed, steal_note,
    trace_cost_note, trial_list, unwoken_note,
};
use crate::explain_threads;
use crate::grid::Grid;
use crate::number_format::duration;
use crate::printer::Printer;

/// The whole explanation as terminal text: the answer, the accounting per N, the traces
/// against it, the growth by cause with its evidence, the USL reading, what evidence is
/// missing, and which trials each part came from.
pub fn write(out: &mut Printer<'_>, e: &Explanation, detail: Detail) -> io::Result<()> {
    writeln!(out, "{}", e.description)?;
    writeln!(out, "{}", answer(e))?;
    writeln!(out)?;
    write_accounting(out, e)?;
    let shortened = explain_threads::write(out, e, detail)?;
    let shortened = write_agreement(out, e, detail)? || shortened;
    if let Some(g) = &e.growth {
        write_growth(out, e, g)?;
    }
    if let Some(u) = &e.usl {
        writeln!(out)?;
        let agree = match u.agrees {
            Some(true) => "the top named cause agrees",
            Some(false) => "the top named cause does NOT agree: read the causes with care",
            None => "no cause was named to compare",
        };
        writeln!(
            out,
            "USL: σ = {:.4}, κ = {:.5}; at N={} σ(N−1) = {:.3} vs κN(N−1) = {:.3}: {} dominates; {agree}",
            u.sigma,
            u.kappa,
            e.points.last().map_or(0, |p| p.n),
            u.sigma_term,
            u.kappa_term,
            mechanism(u.dominant)
        )?;
    }

    if !e.missing.is_empty() {
        writeln!(out)?;
        writeln!(out, "missing evidence")?;
        for m in &e.missing {
            writeln!(out, "  {} — {}", m.what, m.fix)?;
        }
    }

    let shortened = write_sources(out, e, detail)? || shortened;
    if shortened {
        writeln!(
            out,
            "(notes shortened to one line each: `scalelab explain RUN --verbose` prints them whole)"
        )?;
    }
    Ok(())
}

/// The accounting table: ns per op per task, split into user, system, run queue and off-CPU
/// (and supervising/workers for a command's threads), with the trials' spread.
fn write_accounting(out: &mut Printer<'_>, e: &Explanation) -> io::Result<()> {
    writeln!(out, "{}", explain_threads::accounting_header(e))?;
    let threads = e.points.iter().any(|p| !p.accounting.workers.is_empty());
    let mut headers = vec!["N", "ns/op/task", "user", "system", "run queue", "off-CPU"];
    if threads {
        headers.extend(["supervising", "workers"]);
    }
    headers.extend(["CV", "trials"]);
    let mut t = Grid::plain(&headers, headers.len(), &["CV"], None);
    for p in &e.points {
        let a = &p.accounting;
        let mut row = vec![
            p.n.to_string(),
            duration(a.ns_per_op_task),
            duration(a.user_ns),
            duration(a.system_ns),
            if a.runq_measured {
                duration(a.runq_ns)
            } else {
                "—".into()
            },
            duration(a.offcpu_ns),
        ];
        if threads {
            row.push(a.supervising_ns.map_or_else(String::new, duration));
            row.push(explain_threads::workers_cell(&a.workers));
        }
        row.push(a.cv.map_or_else(|| "—".into(), |c| format!("{:.1}%", c * 100.0)));
        row.push(a.trials.len().to_string());
        t.add_row(row);
    }
    out.table(&t)
}

/// The traces against the accounting on the same trials, and the notes on what the traces
/// cost and missed. True when a note was shortened.
fn write_agreement(out: &mut Printer<'_>, e: &Explanation, detail: Detail) -> io::Result<bool> {
    let (headers, rows) = agreement_rows(e);
    if !rows.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "the traces against the accounting, on the same trials (per op; a ratio of 1.00 is full agreement)"
        )?;
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut t = Grid::plain(&headers, headers.len(), &[], None);
        for r in rows {
            t.add_row(r);
        }
        out.table(&t)?;
    }
    let notes = [
        measuring_note(e),
        partner_note(e),
        unwoken_note(e),
        steal_note(e),
        trace_cost_note(e),
        blocking_change_note(e),
    ];
    let mut shortened = false;
    for note in notes.iter().flatten() {
        writeln!(out, "{}", note.text(detail))?;
        shortened |= note.brief != note.full && detail == Detail::Brief;
    }
    Ok(shortened)
}

/// The growth from the first to the last N by cause, what stayed within noise, and the top
/// causes' evidence.
fn write_growth(out: &mut Printer<'_>, e: &Explanation, g: &GrowthAccount) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "growth from N={} to N={}: {} per op, by cause (named only beyond trial-to-trial noise)",
        g.from_n,
        g.to_n,
        signed(g.delta_ns)
    )?;
    let h_from = format!("N={}", g.from_n);
    let h_to = format!("N={}", g.to_n);
    let mut t = Grid::plain(
        &[&h_from, &h_to, "growth", "share", "source", "cause"],
        4,
        &[],
        Some("cause"),
    );
    for c in &g.named {
        t.add_row(vec![
            duration(c.from_ns),
            duration(c.to_ns),
            signed(c.delta_ns),
            share_with_interval(c, g.delta_ns),
            c.cause.source.into(),
            cause_label(&c.cause),
        ]);
    }
    t.add_row(vec![
        String::new(),
        String::new(),
        signed(g.unexplained_ns),
        pct(g.unexplained_pct),
        String::new(),
        "unexplained".into(),
    ]);
    out.table(&t)?;
    let runq_first = g
        .named
        .first()
        .is_some_and(|c| c.cause.kind == CauseKind::RunQueue && c.delta_ns > 0.0);
    // A command's workers at the larger N, where more than N: they queue among themselves.
    let workers = e
        .points
        .iter()
        .find(|p| p.n == g.to_n)
        .and_then(|p| p.accounting.workers.iter().max().copied())
        .filter(|&w| w > g.to_n);
    if let (true, Some(w)) = (runq_first, workers) {
        writeln!(
            out,
            "  note: the command ran {w} worker threads at N={}, more than N: waiting for a CPU is first their own queueing for the CPUs they share",
            g.to_n
        )?;
    } else if runq_first
        && e.scales_to
            .and_then(|s| s.cpus)
            .is_some_and(|cpus| g.to_n <= cpus)
    {
        writeln!(
            out,
            "  note: waiting for a CPU is not the workload's own cost while N fits the CPUs — other work competed (see `scalelab doctor`, rerun on a quiet machine); the causes below it are the workload's"
        )?;
    }
    if !g.within_noise.is_empty() {
        let sum: f64 = g.within_noise.iter().map(|c| c.delta_ns).sum();
        writeln!(
            out,
            "  within noise (in unexplained): {} ({} in all{})",
            g.within_noise
                .iter()
                .take(TOP)
                .map(|c| format!("{} {}", cause_label(&c.cause), signed(c.delta_ns)))
                .collect::<Vec<_>>()
                .join("; "),
            signed(sum),
            if g.within_noise.len() > TOP {
                ", …"
            } else {
                ""
            }
        )?;
    }
    let top: Vec<&CauseGrowth> = g
        .named
        .iter()
        .filter(|c| c.delta_ns > 0.0 && !c.cause.evidence.is_empty())
        .take(TOP)
        .collect();
    if !top.is_empty() {
        writeln!(out)?;
        writeln!(out, "evidence")?;
        for c in top {
            writeln!(out, "  {} ({}):", cause_label(&c.cause), c.cause.source)?;
            if let Some(via) = &c.cause.via {
                writeln!(
                    out,
                    "    followed from the workers' wait in {}, which {} ended",
                    printable(&via.waited_in),
                    printable(&via.server)
                )?;
            }
            if let Some(line) = call_sites_line(&c.cause) {
                writeln!(out, "    {}", printable(&line))?;
            }
            for line in &c.cause.evidence {
                writeln!(out, "    {}", printable(line))?;
            }
        }
    }
    Ok(())
}

/// Which trials each part came from, and the noise rule the causes were judged by. True when a
/// note was shortened.
fn write_sources(out: &mut Printer<'_>, e: &Explanation, detail: Detail) -> io::Result<bool> {
    let opts = *out.options();
    let pal = opts.palette;
    writeln!(out)?;
    let mut sources = Vec::new();
    for p in &e.points {
        let mut s = format!(
            "N={}: accounting trials {}",
            p.n,
            trial_list(&p.accounting.trials)
        );
        if !p.lock_trials.is_empty() {
            s.push_str(&format!(", locks {}", trial_list(&p.lock_trials)));
        }
        if let Some(src) = p.offcpu_source {
            s.push_str(&format!(
                ", blocked time split by {src} ({})",
                trial_list(&p.offcpu_trials)
            ));
        }
        if !p.profile_files.is_empty() {
            s.push_str(&format!(", {} profile file(s)", p.profile_files.len()));
        }
        sources.push(s);
    }
    writeln!(out, "trials: {}", sources.join("; "))?;
    let mut shortened = false;
    if let Some(note) = chain_note(e) {
        writeln!(out, "{}", note.text(detail))?;
        shortened = note.brief != note.full && detail == Detail::Brief;
    }
    let unmeasured = e.growth.as_ref().is_some_and(|g| {
        g.named
            .iter()
            .any(|c| c.noise.rule == NoiseRule::Unmeasured)
    });
    let rule = match detail {
        Detail::Full => e.noise_rule,
        // Its first clause: when a cause is named.
        Detail::Brief => e.noise_rule.split(':').next().unwrap_or(e.noise_rule),
    };
    shortened |= rule.len() < e.noise_rule.len();
    writeln!(out, "noise: {rule}")?;
    if unmeasured {
        writeln!(
            out,
            "{} one trial per N — the causes above were not checked against noise (--runs 3)",
            pal.warning()
        )?;
    }
    Ok(shortened)
}

#[cfg(test)]
mod tests {
    use analysis::explain::explain;
    use lab::test_runs::explained_run;

    use super::*;
    use crate::explain_text::*;
    use crate::printer::{Format, printed};
    use analysis::explain::{BlockingChange, Cause, ChainSample};

    fn text() -> String {
        let e = explain(&explained_run(), &[]).expect("an explanation");
        printed(Format::Text, |o| write(o, &e, Detail::Full))
    }

    #[test]
    fn blocked_time_with_no_chain_sampled_is_named_as_such_and_a_blocking_call_by_its_call() {
        let cause = |what: &str, object: &str, caller: &str| Cause {
            kind: CauseKind::Blocking,
            what: what.into(),
            object: object.into(),
            caller: caller.into(),
            source: "offcpu",
            evidence: Vec::new(),
            ended_by: Vec::new(),
            under: None,
            call_sites: Vec::new(),
            held_by: Vec::new(),
            via: None,
        };
        assert_eq!(
            cause_label(&cause("unsampled", "waits with no call chain sampled", "")),
            "blocked in waits with no call chain sampled"
        );
        assert_eq!(
            cause_label(&cause("io", "fsync", "flush")),
            "blocked in fsync (io) from flush"
        );
    }

    #[test]
    fn episodes_without_a_wake_up_are_named_where_they_are_over_1_percent() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(unwoken_note(&e), None);
        let traced = e.points[1].offcpu_traced_ns.expect("traced");
        e.points[0].offcpu_unwoken_ns = e.points[0].offcpu_traced_ns.map(|t| t * 0.005);
        e.points[1].offcpu_unwoken_ns = Some(traced * 0.5);
        let note = unwoken_note(&e).expect("a note").full;
        assert!(!note.contains("N=1"), "under 1% is not named: {note}");
        assert!(
            note.contains(&format!("N=2: {} per op (50%)", duration(traced * 0.5))),
            "{note}"
        );
        assert!(!note.contains("idle"), "no silent CPU, no cause: {note}");
        assert!(printed(Format::Text, |o| write(o, &e, Detail::Full)).contains(&note));
        e.points[1].offcpu_silent_idle_cpus = vec![1];
        let note = unwoken_note(&e).expect("a note").full;
        assert!(
            note.ends_with("; the cause: CPU 1 recorded nothing while idle (went idle again and again, and not one wake-up was recorded in the idle task's context), so the wake-ups taken there while idle (by the interrupts handled there) are missing, whichever CPU the woken task ran on"),
            "{note}"
        );
    }

    #[test]
    fn steal_is_named_per_n_where_measured_and_worth_a_word() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(steal_note(&e), None, "not measured, no note");
        let task = e.points[1].accounting.ns_per_op_task;
        e.points[0].offcpu_stolen_ns = Some(e.points[0].accounting.ns_per_op_task * 0.0005);
        e.points[1].offcpu_stolen_ns = Some(task * 0.08);
        let note = steal_note(&e).expect("a note").full;
        assert!(!note.contains("N=1"), "under 0.1% is not named: {note}");
        assert!(
            note.contains(&format!(
                "N=2: {} per op (8.0% of the tasks' time)",
                duration(task * 0.08)
            )),
            "{note}"
        );
        assert!(note.contains("`stolen by the hypervisor`"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e, Detail::Full)).contains(&note));
    }

    #[test]
    fn by_default_each_note_is_one_line_and_verbose_prints_it_whole() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        let task = e.points[1].accounting.ns_per_op_task;
        e.points[1].offcpu_stolen_ns = Some(task * 0.08);
        let note = steal_note(&e).expect("a note");
        assert!(note.full.starts_with("the hypervisor took the vCPUs"));
        assert!(note.brief.len() < note.full.len() / 2, "{note:?}");
        assert!(!note.brief.contains('\n'), "{note:?}");
        let brief = printed(Format::Text, |o| write(o, &e, Detail::Brief));
        assert!(brief.contains(&note.brief), "{brief}");
        assert!(!brief.contains(&note.full), "{brief}");
        assert!(brief.contains("--verbose` prints them whole"), "{brief}");
        let full = printed(Format::Text, |o| write(o, &e, Detail::Full));
        assert!(full.contains(&note.full), "{full}");
        assert!(!full.contains("--verbose"), "{full}");
        // The tables and the answer are the same at both lengths.
        assert!(
            full.starts_with(
                brief
                    .lines()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join("\n")
                    .as_str()
            )
        );
    }

    #[test]
    fn the_check_over_tasks_and_partners_is_shown_per_n_where_measured() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(partner_note(&e), None, "no partners, no note");
        e.points[1].cpu_profiled_with_partners_ns = Some(24_024.0);
        e.points[1].cpu_with_partners_trials_ns = Some(24_000.0);
        let note = partner_note(&e).expect("a note").full;
        assert!(
            note.contains("— N=2: 24.0µs against 24.0µs (1.001): a cpu-clock sample lands"),
            "{note}"
        );
        assert!(!note.contains("N=1"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e, Detail::Full)).contains(&note));
    }

    #[test]
    fn the_traces_cost_is_shown_per_n_and_read_as_a_caveat_above_the_bound() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(trace_cost_note(&e), None, "no reference, no note");
        let cost = |slowdown: f64| analysis::explain::TraceCost {
            trial: 1,
            traced_ns: 2000.0 * slowdown,
            untraced_ns: 2000.0,
            slowdown,
            profiled: false,
            profiled_every_cpu: false,
            switches_per_task_second: Some(120.0),
            profile_frequency: None,
            blocking: None,
        };
        e.points[0].trace_cost = Some(cost(1.05));
        e.points[1].trace_cost = Some(cost(1.2));
        let mild = trace_cost_note(&e).expect("a note").full;
        assert!(
            mild.contains("N=1: 2.00µs untraced, 2.10µs traced (×1.05); N=2: 2.00µs untraced, 2.40µs traced (×1.20)"),
            "{mild}"
        );
        assert!(!mild.contains("describe the traced run"), "{mild}");
        e.points[1].trace_cost = Some(cost(2.9));
        let heavy = trace_cost_note(&e).expect("a note").full;
        assert!(heavy.contains("(×2.90); above ×1.3, the times per op above and their split describe the traced run"), "{heavy}");
        assert!(printed(Format::Text, |o| write(o, &e, Detail::Full)).contains(&heavy));
        assert!(!heavy.contains("every CPU"), "{heavy}");
        // A point profiled on every CPU (--profile-scope auto, a blocking workload) says so
        // and why, with the rate its untraced tasks switched at.
        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            profiled: true,
            profiled_every_cpu: true,
            switches_per_task_second: Some(25_507.4),
            ..cost(1.02)
        });
        let scoped = trace_cost_note(&e).expect("a note").full;
        assert!(
            scoped.contains("2.04µs traced and profiled on every CPU (×1.02)")
                && scoped.contains("profiled on every CPU where the untraced tasks switched often (N=2: 25507 switches a second per task)"),
            "{scoped}"
        );
    }

    #[test]
    fn blocking_the_measuring_caused_is_named_in_the_answer_and_a_note() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(blocking_change_note(&e), None, "no reference, no note");
        // N=2 traced: 1.6 µs per op, 5% of it off a CPU, blocking 0.81 times per 1000 ops
        // (0.72–1.01 over its trials) against 0.25 in the untraced trial before it.
        let change = BlockingChange {
            untraced_switches: 250,
            untraced_per_kop: 0.25,
            traced_switches: 1013,
            traced_per_kop: 0.81,
            traced_per_kop_range: (0.72, 1.01),
            untraced_offcpu_ns: Some(8.4),
            traced_offcpu_ns: Some(80.0),
        };
        let cost = analysis::explain::TraceCost {
            trial: 0,
            traced_ns: 1600.0,
            untraced_ns: 1500.0,
            slowdown: 1600.0 / 1500.0,
            profiled: true,
            profiled_every_cpu: false,
            switches_per_task_second: Some(250.0),
            profile_frequency: Some(4000),
            blocking: Some(BlockingChange {
                traced_per_kop_range: (0.3, 1.01),
                ..change
            }),
        };
        // One traced trial blocked under twice the untraced trial's rate: nothing is said.
        e.points[1].trace_cost = Some(cost);
        assert_eq!(blocking_change_note(&e), None);
        assert!(!answer(&e).contains("as often per op"), "{}", answer(&e));

        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            blocking: Some(change),
            ..cost
        });
        let note = blocking_change_note(&e).expect("a note").full;
        assert!(
            note.starts_with("the measuring made the tasks block more, not only run slower — N=2: the traced trial blocked 3.2× as often per op as the untraced trial before it (0.81 against 0.25 blocking switches per 1000 ops, 0.72–1.01 over the traced trials; off a CPU, steal included, 80.0ns against 8.40ns per op)"),
            "{note}"
        );
        assert!(
            note.contains(
                "Each of the measuring's interruptions (the profile's samples among them, 4000 a second per task) lengthens"
            ),
            "{note}"
        );
        assert!(!note.contains("N=1"), "{note}");
        assert!(printed(Format::Text, |o| write(o, &e, Detail::Full)).contains(&note));
        // The answer says it beside the blocked cause (the futex from worker_lock), not beside
        // CPU.
        let line = answer(&e);
        let futex = line.find("worker_lock").expect("the futex wait leads");
        let caveat = line
            .find("the traced run blocked 3.2× as often per op as an untraced one")
            .expect("the caveat");
        assert!(caveat > futex, "{line}");
        assert_eq!(line.matches("as often per op").count(), 1, "{line}");

        // An untraced trial that never blocked: no ratio, said as such.
        e.points[1].trace_cost = Some(analysis::explain::TraceCost {
            blocking: Some(BlockingChange {
                untraced_switches: 0,
                untraced_per_kop: 0.0,
                ..change
            }),
            ..cost
        });
        assert!(
            answer(&e).contains("the traced run blocked where an untraced one did not"),
            "{}",
            answer(&e)
        );
        let note = blocking_change_note(&e).expect("a note").full;
        assert!(
            note.contains("N=2: the traced trial blocked where the untraced trial before it never did (0.81 against 0.00"),
            "{note}"
        );
    }

    #[test]
    fn the_answer_names_the_workloads_causes_before_the_cost_of_measuring_it() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        let g = e.growth.as_mut().expect("a growth");
        let mut measuring = g.named[0].clone();
        measuring.cause.kind = analysis::explain::CauseKind::Measurement;
        measuring.cause.what = "measuring: CPU in perf_swevent_event".into();
        measuring.delta_ns = 2.0 * g.named[0].delta_ns;
        measuring.share_pct = measuring.share_pct.map(|p| 2.0 * p);
        g.named.insert(0, measuring);
        let line = answer(&e);
        let first = line.find("futex wait from worker_lock").expect("the lock");
        let then = line.find("is the measuring itself").expect("the measuring");
        assert!(first < then, "{line}");
        assert!(line.contains("% of that is futex wait"), "{line}");
        assert!(!line.contains("perf_swevent_event"), "{line}");
    }

    #[test]
    fn a_reported_rate_is_explained_per_unit_and_a_wait_by_what_ended_it() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        e.per = "MB".into();
        let g = e.growth.as_mut().expect("growth");
        g.named[0].cause.ended_by = vec![
            analysis::explain::EndedBy {
                by: "the journal (jbd2)".into(),
                ns: 90.0,
            },
            analysis::explain::EndedBy {
                by: "an I/O completion".into(),
                ns: 10.0,
            },
        ];
        let line = answer(&e);
        assert!(
            line.contains("1 MB costs 1.00µs of task time at N=1 and 1.60µs at N=2"),
            "{line}"
        );
        assert!(
            line.contains("from worker_lock, ended by the journal (jbd2) (90%)"),
            "{line}"
        );
    }

    #[test]
    fn a_commands_threads_by_role_are_shown_once() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        e.points[0].threads = vec![model::thread_account::ThreadGroup {
            role: model::thread_account::ThreadRole::Supervisor,
            comm: "dbench".into(),
            threads: 1,
            life: model::record::Nanos(3_000_000_000),
            on_cpu: model::record::Nanos(3_000_000),
            runq: model::record::Nanos(1_000_000),
            blocked: model::record::Nanos(2_996_000_000),
            stolen: model::record::Nanos(0),
            waiting_for_started: model::record::Nanos(2_990_000_000),
            cpu_serving: model::record::Nanos(0),
            tids: vec![42],
        }];
        let text = printed(Format::Text, |o| write(o, &e, Detail::Full));
        assert!(
            !text.contains("stolen"),
            "no steal measured, no column: {text}"
        );
        assert_eq!(text.matches("threads by role").count(), 1, "{text}");
        assert_eq!(
            text.matches("supervising: started threads").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn the_answer_comes_first_and_names_the_top_cause_with_its_share() {
        let t = text();
        let second = t.lines().nth(1).expect("an answer line");
        assert!(
            second.starts_with("scales to 1.25 out of 2 tasks · an op costs 1.00µs of task time at N=1 and 1.60µs at N=2 (+600ns) · 93% of that is futex wait from worker_lock (offcpu)"),
            "{t}"
        );
        assert!(second.ends_with("· 11% unexplained"), "{second}");
    }

    #[test]
    fn the_text_shows_the_table_the_evidence_the_missing_evidence_and_the_noise_rule() {
        let t = text();
        for needle in [
            "ns/op/task",
            "unexplained",
            "evidence",
            "futex_wait",
            "no profile: user and system time are not split by function — run with --profile",
            "no lock trace",
            "noise: A cause is named only when",
            "blocked time split by offcpu (1,2,3)",
            "the traces against the accounting, on the same trials",
            "traced/residual",
        ] {
            assert!(t.contains(needle), "{needle} missing from\n{t}");
        }
        assert!(!t.contains("no off-CPU trace"), "{t}");
    }

    #[test]
    fn each_share_shows_its_interval_and_a_sample_of_chains_is_counted_per_n() {
        let mut e = explain(&explained_run(), &[]).expect("an explanation");
        assert_eq!(chain_note(&e), None, "every episode traced, no note");
        let g = e.growth.as_ref().expect("a growth");
        let top = g.named[0].clone();
        let total = g.delta_ns;
        let interval = top.interval_ns.expect("three trials a side");
        assert_eq!(
            share_with_interval(&top, total),
            format!(
                "{:.0}% ±{:.0}",
                top.share_pct.unwrap(),
                interval / total * 100.0
            )
        );
        let mut one = top.clone();
        one.interval_ns = None;
        assert_eq!(
            share_with_interval(&one, total),
            format!("{:.0}%", top.share_pct.unwrap()),
            "one trial per N: no interval"
        );
        e.points[1].offcpu_chains = Some(ChainSample {
            episodes: 123_456,
            with_chain: 2_345,
            lost: 0,
            trials: 3,
        });
        e.points[0].lock_chains = Some(ChainSample {
            episodes: 40,
            with_chain: 40,
            lost: 0,
            trials: 3,
        });
        e.points[1].lock_chains = Some(ChainSample {
            episodes: 5_000,
            with_chain: 1_000,
            lost: 2,
            trials: 3,
        });
        let note = chain_note(&e).expect("a note").full;
        assert!(
            note.starts_with("call chains of a sample: off-CPU N=2 2345 of 123456 blocking switches (1 in 53); locks N=1 all 40 lock waits, N=2 1000 of 5000 lock waits (1 in 5.0), 2 more picked but lost (ring buffer full) — "),
            "{note}"
        );
        let text = printed(Format::Text, |o| write(o, &e, Detail::Full));
        assert!(text.contains(&note), "{text}");
        assert!(
            text.contains(&format!("±{:.0}", interval / total * 100.0)),
            "{text}"
        );
    }
}
