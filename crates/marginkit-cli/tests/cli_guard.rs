//! Data that LIBSVM's text format makes absurdly wide, and the habits of LIBSVM/LIBLINEAR users:
//! every command that would build dense structures two billion columns wide refuses before it
//! allocates (exit 1, the cause named, no output or temporary file); `-B` is checked; `predict`
//! accepts test data wider than the model, and the training file always predicts.

use std::process::Command;

mod common;
use common::*;

/// One stray feature index makes the data 2e9 columns wide.
const HUGE: &str = "+1 1:1 2000000000:1\n-1 1:-1 2:1\n+1 1:0.5\n-1 2000000000:-1\n";

#[test]
fn absurdly_wide_data_is_refused_before_any_allocation() {
    let commands: [&[&str]; 8] = [
        &["aid", "svm", "huge.svm", "m"],
        &["cluster", "odmc", "huge.svm"],
        &["cluster", "kmeans", "huge.svm"],
        &["scale", "huge.svm"],
        &["path", "--linear", "huge.svm"],
        &["coreset", "meb", "huge.svm"],
        &["coreset", "svm", "huge.svm"],
        &["train", "--linear", "huge.svm", "m"],
    ];
    for args in commands {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("huge.svm"), HUGE).unwrap();
        // A 1 GB budget makes the refusal independent of the machine's memory.
        let o = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .env("MARGINKIT_MAX_MEMORY_MB", "1024")
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("feature index 2000000000 in sample 1"),
            "{args:?}: {e}"
        );
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(o.stdout.is_empty(), "{args:?} printed output");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|f| f.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["huge.svm"], "{args:?} left files behind");
    }
    // The linear model's width is bounded by the data whatever the memory: no 2e9-line file.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("huge.svm"), HUGE).unwrap();
    let o = run(&["train", "--linear", "huge.svm", "m"], dir.path());
    fails(&o, "weights wide per class");
    assert!(!dir.path().join("m").exists());
    // Kernel training works on sparse rows and gets the right answer.
    let o = run(&["train", "-q", "-t", "0", "huge.svm", "m"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn bias_feature_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let h = data("heart_scale.train");
    let h = h.to_str().unwrap();
    fails(
        &run(&["train", "--linear", "-B", "nan", h, "m"], dir.path()),
        "bias feature B must be finite and > 0, got NaN",
    );
    fails(
        &run(&["train", "--linear", "-B", "1e300", h, "m"], dir.path()),
        "B^2 enters every inner product",
    );
    // Within f64 but beyond 2^26 x the largest sample norm: the features would vanish.
    fails(
        &run(&["train", "--linear", "-B", "1e12", h, "m"], dir.path()),
        "the features vanish from the problem",
    );
    assert!(!dir.path().join("m").exists());
    // LIBLINEAR's convention stays: a negative B is no bias.
    let o = run(&["train", "--linear", "-q", "-B", "-1", h, "m"], dir.path());
    assert!(o.status.success());
    assert!(std::fs::read_to_string(dir.path().join("m"))
        .unwrap()
        .contains("\nbias -1\n"));
    fails(
        &run(
            &["robust", "svc", h, "--path", "s", "-B", "nan"],
            dir.path(),
        ),
        "bias feature B must be finite and > 0, got NaN",
    );
}

#[test]
fn linear_iteration_cap_warns_as_liblinear_and_writes_a_plain_model() {
    let dir = tempfile::tempdir().unwrap();
    let h = data("heart_scale.train");
    let o = run(
        &[
            "train",
            "--linear",
            "-q",
            "-s",
            "3",
            "-c",
            "1e12",
            h.to_str().unwrap(),
            "m",
        ],
        dir.path(),
    );
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("WARNING: reaching max number of iterations"),
        "{e}"
    );
    let m = std::fs::read_to_string(dir.path().join("m")).unwrap();
    assert!(
        m.starts_with("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\n"),
        "{m:.80}"
    );
}

#[test]
fn training_file_predicts_and_wider_test_data_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    // Feature 3 appears only in a sample that is not a support vector.
    std::fs::write(
        p.join("n.svm"),
        "+1 1:1 2:1\n-1 1:-1 2:-1\n+1 1:5 2:5 3:0.1\n-1 1:-5 2:-5\n",
    )
    .unwrap();
    std::fs::write(p.join("wide.svm"), "+1 1:1 2:1 7:3\n-1 1:-1 9:1\n").unwrap();
    for kernel in ["0", "2"] {
        let o = run(&["train", "-q", "-t", kernel, "n.svm", "m"], p);
        assert!(o.status.success());
        let o = run(&["predict", "n.svm", "m", "o"], p);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !e.contains("warning"),
            "the training file is not wider: {e}"
        );
        let o = run(&["predict", "wide.svm", "m", "o"], p);
        assert!(o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.matches("warning").count(), 1, "{e}");
        assert!(e.contains("the data has 9 features, the model 3"), "{e}");
        assert_eq!(
            std::fs::read_to_string(p.join("o"))
                .unwrap()
                .lines()
                .count(),
            2
        );
    }
    let o = run(&["train", "--linear", "-q", "n.svm", "lm"], p);
    assert!(o.status.success());
    let o = run(&["predict", "wide.svm", "lm", "o"], p);
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("features beyond 3 are ignored"), "{e}");
}
