//! `marginkit predict` with every model kind it reads, and the files users give it by mistake.

mod common;
use common::*;

/// A LAD model from `marginkit lad` predicts `intercept + coef'x`, recomputed here from the
/// model's JSON and the data file.
#[test]
fn predict_runs_lad_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let train = lib_data("stackloss.raw.svm");
    let tr = train.to_str().unwrap();
    let o = run(&["lad", tr, "lad.json"], d);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["predict", "--json", tr, "lad.json", "p.txt"], d);
    let v = json(&o);
    assert!(v["mse"].as_f64().unwrap() >= 0.0, "{v}");
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("lad.json")).unwrap()).unwrap();
    let coef: Vec<f64> = model["coef"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let b = model["intercept"].as_f64().unwrap();
    let pred: Vec<f64> = std::fs::read_to_string(d.join("p.txt"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let rows = std::fs::read_to_string(&train).unwrap();
    let mut n = 0;
    for (line, p) in rows.lines().zip(&pred) {
        let mut f = b;
        for tok in line.split_whitespace().skip(1) {
            let (i, x) = tok.split_once(':').unwrap();
            let i: usize = i.parse().unwrap();
            f += coef[i - 1] * x.parse::<f64>().unwrap();
        }
        assert!((f - p).abs() <= 1e-9 * f.abs().max(1.0), "{f} vs {p}");
        n += 1;
    }
    assert_eq!(n, pred.len());
    assert_eq!(n, rows.lines().count());
}

/// Files that are not models are named, not parsed until an unknown keyword.
#[test]
fn foreign_files_given_as_models_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let test = data("heart_scale.test");
    let t = test.to_str().unwrap();
    let train = data("heart_scale.train");
    let o = run(&["scale", "-s", "range.txt", "-o", "scaled.svm", t], d);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(d.join("labels.txt"), "0\n1\n1\n0\n").unwrap();
    // A stopped fit writes a state file.
    let o = run(
        &[
            "train",
            "-q",
            "--max-iter",
            "3",
            train.to_str().unwrap(),
            "m.model",
        ],
        d,
    );
    assert!(
        d.join("m.model.state").exists(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for (file, says) in [
        ("range.txt", "svm-scale range file"),
        ("labels.txt", "one number per line"),
        ("m.model.state", "state file of a stopped `train` run"),
        ("scaled.svm", "data in LIBSVM format"),
    ] {
        let o = run(&["predict", t, file, "out.txt"], d);
        fails(&o, says);
        fails(&o, "not a model file");
        assert!(!d.join("out.txt").exists());
    }
}
