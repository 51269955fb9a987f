//! Futex wait and wake on a 32-bit word, shared between processes.
//!
//! The start gate and the trial control words live in a [`SharedRegion`](crate::SharedRegion)
//! that forked tasks share, so these calls deliberately omit `FUTEX_PRIVATE_FLAG`: a private
//! futex is keyed by (mm, address) and would never wake a waiter in another process.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

use rustix::thread::futex;

use crate::error::SysError;

/// Sleeps while `*word == expected`, until woken by [`futex_wake`], a signal, or `timeout`.
///
/// Returns `Ok(())` on a wake-up, when the word no longer held `expected` (`EAGAIN`), on a
/// signal (`EINTR`) and on timeout: futex wake-ups can be spurious, so the caller always
/// re-checks the word in a loop.
pub fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<Duration>,
) -> Result<(), SysError> {
    let timespec = timeout.map(|t| rustix::time::Timespec {
        tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: t.subsec_nanos().into(),
    });
    match futex::wait(word, futex::Flags::empty(), expected, timespec.as_ref()) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR | rustix::io::Errno::TIMEDOUT) => {
            Ok(())
        }
        Err(e) => Err(SysError::with_fix(
            "futex(FUTEX_WAIT)",
            e.into(),
            |e| match e.0 {
                libc::ENOSYS => Some("the kernel was built without futex support (CONFIG_FUTEX)"),
                _ => None,
            },
        )),
    }
}

/// Wakes up to `count` waiters on `word` (`i32::MAX`: all); returns how many were woken.
pub fn futex_wake(word: &AtomicU32, count: i32) -> Result<usize, SysError> {
    let count = u32::try_from(count).map_err(|_| SysError::InvalidArgument {
        call: "futex(FUTEX_WAKE)",
        reason: format!("count {count} is negative; use i32::MAX to wake all waiters"),
    })?;
    futex::wake(word, futex::Flags::empty(), count).map_err(|e| SysError::Syscall {
        call: "futex(FUTEX_WAKE)",
        errno: e.into(),
        fix: None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    use super::*;
    use crate::SharedRegion;

    #[test]
    fn wait_returns_at_once_when_the_word_differs() {
        let word = AtomicU32::new(1);
        let start = Instant::now();
        futex_wait(&word, 0, Some(Duration::from_secs(5))).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn wait_times_out() {
        let word = AtomicU32::new(0);
        let start = Instant::now();
        futex_wait(&word, 0, Some(Duration::from_millis(20))).unwrap();
        assert!(
            start.elapsed() >= Duration::from_millis(15),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn wake_with_no_waiters_wakes_none() {
        let word = AtomicU32::new(0);
        assert_eq!(futex_wake(&word, i32::MAX).unwrap(), 0);
    }

    #[test]
    fn negative_count_is_rejected() {
        let word = AtomicU32::new(0);
        let err = futex_wake(&word, -1).unwrap_err();
        assert!(err.to_string().contains("i32::MAX"), "{err}");
    }

    #[test]
    fn wake_releases_waiting_threads_in_a_shared_region() {
        let region = SharedRegion::new(4096).unwrap();
        let gate = &region.u32s()[0];
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        while gate.load(Ordering::Acquire) == 0 {
                            futex_wait(gate, 0, Some(Duration::from_secs(10))).unwrap();
                        }
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(20));
            gate.store(1, Ordering::Release);
            futex_wake(gate, i32::MAX).unwrap();
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
    }
}
