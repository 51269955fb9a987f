// bench/overhead/offcpu-bpf-probe's BPF side (issue 32): off-CPU time per thread summed in the kernel on
// the BTF raw tracepoint sched_switch, with nothing written to a ring buffer per event.
//   MODE 0: count switches only (the cost of having a program on the tracepoint);
//   MODE 1: + per-thread off-CPU time summed in a hash map (blocking switch-out to switch-in);
//   MODE 2: + a kernel stack id for 1 in 16 blocking switches (sampled call chains);
//   MODE 3: + a kernel stack id for every blocking switch;
//   WAKEUP 1: + tp_btf/sched_wakeup keeping the wake-up time of threads with an open episode.
// cfg[0] is the process (tgid) whose threads are accounted, 0 for every thread of the machine
// (the bench uses 0: an upper bound on the cost); cfg[1] counts the program's runs.
// A probe for a measurement, not scalelab's tracer: no user stacks, no waker, no loss count.
#include <linux/types.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

struct task_struct { int pid; int tgid; char comm[16]; } __attribute__((preserve_access_index));

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, __u32); __type(value, __u64); } start SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, __u32); __type(value, __u64); } off SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 2); __type(key, __u32); __type(value, __u64); } cfg SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_STACK_TRACE); __uint(max_entries, 16384); __uint(key_size, 4); __uint(value_size, 127 * 8); } stacks SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __s32); __type(value, __u64); } stackcount SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
    __u32 k0 = 0, k1 = 1;
    __u64 *count = bpf_map_lookup_elem(&cfg, &k1);
    if (count) __sync_fetch_and_add(count, 1);
    if (MODE == 0) return 0;
    __u64 *want = bpf_map_lookup_elem(&cfg, &k0);
    if (!want) return 0;
    __u64 now = bpf_ktime_get_ns();
    if ((*want == 0 || (__u64)prev->tgid == *want) && (prev_state & 0xff)) {
        __u32 tid = prev->pid;
        bpf_map_update_elem(&start, &tid, &now, BPF_ANY);
        if (MODE == 3 || (MODE == 2 && (now & 15) == 0)) {
            __s32 id = bpf_get_stackid(ctx, &stacks, 0);
            __u64 one = 1, *v = bpf_map_lookup_elem(&stackcount, &id);
            if (v) __sync_fetch_and_add(v, 1); else bpf_map_update_elem(&stackcount, &id, &one, BPF_ANY);
        }
    }
    __u32 ntid = next->pid;
    __u64 *s = bpf_map_lookup_elem(&start, &ntid);
    if (s) {
        __u64 d = now - *s;
        __u64 *o = bpf_map_lookup_elem(&off, &ntid);
        if (o) __sync_fetch_and_add(o, d); else bpf_map_update_elem(&off, &ntid, &d, BPF_ANY);
        bpf_map_delete_elem(&start, &ntid);
    }
    return 0;
}
#ifndef WAKEUP
#define WAKEUP 0
#endif
char LICENSE[] SEC("license") = "GPL";

#if WAKEUP
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, __u32); __type(value, __u64); } woken SEC(".maps");

// The wake-up ends the wait: its time (and, here, nothing else) kept per thread with an open
// episode; the switch-in then closes the episode.
SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
    __u32 tid = p->pid;
    if (bpf_map_lookup_elem(&start, &tid)) {
        __u64 now = bpf_ktime_get_ns();
        bpf_map_update_elem(&woken, &tid, &now, BPF_ANY);
    }
    return 0;
}
#endif
