// SPDX-License-Identifier: GPL-2.0
// scalelab's in-kernel off-CPU tracing (issue 32), loaded by crates/perf/src/offcpu/bpf.rs.
//
// A thread's time is the kernel's own accounting: its CPU time (se.sum_exec_runtime) and its
// wait for a CPU (sched_info.run_delay), read here at its exit and from /proc/PID/task/TID/
// schedstat while it lives, so that on a CPU, waiting for one and blocked are the same figures
// as the trial's accounting (time stamped in this program's own hooks read 10% more run-queue
// wait than schedstat on pipe_pingpong: each hook runs after the kernel stamped the switch).
// This program keeps what the kernel does not: which threads are traced, when they began, their
// blocking switches counted, and the call chains of a sample of them. One in `k` (chosen per
// CPU from the last 100 ms's rate of blocking switches, so that about `samples_per_cpu_s` a
// second are kept) writes a BEGIN record with the kernel chain, the user frame-pointer chain,
// the user registers and a copy of the top of the user stack (unwound in user space with the
// binaries' .eh_frame); its waking an END record with the waker and the waker's kernel chain.
// A thread's exit writes an EXIT record with its counters.
//
// Traced threads: the one user space puts in `threads` (the thread that then creates the
// trial's tasks), and every thread and process created by a traced thread afterwards (as
// perf's `inherit`). Other tasks cost one hash lookup per switch and waking.
//
// The struct layouts below are the records user space decodes (bpf_offcpu_records.rs);
// change both together. Kernel structures are read through CO-RE (preserve_access_index):
// only the fields named here, relocated against the running kernel's BTF at load time.
#include <linux/types.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sampling.h"

struct sched_entity {
    unsigned long long sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
    unsigned long long run_delay;
    unsigned long long last_arrival;
} __attribute__((preserve_access_index));

struct task_struct {
    unsigned int flags;
    int pid;
    int tgid;
    char comm[16];
    struct sched_entity se;
    struct sched_info sched_info;
} __attribute__((preserve_access_index));

struct pt_regs {
    unsigned long bp;
    unsigned long sp;
    unsigned long ip;
} __attribute__((preserve_access_index));

#include "user_stack.h"

#define KERNEL_FRAMES 48
#define USER_FRAMES 32
#define WAKER_FRAMES 32
#define STACK_BYTES 4096

#define REC_BEGIN 1
#define REC_END 2
#define REC_EXIT 3
#define REC_LONG 4

// Counters, per CPU (the `stats` array's slots).
#define STAT_BLOCKING 0    // blocking switches of traced threads since the tasks' release
#define STAT_SAMPLED 1     // of them, BEGIN records written
#define STAT_BEGIN_LOST 2  // sampled, but the ring buffer was full
#define STAT_END_LOST 3    // END records the ring buffer had no room for
#define STAT_EXIT_LOST 4   // EXIT records the ring buffer had no room for
#define STAT_THREADS_FULL 5 // threads not traced: the map was full
#define STAT_STACK_SHORT 6 // stack copies shorter than STACK_BYTES (the stack's top was near)
#define STAT_LONG 7        // unsampled episodes of LONG_NS or more, recorded whole (LONG records)
#define STAT_LONG_LOST 8   // LONG records the ring buffer had no room for
#define STAT_UNSEEN_IN 9   // stints on a CPU whose switch-in this program did not see
#define STATS 10

#include "records.h"
#include "self_cost.h"

