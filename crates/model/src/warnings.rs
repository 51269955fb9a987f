//! Warnings shown under results: each says what was seen and what to do about it.

use std::fmt;

use crate::number_text::plural;

/// Something that makes a result less trustworthy than it looks.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Task counts above the online CPUs: tasks time-share CPUs there.
    Oversubscribed {
        /// The task counts above `cpus`.
        points: Vec<u32>,
        /// The online CPUs.
        cpus: u32,
    },
    /// Trials failed at a point and are left out of its figures.
    FailedTrials {
        /// The task count.
        n: u32,
        /// Failed trials.
        failed: usize,
        /// All trials at this N.
        total: usize,
        /// Why the first one failed.
        first_reason: String,
    },
    /// Throughput varies so much between trials that small changes hide in it.
    HighVariance {
        /// The task count.
        n: u32,
        /// The coefficient of variation of the trials' throughputs.
        cv: f64,
        /// The run measures an external command, whose trials have no `--duration` to lengthen.
        command: bool,
    },
    /// Too few trials per point for a confidence interval.
    FewRuns {
        /// The fewest successful trials at any point.
        runs: usize,
    },
    /// No N = 1 point: no speedup or efficiency.
    NoBaseline,
    /// Hardware counters could not be opened.
    CountersUnavailable {
        /// Why, with the fix.
        reason: String,
    },
    /// Hardware counters were time-shared on the PMU: their values are scaled estimates.
    CountersMultiplexed,
    /// The clock read by the `clock` workload went backwards within a task.
    TimeBackwards {
        /// The task count.
        n: u32,
        /// Times per trial (median).
        count: f64,
    },
    /// Throughput falls as tasks are added.
    NegativeScaling {
        /// The smaller of two consecutive task counts.
        from: u32,
        /// The next one, where the throughput is lower.
        to: u32,
        /// The relative fall (0.1 = 10%).
        drop: f64,
    },
    /// Tasks that waited for a CPU for much of the window although N fits the CPUs.
    WaitedForCpu {
        /// The task count.
        n: u32,
        /// Share of the window spent waiting for a CPU, in %.
        pct: f64,
    },
    /// S(N) well above N: usually a slowed N=1 baseline, rarely a real cache effect.
    Superlinear {
        /// The task count.
        n: u32,
        /// Its speedup over N = 1.
        speedup: f64,
        /// CPU% of the N=1 trials (user + sys over wall).
        base_cpu_pct: Option<f64>,
        /// CPU% of one task at N.
        task_cpu_pct: Option<f64>,
    },
    /// The sampler could not run at real-time priority while tasks outnumbered the CPUs: it
    /// may have opened and closed the windows late.
    SamplerNotRealtime {
        /// The task counts above the CPUs whose trials' sampler ran at ordinary priority.
        points: Vec<u32>,
    },
    /// Some measurement windows lasted well past `--duration`: the sampler that closes them
    /// woke late (other load on the machine, a host's steal). Rates use each window's measured
    /// length, so they stay right, but those trials measured a different stretch than asked.
    WindowOverran {
        /// The task counts with a window past the bound.
        points: Vec<u32>,
        /// The longest window, in seconds.
        longest_s: f64,
        /// `--duration`, in seconds.
        asked_s: f64,
    },
    /// Processes a killed scalelab left running (pid, command line), found before this run.
    LeftRunning {
        /// Each process's pid and command line.
        processes: Vec<(i32, String)>,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Oversubscribed { points, cpus } => write!(
                f,
                "N={} exceeds the {cpus} online CPUs: tasks time-share CPUs there (intended for an oversubscription experiment; otherwise use --tasks up to {cpus})",
                points
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Warning::FailedTrials {
                n,
                failed,
                total,
                first_reason,
            } => {
                write!(
                    f,
                    "N={n}: {failed} of {} failed ({first_reason}); see `scalelab show RUN --json` for every reason",
                    plural(*total, "trial")
                )
            }
            Warning::HighVariance { n, cv, command } => write!(
                f,
                "N={n}: throughput varies by {:.1}% (CV) between trials; run `scalelab doctor`, {}",
                cv * 100.0,
                more_data_hint(*command)
            ),
            Warning::FewRuns { runs } => write!(
                f,
                "only {} per point: the interval is the full range; use --runs 5 or more to compare runs with confidence",
                plural(*runs, "trial")
            ),
            Warning::NoBaseline => write!(
                f,
                "no N=1 point: speedup and efficiency need one (add 1 to --tasks)"
            ),
            Warning::CountersUnavailable { reason } => write!(f, "hardware counters n/a: {reason}"),
            Warning::SamplerNotRealtime { points } => write!(
                f,
                "N={}: the sampler ran at ordinary priority among more tasks than CPUs, so each window may have closed late (its length is measured, but longer than --duration) — run as root or with CAP_SYS_NICE",
                points
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Warning::WindowOverran {
                points,
                longest_s,
                asked_s,
            } => write!(
                f,
                "N={}: a measurement window lasted up to {longest_s:.3} s of the {asked_s:.3} s asked: the sampler closing it woke late (other load on the machine, or the host took the CPU). Rates use each window's measured length; rerun on a quiet machine if those trials matter",
                points
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Warning::CountersMultiplexed => write!(
                f,
                "hardware counters were multiplexed (time-shared on the PMU): their values are scaled estimates; count fewer events or stop other perf users"
            ),
            Warning::TimeBackwards { n, count } => write!(
                f,
                "N={n}: the clock went backwards {count} times within a task (median per trial); this clock source is not monotonic across CPUs here"
            ),
            Warning::NegativeScaling { from, to, drop } => write!(
                f,
                "negative scalability: throughput falls {:.1}% from N={from} to N={to}; adding tasks makes it slower (profile with --profile to see why)",
                drop * 100.0
            ),
            Warning::WaitedForCpu { n, pct } => write!(
                f,
                "N={n}: the tasks waited for a CPU {pct:.1}% of the window (run-queue delay) although N fits the CPUs: other work competed, so throughput at N={n} is understated; see `top` and `scalelab doctor`, then rerun"
            ),
            Warning::Superlinear {
                n,
                speedup,
                base_cpu_pct,
                task_cpu_pct,
            } => {
                write!(
                    f,
                    "superlinear: S({n}) = {speedup:.2} exceeds N = {n}, so the N=1 baseline is suspect"
                )?;
                match (base_cpu_pct, task_cpu_pct) {
                    (Some(base), Some(task)) if *base < 0.9 * *task => write!(
                        f,
                        ": at N=1 the task ran {base:.0}% of the time against {task:.0}% per task at N={n} — it waited for a CPU (other load); rerun on an idle machine (`scalelab doctor`)"
                    ),
                    _ => write!(
                        f,
                        " (it kept its CPU, so a cache or memory effect is possible: more tasks bring more cache); check N=1 with more --runs"
                    ),
                }
            }
            Warning::LeftRunning { processes } => {
                const SHOWN: usize = 10;
                let list: Vec<String> = processes
                    .iter()
                    .take(SHOWN)
                    .map(|(pid, cmd)| format!("{pid} ({cmd})"))
                    .collect();
                let more = processes.len().saturating_sub(SHOWN);
                let pids: Vec<String> = processes.iter().map(|(p, _)| p.to_string()).collect();
                write!(
                    f,
                    "{} left running by a scalelab that was killed compete for the CPUs with this run: {}{}; stop them with `kill -9 {}`",
                    plural(processes.len(), "process"),
                    list.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    },
                    pids.join(" ")
                )
            }
        }
    }
}

