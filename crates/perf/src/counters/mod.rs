//! Hardware counters (`perf_event_open` with `inherit`) over a trial's threads and children.
//!
//! Owns opening, reading and closing the counters; every fd is closed by a `Drop`. An event
//! that cannot be counted carries its reason, never a silent zero. Knows nothing of tracing.

pub(crate) mod event;
pub(crate) mod group;
pub(crate) mod inherited;