struct thread {
    __u32 pid;
    __u32 parent;
    __u64 begin;
    __u64 episodes;
    // Since when it waits for a CPU (woken or preempted; 0: it does not): the kernel adds a
    // wait to run_delay only once it ends, so user space adds the one in progress at an edge.
    __u64 queued_at;
    __u32 sampled; // the open episode wrote a BEGIN record, and no END yet
    __u32 blocked_state; // prev_state of its blocking switch, while blocked_at is set
    // Its switch-ins, and the sampling interval fixed at the last one: a blocking switch is
    // sampled when hash(tid, ins) % k == 0, which its waking can tell too, whichever comes
    // first (see on_waking).
    __u64 ins;
    __u32 k;
    // 1: a waking kept an END in `early_wakes` for it (on_waking). Its unsampled blocking
    // switches delete that entry only then: deleted unconditionally (a hash delete under the
    // bucket's lock at every blocking switch), with three clock reads a switch instead of one,
    // on_switch took ~230-310 ns a call on pipe_pingpong, ~145-225 ns without (bpf_stats,
    // 2-vCPU VM, four runs each, interleaved).
    __u32 early_wake;
    // Its blocking switch, until its waking or switch-in (0: not blocked, or already ended).
    __u64 blocked_at;
    // Its wall-clock time on a CPU, from its switches' own times: the switch-in that gave it
    // the CPU (0: not on one) and the sum of the stints ended. Against se.sum_exec_runtime,
    // which leaves out what the hypervisor took from the vCPU while the thread ran (steal, with
    // PARAVIRT_TIME_ACCOUNTING), it says how much was stolen: time that is neither CPU, nor a
    // wait for a CPU, nor blocked (seen: 0.1-0.7 s of 2 s on this project's 2-vCPU VM, which
    // the residual counted as blocked and shared out to the futex waits).
    __u64 on_cpu_since;
    __u64 wall_on_cpu;
    // Its last switch-out (0: none yet): a stint whose switch-in was not seen begins after it.
    __u64 out_at;
    // This tracer's programs' runs in its context without a walk, and its walks' time
    // (self_cost_thread).
    __u64 prog_runs;
    __u64 prog_walk_ns;
    // Its CPU time and wait for a CPU when it began to be traced, for a thread that was already
    // running then (a kernel thread added as it woke a traced one; 0 for the others, traced
    // from their creation or from before the window, whose counters are read then).
    __u64 base_on_cpu;
    __u64 base_run_delay;
};

// Set by user space: trace the kernel threads that wake traced threads (a command's trial,
// whose waits are followed to their end; not a built-in's).
const volatile __u8 follow_kernel_wakers = 0;

// `parent` of a kernel thread traced because it woke a traced thread (jbd2 ending an fsync,
// a kworker finishing I/O): what it does is what that thread waited for.
#define PARENT_KERNEL_WAKER 0xFFFFFFFFu

// This CPU's CLOCK_MONOTONIC (bpf_ktime_get_ns) less the scheduler's rq clock, from the last
// stint of a traced thread seen whole: its switch-in's time here against the kernel's own
// time of that arrival (sched_info.last_arrival, read at its switch-out).
//
// Some switches fire no tracepoint consumer at all: on this project's VM every switch away
// from the sandbox agent's threads (PID 1's, hidden from tracing) was seen by neither this
// program nor `perf sched record`, so the thread that got the CPU had no switch-in here and
// its whole stint (~10 ms) went uncounted: its wall-clock time on a CPU read up to 48 ms a
// trial below its CPU time, and its steal was counted as blocked (futex_mutex shared at N=2:
// blocked read twice `perf sched timehist`'s). Such a stint begins at the kernel's arrival
// time, in this program's clock by the offset.
struct clock_offset {
    __s64 offset;
    __u64 known;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct clock_offset);
} clock_offsets SEC(".maps");

// An episode this long or longer is recorded whatever the sample: a sampled one's END says so
// (it then stands for itself alone), an unsampled one writes a LONG record at its end. Long
// waits are few and hold much of the blocked time; sampled 1 in k, a thread's one long wait
// (a main thread joining its workers for the whole trial) was left out k - 1 times in k, and
// with it what the thread was doing (sysbench's main read as a worker in one trial of three).
#define LONG_NS 50000000ULL

// A waking kept is its switch's only if it came this recently (a waking before the thread
// calls schedule at all, which then does not block, is not).
#define EARLY_WITHIN_NS 200000ULL

struct begin_rec {
    __u32 type;
    __u32 tid;
    __u32 pid;
    __u32 weight;
    __u64 time;
    __u64 state;
    __u64 ip, sp, bp;
    __s32 kernel_bytes;
    __s32 user_bytes;
    __u32 stack_bytes;
    __u32 pad;
    __u64 kernel[KERNEL_FRAMES];
    __u64 user[USER_FRAMES];
    __u8 stack[STACK_BYTES];
};

struct end_rec {
    __u32 type;
    __u32 tid;
    __u64 time;
    __u32 waker_pid;
    __u32 waker_tid;
    __s32 kernel_bytes;
    __u32 long_wait; // 1: the episode lasted LONG_NS or more (it stands for itself alone)
    __u64 kernel[WAKER_FRAMES];
};

