//! The tracing side of `--offcpu`: open the tracer before the tasks exist
//! ([`OffCpuSession::start_scoped`]), drain it while the sampler runs, and at the end keep the blocked
//! time of the trial's own tasks inside the measurement window, name each episode's cause
//! ([`super::classify`]) and sum it per (kind, object, caller) as an [`OffCpuReport`].
//!
//! Scopes and user symbols follow `--locks` ([`crate::locks::collect`]): a built-in trial
//! child keeps only its task threads (not its sampler), a command step every process but
//! scalelab's (and an excluded `perf record`), named while they live.
//!
//! For a command step the tracer's thread lives are accounted too ([`super::threads`]): each
//! thread's role (worker, supervising, idle: [`super::roles`]), and each site's waits by what
//! ended them ([`super::wake`]). Only the workers' waits are sites: a supervisor waiting for
//! what it started is no cause.

use std::collections::{HashMap, HashSet};

use super::OffCpuRequest;
use super::chain::{self, ServerThreads};
use super::classify::{Cause, NamedFrame, classify};
use super::estimate::Estimator;
use super::threads::{TreeThreads, WokenBy};
use crate::locks::collect::is_wrapper;
use crate::observer::{Observed, Observer};
use crate::traced_processes::{Scope, TracedProcesses};
use crate::tracer_choice::OpenNotes;
use model::record::{
    ChainVia, ClockWindow, Nanos, OffCpuReport, OffCpuSampling, OffCpuSite, RunqHolder, SiteSample,
    UnwokenEpisodes,
};
use model::thread_account::ThreadRole;

/// Frames kept in a site's representative stack.
const STACK_FRAMES: usize = 24;
/// The kind of the site that holds the blocked time of threads none of whose waits was sampled.
pub(crate) const UNSAMPLED: &str = "unsampled";

/// Off-CPU tracing for one trial: the open tracer, or why there is none.
#[derive(Debug)]
pub(crate) struct OffCpuSession {
    tracer: Option<Tracer>,
    notes: Vec<String>,
    processes: TracedProcesses,
    /// The system under test's processes beside the command's (`follow_system`).
    system: HashSet<u32>,
}

/// The tracer `--tracer` chose (or the perf one it fell back to).
type Tracer = Box<dyn perf::Tracer<Trace = perf::OffCpuTrace>>;

/// Opens the chosen tracer; the kernel one falls back to perf's, with a note saying why.
/// `scope`: a command's trial follows the kernel threads that wake its threads.
fn open_tracer(request: OffCpuRequest, scope: Scope, notes: &mut Vec<String>) -> Option<Tracer> {
    let config = perf::BpfOffCpuConfig {
        follow_kernel_wakers: scope == Scope::Command,
        ..request.bpf_config()
    };
    request.tracer.open(
        || perf::BpfOffCpuTracer::open(&config),
        || perf::OffCpuTracer::open(&request.trace_config()),
        OpenNotes {
            fallback: "off-CPU: traced through perf's ring buffers (every episode, at several times the cost), not in the kernel",
            unavailable: "off-CPU tracing unavailable",
        },
        notes,
    )
}

#[derive(Debug, Default)]
struct Site {
    /// Episodes, each counted as many times as it stands for.
    count: u64,
    total: u64,
    /// The episodes recorded with their chains.
    sampled: u64,
    /// The sampling variance of `total` (ns²), summed over the sampled episodes.
    variance: f64,
    max: u64,
    /// The longest episode's chain: (pid, kernel chain, user chain).
    longest: (u32, u32, u32),
    woken_by: WokenBy,
}

impl OffCpuSession {
    /// Opens the tracer on the calling thread (inherited by the tasks it creates next), for a
    /// built-in trial child's own tasks ([`Scope::Own`]) or a command step's tree
    /// ([`Scope::Command`]). Never fails: when tracing is unavailable the report says why and
    /// the trial runs untraced.
    pub(crate) fn start_scoped(request: OffCpuRequest, scope: Scope) -> OffCpuSession {
        let mut notes = Vec::new();
        let mut tracer = open_tracer(request, scope, &mut notes);
        // A built-in trial's child sets up (its other tracer, its tasks) before its tasks
        // start: no chain of that time is used, and a slow machine's setup filled the ring
        // before the first drain.
        if let (Scope::Own, Some(t)) = (scope, &mut tracer)
            && !crate::tracer_choice::cold_for_tests()
        {
            t.hold_samples();
        }
        OffCpuSession {
            tracer,
            notes,
            processes: TracedProcesses::new(scope),
            system: HashSet::new(),
        }
    }

