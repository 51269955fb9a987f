//! The records and sums of the in-kernel off-CPU accounting (`bpf/offcpu.bpf.c`), decoded, and
//! a trace's sampled episodes and thread lives assembled from them ([`SampledEpisodes`],
//! [`window_life`]).
//!
//! The layouts are the C structs of `offcpu.bpf.c` (`begin_rec`, `end_rec`, `exit_rec`,
//! `struct thread`), little-endian, naturally aligned; change both together. Pure: no system
//! calls, tested on synthetic records.

use std::collections::HashMap;

use crate::offcpu_events::{BlockedEpisode, ThreadLife, Waker};

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
const EXIT_SIZE: usize = 80;
/// `waker_tid` of an END written at the switch-in: no wake-up was seen.
const NO_WAKER: u32 = u32::MAX;

/// The `stats` array's slots (`STAT_*`), summed over the CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplingTally {
    /// Blocking switches of traced threads: every episode, sampled or not.
    pub blocking_switches: u64,
    /// Of them, the episodes whose call chains were recorded (a BEGIN record written).
    pub sampled: u64,
    /// Episodes picked for a chain that the ring buffer had no room for.
    pub begin_lost: u64,
    /// Wake-ups of sampled episodes the ring buffer had no room for (the episode then ends at
    /// the end of the trace, and is counted unwoken).
    pub end_lost: u64,
    /// Thread exits the ring buffer had no room for (the thread's sums are lost).
    pub exit_lost: u64,
    /// Threads created by traced ones but not traced: the kernel's table was full.
    pub threads_untraced: u64,
    /// Sampled episodes whose user stack copy was shorter than [`STACK_BYTES`] (the stack's
    /// top was near).
    pub short_stacks: u64,
}

impl SamplingTally {
    /// From the per-CPU `stats` slots, summed.
    pub(crate) fn from_slots(slots: &[u64]) -> SamplingTally {
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        SamplingTally {
            blocking_switches: at(0),
            sampled: at(1),
            begin_lost: at(2),
            end_lost: at(3),
            exit_lost: at(4),
            threads_untraced: at(5),
            short_stacks: at(6),
        }
    }

    /// Records the kernel could not write (BEGIN, END and EXIT together).
    pub fn lost(&self) -> u64 {
        self.begin_lost + self.end_lost + self.exit_lost
    }
}

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
}

/// A traced thread's exit, with its sums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exit {
    pub sums: ThreadSums,
    pub tid: u32,
    pub end: u64,
    pub comm: String,
}

/// A decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record<'a> {
    Begin(Begin<'a>),
    End(End),
    Exit(Exit),
}

/// A thread's sums (the `threads` map's value, `struct thread`), as read from the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct ThreadSums {
    pub pid: u32,
    pub parent: u32,
    pub begin: u64,
    /// Start of the current state.
    pub since: u64,
    pub on_cpu: u64,
    pub runq: u64,
    pub blocked: u64,
    pub episodes: u64,
    /// 1 running, 2 runnable, 3 blocked.
    pub state: u32,
    pub sampled: u32,
}

impl ThreadSums {
    /// The sums with the current state's span closed at `at` (nothing added when the state
    /// began later).
    pub(crate) fn closed_at(mut self, at: u64) -> ThreadSums {
        let d = at.saturating_sub(self.since);
        match self.state {
            1 => self.on_cpu += d,
            2 => self.runq += d,
            3 => self.blocked += d,
            _ => {}
        }
        self.since = self.since.max(at);
        self
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Frames from a `bpf_get_stack` result: `bytes` (negative: an error, no frames) of the
/// `frames` words at `at`.
fn frames(b: &[u8], at: usize, max: usize, bytes: i32) -> Vec<u64> {
    let n = usize::try_from(bytes).unwrap_or(0) / 8;
    (0..n.min(max)).map(|i| u64_at(b, at + 8 * i)).collect()
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
            }))
        }
        3 if b.len() >= EXIT_SIZE => {
            let comm = &b[64..80];
            let len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
            Some(Record::Exit(Exit {
                tid: u32_at(b, 4),
                end: u64_at(b, 24),
                comm: String::from_utf8_lossy(&comm[..len]).into_owned(),
                sums: ThreadSums {
                    pid: u32_at(b, 8),
                    parent: u32_at(b, 12),
                    begin: u64_at(b, 16),
                    since: u64_at(b, 24),
                    on_cpu: u64_at(b, 32),
                    runq: u64_at(b, 40),
                    blocked: u64_at(b, 48),
                    episodes: u64_at(b, 56),
                    state: 0,
                    sampled: 0,
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
            end: e.time,
            woken: e.waker.is_some(),
            waker: e.waker.as_ref().map(|&(pid, tid, _)| Waker {
                pid,
                tid,
                chain: waker_chain,
            }),
            kernel_chain: o.kernel_chain,
            user_chain: o.user_chain,
            weight: o.weight,
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

/// Thread `tid`'s life inside `[from, until]`: its sums at the end (`at_end`, closed at
/// `until` or at its exit) less those at `from` (`at_from`, closed at `from`; `None` when the
/// thread began after it). `None` for a thread that exited before `from`.
pub(crate) fn window_life(
    tid: u32,
    at_end: &ThreadSums,
    end: Option<u64>,
    at_from: Option<&ThreadSums>,
    from: u64,
) -> Option<ThreadLife> {
    if end.is_some_and(|e| e < from) {
        return None;
    }
    let base = at_from.copied().unwrap_or_default();
    Some(ThreadLife {
        pid: at_end.pid,
        tid,
        parent: (at_end.parent != 0).then_some(at_end.parent),
        comm: String::new(),
        begin: at_end.begin.max(from),
        end,
        on_cpu: at_end.on_cpu.saturating_sub(base.on_cpu),
        runq: at_end.runq.saturating_sub(base.runq),
        blocked: at_end.blocked.saturating_sub(base.blocked),
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
    fn a_threads_life_in_the_window_is_its_sums_at_the_end_less_those_at_the_start() {
        let running_since_100 = ThreadSums {
            pid: 5,
            parent: 4,
            begin: 50,
            since: 100,
            on_cpu: 30,
            runq: 10,
            blocked: 10,
            state: 1,
            ..ThreadSums::default()
        };
        // At 200 it has run 100 more; at the end (1000) it has 500 on CPU, 100 runq, 400 blocked.
        let at_from = running_since_100.closed_at(200);
        assert_eq!(at_from.on_cpu, 130);
        let at_end = ThreadSums {
            on_cpu: 500,
            runq: 100,
            blocked: 400,
            ..running_since_100
        };
        let life = window_life(6, &at_end, None, Some(&at_from), 200).expect("alive");
        assert_eq!((life.on_cpu, life.runq, life.blocked), (370, 90, 390));
        assert_eq!((life.begin, life.parent), (200, Some(4)));
        assert_eq!(window_life(6, &at_end, Some(150), None, 200), None);
    }

    #[test]
    fn task_idle_is_reported_as_idle_and_sleeps_keep_their_bits() {
        assert_eq!(report_state(0x402), 0x80);
        assert_eq!(report_state(1), 1);
        assert_eq!(report_state(2), 2);
    }
}
