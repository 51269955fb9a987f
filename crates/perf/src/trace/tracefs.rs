//! Tracepoint formats from tracefs: an event's id and the offset, size and signedness of each
//! field of its raw record, read from `events/<system>/<name>/format`, never hard-coded.
//!
//! tracefs lives at `/sys/kernel/tracing` (or, on older systems, under debugfs at
//! `/sys/kernel/debug/tracing`); when neither is mounted the error names the mount command.

use std::path::{Path, PathBuf};

use perf_read::error::PerfError;

/// Where tracefs may be mounted, in order of preference.
const TRACEFS_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// One field of a tracepoint's raw record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceField {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// A tracepoint's id (`perf_event_attr.config`) and its record layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TracepointFormat {
    /// `system:name`, as perf names it.
    pub name: String,
    pub id: u64,
    pub fields: Vec<TraceField>,
}

impl TracepointFormat {
    /// Reads `system/name`'s format from the mounted tracefs.
    pub(crate) fn read(system: &str, name: &str) -> Result<TracepointFormat, PerfError> {
        let full = format!("{system}:{name}");
        let root = tracefs_root().ok_or_else(|| PerfError::Tracepoint {
            event: full.clone(),
            cause: "tracefs is not mounted".into(),
            fix: "mount it: `mount -t tracefs nodev /sys/kernel/tracing` (as root)".into(),
        })?;
        let path = root.join("events").join(system).join(name).join("format");
        let text = std::fs::read_to_string(&path).map_err(|e| PerfError::Tracepoint {
            event: full.clone(),
            cause: format!("reading {}: {e}", path.display()),
            fix: match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "this kernel has no {full} tracepoint (it needs a kernel with it built in, \
                     e.g. lock:contention_* since Linux 5.19)"
                ),
                std::io::ErrorKind::PermissionDenied => {
                    "tracefs is readable by root only: run as root, or `chmod -R o+rX \
                     /sys/kernel/tracing` to let this user read tracepoint formats"
                        .into()
                }
                _ => "check that tracefs is mounted and readable".into(),
            },
        })?;
        parse_format(&full, &text).ok_or_else(|| PerfError::Tracepoint {
            event: full.clone(),
            cause: format!("cannot parse {}", path.display()),
            fix: "please report this with the file's contents".into(),
        })
    }

    /// The field called `name`.
    pub(crate) fn field(&self, name: &str) -> Result<&TraceField, PerfError> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| PerfError::Tracepoint {
                event: self.name.clone(),
                cause: format!("its format has no field `{name}`"),
                fix: "this kernel's tracepoint layout is not supported; please report it".into(),
            })
    }
}

/// The first tracefs mount point that has an `events` directory.
pub(crate) fn tracefs_root() -> Option<PathBuf> {
    TRACEFS_ROOTS
        .iter()
        .map(Path::new)
        .find(|p| p.join("events").is_dir())
        .map(Path::to_path_buf)
}

/// Parses a `format` file: `ID: n` and `field:TYPE NAME; offset:O; size:S; signed:G;` lines.
pub(crate) fn parse_format(name: &str, text: &str) -> Option<TracepointFormat> {
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ID:") {
            id = rest.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            let mut parts = rest.split(';').map(str::trim);
            let decl = parts.next()?;
            let mut value = |key: &str| -> Option<usize> {
                parts
                    .next()?
                    .strip_prefix(key)?
                    .strip_prefix(':')?
                    .trim()
                    .parse()
                    .ok()
            };
            let (offset, size, signed) = (value("offset")?, value("size")?, value("signed")?);
            // The name is the declaration's last word, without an array suffix (`char comm[16]`).
            let last = decl.split_whitespace().last()?;
            let field_name = last.split('[').next()?.trim_start_matches('*');
            fields.push(TraceField {
                name: field_name.to_string(),
                offset,
                size,
                signed: signed != 0,
            });
        }
    }
    Some(TracepointFormat {
        name: name.to_string(),
        id: id?,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "name: contention_begin
ID: 408
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;

print fmt: \"%p (flags=%s)\", REC->lock_addr
";

    #[test]
    fn parses_ids_and_field_layouts() {
        let f = parse_format("lock:contention_begin", BEGIN).unwrap();
        assert_eq!(f.id, 408);
        assert_eq!(f.fields.len(), 6);
        let lock = f.field("lock_addr").unwrap();
        assert_eq!((lock.offset, lock.size, lock.signed), (8, 8, false));
        let flags = f.field("flags").unwrap();
        assert_eq!((flags.offset, flags.size), (16, 4));
        assert!(f.field("common_pid").unwrap().signed);
        assert!(f.field("nope").is_err());
    }

    #[test]
    fn array_and_pointer_declarations_keep_the_bare_name() {
        let text = "ID: 1\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:u32 *uaddr;\toffset:24;\tsize:8;\tsigned:0;\n";
        let f = parse_format("x:y", text).unwrap();
        assert_eq!(f.fields[0].name, "comm");
        assert_eq!(f.fields[1].name, "uaddr");
    }

    #[test]
    fn a_missing_tracepoint_names_the_fix() {
        let err = TracepointFormat::read("nosuchsystem", "nosuchevent").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("nosuchsystem:nosuchevent: "), "{text}");
        assert!(
            text.contains("mount -t tracefs") || text.contains("has no nosuchsystem:nosuchevent"),
            "{text}"
        );
    }

    #[test]
    fn a_file_without_an_id_is_refused() {
        assert!(parse_format("x:y", "format:\n").is_none());
    }
}