// An unsampled episode of LONG_NS or more, at its end: the thread's kernel chain where it
// sleeps (no user chain: the thread is not the one running), and its waker's.
struct long_rec {
    __u32 type;
    __u32 tid;
    __u32 pid;
    __u32 state;
    __u64 begin;
    __u64 end;
    __u32 waker_pid;
    __u32 waker_tid; // (__u32)-1: ended at its switch-in, no waking seen
    __s32 kernel_bytes;
    __s32 waker_bytes;
    __u64 kernel[KERNEL_FRAMES];
    __u64 waker[WAKER_FRAMES];
};

// A waking kept for its thread's sampled blocking switch, which had not been traced yet: the
// END record, and the switch-in count it belongs to.
struct early_wake {
    __u64 ins;
    struct end_rec end;
};

struct exit_rec {
    __u32 type;
    __u32 tid;
    __u32 pid;
    __u32 parent;
    __u64 begin;
    __u64 end;
    __u64 on_cpu;    // se.sum_exec_runtime
    __u64 run_delay; // sched_info.run_delay
    __u64 episodes;
    __u64 wall_on_cpu; // its wall-clock time on a CPU, the stint now ending included
    char comm[16];
    __u64 prog_runs;    // struct thread's, at its exit
    __u64 prog_walk_ns;
    __u64 base_on_cpu;  // struct thread's
    __u64 base_run_delay;
};

// Set by user space before loading.

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct thread);
} threads SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct early_wake);
} early_wakes SEC(".maps");

// Who held a CPU while a traced thread waited for it. Each CPU keeps its last STINTS stints
// (the task that ran, from its switch-in to its switch-out); a traced thread's switch-in after
// a wait for a CPU charges each stint's overlap with that wait to the stint's process in
// `holders` (the idle task's, the CPU coming out of idle, to the CPU's `idle_ns`). A wait
// spanning more stints than the ring holds, or begun on another CPU before a migration, leaves
// the rest uncharged: user space reports the shares of what was charged.
#define STINTS 16

struct stint {
    __u64 start;
    __u64 end;
    __u32 tgid;
    __u32 kernel; // 1: a kernel thread (no mm)
    char comm[16];
};

struct cpu_stints {
    __u64 since; // the running task's switch-in (0: not seen yet)
    __u32 head;
    __u32 pad;
    // Traced threads' wait for this CPU while it was idle (coming out of idle as they were
    // woken): the commonest holder, kept here rather than in `holders`.
    __u64 idle_ns;
    struct stint s[STINTS];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cpu_stints);
} cpu_stints SEC(".maps");

struct holder {
    __u64 ns;     // traced threads' wait for a CPU while it ran
    __u32 kernel; // 1: a kernel thread
    __u32 pad;
    char comm[16];
};

// Per CPU (the CPU waited for), so that charging takes no atomic and no cache line from
// another CPU; user space sums the CPUs.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 8192);
    __type(key, __u32); // tgid
    __type(value, struct holder);
} holders SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct early_wake);
} scratch SEC(".maps");

// The sampling interval follows the rate of this CPU's traced blocking switches
// (sampling.h's events): read at each switch-in, it fixes the interval of the thread's next
// blocking switch. (Counted over every switch-in instead, a thread preempted often but rarely
// blocking got a k of thousands for its few blocking switches, and a trial of create_unlink
// at N=1 sampled none of them.)
//
// Whether thread `tid`'s blocking switch after its `ins`th switch-in is sampled, 1 in `k`:
// a hash of the two, so that its waking, which can come before the switch is traced, decides
// the same. (The hash does not depend on the episode, so each sampled one stands for k.)
static __always_inline bool sampled_episode(__u32 tid, __u64 ins, __u64 k)
{
    if (k <= 1)
        return true;
    __u64 h = ((__u64)tid << 32 ^ ins) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return h % k == 0;
}

