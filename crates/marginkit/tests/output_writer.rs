//! The shared output writer: regular files are replaced atomically, special files are written in
//! place and never replaced, symbolic links are followed, and bad targets are refused before and
//! during the write.

use marginkit::data::{check_output, write_output};
use std::io::Write;
use std::path::Path;

fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    write_output(path, |w| w.write_all(text.as_bytes()))
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn regular_file_is_created_and_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.model");
    check_output(&p).unwrap();
    write_text(&p, "first\n").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "first\n");
    write_text(&p, "second\n").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "second\n");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn failed_write_leaves_the_old_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.model");
    write_text(&p, "old\n").unwrap();
    let err = write_output(&p, |w| {
        w.write_all(b"half a fi")?;
        Err(std::io::Error::other("disk on fire"))
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "disk on fire");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
    assert!(leftovers(dir.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn replacing_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("out.txt");
    write_text(&p, "a").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_text(&p, "b").unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn directory_is_refused_before_and_during() {
    let dir = tempfile::tempdir().unwrap();
    let err = check_output(dir.path()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::IsADirectory);
    let err = write_text(dir.path(), "x").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::IsADirectory);
    assert!(dir.path().is_dir());
}

#[test]
fn missing_parent_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("no_such_dir").join("m.model");
    assert_eq!(
        check_output(&p).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
    assert!(write_text(&p, "x").is_err());
    assert!(!p.exists());
}

/// sysfs takes no new files, not even from root, so this is a read-only place on any Linux.
#[cfg(target_os = "linux")]
#[test]
fn read_only_location_is_refused() {
    let p = Path::new("/sys/marginkit-output-test");
    assert!(check_output(p).is_err());
    assert!(write_text(p, "x").is_err());
    assert!(!p.exists());
}

/// A read-only regular file is refused as opening it would be, though a rename could replace it.
/// Root may write any file, so as root the check is that the write goes through instead.
#[cfg(unix)]
#[test]
fn read_only_file_is_refused_unless_writable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ro.model");
    write_text(&p, "keep\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Independent probe: can this process open the file for writing at all?
    let openable = std::fs::OpenOptions::new().write(true).open(&p).is_ok();
    assert_eq!(check_output(&p).is_ok(), openable);
    assert_eq!(write_text(&p, "new\n").is_ok(), openable);
    let expected = if openable { "new\n" } else { "keep\n" };
    assert_eq!(std::fs::read_to_string(&p).unwrap(), expected);
}

#[cfg(unix)]
#[test]
fn symlink_is_followed_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("real");
    std::fs::create_dir(&sub).unwrap();
    let target = sub.join("m.model");
    let link = dir.path().join("link.model");
    // A dangling link: the target is created through it.
    std::os::unix::fs::symlink("real/m.model", &link).unwrap();
    check_output(&link).unwrap();
    write_text(&link, "one\n").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "one\n");
    // An existing target: replaced in its own directory, the link still points at it.
    write_text(&link, "two\n").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "two\n");
    // A chain of links.
    let link2 = dir.path().join("link2");
    std::os::unix::fs::symlink(&link, &link2).unwrap();
    write_text(&link2, "three\n").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "three\n");
    assert!(leftovers(dir.path()).is_empty() && leftovers(&sub).is_empty());
}

#[cfg(unix)]
#[test]
fn symlink_loop_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    assert!(check_output(&a).is_err());
    assert!(write_text(&a, "x").is_err());
}

#[cfg(unix)]
#[test]
fn fifo_is_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) must be installed");
    assert!(made.success(), "mkfifo failed");
    check_output(&fifo).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    write_text(&fifo, "through the pipe\n").unwrap();
    assert_eq!(reader.join().unwrap(), "through the pipe\n");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(leftovers(dir.path()).is_empty());
}

/// A character device made like `/dev/null` (major 1, minor 3) in a temporary directory: it must
/// stay a device. Making a device needs CAP_MKNOD (root, as in CI and containers); without it the
/// test says so and checks nothing, as the devices it would write are the system's own.
#[cfg(target_os = "linux")]
#[test]
fn device_is_written_in_place_and_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("null");
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&dev)
        .args(["c", "1", "3"])
        .output()
        .expect("mknod (coreutils) must be installed");
    if !made.status.success() {
        eprintln!(
            "skipped: mknod is not permitted here ({}); CI runs as root and checks this",
            String::from_utf8_lossy(&made.stderr).trim()
        );
        return;
    }
    check_output(&dev).unwrap();
    write_text(&dev, "discarded\n").unwrap();
    write_text(&dev, "discarded again\n").unwrap();
    let meta = std::fs::symlink_metadata(&dev).unwrap();
    assert!(meta.file_type().is_char_device(), "the device was replaced");
    assert!(leftovers(dir.path()).is_empty());
    // A symlink to the device is followed to it, and the device is kept.
    let link = dir.path().join("to-null");
    std::os::unix::fs::symlink(&dev, &link).unwrap();
    write_text(&link, "x").unwrap();
    assert!(std::fs::symlink_metadata(&dev)
        .unwrap()
        .file_type()
        .is_char_device());
}

/// A temporary file that a killed run left behind is removed by the next write to the same target;
/// one of a live process (this one) is kept.
#[cfg(target_os = "linux")]
#[test]
fn stale_temporaries_of_dead_runs_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.model");
    // A pid above Linux's maximum (2^22) never names a live process.
    let dead = dir.path().join(".m.model.marginkit-4194999-0.tmp");
    let live = dir.path().join(format!(
        ".m.model.marginkit-{}-999999.tmp",
        std::process::id()
    ));
    let other = dir.path().join(".other.marginkit-4194999-0.tmp");
    for f in [&dead, &live, &other] {
        std::fs::write(f, "partial").unwrap();
    }
    write_text(&p, "whole\n").unwrap();
    assert!(!dead.exists(), "a dead run's temporary is left");
    assert!(live.exists(), "a live process's temporary was removed");
    assert!(other.exists(), "another target's temporary was removed");
}
