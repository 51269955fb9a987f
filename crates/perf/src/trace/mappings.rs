//! [`MappingStream`]: the exec, fork and executable-mmap records of the traced tasks (perf's
//! "side band"), applied to an [`Unwinder`] so that a process's user stacks unwind after the
//! process is gone.
//!
//! A tracer applies the records before it unwinds the samples of the same drain; a process that
//! existed before the tracer opened has no records (the unwinder reads its `/proc/PID/maps`). The
//! fds close on drop. Which records, and why they are needed: `docs/notes/perf-tracers.md`.

use perf_event::data::Record as Parsed;
use perf_event::events::Software;
use perf_event::{Builder, Clock, SampleFlag, Sampler};

use crate::trace::ring::{lost_records, ring_bytes};
use perf_read::error::PerfError;
use perf_read::unwind::{MappedFile, Unwinder};

/// Ring buffer data size per CPU wanted: an exec and its libraries are a few dozen records.
const BUFFER_BYTES: usize = 64 << 10;
/// All CPUs' rings together, at most (`ring_bytes`): 16 KiB per CPU at 512 CPUs.
const BUDGET_BYTES: usize = 8 << 20;
/// `PERF_RECORD_MISC_COMM_EXEC`.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// `PROT_EXEC`.
const PROT_EXEC: u32 = 4;

/// What one side-band record says about an address space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MappingChange {
    /// Process `pid` exec'd: its mappings start over.
    Exec { pid: u32 },
    /// Process `child` was forked from `parent`.
    Fork { parent: u32, child: u32 },
    /// Process `pid` mapped a file executable.
    Map { pid: u32, map: MappedFile },
}

impl MappingChange {
    /// Applies the change to `unwinder`.
    pub(crate) fn apply(self, unwinder: &mut Unwinder) {
        match self {
            MappingChange::Exec { pid } => unwinder.forget(pid as i32),
            MappingChange::Fork { parent, child } => {
                let (parent, child) = (parent as i32, child as i32);
                if unwinder.maps(parent).is_empty() {
                    // A parent from before the tracer opened: alive at its fork.
                    unwinder.load_process(parent);
                }
                unwinder.fork(parent, child);
            }
            MappingChange::Map { pid, map } => {
                let path = std::path::PathBuf::from(&map.path);
                unwinder.add_mapping(pid as i32, map, &path);
            }
        }
    }
}

/// A thread's creation, exit or name, as the side band records it (for the off-CPU tracer's
/// thread lives; the lock tracer ignores them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRecord {
    /// CLOCK_MONOTONIC ns.
    pub time: u64,
    /// The thread's process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    pub what: TaskChange,
}

/// What a [`TaskRecord`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TaskChange {
    /// Created by thread `parent`.
    Fork { parent: u32 },
    /// Exited.
    Exit,
    /// Named (`prctl(PR_SET_NAME)`, `pthread_setname_np` or an exec).
    Comm(String),
}

/// One CPU's dummy event.
struct Stream {
    sampler: Sampler,
}

/// The side-band events of a tracer, per online CPU; `Drop` unmaps and closes them.
pub(crate) struct MappingStream {
    streams: Vec<Stream>,
    /// Records the kernel dropped (the buffer was full).
    pub(crate) lost: u64,
    /// For events of the whole CPU ([`open_cpu_wide`](MappingStream::open_cpu_wide)): the
    /// processes followed, the first and those it forked since, transitively; other processes'
    /// records are passed over.
    follow: Option<std::collections::HashSet<u32>>,
}

impl std::fmt::Debug for MappingStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappingStream")
            .field("cpus", &self.streams.len())
            .field("lost", &self.lost)
            .finish()
    }
}

impl MappingStream {
    /// Opens the dummy events on the calling thread for `cpus`, inherited by the threads and
    /// processes it creates from now on.
    pub(crate) fn open(cpus: &[usize]) -> Result<MappingStream, PerfError> {
        Self::open_with(cpus, None)
    }

    /// Opens the dummy events for the whole of each CPU in `cpus`, following process `pid` and
    /// the processes it creates from now on. No event is attached to the tasks: an inherited
    /// event makes every context switch of theirs do perf's work (seen: `pipe_pingpong` N=2
    /// with the in-kernel off-CPU accounting kept 0.78 of its untraced throughput with the
    /// side band inherited, 0.94 with it CPU-wide). The records of other processes are read
    /// and passed over.
    pub(crate) fn open_cpu_wide(cpus: &[usize], pid: u32) -> Result<MappingStream, PerfError> {
        Self::open_with(cpus, Some(pid))
    }