// Returns whether the episode was sampled (its walks and copy took this CPU's time since `now`).
// `sampling`: whether chains are written yet (sampling.h's `sampling_on`, read once a switch).
static __always_inline bool begin_episode(void *ctx, struct task_struct *prev, struct thread *t,
                                          unsigned int state, __u64 now, bool sampling)
{
    __u64 k = t->k ? t->k : 1;
    __u32 tid = prev->pid;
    t->sampled = 0;
    if (!sampling || !sampled_episode(tid, t->ins, k)) {
        if (t->early_wake) {
            t->early_wake = 0;
            bpf_map_delete_elem(&early_wakes, &tid);
        }
        return false;
    }
    struct begin_rec *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        count(STAT_BEGIN_LOST);
        return false;
    }
    // Open as soon as its record is reserved (so that any END is read after it), before the
    // walks and the copy below: a waking from another CPU while they run ends it.
    t->sampled = 1;
    r->type = REC_BEGIN;
    r->tid = prev->pid;
    r->pid = prev->tgid;
    r->weight = k;
    r->time = now;
    r->state = state;
    r->pad = 0;
    r->kernel_bytes = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), 0);
    r->user_bytes = bpf_get_stack(ctx, r->user, sizeof(r->user), BPF_F_USER_STACK);
    r->stack_bytes = copy_user_context(&r->ip, r->stack, STACK_BYTES);
    if (r->stack_bytes < STACK_BYTES)
        count(STAT_STACK_SHORT);
    // The walks and the copy above took microseconds of this thread's time on the CPU, before
    // it switched (the kernel charges them to it): the episode begins after them. Begun
    // before, every sampled episode would be that much longer than the others (seen:
    // pipe_pingpong's sampled reads ~5x longer).
    r->time = bpf_ktime_get_ns();
    bpf_ringbuf_submit(r, 0);
    count(STAT_SAMPLED);
    // Woken before this switch was traced: the waking kept its END, written now, after the
    // BEGIN (unless the waking came since and wrote it itself).
    struct early_wake *w = bpf_map_lookup_elem(&early_wakes, &tid);
    if (w && w->ins == t->ins && now - w->end.time < EARLY_WITHIN_NS &&
        __sync_val_compare_and_swap(&t->sampled, 1, 0) == 1) {
        if (bpf_ringbuf_output(&records, &w->end, sizeof(w->end), 0) != 0)
            count(STAT_END_LOST);
    }
    if (w) {
        t->early_wake = 0;
        bpf_map_delete_elem(&early_wakes, &tid);
    }
    return true;
}

// Writes the END record of thread `tid`'s sampled episode: with the current task as its waker
// and that task's kernel chain (`waker`: in sched_waking), or none (at the switch-in); `long_wait`:
// it lasted LONG_NS or more.
static __always_inline void end_episode(void *ctx, __u32 tid, bool waker, bool long_wait)
{
    struct end_rec *e = bpf_ringbuf_reserve(&records, sizeof(*e), 0);
    if (!e) {
        count(STAT_END_LOST);
        return;
    }
    __u64 id = bpf_get_current_pid_tgid();
    e->type = REC_END;
    e->tid = tid;
    e->time = bpf_ktime_get_ns();
    e->waker_pid = waker ? id >> 32 : 0;
    e->waker_tid = waker ? (__u32)id : (__u32)-1;
    e->long_wait = long_wait;
    e->kernel_bytes = waker ? bpf_get_stack(ctx, e->kernel, sizeof(e->kernel), 0) : 0;
    bpf_ringbuf_submit(e, 0);
}

// Ends thread `t`'s episode for the record: returns since when it was blocked (0: its end was
// already taken, or it was not blocked), and clears it, so that its waking and its switch-in
// take it once between them.
static __always_inline __u64 take_blocked_at(struct thread *t)
{
    return __atomic_exchange_n(&t->blocked_at, 0, __ATOMIC_RELAXED);
}

// Writes the LONG record of `task`'s unsampled episode of LONG_NS or more, from `begin` to `end`:
// its kernel chain where it sleeps, and the current task as its waker with its chain
// (`waker`: in sched_waking) or none (at the switch-in).
static __always_inline void long_episode(void *ctx, struct task_struct *task, struct thread *t,
                                         __u64 begin, __u64 end, bool waker)
{
    struct long_rec *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        count(STAT_LONG_LOST);
        return;
    }
    __u64 id = bpf_get_current_pid_tgid();
    r->type = REC_LONG;
    r->tid = task->pid;
    r->pid = task->tgid;
    r->state = t->blocked_state;
    r->begin = begin;
    r->end = end;
    r->waker_pid = waker ? id >> 32 : 0;
    r->waker_tid = waker ? (__u32)id : (__u32)-1;
    r->kernel_bytes = bpf_get_task_stack(task, r->kernel, sizeof(r->kernel), 0);
    r->waker_bytes = waker ? bpf_get_stack(ctx, r->waker, sizeof(r->waker), 0) : 0;
    bpf_ringbuf_submit(r, 0);
    count(STAT_LONG);
}

