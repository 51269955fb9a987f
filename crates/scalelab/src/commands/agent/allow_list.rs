//! Which commands an agent runs: built-in workloads only (the default), the programs inside the
//! directories `--allow-cmd DIR` names, or anything (`--allow-any-cmd`).
//!
//! The rule for a directory, exactly (SECURITY.md "The job queue and its agents"): every command
//! a job carries (`--cmd`, `--step`, `--prepare`, `--cleanup`, `ab`'s `--a` and `--b`) is one
//! program and its arguments, with no shell syntax anywhere and no control character; its first
//! word is the program, an absolute path written with plain characters (no quote, glob,
//! assignment or `{n}`), with no `..`; and both that path and the file it resolves to (every
//! link followed) lie inside one of the allowed directories — a directory, so `/srv/bench`
//! never allows `/srv/bench-evil.sh`.
//!
//! A directory that holds a shell or an interpreter allows every command (`/usr/bin/sh -c …`),
//! so the agent refuses to start with one unless `--allow-any-cmd` says that is meant.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use crate::job_args::CheckedJob;

/// What lets a command run more than the program it starts with: `sh -c` would run
/// `/opt/bench/x; rm -rf ~` although it starts with `/opt/bench/`. (`{n}`, scalelab's task
/// count, is taken out before the check.)
const SHELL_SYNTAX: &[char] = &[
    ';', '|', '&', '$', '`', '<', '>', '(', ')', '\\', '*', '?', '~', '[', ']', '{', '}',
];

/// The characters a program's path may hold.
fn plain_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "/._+,:@%-".contains(c)
}

/// Programs that run whatever their arguments say (shells, interpreters, and tools that start
/// another program): a directory holding one allows every command. Matched on a file's name,
/// and on the name of what a link there resolves to.
const RUNNERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "csh", "tcsh", "fish", "ash", "rbash",
    "busybox", "toybox", "python", "perl", "ruby", "node", "nodejs", "php", "lua", "luajit",
    "tclsh", "wish", "expect", "awk", "gawk", "mawk", "nawk", "java", "jshell", "guile", "Rscript",
    "env", "xargs", "find", "nice", "nohup", "timeout", "setsid", "taskset", "chrt", "ionice",
    "stdbuf", "sudo", "su", "doas", "runuser", "chroot", "unshare", "nsenter", "flock", "watch",
    "script", "time", "strace", "ltrace", "gdb", "valgrind", "perf", "numactl", "make", "git",
    "vi", "vim", "ssh",
];

/// Whether a file named `name` runs whatever it is told (`python3.11` is `python`).
fn is_runner(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    RUNNERS.contains(&name) || RUNNERS.contains(&stem)
}

/// The most entries of an allowed directory looked at for runners, and how deep.
const SCAN_ENTRIES: usize = 50_000;
const SCAN_DEPTH: usize = 8;

/// A directory an agent allows programs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedDir {
    /// As given (its trailing slash dropped), for messages and the lexical check.
    pub given: PathBuf,
    /// With every link resolved.
    pub resolved: PathBuf,
}

/// Which commands an agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Built-in workloads only.
    BuiltIns,
    /// The programs inside these directories too.
    Dirs(Vec<AllowedDir>),
    /// Any command.
    Any,
}

impl Allow {
    /// The allow-list `--allow-cmd DIR…` and `--allow-any-cmd` make, and the warnings to print
    /// at start. An allowed directory that does not exist, is not a directory, or holds a
    /// runner (without `--allow-any-cmd`) is refused naming it.
    pub fn from_args(dirs: &[String], any: bool) -> Result<(Allow, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut allowed = Vec::new();
        for dir in dirs {
            let given = PathBuf::from(dir.trim_end_matches('/'));
            let given = if given.as_os_str().is_empty() {
                PathBuf::from("/")
            } else {
                given
            };
            if !given.is_absolute() {
                bail!("--allow-cmd {dir}: give the directory's absolute path");
            }
            let resolved = std::fs::canonicalize(&given).map_err(|e| {
                anyhow::anyhow!(
                    "--allow-cmd {dir}: {e} — give an existing directory of benchmark programs"
                )
            })?;
            if !resolved.is_dir() {
                bail!(
                    "--allow-cmd {dir} is not a directory: an allow-list names directories whose programs a job may run"
                );
            }
            if let Some((path, what)) = first_runner(&resolved) {
                let why = format!(
                    "--allow-cmd {dir} holds {} ({what}), through which a job could run any command, so it allows every command",
                    path.display()
                );
                if !any {
                    bail!(
                        "{why} — allow a directory of benchmark programs only, or add --allow-any-cmd to accept that"
                    );
                }
                warnings.push(format!(
                    "{why}; this agent runs any command (--allow-any-cmd)"
                ));
            }
            if let Some(why) = writable_by_others(&resolved) {
                warnings.push(format!(
                    "--allow-cmd {dir}: {why}, so whoever can write there can run programs as this agent's user — make it writable by its owner only"
                ));
            }
            allowed.push(AllowedDir { given, resolved });
        }
        let allow = if any {
            Allow::Any
        } else if allowed.is_empty() {
            Allow::BuiltIns
        } else {
            Allow::Dirs(allowed)
        };
        Ok((allow, warnings))
    }

