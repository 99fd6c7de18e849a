//! `marginkit grid`: exact printed points and Ctrl-C with the best point so far.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;
use common::*;

/// The printed best point is exact: training with the printed C and gamma gives the printed
/// cross-validation accuracy again (the printed values are the grid's powers of two, in full).
#[test]
fn grid_prints_exact_values_that_reproduce() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let tr = tr.to_str().unwrap();
    let o = run(
        &[
            "grid", "-q", "--log2c", "-3,3,3", "--log2g", "-13,-7,3", "-v", "4", tr,
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let last: Vec<&str> = text.lines().last().unwrap().split(' ').collect();
    let (c, g) = (last[0], last[1]);
    // gamma is 2^-13, 2^-10 or 2^-7: printed in full, never rounded to 6 digits.
    let gv: f64 = g.parse().unwrap();
    assert!(
        [-13.0f64, -10.0, -7.0].iter().any(|e| gv == e.exp2()),
        "{g}"
    );
    let cv = run(&["train", "-v", "4", "-c", c, "-g", g, tr], dir.path());
    assert!(cv.status.success());
    let acc = String::from_utf8_lossy(&cv.stdout);
    assert!(
        acc.contains(&format!("Cross Validation Accuracy = {}%", last[2])),
        "{acc} vs {text}"
    );
}

/// Starts a grid far too large to finish (heart_scale, 201 x 37 points) with its stdout piped,
/// and returns once the first point is printed: the run is then certainly under way.
#[cfg(unix)]
fn huge_grid_after_first_point(
    dir: &std::path::Path,
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(BIN)
        .args([
            "grid",
            "--log2c",
            "-5,15,0.1",
            "--log2g",
            "3,-15,-0.5",
            "-v",
            "5",
        ])
        .arg(data("heart_scale.train"))
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("rate="), "{first}");
    (child, out)
}

/// Ctrl-C during a grid far too large to finish: exit 130, a message, and the best point of the
/// points finished before it. The signal is sent once the first point has been printed.
#[cfg(unix)]
#[test]
fn ctrl_c_prints_the_best_point_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let (child, mut out) = huge_grid_after_first_point(dir.path());
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("interrupted after"), "{err}");
    // The last line is `C gamma rate` of the best finished point.
    let last: Vec<&str> = rest.lines().last().unwrap().split(' ').collect();
    assert_eq!(last.len(), 3, "{rest}");
    assert!(last[0].parse::<f64>().unwrap() > 0.0);
    assert!(last[2].parse::<f64>().unwrap() > 50.0);
}

/// A reader that closes the pipe early (`marginkit grid ... | head -1`) ends the run quietly with
/// 141 (128 + SIGPIPE), not a panic. The grid is far too large to finish before its next line.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = huge_grid_after_first_point(dir.path());
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// `grid -s odm` searches (lambda, gamma); its best point, given to `train -s odm -v` with the
/// same folds, gives the printed accuracy again.
#[test]
fn grid_searches_the_odm() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let tr = tr.to_str().unwrap();
    let o = run(
        &[
            "grid", "-q", "-s", "odm", "--log2c", "0,6,3", "--log2g", "-7,-3,2", "-v", "4", tr,
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let last: Vec<&str> = text.lines().last().unwrap().split(' ').collect();
    assert_eq!(last.len(), 3, "{text}");
    // The point lines name lambda, not C.
    let o = run(
        &[
            "grid", "-s", "odm", "--log2c", "0,3,3", "--log2g", "-3,-3,1", "-v", "4", tr,
        ],
        dir.path(),
    );
    let lines = String::from_utf8_lossy(&o.stdout);
    assert!(
        lines.starts_with("log2lambda=0, log2g=-3 rate=") && lines.contains("(best lambda="),
        "{lines}"
    );
    let cv = run(
        &[
            "train", "-s", "odm", "-v", "4", "--lambda", last[0], "-g", last[1], tr,
        ],
        dir.path(),
    );
    assert!(
        cv.status.success(),
        "{}",
        String::from_utf8_lossy(&cv.stderr)
    );
    let acc = String::from_utf8_lossy(&cv.stdout);
    assert!(
        acc.contains(&format!("Cross Validation Accuracy = {}%", last[2])),
        "{acc} vs {text}"
    );
    // ODM flags without -s odm are refused.
    let o = run(&["grid", "-q", "--theta", "0.1", tr], dir.path());
    fails(&o, "--theta apply to -s odm only");
}

/// `--plot` draws one cell per grid point, each labelled with its score as `--json` reports it,
/// and outlines the best one.
#[test]
fn grid_plots_a_heat_map_of_every_point() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let o = run(
        &[
            "grid",
            "--json",
            "--log2c",
            "-1,3,2",
            "--log2g",
            "-7,-3,2",
            "-v",
            "3",
            "--plot",
            "g.svg",
            tr.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let svg = std::fs::read_to_string(dir.path().join("g.svg")).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 9);
    // 9 cells, 20 colour-bar steps, the background and the outline of the best point.
    assert_eq!(svg.matches("<rect").count(), 9 + 20 + 1 + 1, "{svg}");
    assert_eq!(svg.matches("stroke=\"#d62728\"").count(), 1);
    for p in points {
        let score = p["score"].as_f64().unwrap();
        let shown = format!("{:.2}", score);
        let shown = shown.trim_end_matches('0').trim_end_matches('.');
        assert!(
            svg.contains(&format!(">{shown}<")),
            "{shown} not in the plot"
        );
    }
    assert!(svg.contains("heart_scale: 3-fold cross-validation accuracy %"));
}

/// An unwritable `--plot` is refused before any grid point is trained.
#[test]
fn grid_checks_its_plot_path_first() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        &["grid", "--plot", "no/such/dir/g.svg", "missing.svm"],
        dir.path(),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no/such/dir/g.svg (--plot) cannot be written"),
        "{err}"
    );
    assert!(!err.contains("missing.svm"), "{err}");
}

/// `grid` refuses `-c` (it searches C), `--linear` and `-B` with the reason, and `--help` does
/// not list them.
#[test]
fn grid_refuses_and_hides_the_flags_it_does_not_take() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let tr = tr.to_str().unwrap();
    for (flags, said) in [
        (&["-c", "2"][..], "--log2c"),
        (&["--linear"][..], "train --linear -v"),
        (&["-B", "1"][..], "-B"),
    ] {
        let mut args = vec!["grid", "-q"];
        args.extend_from_slice(flags);
        args.push(tr);
        let o = run(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{flags:?}: {err}");
        assert!(err.contains(said), "{flags:?}: {err}");
    }
    let help = run(&["grid", "--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["-c <", "--linear", "-B <"] {
        assert!(
            !help.lines().any(|l| l.trim_start().starts_with(flag)),
            "{flag} listed:\n{help}"
        );
    }
    for flag in ["-t <", "-g <", "-n <", "--log2c"] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

/// Cross-validation on one row says why it cannot run, not that the data is empty.
#[test]
fn one_row_says_cross_validation_needs_two() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.svm");
    std::fs::write(&one, "+1 1:1\n").unwrap();
    for cmd in [
        &["grid", "-q", "-v", "2"][..],
        &["train", "-q", "-v", "2"][..],
        &["train", "-q", "--linear", "-v", "2"][..],
        &["train", "-q", "-s", "odm", "-v", "2"][..],
    ] {
        let mut args = cmd.to_vec();
        args.push(one.to_str().unwrap());
        let o = run(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(
            err.contains("cross-validation needs at least 2 rows; the data has 1"),
            "{cmd:?}: {err}"
        );
    }
}
