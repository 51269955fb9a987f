//! How long a built-in trial child may run before it is declared hung and killed: its window
//! (warm-up + duration) plus a margin for what comes before and after it — loading tracers,
//! creating the tasks, the tracers' last drain and unwinding — that follows what this machine
//! delivers. The first trial of a run gets [`FIRST_MARGIN`] (or the window, when longer). Once
//! trials have ended, the margin is [`SLACK`] times the most any of them took beyond its window,
//! per task at its task count and scaled to this one's (setup and teardown grow with N), and
//! never less than [`LEAST_MARGIN`] (or the window). A slow or overloaded machine gets the time
//! it needs; a trial that hangs is still killed. A command's trial keeps its `--timeout`.

use std::time::Duration;

use crate::plan::Plan;

/// The margin of a run's first trial, before anything was seen of this machine.
const FIRST_MARGIN: Duration = Duration::from_secs(120);
/// The least margin, however fast the trials so far.
const LEAST_MARGIN: Duration = Duration::from_secs(30);
/// How many times the slowest setup and teardown seen a trial may take.
const SLACK: u32 = 4;

/// The deadlines of one run's trials, learned from the trials that ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deadlines {
    /// The most time beyond its window a trial took, per task: (task count, time).
    worst: Option<(u32, Duration)>,
}

impl Deadlines {
    /// When a trial of `plan` at `n` tasks is declared hung.
    pub(crate) fn for_trial(&self, plan: &Plan, n: u32) -> Duration {
        if plan.command.is_some() {
            return plan.deadline();
        }
        let window = window(plan);
        let margin = match self.worst {
            None => FIRST_MARGIN,
            Some((seen_n, beyond)) => {
                let scale = f64::from(n.max(1)) / f64::from(seen_n.max(1));
                beyond
                    .mul_f64(scale.max(1.0))
                    .saturating_mul(SLACK)
                    .max(LEAST_MARGIN)
            }
        };
        window + margin.max(window)
    }

    /// A trial of `plan` at `n` tasks ended after `elapsed`.
    pub(crate) fn ended(&mut self, plan: &Plan, n: u32, elapsed: Duration) {
        if plan.command.is_some() {
            return;
        }
        let beyond = elapsed.saturating_sub(window(plan));
        let per_task = |d: Duration, n: u32| d.as_secs_f64() / f64::from(n.max(1));
        let worse = match self.worst {
            None => true,
            Some((seen_n, seen)) => per_task(beyond, n) > per_task(seen, seen_n),
        };
        if worse {
            self.worst = Some((n, beyond));
        }
    }
}

fn window(plan: &Plan) -> Duration {
    plan.warmup.as_duration() + plan.duration.as_duration()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::RunConfig;

    fn plan() -> Plan {
        let mut cfg = RunConfig::new("spin");
        cfg.duration = model::record::Nanos(1_000_000_000);
        cfg.warmup = model::record::Nanos(200_000_000);
        cfg.tasks = Some("1,64".parse().unwrap());
        Plan::new(cfg, 64).unwrap()
    }

    #[test]
    fn the_margin_follows_the_slowest_setup_seen_scaled_by_task_count() {
        let plan = plan();
        let mut d = Deadlines::default();
        let window = Duration::from_millis(1200);
        assert_eq!(d.for_trial(&plan, 1), window + FIRST_MARGIN);
        // A fast machine: 0.3 s beyond the window at N=1; the least margin holds.
        d.ended(&plan, 1, window + Duration::from_millis(300));
        assert_eq!(d.for_trial(&plan, 1), window + LEAST_MARGIN);
        // N=64 scales it: 0.3 s × 64 × 4 = 76.8 s.
        assert_eq!(
            d.for_trial(&plan, 64),
            window + Duration::from_millis(76_800)
        );
        // A slow machine: 40 s beyond at N=64 (0.625 s a task) is the new worst.
        d.ended(&plan, 64, window + Duration::from_secs(40));
        assert_eq!(d.for_trial(&plan, 64), window + Duration::from_secs(160));
        // Smaller N is never given less than what was seen.
        assert_eq!(d.for_trial(&plan, 1), window + Duration::from_secs(160));
    }
}
