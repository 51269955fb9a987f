//! Waits followed across processes: a worker's wait that a thread of a server ended (a client
//! blocked in `poll` until its PostgreSQL backend answered) is charged to what that thread was
//! doing — its CPU, its wait for a CPU, or its own waits, each followed in turn when another
//! server thread ended them — instead of stopping at "the socket's other end". This is the
//! wait-for graph of wPerf (Zhou et al., OSDI '18), with its cycles cut: a server thread's
//! waits that a worker ended (a backend idle until its client's next query) or that a thread
//! already on the chain ended are not part of what the worker waited for.
//!
//! What is charged: a followed thread's time on a CPU and waiting for one over the window (exact,
//! from its counters), and its waits **inside** the waits it ended itself ([`Windows`]: the union
//! of those waits' intervals; each of its waits by its overlap), shared out over the worker waits
//! it ended in proportion. Its waits outside them — jbd2 idle in `kjournald2` until the next
//! commit, a pool thread idle between requests — are no part of any worker's wait. Both sides are
//! sampled (1 in k episodes each), so a thread's overlap is scaled up by its windows' own
//! sampling ([`Windows::scale`]) and held to its exact blocked time. Chains stop after
//! [`MAX_DEPTH`] followed threads.

use std::collections::{HashMap, HashSet};

use super::classify::Cause;
use super::wake::WakeCause;

/// Server threads a chain passes through at most.
pub(crate) const MAX_DEPTH: usize = 3;

/// Where a followed wait ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum End {
    /// The server thread ran on a CPU.
    Cpu,
    /// It waited for a CPU.
    RunQueue,
    /// It waited itself: its wait's cause and what ended it.
    Wait { cause: Cause, woken: WakeCause },
}

/// A share of a worker's wait: the server thread's name (`comm`) where the chain ended, the
/// end, its representative episode (pid, kernel chain, user chain) where it is a wait, and the
/// share.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    pub server: String,
    /// The thread is a kernel thread (jbd2, a kworker), not a server's.
    pub kernel_thread: bool,
    pub end: End,
    pub longest: Option<(u32, u32, u32)>,
    pub share: f64,
}

/// One group of a server thread's waits: their cause, what ended them, the thread whose
/// wake-up it was (followed only where that thread ended it itself:
/// [`WakeCause::by_the_waker`]).
type WaitKey = (Cause, WakeCause, Option<u32>);

#[derive(Debug, Default)]
struct Waits {
    ns: f64,
    /// The longest episode's (pid, kernel chain, user chain) and its length.
    longest: (u32, u32, u32),
    max: u64,
}

#[derive(Debug, Default)]
struct ServerThread {
    comm: String,
    kernel_thread: bool,
    /// Its window's time on a CPU, waiting for one, and blocked (exact).
    on_cpu: u64,
    runq: u64,
    blocked: u64,
    /// It ended a wait of a traced thread itself in the window (it served).
    served: bool,
    /// Its blocked time inside the waits it ended, every wait counted (those cut from chains
    /// too): held to `blocked`.
    blocked_inside: f64,
    waits: HashMap<WaitKey, Waits>,
}

/// The waits each followed thread ended itself, as intervals: a followed thread's waits are
/// charged only inside them.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    by_thread: HashMap<u32, Vec<(u64, u64)>>,
    /// Per thread: the blocked time its windows' episodes stand for, and their own.
    sampled: HashMap<u32, (f64, f64)>,
}

impl Windows {
    /// A wait `[begin, end)` that thread `waker` ended itself, standing for `stands_for` ns
    /// of blocked time (more than its own length where episodes were sampled).
    pub(crate) fn add(&mut self, waker: u32, begin: u64, end: u64, stands_for: u64) {
        if end > begin {
            self.by_thread.entry(waker).or_default().push((begin, end));
            let s = self.sampled.entry(waker).or_default();
            s.0 += stands_for as f64;
            s.1 += (end - begin) as f64;
        }
    }

    /// How many times the waits `tid` ended stand for their recorded length: 1 when every
    /// episode was recorded, about k when 1 in k was.
    pub(crate) fn scale(&self, tid: u32) -> f64 {
        match self.sampled.get(&tid) {
            Some(&(stands, own)) if own > 0.0 => (stands / own).max(1.0),
            _ => 1.0,
        }
    }

