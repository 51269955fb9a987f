//! A perf ring's `PERF_RECORD_SAMPLE` read as the tracers open it ([`parse_sample`]), a raw
//! tracepoint field ([`Field`]), a call chain split at its context markers ([`split_chain`])
//! and call chains interned ([`ChainTable`]).
//!
//! Pure: no system calls, tested on synthetic bytes. A malformed body reads as `None`, never
//! a panic; context markers never reach an interned chain.

use std::collections::HashMap;

use perf_read::unwind::UserRegs;

/// `PERF_CONTEXT_MAX`: call chain entries at or above it are context markers.
pub(crate) const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// `PERF_CONTEXT_KERNEL` and `PERF_CONTEXT_USER` call chain markers.
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;

/// Interns call chains: equal chains share one index.
#[derive(Debug, Default)]
pub(crate) struct ChainTable {
    index: HashMap<Vec<u64>, u32>,
    chains: Vec<Vec<u64>>,
}

impl ChainTable {
    /// Interns `raw` (as the kernel wrote it) without its context markers.
    pub(crate) fn intern(&mut self, raw: impl Iterator<Item = u64>) -> u32 {
        let chain: Vec<u64> = raw.filter(|&ip| ip < PERF_CONTEXT_MAX).collect();
        if let Some(&i) = self.index.get(&chain) {
            return i;
        }
        let i = u32::try_from(self.chains.len()).unwrap_or(u32::MAX);
        self.chains.push(chain.clone());
        self.index.insert(chain, i);
        i
    }
    /// The chain interned as `i`.
    pub(crate) fn get(&self, i: u32) -> Option<&[u64]> {
        self.chains.get(i as usize).map(Vec::as_slice)
    }
    pub(crate) fn into_chains(self) -> Vec<Vec<u64>> {
        self.chains
    }
}

/// Where the fields of a tracepoint's raw record are (from its tracefs format).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

impl Field {
    /// Reads the field from `raw` (little-endian), sign-extending signed fields.
    pub(crate) fn read(&self, raw: &[u8]) -> Option<u64> {
        let bytes = raw.get(self.offset..self.offset.checked_add(self.size)?)?;
        let mut buf = [0u8; 8];
        let n = self.size.min(8);
        buf[..n].copy_from_slice(&bytes[..n]);
        let v = u64::from_le_bytes(buf);
        if self.signed && n < 8 && n > 0 {
            let shift = 64 - 8 * n as u32;
            return Some((((v << shift) as i64) >> shift) as u64);
        }
        Some(v)
    }
}

/// A `PERF_RECORD_SAMPLE` body with `TID | TIME | CPU | [CALLCHAIN] | RAW | [REGS_USER |
/// STACK_USER]`.
#[derive(Debug, Clone)]
pub(crate) struct Sample<'a> {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    /// The CPU the record was taken on.
    pub cpu: u32,
    pub callchain: Vec<u64>,
    pub raw: &'a [u8],
    /// The user registers ([`perf_read::unwind::REGS_MASK`]), absent when the sample was taken
    /// with no user context (a kernel thread).
    pub regs: Option<UserRegs>,
    /// The valid part of the user stack copy, starting at `regs.sp`.
    pub stack: &'a [u8],
}

/// Parses a sample body laid out for `TID | TIME | CPU | [CALLCHAIN] | RAW`, followed by
/// `REGS_USER` (BP, SP, IP) and `STACK_USER` when `user_stack`.
pub(crate) fn parse_sample(body: &[u8], callchain: bool, user_stack: bool) -> Option<Sample<'_>> {
    let u32_at = |o: usize| -> Option<u32> {
        Some(u32::from_le_bytes(body.get(o..o + 4)?.try_into().ok()?))
    };
    let u64_at = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(body.get(o..o + 8)?.try_into().ok()?))
    };
    let pid = u32_at(0)?;
    let tid = u32_at(4)?;
    let time = u64_at(8)?;
    let cpu = u32_at(16)?;
    let mut at = 24; // pid, tid, time, cpu, reserved
    let mut chain = Vec::new();
    if callchain {
        let nr = usize::try_from(u64_at(at)?).ok()?;
        at += 8;
        if nr > 4096 {
            return None;
        }
        for i in 0..nr {
            chain.push(u64_at(at + 8 * i)?);
        }
        at += 8 * nr;
    }
    let size = u32_at(at)? as usize;
    let raw = body.get(at + 4..(at + 4).checked_add(size)?)?;
    at += 4 + size;
    let (mut regs, mut stack) = (None, &[][..]);
    if user_stack {
        let abi = u64_at(at)?;
        at += 8;
        if abi != 0 {
            regs = Some(UserRegs {
                bp: u64_at(at)?,
                sp: u64_at(at + 8)?,
                ip: u64_at(at + 16)?,
            });
            at += 24;
        }
        let size = usize::try_from(u64_at(at)?).ok()?;
        at += 8;
        if size != 0 {
            let data = body.get(at..at.checked_add(size)?)?;
            let valid = usize::try_from(u64_at(at + size)?).ok()?.min(size);
            stack = &data[..valid];
        }
    }
    Some(Sample {
        pid,
        tid,
        time,
        cpu,
        callchain: chain,
        raw,
        regs,
        stack,
    })
}