    /// Stops tracing and sums the blocked time inside `window` of the threads `tasks` (a
    /// built-in trial's task thread ids; `None`: every thread not excluded).
    pub(crate) fn report(self, window: ClockWindow, tasks: Option<&[u32]>) -> OffCpuReport {
        let Some(tracer) = self.tracer else {
            return OffCpuReport {
                notes: self.notes,
                ..OffCpuReport::default()
            };
        };
        let mut trace = tracer.finish(window.end.0);
        let tasks: Option<HashSet<u32>> = tasks.map(|t| t.iter().copied().collect());
        // A built-in's tasks are its workers; a command's threads are sorted into roles.
        let tree = match &tasks {
            Some(_) => None,
            None => Some(TreeThreads::new(
                &trace,
                |pid| self.processes.is_excluded(pid),
                &self.system,
            )),
        };
        trace.episodes.retain(|e| {
            !self.processes.is_excluded(e.pid) && tasks.as_ref().is_none_or(|t| t.contains(&e.tid))
        });
        let estimator = Estimator::new(&trace, window);
        let mut report = summarize(
            &trace,
            window,
            self.processes.resolved(),
            (tree, tasks.as_ref()),
            &estimator,
        );
        report.notes.splice(0..0, self.notes);
        // Only the in-kernel tracer tells steal apart (the perf tracer's time on a CPU is
        // wall-clock time): the tasks', or the command's workers'.
        report.stolen = trace.sampling.is_some().then(|| {
            Nanos(match &tasks {
                Some(t) => trace
                    .threads
                    .iter()
                    .filter(|l| t.contains(&l.tid))
                    .map(|l| l.stolen)
                    .sum(),
                None => report
                    .threads
                    .iter()
                    .filter(|g| g.role == ThreadRole::Worker)
                    .map(|g| g.stolen.0)
                    .sum(),
            })
        });
        report
    }
}

impl Observer for OffCpuSession {
    fn needs_draining(&self) -> bool {
        self.tracer.is_some()
    }

    /// Drops the episodes of process `pid` (a `perf record` wrapping the command).
    fn exclude(&mut self, pid: u32) {
        self.processes.exclude(pid);
    }

    /// The in-kernel tracer adds each process's threads (and, by inheritance, what they
    /// create); the perf tracer cannot, and says so.
    fn follow_system(&mut self, pids: &[u32]) -> Option<u32> {
        let Some(t) = &mut self.tracer else {
            return None;
        };
        if t.follow_processes(pids) {
            self.system.extend(pids);
        } else {
            self.notes.push(
                "off-CPU: the perf tracer follows the command's own tree only: the servers and attached processes were not traced, so waits they ended were not followed (the in-kernel tracer, --tracer kernel, follows them)".into(),
            );
        }
        None
    }

    /// The in-kernel tracer writes call chains from here on.
    fn tasks_released(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.sample_from(at);
        }
    }

    /// Accounts the traced threads' time from `at` on (the window's start, taken after the
    /// tracer opened).
    fn window_opens(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.window_opens(at);
        }
    }

    /// The window closed at `at`: the in-kernel tracer reads its threads' counters, the perf
    /// tracer's timeline accrues nothing after it.
    fn window_closes(&mut self, at: u64) {
        if let Some(t) = &mut self.tracer {
            t.window_closes(at);
        }
    }

    /// Empties the ring buffers. With [`Scope::Command`], new user call chains are symbolised
    /// in their (live) process. Its records carry no stack copy: 0.
    fn drain(&mut self) -> u64 {
        let Some(t) = &mut self.tracer else { return 0 };
        let read = t.drain();
        self.processes.name_new_chains(t.new_user_chains());
        read
    }

    fn finish(
        self: Box<Self>,
        window: ClockWindow,
        tasks: Option<&[u32]>,
        observed: &mut Observed,
    ) {
        observed.offcpu = Some(self.report(window, tasks));
    }
}

/// Frames of Rust's std I/O and sleep wrappers, between a blocking system call and its caller.
fn is_io_wrapper(frame: &perf::UserFrame) -> bool {
    frame.function.as_deref().is_some_and(|f| {
        [
            "std::fs::",
            "<std::fs::",
            "<&std::fs::",
            "std::io::",
            "<std::io::",
            "std::thread::sleep",
        ]
        .iter()
        .any(|p| f.starts_with(p))
    })
}