// Ends thread `t`'s stint on a CPU at `now` (its switch-out, or its exit); `task` is the
// thread, whose kernel arrival time dates a stint whose switch-in was not seen.
static __always_inline void end_stint(struct thread *t, struct task_struct *task, __u64 now)
{
    __u64 since = t->on_cpu_since;
    __u64 arrival = BPF_CORE_READ(task, sched_info.last_arrival);
    __u32 zero = 0;
    struct clock_offset *c = bpf_map_lookup_elem(&clock_offsets, &zero);
    if (since && arrival && c) {
        // The arrival is stamped before the switch's tracepoint (the rq clock is updated as
        // __schedule begins), so every stint's difference is the offset or a little more; a
        // much larger one (an arrival not updated, older) is not taken, unless it is the first.
        __s64 offset = (__s64)(since - arrival);
        if (!c->known || offset < c->offset || offset - c->offset < 1000000) {
            c->offset = offset;
            c->known = 1;
        }
    } else if (!since && arrival && c && c->known) {
        __u64 recovered = arrival + c->offset;
        // After its last switch-out, or the arrival is an older one (not updated).
        if (recovered > t->out_at && recovered > t->begin && recovered < now) {
            since = recovered;
            count(STAT_UNSEEN_IN);
        }
    }
    if (since && now > since)
        t->wall_on_cpu += now - since;
    t->on_cpu_since = 0;
    t->out_at = now;
}

// The switch-in of `next` (the switch's time `switched`, and `now`, the time to judge its wait
// by; 0: not read yet): returns whether it walked a stack (a LONG record's).
// This CPU's stint of `prev` ends at `now`; the next one begins.
static __always_inline void end_cpu_stint(struct task_struct *prev, __u64 now)
{
    __u32 zero = 0;
    struct cpu_stints *cs = bpf_map_lookup_elem(&cpu_stints, &zero);
    if (!cs)
        return;
    if (cs->since) {
        struct stint *st = &cs->s[cs->head % STINTS];
        st->start = cs->since;
        st->end = now;
        st->tgid = prev->tgid;
        st->kernel = (prev->flags & 0x00200000) ? 1 : 0; // PF_KTHREAD
        __builtin_memcpy(st->comm, prev->comm, sizeof(st->comm));
        cs->head += 1;
    }
    cs->since = now;
}

// Charges a traced thread's wait for this CPU, [`from`, `now`], to the tasks that held it.
static __always_inline void charge_holders(__u64 from, __u64 now)
{
    __u32 zero = 0;
    struct cpu_stints *cs = bpf_map_lookup_elem(&cpu_stints, &zero);
    if (!cs || !from || now <= from)
        return;
    // Newest first: the stints are in time order, so the first to end before the wait began
    // ends the walk (a short wait, the commonest, looks at one or two).
    __u32 head = cs->head;
    for (int i = 1; i <= STINTS; i++) {
        struct stint *st = &cs->s[(head - i) % STINTS];
        if (st->end <= from)
            break;
        if (st->start >= now)
            continue;
        __u64 a = st->start > from ? st->start : from;
        __u64 b = st->end < now ? st->end : now;
        __u32 key = st->tgid;
        if (!key) {
            cs->idle_ns += b - a;
            continue;
        }
        struct holder *h = bpf_map_lookup_elem(&holders, &key);
        if (!h) {
            struct holder fresh = {.kernel = st->kernel};
            __builtin_memcpy(fresh.comm, st->comm, sizeof(fresh.comm));
            bpf_map_update_elem(&holders, &key, &fresh, BPF_NOEXIST);
            h = bpf_map_lookup_elem(&holders, &key);
            if (!h)
                continue;
        }
        h->ns += b - a;
    }
}