    fn open_with(cpus: &[usize], follow: Option<u32>) -> Result<MappingStream, PerfError> {
        let name = "dummy (mmap, comm, task records)";
        let bytes = Self::ring(cpus.len());
        let mut streams = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let mut builder = Builder::new(Software::DUMMY);
            match follow {
                Some(_) => builder.any_pid(),
                None => builder.observe_self().inherit(true),
            };
            builder
                .one_cpu(cpu)
                .include_kernel()
                .exclude_hv(true)
                .mmap(true)
                .mmap2(true)
                .comm(true)
                .comm_exec(true)
                .task(true)
                .sample_id_all(true)
                .sample(SampleFlag::TID | SampleFlag::TIME)
                .clockid(Clock::MONOTONIC)
                .enabled(true);
            let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
            let sampler = counter
                .sampled(bytes)
                .map_err(|e| PerfError::open(name, &e))?;
            streams.push(Stream { sampler });
        }
        Ok(MappingStream {
            streams,
            lost: 0,
            follow: follow.map(|pid| std::iter::once(pid).collect()),
        })
    }

    /// Each CPU's ring size on a machine of `cpus` CPUs.
    fn ring(cpus: usize) -> usize {
        ring_bytes(BUFFER_BYTES, cpus, BUDGET_BYTES)
    }

    /// The ring buffer memory of the side band on a machine of `cpus` CPUs, in bytes.
    pub(crate) fn locked_bytes(cpus: usize) -> usize {
        cpus.max(1) * Self::ring(cpus)
    }

    /// Reads every record so far and applies them, oldest first, to `unwinder`; returns the
    /// threads' creations, exits and names among them.
    pub(crate) fn apply(&mut self, unwinder: &mut Unwinder) -> Vec<TaskRecord> {
        let mut changes: Vec<(u64, MappingChange)> = Vec::new();
        let mut tasks = Vec::new();
        for stream in &mut self.streams {
            while let Some(record) = stream.sampler.next_record() {
                let (ty, misc) = (record.ty(), record.misc());
                let body = record.to_contiguous().into_owned();
                let lost = lost_records(ty, &body);
                if lost > 0 {
                    self.lost += lost;
                    continue;
                }
                let Ok(parsed) = record.parse_record() else {
                    continue;
                };
                let time = sample_id_time(&body);
                if let Some(change) = change_of(&parsed, misc) {
                    changes.push((time, change));
                }
                tasks.extend(task_of(&parsed, time));
            }
        }
        changes.sort_by_key(|(t, _)| *t);
        for (_, change) in changes {
            if let Some(follow) = &mut self.follow {
                if !follows(follow, &change) {
                    continue;
                }
            }
            change.apply(unwinder);
        }
        if let Some(follow) = &self.follow {
            tasks.retain(|t| follow.contains(&t.pid));
        }
        tasks
    }

    /// Follows process `pid` too (one that existed before the stream opened: its mappings
    /// are read from /proc when first needed), and the processes it creates from now on.
    pub(crate) fn follow(&mut self, pid: u32) {
        if let Some(follow) = &mut self.follow {
            follow.insert(pid);
        }
    }

    /// Stops recording.
    pub(crate) fn disable(&mut self) {
        for s in &mut self.streams {
            let _ = s.sampler.as_counter_mut().disable();
        }
    }
}

/// Whether `change` is of a followed process; a fork by one adds its child.
fn follows(follow: &mut std::collections::HashSet<u32>, change: &MappingChange) -> bool {
    match *change {
        MappingChange::Fork { parent, child } if follow.contains(&parent) => {
            follow.insert(child);
            true
        }
        MappingChange::Fork { .. } => false,
        MappingChange::Exec { pid } | MappingChange::Map { pid, .. } => follow.contains(&pid),
    }
}

