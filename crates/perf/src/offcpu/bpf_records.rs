//! The records and sums of the in-kernel off-CPU accounting (`bpf/offcpu.bpf.c`), decoded, and
//! a trace's sampled episodes and thread lives assembled from them ([`SampledEpisodes`],
//! [`window_life`]).
//!
//! The layouts are the C structs of `offcpu.bpf.c` (`begin_rec`, `end_rec`, `exit_rec`,
//! `long_rec`, `struct thread`), little-endian, naturally aligned; change both together. Pure: no system
//! calls, tested on synthetic records.

use std::collections::HashMap;

use crate::bpf::load::{frames, u32_at, u64_at};
use crate::bpf::self_cost::ProgramRuns;
use crate::offcpu::events::{BlockedEpisode, ThreadLife, Waker};

/// Kernel frames in a BEGIN record (`KERNEL_FRAMES`).
const KERNEL_FRAMES: usize = 48;
/// User frame-pointer frames in a BEGIN record (`USER_FRAMES`).
const USER_FRAMES: usize = 32;
/// Bytes of user stack a BEGIN record holds (`STACK_BYTES`).
pub(crate) const STACK_BYTES: usize = 4096;
/// Kernel frames of the waker in an END record (`WAKER_FRAMES`).
const WAKER_FRAMES: usize = 32;
const BEGIN_SIZE: usize = 72 + 8 * KERNEL_FRAMES + 8 * USER_FRAMES + STACK_BYTES;
const END_SIZE: usize = 32 + 8 * WAKER_FRAMES;
/// What one sampled episode writes at most: its BEGIN and its END.
pub(crate) const EPISODE_BYTES: usize = BEGIN_SIZE + END_SIZE;
const EXIT_SIZE: usize = 112;
const LONG_SIZE: usize = 48 + 8 * KERNEL_FRAMES + 8 * WAKER_FRAMES;
/// `waker_tid` of an END written at the switch-in: no wake-up was seen.
const NO_WAKER: u32 = u32::MAX;

/// A sampled blocking switch: the thread, its chains and its user stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Begin<'a> {
    pub tid: u32,
    pub pid: u32,
    /// Sampled 1 in `weight`: the episode stands for `weight` alike.
    pub weight: u32,
    pub time: u64,
    /// The raw `prev_state` (`__state`).
    pub state: u64,
    pub regs: perf_read::unwind::UserRegs,
    /// Kernel frames, innermost first (the BPF program's own frames included).
    pub kernel: Vec<u64>,
    /// User frames by frame pointer, innermost first.
    pub user: Vec<u64>,
    /// The top of the user stack from `regs.sp`.
    pub stack: &'a [u8],
}

/// The end of a sampled episode: its wake-up (or switch-in, when no wake-up was seen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    pub tid: u32,
    pub time: u64,
    /// The waking thread, its process, and its kernel chain; `None` at a switch-in.
    pub waker: Option<(u32, u32, Vec<u64>)>,
    /// The episode lasted 50 ms or more: every one that long is recorded (a LONG record when
    /// not sampled), so this one stands for itself alone, whatever its sampling weight.
    pub long_wait: bool,
}

/// An unsampled episode of 50 ms or more, whole: its thread's kernel chain where it slept (no
/// user chain: the kernel reads it from another thread), and its waker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Long {
    pub tid: u32,
    pub pid: u32,
    /// The raw `prev_state` of its blocking switch.
    pub state: u64,
    pub begin: u64,
    pub end: u64,
    /// Kernel frames, innermost first.
    pub kernel: Vec<u64>,
    /// The waking thread, its process, and its kernel chain; `None` at a switch-in.
    pub waker: Option<(u32, u32, Vec<u64>)>,
}

/// A traced thread's exit, with its counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exit {
    pub thread: ThreadEntry,
    pub tid: u32,
    pub end: u64,
    pub counters: Counters,
    pub comm: String,
}

