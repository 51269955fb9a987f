//! Reads the kernel's text interfaces (`/proc`, `/sys`, `/etc`) below a root directory.
//!
//! Every reading of the environment goes through [`HostFs`], so a test can point it at a fake
//! tree in a temporary directory and capture a whole fingerprint from literal file contents.
//! A file that is missing or unreadable is simply `None`: the fingerprint never fails.

use std::path::{Path, PathBuf};

/// The host's pseudo-filesystems, seen from `root` (`/` in production).
#[derive(Debug, Clone)]
pub struct HostFs {
    root: PathBuf,
}

impl HostFs {
    /// The real machine.
    pub fn real() -> HostFs {
        HostFs::at(Path::new("/"))
    }

    /// A tree whose `proc/`, `sys/` and `etc/` stand in for the real ones.
    pub fn at(root: &Path) -> HostFs {
        HostFs {
            root: root.to_path_buf(),
        }
    }

    /// Where the absolute path `abs` (e.g. `/proc/cpuinfo`) lives under the root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// The whole file, or `None` when it is absent or unreadable.
    pub fn read(&self, abs: &str) -> Option<String> {
        std::fs::read_to_string(self.path(abs)).ok()
    }

    /// The file with surrounding whitespace removed (sysfs values end in a newline).
    pub fn read_trimmed(&self, abs: &str) -> Option<String> {
        self.read(abs).map(|text| text.trim().to_string())
    }

    /// The file parsed as one integer.
    pub fn read_int<T: std::str::FromStr>(&self, abs: &str) -> Option<T> {
        self.read_trimmed(abs)?.parse().ok()
    }

    /// Whether the path exists (file or directory).
    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// The names in a directory, sorted; empty when it is absent.
    pub fn list(&self, abs: &str) -> Vec<String> {
        self.try_list(abs).unwrap_or_default()
    }

    /// The names in a directory, sorted, or why it could not be listed (absent, denied).
    pub fn try_list(&self, abs: &str) -> std::io::Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(abs))?
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }
}

#[cfg(any(test, feature = "test-support"))]
pub(crate) mod fake {
    //! Builds a fake host tree for tests.

    use std::path::Path;

    /// Writes `contents` at `abs` below `root`, creating the directories.
    pub(crate) fn put(root: &Path, abs: &str, contents: &str) {
        let path = root.join(abs.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().expect("a file path has a parent"))
            .expect("create fake sysfs directory");
        std::fs::write(path, contents).expect("write fake sysfs file");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_none_and_values_are_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        fake::put(dir.path(), "/proc/sys/kernel/perf_event_paranoid", "2\n");
        fake::put(
            dir.path(),
            "/sys/devices/system/cpu/vulnerabilities/mds",
            "x\n",
        );
        let host = HostFs::at(dir.path());
        assert_eq!(
            host.read_int::<i32>("/proc/sys/kernel/perf_event_paranoid"),
            Some(2)
        );
        assert_eq!(host.read("/proc/nope"), None);
        assert_eq!(
            host.list("/sys/devices/system/cpu/vulnerabilities"),
            vec!["mds"]
        );
        assert!(host.list("/sys/nope").is_empty());
        assert!(host.exists("/proc/sys"));
    }
}
