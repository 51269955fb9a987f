//! The page size and [`Mapping`], the owned anonymous `mmap` that both public mapping types
//! ([`SharedRegion`](crate::SharedRegion), [`AnonMapping`](crate::AnonMapping)) are built on.
//!
//! Keeping the one `mmap`/`munmap` pair here means the length rounding, the error messages and
//! the `Drop` live in one place.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Errno, SysError};

/// The system page size in bytes (`sysconf(_SC_PAGESIZE)`), cached after the first call.
pub fn page_size() -> usize {
    static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
    let cached = PAGE_SIZE.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: sysconf has no memory-safety preconditions; it only reads a configuration value.
    let raw = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    // Linux always reports a page size; 4096 is the fallback only for a broken libc.
    let size = usize::try_from(raw).ok().filter(|&s| s > 0).unwrap_or(4096);
    PAGE_SIZE.store(size, Ordering::Relaxed);
    size
}

/// Which kind of anonymous mapping to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// `MAP_SHARED`: the same physical pages stay visible to both sides of a `fork()`.
    Shared,
    /// `MAP_PRIVATE`: copy-on-write after `fork()`.
    Private,
}

/// An owned, readable and writable anonymous mapping; `Drop` unmaps it.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes rounded up to whole pages, zero-filled by the kernel, page-aligned.
    /// Pages are not populated: each is faulted in on first touch.
    pub(crate) fn new(call: &'static str, len: usize, sharing: Sharing) -> Result<Self, SysError> {
        if len == 0 {
            return Err(SysError::InvalidArgument {
                call,
                reason: "length must be at least one byte".to_string(),
            });
        }
        let page = page_size();
        let len =
            len.div_ceil(page)
                .checked_mul(page)
                .ok_or_else(|| SysError::InvalidArgument {
                    call,
                    reason: format!(
                        "length {len} overflows when rounded up to the page size {page}"
                    ),
                })?;
        let flags = libc::MAP_ANONYMOUS
            | match sharing {
                Sharing::Shared => libc::MAP_SHARED,
                Sharing::Private => libc::MAP_PRIVATE,
            };
        // SAFETY: an anonymous mapping at an address of the kernel's choosing (NULL hint, no
        // MAP_FIXED) cannot alias or replace any existing memory; fd -1 and offset 0 are what
        // MAP_ANONYMOUS requires. The result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(SysError::with_fix(call, Errno::last(), |e| match e.0 {
                libc::ENOMEM => Some(
                    "not enough address space or memory: lower the length, or check \
                     `ulimit -v` and vm.overcommit_memory",
                ),
                _ => None,
            }));
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| SysError::InvalidArgument {
            call,
            reason: "the kernel returned a mapping at address 0".to_string(),
        })?;
        Ok(Mapping { ptr, len })
    }

    /// The mapped length in bytes (a whole number of pages).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first byte; page-aligned, valid for `len()` bytes while `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe exactly the mapping created in `new`, which this value
        // owns; no reference into it can outlive `self` because every accessor borrows `self`.
        let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        debug_assert_eq!(rc, 0, "munmap of an owned mapping failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_a_power_of_two() {
        let page = page_size();
        assert!(page >= 4096 && page.is_power_of_two(), "page size {page}");
        assert_eq!(page_size(), page, "cached value differs");
    }

    #[test]
    fn length_rounds_up_to_pages() {
        let mapping = Mapping::new("mmap", 1, Sharing::Private).unwrap();
        assert_eq!(mapping.len(), page_size());
        assert_eq!(mapping.as_ptr() as usize % page_size(), 0);
    }

    #[test]
    fn zero_length_is_rejected_with_the_call_named() {
        let err = Mapping::new("SharedRegion::new", 0, Sharing::Shared).unwrap_err();
        assert!(
            err.to_string().starts_with("SharedRegion::new: length"),
            "{err}"
        );
    }

    #[test]
    fn impossible_length_reports_enomem_with_a_fix() {
        let err = Mapping::new("mmap", usize::MAX / 2, Sharing::Private).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("ENOMEM") && text.contains("ulimit -v"),
            "{text}"
        );
    }
}