/// The report of `trace`'s episodes inside `window`, of a command's workers (`tree`) or a
/// built-in's `tasks` (both `None`: every thread).
fn summarize(
    trace: &perf::OffCpuTrace,
    window: ClockWindow,
    resolved: Option<&HashMap<(u32, u64), perf::UserFrame>>,
    (tree, tasks): (Option<TreeThreads>, Option<&HashSet<u32>>),
    estimator: &Estimator,
) -> OffCpuReport {
    let mut notes = Vec::new();
    let kallsyms = match perf::Kallsyms::load() {
        Ok(k) => k,
        Err(e) => {
            notes.push(format!("off-CPU: kernel frames unnamed: {e}"));
            perf::Kallsyms::default()
        }
    };
    let (start, end) = (window.start.0, window.end.0);
    let mut episodes: Vec<&perf::BlockedEpisode> = trace
        .episodes
        .iter()
        .filter(|e| e.blocked_within(start, end) > 0)
        .collect();
    // The threads whose exact blocked time the sampled episodes share out (the estimator's);
    // the others' is counted apart, as unsampled.
    let with_sampled: HashSet<u32> = episodes.iter().map(|e| e.tid).collect();
    // A command's threads: what ended each wait, who worked; only the workers' waits are
    // causes, and not their waits for what they started.
    let tree = tree.map(|t| t.assign(trace, &episodes, window, &kallsyms, estimator));
    // The servers' waits, set aside before only the workers' are kept: a worker's wait that a
    // server thread ended is followed into what that thread did (`chain`).
    let server_episodes: Vec<&perf::BlockedEpisode> = match &tree {
        Some(t) => episodes
            .iter()
            .filter(|e| t.followed(e.tid).is_some())
            .copied()
            .collect(),
        None => Vec::new(),
    };
    if let Some(t) = &tree {
        episodes.retain(|e| t.is_cause(e));
    }
    let chain = |i: u32| trace.chains.get(i as usize).map_or(&[][..], Vec::as_slice);
    let named: Vec<&perf::BlockedEpisode> =
        episodes.iter().chain(&server_episodes).copied().collect();
    let symbols = user_symbols(trace, &named, resolved);
    let unknown = perf::UserFrame {
        function: None,
        offset: 0,
        module: None,
        address: None,
    };
    let user_frame = |pid: u32, a: u64| match symbols.get(&pid) {
        Some(s) => s.frame(a),
        None => resolved
            .and_then(|f| f.get(&(pid, a)).cloned())
            .unwrap_or_else(|| unknown.clone()),
    };
    // Causes are named once per distinct (pid, kernel chain, user chain).
    let mut causes: HashMap<(u32, u32, u32), Cause> = HashMap::new();
    let mut cause_of = |e: &perf::BlockedEpisode| -> Cause {
        let key = (e.pid, e.kernel_chain, e.user_chain);
        causes
            .entry(key)
            .or_insert_with(|| {
                let kernel: Vec<NamedFrame> = chain(e.kernel_chain)
                    .iter()
                    .map(|&ip| NamedFrame {
                        function: kallsyms.function(ip).map(|(s, _)| s.name.clone()),
                        lock_or_sched: kallsyms.in_lock_or_sched_text(ip),
                    })
                    .collect();
                let caller = chain(e.user_chain)
                    .iter()
                    .map(|&a| user_frame(e.pid, a))
                    .find(|f| !is_wrapper(f) && !is_io_wrapper(f))
                    .and_then(|f| f.name());
                classify(&kernel, caller.as_deref())
            })
            .clone()
    };
    let mut servers = ServerThreads::default();
    if let Some(t) = &tree {
        // Each followed thread's time counts only inside the waits it ended itself.
        let mut windows = chain::Windows::default();
        for e in episodes.iter().chain(&server_episodes) {
            if let Some(w) = e.waker
                && t.followed(w.tid).is_some()
                && t.wake_cause(e).by_the_waker()
            {
                let blocked = e.blocked_within(start, end);
                windows.add(
                    w.tid,
                    e.begin.max(start),
                    e.end.min(end),
                    estimator.blocked(e, blocked),
                );
            }
        }
        let windows = windows.merged();
        for (l, role) in t.followed_lives() {
            servers.add_life(
                l.tid,
                (&l.comm, role == ThreadRole::Kernel),
                (l.on_cpu, l.runq, l.blocked),
                windows.length(l.tid) > 0,
            );
        }
        for e in &server_episodes {
            let blocked = e.blocked_within(start, end);
            let inside = windows.overlap(e.tid, e.begin.max(start), e.end.min(end));
            let waker = e.waker.map(|w| w.tid).filter(|&w| w != 0);
            servers.add_wait(
                e.tid,
                (cause_of(e), t.wake_cause(e), waker),
                estimator.blocked(e, inside) as f64 * windows.scale(e.tid),
                ((e.pid, e.kernel_chain, e.user_chain), blocked),
            );
        }
    }
    let mut sites: HashMap<SiteKey, Site> = HashMap::new();
    let mut total = 0u64;
    let mut unwoken = UnwokenEpisodes {
        count: 0,
        total: Nanos(0),
    };
    for e in &episodes {
        let key = (e.pid, e.kernel_chain, e.user_chain);
        let cause = cause_of(e);
        let blocked = e.blocked_within(start, end);
        let stands_for = estimator.blocked(e, blocked);
        let reached = match (&tree, e.waker) {
            (Some(t), Some(w)) if servers.contains(w.tid) && t.wake_cause(e).by_the_waker() => {
                servers.follow(w.tid, &|tid| t.works(tid))
            }
            _ => Vec::new(),
        };
        if reached.is_empty() {
            let site = sites.entry((cause, None)).or_default();
            site.count += estimator.count(e);
            site.total += stands_for;
            site.sampled += 1;
            site.variance += estimator.variance(e, blocked);
            if let Some(t) = &tree {
                site.woken_by.add(t.wake_cause(e), stands_for);
            }
            if blocked > site.max || site.sampled == 1 {
                site.max = site.max.max(blocked);
                site.longest = key;
            }
            total += stands_for;
        } else {
            total += followed(
                &mut sites,
                &cause,
                reached,
                (e, blocked, stands_for),
                estimator,
            );
        }
        if !e.woken {
            unwoken.count += estimator.count(e);
            unwoken.total.0 += stands_for;
        }
    }
    // The in-kernel tracer sums every thread's time, but a thread none of whose episodes in
    // the window was sampled (a rare blocker on a busy CPU, or a large --chain-every) has no
    // episode to share its time out: without this its blocked time would be dropped
    // (docs/notes/tracing.md). It is counted, under a site of its own whose cause is unknown.
    // The threads whose time the trial's accounting holds: a command's workers, a built-in's
    // tasks (not their echo partners).
    let counted = |tid: u32| match (&tree, tasks) {
        (Some(t), _) => t.works(tid),
        (None, Some(tasks)) => tasks.contains(&tid),
        (None, None) => true,
    };
    let unsampled = trace.sampling.is_some().then(|| {
        trace
            .threads
            .iter()
            .filter(|l| l.blocked > 0 && !with_sampled.contains(&l.tid) && counted(l.tid))
            .fold((0usize, 0u64), |(n, t), l| (n + 1, t + l.blocked))
    });
    if let Some((threads, blocked)) = unsampled.filter(|u| u.1 > 0) {
        sites.insert(
            (
                Cause {
                    kind: UNSAMPLED.into(),
                    object: "waits with no call chain sampled".into(),
                    caller: String::new(),
                },
                None,
            ),
            Site {
                total: blocked,
                // No chain: no stack to show.
                longest: (0, u32::MAX, u32::MAX),
                ..Site::default()
            },
        );
        total += blocked;
        notes.push(format!(
            "{:.1} ms of blocked time is of {threads} thread{} none of whose waits had its call chain sampled: counted, as `{UNSAMPLED}` (its causes unknown)",
            blocked as f64 / 1e6,
            if threads == 1 { "" } else { "s" }
        ));
    }
    let sampling = trace.sampling.map(|t| OffCpuSampling {
        blocking_switches: t.blocking_switches,
        sampled: t.sampled,
        lost: t.begin_lost + t.end_lost + t.long_lost,
        threads_untraced: t.threads_untraced,
        long: t.long,
        // Of the counted threads only: pipe_pingpong's echo partners switch as often as its
        // tasks, and their programs' runs, counted as the tasks', doubled the measuring (20%
        // of the tasks' CPU where it was 10%, and 98% with --chain-every 1).
        programs_time: trace.programs_ns.map(|_| {
            Nanos(
                trace
                    .threads
                    .iter()
                    .filter(|l| counted(l.tid))
                    .map(|l| l.programs)
                    .sum(),
            )
        }),
        rate_lowered_to: t.rate_lowered_to,
    });
    let out = named_sites(sites, &chain, &kallsyms, &user_frame, sampling.is_some());
    let silent: Vec<&perf::IdleCpu> = trace.idle_cpus.iter().filter(|c| c.silent()).collect();
    notes.extend(trace_notes(trace, &unwoken, episodes.len(), &silent));
    notes.extend(sampling.and_then(|s| sampling_note(&s, trace.sampling.unwrap_or_default())));
    notes.extend(trace.sampling.and_then(unseen_switch_ins_note));
    let runq_holders = trace
        .runq_holders
        .iter()
        .take(RUNQ_HOLDERS)
        .map(|h| RunqHolder {
            pid: h.pid,
            comm: h.comm.clone(),
            kernel_thread: h.kernel_thread,
            traced: h.pid != 0
                && trace
                    .threads
                    .iter()
                    .any(|l| l.pid == h.pid && counted(l.tid)),
            server: h.pid != 0
                && tree.as_ref().is_some_and(|t| {
                    trace
                        .threads
                        .iter()
                        .any(|l| l.pid == h.pid && t.followed(l.tid) == Some(ThreadRole::Server))
                }),
            ns: Nanos(h.ns),
        })
        .collect();
    OffCpuReport {
        total: Nanos(total),
        sites: out,
        threads: tree
            .map(|t| t.groups(&|tid| servers.cpu_serving(tid)))
            .unwrap_or_default(),
        runq_holders,
        lost_records: trace.lost,
        unwoken: (unwoken.count > 0).then_some(unwoken),
        // Named where they explain something: where episodes went unwoken.
        silent_idle_cpus: if unwoken.count > 0 {
            silent.iter().map(|c| c.cpu).collect()
        } else {
            Vec::new()
        },
        sampling,
        stolen: None,
        notes,
    }
}

