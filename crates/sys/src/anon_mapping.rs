//! [`AnonMapping`]: private anonymous memory for workloads that measure page faults.
//!
//! Pages are not populated at `mmap` time, so the first touch of each page is a fault; byte
//! access is volatile so the compiler can never drop a touch that "does nothing".

use std::fmt;

use crate::error::{Errno, SysError};
use crate::mapping::{Mapping, Sharing};

/// A private `MAP_PRIVATE | MAP_ANONYMOUS` mapping, readable and writable, not pre-populated.
/// `Drop` unmaps it.
pub struct AnonMapping {
    mapping: Mapping,
}

// SAFETY: the mapping is plain memory owned by this value and reached only through methods
// that borrow `self`; nothing about it is tied to the creating thread.
unsafe impl Send for AnonMapping {}
// SAFETY: `&AnonMapping` only permits reads (`read_byte`); writes need `&mut`, so shared
// references never race with a write.
unsafe impl Sync for AnonMapping {}

impl AnonMapping {
    /// Maps `len` bytes, rounded up to whole pages.
    pub fn new(len: usize) -> Result<AnonMapping, SysError> {
        Ok(AnonMapping {
            mapping: Mapping::new("AnonMapping::new (mmap)", len, Sharing::Private)?,
        })
    }

    /// The mapped length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.mapping.len()
    }

    /// Always false: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        self.mapping.len() == 0
    }

    /// Writes `value` at `offset` with a volatile store (so touching a page is never optimised
    /// away). Panics if `offset >= len()`.
    #[inline]
    pub fn write_byte(&mut self, offset: usize, value: u8) {
        assert!(
            offset < self.len(),
            "AnonMapping::write_byte: offset {offset} >= len {}",
            self.len()
        );
        // SAFETY: `offset < len`, so the pointer is inside the read/write mapping owned by
        // `self`; `&mut self` guarantees no other reference observes the byte concurrently.
        unsafe { self.mapping.as_ptr().add(offset).write_volatile(value) }
    }

    /// Reads the byte at `offset` with a volatile load. Panics if `offset >= len()`.
    #[inline]
    pub fn read_byte(&self, offset: usize) -> u8 {
        assert!(
            offset < self.len(),
            "AnonMapping::read_byte: offset {offset} >= len {}",
            self.len()
        );
        // SAFETY: `offset < len`, so the pointer is inside the mapping owned by `self`; the
        // memory is always initialised (zero-fill on demand), and writers need `&mut self`.
        unsafe { self.mapping.as_ptr().add(offset).read_volatile() }
    }

    /// Gives every page back to the kernel (`madvise(MADV_DONTNEED)`): the contents read as
    /// zero again and the next touch of each page faults again, without a new `mmap`.
    pub fn discard(&mut self) -> Result<(), SysError> {
        // SAFETY: the range is exactly the private anonymous mapping owned by `self`, and
        // `&mut self` means no reference into it is live. For such a mapping MADV_DONTNEED only
        // replaces the pages with zero-fill-on-demand ones, which is a valid state for `u8`s.
        let rc = unsafe {
            libc::madvise(
                self.mapping.as_ptr().cast(),
                self.len(),
                libc::MADV_DONTNEED,
            )
        };
        if rc != 0 {
            return Err(SysError::with_fix(
                "madvise(MADV_DONTNEED)",
                Errno::last(),
                |_| None,
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for AnonMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnonMapping")
            .field("addr", &self.mapping.as_ptr())
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{page_size, thread_usage};

    #[test]
    fn write_then_read_back() {
        let mut map = AnonMapping::new(3 * page_size()).unwrap();
        assert_eq!(map.len(), 3 * page_size());
        for page in 0..3 {
            assert_eq!(map.read_byte(page * page_size()), 0);
            map.write_byte(page * page_size() + 7, page as u8 + 1);
        }
        for page in 0..3 {
            assert_eq!(map.read_byte(page * page_size() + 7), page as u8 + 1);
        }
    }

    #[test]
    #[should_panic(expected = "offset")]
    fn write_past_the_end_panics() {
        let mut map = AnonMapping::new(1).unwrap();
        let len = map.len();
        map.write_byte(len, 1);
    }

    #[test]
    fn touching_pages_faults_and_discard_refaults() {
        const PAGES: usize = 64;
        let mut map = AnonMapping::new(PAGES * page_size()).unwrap();
        let touch = |map: &mut AnonMapping| {
            let before = thread_usage().unwrap().minor_faults;
            for page in 0..PAGES {
                map.write_byte(page * page_size(), 1);
            }
            thread_usage().unwrap().minor_faults - before
        };
        let first = touch(&mut map);
        // THP may back the range with a few huge pages, so only ask for "some" faults.
        assert!(first >= 1, "first touch caused {first} faults");
        map.discard().unwrap();
        assert_eq!(map.read_byte(0), 0, "discarded page still holds data");
        let again = touch(&mut map);
        assert!(again >= 1, "touch after discard caused {again} faults");
    }
}
