//! Every shell example of the user guide runs: the ```` ```sh ```` blocks of `docs/guide/*.md` and
//! of the README's "A five-minute tour" section.
//!
//! Each file gets a fresh temporary directory holding copies of the repository's `data/` folder
//! and of `crates/marginkit-cli/data/` at the same relative paths, so the examples are written as
//! a user types them at the root of a checkout. A block's commands run one by one, in order, with
//! `sh -c LINE` in that directory (`cd DIR` on a line of its own moves the block's later lines
//! into `DIR`; every block starts at the root again), and `marginkit` on the `PATH` is the binary
//! under test. Files written by one block stay for the next blocks of the same file.
//!
//! What a line says it prints is checked: a comment at the end of a command line (`marginkit
//! predict ... # Accuracy = 79.6296% (43/54)`) is expected output, and each part of it separated
//! by ` ... ` must appear in the command's standard output or standard error. A comment on a
//! line of its own is prose and is not checked. A command must succeed (exit 0), unless its
//! comment starts with `[exit N]`, which asks for exit code N instead. A line ending in `\`
//! continues on the next line.
//!
//! Blocks that must not run are fenced as ```` ```console ```` or ```` ```text ````: installation
//! commands (they build and install the whole project), `mpirun` (needs an MPI installation and
//! a separately built binary), Python sessions (need the Python package installed) and
//! commands that take longer than a test should (full-size benchmarks).
//!
//! The examples use small data and few iterations so that the whole test stays fast in a debug
//! build.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The `marginkit` binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_marginkit");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One command of a ```` ```sh ```` block: where it is, what it runs and what it must print.
struct Example {
    line: usize,
    command: String,
    expected: Vec<String>,
    exit: i32,
}

/// The ```` ```sh ```` blocks of `text` (after `section`, a heading, up to the next heading of the
/// same level, when given), each as its lines with their 1-based line numbers.
fn sh_blocks(text: &str, section: Option<&str>) -> Vec<Vec<(usize, String)>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<(usize, String)>> = None;
    let mut in_other_fence = false;
    let mut in_section = section.is_none();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if current.is_none() && !in_other_fence {
            if let Some(heading) = section {
                if line.starts_with("## ") {
                    in_section = line.trim_end() == heading;
                }
            }
        }
        if let Some(block) = current.as_mut() {
            if trimmed.starts_with("```") {
                blocks.push(current.take().unwrap());
            } else {
                block.push((i + 1, line.to_owned()));
            }
        } else if in_other_fence {
            if trimmed.starts_with("```") {
                in_other_fence = false;
            }
        } else if trimmed.starts_with("```") {
            if trimmed.trim_end() == "```sh" && in_section {
                current = Some(Vec::new());
            } else {
                in_other_fence = true;
            }
        }
    }
    assert!(current.is_none(), "an unterminated ```sh block");
    blocks
}

/// Splits a shell line into the command and its trailing comment: the first `#` outside quotes
/// that starts a word.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return (line[..i].trim_end(), Some(line[i + 1..].trim()));
            }
            _ => {}
        }
        prev = c;
    }
    (line.trim_end(), None)
}

/// The commands of a block, with continuation lines joined.
fn examples(block: &[(usize, String)]) -> Vec<Example> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (no, raw) in block {
        let (start, mut text) = match pending.take() {
            Some((start, head)) => (start, format!("{head} {}", raw.trim())),
            None => (*no, raw.trim().to_owned()),
        };
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        if let Some(stripped) = text.strip_suffix('\\') {
            text = stripped.trim_end().to_owned();
            pending = Some((start, text));
            continue;
        }
        let (command, comment) = split_comment(&text);
        let mut exit = 0;
        let mut expected = Vec::new();
        if let Some(mut c) = comment {
            if let Some(rest) = c.strip_prefix("[exit ") {
                let (code, rest) = rest.split_once(']').expect("[exit N] closes");
                exit = code.trim().parse().expect("an exit code");
                c = rest.trim();
            }
            expected = c
                .split(" ... ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        out.push(Example {
            line: start,
            command: command.to_owned(),
            expected,
            exit,
        });
    }
    assert!(pending.is_none(), "a block ends with a continued line");
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary checkout root holding the data the examples read.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = repo_root();
    copy_dir(&root.join("data"), &dir.path().join("data"));
    copy_dir(
        &root.join("crates/marginkit-cli/data"),
        &dir.path().join("crates/marginkit-cli/data"),
    );
    dir
}