/// A thread's CPU time and wait for a CPU as the kernel accounts them (`se.sum_exec_runtime`,
/// `sched_info.run_delay`: the first two fields of `/proc/PID/task/TID/schedstat`), and its
/// wall-clock time on a CPU from the program's switch times (`wall`), ns. `wall` less `on_cpu`
/// is what the hypervisor took while the thread ran (steal): the kernel leaves it out of
/// `sum_exec_runtime` (`PARAVIRT_TIME_ACCOUNTING`), and out of `run_delay`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub on_cpu: u64,
    pub run_delay: u64,
    pub wall: u64,
    /// Its entry's `prog_runs` and `prog_walk_ns` (the tracer's own programs in its context).
    pub prog_runs: u64,
    pub prog_walk_ns: u64,
}

impl Counters {
    /// Parses a `schedstat` line (`run_ns wait_ns slices`).
    pub(crate) fn parse_schedstat(text: &str) -> Option<Counters> {
        let mut f = text.split_whitespace().map(str::parse::<u64>);
        Some(Counters {
            on_cpu: f.next()?.ok()?,
            run_delay: f.next()?.ok()?,
            ..Counters::default()
        })
    }

    /// Thread `tid` of process `pid`'s counters now; `None` once it is gone.
    ///
    /// `schedstat` shows `sum_exec_runtime` as the scheduler last brought it up to date (at a
    /// tick or a switch), so a running thread's reads lag by up to a tick: the calling thread,
    /// running by definition, reads its CPU time from `CLOCK_THREAD_CPUTIME_ID` instead, which
    /// brings it up to date (read from schedstat at a window's start, the tracing thread's CPU
    /// time in a 10 ms window outgrew its life, and its blocked time read 0).
    pub(crate) fn read(pid: u32, tid: u32) -> Option<Counters> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
        let mut counters = Counters::parse_schedstat(&text)?;
        if tid == sys::gettid() as u32 {
            counters.on_cpu = sys::thread_cpu_time();
        }
        Some(counters)
    }

    /// The counters as at `at`, with the wait for a CPU in progress since `queued_at` (0:
    /// none) counted: the kernel adds a wait to `run_delay` only as it ends, so a thread
    /// waiting at a window's edge would carry the part before the edge into the window (seen:
    /// a pipe_pingpong pair that waited ~95 ms in the warm-up read 2.3x its run-queue wait).
    /// The counters with `entry`'s wall-clock time on a CPU as at `at` and its programs' runs.
    pub(crate) fn with_entry(mut self, entry: &ThreadEntry, at: u64) -> Counters {
        self.wall = entry.wall_at(at);
        self.prog_runs = entry.prog_runs;
        self.prog_walk_ns = entry.prog_walk_ns;
        self
    }

    pub(crate) fn with_wait_in_progress(mut self, queued_at: u64, at: u64) -> Counters {
        if queued_at != 0 {
            self.run_delay += at.saturating_sub(queued_at);
        }
        self
    }
}

/// A decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    Begin(Begin<'a>),
    End(End),
    Exit(Exit),
    Long(Long),
}

