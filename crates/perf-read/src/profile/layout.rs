//! Checking a perf.data file's layout against its size before `linux-perf-data` reads it.
//!
//! The crate believes the sizes and counts it reads: a feature section that claims 1 TiB is
//! allocated before it is read (`vec![0; size]`), an `EVENT_DESC` count of 2^32 becomes a
//! `Vec::with_capacity`, a string length of 4 GiB a buffer, and an attribute size of 0 a
//! division by zero. So before the crate sees a file, every section named by the header and
//! the feature table must lie inside the file, the feature sections together must fit in it,
//! and every count and length in the sections the crate parses up front (the event
//! descriptions, or the old event-types table) must fit in the bytes that hold it. Records
//! are checked while they stream past ([`super::record_guard`]).
//!
//! Layout (tools/perf/util/header.h): a 104-byte header — magic, header size, attr size,
//! three `{offset, size}` sections (attrs, data, event types), a 256-bit feature set — then,
//! right after the data section, one `{offset, size}` per feature bit set, in bit order.

use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

const HEADER_SIZE: u64 = 104;
/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr` there ever was.
const ATTR_SIZE_MIN: u64 = 64;
const FEATURE_EVENT_DESC: u32 = 12;
/// Simpleperf (Android) files: their own sections, which scalelab never writes nor reads.
const FEATURE_SIMPLEPERF_META_INFO: u32 = 129;

/// What the record reader needs to know about a file whose layout checked out.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub little_endian: bool,
    /// Where the records are, in file offsets.
    pub data: Range<u64>,
}

/// Checks the layout of the `len`-byte perf.data held by `file`; leaves `file` anywhere.
pub(super) fn check<R: Read + Seek>(file: &mut R, len: u64) -> Result<Layout, String> {
    if len < HEADER_SIZE {
        return Err(format!(
            "not a perf.data file: {len} bytes, shorter than its {HEADER_SIZE}-byte header"
        ));
    }
    let header = read_at(file, 0, HEADER_SIZE as usize)?;
    let little_endian = match &header[..8] {
        b"PERFILE2" => true,
        b"2ELIFREP" => false,
        magic => {
            return Err(format!(
                "not a perf.data file: magic {:?}, not PERFILE2",
                String::from_utf8_lossy(magic)
            ));
        }
    };
    let b = Bytes {
        bytes: &header,
        little_endian,
    };
    let header_size = b.u64(8)?;
    if !(HEADER_SIZE..=len).contains(&header_size) {
        return Err(corrupt(format!(
            "header size {header_size} is not between {HEADER_SIZE} and the file's {len} bytes"
        )));
    }
    let attr_size = b.u64(16)?;
    if !(ATTR_SIZE_MIN..=len).contains(&attr_size) {
        return Err(corrupt(format!(
            "attribute size {attr_size} is not between {ATTR_SIZE_MIN} and the file's {len} bytes"
        )));
    }
    let attrs = section(&b, 24, "attribute section", len)?;
    let data = section(&b, 40, "data section", len)?;
    let event_types = section(&b, 56, "event-types section", len)?;
    let mut features = Vec::new();
    for bit in 0..256u32 {
        let word = b.u64(72 + 8 * (bit as usize / 64))?;
        if (word >> (bit % 64)) & 1 == 1 {
            features.push(bit);
        }
    }
    if features.contains(&FEATURE_SIMPLEPERF_META_INFO) {
        return Err(
            "not a perf.data file of Linux perf: it has simpleperf (Android) sections".into(),
        );
    }

    // The feature table, then each feature section, which the crate reads whole.
    let table_len = 16 * features.len() as u64;
    let table_end = data.end.checked_add(table_len).filter(|&e| e <= len);
    if table_end.is_none() {
        return Err(corrupt(format!(
            "the table of {} feature sections at offset {} runs past the end of the file ({len} bytes)",
            features.len(),
            data.end
        )));
    }
    let table = read_at(file, data.end, table_len as usize)?;
    let t = Bytes {
        bytes: &table,
        little_endian,
    };
    let mut event_desc = None;
    let mut total = 0u64;
    for (i, &feature) in features.iter().enumerate() {
        let what = format!("feature section {feature}");
        let s = section(&t, 16 * i, &what, len)?;
        total = total.saturating_add(s.end - s.start);
        if total > len {
            return Err(corrupt(format!(
                "the feature sections add up to more than the file's {len} bytes"
            )));
        }
        if feature == FEATURE_EVENT_DESC {
            event_desc = Some(s);
        }
    }

    // The event attributes, as the crate will look for them.
    if let Some(s) = event_desc {
        let bytes = read_at(file, s.start, (s.end - s.start) as usize)?;
        check_event_desc(&Bytes {
            bytes: &bytes,
            little_endian,
        })?;
    } else if event_types.end > event_types.start {
        check_event_types(file, &event_types, attr_size, little_endian, len)?;
    } else if attrs.end == attrs.start {
        return Err(corrupt("no event attributes".into()));
    }
    Ok(Layout {
        little_endian,
        data,
    })
}

/// The `{offset, size}` at `at` in `b`, which must lie inside the `len`-byte file.
fn section(b: &Bytes<'_>, at: usize, what: &str, len: u64) -> Result<Range<u64>, String> {
    let (offset, size) = (b.u64(at)?, b.u64(at + 8)?);
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(offset..end),
        _ => Err(corrupt(format!(
            "the {what} (offset {offset}, {size} bytes) runs past the end of the file ({len} bytes)"
        ))),
    }
}

/// `HEADER_EVENT_DESC`: `u32 nr, u32 attr_size`, then per event the attribute, `u32 nr_ids`,
/// a string (`u32 len` and the bytes) and `nr_ids` u64 ids. Every event must fit.
fn check_event_desc(b: &Bytes<'_>) -> Result<(), String> {
    let bad = |detail: String| Err(corrupt(format!("event descriptions: {detail}")));
    let nr = b.u32(0)?;
    let attr_size = u64::from(b.u32(4)?);
    if nr > 0 && attr_size < ATTR_SIZE_MIN {
        return bad(format!(
            "attribute size {attr_size} is below {ATTR_SIZE_MIN}"
        ));
    }
    let end = b.bytes.len() as u64;
    let mut at = 8u64;
    for event in 0..nr {
        let ids_at = at + attr_size;
        if ids_at + 8 > end {
            return bad(format!(
                "event {event} of {nr} runs past the section's {end} bytes"
            ));
        }
        let nr_ids = u64::from(b.u32(ids_at as usize)?);
        let text_len = u64::from(b.u32(ids_at as usize + 4)?);
        at = ids_at + 8 + text_len + 8 * nr_ids;
        if at > end {
            return bad(format!(
                "event {event} ({text_len}-byte name, {nr_ids} ids) runs past the section's {end} bytes"
            ));
        }
    }
    Ok(())
}

/// The old event-types table: entries of an attribute and the `{offset, size}` of its ids,
/// which must lie inside the file and together fit in it.
fn check_event_types<R: Read + Seek>(
    file: &mut R,
    table: &Range<u64>,
    attr_size: u64,
    little_endian: bool,
    len: u64,
) -> Result<(), String> {
    let stride = attr_size + 16;
    let bytes = read_at(file, table.start, (table.end - table.start) as usize)?;
    let b = Bytes {
        bytes: &bytes,
        little_endian,
    };
    let mut total = 0u64;
    for entry in 0..(table.end - table.start) / stride {
        let ids = section(&b, (entry * stride + attr_size) as usize, "event ids", len)?;
        total = total.saturating_add(ids.end - ids.start);
        if total > len {
            return Err(corrupt(format!(
                "the event ids add up to more than the file's {len} bytes"
            )));
        }
    }
    Ok(())
}

/// `len` bytes at `offset`, which the caller has checked lie inside the file.
fn read_at<R: Read + Seek>(file: &mut R, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|e| corrupt(format!("reading {len} bytes at offset {offset}: {e}")))?;
    Ok(bytes)
}

/// Integers from a byte slice in the file's byte order; reading past its end is an error.
struct Bytes<'a> {
    bytes: &'a [u8],
    little_endian: bool,
}

impl Bytes<'_> {
    fn array<const N: usize>(&self, at: usize) -> Result<[u8; N], String> {
        at.checked_add(N)
            .and_then(|end| self.bytes.get(at..end))
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| {
                corrupt(format!(
                    "a field at byte {at} of a {}-byte table is cut off",
                    self.bytes.len()
                ))
            })
    }
    fn u64(&self, at: usize) -> Result<u64, String> {
        let a = self.array::<8>(at)?;
        Ok(if self.little_endian {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }
    fn u32(&self, at: usize) -> Result<u32, String> {
        let a = self.array::<4>(at)?;
        Ok(if self.little_endian {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }
}

/// The cause of a refusal, worded the same way wherever it is found.
pub(super) fn corrupt(detail: String) -> String {
    format!("corrupt perf.data ({detail})")
}
