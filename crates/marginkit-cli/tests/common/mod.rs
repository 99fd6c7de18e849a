//! Helpers shared by the command-line test files: the binary, the test data folders, running a
//! subcommand and reading its `--json` object. Each test file uses a subset (hence the allow).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The `marginkit` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_marginkit");

/// A file of the CLI crate's own test data (`crates/marginkit-cli/tests/data`).
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// A file of the library crate's test data (`crates/marginkit/tests/data`).
pub fn lib_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../marginkit/tests/data")
        .join(name)
}

/// Runs `marginkit ARGS` in `dir` and waits for it.
pub fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

/// The one JSON object a successful `--json` run printed.
pub fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

/// Asserts that a run failed with `needle` in its error output and without a panic.
pub fn fails(o: &Output, needle: &str) {
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(needle), "stderr {e:?} lacks {needle:?}");
    assert!(!e.contains("panicked"), "{e}");
}

/// Overlapping classes in 10 dimensions (a deterministic LCG): with a large C, a large gamma,
/// a tight tolerance and a 1 MB cache, training takes a few seconds.
pub fn write_hard(path: &Path, n: usize) {
    write_overlapping(path, n, 10, 0.15);
}

/// Two overlapping classes in `d` dimensions, labels alternating +1/-1, each feature uniform in
/// [-1, 1] shifted by `shift * y` (a deterministic LCG), as LIBSVM text.
pub fn write_overlapping(path: &Path, n: usize, d: usize, shift: f64) {
    use std::io::Write;
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        let y = if i % 2 == 0 { 1.0 } else { -1.0 };
        write!(f, "{y}").unwrap();
        for k in 0..d {
            write!(f, " {}:{:.6}", k + 1, next() + shift * y).unwrap();
        }
        writeln!(f).unwrap();
    }
}

/// Sends SIGINT to process `pid` (what Ctrl-C in a terminal sends).
#[cfg(unix)]
pub fn sigint(pid: u32) {
    let k = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(k.success(), "kill -INT {pid} failed");
}

/// Starts `marginkit ARGS` in `dir` and reads its standard output line by line; after the first
/// line for which `ready` holds it sends SIGINT, then collects the rest. The commands print such
/// lines (an iteration table's rows) from inside the fit, after the Ctrl-C handler is installed,
/// so the signal always reaches the handler and always finds the fit running while the later
/// rows' work remains. Panics if the command ends without printing such a line.
#[cfg(unix)]
pub fn interrupt_after_line(args: &[&str], dir: &Path, ready: impl Fn(&str) -> bool) -> Output {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut stdout = String::new();
    loop {
        let start = stdout.len();
        let n = out.read_line(&mut stdout).expect("stdout readable");
        assert!(
            n > 0,
            "marginkit {args:?} ended before printing the awaited line; stdout:\n{stdout}"
        );
        if ready(stdout[start..].trim_end()) {
            break;
        }
    }
    sigint(child.id());
    out.read_to_string(&mut stdout).expect("stdout readable");
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_end(&mut stderr)
        .expect("stderr readable");
    let status = child.wait().expect("child reaped");
    Output {
        status,
        stdout: stdout.into_bytes(),
        stderr,
    }
}

/// Linux: whether process `pid` catches SIGINT, i.e. has installed its Ctrl-C handler
/// (bit 1 of the `SigCgt` mask in `/proc/PID/status`).
#[cfg(target_os = "linux")]
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & 0b10 != 0)
}

/// Linux: CPU time of process `pid` so far, all threads, user + system, in clock ticks
/// (fields 14 and 15 of `/proc/PID/stat`; the command name before them may hold spaces).
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // `after` starts at field 3 (the state), so fields 14 and 15 are at 11 and 12.
    field(11) + field(12)
}

/// Linux: starts `marginkit ARGS` in `dir`, waits until it has installed its Ctrl-C handler and
/// has then spent `ticks` more clock ticks of CPU time (10 ms each at the usual 100 Hz) in the
/// fit, sends SIGINT and returns its output. The wait counts work done, not elapsed time, so a
/// loaded machine only makes it longer; callers pick problems whose fit needs many times `ticks`.
/// Panics if the command exits before the signal.
#[cfg(target_os = "linux")]
pub fn interrupt_after_cpu(args: &[&str], dir: &Path, ticks: u64) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let pid = child.id();
    let poll = std::time::Duration::from_millis(1);
    let mut start = None;
    loop {
        if let Some(st) = child.try_wait().expect("child state") {
            let o = child.wait_with_output().expect("output");
            panic!(
                "marginkit {args:?} exited ({st}) before the signal: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        match start {
            None if catches_sigint(pid) => start = Some(cpu_ticks(pid)),
            Some(t0) if cpu_ticks(pid) >= t0 + ticks => break,
            _ => {}
        }
        std::thread::sleep(poll);
    }
    sigint(pid);
    child.wait_with_output().expect("output")
}

/// A file of the repository's real data sets (`data/`, e.g. `clf/iris.train.svm`).
pub fn repo_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}