/// A traced thread as the kernel's `threads` map holds it (`struct thread`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct ThreadEntry {
    pub pid: u32,
    /// The thread that created it (0: the first, put there by user space).
    pub parent: u32,
    /// Its creation (or the trace's start), CLOCK_MONOTONIC ns.
    pub begin: u64,
    /// Its blocking switches.
    pub episodes: u64,
    /// Since when it waits for a CPU (woken or preempted), CLOCK_MONOTONIC ns; 0 when it does
    /// not.
    pub queued_at: u64,
    pub sampled: u32,
    /// The `prev_state` of its blocking switch, while `blocked_at` is set.
    pub blocked_state: u32,
    /// Its switch-ins, and the sampling interval fixed at the last one.
    pub ins: u64,
    pub k: u32,
    /// 1 while a waking keeps an END for its next blocking switch (BPF's own).
    pub early_wake: u32,
    /// Its blocking switch, until its waking or switch-in took it (0: not blocked).
    pub blocked_at: u64,
    /// The switch-in that gave it the CPU it is on, CLOCK_MONOTONIC ns; 0 when it is not on one.
    pub on_cpu_since: u64,
    /// Its wall-clock time on a CPU in the stints ended, ns.
    pub wall_on_cpu: u64,
    /// Its last switch-out, CLOCK_MONOTONIC ns (0: none yet; BPF's own).
    pub out_at: u64,
    /// The tracer's programs' runs in its context that walked no chain (their time estimated
    /// by the picked runs' mean: [`ProgramRuns`](crate::ProgramRuns)).
    pub prog_runs: u64,
    /// The time of those that walked one (each timed), ns.
    pub prog_walk_ns: u64,
    /// Its CPU time and wait for a CPU when it began to be traced, for a thread already
    /// running then (a kernel thread traced as it woke a traced one); 0 for the others.
    pub base_on_cpu: u64,
    pub base_run_delay: u64,
}

/// [`ThreadEntry::parent`] of a kernel thread traced because it woke a traced thread.
pub(crate) const PARENT_KERNEL_WAKER: u32 = u32::MAX;

impl ThreadEntry {
    /// Its wall-clock time on a CPU as at `at`, the stint in progress included.
    pub(crate) fn wall_at(&self, at: u64) -> u64 {
        let stint = if self.on_cpu_since != 0 {
            at.saturating_sub(self.on_cpu_since)
        } else {
            0
        };
        self.wall_on_cpu + stint
    }
}

/// Decodes one ring buffer record; `None` for a record of unknown type or size.
pub(crate) fn decode(b: &[u8]) -> Option<Record<'_>> {
    if b.len() < 8 {
        return None;
    }
    match u32_at(b, 0) {
        1 if b.len() >= BEGIN_SIZE => {
            let stack_bytes = (u32_at(b, 64) as usize).min(STACK_BYTES);
            let user_at = 72 + 8 * KERNEL_FRAMES;
            let stack_at = user_at + 8 * USER_FRAMES;
            Some(Record::Begin(Begin {
                tid: u32_at(b, 4),
                pid: u32_at(b, 8),
                weight: u32_at(b, 12).max(1),
                time: u64_at(b, 16),
                state: u64_at(b, 24),
                regs: perf_read::unwind::UserRegs {
                    ip: u64_at(b, 32),
                    sp: u64_at(b, 40),
                    bp: u64_at(b, 48),
                },
                kernel: frames(b, 72, KERNEL_FRAMES, u32_at(b, 56) as i32),
                user: frames(b, user_at, USER_FRAMES, u32_at(b, 60) as i32),
                stack: &b[stack_at..stack_at + stack_bytes],
            }))
        }
        2 if b.len() >= END_SIZE => {
            let waker_tid = u32_at(b, 20);
            Some(Record::End(End {
                tid: u32_at(b, 4),
                time: u64_at(b, 8),
                waker: (waker_tid != NO_WAKER).then(|| {
                    (
                        u32_at(b, 16),
                        waker_tid,
                        frames(b, 32, WAKER_FRAMES, u32_at(b, 24) as i32),
                    )
                }),
                long_wait: u32_at(b, 28) != 0,
            }))
        }
        4 if b.len() >= LONG_SIZE => {
            let waker_tid = u32_at(b, 36);
            let waker_at = 48 + 8 * KERNEL_FRAMES;
            Some(Record::Long(Long {
                tid: u32_at(b, 4),
                pid: u32_at(b, 8),
                state: u64::from(u32_at(b, 12)),
                begin: u64_at(b, 16),
                end: u64_at(b, 24),
                kernel: frames(b, 48, KERNEL_FRAMES, u32_at(b, 40) as i32),
                waker: (waker_tid != NO_WAKER).then(|| {
                    (
                        u32_at(b, 32),
                        waker_tid,
                        frames(b, waker_at, WAKER_FRAMES, u32_at(b, 44) as i32),
                    )
                }),
            }))
        }
        3 if b.len() >= EXIT_SIZE => {
            let comm = &b[64..80];
            let len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
            Some(Record::Exit(Exit {
                tid: u32_at(b, 4),
                end: u64_at(b, 24),
                comm: String::from_utf8_lossy(&comm[..len]).into_owned(),
                thread: ThreadEntry {
                    pid: u32_at(b, 8),
                    parent: u32_at(b, 12),
                    begin: u64_at(b, 16),
                    episodes: u64_at(b, 48),
                    queued_at: 0,
                    sampled: 0,
                    blocked_state: 0,
                    ins: 0,
                    k: 0,
                    early_wake: 0,
                    blocked_at: 0,
                    on_cpu_since: 0,
                    wall_on_cpu: u64_at(b, 56),
                    out_at: 0,
                    prog_runs: u64_at(b, 80),
                    prog_walk_ns: u64_at(b, 88),
                    base_on_cpu: u64_at(b, 96),
                    base_run_delay: u64_at(b, 104),
                },
                counters: Counters {
                    on_cpu: u64_at(b, 32),
                    run_delay: u64_at(b, 40),
                    wall: u64_at(b, 56),
                    prog_runs: u64_at(b, 80),
                    prog_walk_ns: u64_at(b, 88),
                },
            }))
        }
        _ => None,
    }
}