/// A site: the cause, and for a wait followed into a server, the server and where the workers
/// waited for it.
type SiteKey = (Cause, Option<ChainVia>);

/// Charges worker episode `e` (its `blocked` time in the window, standing for `stands_for`),
/// whose own cause is `waited`, to the ends its chain `reached`; returns the time charged.
fn followed(
    sites: &mut HashMap<SiteKey, Site>,
    waited: &Cause,
    reached: Vec<chain::Reached>,
    (e, blocked, stands_for): (&perf::BlockedEpisode, u64, u64),
    estimator: &Estimator,
) -> u64 {
    let waited_in = if waited.caller.is_empty() {
        format!("{} ({})", waited.object, waited.kind)
    } else {
        format!("{} ({}) from {}", waited.object, waited.kind, waited.caller)
    };
    let mut charged = 0;
    for r in reached {
        let (cause, woken, longest) = match r.end {
            chain::End::Cpu => (
                Cause {
                    kind: model::record::SERVER_CPU.into(),
                    object: "on a CPU".into(),
                    caller: String::new(),
                },
                None,
                (0, u32::MAX, u32::MAX),
            ),
            chain::End::RunQueue => (
                Cause {
                    kind: model::record::SERVER_RUNQ.into(),
                    object: "waiting for a CPU".into(),
                    caller: String::new(),
                },
                None,
                (0, u32::MAX, u32::MAX),
            ),
            chain::End::Wait { cause, woken } => (
                cause,
                Some(woken),
                r.longest.unwrap_or((0, u32::MAX, u32::MAX)),
            ),
        };
        let via = ChainVia {
            server: r.server,
            kernel_thread: r.kernel_thread,
            waited_in: waited_in.clone(),
        };
        let part = (stands_for as f64 * r.share).round() as u64;
        let site = sites.entry((cause, Some(via))).or_default();
        site.count += (estimator.count(e) as f64 * r.share).round() as u64;
        site.total += part;
        site.sampled += 1;
        site.variance += estimator.variance(e, blocked) * r.share * r.share;
        if let Some(w) = woken {
            site.woken_by.add(w, part);
        }
        if blocked > site.max || site.sampled == 1 {
            site.max = site.max.max(blocked);
            site.longest = longest;
        }
        charged += part;
    }
    charged
}

