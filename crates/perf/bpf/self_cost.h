// What a tracer's own programs cost the trial's threads: the time of their runs in a traced
// thread's context (the kernel charges it to that thread, as system CPU). A cpu-clock profile
// cannot see it: the programs run with interrupts off, so the profile's samples of that time
// land where interrupts come back on (finish_task_switch, _raw_spin_unlock_irqrestore), or are
// lost; explain names it as the measuring itself instead (issue 32).
//
// Two clock reads a run would add to the cheapest runs a fifth of their cost, so most runs are
// only counted: about 1 in 16 is picked and timed, and every run that walked a call chain or
// copied a stack (microseconds, 1 in k) is timed too. User space estimates the sum: the walks'
// time, plus the picked runs' mean × the other runs (crates/perf/src/bpf/self_cost.rs). The pick
// is the count's Weyl sequence (count × the golden ratio, its top 4 bits 0), not every 16th:
// a CPU's runs come in patterns (a waking, a switch, a waking …) that every 16th run would
// sample in one phase only. A run in a context that is not a traced thread's (a waking from an
// interrupt on another task) is counted and, when timed, adds 0: the mean is then that of the
// trial's share. `time_every_run` (set by user space, to check the estimate) times every run
// as well, into `all_ns`. Included after libbpf's headers.
#pragma once

const volatile __u8 time_every_run = 0;

// The layout user space reads (self_cost.rs `ProgramRuns`); change both together.
struct self_cost {
    __u64 runs;       // runs counted (in a traced thread's context, or that may be)
    __u64 timed_runs; // of them, picked and timed (no walk)
    __u64 timed_ns;   // their time, in a traced thread's context
    __u64 walk_runs;  // runs that walked a chain or copied a stack, each timed
    __u64 walk_ns;    // their time, in a traced thread's context
    __u64 all_ns;     // with time_every_run: every run's without a walk (else 0)
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct self_cost);
} self_costs SEC(".maps");

// Counts a run; returns whether it is picked to be timed (about 1 in 16).
static __always_inline bool self_cost_run(void)
{
    __u32 zero = 0;
    struct self_cost *c = bpf_map_lookup_elem(&self_costs, &zero);
    if (!c)
        return false;
    c->runs += 1;
    return (c->runs * 0x9E3779B97F4A7C15ULL) >> 60 == 0;
}

// Whether a run is timed: `picked`, it `walked`, or every run is.
static __always_inline bool self_cost_timed(bool picked, bool walked)
{
    return picked || walked || time_every_run;
}

// Adds a timed run begun at `begin` (see self_cost_timed) and returns its time. `in_trial`:
// it ran in a traced thread's context (else it adds no time, and returns 0).
static __always_inline __u64 self_cost_add(__u64 begin, bool walked, bool picked, bool in_trial)
{
    __u32 zero = 0;
    struct self_cost *c = bpf_map_lookup_elem(&self_costs, &zero);
    if (!c)
        return 0;
    __u64 d = in_trial ? bpf_ktime_get_ns() - begin : 0;
    if (walked) {
        c->walk_runs += 1;
        c->walk_ns += d;
        return d;
    }
    if (picked) {
        c->timed_runs += 1;
        c->timed_ns += d;
    }
    if (time_every_run)
        c->all_ns += d;
    return d;
}

// Counts a run on the thread in whose context it ran (its `runs` and `walk_ns` fields): a
// walk's time `d` (walks are always timed), or one more run without a walk, whose time user
// space estimates by the picked runs' mean. Only that thread's own programs write these
// fields, so no other CPU races with the addition. User space sums them over the threads
// whose CPU the trial's accounting holds (a built-in's tasks, not their echo partners; a
// command's workers), where the per-CPU sums above hold every traced thread's.
static __always_inline void self_cost_thread(__u64 *runs, __u64 *walk_ns, bool walked, __u64 d)
{
    if (walked)
        *walk_ns += d;
    else
        *runs += 1;
}
