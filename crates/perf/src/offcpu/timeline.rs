//! [`Timeline`]: every traced thread's time, from the scheduler's records merged in timestamp
//! order, and its blocked episodes with what ended them.
//!
//! A thread is always in one of three states, and each record moves it:
//! - **on a CPU** from the context switch that gave it the CPU, as the kernel picked it (the
//!   blocking switch's sample or the switch-out record of the task before it, both naming it)
//!   until its own blocking sample or switch-out; where neither named it (a CPU leaving idle
//!   records nothing on this project's VM), from its own switch-in record, which comes after
//!   the switch and perf's work for it, moved back by that CPU's usual delay between the two
//!   records of switches seen both ways ([`Timeline::switch_delay`]);
//! - **waiting for a CPU** (runnable) from a preemption or a yield (a switch-out while
//!   runnable, `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`), a wake-up, or its creation, until its
//!   next switch-in;
//! - **blocked** from a switch-out while not runnable (the `sched_switch` sample, with its call
//!   chains, opens an episode) until its wake-up (`sched_wakeup`, whose context and kernel chain
//!   say who woke it), or, when no wake-up was recorded, its switch-in (the episode then holds
//!   the wait for a CPU after the wake-up too, and is marked unwoken).
//!
//! Creation (`PERF_RECORD_FORK`) starts a thread waiting for its first switch-in; its exit
//! (`PERF_RECORD_EXIT`, written by `do_exit` while it still runs, after which the kernel writes
//! nothing more of it) ends it. So a thread's three parts add up to its life, exactly, from its
//! first record to its exit or the end of tracing, both clipped to `[from, until]`.
//!
//! Only threads the tracer follows are accounted: those created while it traced (their creation
//! recorded), or seen blocking (the traced switch samples); context switches of other tasks are
//! passed over.
//!
//! Pure: no system calls, tested on synthetic records.

use std::collections::HashMap;

use crate::offcpu::events::{BlockedEpisode, SchedEvent, ThreadLife, TimedSched, Waker};

/// `TASK_REPORT` bits of an exiting task (`EXIT_DEAD`, `EXIT_ZOMBIE`): its last switch, not a
/// wait.
const EXIT_STATES: u64 = 0x30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Seen only as a waker or a wake-up target so far.
    Unknown,
    Running(u64),
    Runnable(u64),
    Blocked(Open),
    Gone,
}

/// An open blocked episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Open {
    begin: u64,
    state: u64,
    kernel_chain: u32,
    user_chain: u32,
    /// The wake-up, once seen: the episode has ended, the thread waits for a CPU.
    woken: Option<(u64, Waker)>,
    /// The waking record's waker, seen before the wake-up (the real waker where the wake-up
    /// is then written on another CPU, in an interrupt).
    waking: Option<Waker>,
}

#[derive(Debug, Clone)]
struct Thread {
    life: ThreadLife,
    state: State,
}

/// Switch delays kept per CPU for the median (the most recent).
const DELAYS_KEPT: usize = 64;

/// One CPU's recent switches: the last switch-out record's time and the task it named, and
/// the delays from such records to the named task's own switch-in record.
#[derive(Debug, Default, Clone)]
struct CpuSwitches {
    named: Option<(u32, u64)>,
    delays: std::collections::VecDeque<u64>,
}

/// Every traced thread's states and the blocked episodes they closed.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    threads: HashMap<u32, Thread>,
    /// Time before this is not accrued (the accounting window's start).
    from: u64,
    /// Time after this is not accrued (the window's end, once it closed: the tasks run on,
    /// winding down, and the drains before the trace ends read their records); `None`: none.
    until: Option<u64>,
    pub(crate) episodes: Vec<BlockedEpisode>,
    /// Records that did not fit the thread's state (a lost record before them): nothing was
    /// accrued for the gap.
    pub(crate) out_of_step: u64,
    /// Switch-ins taken from the task's own (later) record, no switch-out record having named
    /// it, against all switch-ins.
    pub(crate) late_switch_ins: (u64, u64),
    cpus: HashMap<u32, CpuSwitches>,
}

impl crate::trace::pairing::Pairing for Timeline {
    type Record = TimedSched;

    fn feed(&mut self, record: &TimedSched) {
        Timeline::feed(self, record);
    }
}

