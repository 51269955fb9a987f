// SPDX-License-Identifier: GPL-2.0
// scalelab's in-kernel lock tracing (issue 32), loaded by crates/perf/src/locks/bpf.rs.
//
// Every wait is timed and summed here, in the kernel: a kernel lock's from `contention_begin`
// to `contention_end`; a futex wait's, as user space chooses (`futex_sleeps`), either from
// the `futex` system call's entry to its exit (every call that waits: `calls`) or from its
// thread's blocking switch inside that call to its switch back in (the waits that slept:
// `sleeps`). The sums go to the `totals` hash, one entry per (process, lock, type): waits,
// their total, the longest and the shortest, for the waits that ended inside the measurement
// window (`window`, set by user space as it opens and closes). Call chains are the sampled
// part: one wait in `k` (k per CPU from the last 100 ms's rate of waits, so that about
// `samples_per_cpu_s` a second are kept) writes a SAMPLE record. A kernel lock's and a futex
// call's are written as the wait ends, the thread still in the same call (the lock's slow
// path, or the system call), so the chain is the one it waited in; a futex sleep's as it
// begins, at the blocking switch, with a small END record as it switches back in. A futex
// sample holds the user frame-pointer chain, the user registers and a copy of the top of the
// user stack (unwound in user space with the binaries' .eh_frame; Debian's glibc, where every
// contended pthread_mutex_lock waits, has no frame pointers). Times are stamped outside the
// walks.
//
// Why two ways to time a futex wait: the raw system call tracepoints, once anything is
// attached, send every system call of every task on the machine through the kernel's slow
// path. sysbench `threads --thread-locks=1` (~1.9M sched_yield calls a second beside ~190k
// futex calls, 2-vCPU VM) kept 0.63 of its untraced throughput with the two hooks attached,
// whatever the programs did (perf stat counting raw_syscalls:sys_enter alone kept 0.55);
// timed at the scheduler instead, 0.96. But most contended futex calls may not sleep:
// futex_mutex -p shared=true at N=2 made ~35k FUTEX_WAIT calls in a trial and ~400 of them
// slept (the word had changed, EAGAIN). `calls` counts every contended call; `sleeps` times
// the blocked ones cheaply, which is what an explanation of blocked time needs (the calls that
// do not sleep are CPU, which the profile sees). fentry/fexit on the futex functions would
// see every call at a fraction of the cost, but need function tracing, which this project's
// kernel does not permit (EPERM).
//
// Traced threads: the one user space puts in `threads` (the thread that then creates the
// trial's tasks), and every thread and process created by a traced thread afterwards (as
// perf's `inherit`). Other tasks cost one hash lookup per event.
//
// The record layouts below are what user space decodes (bpf_locks.rs); change both together.
// Only x86_64's registers are named (pt_regs di, si, orig_ax, bp, sp, ip).
#include <linux/types.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sampling.h"

// The locks a waiter's own task points at, for naming them (`lock_name`).
struct rw_semaphore {
    long count;
} __attribute__((preserve_access_index));

struct spinlock {
    int rlock;
} __attribute__((preserve_access_index));

struct mm_struct {
    struct rw_semaphore mmap_lock;
} __attribute__((preserve_access_index));

struct sighand_struct {
    struct spinlock siglock;
} __attribute__((preserve_access_index));

struct files_struct {
    struct spinlock file_lock;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
    int tgid;
    unsigned long nvcsw;
    unsigned long nivcsw;
    struct mm_struct *mm;
    struct sighand_struct *sighand;
    struct files_struct *files;
} __attribute__((preserve_access_index));

struct pt_regs {
    unsigned long di;
    unsigned long si;
    unsigned long bp;
    unsigned long sp;
    unsigned long ip;
    unsigned long orig_ax;
} __attribute__((preserve_access_index));

#include "user_stack.h"

#define KERNEL_FRAMES 48
#define USER_FRAMES 32
#define STACK_BYTES 16384
#define NESTED 4

#define REC_KERNEL 1
#define REC_FUTEX 2     // a sampled futex wait's begin, chain and stack
#define REC_FUTEX_END 3 // its end

#define KIND_KERNEL 1
#define KIND_FUTEX 2