/// The blocking `TASK_REPORT` bits of a raw `__state` (the perf tracepoint's `prev_state`):
/// the low seven, and `TASK_REPORT_IDLE` (0x80) for `TASK_IDLE` (uninterruptible, no load).
pub(crate) fn report_state(raw: u64) -> u64 {
    const TASK_UNINTERRUPTIBLE: u64 = 2;
    const TASK_NOLOAD: u64 = 0x400;
    if raw & (TASK_UNINTERRUPTIBLE | TASK_NOLOAD) == TASK_UNINTERRUPTIBLE | TASK_NOLOAD {
        0x80
    } else {
        raw & 0x7f
    }
}

/// An open sampled episode, its chains interned.
#[derive(Debug, Clone, Copy)]
struct OpenEpisode {
    pid: u32,
    begin: u64,
    state: u64,
    weight: u32,
    kernel_chain: u32,
    user_chain: u32,
}

/// Sampled episodes paired from BEGIN and END records (a thread's END follows its BEGIN in the
/// ring buffer: the kernel writes it later, from the wake-up).
#[derive(Debug, Default)]
pub(crate) struct SampledEpisodes {
    open: HashMap<u32, OpenEpisode>,
    /// Closed episodes, in the order they ended.
    pub(crate) episodes: Vec<BlockedEpisode>,
    /// ENDs without a BEGIN (their BEGIN's record was lost, or came before the trace).
    pub(crate) unpaired: u64,
}

impl SampledEpisodes {
    /// Opens thread `tid`'s sampled episode (a BEGIN), its chains already interned.
    pub(crate) fn begin(&mut self, b: &Begin<'_>, kernel_chain: u32, user_chain: u32) {
        let open = OpenEpisode {
            pid: b.pid,
            begin: b.time,
            state: report_state(b.state),
            weight: b.weight,
            kernel_chain,
            user_chain,
        };
        self.open.insert(b.tid, open);
    }

    /// Closes thread `e.tid`'s episode (an END), its waker's chain already interned.
    pub(crate) fn end(&mut self, e: &End, waker_chain: u32) {
        let Some(o) = self.open.remove(&e.tid) else {
            self.unpaired += 1;
            return;
        };
        self.episodes.push(BlockedEpisode {
            pid: o.pid,
            tid: e.tid,
            state: o.state,
            begin: o.begin,
            // Woken before its switch was traced (the END the waking kept), or while its BEGIN
            // was being written (its time is taken after the walks): an episode of no time.
            end: e.time.max(o.begin),
            woken: e.waker.is_some(),
            waker: e.waker.as_ref().map(|&(pid, tid, _)| Waker {
                pid,
                tid,
                chain: waker_chain,
            }),
            kernel_chain: o.kernel_chain,
            user_chain: o.user_chain,
            // Every episode this long is recorded (sampled, or as a LONG record): it stands for
            // itself alone.
            weight: if e.long_wait { 1 } else { o.weight },
        });
    }