impl Timeline {
    /// Accrues time only from `from` on (CLOCK_MONOTONIC ns). What was accrued before, from
    /// the records of a warm-up that drains released first (all stamped before `from`, which
    /// has just passed), is dropped: a built-in's task read its 0.3 s warm-up in its 1 s window.
    pub(crate) fn accrue_from(&mut self, from: u64) {
        self.from = from;
        for th in self.threads.values_mut() {
            (th.life.on_cpu, th.life.runq, th.life.blocked) = (0, 0, 0);
        }
    }

    /// Accrues time only up to `until` (CLOCK_MONOTONIC ns: the window's end).
    pub(crate) fn accrue_until(&mut self, until: u64) {
        self.until = Some(until);
    }

    fn span(&self, a: u64, b: u64) -> u64 {
        b.min(self.until.unwrap_or(u64::MAX))
            .saturating_sub(a.max(self.from))
    }

    fn thread(&mut self, pid: u32, tid: u32, time: u64) -> &mut Thread {
        self.threads.entry(tid).or_insert_with(|| Thread {
            life: ThreadLife {
                pid,
                tid,
                begin: time,
                ..ThreadLife::default()
            },
            state: State::Unknown,
        })
    }

    /// Names thread `tid` (the last name wins).
    pub(crate) fn name(&mut self, pid: u32, tid: u32, comm: &str, time: u64) {
        self.thread(pid, tid, time).life.comm = comm.to_string();
    }

    /// Feeds one record; records must come in timestamp order.
    pub(crate) fn feed(&mut self, e: &TimedSched) {
        let t = e.time;
        match e.event {
            SchedEvent::Fork { parent } => {
                // A new thread is named as its creator until it renames itself or execs.
                let comm = self
                    .threads
                    .get(&parent)
                    .map(|p| p.life.comm.clone())
                    .unwrap_or_default();
                let th = self.thread(e.pid, e.tid, t);
                if th.life.comm.is_empty() {
                    th.life.comm = comm;
                }
                th.life.parent = Some(parent);
                th.life.begin = t;
                th.state = State::Runnable(t);
            }
            SchedEvent::Blocked {
                state,
                kernel_chain,
                user_chain,
                next_tid,
            } if state & EXIT_STATES == 0 => {
                let prev = self.thread(e.pid, e.tid, t).state;
                let ran = match prev {
                    State::Running(s) => self.span(s, t),
                    _ => {
                        self.out_of_step += u64::from(prev != State::Unknown);
                        0
                    }
                };
                let th = self.thread(e.pid, e.tid, t);
                th.life.on_cpu += ran;
                th.state = State::Blocked(Open {
                    begin: t,
                    state,
                    kernel_chain,
                    user_chain,
                    woken: None,
                    waking: None,
                });
                self.named(e.cpu, next_tid, t);
                self.switch_in(next_tid, t);
            }
            SchedEvent::Blocked { .. } | SchedEvent::Exit => self.exit(e.pid, e.tid, t),
            SchedEvent::SwitchOut {
                preempt, next_tid, ..
            } => {
                self.switch_out(e.tid, preempt, t);
                self.named(e.cpu, next_tid, t);
                self.switch_in(next_tid, t);
            }
            SchedEvent::Wakeup { tid, chain } => {
                let Some(th) = self.threads.get(&tid) else {
                    return;
                };
                if let State::Blocked(o) = th.state
                    && o.woken.is_none()
                {
                    let waker = o.waking.unwrap_or(Waker {
                        pid: e.pid,
                        tid: e.tid,
                        chain,
                    });
                    let blocked = self.span(o.begin, t);
                    let (pid, ended) = (
                        th.life.pid,
                        Open {
                            woken: Some((t, waker)),
                            ..o
                        },
                    );
                    self.episodes.push(episode(pid, tid, &ended, None));
                    let th = self.thread(pid, tid, t);
                    th.life.blocked += blocked;
                    th.state = State::Runnable(t);
                }
            }
            SchedEvent::Waking { tid, chain } => {
                if let Some(th) = self.threads.get_mut(&tid)
                    && let State::Blocked(o) = &mut th.state
                    && o.woken.is_none()
                {
                    o.waking = Some(Waker {
                        pid: e.pid,
                        tid: e.tid,
                        chain,
                    });
                }
            }
            SchedEvent::SwitchIn => self.own_switch_in(e.cpu, e.tid, t),
        }
    }

