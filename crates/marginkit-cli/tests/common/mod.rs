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