    /// Adds an unsampled long episode (a LONG record), its chains already interned: it stands
    /// for itself alone, and has no user chain.
    pub(crate) fn long(&mut self, l: &Long, kernel_chain: u32, waker_chain: u32) {
        self.episodes.push(BlockedEpisode {
            pid: l.pid,
            tid: l.tid,
            state: report_state(l.state),
            begin: l.begin,
            end: l.end.max(l.begin),
            woken: l.waker.is_some(),
            waker: l.waker.as_ref().map(|&(pid, tid, _)| Waker {
                pid,
                tid,
                chain: waker_chain,
            }),
            kernel_chain,
            user_chain: u32::MAX,
            weight: 1,
        });
    }

    /// Every episode, those still open last (ending at `u64::MAX`, unwoken, as the perf
    /// tracer's are).
    pub(crate) fn close(mut self) -> Vec<BlockedEpisode> {
        let mut open: Vec<(u32, OpenEpisode)> = self.open.into_iter().collect();
        open.sort_by_key(|(tid, o)| (o.begin, *tid));
        for (tid, o) in open {
            self.episodes.push(BlockedEpisode {
                pid: o.pid,
                tid,
                state: o.state,
                begin: o.begin,
                end: u64::MAX,
                woken: false,
                waker: None,
                kernel_chain: o.kernel_chain,
                user_chain: o.user_chain,
                weight: o.weight,
            });
        }
        self.episodes
    }
}