static __always_inline bool switch_in(void *ctx, struct task_struct *next, __u64 switched,
                                      __u64 now)
{
    __u32 tid = next->pid;
    struct thread *t = tid ? bpf_map_lookup_elem(&threads, &tid) : 0;
    if (!t)
        return false;
    if (!now)
        now = bpf_ktime_get_ns();
    t->on_cpu_since = switched ? switched : now;
    charge_holders(t->queued_at, now);
    t->queued_at = 0;
    t->ins += 1;
    t->k = (__u32)sampling_k(now);
    // An episode still open as its thread gets a CPU: no waking was seen (an END, or a LONG
    // record, with no waker).
    __u64 at = take_blocked_at(t);
    bool long_wait = at && now - at >= LONG_NS;
    if (__sync_val_compare_and_swap(&t->sampled, 1, 0) == 1) {
        end_episode(ctx, tid, false, long_wait);
    } else if (long_wait) {
        long_episode(ctx, next, t, at, now, false);
        return true;
    }
    return false;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u32 tid = prev->pid;
    // One clock read serves the switch-out, this CPU's stints and the switch-in (each read
    // costs, at hundreds of thousands of switches a second), unless a sampled episode's walks
    // ran between them.
    __u64 now = bpf_ktime_get_ns();
    end_cpu_stint(prev, now);
    struct thread *t = tid ? bpf_map_lookup_elem(&threads, &tid) : 0;
    if (!t) {
        // Not a traced thread's context (idle's, or another task's): its cost is not the
        // trial's, and is not counted.
        switch_in(ctx, next, now, now);
        return 0;
    }
    // The switch's time, for the stints on a CPU that it ends and begins.
    __u64 switched = now;
    bool picked = self_cost_run();
    bool walked = false;
    end_stint(t, prev, now);
    // A dying task's last switch (TASK_DEAD, 0x80) is no wait; a preempted one still runs.
    if (!preempt && (prev_state & 0x7f)) {
        t->episodes += 1;
        // Tallied from the tasks' release only, as the episodes that can be sampled are (a
        // trial's set-up, its tasks parked on the start line, is no part of what the tally
        // is read against: with --chain-every 1 it read 153 switches for 149 chains).
        bool sampling = sampling_on(now);
        if (sampling)
            count(STAT_BLOCKING);
        count_event(now);
        t->blocked_state = prev_state;
        t->blocked_at = now; // an aligned store: the other CPUs read it whole
        if (begin_episode(ctx, prev, t, prev_state, now, sampling)) {
            now = 0;
            walked = true;
        }
    } else {
        t->queued_at = now;
    }
    if (switch_in(ctx, next, switched, now))
        walked = true;
    __u64 d = self_cost_timed(picked, walked) ? self_cost_add(switched, walked, picked, true) : 0;
    self_cost_thread(&t->prog_runs, &t->prog_walk_ns, walked, d);
    return 0;
}

// Its work for thread `t` (`tid`, the task `p`) woken at `now`: returns whether it walked a
// stack (the waker's chain, or a LONG record's).
static __always_inline bool waking(void *ctx, struct task_struct *p, struct thread *t, __u32 tid,
                                   __u64 now)
{
    t->queued_at = now;
    __u64 at = take_blocked_at(t);
    bool long_wait = at && now - at >= LONG_NS;
    if (__sync_val_compare_and_swap(&t->sampled, 1, 0) == 1) {
        end_episode(ctx, tid, true, long_wait);
        return true;
    }
    if (long_wait) {
        long_episode(ctx, p, t, at, now, true);
        return true;
    }
    if (!sampled_episode(tid, t->ins, t->k ? t->k : 1))
        return false;
    __u32 zero = 0;
    struct early_wake *w = bpf_map_lookup_elem(&scratch, &zero);
    if (!w)
        return false;
    __u64 id = bpf_get_current_pid_tgid();
    w->ins = t->ins;
    w->end.type = REC_END;
    w->end.tid = tid;
    w->end.time = now;
    w->end.waker_pid = id >> 32;
    w->end.waker_tid = (__u32)id;
    w->end.long_wait = 0;
    w->end.kernel_bytes = bpf_get_stack(ctx, w->end.kernel, sizeof(w->end.kernel), 0);
    if (bpf_map_update_elem(&early_wakes, &tid, w, BPF_ANY) != 0)
        return true;
    t->early_wake = 1;
    // The switch may have opened the episode meanwhile, before it looked for this: end it here.
    if (__sync_val_compare_and_swap(&t->sampled, 1, 0) == 1) {
        struct early_wake *kept = bpf_map_lookup_elem(&early_wakes, &tid);
        if (kept) {
            if (bpf_ringbuf_output(&records, &kept->end, sizeof(kept->end), 0) != 0)
                count(STAT_END_LOST);
            bpf_map_delete_elem(&early_wakes, &tid);
        }
    }
    return true;
}

