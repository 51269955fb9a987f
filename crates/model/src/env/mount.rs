//! Which filesystem holds the working directory, from `/proc/self/mountinfo`.
//!
//! People have benchmarked ext2 believing it was ext3; the fingerprint records the type, source
//! and options of the mount that really holds the working directory: the longest mount point
//! that is a path prefix of the canonical directory, the last one listed when several stack.

use std::path::Path;

/// One line of `/proc/self/mountinfo` (see `proc_pid_mountinfo(5)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Where it is mounted, octal escapes (`\040`) decoded.
    pub mount_point: String,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// Filesystem type (`ext4`, `tmpfs`, `overlay`, `fuse.sshfs`).
    pub fs_type: String,
    /// Mount source (`/dev/vda`, `tmpfs`).
    pub source: String,
    /// Per-superblock options (`rw,discard`).
    pub super_options: String,
}

impl Mount {
    /// Per-mount options followed by the superblock options not already listed.
    pub(crate) fn options(&self) -> String {
        let mut options: Vec<&str> = Vec::new();
        for option in self
            .mount_options
            .split(',')
            .chain(self.super_options.split(','))
        {
            if !option.is_empty() && !options.contains(&option) {
                options.push(option);
            }
        }
        options.join(",")
    }
}

/// Parses mountinfo text; malformed lines are skipped.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split(' ').collect();
    // The optional fields end with a lone "-"; it comes after the six fixed fields.
    let separator = fields.iter().skip(6).position(|field| *field == "-")? + 6;
    let after = &fields[separator + 1..];
    Some(Mount {
        mount_point: unescape(fields.get(4)?),
        mount_options: fields.get(5)?.to_string(),
        fs_type: after.first()?.to_string(),
        source: unescape(after.get(1)?),
        super_options: after.get(2).map(|s| s.to_string()).unwrap_or_default(),
    })
}

/// Decodes the kernel's `\ooo` octal escapes (space, tab, newline, backslash).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes.get(i + 1..i + 4);
        let octal = digits
            .filter(|digits| digits.iter().all(|b| (b'0'..=b'7').contains(b)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path` (which should be absolute and canonical).
pub(crate) fn mount_for<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for mount in mounts {
        if !path.starts_with(&mount.mount_point) {
            continue;
        }
        let longer = best.is_none_or(|b| mount.mount_point.len() >= b.mount_point.len());
        if longer {
            best = Some(mount);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684092k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
40 27 0:40 / /work rw,nosuid,relatime shared:5 master:1 - xfs /dev/nvme0n1p2 rw,attr2,inode64
41 27 0:41 / /workspace rw,relatime - tmpfs tmpfs rw
42 27 0:42 / /mnt/my\\040disk rw - fuse.sshfs user@host:/x\\040y rw,user_id=0
43 30 0:43 / /dev/shm rw,nosuid - tmpfs shm rw,size=64m
";

    #[test]
    fn lines_parse_with_and_without_optional_fields() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 7);
        let root = &mounts[2];
        assert_eq!(root.mount_point, "/");
        assert_eq!(root.fs_type, "ext4");
        assert_eq!(root.source, "/dev/vda");
        assert_eq!(
            root.options(),
            "rw,relatime,discard,resv_strict,resuid=65534,resgid=65534"
        );
        let work = &mounts[3];
        assert_eq!(
            (work.fs_type.as_str(), work.source.as_str()),
            ("xfs", "/dev/nvme0n1p2")
        );
        assert_eq!(work.super_options, "rw,attr2,inode64");
        let sshfs = &mounts[5];
        assert_eq!(sshfs.mount_point, "/mnt/my disk");
        assert_eq!(sshfs.source, "user@host:/x y");
        assert!(parse_mountinfo("garbage line\n").is_empty());
    }

    #[test]
    fn longest_component_prefix_wins_and_last_stacked_mount_wins() {
        let mounts = parse_mountinfo(MOUNTINFO);
        let fs = |path: &str| mount_for(&mounts, Path::new(path)).map(|m| m.fs_type.clone());
        assert_eq!(fs("/work/main").as_deref(), Some("xfs"));
        assert_eq!(fs("/work").as_deref(), Some("xfs"));
        // "/work" is a string prefix of "/workspace" but not a path prefix.
        assert_eq!(fs("/workspace/a").as_deref(), Some("tmpfs"));
        assert_eq!(fs("/home/me").as_deref(), Some("ext4"));
        assert_eq!(fs("/mnt/my disk/f").as_deref(), Some("fuse.sshfs"));
        let shm = mount_for(&mounts, Path::new("/dev/shm/x")).unwrap();
        assert_eq!(shm.source, "shm");
        assert!(mount_for(&mounts, Path::new("relative")).is_none());
    }

    #[test]
    fn unescape_decodes_octal_and_leaves_other_backslashes() {
        assert_eq!(unescape("a\\040b\\011c\\134d"), "a b\tc\\d");
        assert_eq!(unescape("a\\9b\\04"), "a\\9b\\04");
    }
}
