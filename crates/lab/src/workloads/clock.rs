//! `clock`: reading the time, through the vDSO or a real system call, from every task at once.
//! The gettimeofday/cmpxchg-jitter story: a clock read should cost the same at 1 and N tasks and
//! never go backwards. Each task checks every reading against its previous one and counts the
//! times it went backwards (`time_backwards`, which must be 0).

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const BATCH: u64 = 64;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "clock",
    op: "one clock read",
    stresses: "timekeeping read side: vDSO seqlock and clocksource read (source=vdso) or syscall entry plus ktime read (source=syscall)",
    params: &[
        ParamSpec {
            name: "source",
            default: "vdso",
            kind: ParamKind::Choice(&["vdso", "syscall"]),
            help: "read through the vDSO or enter the kernel",
        },
        ParamSpec {
            name: "clock",
            default: "monotonic",
            kind: ParamKind::Choice(&["monotonic", "realtime", "gettimeofday"]),
            help: "clock_gettime(CLOCK_MONOTONIC), clock_gettime(CLOCK_REALTIME) or gettimeofday()",
        },
    ],
    uses_files: false,
};

pub(super) struct Clock;

#[derive(Clone, Copy)]
enum Reader {
    MonotonicVdso,
    RealtimeVdso,
    GettimeofdayVdso,
    MonotonicSyscall,
    RealtimeSyscall,
    GettimeofdaySyscall,
}

impl Reader {
    #[inline]
    fn read(self) -> u64 {
        match self {
            Reader::MonotonicVdso => sys::clock_gettime_vdso(sys::ClockId::Monotonic),
            Reader::RealtimeVdso => sys::clock_gettime_vdso(sys::ClockId::Realtime),
            Reader::GettimeofdayVdso => sys::gettimeofday_vdso(),
            Reader::MonotonicSyscall => sys::clock_gettime_syscall(sys::ClockId::Monotonic),
            Reader::RealtimeSyscall => sys::clock_gettime_syscall(sys::ClockId::Realtime),
            Reader::GettimeofdaySyscall => sys::gettimeofday_syscall(),
        }
    }
}

impl Workload for Clock {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, params: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        let syscall = params.text("source")? == "syscall";
        let reader = match (params.text("clock")?, syscall) {
            ("monotonic", false) => Reader::MonotonicVdso,
            ("realtime", false) => Reader::RealtimeVdso,
            ("gettimeofday", false) => Reader::GettimeofdayVdso,
            ("monotonic", true) => Reader::MonotonicSyscall,
            ("realtime", true) => Reader::RealtimeSyscall,
            (_, true) => Reader::GettimeofdaySyscall,
            (_, false) => Reader::GettimeofdayVdso,
        };
        Ok(Box::new(ClockPrepared { reader }))
    }
}

struct ClockPrepared {
    reader: Reader,
}

impl Prepared for ClockPrepared {
    fn extra_names(&self) -> &'static [&'static str] {
        &["time_backwards"]
    }
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let last = self.reader.read();
        Ok(Box::new(ClockTask {
            reader: self.reader,
            last,
            backwards: 0,
        }))
    }
}

struct ClockTask {
    reader: Reader,
    last: u64,
    backwards: u64,
}

impl TaskLoop for ClockTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            let now = self.reader.read();
            self.backwards += u64::from(now < self.last);
            self.last = now;
        }
        Ok(BATCH)
    }
    fn extras(&self) -> Vec<(&'static str, u64)> {
        vec![("time_backwards", self.backwards)]
    }
}