    /// A switch on `cpu` at `t` named task `tid` as the next to run (the first record of the
    /// switch: a later one of the same switch does not move it).
    fn named(&mut self, cpu: u32, tid: u32, t: u64) {
        let c = self.cpus.entry(cpu).or_default();
        if c.named.is_none_or(|(named, _)| named != tid) {
            c.named = Some((tid, t));
        }
    }

    /// `cpu`'s usual delay from a switch's first record to the switched-in task's own record:
    /// the median of the recent switches seen both ways, 0 before any.
    pub(crate) fn switch_delay(&self, cpu: u32) -> u64 {
        let Some(c) = self.cpus.get(&cpu) else {
            return 0;
        };
        let mut d: Vec<u64> = c.delays.iter().copied().collect();
        d.sort_unstable();
        d.get(d.len() / 2).copied().unwrap_or(0)
    }

    /// Task `tid`'s own switch-in record on `cpu` at `t`: the switch's first record named it
    /// (its delay is learnt), or none did, and the switch-in is taken from this one, moved back
    /// by the CPU's usual delay (never before it began to wait).
    fn own_switch_in(&mut self, cpu: u32, tid: u32, t: u64) {
        let c = self.cpus.entry(cpu).or_default();
        if let Some((named, at)) = c.named.take()
            && named == tid
        {
            if c.delays.len() == DELAYS_KEPT {
                c.delays.pop_front();
            }
            c.delays.push_back(t.saturating_sub(at));
        }
        let Some(th) = self.threads.get(&tid) else {
            return;
        };
        let since = match th.state {
            State::Runnable(s) => s,
            State::Blocked(o) => o.woken.map_or(o.begin, |(w, _)| w),
            State::Running(_) | State::Gone | State::Unknown => return,
        };
        self.late_switch_ins.0 += 1;
        let picked = t.saturating_sub(self.switch_delay(cpu)).max(since);
        self.switch_in(tid, picked);
    }

    /// Thread `tid` (if followed) left its CPU at `t`.
    fn switch_out(&mut self, tid: u32, preempt: bool, t: u64) {
        let Some(prev) = self.threads.get(&tid).map(|th| th.state) else {
            return;
        };
        let ran = match prev {
            State::Running(s) => self.span(s, t),
            // After a blocking sample (its switch-out follows it): nothing new.
            State::Blocked(_) | State::Gone => return,
            // Its start on this CPU was not recorded: the time since is unknown.
            State::Runnable(_) | State::Unknown => {
                self.out_of_step += u64::from(prev != State::Unknown);
                0
            }
        };
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        th.life.on_cpu += ran;
        th.state = if preempt {
            State::Runnable(t)
        } else {
            // Blocked, but its sample was lost: an episode without call chains.
            State::Blocked(Open {
                begin: t,
                state: 0,
                kernel_chain: u32::MAX,
                user_chain: u32::MAX,
                woken: None,
                waking: None,
            })
        };
    }

    /// Thread `tid` (if followed) got a CPU at `t`; a later record of the same switch changes
    /// nothing.
    fn switch_in(&mut self, tid: u32, t: u64) {
        let (from, until) = (self.from, self.until.unwrap_or(u64::MAX));
        let span = |a: u64| t.min(until).saturating_sub(a.max(from));
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        match th.state {
            State::Runnable(s) => th.life.runq += span(s),
            State::Blocked(o) => {
                // No wake-up recorded: blocked until now.
                th.life.blocked += span(o.begin);
                self.episodes.push(episode(th.life.pid, tid, &o, Some(t)));
            }
            State::Running(_) | State::Gone => return,
            State::Unknown => {}
        }
        th.state = State::Running(t);
        self.late_switch_ins.1 += 1;
    }

    fn exit(&mut self, pid: u32, tid: u32, t: u64) {
        let prev = self.thread(pid, tid, t).state;
        let ran = match prev {
            State::Running(s) => self.span(s, t),
            _ => 0,
        };
        let th = self.thread(pid, tid, t);
        th.life.on_cpu += ran;
        th.life.end = Some(t);
        th.state = State::Gone;
    }