// Counters, per CPU (the `stats` array's slots).
#define STAT_WAITS 0        // waits of traced threads that ended (any time)
#define STAT_COUNTED 1      // of them, ended inside the window and summed in `totals`
#define STAT_SAMPLED 2      // sampled waits summed (SAMPLE records written, and END for a futex's)
#define STAT_SAMPLE_LOST 3  // sampled, but the ring buffer was full
#define STAT_TOTALS_FULL 4  // inside the window, but `totals` was full: not summed
#define STAT_THREADS_FULL 5 // threads not traced: the map was full
#define STAT_NESTED_FULL 6  // kernel waits not timed: more than NESTED open at once
#define STAT_STACK_SHORT 7  // stack copies shorter than STACK_BYTES (the stack's top was near)
#define STAT_STALE_SPIN 8   // spinning waits dropped: their thread switched between begin and end
#define STATS 9

#include "records.h"
#include "self_cost.h"

// The kernel's contention flags (include/trace/events/lock.h).
#define LCB_F_SPIN (1U << 0)
#define LCB_F_READ (1U << 1)
#define LCB_F_WRITE (1U << 2)
#define LCB_F_RT (1U << 3)
#define LCB_F_PERCPU (1U << 4)
#define LCB_F_MUTEX (1U << 5)

// A kernel lock named by what the waiting task points at, as `perf lock contention -b` names
// them, carried above the LCB_F_* flags (which use the low 16 bits) in the flags this program
// keeps and writes: the waiter's process's `mmap_lock`, its signal handlers' `siglock`, its
// open files' `file_lock`. Any other lock is named in user space, by symbol or not at all.
#define LOCK_NAME_SHIFT 16
#define LOCK_NAME_MMAP 1
#define LOCK_NAME_SIGLOCK 2
#define LOCK_NAME_FILE_LOCK 3

// A kernel lock a thread waits for.
struct open_lock {
    __u64 lock;
    __u64 begin;
    __u32 flags;
    __u32 switches; // the thread's context switches at the begin (low 32 bits)
};

struct thread {
    __u32 pid;
    __u32 futex_op;
    __u64 futex_uaddr;
    __u64 futex_begin;   // 0: not in a futex wait
    __u32 futex_sampled; // its REC_FUTEX was written: its end writes REC_FUTEX_END
    __u32 pad;
    struct open_lock locks[NESTED];
    // This tracer's programs' runs in its context without a walk, and its walks' time
    // (self_cost_thread).
    __u64 prog_runs;
    __u64 prog_walk_ns;
};

struct total_key {
    __u32 pid;
    __u32 kind;
    __u64 lock;
    __u32 op; // futex op, or the kernel lock's LCB_F_* flags (and LOCK_NAME_* above them)
    __u32 pad;
};

struct total {
    __u64 count;
    __u64 sum;
    __u64 max;
    __u64 min;
};

struct window {
    __u64 start;
    __u64 end;
};

struct kernel_rec {
    __u32 type;
    __u32 tid;
    __u32 pid;
    __u32 weight;
    __u64 lock;
    __u64 begin;
    __u64 end;
    __u32 flags;
    __s32 kernel_bytes;
    __u64 kernel[KERNEL_FRAMES];
};

// A sampled futex wait: a call's as it returns; a sleep's as it begins (`end` 0: its
// REC_FUTEX_END carries it).
struct futex_rec {
    __u32 type;
    __u32 tid;
    __u32 pid;
    __u32 weight;
    __u64 uaddr;
    __u64 begin;
    __u64 end;
    __s64 ret;
    __u32 op;
    __s32 user_bytes;
    __u64 ip, sp, bp;
    __u32 stack_bytes;
    __u32 pad;
    __u64 user[USER_FRAMES];
    __u8 stack[STACK_BYTES];
};

// The end of thread `tid`'s sampled futex wait; `counted` 0: it ended outside the window.
struct futex_end_rec {
    __u32 type;
    __u32 tid;
    __u64 end;
    __u32 counted;
    __u32 pad;
};