/// Runs every ```` ```sh ```` block of `file` (relative to the repository root) and returns the
/// number of commands run.
fn run_file(file: &str, section: Option<&str>) -> usize {
    let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
    let dir = workspace();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut count = 0;
    for block in sh_blocks(&text, section) {
        let mut cwd = dir.path().to_path_buf();
        for ex in examples(&block) {
            if let Some(target) = ex.command.strip_prefix("cd ") {
                cwd = cwd.join(target.trim());
                assert!(cwd.is_dir(), "{file}:{}: no directory {target}", ex.line);
                continue;
            }
            let started = Instant::now();
            let o = Command::new("sh")
                .arg("-c")
                .arg(&ex.command)
                .current_dir(&cwd)
                .env("PATH", &path)
                .output()
                .expect("sh runs");
            let output = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            let code = o.status.code().unwrap_or(-1);
            assert_eq!(
                code, ex.exit,
                "{file}:{}: `{}` exited with {code}, not {}; output:\n{output}",
                ex.line, ex.command, ex.exit
            );
            for want in &ex.expected {
                assert!(
                    output.contains(want.as_str()),
                    "{file}:{}: `{}` did not print {want:?}; output:\n{output}",
                    ex.line,
                    ex.command
                );
            }
            eprintln!(
                "{file}:{}: {:.2} s  {}",
                ex.line,
                started.elapsed().as_secs_f64(),
                ex.command
            );
            count += 1;
        }
    }
    count
}

/// The guide's pages, in name order.
fn guide_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(repo_root().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    pages.sort();
    pages
}

#[cfg(unix)]
#[test]
fn readme_tour_runs() {
    let n = run_file("README.md", Some("## A five-minute tour"));
    assert!(n >= 3, "the README's tour has {n} commands");
}

#[cfg(unix)]
#[test]
fn guide_examples_run() {
    let pages = guide_pages();
    assert!(pages.len() >= 9, "{pages:?}");
    let mut total = 0;
    for page in &pages {
        total += run_file(page, None);
    }
    assert!(total >= 40, "the guide has only {total} commands");
}

#[test]
fn comments_and_continuations_are_parsed() {
    let block: Vec<(usize, String)> = [
        "# prose",
        "marginkit train -c 4 a b   # Accuracy = 1% ... nSV = 3",
        "marginkit predict x \\",
        "  y z # [exit 1] cannot read",
        "echo '# not a comment'",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| (i + 1, s.to_string()))
    .collect();
    let ex = examples(&block);
    assert_eq!(ex.len(), 3);
    assert_eq!(ex[0].command, "marginkit train -c 4 a b");
    assert_eq!(ex[0].expected, ["Accuracy = 1%", "nSV = 3"]);
    assert_eq!((ex[1].line, ex[1].exit), (3, 1));
    assert_eq!(ex[1].command, "marginkit predict x y z");
    assert_eq!(ex[1].expected, ["cannot read"]);
    assert_eq!(ex[2].command, "echo '# not a comment'");
    assert!(ex[2].expected.is_empty());
}

#[test]
fn only_sh_blocks_of_the_section_are_taken() {
    let text = "## A\n```sh\na1\n```\n## B\n```sh\nb1\n```\n```console\nc1\n```\n";
    let all = sh_blocks(text, None);
    assert_eq!(all.len(), 2);
    let b = sh_blocks(text, Some("## B"));
    assert_eq!(b, vec![vec![(7, "b1".to_owned())]]);
}
