//! Checks the off-CPU tracer's thread accounting against the kernel's own: runs a command
//! under [`perf::OffCpuTracer`] (drained every 10 ms, as a trial does) while a side thread reads
//! every thread's `/proc/PID/task/TID/schedstat` (run time, run-queue wait) every 5 ms, and
//! prints per thread the trace's on-CPU and run-queue time against schedstat's last reading
//! (no bench runs it: `cargo run -p scalelab-perf --example thread_lives -- CMD` by hand).
//!
//! usage: thread_lives CMD [ARGS…]

use std::collections::HashMap;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every thread of process `pid` with its schedstat (run ns, wait ns).
fn schedstats(pid: u32) -> Vec<(u32, u64, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
        let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
        Some((tid, f.next()??, f.next()??))
    })
    .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprintln!("usage: thread_lives CMD [ARGS…]");
        return ExitCode::from(2);
    };
    let mut tracer = match perf::OffCpuTracer::open(&perf::OffCpuTraceConfig::default()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("off-CPU tracing unavailable: {e}");
            return ExitCode::from(2);
        }
    };
    let mut child = match Command::new(cmd).args(&args[1..]).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{cmd}: {e}");
            return ExitCode::from(2);
        }
    };
    let pid = child.id();
    let last: Arc<Mutex<HashMap<u32, (u64, u64)>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (last, done) = (last.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for (tid, run, wait) in schedstats(pid) {
                    last.lock().unwrap().insert(tid, (run, wait));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        tracer.drain();
        std::thread::sleep(Duration::from_millis(10));
    };
    done.store(true, Ordering::Relaxed);
    let _ = reader.join();
    let trace = tracer.finish_at(u64::MAX);
    let last = last.lock().unwrap();
    println!(
        "tid\tcomm\ttrace_on_cpu_ms\tschedstat_run_ms\ttrace_runq_ms\tschedstat_wait_ms\tblocked_ms\tlife_ms"
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    for t in trace.threads.iter().filter(|t| t.pid == pid) {
        let (run, wait) = last.get(&t.tid).copied().unwrap_or((0, 0));
        println!(
            "{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}",
            t.tid,
            t.comm,
            ms(t.on_cpu),
            ms(run),
            ms(t.runq),
            ms(wait),
            ms(t.blocked),
            ms(t.life())
        );
    }
    eprintln!(
        "lost {} out_of_step {} malformed {} switch-ins from their own record {} of {}",
        trace.lost,
        trace.out_of_step,
        trace.malformed,
        trace.late_switch_ins.0,
        trace.late_switch_ins.1
    );
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