/// Splits a raw call chain at its context markers into (kernel, user) frames.
pub(crate) fn split_chain(raw: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let (mut kernel, mut user) = (Vec::new(), Vec::new());
    let mut in_user = false;
    for &ip in raw {
        match ip {
            CONTEXT_KERNEL => in_user = false,
            CONTEXT_USER => in_user = true,
            ip if ip >= PERF_CONTEXT_MAX => {}
            ip if in_user => user.push(ip),
            ip => kernel.push(ip),
        }
    }
    (kernel, user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_interned_without_context_markers() {
        let mut t = ChainTable::default();
        let user = -512i64 as u64;
        let a = t.intern([user, 1, 2].into_iter());
        let b = t.intern([1, 2].into_iter());
        let c = t.intern([3].into_iter());
        assert_eq!((a, b, c), (0, 0, 1));
        assert_eq!(t.into_chains(), vec![vec![1, 2], vec![3]]);
    }

    #[test]
    fn samples_parse_with_and_without_call_chains() {
        let mut body = Vec::new();
        body.extend_from_slice(&100u32.to_le_bytes()); // pid
        body.extend_from_slice(&101u32.to_le_bytes()); // tid
        body.extend_from_slice(&5555u64.to_le_bytes()); // time
        body.extend_from_slice(&1u32.to_le_bytes()); // cpu
        body.extend_from_slice(&0u32.to_le_bytes());
        let mut with_chain = body.clone();
        with_chain.extend_from_slice(&2u64.to_le_bytes());
        with_chain.extend_from_slice(&0xaaau64.to_le_bytes());
        with_chain.extend_from_slice(&0xbbbu64.to_le_bytes());
        for b in [&mut body, &mut with_chain] {
            b.extend_from_slice(&4u32.to_le_bytes());
            b.extend_from_slice(&[1, 2, 3, 4]);
        }
        let s = parse_sample(&body, false, false).unwrap();
        assert_eq!((s.pid, s.tid, s.time), (100, 101, 5555));
        assert_eq!(s.raw, &[1u8, 2, 3, 4][..]);
        // The process id travels with every wait: a command's waits are told apart from
        // scalelab's own by it, and its user addresses resolve in that process.
        let s = parse_sample(&with_chain, true, false).unwrap();
        assert_eq!(s.callchain, vec![0xaaa, 0xbbb]);
        assert_eq!(s.raw, &[1, 2, 3, 4]);
        assert!(parse_sample(&with_chain[..30], true, false).is_none());
        // REGS_USER (abi, BP, SP, IP) and STACK_USER (size, 16 bytes, dyn_size 8).
        let mut with_stack = with_chain.clone();
        for v in [2u64, 0xb0, 0x5000, 0x7f00] {
            with_stack.extend_from_slice(&v.to_le_bytes());
        }
        with_stack.extend_from_slice(&16u64.to_le_bytes());
        with_stack.extend_from_slice(&[7; 8]);
        with_stack.extend_from_slice(&[0; 8]);
        with_stack.extend_from_slice(&8u64.to_le_bytes());
        let s = parse_sample(&with_stack, true, true).unwrap();
        let regs = s.regs.unwrap();
        assert_eq!((regs.bp, regs.sp, regs.ip), (0xb0, 0x5000, 0x7f00));
        assert_eq!(s.stack, &[7; 8]);
        // A kernel thread has no user registers (abi 0) and an empty stack.
        let mut no_user = with_chain.clone();
        no_user.extend_from_slice(&0u64.to_le_bytes());
        no_user.extend_from_slice(&0u64.to_le_bytes());
        let s = parse_sample(&no_user, true, true).unwrap();
        assert!(s.regs.is_none() && s.stack.is_empty());
        assert!(parse_sample(&with_stack[..with_stack.len() - 4], true, true).is_none());
    }

    #[test]
    fn fields_read_little_endian_and_sign_extend() {
        let raw = [0u8, 0, 0, 0, 0xf5, 0xff, 0xff, 0xff, 0x34, 0x12];
        let signed = Field {
            offset: 4,
            size: 4,
            signed: true,
        };
        assert_eq!(signed.read(&raw).map(|v| v as i64), Some(-11));
        let unsigned = Field {
            offset: 8,
            size: 2,
            signed: false,
        };
        assert_eq!(unsigned.read(&raw), Some(0x1234));
        assert_eq!(unsigned.read(&raw[..9]), None);
    }

    /// Was a panic ("attempt to add with overflow"): a tracefs format's offset near the end of
    /// the address space plus the field's size.
    #[test]
    fn a_field_offset_at_the_end_of_the_address_space_reads_nothing() {
        let far = Field {
            offset: usize::MAX - 2,
            size: 8,
            signed: false,
        };
        assert_eq!(far.read(&[0u8; 16]), None);
    }

    #[test]
    fn chains_split_at_their_context_markers() {
        let raw = [
            CONTEXT_KERNEL,
            0xffff_0001,
            0xffff_0002,
            CONTEXT_USER,
            0x5501,
            0x5502,
        ];
        assert_eq!(
            split_chain(&raw),
            (vec![0xffff_0001, 0xffff_0002], vec![0x5501, 0x5502])
        );
        assert_eq!(split_chain(&[]), (vec![], vec![]));
    }
}