// Set by user space before loading.
const volatile __u32 futex_nr = 202; // the futex system call's number (x86_64)
const volatile bool trace_kernel = true;
const volatile bool trace_futex = true;
const volatile bool futex_sleeps = false; // time futex waits at the scheduler (see above)

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u32);
    __type(value, struct thread);
} threads SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct total_key);
    __type(value, struct total);
} totals SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct window);
} windows SEC(".maps");

// The calling thread's context switches so far (low 32 bits): a spinning wait never spans one.
static __always_inline __u32 switches_now(void)
{
    struct task_struct *me = bpf_get_current_task_btf();
    return (__u32)(me->nvcsw + me->nivcsw);
}

// A wait that spins on the CPU and never sleeps: a spinlock's or a spinning rwlock's (not a
// mutex's optimistic spin, nor PREEMPT_RT's sleeping spinlocks).
static __always_inline bool spins_only(__u32 flags)
{
    return (flags & LCB_F_SPIN) && !(flags & (LCB_F_MUTEX | LCB_F_RT));
}

// Sums a wait that ended at `end` into its lock's total, if the window holds it; returns
// whether it did.
static __always_inline bool account(__u32 pid, __u32 kind, __u64 lock, __u32 op, __u64 begin,
                                    __u64 end)
{
    count(STAT_WAITS);
    __u32 zero = 0;
    struct window *w = bpf_map_lookup_elem(&windows, &zero);
    if (!w || end < w->start || end > w->end)
        return false;
    __u64 d = end - begin;
    struct total_key key = {.pid = pid, .kind = kind, .lock = lock, .op = op};
    struct total *t = bpf_map_lookup_elem(&totals, &key);
    if (!t) {
        struct total fresh = {.min = ~0ULL};
        if (bpf_map_update_elem(&totals, &key, &fresh, BPF_NOEXIST) != 0 &&
            !bpf_map_lookup_elem(&totals, &key)) {
            count(STAT_TOTALS_FULL);
            return false;
        }
        t = bpf_map_lookup_elem(&totals, &key);
        if (!t) {
            count(STAT_TOTALS_FULL);
            return false;
        }
    }
    __sync_fetch_and_add(&t->count, 1);
    __sync_fetch_and_add(&t->sum, d);
    // Two CPUs may end waits on one lock at once: compare-and-swap, a few tries.
    for (int i = 0; i < 4; i++) {
        __u64 old = t->max;
        if (d <= old || __sync_val_compare_and_swap(&t->max, old, d) == old)
            break;
    }
    for (int i = 0; i < 4; i++) {
        __u64 old = t->min;
        if (d >= old || __sync_val_compare_and_swap(&t->min, old, d) == old)
            break;
    }
    count(STAT_COUNTED);
    count_event(end);
    return true;
}

// Whether the wait at hand is sampled: its sampling interval k (each sampled wait stands for
// k), or 0 when it is not.
static __always_inline __u64 sampled_at(__u64 now)
{
    if (!sampling_on(now))
        return 0;
    __u64 k = sampling_k(now);
    if (k > 1 && bpf_get_prandom_u32() % k != 0)
        return 0;
    return k;
}

// Which of the waiting task's own locks `addr` is (LOCK_NAME_*), 0 for none of them. Read
// in the waiter's context, which `contention_begin` runs in.
static __always_inline __u32 lock_name(__u64 addr, __u32 flags)
{
    struct task_struct *me = bpf_get_current_task_btf();
    bool rwsem = (flags & (LCB_F_READ | LCB_F_WRITE)) &&
                 !(flags & (LCB_F_SPIN | LCB_F_PERCPU | LCB_F_RT));
    if (rwsem) {
        __u64 mm = (__u64)BPF_CORE_READ(me, mm);
        if (mm && mm + bpf_core_field_offset(struct mm_struct, mmap_lock) == addr)
            return LOCK_NAME_MMAP;
        return 0;
    }
    if (flags != LCB_F_SPIN)
        return 0;
    __u64 sighand = (__u64)BPF_CORE_READ(me, sighand);
    if (sighand && sighand + bpf_core_field_offset(struct sighand_struct, siglock) == addr)
        return LOCK_NAME_SIGLOCK;
    __u64 files = (__u64)BPF_CORE_READ(me, files);
    if (files && files + bpf_core_field_offset(struct files_struct, file_lock) == addr)
        return LOCK_NAME_FILE_LOCK;
    return 0;
}