    /// Ends the timeline at `until`: every thread still traced accrues its state up to then;
    /// open episodes are kept, ending at their wake-up or never. Returns the episodes (in the
    /// order they ended, open ones last) and every thread's life.
    pub(crate) fn close(mut self, until: u64) -> (Vec<BlockedEpisode>, Vec<ThreadLife>) {
        let mut open: Vec<(u32, u32, Open)> = Vec::new();
        let from = self.from;
        let until = until.min(self.until.unwrap_or(u64::MAX));
        let span = |a: u64| until.saturating_sub(a.max(from));
        for th in self.threads.values_mut() {
            match th.state {
                State::Running(s) => th.life.on_cpu += span(s),
                State::Runnable(s) => th.life.runq += span(s),
                State::Blocked(o) => {
                    th.life.blocked += span(o.begin);
                    open.push((th.life.pid, th.life.tid, o));
                }
                State::Unknown | State::Gone => {}
            }
        }
        open.sort_by_key(|(_, tid, o)| (o.begin, *tid));
        for (pid, tid, o) in open {
            self.episodes.push(episode(pid, tid, &o, None));
        }
        let mut threads: Vec<ThreadLife> = self
            .threads
            .into_values()
            .filter(|t| t.state != State::Unknown || t.life.end.is_some())
            .map(|t| t.life)
            .collect();
        threads.sort_by_key(|t| (t.begin, t.tid));
        (self.episodes, threads)
    }
}

