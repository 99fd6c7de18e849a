//! End-to-end tests of `marginkit cluster odmc|kmeans` and `marginkit train -s odm`: labels out
//! one per line, Acc/RI with labelled data, the JSON keys, the plot, determinism, bad input.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod common;
use common::*;

/// `k` separated blobs in 3 dimensions (deterministic), written as LIBSVM text with the blob
/// index as label (or label 0 everywhere when `unlabelled`).
fn blobs(dir: &Path, name: &str, k: usize, per: usize, unlabelled: bool) -> PathBuf {
    let mut s = 1u64;
    let mut unif = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut text = String::new();
    for i in 0..k * per {
        let c = i % k;
        let label = if unlabelled { 0 } else { c };
        write!(text, "{label}").unwrap();
        for j in 0..3 {
            let centre = if j == c % 3 {
                12.0 * (1 + c / 3) as f64
            } else {
                0.0
            };
            write!(text, " {}:{:.6}", j + 1, centre + 2.0 * unif()).unwrap();
        }
        text.push('\n');
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn lines(p: &Path) -> Vec<usize> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn odmc_recovers_blobs_with_json_plot_and_label_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = blobs(dir.path(), "b2.svm", 2, 50, false);
    let d = data.to_str().unwrap();
    for kernel in ["linear", "gaussian"] {
        let out = dir.path().join(format!("{kernel}.txt"));
        let plot = dir.path().join(format!("{kernel}.svg"));
        let o = run(
            &[
                "cluster",
                "odmc",
                d,
                "--kernel",
                kernel,
                "--seed",
                "3",
                "--json",
                "-o",
                out.to_str().unwrap(),
                "--plot",
                plot.to_str().unwrap(),
            ],
            dir.path(),
        );
        let v = json(&o);
        assert_eq!(v["accuracy"].as_f64(), Some(1.0), "{kernel}: {v}");
        assert_eq!(v["rand_index"].as_f64(), Some(1.0));
        assert!(v["iterations"].as_u64().unwrap() > 0);
        assert!(v["total_seconds"].as_f64().unwrap() >= 0.0);
        assert_eq!(v["cluster_sizes"], serde_json::json!([50, 50]));
        let labels = lines(&out);
        assert_eq!(labels.len(), 100);
        assert!(labels.iter().all(|&l| l < 2));
        let svg = std::fs::read_to_string(&plot).unwrap();
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"));
        // Human lines go to stderr with --json.
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("Acc = 100.0000%"), "{err}");
    }
}

#[test]
fn same_seed_same_labels_and_default_output_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = blobs(dir.path(), "b3.svm", 3, 30, false);
    let d = data.to_str().unwrap();
    let o = run(
        &["cluster", "odmc", d, "-k", "3", "--seed", "5"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Acc = 100.0000%") && text.contains("RI = 1.0000"),
        "{text}"
    );
    let first = lines(&dir.path().join("b3.svm.clusters"));
    let o = run(
        &["cluster", "odmc", d, "-k", "3", "--seed", "5", "-q"],
        dir.path(),
    );
    assert!(o.status.success());
    assert!(o.stdout.is_empty(), "quiet");
    assert_eq!(first, lines(&dir.path().join("b3.svm.clusters")));
}

