//! End-to-end tests of `marginkit coreset`: the report's JSON keys, agreement and coverage,
//! the plot (Figures 1-2) and trace, the SVM model read back by `marginkit predict`, and the
//! errors for bad input (eps outside (0,1), a node with no data, a disconnected graph, a kernel
//! without constant diagonal, a malformed edge list).

use std::process::Output;

use serde_json::Value;

mod common;
use common::*;

fn err(o: &Output) -> String {
    assert!(!o.status.success());
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn meb_json_plot_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let f = lib_data("heart_scale");
    let f = f.to_str().unwrap();
    let v = json(&run(
        &[
            "coreset", "meb", f, "--nodes", "30", "--graph", "er:0.05", "--json", "--plot",
            "c.svg", "--trace", "c.csv",
        ],
        dir.path(),
    ));
    for key in [
        "rounds",
        "agreed",
        "radius",
        "coverage_ratio",
        "core_set",
        "bytes_per_node_round",
        "total_seconds",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["agreed"], Value::Bool(true));
    assert_eq!(v["monotone"], Value::Bool(true));
    let cov = v["coverage_ratio"].as_f64().unwrap();
    assert!((0.9..=1.21 + 1e-9).contains(&cov), "{cov}");
    assert!(
        v["radius"].as_f64().unwrap() <= v["reference_radius"].as_f64().unwrap() * (1.0 + 1e-12)
    );
    assert!(v["core_set"].as_array().unwrap().len() <= 10);
    let svg = std::fs::read_to_string(dir.path().join("c.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("Fig. 1") && svg.contains("Fig. 2"));
    assert_eq!(
        svg.matches("<path").count(),
        60,
        "one line per node in each figure"
    );
    let csv = std::fs::read_to_string(dir.path().join("c.csv")).unwrap();
    let rounds = v["rounds"].as_u64().unwrap() as usize;
    assert_eq!(csv.lines().count(), 1 + 30 * (rounds + 1));
    // Text mode: the per-round table with the disagreement.
    let o = run(
        &["coreset", "meb", f, "--nodes", "5", "--graph", "ring"],
        dir.path(),
    );
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("r2_min") && text.contains("coverage_ratio"));
}

#[test]
fn svm_model_predicts_like_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (tr, te) = (
        lib_data("coreset_breast_cancer.train.svm"),
        lib_data("coreset_breast_cancer.test.svm"),
    );
    let (tr, te) = (tr.to_str().unwrap(), te.to_str().unwrap());
    let v = json(&run(
        &[
            "coreset", "svm", tr, "--test", te, "--eps", "0.02", "-c", "10", "--nodes", "6",
            "--graph", "grid", "--async", "0.7", "--drop", "0.1", "--delay", "1", "--json",
            "--model", "m.model",
        ],
        dir.path(),
    ));
    assert_eq!(v["agreed"], Value::Bool(true));
    let acc = v["test_accuracy"].as_f64().unwrap();
    assert!(acc > 90.0, "{acc}");
    assert!(v["train_accuracy"].as_f64().unwrap() > 90.0);
    let o = run(&["predict", te, "m.model", "p.txt"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("{acc:.4}%")), "{out} vs {acc}");
}

