//! The Rust code in the user documentation compiles: every ```` ```rust ```` block of `README.md`
//! and `docs/guide/*.md` must equal, line for line after removing the common indentation, a part
//! of an example under `crates/marginkit/examples/` that lies between a `// docs:begin NAME` line
//! and a `// docs:end` line. `cargo test` builds the examples, so an API change that breaks a
//! snippet breaks the build of its example, and an edit of a snippet that is not made in its
//! example fails here.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lines with the smallest indentation of any non-empty line removed.
fn dedent(lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ```` ```rust ```` blocks of a Markdown text, each with the line it starts on.
fn rust_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    let mut other = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        match current.as_mut() {
            Some((_, body)) if !t.starts_with("```") => body.push(line),
            Some(_) => {
                let (start, body) = current.take().unwrap();
                out.push((start, dedent(&body)));
            }
            None if other => other = !t.starts_with("```"),
            None if t == "```rust" => current = Some((i + 1, Vec::new())),
            None => other = t.starts_with("```"),
        }
    }
    out
}

/// The marked parts of every example.
fn example_parts() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut parts = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut body: Option<Vec<&str>> = None;
        for line in text.lines() {
            let t = line.trim();
            if t.starts_with("// docs:begin") {
                body = Some(Vec::new());
            } else if t == "// docs:end" {
                let b = body.take().expect("docs:end after docs:begin");
                parts.push((path.display().to_string(), dedent(&b)));
            } else if let Some(b) = body.as_mut() {
                b.push(line);
            }
        }
        assert!(
            body.is_none(),
            "{}: docs:begin without docs:end",
            path.display()
        );
    }
    parts
}

#[test]
fn every_rust_block_of_the_docs_is_a_compiled_example() {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs/guide")) {
        for e in dir {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    let parts = example_parts();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, block) in rust_blocks(&text) {
            assert!(
                parts.iter().any(|(_, p)| p.trim_end() == block.trim_end()),
                "{}:{line}: this rust block is not the text of any example's docs:begin part:\n{block}",
                file.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 1, "no rust block found in {files:?}");
}

#[test]
fn blocks_and_parts_are_found() {
    let md = "text\n```rust\n    let a = 1;\n      let b = 2;\n```\n```text\n```rust\n```\n";
    let blocks = rust_blocks(md);
    assert_eq!(blocks, vec![(2, "let a = 1;\n  let b = 2;".to_owned())]);
}