/// How many of the processes that held the CPUs the traced threads waited for a report keeps
/// (the most first).
const RUNQ_HOLDERS: usize = 16;

/// The user addresses of `episodes`' chains, per process, named through the mappings the
/// tracer recorded (or, without them, this host's view of the process, unless `resolved`
/// already named them).
fn user_symbols(
    trace: &perf::OffCpuTrace,
    episodes: &[&perf::BlockedEpisode],
    resolved: Option<&HashMap<(u32, u64), perf::UserFrame>>,
) -> HashMap<u32, perf::UserSymbols> {
    let chain = |i: u32| trace.chains.get(i as usize).map_or(&[][..], Vec::as_slice);
    let mut per_pid: HashMap<u32, Vec<u64>> = HashMap::new();
    for e in episodes {
        per_pid
            .entry(e.pid)
            .or_default()
            .extend(chain(e.user_chain));
    }
    per_pid
        .into_iter()
        .filter_map(|(pid, addrs)| match (trace.maps.get(&pid), resolved) {
            (Some(maps), _) => Some((pid, perf::UserSymbols::resolve_mapped(maps, &addrs))),
            (None, Some(_)) => None,
            (None, None) => Some((pid, perf::UserSymbols::resolve(0, &addrs))),
        })
        .collect()
}