/// What gives a noisy run more data: a longer window for a built-in workload; for a command,
/// whose trial lasts as long as the command, more trials (`ab` adds pairs with `--max-runs`).
pub fn more_data_hint(command: bool) -> &'static str {
    if command {
        "then add --runs (`ab`: --runs or --max-runs)"
    } else {
        "lengthen --duration or add --runs"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 13: "1 trials", "1 runs": every count agrees with its noun.
    #[test]
    fn counts_agree_with_their_nouns() {
        let few = |runs| Warning::FewRuns { runs }.to_string();
        assert!(few(1).starts_with("only 1 trial per point:"), "{}", few(1));
        assert!(few(2).starts_with("only 2 trials per point:"), "{}", few(2));
        let failed = Warning::FailedTrials {
            n: 2,
            failed: 1,
            total: 1,
            first_reason: "boom".into(),
        };
        assert!(
            failed
                .to_string()
                .starts_with("N=2: 1 of 1 trial failed (boom)"),
            "{failed}"
        );
        let one = Warning::LeftRunning {
            processes: vec![(12, "sleep 300".into())],
        };
        assert!(
            one.to_string().starts_with("1 process left running"),
            "{one}"
        );
    }

    #[test]
    fn processes_left_running_are_listed_with_the_command_that_stops_them() {
        let w = Warning::LeftRunning {
            processes: vec![(12, "sleep 300".into()), (13, "make -j2".into())],
        };
        assert_eq!(
            w.to_string(),
            "2 processes left running by a scalelab that was killed compete for the CPUs with this run: 12 (sleep 300), 13 (make -j2); stop them with `kill -9 12 13`"
        );
        let many = Warning::LeftRunning {
            processes: (1..=12).map(|p| (p, "x".to_string())).collect(),
        };
        let text = many.to_string();
        assert!(
            text.contains("10 (x) and 2 more")
                && text.ends_with("`kill -9 1 2 3 4 5 6 7 8 9 10 11 12`"),
            "{text}"
        );
    }

    #[test]
    fn high_variance_advice_for_a_command_names_flags_it_accepts() {
        let command = Warning::HighVariance {
            n: 2,
            cv: 0.2,
            command: true,
        }
        .to_string();
        assert!(!command.contains("--duration"), "{command}");
        assert!(
            command.contains("--runs") && command.contains("--max-runs"),
            "{command}"
        );
        let builtin = Warning::HighVariance {
            n: 2,
            cv: 0.2,
            command: false,
        }
        .to_string();
        assert!(builtin.contains("lengthen --duration"), "{builtin}");
    }
}