/// Thread `tid`'s life inside the window `[from, until]`: from its creation (or `from`) to its
/// exit (or `until`), its time on a CPU and waiting for one the kernel's counters at that end
/// (`at_end`) less those at the start (`at_from`: `None` for a thread created since), stolen
/// its wall-clock time on a CPU beyond its CPU time, and blocked the rest. `None` for a thread
/// that exited before `from`.
pub(crate) fn window_life(
    tid: u32,
    entry: &ThreadEntry,
    end: Option<u64>,
    (from, until): (u64, u64),
    at_from: Option<&Counters>,
    at_end: &Counters,
    programs: &ProgramRuns,
) -> Option<ThreadLife> {
    if end.is_some_and(|e| e < from) {
        return None;
    }
    // A thread traced since before the window starts from its counters then; one traced since
    // (created, or a kernel thread added as it woke a traced one) from its counters then.
    let base = at_from.copied().unwrap_or(Counters {
        on_cpu: entry.base_on_cpu,
        run_delay: entry.base_run_delay,
        ..Counters::default()
    });
    let begin = entry.begin.max(from);
    let life = end.unwrap_or(until).min(until).saturating_sub(begin);
    let on_cpu = at_end.on_cpu.saturating_sub(base.on_cpu);
    let runq = at_end.run_delay.saturating_sub(base.run_delay);
    let rest = life.saturating_sub(on_cpu + runq);
    let stolen = at_end
        .wall
        .saturating_sub(base.wall)
        .saturating_sub(on_cpu)
        .min(rest);
    Some(ThreadLife {
        pid: entry.pid,
        tid,
        parent: (entry.parent != 0 && entry.parent != PARENT_KERNEL_WAKER).then_some(entry.parent),
        kernel_waker: entry.parent == PARENT_KERNEL_WAKER,
        comm: String::new(),
        begin,
        end,
        on_cpu,
        runq,
        stolen,
        blocked: rest - stolen,
        programs: programs.thread_ns(
            at_end.prog_runs.saturating_sub(base.prog_runs),
            at_end.prog_walk_ns.saturating_sub(base.prog_walk_ns),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put32(b: &mut [u8], o: usize, v: u32) {
        b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn put64(b: &mut [u8], o: usize, v: u64) {
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }

    fn begin_record(tid: u32, time: u64, weight: u32) -> Vec<u8> {
        let mut b = vec![0u8; BEGIN_SIZE];
        put32(&mut b, 0, 1);
        put32(&mut b, 4, tid);
        put32(&mut b, 8, 100);
        put32(&mut b, 12, weight);
        put64(&mut b, 16, time);
        put64(&mut b, 24, 1);
        put64(&mut b, 32, 0x4000);
        put64(&mut b, 40, 0x7ff0);
        put64(&mut b, 48, 0x7ff8);
        put32(&mut b, 56, 16); // two kernel frames
        put32(&mut b, 60, (-14i32) as u32); // no user frames (an error)
        put32(&mut b, 64, 256);
        put64(&mut b, 72, 0xffff_0001);
        put64(&mut b, 80, 0xffff_0002);
        b
    }

    fn end_record(tid: u32, time: u64, waker: Option<u32>) -> Vec<u8> {
        let mut b = vec![0u8; END_SIZE];
        put32(&mut b, 0, 2);
        put32(&mut b, 4, tid);
        put64(&mut b, 8, time);
        put32(&mut b, 16, 100);
        put32(&mut b, 20, waker.unwrap_or(NO_WAKER));
        put32(&mut b, 24, 8);
        put64(&mut b, 32, 0xffff_0009);
        b
    }

    #[test]
    fn a_begin_record_decodes_to_its_chains_registers_and_stack() {
        let raw = begin_record(7, 1_000, 16);
        let Some(Record::Begin(b)) = decode(&raw) else {
            panic!("not a BEGIN: {:?}", decode(&raw));
        };
        assert_eq!((b.tid, b.pid, b.weight, b.time), (7, 100, 16, 1_000));
        assert_eq!(b.kernel, vec![0xffff_0001, 0xffff_0002]);
        assert!(b.user.is_empty(), "a failed user stack walk has no frames");
        assert_eq!(b.stack.len(), 256);
        assert_eq!((b.regs.ip, b.regs.sp, b.regs.bp), (0x4000, 0x7ff0, 0x7ff8));
        assert_eq!(
            decode(&raw[..BEGIN_SIZE - 1]),
            None,
            "a short record is refused"
        );
    }

    #[test]
    fn every_long_episode_stands_for_itself_sampled_or_written_whole() {
        let mut s = SampledEpisodes::default();
        // A sampled episode (1 in 16) whose END says it lasted 50 ms or more.
        let begin = begin_record(7, 1_000, 16);
        let Some(Record::Begin(b)) = decode(&begin) else {
            panic!("BEGIN")
        };
        s.begin(&b, 0, 1);
        let mut end = end_record(7, 80_000_000, Some(9));
        put32(&mut end, 28, 1);
        let Some(Record::End(e)) = decode(&end) else {
            panic!("END")
        };
        assert!(e.long_wait);
        s.end(&e, 2);
        // An unsampled one, whole: its chain where it slept and its waker's.
        let mut raw = vec![0u8; LONG_SIZE];
        put32(&mut raw, 0, 4);
        put32(&mut raw, 4, 8);
        put32(&mut raw, 8, 100);
        put32(&mut raw, 12, 1);
        put64(&mut raw, 16, 2_000);
        put64(&mut raw, 24, 90_000_000);
        put32(&mut raw, 32, 100);
        put32(&mut raw, 36, 7);
        put32(&mut raw, 40, 8);
        put32(&mut raw, 44, 16);
        put64(&mut raw, 48, 0xffff_0003);
        let waker_at = 48 + 8 * KERNEL_FRAMES;
        put64(&mut raw, waker_at, 0xffff_0004);
        put64(&mut raw, waker_at + 8, 0xffff_0005);
        let Some(Record::Long(l)) = decode(&raw) else {
            panic!("not a LONG: {:?}", decode(&raw))
        };
        assert_eq!(
            (l.tid, l.pid, l.state, l.begin, l.end),
            (8, 100, 1, 2_000, 90_000_000)
        );
        assert_eq!(l.kernel, vec![0xffff_0003]);
        assert_eq!(l.waker, Some((100, 7, vec![0xffff_0004, 0xffff_0005])));
        assert_eq!(decode(&raw[..LONG_SIZE - 1]), None, "a short LONG");
        s.long(&l, 3, 4);
        let episodes = s.close();
        let weights: Vec<(u32, u32, bool)> = episodes
            .iter()
            .map(|e| (e.tid, e.weight, e.user_chain == u32::MAX))
            .collect();
        assert_eq!(weights, [(7, 1, false), (8, 1, true)]);
        assert_eq!(episodes[1].waker.map(|w| (w.tid, w.chain)), Some((7, 4)));
    }

    #[test]
    fn a_sampled_episode_runs_from_its_begin_to_its_wake_up_and_keeps_its_weight() {
        let mut s = SampledEpisodes::default();
        let raw = begin_record(7, 1_000, 16);
        let Some(Record::Begin(b)) = decode(&raw) else {
            panic!("BEGIN")
        };
        s.begin(&b, 0, 1);
        let Some(Record::End(woken)) = decode(&end_record(7, 4_000, Some(9))) else {
            panic!("END")
        };
        s.end(&woken, 2);
        let Some(Record::End(stray)) = decode(&end_record(8, 5_000, None)) else {
            panic!("END")
        };
        s.end(&stray, u32::MAX);
        assert_eq!(s.unpaired, 1);
        let raw = begin_record(7, 6_000, 16);
        let Some(Record::Begin(b)) = decode(&raw) else {
            panic!("BEGIN")
        };
        s.begin(&b, 0, 1);
        let episodes = s.close();
        assert_eq!(episodes.len(), 2);
        let e = episodes[0];
        assert_eq!(
            (e.tid, e.begin, e.end, e.weight, e.woken),
            (7, 1_000, 4_000, 16, true)
        );
        assert_eq!(e.waker.map(|w| (w.pid, w.tid, w.chain)), Some((100, 9, 2)));
        assert_eq!((episodes[1].end, episodes[1].woken), (u64::MAX, false));
    }

    #[test]
    fn a_threads_life_in_the_window_is_the_kernels_counters_across_it_and_blocked_the_rest() {
        let none = ProgramRuns::default();
        let entry = ThreadEntry {
            pid: 5,
            parent: 4,
            begin: 50,
            ..ThreadEntry::default()
        };
        // On a CPU for 500 ns of wall-clock time in the window, all of it CPU time.
        let at_from = Counters {
            on_cpu: 30,
            run_delay: 10,
            wall: 40,
            ..Counters::default()
        };
        let at_end = Counters {
            on_cpu: 530,
            run_delay: 110,
            wall: 540,
            ..Counters::default()
        };
        let life = window_life(
            6,
            &entry,
            None,
            (200, 1_200),
            Some(&at_from),
            &at_end,
            &none,
        )
        .expect("alive");
        assert_eq!(
            (life.on_cpu, life.runq, life.blocked, life.stolen),
            (500, 100, 400, 0)
        );
        assert_eq!(
            (life.begin, life.parent, life.life()),
            (200, Some(4), 1_000)
        );
        // Created inside the window, exited before its end: from creation to exit.
        let late = ThreadEntry {
            begin: 700,
            ..entry
        };
        let spent = Counters {
            on_cpu: 200,
            run_delay: 0,
            wall: 200,
            ..Counters::default()
        };
        let life = window_life(7, &late, Some(900), (200, 1_200), None, &spent, &none).unwrap();
        assert_eq!((life.on_cpu, life.blocked, life.end), (200, 0, Some(900)));
        assert_eq!(
            window_life(6, &entry, Some(150), (200, 1_200), None, &at_end, &none),
            None
        );
    }

    #[test]
    fn time_on_a_cpu_beyond_the_cpu_time_is_stolen_not_blocked() {
        let none = ProgramRuns::default();
        let entry = ThreadEntry {
            pid: 5,
            begin: 0,
            ..ThreadEntry::default()
        };
        // 1,000 ns in the window: 700 on a CPU by the switches' clock, of which the kernel
        // charged 550 as CPU time (the hypervisor took 150), 100 waiting for a CPU, 200 blocked.
        let at_from = Counters::default();
        let at_end = Counters {
            on_cpu: 550,
            run_delay: 100,
            wall: 700,
            ..Counters::default()
        };
        let life =
            window_life(6, &entry, None, (0, 1_000), Some(&at_from), &at_end, &none).unwrap();
        assert_eq!(
            (life.on_cpu, life.runq, life.stolen, life.blocked),
            (550, 100, 150, 200)
        );
        assert_eq!(life.life(), 1_000);
        // A clock skew at the edges never makes steal exceed what the counters leave.
        let skewed = Counters {
            wall: 2_000,
            ..at_end
        };
        let life =
            window_life(6, &entry, None, (0, 1_000), Some(&at_from), &skewed, &none).unwrap();
        assert_eq!((life.stolen, life.blocked), (350, 0));
        // The stint in progress counts up to the read.
        let running = ThreadEntry {
            on_cpu_since: 900,
            wall_on_cpu: 300,
            ..entry
        };
        assert_eq!((running.wall_at(1_000), entry.wall_at(1_000)), (400, 0));
    }

    #[test]
    fn a_threads_programs_are_its_walks_and_its_other_runs_at_the_windows_mean() {
        // In the window, the CPUs' picked runs took 150 ns each on average.
        let window = ProgramRuns {
            runs: 1_000,
            timed_runs: 60,
            timed_ns: 9_000,
            walk_runs: 10,
            walk_ns: 60_000,
            all_ns: 0,
        };
        let entry = ThreadEntry {
            pid: 5,
            ..ThreadEntry::default()
        };
        let at_from = Counters {
            prog_runs: 100,
            prog_walk_ns: 5_000,
            ..Counters::default()
        };
        let at_end = Counters {
            prog_runs: 300,
            prog_walk_ns: 35_000,
            ..Counters::default()
        };
        let life = window_life(
            6,
            &entry,
            None,
            (0, 1_000),
            Some(&at_from),
            &at_end,
            &window,
        )
        .unwrap();
        // 30,000 ns of walks and 200 other runs at 150 ns.
        assert_eq!(life.programs, 60_000);
        // Read at its exit: the record carries them.
        let mut b = vec![0u8; EXIT_SIZE];
        put32(&mut b, 0, 3);
        put32(&mut b, 4, 6);
        put64(&mut b, 80, 300);
        put64(&mut b, 88, 35_000);
        let Some(Record::Exit(x)) = decode(&b) else {
            panic!("an EXIT record");
        };
        assert_eq!(
            (x.counters.prog_runs, x.counters.prog_walk_ns),
            (300, 35_000)
        );
    }

    #[test]
    fn schedstat_gives_the_cpu_time_and_the_wait_for_a_cpu() {
        assert_eq!(
            Counters::parse_schedstat("123456 7890 42\n"),
            Some(Counters {
                on_cpu: 123_456,
                run_delay: 7_890,
                wall: 0,
                ..Counters::default()
            })
        );
        assert_eq!(Counters::parse_schedstat("12"), None);
        let c = Counters {
            on_cpu: 5,
            run_delay: 100,
            wall: 0,
            ..Counters::default()
        };
        assert_eq!(c.with_wait_in_progress(700, 1_000).run_delay, 400);
        assert_eq!(c.with_wait_in_progress(0, 1_000).run_delay, 100);
    }

    #[test]
    fn task_idle_is_reported_as_idle_and_sleeps_keep_their_bits() {
        assert_eq!(report_state(0x402), 0x80);
        assert_eq!(report_state(1), 1);
        assert_eq!(report_state(2), 2);
    }
}