/// Each cause's site, its longest episode's stacks named, the most blocked time first.
fn named_sites<'t>(
    sites: HashMap<SiteKey, Site>,
    chain: &dyn Fn(u32) -> &'t [u64],
    kallsyms: &perf::Kallsyms,
    user_frame: &dyn Fn(u32, u64) -> perf::UserFrame,
    sampled: bool,
) -> Vec<OffCpuSite> {
    let mut out: Vec<OffCpuSite> = sites
        .into_iter()
        .map(|((cause, via), site)| {
            let (pid, k, u) = site.longest;
            let stack = chain(k)
                .iter()
                .map(|&ip| kallsyms.describe(ip))
                .take(STACK_FRAMES)
                .collect();
            let user_stack = chain(u)
                .iter()
                .map(|&a| user_frame(pid, a).describe(a))
                .take(STACK_FRAMES)
                .collect();
            OffCpuSite {
                kind: cause.kind,
                object: cause.object,
                caller: cause.caller,
                stack,
                user_stack,
                count: site.count,
                total: Nanos(site.total),
                max: Nanos(site.max),
                woken_by: site.woken_by.into_shares(),
                sampled: sampled.then(|| SiteSample {
                    episodes: site.sampled,
                    // 1.96 standard errors: the 95% interval's half.
                    error: Nanos((1.96 * site.variance.sqrt()).round() as u64),
                }),
                via,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.total
            .cmp(&a.total)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.caller.cmp(&b.caller))
    });
    out
}

/// What the in-kernel tracer sampled, and what it lost, as one note (`None` when it sampled
/// every episode and lost nothing).
fn sampling_note(s: &OffCpuSampling, tally: perf::SamplingTally) -> Option<String> {
    if s.sampled == s.blocking_switches
        && s.lost == 0
        && s.threads_untraced == 0
        && s.rate_lowered_to.is_none()
    {
        return None;
    }
    let mut note = format!(
        "off-CPU: each thread's blocked time summed exactly in the kernel, and shared out over its sites by the call chains of {} of {} blocking switches (1 in {:.0}): each site's count and time are estimates, with their 95% sampling error in the JSON (sites[].sampled.error)",
        s.sampled,
        s.blocking_switches,
        s.blocking_switches as f64 / s.sampled.max(1) as f64
    );
    if s.lost > 0 {
        let share = s.lost as f64 / (s.sampled + tally.begin_lost).max(1) as f64;
        note.push_str(&format!(
            "; {} sampled episodes ({:.1}%) lost (the kernel's ring buffer was full): the sites' shares rest on the rest",
            s.lost,
            100.0 * share
        ));
    }
    if s.threads_untraced > 0 {
        note.push_str(&format!(
            "; {} threads went untraced (the kernel's thread table was full)",
            s.threads_untraced
        ));
    }
    if let Some(rate) = s.rate_lowered_to {
        note.push_str(&format!(
            "; the drain fell behind, so the sampling rate was lowered (to {rate} a second per CPU at the least): fewer chains, none lost to it"
        ));
    }
    if tally.exit_lost > 0 {
        note.push_str(&format!(
            "; {} thread exits lost (those threads' time is missing)",
            tally.exit_lost
        ));
    }
    Some(note)
}

/// The in-kernel tracer's stints on a CPU that began with a switch it did not see, as a note
/// (`None` when it saw every one).
fn unseen_switch_ins_note(tally: perf::SamplingTally) -> Option<String> {
    (tally.unseen_switch_ins > 0).then(|| {
        format!(
            "off-CPU: {} stints on a CPU began with a switch the tracer did not see (a switch that fires no tracepoint, such as one away from a task hidden from tracing); they were dated by the kernel's own arrival time, so the threads' time on a CPU and steal stand",
            tally.unseen_switch_ins
        )
    })
}

/// What the trace lost or could not read, and what unwoken episodes hold, as notes.
fn trace_notes(
    trace: &perf::OffCpuTrace,
    unwoken: &UnwokenEpisodes,
    episodes: usize,
    silent: &[&perf::IdleCpu],
) -> Vec<String> {
    let mut notes = Vec::new();
    if trace.lost > 0 {
        notes.push(format!(
            "{} trace records were lost (ring buffer full): blocked time is low",
            trace.lost
        ));
    }
    if unwoken.count > 0 {
        notes.push(format!(
            "{} of {} blocking episodes had no wake-up record (the kernel traced none): they end at the switch-in, so {:.1} ms of blocked time includes the wait for a CPU after the wake-up{}",
            unwoken.count,
            episodes,
            unwoken.total.0 as f64 / 1e6,
            silent_cpus_text(silent)
        ));
    }
    if trace.malformed > 0 {
        notes.push(format!(
            "{} scheduler records could not be decoded",
            trace.malformed
        ));
    }
    if trace.out_of_step > 0 {
        notes.push(format!(
            "{} scheduler records did not follow their thread's previous one (a record was lost): those gaps are not in the threads' time",
            trace.out_of_step
        ));
    }
    notes
}

/// Why episodes went unwoken, when the tracer found CPUs that record nothing while idle:
/// `"; the cause: the kernel records nothing on CPU 1 while it idles (…)"`, or nothing.
fn silent_cpus_text(silent: &[&perf::IdleCpu]) -> String {
    if silent.is_empty() {
        return String::new();
    }
    let each: Vec<String> = silent
        .iter()
        .map(|c| {
            format!(
                "CPU {} went idle {} times and recorded no wake-up in its idle task's context",
                c.cpu, c.went_idle
            )
        })
        .collect();
    format!(
        "; the cause: the kernel records nothing on {} while {} idle ({}), so the wake-ups taken there while idle (by the interrupts it handles) are missing, whichever CPU the woken task runs on",
        plural_cpus(silent.len()),
        if silent.len() == 1 {
            "it is"
        } else {
            "they are"
        },
        each.join("; ")
    )
}

