//! The system under test beyond the command's tree, while a run lasts: the `--server`s scalelab
//! starts, keeps ready and stops, and the processes `--attach` names, found again at each trial
//! ([`System::processes`]) so that the trial's tracers follow them.
//!
//! A server is `sh -c CMD` in a process group of its own, started as every child of scalelab
//! is (marked, dying with scalelab). It starts before the first trial, or before each point when
//! its command (or `--ready`) holds `{n}` — then it is restarted whenever N changes. `--ready`
//! runs until it exits 0 (every [`READY_POLL`], at most [`READY_LIMIT`]); a server that exits
//! meanwhile, or a `--ready` that never succeeds, fails the trial with the server's last output.
//! Stopping sends SIGTERM to the group, waits [`STOP_WAIT`], then kills what is left, escaped
//! descendants included ([`Leftovers`]). A server's output is kept as a bounded tail for those
//! errors, never shown on the terminal.
//!
//! Before each trial the servers' threads are placed on the CPUs `--server-cpus` says (their
//! affinity set thread by thread); attached processes are left where they run.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::child_io::{Sink, Tail, read_in_background, tail};
use super::spec::{AttachSpec, SystemSpec};
use crate::process::leftovers::Leftovers;
use crate::process::owner::{Mark, adopt};
use sys::proc_table;

/// How often `--ready` is run while a server starts.
const READY_POLL: Duration = Duration::from_millis(200);
/// How long a server may take to become ready.
const READY_LIMIT: Duration = Duration::from_secs(60);
/// Without `--ready`: how long a server must stay up after its start to count as started.
const SETTLE: Duration = Duration::from_millis(300);
/// How long a server may take to exit after SIGTERM before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// A bound on one server's process tree.
const MAX_TREE: usize = 100_000;

/// A server's output, shared between the threads reading its stdout and stderr.
#[derive(Debug, Clone, Default)]
struct SharedTail(Arc<Mutex<Tail>>);

impl Sink for SharedTail {
    fn take(&mut self, chunk: &[u8]) {
        if let Ok(mut t) = self.0.lock() {
            t.take(chunk);
        }
    }
}

impl SharedTail {
    /// The last lines, on one line, prefixed `: ` (empty when it printed nothing).
    fn text(&self) -> String {
        self.0.lock().map(|t| tail(t.bytes())).unwrap_or_default()
    }
}

/// One running server.
#[derive(Debug)]
struct Server {
    command: String,
    child: Child,
    leftovers: Leftovers,
    output: SharedTail,
}

impl Server {
    fn start(command: &str, dir: Option<&std::path::Path>) -> Result<Server, String> {
        let (mut sh, mark) = shell(command, dir, Stdio::piped);
        let mut child = sh
            .spawn()
            .map_err(|e| format!("--server `{command}`: could not start sh: {e}"))?;
        let pid = child.id() as i32;
        let output = SharedTail::default();
        // The readers end with the pipes, when the last process holding them exits.
        drop(read_in_background(child.stdout.take(), output.clone()));
        drop(read_in_background(child.stderr.take(), output.clone()));
        Ok(Server {
            command: command.to_string(),
            child,
            leftovers: Leftovers {
                leader: pid,
                pgid: pid,
                mark,
            },
            output,
        })
    }