// A kernel thread waking a traced thread (jbd2 ending an fsync, a kworker, ksoftirqd) is traced
// from now on, as a thread of the system under test's kernel side: its waits and CPU are what
// the woken thread waited for, followed in user space. Only kernel threads: another program
// waking a traced thread is named, not traced. (A wake-up in an interrupt runs in whatever
// task it interrupted: a kernel thread caught so is traced too, and costs only its tracing.)
static __always_inline void trace_kernel_waker(__u32 tid, __u32 tgid, __u64 now)
{
    struct task_struct *me = bpf_get_current_task_btf();
    if (!(me->flags & 0x00200000)) // PF_KTHREAD
        return;
    struct thread t = {
        .pid = tgid,
        .parent = PARENT_KERNEL_WAKER,
        .begin = now,
        // It runs now.
        .on_cpu_since = now,
        .base_on_cpu = BPF_CORE_READ(me, se.sum_exec_runtime),
        .base_run_delay = BPF_CORE_READ(me, sched_info.run_delay),
    };
    if (bpf_map_update_elem(&threads, &tid, &t, BPF_NOEXIST) != 0)
        count(STAT_THREADS_FULL);
}

// In try_to_wake_up, in the waker's context: a sampled episode ends here, with its waker.
//
// The waking can come before the blocking switch is traced: __schedule dequeues the thread (or,
// with delayed dequeue, leaves it queued) and only later fires sched_switch, while a waker on
// another CPU already runs try_to_wake_up, which fires sched_waking first. A mutex handed off
// within microseconds is woken so nearly every time (sysbench's hot mutex: 96% of its blocked
// time ended "not seen" before this). Such a waking, of an episode the hash samples, keeps its
// END (with the waker's chain) in `early_wakes` for the switch to write after its BEGIN.
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
    __u32 tid = p->pid;
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    // The run is the waker's cost (the thread whose context it is): counted only where that
    // is a traced thread, and on it.
    __u64 id = bpf_get_current_pid_tgid();
    __u32 me = (__u32)id;
    struct thread *waker = me ? bpf_map_lookup_elem(&threads, &me) : 0;
    if (!waker && me && follow_kernel_wakers)
        trace_kernel_waker(me, id >> 32, now);
    bool picked = waker ? self_cost_run() : false;
    bool walked = waking(ctx, p, t, tid, now);
    if (waker) {
        __u64 d = self_cost_timed(picked, walked) ? self_cost_add(now, walked, picked, true) : 0;
        self_cost_thread(&waker->prog_runs, &waker->prog_walk_ns, walked, d);
    }
    return 0;
}

// A traced thread's new thread or process is traced from its creation, waiting for a CPU.
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
    __u32 me = (__u32)bpf_get_current_pid_tgid();
    if (!bpf_map_lookup_elem(&threads, &me))
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct thread t = {
        .pid = child->tgid,
        .parent = me,
        .begin = now,
        .queued_at = now,
    };
    __u32 tid = child->pid;
    if (bpf_map_update_elem(&threads, &tid, &t, BPF_NOEXIST) != 0)
        count(STAT_THREADS_FULL);
    return 0;
}

// do_exit, in the exiting thread: its counters go out as an EXIT record and it leaves the map.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
    __u32 tid = p->pid;
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t)
        return 0;
    struct exit_rec *x = bpf_ringbuf_reserve(&records, sizeof(*x), 0);
    if (x) {
        x->type = REC_EXIT;
        x->tid = tid;
        x->pid = t->pid;
        x->parent = t->parent;
        x->begin = t->begin;
        x->end = bpf_ktime_get_ns();
        x->on_cpu = BPF_CORE_READ(p, se.sum_exec_runtime);
        x->run_delay = BPF_CORE_READ(p, sched_info.run_delay);
        x->episodes = t->episodes;
        end_stint(t, p, x->end);
        x->wall_on_cpu = t->wall_on_cpu;
        bpf_get_current_comm(x->comm, sizeof(x->comm));
        x->prog_runs = t->prog_runs;
        x->prog_walk_ns = t->prog_walk_ns;
        x->base_on_cpu = t->base_on_cpu;
        x->base_run_delay = t->base_run_delay;
        bpf_ringbuf_submit(x, 0);
    } else {
        count(STAT_EXIT_LOST);
    }
    bpf_map_delete_elem(&threads, &tid);
    bpf_map_delete_elem(&early_wakes, &tid);
    return 0;
}