fn plural_cpus(n: usize) -> String {
    if n == 1 {
        "one CPU".to_string()
    } else {
        format!("{n} CPUs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(tid: u32, begin: u64, end: u64, woken: bool) -> perf::BlockedEpisode {
        perf::BlockedEpisode {
            pid: 1,
            tid,
            state: 2,
            begin,
            end,
            woken,
            waker: None,
            kernel_chain: 0,
            user_chain: 0,
            weight: 1,
        }
    }

    /// Fails unless one of the report's notes begins with `prefix`.
    fn assert_noted(report: &OffCpuReport, prefix: &str) {
        assert!(
            report.notes.iter().any(|n| n.starts_with(prefix)),
            "no note begins {prefix:?}: {:?}",
            report.notes
        );
    }

    /// The window most tests trace: 0 to 2,000 ns.
    const TWO_MICROSECONDS: ClockWindow = ClockWindow {
        start: Nanos(0),
        end: Nanos(2_000),
    };

    /// The report of `trace` over `window`, of `tasks` (`None`: every thread).
    fn summarized(
        trace: &perf::OffCpuTrace,
        window: ClockWindow,
        tasks: Option<&HashSet<u32>>,
    ) -> OffCpuReport {
        summarize(
            trace,
            window,
            None,
            (None, tasks),
            &Estimator::new(trace, window),
        )
    }

    fn life(tid: u32, blocked: u64) -> perf::ThreadLife {
        perf::ThreadLife {
            pid: 1,
            tid,
            parent: None,
            kernel_waker: false,
            comm: "task".into(),
            begin: 0,
            end: None,
            on_cpu: 2_000 - blocked,
            runq: 0,
            blocked,
            stolen: 0,
            programs: 0,
        }
    }

    #[test]
    fn a_tasks_blocked_time_that_no_sampled_episode_stands_for_is_counted_as_unsampled() {
        // Task 7's one sampled episode (1 in 4) shares out its exact 900 ns; task 9 blocked
        // 500 ns and none of its episodes was sampled; thread 10 is not a task.
        let mut sampled = episode(7, 100, 400, true);
        sampled.weight = 4;
        let trace = perf::OffCpuTrace {
            episodes: vec![sampled],
            chains: vec![vec![0xffff_ffff_8100_0000]],
            threads: vec![life(7, 900), life(9, 500), life(10, 1_000)],
            sampling: Some(perf::SamplingTally {
                blocking_switches: 12,
                sampled: 1,
                ..perf::SamplingTally::default()
            }),
            ..perf::OffCpuTrace::default()
        };
        let window = TWO_MICROSECONDS;
        let tasks: HashSet<u32> = [7, 9].into();
        let report = summarized(&trace, window, Some(&tasks));
        assert_eq!(report.total, Nanos(900 + 500), "{:?}", report.sites);
        let site = report
            .sites
            .iter()
            .find(|s| s.kind == UNSAMPLED)
            .expect("an unsampled site");
        assert_eq!(site.total, Nanos(500));
        assert!(site.stack.is_empty(), "no chain was recorded for it");
        assert_eq!(
            report.sites.iter().map(|s| s.total.0).sum::<u64>(),
            report.total.0,
            "the sites add up to the total"
        );
        assert_noted(
            &report,
            "0.0 ms of blocked time is of 1 thread none of whose waits had its call chain sampled",
        );
        // Every episode traced (the perf tracer): nothing is unsampled.
        let every = perf::OffCpuTrace {
            sampling: None,
            episodes: vec![episode(7, 100, 400, true)],
            ..trace
        };
        let report = summarized(&every, window, Some(&tasks));
        assert!(report.sites.iter().all(|s| s.kind != UNSAMPLED));
        assert_eq!(report.total, Nanos(300));
    }

    #[test]
    fn the_programs_own_time_is_the_tasks_not_their_partners() {
        // Task 7 and its echo partner 8 hand a byte back and forth: the tracer's programs ran
        // as much in each, but only the task's CPU is the trial's accounting.
        let with = |tid, programs| perf::ThreadLife {
            programs,
            ..life(tid, 500)
        };
        let trace = perf::OffCpuTrace {
            threads: vec![with(7, 120), with(8, 130)],
            sampling: Some(perf::SamplingTally::default()),
            programs_ns: Some(250),
            ..perf::OffCpuTrace::default()
        };
        let tasks: HashSet<u32> = [7].into();
        let report = summarized(&trace, TWO_MICROSECONDS, Some(&tasks));
        let sampling = report.sampling.expect("an in-kernel trace's sampling");
        assert_eq!(sampling.programs_time, Some(Nanos(120)));
        // Every thread, where no tasks are named; none from a tracer that does not time them.
        let report = summarized(&trace, TWO_MICROSECONDS, None);
        assert_eq!(report.sampling.unwrap().programs_time, Some(Nanos(250)));
        let untimed = perf::OffCpuTrace {
            programs_ns: None,
            ..trace
        };
        let report = summarized(&untimed, TWO_MICROSECONDS, Some(&tasks));
        assert_eq!(report.sampling.unwrap().programs_time, None);
    }

    #[test]
    fn stints_whose_switch_in_the_tracer_did_not_see_are_said() {
        let trace = perf::OffCpuTrace {
            episodes: vec![episode(7, 100, 400, true)],
            chains: vec![Vec::new()],
            sampling: Some(perf::SamplingTally {
                blocking_switches: 1,
                sampled: 1,
                unseen_switch_ins: 3,
                ..perf::SamplingTally::default()
            }),
            ..perf::OffCpuTrace::default()
        };
        let window = TWO_MICROSECONDS;
        let report = summarized(&trace, window, None);
        assert_noted(
            &report,
            "off-CPU: 3 stints on a CPU began with a switch the tracer did not see",
        );
        let seen_all = perf::OffCpuTrace {
            sampling: Some(perf::SamplingTally {
                unseen_switch_ins: 0,
                ..trace.sampling.unwrap()
            }),
            ..trace
        };
        let report = summarized(&seen_all, window, None);
        assert!(
            report.notes.iter().all(|n| !n.contains("did not see")),
            "{:?}",
            report.notes
        );
    }

    #[test]
    fn episodes_that_no_wake_up_ended_are_counted_and_said() {
        let trace = perf::OffCpuTrace {
            episodes: vec![
                episode(7, 100, 400, true),
                episode(8, 150, 900, false),
                // Half inside the window: only that half counts.
                episode(8, 1_800, 2_200, false),
            ],
            chains: vec![Vec::new()],
            ..perf::OffCpuTrace::default()
        };
        let window = TWO_MICROSECONDS;
        let report = summarized(&trace, window, None);
        assert_eq!(report.total, Nanos(300 + 750 + 200));
        assert_eq!(
            report.unwoken,
            Some(UnwokenEpisodes {
                count: 2,
                total: Nanos(950)
            })
        );
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with("2 of 3 blocking episodes had no wake-up record")),
            "{:?}",
            report.notes
        );
        let all_woken = perf::OffCpuTrace {
            episodes: vec![episode(7, 100, 400, true)],
            chains: vec![Vec::new()],
            ..perf::OffCpuTrace::default()
        };
        assert_eq!(summarized(&all_woken, window, None).unwoken, None);
    }

    #[test]
    fn a_cpu_that_records_nothing_while_idle_is_named_as_the_cause_of_unwoken_episodes() {
        let idle = |cpu: u32, went_idle: u64, idle_wakeups: u64| perf::IdleCpu {
            cpu,
            went_idle,
            idle_wakeups,
        };
        let trace = perf::OffCpuTrace {
            episodes: vec![
                episode(7, 100, 400, true),
                episode(8, 150, 900, false),
                episode(8, 1_000, 1_200, false),
            ],
            chains: vec![Vec::new()],
            idle_cpus: vec![
                idle(0, 500, 480),
                idle(1, 300, 0),
                idle(2, 20, 0),
                idle(3, 400, 2),
            ],
            ..perf::OffCpuTrace::default()
        };
        let window = TWO_MICROSECONDS;
        let report = summarized(&trace, window, None);
        assert_eq!(
            report.silent_idle_cpus,
            [1],
            "CPU 2 went idle too rarely to tell; CPU 3 recorded idle wake-ups"
        );
        let note = report
            .notes
            .iter()
            .find(|n| n.contains("no wake-up record"))
            .expect("the unwoken note");
        assert!(
            note.ends_with("; the cause: the kernel records nothing on one CPU while it is idle (CPU 1 went idle 300 times and recorded no wake-up in its idle task's context), so the wake-ups taken there while idle (by the interrupts it handles) are missing, whichever CPU the woken task runs on"),
            "{note}"
        );
        // Every episode woken: a silent CPU is not worth a word.
        let woken = perf::OffCpuTrace {
            episodes: vec![episode(8, 150, 900, true)],
            ..trace
        };
        let report = summarized(&woken, window, None);
        assert!(report.silent_idle_cpus.is_empty());
        assert!(
            report.notes.iter().all(|n| !n.contains("idle")),
            "{:?}",
            report.notes
        );
    }
}