// A kernel wait on `addr` (`flags`) begins for thread `t`.
static __always_inline void contention_begins(struct thread *t, __u64 addr, unsigned int flags)
{
    int free = -1;
#pragma unroll
    for (int i = 0; i < NESTED; i++) {
        if (t->locks[i].lock == addr) {
            // Begun again before it ended, as another type (a mutex or rwsem that spun, now
            // sleeps): the first begin holds. As the same type, the first one's end was never
            // seen (an interrupt's contention while this program ran on the CPU: the kernel
            // does not run a program inside itself), so this one starts afresh. (Kept, one
            // stale begin of sched_tick's run-queue lock made a 104 ms "spinlock wait".)
            if ((t->locks[i].flags & ((1U << LOCK_NAME_SHIFT) - 1)) == flags) {
                t->locks[i].begin = bpf_ktime_get_ns();
                t->locks[i].switches = switches_now();
            }
            return;
        }
        if (free < 0 && t->locks[i].lock == 0)
            free = i;
    }
    if (free < 0 || free >= NESTED) {
        count(STAT_NESTED_FULL);
        return;
    }
    t->locks[free].lock = addr;
    t->locks[free].flags = flags | (lock_name(addr, flags) << LOCK_NAME_SHIFT);
    t->locks[free].switches = switches_now();
    t->locks[free].begin = bpf_ktime_get_ns();
}

SEC("tp_btf/contention_begin")
int BPF_PROG(on_contention_begin, void *lock, unsigned int flags)
{
    if (!trace_kernel)
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t)
        return 0;
    bool picked = self_cost_run();
    __u64 start = self_cost_timed(picked, false) ? bpf_ktime_get_ns() : 0;
    contention_begins(t, (__u64)lock, flags);
    __u64 d = start ? self_cost_add(start, false, picked, true) : 0;
    self_cost_thread(&t->prog_runs, &t->prog_walk_ns, false, d);
    return 0;
}

// Thread `t`'s (`tid`'s) kernel wait on `lock` ends at `end`: returns whether it walked a chain.
static __always_inline bool contention_ends(void *ctx, struct thread *t, __u32 tid, void *lock,
                                            __u64 end)
{
    __u64 addr = (__u64)lock;
    int slot = -1;
#pragma unroll
    for (int i = 0; i < NESTED; i++) {
        if (slot < 0 && t->locks[i].lock == addr)
            slot = i;
    }
    if (slot < 0 || slot >= NESTED)
        return false;
    __u64 begin = t->locks[slot].begin;
    __u32 flags = t->locks[slot].flags;
    __u32 switches = t->locks[slot].switches;
    t->locks[slot].lock = 0;
    // A spinning wait whose thread switched since its begin: that begin's end was never seen
    // (a contention the kernel did not let this program see, as in an interrupt while it ran),
    // and this end is another wait's, whose begin was missed the same way. Paired, they made a
    // "wait" of milliseconds (a jbd2 wait queue's spinlock topped dbench's fsync in a CI run).
    if (spins_only(flags) && switches != switches_now()) {
        count(STAT_STALE_SPIN);
        return false;
    }
    if (!account(t->pid, KIND_KERNEL, addr, flags, begin, end))
        return false;
    __u64 k = sampled_at(end);
    if (!k)
        return false;
    struct kernel_rec *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        count(STAT_SAMPLE_LOST);
        return false;
    }
    r->type = REC_KERNEL;
    r->tid = tid;
    r->pid = t->pid;
    r->weight = k;
    r->lock = addr;
    r->begin = begin;
    r->end = end;
    r->flags = flags;
    r->kernel_bytes = bpf_get_stack(ctx, r->kernel, sizeof(r->kernel), 0);
    bpf_ringbuf_submit(r, 0);
    count(STAT_SAMPLED);
    return true;
}

