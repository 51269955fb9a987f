// The sampling interval both in-kernel tracers use (offcpu.bpf.c, locks.bpf.c): 1 event in k
// per CPU, k chosen so that a CPU writes about `samples_per_cpu_s` sampled records a second
// whatever the event rate. Included after libbpf's headers; user space sets the two constants
// before loading, and may lower the rate while tracing (`rate_target`) when its drain of the
// ring buffer falls behind: a slow or overloaded machine gets fewer chains, never lost ones.
#pragma once

struct rate {
    __u64 window;
    __u64 count;
    __u64 k;
};

const volatile __u64 samples_per_cpu_s = 500;
const volatile __u32 fixed_k = 0; // nonzero: sample 1 in fixed_k, whatever the rate

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rate);
} rates SEC(".maps");

// Sampled records a second per CPU now: user space's `rate_target` when it set one (its drain
// fell behind), else `samples_per_cpu_s`.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} rate_target SEC(".maps");

// When sampling begins (CLOCK_MONOTONIC ns; 0: from the start): user space holds it back while
// a trial sets up (loading its tracers, creating its tasks), whose chains no report uses, and
// releases it as the tasks start. Events before it are counted, never sampled.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} sample_from SEC(".maps");

static __always_inline bool sampling_on(__u64 now)
{
    __u32 zero = 0;
    __u64 *from = bpf_map_lookup_elem(&sample_from, &zero);
    return !from || now >= *from;
}

static __always_inline __u64 target_per_s(void)
{
    __u32 zero = 0;
    __u64 *t = bpf_map_lookup_elem(&rate_target, &zero);
    __u64 per_s = t && *t ? *t : samples_per_cpu_s;
    return per_s ? per_s : 1;
}

// 1 in how many of a window's `count` events keeps the target (a 100 ms window holds a tenth
// of a second's samples).
static __always_inline __u64 k_for(__u64 count)
{
    return count * 10 / target_per_s();
}

// This CPU's rate, its 100 ms window rolled when over (k from the last window's count).
static __always_inline struct rate *rate_now(__u64 now)
{
    __u32 zero = 0;
    struct rate *r = bpf_map_lookup_elem(&rates, &zero);
    if (!r)
        return 0;
    if (now - r->window > 100000000ULL) {
        __u64 k = k_for(r->count);
        r->k = k > 1 ? k : 1;
        r->window = now;
        r->count = 0;
    }
    return r;
}

// Counts one event of the kind sampled (the rate k follows).
static __always_inline void count_event(__u64 now)
{
    struct rate *r = rate_now(now);
    if (r)
        r->count += 1;
}

// The sampling interval for this CPU now: 1 in k, k from the last 100 ms's count of events,
// raised within a window as its count passes each multiple of the window's target (a burst,
// or a CPU's first window, is not all sampled). k never depends on the event it samples, so
// each sampled event stands for k.
static __always_inline __u64 sampling_k(__u64 now)
{
    if (fixed_k)
        return fixed_k;
    struct rate *r = rate_now(now);
    if (!r)
        return 1;
    __u64 k = r->k ? r->k : 1;
    __u64 burst = k_for(r->count) + 1;
    return burst > k ? burst : k;
}
