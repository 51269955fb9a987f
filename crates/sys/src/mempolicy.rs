//! The calling thread's NUMA memory policy (`set_mempolicy(2)`): where the pages it touches
//! from now on are allocated. A task sets it right after it is pinned and before it first
//! touches its memory, so `--membind node` keeps a task's pages on its CPU's node and
//! `--membind interleave` spreads them page by page over the nodes.
//!
//! By hand because neither rustix nor libc's crate wraps the call (and libnuma would be a C
//! library to install for two system calls).

use crate::error::{Errno, SysError};

/// Nodes a mask can name: Linux's `MAX_NUMNODES` is at most 1024 (`NODES_SHIFT` 10).
pub const MAX_NODE: u32 = 1023;
const WORD_BITS: usize = libc::c_ulong::BITS as usize;
const MASK_WORDS: usize = (MAX_NODE as usize + 1) / WORD_BITS;

const MPOL_DEFAULT: libc::c_int = 0;
const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;

/// A memory policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// The kernel's default: a page comes from the node of the CPU that first touches it.
    Default,
    /// Only from these nodes (the nearest of them first).
    Bind(Vec<u32>),
    /// Round-robin over these nodes, page by page.
    Interleave(Vec<u32>),
}

fn mask_of(call: &'static str, nodes: &[u32]) -> Result<Vec<libc::c_ulong>, SysError> {
    if nodes.is_empty() {
        return Err(SysError::InvalidArgument {
            call,
            reason: "the node list is empty; give at least one NUMA node".to_string(),
        });
    }
    let mut mask = vec![0 as libc::c_ulong; MASK_WORDS];
    for &node in nodes {
        if node > MAX_NODE {
            return Err(SysError::InvalidArgument {
                call,
                reason: format!("NUMA node {node} is above the largest possible, {MAX_NODE}"),
            });
        }
        let node = node as usize;
        mask[node / WORD_BITS] |= 1 << (node % WORD_BITS);
    }
    Ok(mask)
}

/// Sets the calling thread's memory policy for the pages it allocates from now on (pages it
/// already touched stay where they are).
pub fn set_mempolicy(policy: &MemPolicy) -> Result<(), SysError> {
    const CALL: &str = "set_mempolicy";
    let (mode, mask) = match policy {
        MemPolicy::Default => (MPOL_DEFAULT, None),
        MemPolicy::Bind(nodes) => (MPOL_BIND, Some(mask_of(CALL, nodes)?)),
        MemPolicy::Interleave(nodes) => (MPOL_INTERLEAVE, Some(mask_of(CALL, nodes)?)),
    };
    let (ptr, maxnode) = match &mask {
        // The kernel reads `maxnode - 1` bits.
        Some(m) => (m.as_ptr(), (m.len() * WORD_BITS + 1) as libc::c_ulong),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: `ptr` is null (with maxnode 0) or points at `mask`, a live buffer of
    // `maxnode - 1` bits that the kernel only reads during the call.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if rc != 0 {
        return Err(SysError::with_fix(CALL, Errno::last(), |e| match e.0 {
            libc::EINVAL => Some(
                "a node in the mask has no memory or is not allowed to this process: check \
                 `numactl --hardware` and the cgroup's cpuset.mems.effective",
            ),
            libc::ENOSYS => Some("this kernel was built without NUMA (CONFIG_NUMA)"),
            _ => None,
        }));
    }
    Ok(())
}

/// The calling thread's memory policy, as [`set_mempolicy`] set it.
pub fn current_mempolicy() -> Result<MemPolicy, SysError> {
    let mut mode: libc::c_int = 0;
    let mut mask = vec![0 as libc::c_ulong; MASK_WORDS];
    // SAFETY: `mode` and `mask` are live, writable and as large as declared (`maxnode` bits);
    // a null address with flags 0 asks for the thread's policy.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            (mask.len() * WORD_BITS) as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if rc != 0 {
        return Err(SysError::with_fix("get_mempolicy", Errno::last(), |_| None));
    }
    let nodes: Vec<u32> = (0..mask.len() * WORD_BITS)
        .filter(|&n| mask[n / WORD_BITS] & (1 << (n % WORD_BITS)) != 0)
        .map(|n| n as u32)
        .collect();
    Ok(match mode {
        MPOL_BIND => MemPolicy::Bind(nodes),
        MPOL_INTERLEAVE => MemPolicy::Interleave(nodes),
        _ => MemPolicy::Default,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_binds_and_interleaves_on_node_zero_and_reads_it_back() {
        // Node 0 exists on every Linux machine (with or without NUMA hardware). In a thread of
        // its own, so the test harness's thread keeps the default policy.
        std::thread::spawn(|| {
            assert_eq!(current_mempolicy().unwrap(), MemPolicy::Default);
            set_mempolicy(&MemPolicy::Bind(vec![0])).unwrap();
            assert_eq!(current_mempolicy().unwrap(), MemPolicy::Bind(vec![0]));
            set_mempolicy(&MemPolicy::Interleave(vec![0])).unwrap();
            assert_eq!(current_mempolicy().unwrap(), MemPolicy::Interleave(vec![0]));
            // Memory touched now still works.
            let v = vec![1u8; 1 << 20];
            assert_eq!(v.iter().map(|&b| b as usize).sum::<usize>(), 1 << 20);
            set_mempolicy(&MemPolicy::Default).unwrap();
            assert_eq!(current_mempolicy().unwrap(), MemPolicy::Default);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn bad_node_lists_are_refused_naming_the_cause() {
        let e = set_mempolicy(&MemPolicy::Bind(vec![])).unwrap_err();
        assert!(e.to_string().contains("node list is empty"), "{e}");
        let e = set_mempolicy(&MemPolicy::Interleave(vec![5000])).unwrap_err();
        assert!(e.to_string().contains("above the largest possible"), "{e}");
        // A node that does not exist here (this machine has far fewer than 1000).
        let e = std::thread::spawn(|| set_mempolicy(&MemPolicy::Bind(vec![1000])).unwrap_err())
            .join()
            .unwrap();
        assert!(e.to_string().contains("cpuset.mems"), "{e}");
    }
}
