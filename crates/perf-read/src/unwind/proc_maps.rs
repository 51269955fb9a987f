//! A process's executable file mappings from `/proc/PID/maps`.

/// One executable file mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFile {
    /// First address of the mapping.
    pub start: u64,
    /// One past its last address.
    pub end: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// The file's path as the kernel reports it.
    pub path: String,
}

impl MappedFile {
    /// The file offset of `addr`, when the mapping holds it.
    pub fn file_offset(&self, addr: u64) -> Option<u64> {
        (addr >= self.start && addr < self.end).then(|| addr - self.start + self.offset)
    }
}

/// The executable, file-backed mappings of process `pid`, or `None` when its maps cannot be
/// read (the process is gone, or belongs to another user without CAP_SYS_PTRACE).
pub fn read_proc_maps(pid: i32) -> Option<Vec<MappedFile>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    Some(parse_maps(&text))
}

/// Parses maps lines: `start-end perms offset dev inode path`.
pub(crate) fn parse_maps(text: &str) -> Vec<MappedFile> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(6, ' ');
            let range = parts.next()?;
            let perms = parts.next()?;
            let offset = parts.next()?;
            let _dev = parts.next()?;
            let _inode = parts.next()?;
            let path = parts.next()?.trim_start();
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let path = path.strip_suffix(" (deleted)").unwrap_or(path);
            let (start, end) = range.split_once('-')?;
            Some(MappedFile {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path: path.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_executable_file_mappings_are_kept() {
        let text = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 131 /usr/bin/cat
55d0c0a02000-55d0c0a07000 r-xp 00002000 08:01 131 /usr/bin/cat
7f1c2a628000-7f1c2a77d000 r-xp 00026000 08:01 2049 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a900000-7f1c2a901000 r-xp 00000000 00:00 0 
7ffd5b3f2000-7ffd5b3f4000 r-xp 00000000 00:00 0                          [vdso]
7f1c2b000000-7f1c2b001000 r-xp 00001000 08:01 77 /tmp/a b (deleted)
";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3, "{maps:?}");
        assert_eq!(maps[0].path, "/usr/bin/cat");
        assert_eq!((maps[0].start, maps[0].offset), (0x55d0_c0a0_2000, 0x2000));
        assert_eq!(maps[1].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(maps[2].path, "/tmp/a b");
    }

    #[test]
    fn this_process_maps_its_own_executable() {
        let maps = read_proc_maps(std::process::id() as i32).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(
            maps.iter().any(|m| Some(m.path.as_str()) == exe.to_str()),
            "{maps:?}"
        );
    }
}
