//! Checking a sample's call-chain length before `linux-perf-event-reader` parses the sample.
//!
//! The reader takes the chain's byte length as `nr * 8` with `nr` read from the file, which
//! overflows for a corrupt `nr` (a panic where overflow checks are on, a wrong length where they
//! are off). [`callchain_fits`] walks the sample's fields in the reader's own order
//! (`SampleRecord::parse`, linux-perf-event-reader 0.10) up to the chain and checks that `nr`
//! entries fit in the bytes left; every other length the reader takes from a sample is used
//! as is, which its bounds checks already cover.

use linux_perf_data::linux_perf_event_reader::{
    Endianness, RawData, RawEventRecord, ReadFormat, SampleFormat,
};

/// False when the sample's call chain claims more entries than the record holds.
pub(super) fn callchain_fits(record: &RawEventRecord<'_>) -> bool {
    let info = &record.parse_info;
    let format = info.sample_format;
    if !format.contains(SampleFormat::CALLCHAIN) {
        return true;
    }
    let mut cur = record.data;
    let mut read = || read_u64(&mut cur, info.endian);
    let fixed = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ];
    for field in fixed {
        if format.contains(field) && read().is_none() {
            return false;
        }
    }
    if format.contains(SampleFormat::READ) {
        let rf = info.read_format;
        let times = u64::from(rf.contains(ReadFormat::TOTAL_TIME_ENABLED))
            + u64::from(rf.contains(ReadFormat::TOTAL_TIME_RUNNING));
        let words = if rf.contains(ReadFormat::GROUP) {
            1 + times + u64::from(rf.contains(ReadFormat::ID))
        } else {
            let Some(nr) = read() else { return false };
            let per_value = 1 + u64::from(rf.contains(ReadFormat::ID));
            match nr.checked_mul(per_value).and_then(|w| w.checked_add(times)) {
                Some(w) => w,
                None => return false,
            }
        };
        for _ in 0..words {
            if read().is_none() {
                return false;
            }
        }
    }
    let Some(nr) = read() else { return false };
    let left = cur.len() as u64;
    nr <= left / 8
}

fn read_u64(data: &mut RawData<'_>, endian: Endianness) -> Option<u64> {
    let mut b = [0u8; 8];
    data.read_exact(&mut b).ok()?;
    Some(match endian {
        Endianness::LittleEndian => u64::from_le_bytes(b),
        Endianness::BigEndian => u64::from_be_bytes(b),
    })
}