    /// Merges each thread's intervals into their union, sorted.
    pub(crate) fn merged(mut self) -> Self {
        for v in self.by_thread.values_mut() {
            v.sort_unstable();
            let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
            for &(b, e) in v.iter() {
                match out.last_mut() {
                    Some(last) if b <= last.1 => last.1 = last.1.max(e),
                    _ => out.push((b, e)),
                }
            }
            *v = out;
        }
        self
    }

    /// The length of `tid`'s union (after [`Self::merged`]).
    pub(crate) fn length(&self, tid: u32) -> u64 {
        self.by_thread
            .get(&tid)
            .map_or(0, |v| v.iter().map(|(b, e)| e - b).sum())
    }

    /// How much of `[begin, end)` lies inside `tid`'s union (after [`Self::merged`]).
    pub(crate) fn overlap(&self, tid: u32, begin: u64, end: u64) -> u64 {
        let Some(v) = self.by_thread.get(&tid) else {
            return 0;
        };
        let first = v.partition_point(|&(_, e)| e <= begin);
        v[first..]
            .iter()
            .take_while(|&&(b, _)| b < end)
            .map(|&(b, e)| e.min(end).saturating_sub(b.max(begin)))
            .sum()
    }
}

/// The server threads of a trial and what they did inside the window.
#[derive(Debug, Default)]
pub(crate) struct ServerThreads {
    threads: HashMap<u32, ServerThread>,
}

impl ServerThreads {
    /// A followed thread's life inside the window: its name and whether a kernel thread, its
    /// time on a CPU, waiting for one and blocked, and whether it ended a traced thread's wait
    /// itself ([`Windows::length`] above 0).
    pub(crate) fn add_life(
        &mut self,
        tid: u32,
        (comm, kernel): (&str, bool),
        (on_cpu, runq, blocked): (u64, u64, u64),
        served: bool,
    ) {
        let t = self.threads.entry(tid).or_default();
        t.comm = comm.to_string();
        t.kernel_thread = kernel;
        t.on_cpu += on_cpu;
        t.runq += runq;
        t.blocked += blocked;
        t.served |= served;
    }

    /// One of a followed thread's waits: `ns` of blocked time it stands for inside the waits
    /// the thread ended ([`Windows::overlap`], scaled by the estimator and
    /// [`Windows::scale`]), its cause, what
    /// ended it and which thread did, and its episode's (pid, kernel chain, user chain) and
    /// length.
    pub(crate) fn add_wait(
        &mut self,
        tid: u32,
        (cause, woken, waker): WaitKey,
        ns: f64,
        (episode, length): ((u32, u32, u32), u64),
    ) {
        if ns <= 0.0 {
            return;
        }
        let t = self.threads.entry(tid).or_default();
        t.blocked_inside += ns;
        let w = t.waits.entry((cause, woken, waker)).or_default();
        w.ns += ns;
        if length >= w.max {
            w.max = length;
            w.longest = episode;
        }
    }

    /// Followed thread `tid`'s CPU in the window where it ended a traced thread's wait itself
    /// (it served); 0 where it ended none (its CPU was background work).
    pub(crate) fn cpu_serving(&self, tid: u32) -> u64 {
        self.threads
            .get(&tid)
            .map_or(0, |t| if t.served { t.on_cpu } else { 0 })
    }

    /// Whether `tid` is a server thread.
    pub(crate) fn contains(&self, tid: u32) -> bool {
        self.threads.contains_key(&tid)
    }

    /// What a worker's wait ended by server thread `tid` was spent on, by share (adding up to
    /// 1); empty when the thread did nothing that can be told (no time in the window).
    /// `is_worker` says which threads are the command's workers (their waking a server thread
    /// ends the chain there: the server was waiting for them).
    pub(crate) fn follow(&self, tid: u32, is_worker: &dyn Fn(u32) -> bool) -> Vec<Reached> {
        let mut out = Vec::new();
        let mut on_chain = HashSet::from([tid]);
        self.follow_from(tid, 1.0, 1, &mut on_chain, is_worker, &mut out);
        // One entry per end.
        let mut merged: Vec<Reached> = Vec::new();
        for r in out {
            match merged.iter_mut().find(|m| {
                m.server == r.server && m.kernel_thread == r.kernel_thread && m.end == r.end
            }) {
                Some(m) => m.share += r.share,
                None => merged.push(r),
            }
        }
        merged
    }

