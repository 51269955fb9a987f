//! One trial, inside its own child process: prepare the workload, create every task (threads or
//! forked processes), open the start gate, sample the counters, close the window, collect.
//!
//! The trial child is single-threaded until its tasks exist: task processes are forked before
//! any thread is started, so forking is sound. Hardware counters are opened with `inherit`
//! before the tasks exist, so they count every task and nothing from the parent scalelab.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::control::{Control, PHASE_MEASURE, PHASE_STOP, PHASE_WARMUP};
use super::counter_window::{CounterSnapshot, counter_values, snapshot};
use super::placement;
use super::schedstat::{self, TaskClocks};
use super::spec::{BuiltinWork, TrialSpec};
use super::task::{TaskPlace, run_task};
use crate::error::LabError;
use crate::observer_list::{Observers, Requests};
use crate::traced_processes::Scope;
use crate::workloads::{self, PrepareContext, Prepared};
use model::params::Params;
use model::record::{
    ClockWindow, CounterValue, HarnessCost, Mode, Nanos, SampleRecord, TrialMeasurement, Usage,
};

/// How often the sampler drains the lock and off-CPU tracers' ring buffers while tracing.
const LOCK_DRAIN_EVERY: Duration = Duration::from_millis(10);

/// How long tasks may take to get ready (prepare their memory, files) before the trial fails.
const SETUP_LIMIT: Duration = Duration::from_secs(120);

/// Runs a trial in this process and returns its measurement.
pub fn run_trial(spec: &TrialSpec) -> Result<TrialMeasurement, LabError> {
    let work = spec.builtin().ok_or_else(|| {
        LabError::Internal("a trial child was sent a command trial, which it cannot run".into())
    })?;
    let workload = workloads::find(&work.workload)?;
    let params = Params::from_map(work.params.clone());
    let tasks = spec.tasks as usize;
    let ctx = PrepareContext {
        tasks,
        mode: work.mode,
        workdir: work.workdir.clone(),
    };
    let prepared = workload.prepare(&params, &ctx)?;
    let control = Control::new(tasks)?;
    let placement = placement::assign_here(&work.pin, tasks)?;
    let memory = placement::memory_here(work.membind, &placement)?;
    let places: Vec<TaskPlace<'_>> = placement
        .iter()
        .zip(&memory)
        .map(|(&cpu, memory)| TaskPlace { cpu, memory })
        .collect();
    let counters = work
        .counters
        .then(|| perf::InheritedCounters::open(&super::counter_window::COUNTED));
    let extra_names = prepared.extra_names();
    // Like the counters, opened before any task exists so that every task inherits them. The
    // profile, if any, wraps this process: the executor that spawned it opened that one.
    let requests = Requests {
        profile: None,
        locks: spec.locks,
        offcpu: spec.offcpu,
    };
    let mut observers = Observers::open(requests, Scope::Own);
    let drain_every = observers.needs_draining().then_some(LOCK_DRAIN_EVERY);
    let mut drain = |edge: Edge| match edge {
        Edge::Released(at) => observers.tasks_released(at),
        Edge::Opens(at) => observers.window_opens(at),
        Edge::Closes(at) => observers.window_closes(at),
        Edge::None => {
            observers.drain();
        }
    };

    let created = Instant::now();
    let trial_tasks = Tasks {
        work,
        prepared: prepared.as_ref(),
        control: &control,
        places: &places,
        counters: counters.as_ref(),
        extra_names,
    };
    let window = match work.mode {
        Mode::Threads => run_threads(trial_tasks, (drain_every, &mut drain)),
        Mode::Processes => run_processes(trial_tasks, (drain_every, &mut drain)),
    }?;
    let task_tids: Vec<u32> = control.task_ids().iter().map(|&(_, tid)| tid).collect();
    let observed = observers.finish(window.clock, Some(&task_tids));

    let (usage, extras) = window_accounting(&control, &window, extra_names)?;
    let task_ops = window
        .end
        .iter()
        .zip(&window.start)
        .map(|(e, s)| e.saturating_sub(*s))
        .collect();
    Ok(TrialMeasurement {
        reported: None,
        window: window.length,
        task_ops,
        usage,
        counters: window.counters,
        extras,
        placement,
        samples: window.samples,
        steps: Vec::new(),
        clock_window: Some(window.clock),
        // Which threads a profile keeps: the parent fills in the rest once perf has written it.
        profile: spec.profile.as_ref().map(|req| model::record::ProfileRef {
            path: String::new(),
            event: req.event.clone(),
            frequency: req.frequency,
            threads: task_tids,
            partner_threads: control.partner_ids().iter().map(|&(_, tid)| tid).collect(),
            partner_on_cpu: window.partner_on_cpu,
            every_cpu: req.every_cpu,
            servers_path: None,
            servers_pids: Vec::new(),
        }),
        locks: observed.locks,
        offcpu: observed.offcpu,
        harness: Some(HarnessCost {
            sampler_cpu: window.sampler_cpu,
            start: Nanos::from_duration(window.released.saturating_duration_since(created)),
            stop: Nanos::from_duration(
                window
                    .reaped
                    .unwrap_or(window.stopped)
                    .saturating_duration_since(window.stopped),
            ),
            sampler_realtime: Some(window.realtime),
            untraced: None,
        }),
    })
}

