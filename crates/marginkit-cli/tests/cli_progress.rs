//! Progress when stderr is not a terminal: plain lines with the elapsed time, with `--json` too,
//! and none with `-q`. `MARGINKIT_PROGRESS_SECONDS=0` makes every update a line, so the test does
//! not depend on how long the run takes.

use std::process::Command;

mod common;
use common::*;

fn run_env(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("MARGINKIT_PROGRESS_SECONDS", "0")
        .output()
        .expect("binary runs")
}

#[test]
fn long_commands_print_plain_progress_lines_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hard = d.join("hard.svm");
    write_hard(&hard, 1500);
    let h = hard.to_str().unwrap();
    let heart = data("heart_scale.train");
    let t = heart.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "train", "--json", "-c", "100", "-g", "2", "-m", "1", h, "m.model",
            ],
            "train: iter ",
        ),
        (vec!["path", "--json", "--grid", "5", t], "path 1/5: C "),
        (
            vec![
                "train", "--json", "-v", "3", "-c", "100", "-g", "2", "-m", "1", h,
            ],
            "train -v: fold 2/3: iter ",
        ),
        (
            vec![
                "train", "--json", "-v", "3", "-s", "odm", "--lambda", "100", h,
            ],
            "train -v: fold 3/3: iter ",
        ),
        (
            vec![
                "grid", "--json", "--log2c", "0,2,1", "--log2g", "-3,-1,1", t,
            ],
            "grid 1/9: C ",
        ),
    ];
    for (args, line) in cases {
        let o = run_env(&args, d);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        let progress: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("marginkit: ["))
            .collect();
        assert!(
            progress.iter().any(|l| l.contains(line)),
            "{args:?}: no line with {line:?} in {err}"
        );
        // stdout holds the one JSON object only.
        let _ = json(&o);
        // -q silences the progress.
        let mut quiet = args.clone();
        quiet.insert(1, "-q");
        let o = run_env(&quiet, d);
        assert!(o.status.success());
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("marginkit: ["),
            "{quiet:?}"
        );
    }
}

/// AID shows its inner solves on the progress line, not only its outer iterations: the DCD
/// passes of linear `aid svm` and the branch-and-bound nodes of `aid s3vm`, with `--json` and
/// beside the table; `-q` silences them.
#[test]
fn aid_progress_shows_the_inner_solve() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let heart = repo_data("clf/heart_scale.train.svm");
    let t = heart.to_str().unwrap();
    // Half of the labels hidden for S3VM.
    let text = std::fs::read_to_string(&heart).unwrap();
    let semi: String = text
        .lines()
        .take(60)
        .enumerate()
        .map(|(i, l)| {
            if i % 2 == 0 {
                format!("{l}\n")
            } else {
                format!("0 {}\n", l.split_once(' ').unwrap().1)
            }
        })
        .collect();
    std::fs::write(d.join("semi.svm"), semi).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["aid", "svm", "--json", t, "a.model"],
            "aid: iteration 0: solve iter 2 violation ",
        ),
        (
            vec!["aid", "svm", t, "a.model"],
            "aid: iteration 0: solve iter 2 violation ",
        ),
        (
            vec![
                "aid",
                "s3vm",
                "--json",
                "--max-iter",
                "2",
                "semi.svm",
                "s.model",
            ],
            "aid: iteration 1: solve iter 1 active ",
        ),
    ];
    for (args, line) in cases {
        let o = run_env(&args, d);
        assert!(o.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.lines()
                .any(|l| l.starts_with("marginkit: [") && l.contains(line)),
            "{args:?}: no line with {line:?} in {err}"
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("marginkit: ["), "{out}");
        let mut quiet = args.clone();
        quiet.insert(2, "-q");
        let o = run_env(&quiet, d);
        assert!(o.status.success());
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("marginkit: ["),
            "{quiet:?}"
        );
    }
}
