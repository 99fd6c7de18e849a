//! End-to-end tests of `marginkit robust`: JSON keys, the chosen model saved and read by
//! `predict` (its accuracy equals the reported validation error), the plot, CCCP, the event limit,
//! and bad input (clear errors, no half-written output).

use std::path::{Path, PathBuf};

mod common;
use common::*;

/// auto (ISLR::Auto, mpg), scaled: in the library's test data.
fn auto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../marginkit/tests/data/auto.scale.svm")
}

#[test]
fn svc_theta_json_model_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let (tr, te) = (data("heart_scale.train"), data("heart_scale.test"));
    let out = json(&run(
        &[
            "robust",
            "svc",
            tr.to_str().unwrap(),
            "--path",
            "theta",
            "--valid",
            te.to_str().unwrap(),
            "-c",
            "0.1,1,10",
            "--json",
            "--plot",
            "p.svg",
            "--save-model",
            "best.model",
        ],
        dir.path(),
    ));
    let bps = out["breakpoints"].as_array().unwrap();
    assert!(bps.len() > 3);
    for b in bps {
        assert!(b["theta"]
            .as_f64()
            .is_some_and(|t| (0.0..=1.0).contains(&t)));
        assert!(b["objective"].as_f64().is_some());
        assert!(b["valid_error"].as_f64().is_some());
        assert!(b["locally_optimal"].as_bool().is_some());
    }
    let best = bps
        .iter()
        .filter(|b| b["locally_optimal"].as_bool() == Some(true))
        .map(|b| b["valid_error"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let chosen = &out["chosen"];
    assert_eq!(chosen["valid_error"].as_f64(), Some(best));
    assert!(chosen["c"].as_f64().is_some() && chosen["theta"].as_f64().is_some());
    assert!(out["total_seconds"].as_f64().unwrap() > 0.0);
    for r in out["runs"].as_array().unwrap() {
        assert_eq!(r["end"], "completed");
        assert_eq!(r["status"], "converged");
        assert_eq!(r["final_locally_optimal"], true);
    }
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"));
    assert!(svg.contains("coefficients along the path"));
    // The saved model predicts the validation set with the reported error.
    let o = run(
        &[
            "predict",
            "--json",
            te.to_str().unwrap(),
            "best.model",
            "pred.txt",
        ],
        dir.path(),
    );
    let p = json(&o);
    let acc = p["accuracy"].as_f64().unwrap();
    let acc = if acc > 1.0 { acc / 100.0 } else { acc };
    assert!(
        (1.0 - acc - best).abs() < 1e-9,
        "accuracy {acc} vs error {best}"
    );
}

#[test]
fn svr_s_path_and_cccp() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(auto()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(dir.path().join("tr.svm"), lines[..200].join("\n") + "\n").unwrap();
    std::fs::write(dir.path().join("va.svm"), lines[200..].join("\n") + "\n").unwrap();
    let common = [
        "robust", "svr", "tr.svm", "--path", "s", "--valid", "va.svm", "-c", "0.1,1", "-t", "2",
        "--json",
    ];
    let op = json(&run(&common, dir.path()));
    let bps = op["breakpoints"].as_array().unwrap();
    assert!(bps
        .iter()
        .all(|b| b["s"].as_f64().is_some_and(|s| s >= 0.0)));
    assert_eq!(op["method"], "op");
    let mut args = common.to_vec();
    args.push("--cccp");
    let cc = json(&run(&args, dir.path()));
    assert_eq!(cc["method"], "cccp");
    // Five grid points per C.
    assert_eq!(cc["breakpoints"].as_array().unwrap().len(), 10);
    assert!(cc["chosen"]["valid_error"].as_f64().is_some());
}

#[test]
fn event_limit_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let o = run(
        &[
            "robust",
            "svc",
            tr.to_str().unwrap(),
            "--path",
            "theta",
            "-c",
            "1",
            "--max-events",
            "2",
            "--json",
        ],
        dir.path(),
    );
    let v = json(&o);
    // The one shared status (as `train --json` and `fit::Report::status`), the path's own end
    // beside it.
    assert_eq!(v["runs"][0]["end"], "event_limit");
    assert_eq!(v["runs"][0]["status"], "max_iterations");
    assert_eq!(v["status"], "max_iterations");
    assert_eq!(v["converged"], false);
    assert!(String::from_utf8_lossy(&o.stderr).contains("stopped early"));
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tr = data("heart_scale.train");
    let t = tr.to_str().unwrap();
    fails(
        &run(&["robust", "svc", "missing.svm", "--path", "s"], dir.path()),
        "missing.svm",
    );
    std::fs::write(dir.path().join("bad.svm"), "+1 1:0.5\n-1 1:x\n").unwrap();
    fails(
        &run(&["robust", "svc", "bad.svm", "--path", "s"], dir.path()),
        "bad.svm:2:",
    );
    fails(
        &run(
            &["robust", "svc", t, "--path", "theta", "--s", "0.5"],
            dir.path(),
        ),
        "s = 0.5",
    );
    fails(
        &run(
            &["robust", "svc", t, "--path", "theta", "-c", "-1"],
            dir.path(),
        ),
        "C must be",
    );
    fails(
        &run(
            &[
                "robust", "svc", t, "--path", "theta", "--cccp", "--grid", "1.5",
            ],
            dir.path(),
        ),
        "theta",
    );
    fails(&run(&["robust", "svc", t, "--path", "x"], dir.path()), "x");
    std::fs::write(dir.path().join("three.svm"), "1 1:0\n2 1:1\n3 1:2\n").unwrap();
    fails(
        &run(
            &[
                "robust",
                "svc",
                "three.svm",
                "--path",
                "s",
                "--save-model",
                "m.model",
            ],
            dir.path(),
        ),
        "classes",
    );
    assert!(!dir.path().join("m.model").exists());
    let o = run(&["robust", "--help"], dir.path());
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("--path"));
}

/// The plot's titles carry the data set's name (the training file's stem), every C has a
/// legend entry in the objective and validation charts, and the document is tall enough for all
/// of them (a legend no longer runs into the next chart or off the page).
#[test]
fn plot_titles_name_the_data_and_legends_show_every_c() {
    let dir = tempfile::tempdir().unwrap();
    let tr = repo_data("clf/heart_scale.train.svm");
    let va = repo_data("clf/heart_scale.test.svm");
    let cs = "0.001,0.003,0.01,0.03,0.1,0.3,1,3,10,30,100,300,1000,3000,10000,30000";
    let o = run(
        &[
            "robust",
            "svc",
            tr.to_str().unwrap(),
            "--path",
            "theta",
            "-c",
            cs,
            "--valid",
            va.to_str().unwrap(),
            "--plot",
            "p.svg",
            "-q",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert!(svg.contains(">heart_scale.train: objective<"), "{svg}");
    assert!(
        svg.contains(">heart_scale.train: validation error<"),
        "{svg}"
    );
    let height: f64 = {
        let h = svg.split("height=\"").nth(1).unwrap();
        h[..h.find('"').unwrap()].parse().unwrap()
    };
    for c in cs.split(',') {
        let entry = format!(">C = {c}</text>");
        let ys: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains(&entry))
            .map(|l| {
                let t = l.split("<text x=\"").nth(1).unwrap();
                let y = t.split("y=\"").nth(1).unwrap();
                y[..y.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 2, "C = {c}: {ys:?}");
        assert!(
            ys.iter().all(|&y| y < height),
            "C = {c}: {ys:?} vs {height}"
        );
    }
}
