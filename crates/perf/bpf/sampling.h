// The sampling interval both in-kernel tracers use (offcpu.bpf.c, locks.bpf.c): 1 event in k
// per CPU, k chosen so that a CPU writes about `samples_per_cpu_s` sampled records a second
// whatever the event rate. Included after libbpf's headers; user space sets the two constants
// before loading.
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

static __always_inline __u64 per_window(void)
{
    __u64 n = samples_per_cpu_s / 10;
    return n ? n : 1;
}

// This CPU's rate, its 100 ms window rolled when over (k from the last window's count).
static __always_inline struct rate *rate_now(__u64 now)
{
    __u32 zero = 0;
    struct rate *r = bpf_map_lookup_elem(&rates, &zero);
    if (!r)
        return 0;
    if (now - r->window > 100000000ULL) {
        __u64 k = r->count / per_window();
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
    __u64 burst = r->count / per_window() + 1;
    return burst > k ? burst : k;
}