    /// `Some(reason)` once it has exited.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "--server `{}` exited ({status}){}",
                self.command,
                self.output.text()
            )),
            Ok(None) => None,
            Err(e) => Some(format!(
                "--server `{}`: lost track of it: {e}",
                self.command
            )),
        }
    }

    /// Its shell and every process below it now.
    fn processes(&self) -> Vec<u32> {
        let pid = self.leftovers.leader;
        if proc_table::stat(pid).is_none_or(|s| s.is_zombie()) {
            return Vec::new();
        }
        let mut all = vec![pid];
        all.extend(proc_table::descendants(pid, MAX_TREE));
        all.into_iter().map(|p| p as u32).collect()
    }

    /// SIGTERM to its group, then after [`STOP_WAIT`] SIGKILL to whatever is left.
    fn stop(mut self) {
        let _ = sys::send_signal(-self.leftovers.pgid, libc::SIGTERM);
        let started = Instant::now();
        while started.elapsed() < STOP_WAIT {
            // Reaps the shell as soon as it exits; the rest of the group may still be going
            // (a process that exited and waits to be reaped counts as gone).
            let _ = self.child.try_wait();
            let pgid = self.leftovers.pgid;
            let running = proc_table::all_pids()
                .into_iter()
                .any(|p| proc_table::stat(p).is_some_and(|s| s.pgrp == pgid && !s.is_zombie()));
            if !running {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.leftovers.kill();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The servers and attached processes of a run.
#[derive(Debug, Default)]
pub(crate) struct System {
    spec: SystemSpec,
    dir: Option<std::path::PathBuf>,
    running: Vec<Server>,
    /// The N the running servers were started for, when they depend on it.
    started_for: Option<u32>,
}

impl System {
    pub(crate) fn new(spec: SystemSpec, dir: Option<std::path::PathBuf>) -> System {
        System {
            spec,
            dir,
            running: Vec::new(),
            started_for: None,
        }
    }

    /// Whether the servers are started anew for each N.
    fn per_point(&self) -> bool {
        self.spec.servers.iter().any(|s| s.contains("{n}"))
            || self.spec.ready.as_ref().is_some_and(|r| r.contains("{n}"))
    }

    /// Makes the servers run, ready, for a trial at `n` tasks: started (again, when they
    /// depend on N and ran for another), checked alive. Err names what failed, with the
    /// server's last output; `Ok(false)` when `stop` was raised meanwhile.
    pub(crate) fn ready_for(&mut self, n: u32, stop: &AtomicBool) -> Result<bool, String> {
        if self.spec.servers.is_empty() {
            return Ok(true);
        }
        let restart = self.per_point() && self.started_for != Some(n);
        if !self.running.is_empty() && !restart {
            return match self.running.iter_mut().find_map(Server::exited) {
                Some(why) => {
                    self.stop_servers();
                    Err(why)
                }
                None => Ok(true),
            };
        }
        self.stop_servers();
        let n_text = n.to_string();
        for command in &self.spec.servers {
            let server = Server::start(&command.replace("{n}", &n_text), self.dir.as_deref())?;
            self.running.push(server);
        }
        self.started_for = Some(n);
        let ready = self.spec.ready.as_ref().map(|r| r.replace("{n}", &n_text));
        let started = Instant::now();
        loop {
            if stop.load(Ordering::SeqCst) {
                self.stop_servers();
                return Ok(false);
            }
            if let Some(why) = self.running.iter_mut().find_map(Server::exited) {
                self.stop_servers();
                return Err(why);
            }
            match &ready {
                None if started.elapsed() >= SETTLE => return Ok(true),
                None => {}
                Some(cmd) => {
                    if run_ready(cmd, self.dir.as_deref()) {
                        return Ok(true);
                    }
                    if started.elapsed() > READY_LIMIT {
                        let outputs: String =
                            self.running.iter().map(|s| s.output.text()).collect();
                        self.stop_servers();
                        return Err(format!(
                            "--ready `{cmd}` did not succeed within {} s of the servers' start{outputs}",
                            READY_LIMIT.as_secs()
                        ));
                    }
                }
            }
            std::thread::sleep(READY_POLL);
        }
    }

    /// Puts every thread of the servers on `cpus` (`--server-cpus`, against the trial's CPUs).
    pub(crate) fn place(&self, trial_cpus: &[usize], usable: &[usize]) {
        let cpus = self.spec.server_cpus.cpus(trial_cpus, usable);
        for server in &self.running {
            for pid in server.processes() {
                for tid in proc_table::threads(pid as i32) {
                    // A thread that has just exited is no matter.
                    let _ = sys::set_thread_affinity(tid, &cpus);
                }
            }
        }
    }

    /// Every process of the system under test now, beside the command: the servers' trees
    /// and the attached processes (scalelab itself never).
    pub(crate) fn processes(&self) -> Vec<u32> {
        let me = std::process::id();
        let mut pids: Vec<u32> = self.running.iter().flat_map(Server::processes).collect();
        for a in &self.spec.attach {
            pids.extend(attached(a));
        }
        pids.sort_unstable();
        pids.dedup();
        pids.retain(|&p| p != me);
        pids
    }

    /// Stops every server (see the module doc).
    pub(crate) fn stop_servers(&mut self) {
        for server in self.running.drain(..) {
            server.stop();
        }
        self.started_for = None;
    }
}

impl Drop for System {
    fn drop(&mut self) {
        self.stop_servers();
    }
}

/// Runs `--ready`: whether it exited 0.
fn run_ready(command: &str, dir: Option<&std::path::Path>) -> bool {
    let (mut sh, _) = shell(command, dir, Stdio::null);
    let Ok(mut child) = sh.spawn() else {
        return false;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if started.elapsed() > READY_LIMIT => {
                let _ = sys::send_signal(-(child.id() as i32), libc::SIGKILL);
                let _ = child.wait();
                return false;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => return false,
        }
    }
}

/// `sh -c command` in `dir`, in a process group of its own, standard input closed and its
/// output to `output()`, adopted to die with scalelab: the command and its mark ([`adopt`]).
/// Spawned on the run's thread, which outlives it (the parent-death signal fires when the
/// spawning thread ends).
fn shell(command: &str, dir: Option<&std::path::Path>, output: fn() -> Stdio) -> (Command, Mark) {
    let mut sh = Command::new("sh");
    sh.args(["-c", command])
        .stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .process_group(0);
    if let Some(dir) = dir {
        sh.current_dir(dir);
    }
    let mark = adopt(&mut sh);
    (sh, mark)
}

/// The processes `spec` names now.
fn attached(spec: &AttachSpec) -> Vec<u32> {
    match spec {
        AttachSpec::Pid(pid) => proc_table::stat(*pid as i32)
            .filter(|s| !s.is_zombie())
            .map(|_| vec![*pid])
            .unwrap_or_default(),
        AttachSpec::Comm(name) => proc_table::all_pids()
            .into_iter()
            .filter(|&p| proc_table::comm(p).as_deref() == Some(name.as_str()))
            .filter(|&p| !proc_table::is_kernel_thread(p))
            .map(|p| p as u32)
            .collect(),
        AttachSpec::Cgroup(path) => {
            let mut pids = Vec::new();
            cgroup_processes(
                &std::path::Path::new("/sys/fs/cgroup").join(path),
                &mut pids,
                0,
            );
            pids
        }
    }
}

/// The processes of cgroup `dir` and of the cgroups below it (to a bounded depth).
fn cgroup_processes(dir: &std::path::Path, pids: &mut Vec<u32>, depth: usize) {
    if depth > 16 {
        return;
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        pids.extend(text.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            cgroup_processes(&e.path(), pids, depth + 1);
        }
    }
}

/// Whether the attach specs name something that runs now; Err says which names nothing.
pub(crate) fn check_attached(spec: &SystemSpec) -> Result<(), String> {
    for a in &spec.attach {
        if attached(a).is_empty() {
            let hint = match a {
                AttachSpec::Pid(_) => "no such process",
                AttachSpec::Comm(_) => {
                    "no process of that name (see `ps -eo comm`; names are cut at 15 bytes)"
                }
                AttachSpec::Cgroup(_) => {
                    "no such cgroup under /sys/fs/cgroup, or it holds no process"
                }
            };
            return Err(format!("--attach {a}: {hint}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(servers: &[&str], ready: Option<&str>) -> SystemSpec {
        SystemSpec {
            servers: servers.iter().map(|s| s.to_string()).collect(),
            ready: ready.map(str::to_string),
            ..SystemSpec::default()
        }
    }

    #[test]
    fn a_server_runs_until_stopped_and_its_whole_tree_dies_with_it() {
        let stop = AtomicBool::new(false);
        let mut system = System::new(spec(&["sleep 60 & sleep 61; wait"], None), None);
        assert_eq!(system.ready_for(1, &stop), Ok(true));
        let pids = system.processes();
        assert!(pids.len() >= 3, "sh and two sleeps: {pids:?}");
        system.stop_servers();
        for p in pids {
            let alive = proc_table::stat(p as i32).is_some_and(|s| !s.is_zombie());
            assert!(!alive, "process {p} outlived its server");
        }
    }

    #[test]
    fn a_server_that_exits_fails_with_its_last_output() {
        let stop = AtomicBool::new(false);
        let mut system = System::new(spec(&["echo no config here >&2; exit 3"], None), None);
        let err = system.ready_for(1, &stop).unwrap_err();
        assert!(err.contains("exited"), "{err}");
        assert!(err.contains("no config here"), "{err}");
    }

    #[test]
    fn ready_is_polled_until_it_succeeds_and_a_server_with_n_restarts_per_point() {
        let dir = std::env::temp_dir().join(format!("scalelab-ready-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let flag = dir.join("up-{n}");
        let stop = AtomicBool::new(false);
        let mut system = System::new(
            spec(
                &[&format!(
                    "sleep 0.5; touch {}; exec sleep 60",
                    flag.display()
                )],
                Some(&format!("test -e {}", flag.display())),
            ),
            None,
        );
        assert_eq!(system.ready_for(2, &stop), Ok(true));
        assert!(dir.join("up-2").exists());
        let first = system.processes();
        assert_eq!(system.ready_for(2, &stop), Ok(true));
        assert_eq!(system.processes(), first, "same N: the same server");
        assert_eq!(system.ready_for(3, &stop), Ok(true));
        assert!(dir.join("up-3").exists());
        assert_ne!(system.processes(), first, "another N: started anew");
        drop(system);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn attach_specs_parse_and_name_their_faults() {
        assert_eq!("pid:12".parse::<AttachSpec>(), Ok(AttachSpec::Pid(12)));
        assert_eq!(
            "comm:postgres".parse::<AttachSpec>(),
            Ok(AttachSpec::Comm("postgres".into()))
        );
        assert_eq!(
            "cgroup:/system.slice/pg.service/".parse::<AttachSpec>(),
            Ok(AttachSpec::Cgroup("system.slice/pg.service".into()))
        );
        for bad in [
            "12",
            "pid:x",
            "pid:0",
            "comm:",
            "cgroup:a/../b",
            "tid:3",
            "comm:a_very_long_name_x",
        ] {
            let err = bad.parse::<AttachSpec>().unwrap_err();
            assert!(err.contains(bad), "{bad}: {err}");
        }
        let me = std::process::id();
        assert_eq!(attached(&AttachSpec::Pid(me)), vec![me]);
        let name = proc_table::comm(me as i32).unwrap();
        assert!(attached(&AttachSpec::Comm(name)).contains(&me));
        let err = check_attached(&SystemSpec {
            attach: vec![AttachSpec::Comm("no-such-proc-x".into())],
            ..SystemSpec::default()
        })
        .unwrap_err();
        assert!(err.contains("comm:no-such-proc-x"), "{err}");
    }
}
