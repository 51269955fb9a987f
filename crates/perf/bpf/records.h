// What every tracer program has: the ring buffer `records` (8 MiB here; user space sizes it
// from the CPU count and the sampling rate before loading, `bpf_load::records_ring_bytes`; each file defines its
// records' layouts) and `stats`, a per-CPU array of STATS counters (each file names its slots
// and defines STATS before including this), with `count` to add one.
#pragma once

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 8 << 20);
} records SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, STATS);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

char LICENSE[] SEC("license") = "GPL";

static __always_inline void count(__u32 slot)
{
    __u64 *v = bpf_map_lookup_elem(&stats, &slot);
    if (v)
        *v += 1;
}