    /// Why this agent will not run `job`, or `None` when it will.
    pub fn refusal(&self, job: &CheckedJob) -> Option<String> {
        let (option, first) = job.commands.first()?;
        match self {
            Allow::Any => None,
            Allow::BuiltIns => Some(format!(
                "it carries a command ({option} `{}`) and this agent runs built-in workloads only — start it with --allow-cmd DIR or --allow-any-cmd",
                shown(first)
            )),
            Allow::Dirs(dirs) => job.commands.iter().find_map(|(option, command)| {
                program_refusal(command, dirs)
                    .map(|why| format!("its {option} command `{}` {why}", shown(command)))
            }),
        }
    }
}

impl std::fmt::Display for Allow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allow::BuiltIns => f.write_str("built-ins"),
            Allow::Any => f.write_str("any command"),
            Allow::Dirs(dirs) => {
                let list: Vec<String> =
                    dirs.iter().map(|d| d.given.display().to_string()).collect();
                write!(f, "built-ins, programs in {}", list.join(" "))
            }
        }
    }
}

/// Why `command` is not one program inside `dirs` (the rule in the module doc), or `None`.
fn program_refusal(command: &str, dirs: &[AllowedDir]) -> Option<String> {
    let listed = || {
        dirs.iter()
            .map(|d| d.given.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(c) = command.chars().find(|c| c.is_control()) {
        return Some(format!(
            "holds a control character ({}), which the shell reads as syntax — only an agent with --allow-any-cmd runs it",
            c.escape_default()
        ));
    }
    let without_n = command.replace("{n}", "");
    let syntax: BTreeSet<char> = without_n
        .chars()
        .filter(|c| SHELL_SYNTAX.contains(c))
        .collect();
    if !syntax.is_empty() {
        return Some(format!(
            "uses the shell's syntax ({}), which an allowed directory cannot vouch for — only an agent with --allow-any-cmd runs it",
            syntax.iter().collect::<String>()
        ));
    }
    let program = command.split(' ').find(|w| !w.is_empty()).unwrap_or("");
    if program.contains('=') {
        return Some(format!(
            "starts with an assignment (`{}`), not a program: the program comes first, as an absolute path",
            shown(program)
        ));
    }
    if !program.starts_with('/') {
        return Some(format!(
            "runs `{}`, not an absolute path (a bare name is looked up in PATH): write the program's absolute path inside {}",
            shown(program),
            listed()
        ));
    }
    if let Some(c) = program.chars().find(|&c| !plain_path_char(c)) {
        return Some(format!(
            "names its program with `{c}`, which the shell could read: an allowed program's path is letters, digits and / . _ + , : @ % -"
        ));
    }
    let path = Path::new(program);
    if path.components().any(|c| c == Component::ParentDir) {
        return Some(format!(
            "names its program through `..` (`{program}`): write the path inside {} without it",
            listed()
        ));
    }
    if !dirs
        .iter()
        .any(|d| path.starts_with(&d.given) || path.starts_with(&d.resolved))
    {
        return Some(format!(
            "runs `{program}`, which lies inside none of this agent's allowed directories ({})",
            listed()
        ));
    }
    match std::fs::canonicalize(path) {
        Err(e) => Some(format!(
            "runs `{program}`, which cannot be resolved here: {e}"
        )),
        Ok(target) if !dirs.iter().any(|d| target.starts_with(&d.resolved)) => Some(format!(
            "runs `{program}`, a link to `{}`, which lies inside none of this agent's allowed directories ({})",
            target.display(),
            listed()
        )),
        Ok(_) => None,
    }
}

/// A runner inside `dir` (searched to [`SCAN_DEPTH`], [`SCAN_ENTRIES`] entries at most) and
/// what makes it one: a shell when there is one, else the first other runner met.
fn first_runner(dir: &Path) -> Option<(PathBuf, String)> {
    let shells: BTreeSet<PathBuf> = std::fs::read_to_string("/etc/shells")
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('/'))
        .filter_map(|l| std::fs::canonicalize(l).ok())
        .collect();
    let mut other = None;
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((at, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SCAN_ENTRIES {
                return other;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if depth < SCAN_DEPTH {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            let target = std::fs::canonicalize(&path).ok();
            if let Some(target) = target.as_ref().filter(|t| shells.contains(*t)) {
                return Some((path, format!("a shell: {}", target.display())));
            }
            if other.is_some() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let target_name = target
                .as_ref()
                .and_then(|t| t.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            if is_runner(&name) {
                other = Some((
                    path,
                    "a shell, an interpreter or a program that runs others".into(),
                ));
            } else if let Some(target) =
                target.filter(|_| target_name.as_deref().is_some_and(is_runner))
            {
                other = Some((path, format!("a link to {}", target.display())));
            }
        }
    }
    other
}

/// Why others than the owner of `dir` (or root) may put a program there, if they may.
fn writable_by_others(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    let mode = meta.mode();
    if mode & 0o002 != 0 {
        Some("it is writable by every user".into())
    } else if mode & 0o020 != 0 {
        Some(format!("it is writable by its group (gid {})", meta.gid()))
    } else {
        None
    }
}

/// A command cut to a line's worth and escaped, for a message.
fn shown(command: &str) -> String {
    model::safe_text::printable(&model::safe_text::excerpt(command, 100)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dirs(dir: &Path) -> Vec<AllowedDir> {
        vec![AllowedDir {
            given: dir.to_path_buf(),
            resolved: std::fs::canonicalize(dir).unwrap(),
        }]
    }

    fn program(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_program_inside_the_directory_is_allowed_with_its_arguments_and_n() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = tmp.path().join("bench");
        std::fs::create_dir(&bench).unwrap();
        let ok = program(&bench, "ok.sh");
        let sub = bench.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let deep = program(&sub, "deep");
        let allowed = dirs(&bench);
        for command in [
            format!("{}", ok.display()),
            format!("{} -j {{n}} --out 'a b' \"c\"", ok.display()),
            format!("  {}   x", deep.display()),
        ] {
            assert_eq!(program_refusal(&command, &allowed), None, "{command}");
        }
    }

    #[test]
    fn every_way_out_is_refused_naming_its_rule() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = tmp.path().join("bench");
        std::fs::create_dir(&bench).unwrap();
        let ok = program(&bench, "ok.sh");
        program(tmp.path(), "evil.sh");
        program(tmp.path(), "bench-evil.sh");
        std::os::unix::fs::symlink(tmp.path().join("evil.sh"), bench.join("link.sh")).unwrap();
        let b = bench.display();
        let allowed = dirs(&bench);
        for (command, needle) in [
            (format!("{b}/../evil.sh"), "`..`"),
            (format!("{b}/../evi[l].sh"), "shell's syntax"),
            (format!("{b}-evil.sh"), "inside none"),
            (format!("{b}/link.sh"), "a link to"),
            (format!("{b}/missing.sh"), "cannot be resolved"),
            (
                format!("LD_PRELOAD=/tmp/x.so {}", ok.display()),
                "assignment",
            ),
            ("evil.sh".into(), "absolute path"),
            (format!("{}; rm -rf ~", ok.display()), "shell's syntax"),
            (format!("{}\nrm x", ok.display()), "control character"),
            (format!("{} $(id)", ok.display()), "shell's syntax"),
            (format!("'{}'", ok.display()), "absolute path"),
            (format!("{b}/ok{{n}}.sh"), "names its program with `{`"),
            (format!("{b}/o\"k.sh"), "names its program with"),
        ] {
            let why = program_refusal(&command, &allowed)
                .unwrap_or_else(|| panic!("{command:?} was allowed"));
            assert!(why.contains(needle), "{command:?}: {why}");
            assert!(!why.contains('\n'), "{command:?}: {why}");
        }
    }

    #[test]
    fn a_directory_holding_a_shell_or_interpreter_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(first_runner(tmp.path()).is_none());
        program(tmp.path(), "bench1");
        assert!(first_runner(tmp.path()).is_none());
        std::os::unix::fs::symlink("/bin/sh", tmp.path().join("innocent")).unwrap();
        let (path, what) = first_runner(tmp.path()).unwrap();
        assert!(path.ends_with("innocent"), "{path:?}");
        assert!(what.contains("shell") || what.contains("link"), "{what}");
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(other.path().join("py")).unwrap();
        program(&other.path().join("py"), "python3.11");
        assert!(first_runner(other.path()).is_some());
        assert!(is_runner("python3.11") && is_runner("bash") && !is_runner("dbench"));
        assert!(first_runner(Path::new("/usr/bin")).is_some());
    }

    #[test]
    fn from_args_refuses_a_missing_dir_a_file_and_a_shell_dir_unless_any() {
        let tmp = tempfile::tempdir().unwrap();
        let file = program(tmp.path(), "x");
        let missing = tmp.path().join("missing");
        for (dir, needle) in [
            (missing.display().to_string(), "missing"),
            (file.display().to_string(), "not a directory"),
            ("bench".to_owned(), "absolute"),
            ("/usr/bin/".to_owned(), "--allow-any-cmd"),
        ] {
            let err = Allow::from_args(std::slice::from_ref(&dir), false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{dir}: {err}");
        }
        let (allow, warnings) = Allow::from_args(&["/usr/bin/".into()], true).unwrap();
        assert_eq!(allow, Allow::Any);
        assert!(
            warnings.iter().any(|w| w.contains("any command")),
            "{warnings:?}"
        );
        let bench = tmp.path().join("bench");
        std::fs::create_dir(&bench).unwrap();
        std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (allow, warnings) =
            Allow::from_args(&[format!("{}/", bench.display())], false).unwrap();
        assert!(matches!(allow, Allow::Dirs(ref d) if d[0].given == bench));
        assert!(
            warnings.iter().any(|w| w.contains("every user")),
            "{warnings:?}"
        );
        assert_eq!(Allow::from_args(&[], false).unwrap().0, Allow::BuiltIns);
    }
}
