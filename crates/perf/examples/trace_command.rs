//! A direct lock-tracer harness for benchmarks (bench/overhead/locks-overhead): runs a command under
//! [`perf::LockTracer`] (futex waits, with user stacks unwound), draining every 10 ms as a
//! trial does, and prints the command's stdout, then on stderr the waits traced, how many
//! were unwound through a frame named `take_the_lock`, and the records lost.
//!
//! usage: trace_command STACK_BYTES CMD [ARGS…]   (STACK_BYTES 0: frame-pointer chains only)

use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(stack), Some(cmd)) = (args.first().and_then(|s| s.parse().ok()), args.get(1)) else {
        eprintln!("usage: trace_command STACK_BYTES CMD [ARGS…]");
        return ExitCode::from(2);
    };
    let config = perf::LockTraceConfig {
        kernel: false,
        user: true,
        stack_size: stack,
        ..perf::LockTraceConfig::default()
    };
    let mut tracer = match perf::LockTracer::open(&config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("lock tracing unavailable: {e}");
            return ExitCode::from(2);
        }
    };
    let mut child = match Command::new(cmd)
        .args(&args[2..])
        .stdout(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{cmd}: {e}");
            return ExitCode::from(2);
        }
    };
    let pid = child.id();
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        tracer.drain();
        std::thread::sleep(Duration::from_millis(10));
    };
    let trace = tracer.finish();
    let maps = trace.maps.get(&pid).map_or(&[][..], Vec::as_slice);
    let waits: Vec<&perf::FutexWait> = trace.futex.iter().filter(|w| w.pid == pid).collect();
    let addrs: Vec<u64> = waits
        .iter()
        .flat_map(|w| trace.chains[w.chain as usize].iter().copied())
        .collect();
    let syms = perf::UserSymbols::resolve_mapped(maps, &addrs);
    let named = waits
        .iter()
        .filter(|w| {
            trace.chains[w.chain as usize]
                .iter()
                .any(|&a| syms.frame(a).function.as_deref() == Some("take_the_lock"))
        })
        .count();
    eprintln!(
        "waits {} through_take_the_lock {} lost {}",
        waits.len(),
        named,
        trace.lost
    );
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