SEC("tp_btf/contention_end")
int BPF_PROG(on_contention_end, void *lock, int ret)
{
    if (!trace_kernel)
        return 0;
    __u64 end = bpf_ktime_get_ns();
    __u64 id = bpf_get_current_pid_tgid();
    __u32 tid = (__u32)id;
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t)
        return 0;
    bool picked = self_cost_run();
    bool walked = contention_ends(ctx, t, tid, lock, end);
    __u64 d = self_cost_timed(picked, walked) ? self_cost_add(end, walked, picked, true) : 0;
    self_cost_thread(&t->prog_runs, &t->prog_walk_ns, walked, d);
    return 0;
}

// The futex operations that wait (FUTEX_CMD_MASK applied): WAIT, LOCK_PI, WAIT_BITSET,
// WAIT_REQUEUE_PI, LOCK_PI2 (the perf tracer's filter, lock_tracer.rs FUTEX_WAIT_OPS).
static __always_inline bool waits(__u32 op)
{
    __u32 cmd = op & ~(128u | 256u);
    return cmd == 0 || cmd == 6 || cmd == 9 || cmd == 11 || cmd == 13;
}

// A futex SAMPLE record of the current thread, reserved, with its user chain, registers and
// stack copy (times 0 and the return value 0, for the caller to set before submitting it), or
// 0 when the ring buffer had no room (counted).
static __always_inline struct futex_rec *futex_sample(void *ctx, __u32 tid, __u32 pid, __u64 k,
                                                      __u64 uaddr, __u32 op)
{
    struct futex_rec *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        count(STAT_SAMPLE_LOST);
        return 0;
    }
    r->type = REC_FUTEX;
    r->tid = tid;
    r->pid = pid;
    r->weight = k;
    r->uaddr = uaddr;
    r->begin = 0;
    r->end = 0;
    r->ret = 0;
    r->op = op;
    r->pad = 0;
    r->user_bytes = bpf_get_stack(ctx, r->user, sizeof(r->user), BPF_F_USER_STACK);
    r->stack_bytes = copy_user_context(&r->ip, r->stack, STACK_BYTES);
    if (r->stack_bytes < STACK_BYTES)
        count(STAT_STACK_SHORT);
    return r;
}

// Thread `t`'s (`tid`'s) futex call ends at `end`, returning `ret`: returns whether it walked
// a chain (a sampled wait's).
static __always_inline bool futex_call_ends(void *ctx, struct thread *t, __u32 tid, __u64 end,
                                            long ret)
{
    __u64 begin = t->futex_begin;
    __u64 uaddr = t->futex_uaddr;
    __u32 op = t->futex_op;
    t->futex_begin = 0;
    if (!account(t->pid, KIND_FUTEX, uaddr, op, begin, end))
        return false;
    __u64 k = sampled_at(end);
    if (!k)
        return false;
    struct futex_rec *r = futex_sample(ctx, tid, t->pid, k, uaddr, op);
    if (!r)
        return false;
    r->begin = begin;
    r->end = end;
    r->ret = ret;
    bpf_ringbuf_submit(r, 0);
    count(STAT_SAMPLED);
    return true;
}

// The futex call's entry and exit (`calls`), on the raw system call tracepoints. They run for
// every system call of every task, so the call's number is compared before anything is
// looked up; their cost is the slow path they put every system call through (see above).
SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long nr)
{
    if (!trace_futex || futex_sleeps || nr != futex_nr)
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t)
        return 0;
    bool picked = self_cost_run();
    __u64 start = self_cost_timed(picked, false) ? bpf_ktime_get_ns() : 0;
    __u32 op = (__u32)regs->si;
    if (waits(op)) {
        t->futex_uaddr = regs->di;
        t->futex_op = op;
        t->futex_begin = bpf_ktime_get_ns();
    }
    __u64 d = start ? self_cost_add(start, false, picked, true) : 0;
    self_cost_thread(&t->prog_runs, &t->prog_walk_ns, false, d);
    return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
    if (!trace_futex || futex_sleeps || regs->orig_ax != futex_nr)
        return 0;
    __u64 end = bpf_ktime_get_ns();
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct thread *t = bpf_map_lookup_elem(&threads, &tid);
    if (!t || !t->futex_begin)
        return 0;
    bool picked = self_cost_run();
    bool walked = futex_call_ends(ctx, t, tid, end, ret);
    __u64 d = self_cost_timed(picked, walked) ? self_cost_add(end, walked, picked, true) : 0;
    self_cost_thread(&t->prog_runs, &t->prog_walk_ns, walked, d);
    return 0;
}