/// The time a record was written: with `sample_id_all` and a sample type of `TID | TIME`,
/// every record ends with `{ u32 pid, tid; u64 time }`. 0 for a body too short to carry it.
fn sample_id_time(body: &[u8]) -> u64 {
    body.len()
        .checked_sub(8)
        .and_then(|at| body[at..].try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The thread event a parsed record is, if any (`time`: the record's own).
fn task_of(parsed: &Parsed<'_>, time: u64) -> Option<TaskRecord> {
    let (pid, tid, what) = match parsed {
        Parsed::Fork(f) => (f.pid, f.tid, TaskChange::Fork { parent: f.ptid }),
        Parsed::Exit(e) => (e.pid, e.tid, TaskChange::Exit),
        Parsed::Comm(c) => (
            c.pid,
            c.tid,
            TaskChange::Comm(
                String::from_utf8_lossy(&c.comm)
                    .trim_end_matches('\0')
                    .into(),
            ),
        ),
        _ => return None,
    };
    Some(TaskRecord {
        time,
        pid,
        tid,
        what,
    })
}

/// What a parsed record changes, if anything.
fn change_of(parsed: &Parsed<'_>, misc: u16) -> Option<MappingChange> {
    match parsed {
        Parsed::Comm(c) if misc & MISC_COMM_EXEC != 0 => Some(MappingChange::Exec { pid: c.pid }),
        Parsed::Fork(f) if f.pid != f.ppid => Some(MappingChange::Fork {
            parent: f.ppid,
            child: f.pid,
        }),
        Parsed::Mmap2(m) => map_change(m.pid, m.addr, m.len, m.pgoff, m.prot, &m.filename),
        Parsed::Mmap(m) => map_change(m.pid, m.addr, m.len, m.pgoff, PROT_EXEC, &m.filename),
        _ => None,
    }
}

fn map_change(
    pid: u32,
    addr: u64,
    len: u64,
    pgoff: u64,
    prot: u32,
    filename: &[u8],
) -> Option<MappingChange> {
    let path = std::str::from_utf8(filename).ok()?;
    let path = path.trim_end_matches('\0');
    if prot & PROT_EXEC == 0 || !path.starts_with('/') || len == 0 {
        return None;
    }
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Some(MappingChange::Map {
        pid,
        map: MappedFile {
            start: addr,
            end: addr.checked_add(len)?,
            offset: pgoff,
            path: path.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_exe() -> String {
        std::fs::read_link("/proc/self/exe")
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn only_executable_file_mappings_become_changes() {
        let exe = this_exe();
        let name = format!("{exe}\0\0\0");
        let change = map_change(7, 0x1000, 0x2000, 0x3000, PROT_EXEC | 1, name.as_bytes());
        assert_eq!(
            change,
            Some(MappingChange::Map {
                pid: 7,
                map: MappedFile {
                    start: 0x1000,
                    end: 0x3000,
                    offset: 0x3000,
                    path: exe.clone(),
                },
            })
        );
        assert_eq!(map_change(7, 0x1000, 0x2000, 0, 1, exe.as_bytes()), None);
        assert_eq!(map_change(7, 0x1000, 0x2000, 0, PROT_EXEC, b"[vdso]"), None);
        assert_eq!(
            map_change(7, u64::MAX, 2, 0, PROT_EXEC, exe.as_bytes()),
            None
        );
        let deleted = format!("{exe} (deleted)");
        let Some(MappingChange::Map { map, .. }) =
            map_change(7, 0, 1, 0, PROT_EXEC, deleted.as_bytes())
        else {
            panic!("a deleted file's mapping is kept");
        };
        assert_eq!(map.path, exe);
    }

    #[test]
    fn a_records_time_is_its_last_eight_bytes() {
        let mut body = vec![0u8; 24];
        body[16..].copy_from_slice(&123_456u64.to_le_bytes());
        assert_eq!(sample_id_time(&body), 123_456);
        assert_eq!(sample_id_time(&[1, 2, 3]), 0);
    }

    #[test]
    fn a_cpu_wide_side_band_follows_its_process_and_the_children_it_forks() {
        let mut follow: std::collections::HashSet<u32> = [10].into_iter().collect();
        let map = |pid| MappingChange::Map {
            pid,
            map: MappedFile {
                start: 0,
                end: 1,
                offset: 0,
                path: "/bin/sh".into(),
            },
        };
        assert!(!follows(&mut follow, &map(99)), "another process");
        assert!(!follows(
            &mut follow,
            &MappingChange::Fork {
                parent: 99,
                child: 100
            }
        ));
        assert!(follows(
            &mut follow,
            &MappingChange::Fork {
                parent: 10,
                child: 11
            }
        ));
        assert!(follows(
            &mut follow,
            &MappingChange::Fork {
                parent: 11,
                child: 12
            }
        ));
        assert!(follows(&mut follow, &map(12)), "a grandchild");
        assert!(follows(&mut follow, &MappingChange::Exec { pid: 11 }));
        assert!(!follows(&mut follow, &map(100)));
    }

    #[test]
    fn a_fork_copies_the_parent_and_an_exec_starts_over() {
        let exe = this_exe();
        let mut unwinder = Unwinder::default();
        let map = MappedFile {
            start: 0x1000,
            end: 0x2000,
            offset: 0,
            path: exe,
        };
        MappingChange::Map {
            pid: 10,
            map: map.clone(),
        }
        .apply(&mut unwinder);
        MappingChange::Fork {
            parent: 10,
            child: 11,
        }
        .apply(&mut unwinder);
        assert_eq!(unwinder.maps(11), std::slice::from_ref(&map));
        MappingChange::Exec { pid: 11 }.apply(&mut unwinder);
        assert!(unwinder.maps(11).is_empty());
        assert_eq!(unwinder.maps(10).len(), 1);
    }
}