fn episode(pid: u32, tid: u32, o: &Open, switch_in: Option<u64>) -> BlockedEpisode {
    BlockedEpisode {
        pid,
        tid,
        state: o.state,
        begin: o.begin,
        end: o.woken.map(|(t, _)| t).or(switch_in).unwrap_or(u64::MAX),
        woken: o.woken.is_some(),
        waker: o.woken.map(|(_, w)| w).or(o.waking),
        kernel_chain: o.kernel_chain,
        user_chain: o.user_chain,
        weight: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, tid: u32, event: SchedEvent) -> TimedSched {
        TimedSched {
            time,
            pid: 1,
            tid,
            cpu: 0,
            event,
        }
    }
    const BLOCKED: SchedEvent = SchedEvent::Blocked {
        state: 1,
        kernel_chain: 0,
        user_chain: 1,
        next_tid: 0,
    };
    const IN: SchedEvent = SchedEvent::SwitchIn;
    /// A switch-out to the idle task.
    const OUT: SchedEvent = SchedEvent::SwitchOut {
        preempt: false,
        next_pid: 0,
        next_tid: 0,
    };
    const PREEMPTED: SchedEvent = SchedEvent::SwitchOut {
        preempt: true,
        next_pid: 0,
        next_tid: 0,
    };
    /// Thread 99 (not followed) leaves the CPU to `tid`.
    fn handover(tid: u32) -> SchedEvent {
        SchedEvent::SwitchOut {
            preempt: true,
            next_pid: 1,
            next_tid: tid,
        }
    }
    /// Followed from `time` on, as if created then by thread 1.
    fn born(time: u64, tid: u32) -> TimedSched {
        ev(time, tid, SchedEvent::Fork { parent: 1 })
    }
    fn wake(tid: u32) -> SchedEvent {
        SchedEvent::Wakeup { tid, chain: 5 }
    }

    fn run(events: &[TimedSched], until: u64) -> (Vec<BlockedEpisode>, Vec<ThreadLife>) {
        let mut t = Timeline::default();
        for e in events {
            t.feed(e);
        }
        t.close(until)
    }

    #[test]
    fn an_episode_runs_from_the_switch_out_to_the_wakeup_not_the_switch_in() {
        let (eps, _) = run(
            &[
                ev(10, 7, BLOCKED),
                ev(25, 99, wake(7)),
                ev(30, 99, wake(7)), // a second wake-up changes nothing
                ev(40, 7, IN),
                ev(50, 8, BLOCKED),
                ev(60, 8, IN), // wake-up not seen: ends at the switch-in
                ev(70, 9, IN), // a task not followed: nothing
                ev(80, 7, BLOCKED),
            ],
            1_000,
        );
        let spans: Vec<(u32, u64, u64)> = eps.iter().map(|e| (e.tid, e.begin, e.end)).collect();
        assert_eq!(spans, [(7, 10, 25), (8, 50, 60), (7, 80, u64::MAX)]);
        let woken: Vec<bool> = eps.iter().map(|e| e.woken).collect();
        assert_eq!(woken, [true, false, false]);
        assert_eq!(
            eps[0].waker,
            Some(Waker {
                pid: 1,
                tid: 99,
                chain: 5
            }),
            "the wake-up's context is the waker"
        );
        assert_eq!(eps[1].waker, None);
        assert_eq!(eps[2].blocked_within(0, 100), 20);
        assert_eq!(eps[0].blocked_within(20, 100), 5);
        assert_eq!(eps[0].blocked_within(30, 100), 0);
    }

    #[test]
    fn the_waker_is_the_wakings_and_the_episode_ends_at_the_wakeup() {
        // Thread 7 is woken by 42 on another CPU: the waking is written in 42's context, the
        // wake-up later on 7's CPU, in the interrupt that queued it (context 0, chain 9).
        let waking = SchedEvent::Waking { tid: 7, chain: 3 };
        let queued = SchedEvent::Wakeup { tid: 7, chain: 9 };
        let (eps, _) = run(
            &[
                ev(10, 7, BLOCKED),
                ev(20, 42, waking),
                ev(24, 0, queued),
                ev(30, 7, IN),
                ev(40, 7, BLOCKED),
                ev(50, 42, waking),
                ev(60, 7, IN), // no wake-up recorded: to the switch-in, the waker still known
            ],
            1_000,
        );
        let spans: Vec<(u32, u64, u64)> = eps.iter().map(|e| (e.tid, e.begin, e.end)).collect();
        assert_eq!(spans, [(7, 10, 24), (7, 40, 60)]);
        let wakers: Vec<Option<(u32, u32)>> = eps
            .iter()
            .map(|e| e.waker.map(|w| (w.tid, w.chain)))
            .collect();
        assert_eq!(wakers, [Some((42, 3)), Some((42, 3))]);
        assert!(eps[0].woken && !eps[1].woken);
    }

    #[test]
    fn a_threads_parts_add_up_to_its_life_from_creation_to_exit() {
        let (eps, threads) = run(
            &[
                ev(100, 7, SchedEvent::Fork { parent: 3 }),
                ev(110, 99, handover(7)), // 10 waiting to first run
                ev(113, 7, IN),           // its own switch-in, after: nothing new
                ev(150, 7, PREEMPTED),    // 40 on CPU
                ev(170, 7, IN), // 17 runnable: no switch-out named it (a CPU leaving idle),
                // so it is moved back by this CPU's delay seen at 110..113
                ev(200, 7, BLOCKED),          // 30 on CPU
                ev(205, 7, OUT),              // the blocking switch's own switch-out: nothing new
                ev(260, 42, wake(7)),         // 60 blocked
                ev(265, 99, handover(7)),     // 5 runnable
                ev(300, 7, SchedEvent::Exit), // 35 on CPU (40 + 33 + 35 in all)
                ev(310, 7, IN),               // nothing after its exit
            ],
            1_000,
        );
        let t = threads.iter().find(|t| t.tid == 7).unwrap();
        assert_eq!((t.begin, t.end, t.parent), (100, Some(300), Some(3)));
        assert_eq!((t.on_cpu, t.runq, t.blocked), (108, 32, 60));
        assert_eq!(t.life(), 200, "from creation to exit");
        assert_eq!(eps.len(), 1);
    }

    #[test]
    fn time_before_the_window_is_not_accrued_and_open_states_end_at_the_close() {
        let mut t = Timeline::default();
        t.accrue_from(150);
        for e in [
            born(90, 7),
            born(90, 8),
            ev(100, 7, IN),
            ev(200, 7, BLOCKED),   // 50 of the 100 on CPU are inside
            ev(220, 8, IN),        // 20 runnable inside
            ev(240, 8, PREEMPTED), // 20
        ] {
            t.feed(&e);
        }
        let (eps, threads) = t.close(300);
        let life = |tid: u32| threads.iter().find(|t| t.tid == tid).unwrap().clone();
        let a = life(7);
        assert_eq!((a.on_cpu, a.blocked, a.end), (50, 100, None));
        let b = life(8);
        assert_eq!((b.on_cpu, b.runq), (20, 70 + 60));
        assert_eq!(eps.len(), 1, "the open episode is kept");
        assert_eq!(eps[0].end, u64::MAX);
    }

    #[test]
    fn time_fed_before_the_window_opened_is_dropped_when_it_opens() {
        let mut t = Timeline::default();
        // A warm-up's records, released by a drain before the window opened at 150.
        for e in [born(90, 7), ev(100, 7, IN), ev(120, 7, PREEMPTED)] {
            t.feed(&e);
        }
        t.accrue_from(150);
        for e in [ev(160, 7, IN), ev(200, 7, BLOCKED)] {
            t.feed(&e);
        }
        let (_, threads) = t.close(250);
        let l = &threads[0];
        assert_eq!((l.on_cpu, l.runq, l.blocked), (40, 10, 50));
        assert_eq!(l.life(), 100, "the window's 100 ns");
    }

    #[test]
    fn time_after_the_window_closed_is_not_accrued_though_its_records_come_before_the_end() {
        let mut t = Timeline::default();
        t.accrue_from(100);
        t.accrue_until(200);
        for e in [
            born(90, 7),
            ev(100, 7, IN),
            ev(150, 7, BLOCKED), // 50 on CPU
            ev(180, 7, wake(7)), // 30 blocked
            ev(190, 7, IN),      // 10 runnable
            // After the window: the task winds down, read by a drain before the trace ends.
            ev(260, 7, PREEMPTED),
            ev(300, 7, IN),
        ] {
            t.feed(&e);
        }
        let (_, threads) = t.close(400);
        let l = &threads[0];
        assert_eq!((l.on_cpu, l.blocked, l.runq), (60, 30, 10));
        assert_eq!(l.life(), 100, "the window's 100 ns, not the trace's");
    }

    #[test]
    fn a_switch_in_is_when_the_switch_is_first_recorded_and_a_late_one_moves_back() {
        let on = |cpu: u32, e: TimedSched| TimedSched { cpu, ..e };
        let blocks_to = |next_tid| SchedEvent::Blocked {
            state: 1,
            kernel_chain: 0,
            user_chain: 0,
            next_tid,
        };
        let (_, threads) = run(
            &[
                born(0, 7),
                born(0, 8),
                ev(0, 8, IN),
                // 8 blocks; its sample names 7, who runs from then, not from the switch-out
                // record 30 later (perf's stack copy in between).
                ev(10, 8, blocks_to(7)),
                ev(40, 8, OUT),
                ev(42, 7, IN), // its own record: the delay from the first record is 32
                ev(100, 7, PREEMPTED),
                ev(130, 99, handover(7)),
                ev(134, 7, IN), // 4
                ev(200, 7, PREEMPTED),
                // A CPU leaving idle names nobody: its own record, less the usual delay.
                on(1, ev(250, 7, IN)),
                on(1, ev(300, 7, PREEMPTED)),
            ],
            300,
        );
        let t = threads.iter().find(|t| t.tid == 7).unwrap();
        // Waiting 0..10, 100..130, 200..250 (no delay learnt on CPU 1 yet).
        assert_eq!(t.runq, 10 + 30 + 50, "{t:?}");
        assert_eq!(t.on_cpu, 90 + 70 + 50, "{t:?}");
        let mut tl = Timeline::default();
        for e in [
            born(0, 7),
            ev(10, 99, handover(7)),
            ev(14, 7, IN),
            ev(20, 7, PREEMPTED),
            ev(30, 99, handover(7)),
            ev(36, 7, IN),
            ev(40, 7, PREEMPTED),
            ev(100, 7, IN), // none named it: moved back by the median delay, 6
        ] {
            tl.feed(&e);
        }
        assert_eq!(tl.switch_delay(0), 6);
        let (_, threads) = tl.close(100);
        assert_eq!(threads[0].runq, 10 + 10 + 54, "{:?}", threads[0]);
    }

    #[test]
    fn a_blocking_switch_out_whose_sample_was_lost_still_blocks() {
        let (eps, threads) = run(
            &[
                born(0, 7),
                ev(0, 7, IN),
                ev(10, 7, OUT),
                ev(30, 9, wake(7)),
                ev(35, 7, IN),
            ],
            40,
        );
        assert_eq!(
            (threads[0].on_cpu, threads[0].blocked, threads[0].runq),
            (15, 20, 5)
        );
        assert_eq!(eps[0].kernel_chain, u32::MAX, "no chains");
    }

    #[test]
    fn an_exiting_threads_last_switch_is_its_exit_not_a_wait() {
        let dead = SchedEvent::Blocked {
            state: 0x20,
            kernel_chain: 0,
            user_chain: 0,
            next_tid: 0,
        };
        let (eps, threads) = run(&[born(0, 7), ev(0, 7, IN), ev(10, 7, dead)], 100);
        assert!(eps.is_empty());
        assert_eq!((threads[0].on_cpu, threads[0].end), (10, Some(10)));
    }
}