/// What a trial's tasks run with, in either mode.
#[derive(Clone, Copy)]
struct Tasks<'a> {
    work: &'a BuiltinWork,
    prepared: &'a dyn Prepared,
    control: &'a Control,
    places: &'a [TaskPlace<'a>],
    counters: Option<&'a perf::InheritedCounters>,
    extra_names: &'a [&'static str],
}

/// The tasks of a trial in `Mode::Threads`, on scoped threads of this process, sampled by
/// this thread; every task joined before the window is returned.
fn run_threads(tasks: Tasks<'_>, drain: Drain<'_>) -> Result<Window, LabError> {
    let Tasks {
        work,
        prepared,
        control,
        places,
        counters,
        extra_names,
    } = tasks;
    std::thread::scope(|scope| {
        let handles: Vec<_> = places
            .iter()
            .enumerate()
            .map(|(i, &place)| {
                scope.spawn(move || {
                    run_task(prepared, control, i, place, Mode::Threads, extra_names)
                })
            })
            .collect();
        let window = sample(work, control, counters, &mut || Ok(()), drain);
        control.set_phase(PHASE_STOP);
        prepared.unblock();
        let mut first_error = None;
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(LabError::Workload {
                        workload: work.workload.clone(),
                        message: format!("task {i}: {e}"),
                    });
                }
                Err(_) => {
                    first_error.get_or_insert(LabError::Workload {
                        workload: work.workload.clone(),
                        message: format!("task {i} panicked"),
                    });
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => window.map(|w| w.reaped()),
        }
    })
}