    fn follow_from(
        &self,
        tid: u32,
        weight: f64,
        depth: usize,
        on_chain: &mut HashSet<u32>,
        is_worker: &dyn Fn(u32) -> bool,
        out: &mut Vec<Reached>,
    ) {
        let Some(t) = self.threads.get(&tid) else {
            return;
        };
        let counted: Vec<(&WaitKey, &Waits)> = t
            .waits
            .iter()
            .filter(|((_, _, waker), _)| {
                !waker.is_some_and(|w| is_worker(w) || (on_chain.contains(&w) && w != tid))
            })
            .collect();
        // Its waits inside the waits it ended, held to its blocked time (the scaled overlap
        // of two samples can pass it).
        let held = match t.blocked_inside {
            b if b > t.blocked as f64 && t.blocked > 0 => t.blocked as f64 / b,
            _ => 1.0,
        };
        let (on_cpu, runq) = (t.on_cpu as f64, t.runq as f64);
        let total = on_cpu + runq + held * counted.iter().map(|(_, w)| w.ns).sum::<f64>();
        if total <= 0.0 {
            return;
        }
        let reached = |end: End, longest, share: f64| Reached {
            server: t.comm.clone(),
            kernel_thread: t.kernel_thread,
            end,
            longest,
            share,
        };
        if on_cpu > 0.0 {
            out.push(reached(End::Cpu, None, weight * on_cpu / total));
        }
        if runq > 0.0 {
            out.push(reached(End::RunQueue, None, weight * runq / total));
        }
        for ((cause, woken, waker), w) in counted {
            let share = weight * held * w.ns / total;
            let next = waker.filter(|&n| {
                woken.by_the_waker()
                    && n != tid
                    && depth < MAX_DEPTH
                    && self.threads.contains_key(&n)
                    && !on_chain.contains(&n)
            });
            match next {
                Some(n) => {
                    let before = out.len();
                    on_chain.insert(n);
                    self.follow_from(n, share, depth + 1, on_chain, is_worker, out);
                    on_chain.remove(&n);
                    if out.len() > before {
                        continue;
                    }
                    out.push(reached(
                        End::Wait {
                            cause: cause.clone(),
                            woken: woken.clone(),
                        },
                        Some(w.longest),
                        share,
                    ));
                }
                None => out.push(reached(
                    End::Wait {
                        cause: cause.clone(),
                        woken: woken.clone(),
                    },
                    Some(w.longest),
                    share,
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(object: &str) -> Cause {
        Cause {
            kind: "io".into(),
            object: object.into(),
            caller: String::new(),
        }
    }

    fn wait(s: &mut ServerThreads, tid: u32, object: &str, waker: Option<u32>, ns: f64) {
        let woken = match waker {
            Some(_) => WakeCause::Socket,
            None => WakeCause::Journal,
        };
        s.add_wait(
            tid,
            (cause(object), woken, waker),
            ns,
            ((tid, 0, 0), ns as u64),
        );
    }

    #[test]
    fn a_backends_time_is_shared_out_and_its_wait_for_the_client_is_left_out() {
        let mut s = ServerThreads::default();
        // Inside its client's waits: 600 ns in fdatasync, 100 in a wait its client ended.
        s.add_life(10, ("postgres", false), (300, 100, 6_000), true);
        wait(&mut s, 10, "fdatasync", None, 600.0);
        // Idle until its client (worker 1) sent the next query: not what the client waited for.
        wait(&mut s, 10, "recv", Some(1), 100.0);
        let reached = s.follow(10, &|t| t == 1);
        let share = |e: &End| reached.iter().find(|r| &r.end == e).map(|r| r.share);
        assert_eq!(share(&End::Cpu), Some(0.3));
        assert_eq!(share(&End::RunQueue), Some(0.1));
        let fsync = End::Wait {
            cause: cause("fdatasync"),
            woken: WakeCause::Journal,
        };
        assert_eq!(share(&fsync), Some(0.6));
        assert_eq!(reached.len(), 3);
        assert!(reached.iter().all(|r| r.server == "postgres"));
    }

    #[test]
    fn a_wait_another_server_thread_ended_is_followed_into_it_and_cycles_are_cut() {
        let mut s = ServerThreads::default();
        // Backend 10: half CPU, half waiting for backend 11's lock.
        s.add_life(10, ("postgres", false), (500, 0, 500), true);
        wait(&mut s, 10, "semop", Some(11), 500.0);
        // Backend 11: all in fdatasync, and a wait ended by 10 (a cycle back).
        s.add_life(11, ("postgres", false), (0, 0, 600), true);
        wait(&mut s, 11, "fdatasync", None, 300.0);
        wait(&mut s, 11, "semop", Some(10), 300.0);
        let reached = s.follow(10, &|_| false);
        let total: f64 = reached.iter().map(|r| r.share).sum();
        assert!((total - 1.0).abs() < 1e-9, "{reached:?}");
        let fsync = reached
            .iter()
            .find(|r| {
                r.end
                    == End::Wait {
                        cause: cause("fdatasync"),
                        woken: WakeCause::Journal,
                    }
            })
            .unwrap();
        // 11's own: its wait ended by 10 is on the chain already, so all of 11 is fdatasync.
        assert!((fsync.share - 0.5).abs() < 1e-9, "{reached:?}");
        assert!(
            reached
                .iter()
                .all(|r| !matches!(&r.end, End::Wait { cause, .. } if cause.object == "semop"))
        );
    }

    #[test]
    fn a_thread_that_did_nothing_in_the_window_reaches_nothing() {
        let mut s = ServerThreads::default();
        s.add_life(10, ("postgres", false), (0, 0, 0), false);
        assert!(s.follow(10, &|_| false).is_empty());
        assert!(s.follow(99, &|_| false).is_empty());
    }

    #[test]
    fn windows_merge_overlapping_waits_and_measure_what_lies_inside() {
        let mut w = Windows::default();
        w.add(7, 100, 200, 2_000);
        w.add(7, 150, 300, 3_000);
        w.add(7, 500, 600, 2_000);
        w.add(7, 50, 50, 0);
        let w = w.merged();
        assert_eq!(w.length(7), 300);
        assert_eq!(w.overlap(7, 0, 1_000), 300);
        assert_eq!(w.overlap(7, 250, 550), 100);
        assert_eq!(w.overlap(7, 300, 500), 0);
        assert_eq!(w.overlap(8, 0, 1_000), 0);
        // Sampled 1 in 20: the waits stand for 20 times their length.
        assert!((w.scale(7) - 20.0).abs() < 1e-9);
        assert_eq!(w.scale(8), 1.0);
    }

    #[test]
    fn a_kernel_threads_idle_time_outside_the_waits_it_ended_is_no_part_of_them() {
        // jbd2: 300 µs on a CPU, 10 ms blocked in the window, most of it idle in kjournald2
        // (woken by its timer) outside its clients' fsyncs; inside them 600 µs of its commit's I/O.
        let mut s = ServerThreads::default();
        s.add_life(
            20,
            ("jbd2/loop1-8", true),
            (300_000, 100_000, 10_000_000),
            true,
        );
        wait(&mut s, 20, "io_schedule", None, 600_000.0);
        let reached = s.follow(20, &|_| false);
        assert_eq!(reached.len(), 3, "{reached:?}");
        let io = reached
            .iter()
            .find(|r| matches!(&r.end, End::Wait { .. }))
            .unwrap();
        assert!((io.share - 0.6).abs() < 1e-9, "{reached:?}");
        assert!(reached.iter().all(|r| r.kernel_thread));
        assert_eq!(s.cpu_serving(20), 300_000);
    }

    #[test]
    fn overlaps_scaled_past_the_threads_blocked_time_are_held_to_it() {
        let mut s = ServerThreads::default();
        s.add_life(20, ("jbd2/loop1-8", true), (100, 0, 300), true);
        wait(&mut s, 20, "io_schedule", None, 900.0);
        let reached = s.follow(20, &|_| false);
        let io = reached
            .iter()
            .find(|r| matches!(&r.end, End::Wait { .. }))
            .unwrap();
        assert!((io.share - 0.75).abs() < 1e-9, "{reached:?}");
    }
}
