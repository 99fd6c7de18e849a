//! Writing output files without ever leaving half a file or destroying a special file.
//!
//! Every output of the library and the front ends (models, state files, labels, plots, scaled
//! data) goes through [`write_output`], and every front end checks its output paths with
//! [`check_output`] before it starts the work. The rules, by what the path names:
//!
//! | target | how it is written |
//! |---|---|
//! | a regular file, or nothing yet | a temporary file in the target's directory, synced, then renamed over it |
//! | a device (`/dev/null`), a FIFO, a socket | opened and written in place; never replaced |
//! | `/dev/stdout`, `/dev/stderr` (and `/dev/fd/1`, `/dev/fd/2`) | the process's own stream |
//! | a symbolic link | followed; the rules above apply to its final target |
//! | a directory | refused |
//!
//! The rename makes a regular output appear whole or not at all. A device or a FIFO cannot be
//! renamed over without destroying it (as root, `rename` over `/dev/null` replaces the system's
//! null device with a regular file), so those are written in place. Temporary files are named
//! `.NAME.marginkit-PID-SEQ.tmp`; one left behind by a killed run is removed by the next write to
//! the same target once its process is gone.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The longest chain of symbolic links followed (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// Where an output goes, once the path has been looked at.
#[derive(Debug)]
enum Target {
    /// Standard output (1) or standard error (2) of this process.
    Stream(u8),
    /// An existing non-regular file (device, FIFO, socket) or a kernel "magic" link under
    /// `/proc` or `/dev/fd`: opened and written in place.
    InPlace(PathBuf),
    /// A regular file, existing or not: written through a temporary file and a rename.
    Regular(PathBuf),
}

/// Writes an output file. `write` fills a buffered writer; see the module docs for how each kind
/// of target is written. A regular target is untouched unless the whole write succeeds.
///
/// # Errors
/// Any I/O error from resolving, creating, writing, syncing or renaming; a directory target is
/// [`io::ErrorKind::IsADirectory`].
pub fn write_output<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    match resolve(path)? {
        Target::Stream(fd) => {
            // Whatever this process already printed must come first.
            if fd == 1 {
                io::stdout().flush()?;
            } else {
                io::stderr().flush()?;
            }
            let mut w = BufWriter::new(stream_file(fd)?);
            write(&mut w)?;
            w.flush()
        }
        Target::InPlace(p) => {
            let truncate = fs::metadata(&p).map(|m| m.is_file()).unwrap_or(false);
            let file = OpenOptions::new().write(true).truncate(truncate).open(&p)?;
            let mut w = BufWriter::new(file);
            write(&mut w)?;
            w.flush()
        }
        Target::Regular(p) => write_replacing(&p, write),
    }
}

/// Whether `a` and `b` name the same file: existing paths after resolving links, paths that do
/// not exist yet as given after making them absolute. Front ends refuse an output that is
/// another output or one of their inputs.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let norm = |p: &Path| {
        fs::canonicalize(p)
            .unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    };
    norm(a) == norm(b)
}

/// Checks that [`write_output`] can write `path`, without changing anything a user can see: the
/// target is not a directory, its directory exists and takes a new file, and an existing regular
/// target is writable. Front ends call it for every output before the work starts.
///
/// # Errors
/// The I/O error the write would meet.
pub fn check_output(path: &Path) -> io::Result<()> {
    match resolve(path)? {
        Target::Stream(_) => Ok(()),
        Target::InPlace(p) => {
            // Opening a FIFO for writing blocks until a reader comes, so a FIFO is only checked
            // to exist; a device must open.
            let meta = fs::metadata(&p)?;
            if !is_fifo(&meta) {
                OpenOptions::new().write(true).open(&p)?;
            }
            Ok(())
        }
        Target::Regular(p) => {
            if p.exists() {
                // Opening without truncating changes nothing; it fails where the file is read-only.
                OpenOptions::new().write(true).open(&p)?;
            }
            let tmp = temp_path(&p);
            File::create(&tmp)?;
            fs::remove_file(&tmp)
        }
    }
}

/// Follows symbolic links and classifies the final target.
fn resolve(path: &Path) -> io::Result<Target> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        if let Some(fd) = std_stream(&p) {
            return Ok(Target::Stream(fd));
        }
        // The links under /proc/*/fd and /dev/fd name open files, pipes and sockets that have no
        // path of their own ("pipe:[123]"); the kernel follows them when they are opened.
        if p.starts_with("/proc") || p.starts_with("/dev/fd") {
            return Ok(Target::InPlace(p));
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(m) if m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, not a file",
                ))
            }
            Ok(m) if !m.is_file() => return Ok(Target::InPlace(p)),
            Ok(_) => return Ok(Target::Regular(p)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Regular(p)),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// `Some(1)` or `Some(2)` when `p` names this process's standard output or standard error.
fn std_stream(p: &Path) -> Option<u8> {
    match p.to_str()? {
        "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(1),
        "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(2),
        _ => None,
    }
}

/// A `File` on a duplicate of standard output or standard error, so that writing it appends to
/// whatever the stream is (a terminal, a pipe, a file opened with `>>`) instead of reopening it.
#[cfg(unix)]
fn stream_file(fd: u8) -> io::Result<File> {
    use std::os::fd::AsFd;
    let owned = if fd == 1 {
        io::stdout().as_fd().try_clone_to_owned()?
    } else {
        io::stderr().as_fd().try_clone_to_owned()?
    };
    Ok(File::from(owned))
}

#[cfg(not(unix))]
fn stream_file(fd: u8) -> io::Result<File> {
    let name = if fd == 1 {
        "/dev/stdout"
    } else {
        "/dev/stderr"
    };
    OpenOptions::new().write(true).open(name)
}

#[cfg(unix)]
fn is_fifo(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_meta: &fs::Metadata) -> bool {
    false
}

/// Temporary-file names unique within the process (threads may write siblings at once).
static SEQ: AtomicU64 = AtomicU64::new(0);

const TMP_TAG: &str = ".marginkit-";
const TMP_SUFFIX: &str = ".tmp";

fn dir_and_name(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    (dir, name)
}

fn temp_path(path: &Path) -> PathBuf {
    let (dir, name) = dir_and_name(path);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        ".{name}{TMP_TAG}{}-{seq}{TMP_SUFFIX}",
        std::process::id()
    ))
}

/// Removes the temporary files that runs killed while writing `path` left behind: those whose
/// process no longer exists. Only Linux tells that cheaply (`/proc/PID`); elsewhere nothing is
/// removed, and the names say what the files are.
fn remove_stale_temps(path: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (dir, name) = dir_and_name(path);
    let prefix = format!(".{name}{TMP_TAG}");
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|f| f.strip_suffix(TMP_SUFFIX))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            // A failure here only leaves the stale file where it was.
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn write_replacing<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    remove_stale_temps(path);
    let existing = fs::metadata(path).ok();
    if existing.is_some() {
        // A read-only file is refused, as opening it would be; the rename alone would not notice.
        OpenOptions::new().write(true).open(path)?;
    }
    let tmp = temp_path(path);
    let result = (|| {
        let file = File::create(&tmp)?;
        if let Some(meta) = &existing {
            file.set_permissions(meta.permissions())?;
        }
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
