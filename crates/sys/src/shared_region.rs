//! [`SharedRegion`]: zeroed memory that stays shared between a process and the children it forks.
//!
//! The runner keeps per-task op counters and the start gate here, so that `--mode processes`
//! tasks and the sampler see the same words. The region is only ever seen through atomics:
//! other processes write it concurrently, so a plain `&[u64]` would be a data race.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64};

use crate::error::SysError;
use crate::mapping::{Mapping, Sharing};

/// An anonymous `MAP_SHARED | MAP_ANONYMOUS` mapping: zero-filled, page-aligned, and shared with
/// every child forked after it was created. `Drop` unmaps it (children keep their own mapping).
///
/// Use one view per byte range: do not access the same bytes through both [`u64s`](Self::u64s)
/// and [`u32s`](Self::u32s) concurrently (mixed-size atomic accesses are not defined).
pub struct SharedRegion {
    mapping: Mapping,
}

// SAFETY: the region is plain memory owned by this value; the only ways to reach it are the
// atomic views, which are safe to use from any thread, and `Drop` needs no particular thread.
unsafe impl Send for SharedRegion {}
// SAFETY: all access through `&SharedRegion` is via `AtomicU64`/`AtomicU32`, which provide
// their own synchronisation; no method hands out a non-atomic reference.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// Maps `len` bytes, rounded up to whole pages, zeroed.
    pub fn new(len: usize) -> Result<SharedRegion, SysError> {
        Ok(SharedRegion {
            mapping: Mapping::new("SharedRegion::new (mmap)", len, Sharing::Shared)?,
        })
    }

    /// The mapped length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.mapping.len()
    }

    /// Always false: a region has at least one page.
    pub fn is_empty(&self) -> bool {
        self.mapping.len() == 0
    }

    /// The whole region as `len() / 8` 64-bit atomics.
    pub fn u64s(&self) -> &[AtomicU64] {
        let count = self.len() / size_of::<AtomicU64>();
        // SAFETY: the mapping is page-aligned (so aligned for AtomicU64), readable and writable
        // for `len()` bytes and zero-initialised (a valid AtomicU64 bit pattern), and stays
        // mapped while the returned borrow of `self` lives. AtomicU64 has interior mutability,
        // so concurrent writers (other threads or forked processes) do not violate `&`.
        unsafe { std::slice::from_raw_parts(self.mapping.as_ptr().cast::<AtomicU64>(), count) }
    }

    /// The whole region as `len() / 4` 32-bit atomics (futex words live here).
    pub fn u32s(&self) -> &[AtomicU32] {
        let count = self.len() / size_of::<AtomicU32>();
        // SAFETY: as for `u64s`: page-aligned, mapped read/write for `len()` bytes while `self`
        // is borrowed, every bit pattern is a valid AtomicU32, and atomics tolerate sharing.
        unsafe { std::slice::from_raw_parts(self.mapping.as_ptr().cast::<AtomicU32>(), count) }
    }
}

impl fmt::Debug for SharedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegion")
            .field("addr", &self.mapping.as_ptr())
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::page_size;

    #[test]
    fn new_region_is_zeroed_and_page_rounded() {
        let region = SharedRegion::new(100).unwrap();
        assert_eq!(region.len(), page_size());
        assert_eq!(region.u64s().len(), page_size() / 8);
        assert_eq!(region.u32s().len(), page_size() / 4);
        assert!(region.u64s().iter().all(|w| w.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn writes_are_visible_across_threads() {
        let region = SharedRegion::new(4096).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| region.u64s()[3].store(42, Ordering::Release));
        });
        assert_eq!(region.u64s()[3].load(Ordering::Acquire), 42);
    }

    #[test]
    fn views_alias_the_same_bytes() {
        let region = SharedRegion::new(64).unwrap();
        region.u64s()[0].store(u64::MAX, Ordering::Relaxed);
        assert_eq!(region.u32s()[0].load(Ordering::Relaxed), u32::MAX);
        assert_eq!(region.u32s()[2].load(Ordering::Relaxed), 0);
    }
}