#[test]
fn bad_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = lib_data("heart_scale");
    let f = f.to_str().unwrap();
    let e = err(&run(&["coreset", "meb", f, "--eps", "1.5"], dir.path()));
    assert!(e.contains("eps") && e.contains("(0, 1)"), "{e}");
    let e = err(&run(&["coreset", "meb", f, "--nodes", "300"], dir.path()));
    assert!(e.contains("no data"), "{e}");
    let e = err(&run(&["coreset", "meb", f, "--graph", "er:0"], dir.path()));
    assert!(e.contains("consensus is impossible"), "{e}");
    std::fs::write(dir.path().join("e.txt"), "0 1\n1 0\n2 3\n3 2\n").unwrap();
    let e = err(&run(
        &[
            "coreset",
            "meb",
            f,
            "--nodes",
            "4",
            "--graph",
            "edges:e.txt",
        ],
        dir.path(),
    ));
    assert!(e.contains("not strongly connected"), "{e}");
    std::fs::write(dir.path().join("bad.txt"), "0 1\n1 x\n").unwrap();
    let e = err(&run(
        &[
            "coreset",
            "meb",
            f,
            "--nodes",
            "2",
            "--graph",
            "edges:bad.txt",
        ],
        dir.path(),
    ));
    assert!(e.contains("bad.txt:2") && e.contains("TO"), "{e}");
    let e = err(&run(&["coreset", "svm", f, "-t", "0"], dir.path()));
    assert!(e.contains("not constant"), "{e}");
    let e = err(&run(
        &["coreset", "meb", f, "--model", "x.model"],
        dir.path(),
    ));
    assert!(e.contains("--model"), "{e}");
    assert!(!dir.path().join("x.model").exists());
}

#[test]
fn unagreed_model_is_warned_and_test_misuse_fails_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let f = lib_data("heart_scale");
    let f = f.to_str().unwrap();
    // One round on a ring of 8 nodes cannot reach agreement.
    let o = run(
        &[
            "coreset",
            "svm",
            f,
            "--nodes",
            "8",
            "--graph",
            "ring",
            "--max-rounds",
            "1",
            "--json",
            "--model",
            "m.model",
        ],
        dir.path(),
    );
    let v = json(&o);
    assert_eq!(v["agreed"], Value::Bool(false));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("did not agree"), "{stderr}");
    let model = std::fs::read_to_string(dir.path().join("m.model")).unwrap();
    assert!(model.starts_with("svm_type "), "{model}");
    assert!(!model.contains("status"), "{model}");
    // --test with svdd is refused before reading the data (a missing file is not even opened).
    let e = err(&run(
        &["coreset", "svdd", "missing.svm", "--test", f],
        dir.path(),
    ));
    assert!(e.contains("--test is for"), "{e}");
}

#[test]
fn tiny_eps_and_the_stopping_rules() {
    let dir = tempfile::tempdir().unwrap();
    let f = lib_data("coreset_breast_cancer.train.svm");
    let f = f.to_str().unwrap();
    // eps = 1e-12 on 4 nodes: k = n (one global cap), the exact ball.
    let v = json(&run(
        &[
            "coreset", "meb", f, "--eps", "1e-12", "--nodes", "4", "--graph", "ring", "--json",
        ],
        dir.path(),
    ));
    let n = std::fs::read_to_string(lib_data("coreset_breast_cancer.train.svm"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(v["k"].as_u64().unwrap(), n);
    assert_eq!(v["agreed"], Value::Bool(true));
    assert!(v["coverage_ratio"].as_f64().unwrap() <= 1.0 + 1e-9);
    // The local rule (default) on a static graph: proven window 2 D + 1 (grid of 8: 3 columns,
    // D = 2 + 2 = 4), every node stopped, agreed, and the same set as the global rule.
    let common = [
        "coreset", "meb", f, "--nodes", "8", "--graph", "grid", "--json",
    ];
    let local = json(&run(&common, dir.path()));
    assert_eq!(local["stop_rule"], "local");
    assert_eq!(local["window"].as_u64(), Some(9));
    assert_eq!(local["window_proven"], Value::Bool(true));
    assert_eq!(local["stopped"], Value::Bool(true));
    assert_eq!(local["agreed"], Value::Bool(true));
    let mut g = common.to_vec();
    g.extend(["--stop", "global"]);
    let global = json(&run(&g, dir.path()));
    assert_eq!(global["stop_rule"], "global");
    assert_eq!(global["core_set_multiset"], local["core_set_multiset"]);
    assert!(global["rounds"].as_u64() <= local["rounds"].as_u64());
    let mut h = common.to_vec();
    h.extend(["--stop", "global", "--window", "3"]);
    assert!(err(&run(&h, dir.path())).contains("--window is for --stop local"));
    let help = run(&["coreset", "--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("2D+1"), "{help}");
}