// A futex sleep (`sleeps`): a traced thread's blocking switch inside a futex wait begins it
// (the call's number and arguments are the user registers saved at its entry); its switch
// back in ends it.
// sched_switch runs in the switching thread (`prev`), so its user stack is the current one.
// Returns when its chain walk began (0: none was walked).
static __always_inline __u64 futex_wait_begins(void *ctx, struct task_struct *prev,
                                               struct thread *t)
{
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
    if (BPF_CORE_READ(regs, orig_ax) != futex_nr)
        return 0;
    __u32 op = (__u32)BPF_CORE_READ(regs, si);
    if (!waits(op))
        return 0;
    __u64 uaddr = BPF_CORE_READ(regs, di);
    t->futex_uaddr = uaddr;
    t->futex_op = op;
    t->futex_sampled = 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 k = sampled_at(now);
    if (!k) {
        t->futex_begin = now;
        return 0;
    }
    struct futex_rec *r = futex_sample(ctx, prev->pid, t->pid, k, uaddr, op);
    if (!r) {
        t->futex_begin = now;
        return 0;
    }
    // The walk and the copy took microseconds of this thread's time before it switched: the
    // wait begins after them, as an unsampled one would.
    r->begin = bpf_ktime_get_ns();
    t->futex_begin = r->begin;
    t->futex_sampled = 1;
    bpf_ringbuf_submit(r, 0);
    return now;
}

static __always_inline void futex_wait_ends(struct thread *t, __u32 tid)
{
    __u64 end = bpf_ktime_get_ns();
    __u64 begin = t->futex_begin;
    t->futex_begin = 0;
    bool counted = account(t->pid, KIND_FUTEX, t->futex_uaddr, t->futex_op, begin, end);
    if (!t->futex_sampled)
        return;
    t->futex_sampled = 0;
    struct futex_end_rec *e = bpf_ringbuf_reserve(&records, sizeof(*e), 0);
    if (!e) {
        count(STAT_SAMPLE_LOST);
        return;
    }
    e->type = REC_FUTEX_END;
    e->tid = tid;
    e->end = end;
    e->counted = counted;
    e->pad = 0;
    bpf_ringbuf_submit(e, 0);
    if (counted)
        count(STAT_SAMPLED);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    if (!trace_futex || !futex_sleeps)
        return 0;
    __u32 tid = prev->pid;
    struct thread *t = tid ? bpf_map_lookup_elem(&threads, &tid) : 0;
    // Timed only in a traced thread's context (`start` 0 otherwise): its cost is the trial's.
    struct thread *me = t;
    bool picked = false, walked = false;
    __u64 start = 0;
    if (t) {
        picked = self_cost_run();
        start = self_cost_timed(picked, false) ? bpf_ktime_get_ns() : 0;
        __u64 walk_began = 0;
        // A preempted thread still runs; a dying one's last switch (TASK_DEAD, 0x80) is no
        // wait.
        if (!preempt && (prev_state & 0x7f))
            walk_began = futex_wait_begins(ctx, prev, t);
        walked = walk_began != 0;
        if (walked && !start)
            start = walk_began;
    }
    tid = next->pid;
    t = tid ? bpf_map_lookup_elem(&threads, &tid) : 0;
    if (t && t->futex_begin)
        futex_wait_ends(t, tid);
    if (me) {
        __u64 d = start ? self_cost_add(start, walked, picked, true) : 0;
        self_cost_thread(&me->prog_runs, &me->prog_walk_ns, walked, d);
    }
    return 0;
}

// A traced thread's new thread or process is traced from its creation.
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
    __u32 me = (__u32)bpf_get_current_pid_tgid();
    if (!bpf_map_lookup_elem(&threads, &me))
        return 0;
    struct thread t = {.pid = child->tgid};
    __u32 tid = child->pid;
    if (bpf_map_update_elem(&threads, &tid, &t, BPF_NOEXIST) != 0)
        count(STAT_THREADS_FULL);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
    __u32 tid = p->pid;
    bpf_map_delete_elem(&threads, &tid);
    return 0;
}
