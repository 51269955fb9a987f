//! Linux performance observation through `perf_event_open`: hardware counters inherited by a
//! trial's threads and children (later also tracepoint readers and perf.data parsing).
//!
//! Counters are owned by types whose `Drop` closes the fds, and an unavailable counter is
//! never silently zero: it carries a [`PerfError`] text naming the event, the errno and the fix.

mod error;
mod event;
mod inherited;

pub use error::PerfError;
pub use event::{CounterReading, HwEvent};
pub use inherited::InheritedCounters;
