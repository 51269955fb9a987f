//! How many records a second one core decodes and pairs, for each off-CPU tracer: two
//! ignored tests that print their figures, run by `bench/speed/trace-throughput` in a release build
//! (they time, so they are no unit tests: `cargo test -- --ignored throughput`).
//!
//! - The perf tracer (every record through user space): a `sched_switch` sample parsed (20
//!   kernel frames, the raw tracepoint fields), and a ping-pong's records (waking, wake-up,
//!   blocking sample, switch-out, switch-in per switch) fed through the pairing engine into the
//!   thread timeline.
//! - The in-kernel tracer (only sampled episodes reach user space): BEGIN and END records
//!   decoded, their chains interned and the episodes paired (user stacks not unwound: a task
//!   waiting at one call site hits the unwinding cache).

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use crate::offcpu::bpf_records::{Record, SampledEpisodes, decode};
    use crate::offcpu::events::{SchedEvent, TimedSched};
    use crate::offcpu::timeline::Timeline;
    use crate::trace::pairing::PairingEngine;
    use crate::trace::sample::{ChainTable, parse_sample};

    /// A `sched_switch` sample body: TID, TIME, CPU, a 20-frame chain, 64 raw bytes.
    fn switch_sample() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&1_000u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&21u64.to_le_bytes());
        b.extend_from_slice(&(-128i64 as u64).to_le_bytes());
        for i in 0..20u64 {
            b.extend_from_slice(&(0xffff_ffff_8100_0000 + 64 * i).to_le_bytes());
        }
        b.extend_from_slice(&64u32.to_le_bytes());
        b.extend_from_slice(&[0u8; 64]);
        b
    }

    /// One switch of a ping-pong between threads 1 and 2 on CPU 0, `k`-th, as the perf
    /// tracer's five records.
    fn switch_records(k: u64) -> [TimedSched; 5] {
        let t = 1_000_000 + 2_000 * k;
        let (me, other) = if k % 2 == 0 { (1, 2) } else { (2, 1) };
        let rec = |time, tid, event| TimedSched {
            time,
            pid: 1,
            tid,
            cpu: 0,
            event,
        };
        [
            rec(
                t,
                me,
                SchedEvent::Waking {
                    tid: other,
                    chain: 0,
                },
            ),
            rec(
                t + 10,
                me,
                SchedEvent::Wakeup {
                    tid: other,
                    chain: 0,
                },
            ),
            rec(
                t + 500,
                me,
                SchedEvent::Blocked {
                    state: 1,
                    kernel_chain: 1,
                    user_chain: 2,
                    next_tid: other,
                },
            ),
            rec(
                t + 510,
                me,
                SchedEvent::SwitchOut {
                    preempt: false,
                    next_pid: 1,
                    next_tid: other,
                },
            ),
            rec(t + 520, other, SchedEvent::SwitchIn),
        ]
    }

    fn per_second(records: u64, started: Instant) -> f64 {
        records as f64 / started.elapsed().as_secs_f64()
    }

    #[test]
    #[ignore = "a timing, run by bench/speed/trace-throughput"]
    fn throughput_of_the_perf_tracers_user_space() {
        let body = switch_sample();
        let n = 2_000_000u64;
        let started = Instant::now();
        let mut chains = ChainTable::default();
        for _ in 0..n {
            let s = parse_sample(std::hint::black_box(&body), true, false).expect("parses");
            std::hint::black_box(chains.intern(s.callchain.iter().copied()));
        }
        let parse = per_second(n, started);
        let switches = 400_000u64;
        let started = Instant::now();
        let mut engine: PairingEngine<Timeline> = PairingEngine::default();
        for k in 0..switches {
            for r in switch_records(k) {
                engine.push(r);
            }
            if k % 1_000 == 999 {
                engine.settle(1_000_000 + 2_000 * k);
            }
        }
        let timeline = engine.finish(u64::MAX);
        let (episodes, _) = timeline.close(1_000_000 + 2_000 * switches);
        let pair = per_second(5 * switches, started);
        assert!(episodes.len() as u64 >= switches - 2, "{}", episodes.len());
        println!(
            "perf tracer: parse+intern {parse:.0} samples/s; pair {pair:.0} records/s per core"
        );
    }

    #[test]
    #[ignore = "a timing, run by bench/speed/trace-throughput"]
    fn throughput_of_the_kernel_tracers_user_space() {
        // A BEGIN with 12 kernel and 8 user frames and a 4 KiB stack, and its END.
        let mut begin = vec![0u8; 72 + 8 * 48 + 8 * 32 + 4096];
        begin[0..4].copy_from_slice(&1u32.to_le_bytes());
        begin[4..8].copy_from_slice(&7u32.to_le_bytes());
        begin[12..16].copy_from_slice(&64u32.to_le_bytes());
        begin[56..60].copy_from_slice(&(12 * 8u32).to_le_bytes());
        begin[60..64].copy_from_slice(&(8 * 8u32).to_le_bytes());
        begin[64..68].copy_from_slice(&4096u32.to_le_bytes());
        for i in 0..12 {
            let at = 72 + 8 * i;
            begin[at..at + 8]
                .copy_from_slice(&(0xffff_ffff_8100_0000u64 + 64 * i as u64).to_le_bytes());
        }
        let mut end = vec![0u8; 32 + 8 * 32];
        end[0..4].copy_from_slice(&2u32.to_le_bytes());
        end[4..8].copy_from_slice(&7u32.to_le_bytes());
        end[20..24].copy_from_slice(&9u32.to_le_bytes());
        end[24..28].copy_from_slice(&(10 * 8u32).to_le_bytes());
        let n = 500_000u64;
        let mut chains = ChainTable::default();
        let mut episodes = SampledEpisodes::default();
        let started = Instant::now();
        for _ in 0..n {
            let Some(Record::Begin(b)) = decode(std::hint::black_box(&begin)) else {
                panic!("BEGIN")
            };
            let k = chains.intern(b.kernel.iter().copied());
            let u = chains.intern(b.user.iter().copied());
            episodes.begin(&b, k, u);
            let Some(Record::End(e)) = decode(std::hint::black_box(&end)) else {
                panic!("END")
            };
            let w = e
                .waker
                .as_ref()
                .map_or(u32::MAX, |(_, _, c)| chains.intern(c.iter().copied()));
            episodes.end(&e, w);
        }
        let rate = per_second(2 * n, started);
        assert_eq!(episodes.close().len() as u64, n);
        println!("kernel tracer: decode+intern+pair {rate:.0} records/s per core");
    }
}