#[test]
fn kmeans_baseline_and_unlabelled_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = blobs(dir.path(), "b3.svm", 3, 30, false);
    let v = json(&run(
        &[
            "cluster",
            "kmeans",
            data.to_str().unwrap(),
            "-k",
            "3",
            "--json",
        ],
        dir.path(),
    ));
    assert_eq!(v["accuracy"].as_f64(), Some(1.0));
    let o = run(
        &[
            "cluster",
            "kmeans",
            data.to_str().unwrap(),
            "-k",
            "3",
            "-o",
            "-",
            "-q",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 90);
    let o = run(
        &[
            "cluster",
            "kmeans",
            data.to_str().unwrap(),
            "--json",
            "-o",
            "-",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let bare = blobs(dir.path(), "bare.svm", 2, 20, true);
    let o = run(
        &["cluster", "odmc", bare.to_str().unwrap(), "--json"],
        dir.path(),
    );
    let v = json(&o);
    assert!(v.get("accuracy").is_none() && v.get("rand_index").is_none());
    assert_eq!(lines(&dir.path().join("bare.svm.clusters")).len(), 40);
}

#[test]
fn bad_input_is_a_clear_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let small = blobs(dir.path(), "small.svm", 2, 3, false);
    let s = small.to_str().unwrap();
    for method in ["odmc", "kmeans"] {
        let o = run(&["cluster", method, s, "-k", "7"], dir.path());
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("k = 7") && err.contains("6 points"), "{err}");
    }
    let constant = dir.path().join("const.svm");
    std::fs::write(&constant, "1 1:2 2:3\n-1 1:2 2:3\n1 1:2 2:3\n-1 1:2 2:3\n").unwrap();
    let o = run(&["cluster", "odmc", constant.to_str().unwrap()], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("constant"));
    let odd = blobs(dir.path(), "odd.svm", 1, 7, false);
    let o = run(
        &["cluster", "odmc", odd.to_str().unwrap(), "--beta", "0"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("balance constraint infeasible"), "{err}");
    let o = run(&["cluster", "odmc", s, "--beta", "2"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("beta"));
    assert!(!dir.path().join("small.svm.clusters").exists());
    assert!(!dir.path().join("odd.svm.clusters").exists());
}

#[test]
fn train_odm_model_is_loadable_by_predict_and_cv_runs() {
    let dir = tempfile::tempdir().unwrap();
    let train = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/heart_scale.train");
    let test = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/heart_scale.test");
    let model = dir.path().join("odm.model");
    let v = json(&run(
        &[
            "train",
            "-s",
            "odm",
            "-t",
            "2",
            "-g",
            "0.05",
            "--lambda",
            "10",
            "-n",
            "0.5",
            "--theta",
            "0.2",
            "--json",
            train.to_str().unwrap(),
            model.to_str().unwrap(),
        ],
        dir.path(),
    ));
    assert_eq!(v["svm_type"], "odm");
    assert_eq!(v["status"], "converged");
    assert!(v["gap"].as_f64().unwrap().abs() <= 1e-3 * (1.0 + v["primal"].as_f64().unwrap()));
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(text.starts_with("svm_type c_svc") && text.contains("rho 0"));
    let out = dir.path().join("pred.txt");
    let p = json(&run(
        &[
            "predict",
            "--json",
            test.to_str().unwrap(),
            model.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        dir.path(),
    ));
    assert!(p["accuracy"].as_f64().unwrap() > 70.0, "{p}");
    let cv = json(&run(
        &[
            "train",
            "-s",
            "odm",
            "-t",
            "0",
            "-v",
            "5",
            "--json",
            train.to_str().unwrap(),
        ],
        dir.path(),
    ));
    assert!(cv["accuracy"].as_f64().unwrap() > 70.0, "{cv}");
    let bad = run(
        &[
            "train",
            "-s",
            "odm",
            "--theta",
            "1.5",
            train.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("theta"));
}

/// `--n-init 0` / `--max-iter 0` are rejected, not silently raised to 1.
#[test]
fn kmeans_zero_restarts_or_iterations_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let data = blobs(dir.path(), "b3.svm", 3, 30, false);
    for flag in ["--n-init", "--max-iter"] {
        let o = run(
            &[
                "cluster",
                "kmeans",
                data.to_str().unwrap(),
                "-k",
                "3",
                flag,
                "0",
            ],
            dir.path(),
        );
        assert_eq!(o.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag) && err.contains(">= 1"), "{err}");
    }
}

/// Points whose coordinates are tiny (their squared deviations underflow) but differ are
/// clustered, not refused as constant; points that are all equal are refused as constant.
#[test]
fn tiny_values_are_clustered_and_equal_values_are_constant() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.svm");
    std::fs::write(
        &tiny,
        "1 1:1e-300\n1 1:1.1e-300\n2 1:9e-300\n2 1:9.1e-300\n",
    )
    .unwrap();
    let same = dir.path().join("same.svm");
    std::fs::write(&same, "1 1:1e-300\n1 1:1e-300\n2 1:1e-300\n").unwrap();
    for method in ["kmeans", "odmc"] {
        let o = run(
            &[
                "cluster",
                method,
                "-k",
                "2",
                "-q",
                "-o",
                "labels",
                tiny.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert!(
            o.status.success(),
            "{method}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let labels = std::fs::read_to_string(dir.path().join("labels")).unwrap();
        let l: Vec<&str> = labels.lines().collect();
        assert!(
            l[0] == l[1] && l[2] == l[3] && l[0] != l[2],
            "{method}: {labels}"
        );
        let o = run(
            &[
                "cluster",
                method,
                "-k",
                "2",
                "-q",
                "-o",
                "labels2",
                same.to_str().unwrap(),
            ],
            dir.path(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("constant"),
            "{method}: {err}"
        );
    }
}

/// `train -s odm --plot` draws the training margins' distribution with the zone edges; `--plot`
/// is refused for other models and with -v, and an unwritable plot fails before any model is
/// written.
#[test]
fn odm_margin_plot() {
    let dir = tempfile::tempdir().unwrap();
    let d = blobs(dir.path(), "two.svm", 2, 30, false);
    let d = d.to_str().unwrap();
    let o = run(
        &["train", "-q", "-s", "odm", "--plot", "m.svg", d, "m.model"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(dir.path().join("m.svg")).unwrap();
    for text in [
        "two: ODM training margins",
        "1 - theta",
        "1 + theta",
        "margin y f(x)",
    ] {
        assert!(svg.contains(text), "{text}");
    }
    for args in [
        &["train", "-q", "--plot", "x.svg", d, "x.model"][..],
        &["train", "-q", "-s", "odm", "-v", "3", "--plot", "x.svg", d][..],
    ] {
        let o = run(args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("--plot draws the margin distribution"),
            "{err}"
        );
    }
    let o = run(
        &[
            "train",
            "-q",
            "-s",
            "odm",
            "--plot",
            "no/such/dir/x.svg",
            d,
            "y.model",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--plot"));
    assert!(!dir.path().join("y.model").exists() && !dir.path().join("x.svg").exists());
}

/// `cluster kmeans --plot` draws the inertia per Lloyd iteration with the data set's name.
#[test]
fn kmeans_inertia_plot() {
    let dir = tempfile::tempdir().unwrap();
    let d = blobs(dir.path(), "three.svm", 3, 20, false);
    let o = run(
        &[
            "cluster",
            "kmeans",
            "-k",
            "3",
            "-q",
            "--plot",
            "k.svg",
            "-o",
            "k.lab",
            d.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(dir.path().join("k.svg")).unwrap();
    assert!(
        svg.contains("three: k-means inertia (best of 10 restarts)"),
        "{svg}"
    );
    assert!(svg.contains("Lloyd iteration"));
}

/// ODMC with k > 2 reports each bisection's status and gap (text and `--json`); the warning
/// names the bisection that stopped early, and the top-level gap is the worst bisection's (on
/// iris, k = 3, the first bisection stops at the round limit while the second meets the
/// tolerance).
#[test]
fn odmc_reports_status_and_gap_per_bisection() {
    let dir = tempfile::tempdir().unwrap();
    let iris = repo_data("multiclass/iris.scale.svm");
    let args = [
        "cluster",
        "odmc",
        "-k",
        "3",
        "--rounds",
        "2",
        "--iterations",
        "100",
        "--tol",
        "0.15",
        iris.to_str().unwrap(),
        "-o",
        "iris.clusters",
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let o = run(&with_json, dir.path());
    let v = json(&o);
    let bis = v["bisections"].as_array().unwrap();
    assert_eq!(bis.len(), 2, "{v}");
    let tol = 0.15;
    let early: Vec<&serde_json::Value> =
        bis.iter().filter(|b| b["status"] != "converged").collect();
    let done: Vec<&serde_json::Value> = bis.iter().filter(|b| b["status"] == "converged").collect();
    assert_eq!((early.len(), done.len()), (1, 1), "{v}");
    assert!(early[0]["relative_gap"].as_f64().unwrap() > tol, "{v}");
    assert!(done[0]["relative_gap"].as_f64().unwrap() <= tol, "{v}");
    for b in bis {
        assert!(b["gap"].as_f64().is_some() && b["rounds"].as_u64().unwrap() >= 1);
        assert!(b["points"].as_u64().unwrap() >= 2 && b["clusters"].as_u64().unwrap() >= 2);
    }
    assert_eq!(v["status"], early[0]["status"]);
    assert_eq!(v["converged"], false);
    // The reported gap is not below the tolerance while the status says it was not met.
    assert!(v["relative_gap"].as_f64().unwrap() > tol, "{v}");
    let err = String::from_utf8_lossy(&o.stderr);
    let split = early[0]["split"].as_u64().unwrap() + 1;
    assert!(
        err.contains(&format!("ODMC bisection {split} of 2")),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    // Text: one line per bisection with its status and gap.
    let o = run(&args, dir.path());
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("bisection "))
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines.iter().any(|l| l.contains("converged")), "{out}");
    assert!(lines.iter().any(|l| l.contains("max_iterations")), "{out}");
    assert!(lines.iter().all(|l| l.contains("gap")), "{out}");
    // The plot's title names the data set (the file's stem).
    let mut plotted = args.to_vec();
    plotted.extend(["-q", "--plot", "odmc.svg"]);
    assert!(run(&plotted, dir.path()).status.success());
    let svg = std::fs::read_to_string(dir.path().join("odmc.svg")).unwrap();
    assert!(
        svg.contains(">iris.scale: ODMC relative duality-gap estimate"),
        "{svg}"
    );
}

/// `-q` works for `cluster` as for every command: no progress lines (even when every update
/// would be one, `MARGINKIT_PROGRESS_SECONDS=0`) and no summary lines. What stays on standard
/// error are the warnings, which `-q` silences in no command (`train -q` below: a run that
/// stops early still says so), so that a quiet run never hides a result that is not the one
/// asked for.
#[test]
fn quiet_cluster_prints_only_its_warnings_as_every_command_does() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let quiet = |args: &[&str]| {
        let o = std::process::Command::new(BIN)
            .args(args)
            .current_dir(p)
            .env("MARGINKIT_PROGRESS_SECONDS", "0")
            .output()
            .expect("binary runs");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "{args:?}: {:?}", o.stdout);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            err.lines().all(|l| l.starts_with("marginkit: warning: ")),
            "{args:?}: {err}"
        );
        err.lines().count()
    };
    let iris = repo_data("multiclass/iris.scale.svm");
    let iris = iris.to_str().unwrap();
    // ODMC whose first bisection stops at the round limit: its one warning.
    let odmc = [
        "cluster",
        "odmc",
        "-q",
        "-k",
        "3",
        "--rounds",
        "2",
        "--iterations",
        "100",
        "--tol",
        "0.15",
        iris,
        "-o",
        "a.clusters",
    ];
    assert_eq!(quiet(&odmc), 1);
    // The same without -q: progress and summary lines besides the warning.
    let loud = std::process::Command::new(BIN)
        .args(odmc.iter().filter(|a| **a != "-q"))
        .current_dir(p)
        .env("MARGINKIT_PROGRESS_SECONDS", "0")
        .output()
        .unwrap();
    assert!(!loud.stdout.is_empty());
    assert!(String::from_utf8_lossy(&loud.stderr).contains("marginkit: ["));
    // k-means: nothing at all; with more clusters than distinct points, the one warning.
    assert_eq!(
        quiet(&[
            "cluster",
            "kmeans",
            "-q",
            "-k",
            "3",
            iris,
            "-o",
            "b.clusters"
        ]),
        0
    );
    std::fs::write(
        p.join("two.svm"),
        "1 1:0 2:0\n1 1:0 2:0\n2 1:1 2:1\n2 1:1 2:1\n",
    )
    .unwrap();
    assert_eq!(
        quiet(&[
            "cluster",
            "kmeans",
            "-q",
            "-k",
            "3",
            "two.svm",
            "-o",
            "c.clusters"
        ]),
        1
    );
    // train -q: the early stop is a warning too.
    let heart = data("heart_scale.train");
    let heart = heart.to_str().unwrap();
    assert!(quiet(&["train", "-q", "-c", "100", "--max-iter", "7", heart, "m"]) >= 1);
}
