//! scalelab runs as root: the files it creates must never land where another user points it.
//! Each test plants links and directories as a real unprivileged user (`nobody`, through
//! `setpriv`), runs scalelab as root, and checks that it refuses (exit 2, the error naming the
//! path) and that the link's target is untouched. Run as any other user, these tests print why
//! they were skipped: only root can act as `nobody`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Lab, euid_is_root, perf_available};

const PRECIOUS: &[u8] = b"root's file: scalelab must not touch it\n";
const NOBODY: u32 = 65534;

/// A lab whose directory `nobody` may enter, when this test runs as root; `None` (with the
/// reason printed) otherwise.
fn hostile_lab(test: &str) -> Option<Lab> {
    if !euid_is_root() {
        println!("skipped {test}: not root, so cannot act as `nobody` (CI runs the tests as root)");
        return None;
    }
    let probe = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "true",
        ])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "{test}: `setpriv --reuid=nobody --regid=nogroup` failed — install util-linux (setpriv) and make sure the user nobody and group nogroup exist"
    );
    let lab = Lab::new();
    std::fs::set_permissions(lab.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(lab)
}

/// Runs `script` with `sh -c` as nobody:nogroup; it must succeed.
fn as_nobody(script: &str) {
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .args(["sh", "-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "as nobody: {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A directory in the lab owned by nobody (0755): nobody can do anything in it.
fn nobody_dir(lab: &Lab, name: &str) -> PathBuf {
    let d = lab.path(name);
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(NOBODY), Some(NOBODY)).unwrap();
    d
}

/// A world-writable sticky directory owned by root, like /tmp.
fn sticky_dir(lab: &Lab, name: &str) -> PathBuf {
    let d = lab.path(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// A root-owned file with known contents.
fn victim(lab: &Lab) -> PathBuf {
    let v = lab.path("victim");
    std::fs::write(&v, PRECIOUS).unwrap();
    v
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SHORT_PROFILED_SPIN: &[&str] = &[
    "run",
    "spin",
    "--tasks",
    "1",
    "--runs",
    "1",
    "--duration",
    "200ms",
    "--warmup",
    "0s",
    "--profile",
    "--quiet",
];

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_kallsyms_link_planted_in_the_profiles_folder_is_not_followed() {
    let Some(lab) = hostile_lab("a_kallsyms_link_planted_in_the_profiles_folder_is_not_followed")
    else {
        return;
    };
    if !perf_available() {
        return;
    }
    let victim = victim(&lab);
    // The database's folder belongs to nobody, who plants the link where run 1 writes.
    let owned = nobody_dir(&lab, "shared");
    as_nobody(&format!(
        "mkdir -p '{0}/profiles/run1' && ln -s '{1}' '{0}/profiles/run1/kallsyms'",
        s(&owned),
        s(&victim)
    ));
    // A sticky world-writable folder (like /tmp): nobody pre-creates `profiles` there.
    let sticky = sticky_dir(&lab, "sticky");
    as_nobody(&format!(
        "mkdir -p '{0}/profiles/run1' && ln -s '{1}' '{0}/profiles/run1/kallsyms'",
        s(&sticky),
        s(&victim)
    ));
    for (dir, named) in [(&owned, owned.clone()), (&sticky, sticky.join("profiles"))] {
        let db = dir.join("lab.db");
        let mut args = vec!["--db", s(&db)];
        args.extend_from_slice(SHORT_PROFILED_SPIN);
        let err = lab.fails(&args);
        assert!(err.contains(s(&named)), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), PRECIOUS, "{err}");
        // Nothing was stored: the refusal comes before the run begins.
        let db_exists = db.exists();
        if db_exists {
            let listed = lab.ok(&["--db", s(&db), "ls", "--json"]);
            assert_eq!(listed.trim(), "[]", "{listed}");
        }
    }
}

#[test]
fn a_dangling_db_link_is_not_followed_even_by_ls() {
    let Some(lab) = hostile_lab("a_dangling_db_link_is_not_followed_even_by_ls") else {
        return;
    };
    let private = lab.path("root-only");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let owned = nobody_dir(&lab, "shared");
    let link = owned.join("lab.db");
    let target = private.join("made-by-root.db");
    as_nobody(&format!("ln -s '{}' '{}'", s(&target), s(&link)));
    let run: &[&str] = &[
        "run",
        "spin",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--duration",
        "50ms",
    ];
    for cmd in [&["ls"][..], run] {
        let mut args = vec!["--db", s(&link)];
        args.extend_from_slice(cmd);
        let err = lab.fails(&args);
        assert!(err.contains(s(&link)), "{cmd:?}: {err}");
        assert!(err.contains("link"), "{cmd:?}: {err}");
        assert!(!target.exists(), "{cmd:?} created {}", target.display());
    }
    // A link in the directory part, planted by nobody, is not followed either.
    let dir_link = owned.join("dir");
    as_nobody(&format!("ln -s '{}' '{}'", s(&private), s(&dir_link)));
    let db = dir_link.join("x.db");
    let mut args = vec!["--db", s(&db)];
    args.extend_from_slice(run);
    let err = lab.fails(&args);
    assert!(err.contains(s(&dir_link)), "{err}");
    assert!(!private.join("x.db").exists());
    assert_eq!(std::fs::read_dir(&private).unwrap().count(), 0);
}

/// Was: a new database whose `-shm` path was another user's link failed with "unable to open
/// database file", left a stray `lab.db` and `lab.db-wal`, and SQLite deleted that user's
/// `-journal` and `-wal` links.
#[test]
fn a_new_database_whose_side_files_are_another_users_links_is_refused_before_sqlite() {
    let Some(lab) = hostile_lab(
        "a_new_database_whose_side_files_are_another_users_links_is_refused_before_sqlite",
    ) else {
        return;
    };
    lab.short_spin(&[]);
    let export = lab.path("run.json");
    std::fs::write(&export, lab.ok(&["export", "last"])).unwrap();
    let shared = sticky_dir(&lab, "shared");
    let victim = victim(&lab);
    for side in ["-shm", "-wal", "-journal"] {
        let link = shared.join(format!("lab.db{side}"));
        as_nobody(&format!("ln -s '{}' '{}'", s(&victim), s(&link)));
    }
    let db = shared.join("lab.db");
    for cmd in [
        &["import", s(&export)][..],
        &["run", "spin", "--tasks", "1", "--runs", "1"],
    ] {
        let mut args = vec!["--db", s(&db)];
        args.extend_from_slice(cmd);
        let err = lab.fails(&args);
        assert!(
            err.contains(&format!("{}-journal: a symbolic link", s(&db))),
            "{cmd:?}: {err}"
        );
        assert!(!db.exists(), "{cmd:?} left {}", db.display());
    }
    for side in ["-shm", "-wal", "-journal"] {
        let link = shared.join(format!("lab.db{side}"));
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(meta.file_type().is_symlink(), "{side} was replaced");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), PRECIOUS);
    // A plain file another user left where a new database's write-ahead log goes is refused too.
    let db = shared.join("other.db");
    as_nobody(&format!("printf x > '{}-wal'", s(&db)));
    let err = lab.fails(&["--db", s(&db), "import", s(&export)]);
    assert!(
        err.contains("other.db-wal: a file of another user"),
        "{err}"
    );
    assert!(!db.exists());
}

#[test]
fn report_output_is_not_written_through_a_planted_link() {
    let Some(lab) = hostile_lab("report_output_is_not_written_through_a_planted_link") else {
        return;
    };
    lab.short_spin(&[]);
    let victim = victim(&lab);
    let owned = nobody_dir(&lab, "shared");
    let out = owned.join("report.html");
    as_nobody(&format!("ln -s '{}' '{}'", s(&victim), s(&out)));
    let err = lab.fails(&["report", "1", "-o", s(&out)]);
    assert!(err.contains(s(&out)), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), PRECIOUS);
    // A file nobody owns is not truncated for root either; a fresh name is written.
    let theirs = owned.join("theirs.html");
    as_nobody(&format!("echo mine > '{}'", s(&theirs)));
    let err = lab.fails(&["report", "1", "-o", s(&theirs)]);
    assert!(err.contains(s(&theirs)), "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"mine\n");
    let fresh = lab.path("fresh.html");
    lab.ok(&["report", "1", "-o", s(&fresh)]);
    lab.ok(&["report", "1", "-o", s(&fresh)]); // replacing our own file is fine
    assert!(std::fs::read_to_string(&fresh).unwrap().contains("<html"));
}

#[test]
fn profile_data_and_kallsyms_snapshots_are_private() {
    if !perf_available() {
        return;
    }
    let lab = Lab::new();
    lab.ok(SHORT_PROFILED_SPIN);
    let profiles = lab.path("profiles");
    let mut files = 0;
    let mut stack = vec![profiles.clone()];
    while let Some(d) = stack.pop() {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                assert!(m.is_file(), "{}", p.display());
                assert_eq!(mode(&p), 0o600, "{}", p.display());
                files += 1;
            }
        }
    }
    assert!(
        files >= 2,
        "a kallsyms snapshot and a perf.data under {profiles:?}"
    );
    assert_eq!(
        mode(&lab.db()),
        0o600,
        "a fresh database holds kernel lock addresses"
    );
}

#[test]
fn a_workdir_another_user_controls_is_refused() {
    let Some(lab) = hostile_lab("a_workdir_another_user_controls_is_refused") else {
        return;
    };
    let owned = nobody_dir(&lab, "work");
    let err = lab.fails(&[
        "run",
        "open_close",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--warmup",
        "0",
        "--workdir",
        s(&owned),
    ]);
    assert!(err.contains(s(&owned)), "{err}");
    assert_eq!(std::fs::read_dir(&owned).unwrap().count(), 0);
}

fn short_file_run(lab: &Lab, workdir: &Path) {
    lab.short_spin(&[]); // the database exists before the interesting run
    let out = lab.ok(&[
        "run",
        "open_close",
        "--tasks",
        "1",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--warmup",
        "0",
        "--workdir",
        s(workdir),
        "--json",
    ]);
    assert!(out.contains("\"trials_ok\": 1"), "{out}");
}

#[test]
fn the_scratch_sweep_never_removes_another_users_directory_or_follows_a_link() {
    let Some(lab) =
        hostile_lab("the_scratch_sweep_never_removes_another_users_directory_or_follows_a_link")
    else {
        return;
    };
    let work = sticky_dir(&lab, "work");
    let keep = lab.path("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("f"), PRECIOUS).unwrap();
    // Names an old scalelab used for the scratch of a dead process (no pid 999999999).
    let theirs = work.join("scalelab-scratch.999999999.1.1");
    let link = work.join("scalelab-scratch.999999998.1.1");
    as_nobody(&format!(
        "mkdir '{0}' && echo x > '{0}/f' && ln -s '{1}' '{2}'",
        s(&theirs),
        s(&keep),
        s(&link)
    ));
    short_file_run(&lab, &work);
    assert!(theirs.join("f").is_file(), "nobody's directory was removed");
    assert_eq!(std::fs::read(keep.join("f")).unwrap(), PRECIOUS);
    assert!(std::fs::symlink_metadata(&link).is_ok());
}

/// Ticks since boot (field 22 of /proc/PID/stat is in these units, USER_HZ = 100 on Linux).
fn uptime_ticks() -> u64 {
    let up = std::fs::read_to_string("/proc/uptime").unwrap();
    let secs: f64 = up.split_whitespace().next().unwrap().parse().unwrap();
    (secs * 100.0) as u64
}

fn unshare_available(test: &str) -> bool {
    let ok = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{test}: `unshare --pid --fork --mount-proc` failed as root — install util-linux"
    );
    ok
}

/// scalelab as pid 1 of a new PID namespace (as in a container), with the lab's database.
fn in_pid_namespace(lab: &Lab, args: &[&str]) -> Command {
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc"])
        .arg(assert_cmd::cargo::cargo_bin("scalelab"))
        .args(["--db", s(&lab.db())])
        .args(args)
        .current_dir(lab.dir.path());
    c
}

#[test]
fn scratch_names_planted_by_another_user_do_not_stop_the_run() {
    let Some(lab) = hostile_lab("scratch_names_planted_by_another_user_do_not_stop_the_run") else {
        return;
    };
    if !unshare_available("scratch_names_planted_by_another_user_do_not_stop_the_run") {
        return;
    }
    lab.short_spin(&[]);
    let work = sticky_dir(&lab, "work");
    // In a container scalelab is pid 1, and it starts within the next 20 s: nobody plants the
    // first scratch name of every start time in that span.
    let now = uptime_ticks();
    as_nobody(&format!(
        "cd '{}' && mkdir $(seq -f 'scalelab-scratch.1.%.0f.1' {} {})",
        s(&work),
        now,
        now + 2000
    ));
    let out = in_pid_namespace(
        &lab,
        &[
            "run",
            "open_close",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--workdir",
            s(&work),
            "--json",
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"trials_ok\": 1"),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The planted directories are nobody's: left alone.
    let left = std::fs::read_dir(&work).unwrap().count();
    assert_eq!(left, 2001);
}

#[test]
fn the_scratch_sweep_keeps_a_live_run_in_another_pid_namespace() {
    let test = "the_scratch_sweep_keeps_a_live_run_in_another_pid_namespace";
    if !euid_is_root() {
        println!("skipped {test}: a new PID namespace needs root (CI runs the tests as root)");
        return;
    }
    if !unshare_available(test) {
        return;
    }
    let lab = Lab::new();
    lab.short_spin(&[]);
    let work = lab.path("work");
    std::fs::create_dir(&work).unwrap();
    let contained = in_pid_namespace(
        &lab,
        &[
            "run",
            "open_close",
            "--tasks",
            "1",
            "--runs",
            "1",
            "--duration",
            "3s",
            "--warmup",
            "0",
            "--workdir",
            s(&work),
            "--json",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Wait for its scratch directory.
    let started = Instant::now();
    let scratch = loop {
        let found = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("scalelab-scratch.")
            });
        if let Some(p) = found {
            break p;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the contained run made no scratch directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // A second scalelab, outside the namespace, sweeps the same workdir while the first runs.
    short_file_run(&lab, &work);
    assert!(
        scratch.exists(),
        "the live run's {} was swept",
        scratch.display()
    );
    let out = contained.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"trials_ok\": 1"),
        "the contained run: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "both runs removed their scratch"
    );
}
