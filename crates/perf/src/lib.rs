//! Linux performance observation: perf_event_open counters.
