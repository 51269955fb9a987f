//! [`RecordGuard`]: the reader `linux-perf-data` reads a perf.data through, which checks each
//! record's header before handing over its bytes.
//!
//! Once the crate starts on the records (it seeks to the data section's start), every record
//! header is read ahead and checked before any of its bytes are passed on: its size must cover
//! the header and end inside the data section; an `AUXTRACE` record's trailing data (whose
//! length the crate adds to its buffer before reading it) must end there too; and compressed
//! records are refused, since what a zstd frame inflates to is not bounded by the file (scalelab
//! records without `-z`). A read never crosses into the next record unchecked. A refusal is an
//! `io::Error` of kind `InvalidData` (`Unsupported` for compression), which the crate passes up.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;

use super::layout::Layout;

const HEADER: u64 = 8;
const PERF_RECORD_AUXTRACE: u32 = 71;
const PERF_RECORD_COMPRESSED: u32 = 81;
const PERF_RECORD_COMPRESSED2: u32 = 83;

/// A `Read + Seek` over a perf.data whose layout checked out, checking records as they pass.
#[derive(Debug)]
pub(super) struct RecordGuard<R> {
    inner: R,
    /// The position the caller sees.
    pos: u64,
    len: u64,
    data: Range<u64>,
    little_endian: bool,
    /// Where the next unchecked record starts, while the records are being read.
    next_record: Option<u64>,
    /// Bytes read ahead to check a record header, served before reading on.
    ahead: [u8; 16],
    ahead_len: usize,
    ahead_at: usize,
}

impl<R: Read + Seek> RecordGuard<R> {
    /// Wraps `inner`, a `len`-byte file laid out as `layout` says, positioned at its start.
    pub(super) fn new(mut inner: R, len: u64, layout: &Layout) -> io::Result<RecordGuard<R>> {
        inner.seek(SeekFrom::Start(0))?;
        Ok(RecordGuard {
            inner,
            pos: 0,
            len,
            data: layout.data.clone(),
            little_endian: layout.little_endian,
            next_record: None,
            ahead: [0; 16],
            ahead_len: 0,
            ahead_at: 0,
        })
    }

    /// Reads the header of the record at `self.pos` ahead and checks it.
    fn check_record(&mut self) -> io::Result<()> {
        let at = self.pos;
        let refuse = |what: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the record at offset {at} {what}"),
            )
        };
        let room = self.data.end - at;
        if room < HEADER {
            return Err(refuse(format!(
                "has a header cut off by the end of the data section at {}",
                self.data.end
            )));
        }
        self.fill_ahead(HEADER as usize)?;
        let kind = self.u32_ahead(0);
        let size = u64::from(self.u16_ahead(6));
        if size < HEADER {
            return Err(refuse(format!(
                "has size {size}, smaller than its own header"
            )));
        }
        if size > room {
            return Err(refuse(format!(
                "has size {size}, past the end of the data section at {}",
                self.data.end
            )));
        }
        let mut end = at + size;
        match kind {
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "the record at offset {at} is compressed: scalelab reads perf.data \
                         recorded without -z (record again without it)"
                    ),
                ));
            }
            PERF_RECORD_AUXTRACE if size >= HEADER + 8 => {
                self.fill_ahead(HEADER as usize + 8)?;
                let aux = self.u64_ahead(8);
                end = match end.checked_add(aux) {
                    Some(e) if e <= self.data.end => e,
                    _ => {
                        return Err(refuse(format!(
                            "carries {aux} bytes of trace data, past the end of the data section at {}",
                            self.data.end
                        )));
                    }
                };
            }
            _ => {}
        }
        self.next_record = Some(end);
        Ok(())
    }

    /// Reads ahead until `self.ahead` holds `n` bytes from `self.pos`.
    fn fill_ahead(&mut self, n: usize) -> io::Result<()> {
        while self.ahead_len < n {
            let got = self.inner.read(&mut self.ahead[self.ahead_len..n])?;
            if got == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.ahead_len += got;
        }
        Ok(())
    }

    fn u16_ahead(&self, at: usize) -> u16 {
        let b = [self.ahead[at], self.ahead[at + 1]];
        if self.little_endian {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }

    fn u32_ahead(&self, at: usize) -> u32 {
        let b: [u8; 4] = self.ahead[at..at + 4].try_into().unwrap_or_default();
        if self.little_endian {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }

    fn u64_ahead(&self, at: usize) -> u64 {
        let b: [u8; 8] = self.ahead[at..at + 8].try_into().unwrap_or_default();
        if self.little_endian {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        }
    }
}

impl<R: Read + Seek> Read for RecordGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ahead_at == self.ahead_len {
            if let Some(next) = self.next_record {
                if self.pos == next && next < self.data.end {
                    self.ahead_len = 0;
                    self.ahead_at = 0;
                    self.check_record()?;
                }
            }
        }
        if self.ahead_at < self.ahead_len {
            let n = buf.len().min(self.ahead_len - self.ahead_at);
            buf[..n].copy_from_slice(&self.ahead[self.ahead_at..self.ahead_at + n]);
            self.ahead_at += n;
            self.pos += n as u64;
            return Ok(n);
        }
        let mut limit = buf.len();
        if let Some(next) = self.next_record.filter(|&next| self.pos < next) {
            limit = limit.min(usize::try_from(next - self.pos).unwrap_or(usize::MAX));
        }
        let n = self.inner.read(&mut buf[..limit])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for RecordGuard<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek out of range"))?;
        self.inner.seek(SeekFrom::Start(target))?;
        self.pos = target;
        self.ahead_len = 0;
        self.ahead_at = 0;
        // The crate seeks to the data section last, then reads the records in order.
        self.next_record = (target == self.data.start).then_some(target);
        Ok(target)
    }
}