/// The window's CPU time (from its exact edges) and run-queue wait (from each task's own
/// span), and the workload's extra counts summed over the tasks.
fn window_accounting(
    control: &Control,
    window: &Window,
    extra_names: &[&'static str],
) -> Result<(Usage, BTreeMap<String, u64>), LabError> {
    // CPU time from the window's exact edges, run-queue wait from each task's own span.
    let own = (0..control.tasks())
        .map(|i| {
            control.window_usage(i).ok_or_else(|| {
                LabError::Internal(format!(
                    "task {i} did not record its resource usage for the window"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let usage = schedstat::account(&own, window.on_cpu.as_deref(), window.length);
    let mut extras = BTreeMap::new();
    for (k, name) in extra_names.iter().enumerate() {
        extras.insert(
            (*name).to_string(),
            (0..control.tasks()).map(|i| control.extras(i)[k]).sum(),
        );
    }
    Ok((usage, extras))
}

fn run_processes(tasks: Tasks<'_>, drain: Drain<'_>) -> Result<Window, LabError> {
    let Tasks {
        work,
        prepared,
        control,
        places,
        counters,
        extra_names,
    } = tasks;
    let mut children = Vec::with_capacity(places.len());
    let trial_child = std::process::id() as i32;
    for (i, &place) in places.iter().enumerate() {
        match sys::fork_single_threaded() {
            Ok(sys::ForkResult::Child) => {
                // A task dies with its trial child; had that already died, the signal would
                // never come, so check the parent after arming it.
                let _ = sys::set_parent_death_signal(libc::SIGKILL);
                if sys::getppid() != trial_child {
                    sys::exit_immediately(sys::ORPHANED_AT_BIRTH);
                }
                let code = match run_task(prepared, control, i, place, Mode::Processes, extra_names)
                {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("task {i}: {e}");
                        3
                    }
                };
                sys::exit_immediately(code);
            }
            Ok(sys::ForkResult::Parent { child }) => children.push(child),
            Err(e) => {
                control.set_phase(PHASE_STOP);
                for pid in &children {
                    let _ = sys::send_signal(*pid, libc::SIGKILL);
                    let _ = sys::wait_child(*pid);
                }
                return Err(LabError::sys(format!("forking task {i}"), e));
            }
        }
    }
    let mut exited: Vec<Option<String>> = vec![None; children.len()];
    let mut check_children = || -> Result<(), LabError> {
        // One system call per check while every task runs (a sampler checks 1024 tasks many
        // times a second); only when one ended are they asked one by one.
        if !sys::any_child_ended().map_err(|e| LabError::sys("waiting for a task", e))? {
            return Ok(());
        }
        for (i, pid) in children.iter().enumerate() {
            if exited[i].is_some() {
                continue;
            }
            if let Some(exit) =
                sys::try_wait_child(*pid).map_err(|e| LabError::sys("waiting for a task", e))?
            {
                let what = describe_exit(&exit.status);
                exited[i] = Some(what.clone());
                return Err(LabError::Workload {
                    workload: work.workload.clone(),
                    message: format!("task {i} (pid {pid}) {what} before the trial ended"),
                });
            }
        }
        Ok(())
    };
    let window = sample(work, control, counters, &mut check_children, drain);
    control.set_phase(PHASE_STOP);
    prepared.unblock();
    let mut first_error = None;
    for (i, pid) in children.iter().enumerate() {
        if exited[i].is_some() {
            continue;
        }
        match sys::wait_child(*pid) {
            Ok(exit) if matches!(exit.status, sys::ExitKind::Exited(0)) => {}
            Ok(exit) => {
                first_error.get_or_insert(LabError::Workload {
                    workload: work.workload.clone(),
                    message: format!("task {i} (pid {pid}) {}", describe_exit(&exit.status)),
                });
            }
            Err(e) => {
                first_error.get_or_insert(LabError::sys(format!("waiting for task {i}"), e));
            }
        }
    }
    match (window, first_error) {
        (Err(e), _) => Err(e),
        (Ok(_), Some(e)) => Err(e),
        (Ok(w), None) => Ok(w.reaped()),
    }
}

fn describe_exit(status: &sys::ExitKind) -> String {
    match status {
        sys::ExitKind::Exited(code) => format!("exited with status {code}"),
        sys::ExitKind::Signaled(sig, core) => {
            format!(
                "was killed by {}{}",
                sys::signal_name(*sig),
                if *core { " (core dumped)" } else { "" }
            )
        }
    }
}

/// What the sampler saw between the window's edges.
struct Window {
    length: Nanos,
    /// Each task's CPU time between the edges; `None` without schedstat.
    on_cpu: Option<Vec<Nanos>>,
    /// The tasks' partners' CPU time between the edges, summed (`TaskLoop::partner`); `None`
    /// without partners or schedstat.
    partner_on_cpu: Option<Nanos>,
    start: Vec<u64>,
    end: Vec<u64>,
    samples: Vec<SampleRecord>,
    counters: Vec<CounterValue>,
    clock: ClockWindow,
    /// CPU time of the sampler thread between the window's edges.
    sampler_cpu: Nanos,
    /// Whether the sampler ran at real-time priority.
    realtime: bool,
    /// When every task was ready and the gate opened.
    released: Instant,
    /// When the tasks were told to stop.
    stopped: Instant,
    /// When the last task was joined or reaped.
    reaped: Option<Instant>,
}

impl Window {
    /// The window, with its tasks all gone as of now.
    fn reaped(self) -> Window {
        Window {
            reaped: Some(Instant::now()),
            ..self
        }
    }
}

/// The observers' hook: the sampler calls it with [`Edge::None`] at least this often (`None`:
/// never) between its samples (the tracers' drain), and once at each of the window's edges
/// (the in-kernel off-CPU tracer reads its threads' counters there).
type Drain<'a> = (Option<Duration>, &'a mut dyn FnMut(Edge));

/// What the sampler tells the observers.
#[derive(Debug, Clone, Copy)]
enum Edge {
    /// Nothing: drain.
    None,
    /// The tasks are released at (CLOCK_MONOTONIC ns): the warm-up begins.
    Released(u64),
    /// The window opened at (CLOCK_MONOTONIC ns).
    Opens(u64),
    /// The window closed at, just now, before the tasks stop.
    Closes(u64),
}

/// Waits for every task at the gate, opens it, and samples until the window closes.
/// `check` is called every interval and aborts the trial when it fails (a task process died).
fn sample(
    work: &BuiltinWork,
    control: &Control,
    counters: Option<&perf::InheritedCounters>,
    check: &mut dyn FnMut() -> Result<(), LabError>,
    (drain_every, drain): Drain<'_>,
) -> Result<Window, LabError> {
    // The window's edges are this thread's: it must run when it wakes, ahead of the tasks
    // (all of them runnable, and many more than the CPUs). Tasks already exist, and
    // SCHED_RESET_ON_FORK keeps anything created later ordinary.
    let realtime = sys::run_realtime(1).is_ok();
    let tasks = control.tasks() as u64;
    let setup_deadline = Instant::now() + SETUP_LIMIT;
    while control.ready() < tasks {
        if let Some(&i) = control.failed_tasks().first() {
            return Err(LabError::Workload {
                workload: work.workload.clone(),
                message: format!("task {i} failed while setting up"),
            });
        }
        check()?;
        if Instant::now() > setup_deadline {
            return Err(LabError::Workload {
                workload: work.workload.clone(),
                message: format!(
                    "only {} of {tasks} tasks were ready after {}s",
                    control.ready(),
                    SETUP_LIMIT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // The tasks' threads, then their partners', read in one sweep at each edge.
    let mut ids = control.task_ids();
    let tasks_read = ids.len();
    ids.extend(control.partner_ids());
    let clocks = TaskClocks::open(&ids);
    let mut sched_start = None;
    let interval = work
        .sample_interval
        .as_duration()
        .max(Duration::from_millis(1));
    drain(Edge::Released(sys::clock_gettime_vdso(
        sys::ClockId::Monotonic,
    )));
    let released = Instant::now();
    let warmup = work.warmup.as_duration();
    let mut start: Option<(Instant, Vec<u64>, Vec<CounterSnapshot>)> = None;
    let mut clock_start = 0;
    let mut sampler_start = 0;
    if warmup.is_zero() {
        control.set_phase(PHASE_MEASURE);
        clock_start = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        start = Some((Instant::now(), control.read_counters(), snapshot(counters)));
        sched_start = clocks.read();
        sampler_start = sys::thread_cpu_time();
        drain(Edge::Opens(clock_start));
    } else {
        control.set_phase(PHASE_WARMUP);
    }
    let mut samples = Vec::new();
    let mut next_tick = Instant::now() + interval;
    loop {
        let edge = match &start {
            None => released + warmup,
            Some((t0, _, _)) => *t0 + work.duration.as_duration(),
        };
        let wake = next_tick.min(edge);
        let now = Instant::now();
        if let Some(every) = drain_every {
            if now + every < wake {
                std::thread::sleep(every);
                drain(Edge::None);
                continue;
            }
        }
        if wake > now {
            std::thread::sleep(wake - now);
        }
        check()?;
        if let Some(&i) = control.failed_tasks().first() {
            return Err(LabError::Workload {
                workload: work.workload.clone(),
                message: format!("task {i} failed during the trial"),
            });
        }
        let now = Instant::now();
        match &start {
            None if now >= edge => {
                control.set_phase(PHASE_MEASURE);
                clock_start = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
                start = Some((Instant::now(), control.read_counters(), snapshot(counters)));
                sched_start = clocks.read();
                sampler_start = sys::thread_cpu_time();
                // After the figures of the window's start: the tracer's sums are closed at
                // `clock_start` whenever they are read.
                drain(Edge::Opens(clock_start));
                next_tick = Instant::now() + interval;
            }
            None => next_tick += interval,
            Some((t0, base, base_counters)) => {
                let reading = control.read_counters();
                let t = Instant::now();
                if now >= edge {
                    let end_counters = snapshot(counters);
                    // Read as at the start: right after the counters, before the tasks stop.
                    let sched_end = clocks.read();
                    drain(Edge::Closes(sys::clock_gettime_vdso(
                        sys::ClockId::Monotonic,
                    )));
                    control.set_phase(PHASE_STOP);
                    let stopped = Instant::now();
                    let clock_end = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
                    let sampler_cpu = Nanos(sys::thread_cpu_time().saturating_sub(sampler_start));
                    let length = Nanos::from_duration(t - *t0);
                    let on_cpu = sched_start
                        .as_deref()
                        .zip(sched_end.as_deref())
                        .map(|(a, b)| schedstat::on_cpu(a, b));
                    samples.push(SampleRecord {
                        t: length,
                        task_ops: diff(&reading, base),
                    });
                    return Ok(Window {
                        length,
                        on_cpu: on_cpu.as_ref().map(|c| c[..tasks_read].to_vec()),
                        partner_on_cpu: on_cpu
                            .as_ref()
                            .filter(|c| c.len() > tasks_read)
                            .map(|c| Nanos(c[tasks_read..].iter().map(|n| n.0).sum())),
                        start: base.clone(),
                        end: reading,
                        samples,
                        counters: counter_values(base_counters, &end_counters, counters),
                        clock: ClockWindow {
                            start: Nanos(clock_start),
                            end: Nanos(clock_end),
                        },
                        sampler_cpu,
                        realtime,
                        released,
                        stopped,
                        reaped: None,
                    });
                }
                samples.push(SampleRecord {
                    t: Nanos::from_duration(t - *t0),
                    task_ops: diff(&reading, base),
                });
                next_tick += interval;
            }
        }
    }
}

fn diff(now: &[u64], base: &[u64]) -> Vec<u64> {
    now.iter()
        .zip(base)
        .map(|(n, b)| n.saturating_sub(*b))
        .collect()
}
