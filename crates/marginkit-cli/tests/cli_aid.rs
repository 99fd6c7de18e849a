//! End-to-end tests of `marginkit aid lad|svm|s3vm` and `marginkit lad`: JSON keys, AID-LAD ==
//! full LP, model files usable by `predict`, the plot, bad input (file:line errors, n < d,
//! unlabeled rows in a supervised command, all-unlabeled S3VM), no output file on failure.

use std::process::Output;

use serde_json::Value;

mod common;
use common::*;

fn fails_with(o: &Output, needle: &str) {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(needle), "{err}");
}

#[test]
fn aid_lad_equals_full_lad_with_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("engel.raw.svm");
    let tr = train.to_str().unwrap();
    let aid = json(&run(
        &["aid", "lad", tr, "aid.model", "--json", "--plot", "aid.svg"],
        dir.path(),
    ));
    let full = json(&run(&["lad", tr, "full.model", "--json"], dir.path()));
    let (a, f) = (
        aid["objective"].as_f64().unwrap(),
        full["objective"].as_f64().unwrap(),
    );
    assert!((a - f).abs() <= 1e-7 * f, "{a} vs {f}");
    assert!(full["total_seconds"].as_f64().unwrap() >= 0.0);
    assert!(aid["total_seconds"].as_f64().unwrap() >= 0.0);
    let its = aid["iterations"].as_array().unwrap();
    assert!(!its.is_empty());
    for it in its {
        for key in [
            "clusters",
            "r",
            "lower_bound",
            "best_objective",
            "gap",
            "seconds",
        ] {
            assert!(it.get(key).is_some(), "missing {key}");
        }
    }
    assert_eq!(aid["stop"], "optimal");
    let svg = std::fs::read_to_string(dir.path().join("aid.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    let model: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("aid.model")).unwrap())
            .unwrap();
    assert_eq!(model["model"], "lad");
}

#[test]
fn aid_svm_linear_and_rbf_models_predict() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("heart_scale");
    let tr = train.to_str().unwrap();
    for (t, model) in [("0", "lin.model"), ("2", "rbf.model")] {
        let out = json(&run(
            &["aid", "svm", "-t", t, "-c", "0.5", tr, model, "--json"],
            dir.path(),
        ));
        assert!(out["objective"].as_f64().unwrap() > 0.0);
        let its = out["iterations"].as_array().unwrap();
        let lb: Vec<f64> = its
            .iter()
            .map(|i| i["lower_bound"].as_f64().unwrap())
            .collect();
        assert!(lb.windows(2).all(|w| w[1] >= w[0]));
        let last = its.last().unwrap();
        assert!(last["gap"].as_f64().unwrap() <= 1e-4);
        let p = run(&["predict", tr, model, "out.txt"], dir.path());
        assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
        assert!(String::from_utf8_lossy(&p.stdout).contains("Accuracy"));
    }
}

#[test]
fn aid_svm_nystrom_steering_is_certified_and_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("heart_scale");
    let tr = train.to_str().unwrap();
    let args = ["aid", "svm", "-t", "2", "-c", "0.5", tr];
    let averaged = json(&run(
        &[&args[..], &["avg.model", "--json"]].concat(),
        dir.path(),
    ));
    let out = json(&run(
        &[
            &args[..],
            &["nys.model", "--json", "--steer", "nystrom", "--rank", "20"],
        ]
        .concat(),
        dir.path(),
    ));
    let last = out["iterations"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    // The last record is the exact finish on the full problem: r = 1, gap within 1e-4.
    assert_eq!(last["r"].as_f64().unwrap(), 1.0);
    assert!(last["gap"].as_f64().unwrap() <= 1e-4);
    let (a, b) = (
        averaged["objective"].as_f64().unwrap(),
        out["objective"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 2e-4 * a, "{a} vs {b}");
    let p = run(&["predict", tr, "nys.model", "out.txt"], dir.path());
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    // An unknown choice is a usage error (exit 2) that lists the valid values.
    let o = run(
        &[&args[..], &["x.model", "--steer", "bogus"]].concat(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("'bogus'") && e.contains("averaged, nystrom"),
        "{e}"
    );
    assert!(!dir.path().join("x.model").exists());
    fails_with(
        &run(
            &[
                &args[..],
                &["x.model", "--steer", "nystrom", "--rank", "many"],
            ]
            .concat(),
            dir.path(),
        ),
        "--rank many",
    );
    assert!(!dir.path().join("x.model").exists());
}

/// `--rank auto` (the default of --steer nystrom): a wide kernel steers with at most 100
/// landmarks, a narrow one (sampled Nystrom residual above 0.9) skips the steering (rank 0, one
/// record: the cold exact SMO); both reach the averaged-Gram run's certified objective.
#[test]
fn aid_svm_nystrom_auto_rank_follows_the_kernel_width() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("heart_scale");
    let tr = train.to_str().unwrap();
    for (gamma, steered) in [("0.02", true), ("20", false)] {
        let args = ["aid", "svm", "-t", "2", "-g", gamma, "-c", "0.5", tr];
        let averaged = json(&run(
            &[&args[..], &["avg.model", "--json"]].concat(),
            dir.path(),
        ));
        let out = json(&run(
            &[&args[..], &["auto.model", "--json", "--steer", "nystrom"]].concat(),
            dir.path(),
        ));
        let rank = out["nystrom"]["rank"].as_u64().unwrap();
        let records = out["iterations"].as_array().unwrap().len();
        if steered {
            assert!((1..=100).contains(&rank), "gamma {gamma}: rank {rank}");
            assert!(records >= 2);
        } else {
            assert_eq!(rank, 0, "gamma {gamma}");
            assert_eq!(records, 1);
            assert!(out["nystrom"]["residual"].as_f64().unwrap() > 0.9);
        }
        let (a, b) = (
            averaged["objective"].as_f64().unwrap(),
            out["objective"].as_f64().unwrap(),
        );
        assert!((a - b).abs() <= 2e-4 * a, "gamma {gamma}: {a} vs {b}");
    }
}

#[test]
fn aid_s3vm_two_files_and_exact() {
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.svm");
    let unl = dir.path().join("unl.svm");
    std::fs::write(&lab, "+1 1:5.948\n-1 1:-0.325\n").unwrap();
    std::fs::write(
        &unl,
        "0 1:1.699\n0 1:2.511\n0 1:2.481\n0 1:4.432\n0 1:-8.897\n0 1:-9.466\n0 1:4.496\n",
    )
    .unwrap();
    let (l, u) = (lab.to_str().unwrap(), unl.to_str().unwrap());
    let exact = json(&run(
        &[
            "aid",
            "s3vm",
            "-c",
            "1",
            "--c-unlabeled",
            "0.05",
            "--unlabeled",
            u,
            "--exact",
            l,
            "m.model",
            "--json",
            "--predictions",
            "pred.txt",
        ],
        dir.path(),
    ));
    assert_eq!(exact["optimal"], true);
    assert!(exact["objective"].as_f64().unwrap() <= 0.21232 + 1e-4);
    let pred = std::fs::read_to_string(dir.path().join("pred.txt")).unwrap();
    assert_eq!(pred.lines().count(), 7);
    let aid = json(&run(
        &[
            "aid",
            "s3vm",
            "-c",
            "1",
            "--c-unlabeled",
            "0.05",
            "--unlabeled",
            u,
            l,
            "a.model",
            "--json",
            "--max-iter",
            "5",
        ],
        dir.path(),
    ));
    assert_eq!(aid["heuristic"], true);
    assert!(aid["objective"].as_f64().unwrap() >= exact["objective"].as_f64().unwrap() - 1e-9);
}

#[test]
fn bad_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.svm");
    std::fs::write(&bad, "1 1:0.5\n2 1:x\n").unwrap();
    let b = bad.to_str().unwrap();
    fails_with(
        &run(&["aid", "lad", b, "o.model"], dir.path()),
        "bad.svm:2:",
    );
    assert!(!dir.path().join("o.model").exists());
    // n < d.
    let small = dir.path().join("small.svm");
    std::fs::write(&small, "1 1:1 2:2 3:3\n2 1:2 2:1 3:0.5\n").unwrap();
    let s = small.to_str().unwrap();
    fails_with(
        &run(&["lad", s, "o.model"], dir.path()),
        "at least as many rows",
    );
    fails_with(
        &run(&["aid", "lad", s, "o.model"], dir.path()),
        "at least as many rows",
    );
    assert!(!dir.path().join("o.model").exists());
    // Unlabeled rows in a supervised command.
    let mixed = dir.path().join("mixed.svm");
    std::fs::write(&mixed, "+1 1:1\n-1 1:-1\n0 1:0.5\n+1 1:2\n-1 1:-2\n").unwrap();
    fails_with(
        &run(
            &["aid", "svm", mixed.to_str().unwrap(), "o.model"],
            dir.path(),
        ),
        "unlabeled",
    );
    // All-unlabeled S3VM.
    let unl = dir.path().join("unl.svm");
    std::fs::write(&unl, "0 1:1\n0 1:-1\n0 1:0.5\n").unwrap();
    fails_with(
        &run(
            &["aid", "s3vm", unl.to_str().unwrap(), "o.model"],
            dir.path(),
        ),
        "unlabeled",
    );
    fails_with(
        &run(
            &[
                "aid",
                "lad",
                "--r0",
                "2",
                lib_data("engel.raw.svm").to_str().unwrap(),
                "o.model",
            ],
            dir.path(),
        ),
        "r0",
    );
    assert!(!dir.path().join("o.model").exists());
    let help = run(&["aid", "svm", "--help"], dir.path());
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--r0"));
}

/// `--time-limit 1e300` (and `--bnb-time-limit`) would panic in `Duration::from_secs_f64`; every
/// subcommand taking a seconds flag must fail with a clear error and write no model.
#[test]
fn huge_time_limit_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let heart = lib_data("heart_scale");
    let h = heart.to_str().unwrap();
    let engel = lib_data("engel.raw.svm");
    let e = engel.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["train", "--time-limit", "1e300", h, "m"],
            "--time-limit",
        ),
        (
            vec!["train", "--linear", "--time-limit", "1e300", h, "m"],
            "--time-limit",
        ),
        (
            vec!["train", "-s", "odm", "--time-limit", "1e300", h, "m"],
            "--time-limit",
        ),
        (vec!["path", "--time-limit", "1e300", h], "--time-limit"),
        (
            vec!["aid", "svm", "--time-limit", "1e300", h, "m"],
            "--time-limit",
        ),
        (
            vec!["aid", "lad", "--time-limit", "1e300", e, "m"],
            "--time-limit",
        ),
        (vec!["lad", "--time-limit", "1e300", e, "m"], "--time-limit"),
        (
            vec!["aid", "s3vm", "--bnb-time-limit", "1e300", h, "m"],
            "--bnb-time-limit",
        ),
    ];
    for (args, flag) in cases {
        let o = run(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(flag) && err.contains("too large"),
            "{args:?}: {err}"
        );
        assert!(!dir.path().join("m").exists(), "{args:?}");
    }
}

/// `aid svm` rejects multi-class data before it prints its iteration-table header.
#[test]
fn aid_svm_rejects_multiclass_before_printing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("three.svm");
    std::fs::write(&f, "1 1:0.1\n2 1:0.5\n3 1:0.9\n1 1:0.2\n2 1:0.6\n3 1:1.0\n").unwrap();
    let o = run(&["aid", "svm", f.to_str().unwrap(), "m"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!dir.path().join("m").exists());
}

/// The linear engine is a parameter (`--engine`), not an environment variable: both engines
/// reach the same objective; an unknown engine is a clear error.
#[test]
fn aid_svm_engine_flag() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("heart_scale");
    let tr = train.to_str().unwrap();
    let obj = |engine: &str| {
        let out = json(&run(
            &[
                "aid", "svm", "-c", "0.5", "--engine", engine, tr, "m", "--json",
            ],
            dir.path(),
        ));
        out["objective"].as_f64().unwrap()
    };
    let (a, d, s) = (obj("auto"), obj("dcd"), obj("smo"));
    // Each run stops at a relative duality gap of 1e-4 (the default): its objective E has
    // E - opt <= E - D <= 1e-4 E, so two runs differ by at most 1e-4 of the larger.
    assert!((a - d).abs() <= 1e-4 * a.max(d), "{a} vs {d}");
    assert!((s - d).abs() <= 1e-4 * s.max(d), "{s} vs {d}");
    let o = run(&["aid", "svm", "--engine", "simplex", tr, "m2"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("'simplex'") && e.contains("auto, dcd, smo"),
        "{e}"
    );
}

/// `--balance-cost` up-weights the labeled minority: the exact optimum can only grow (every cost is
/// multiplied by a factor >= 1), and AID's heuristic never beats the exact optimum of the same problem.
#[test]
fn aid_s3vm_balance_cost() {
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.svm");
    std::fs::write(
        &lab,
        "+1 1:5.948\n+1 1:4.1\n+1 1:0.2\n-1 1:-0.325\n0 1:1.699\n0 1:2.511\n0 1:-8.897\n0 1:-9.466\n0 1:4.496\n",
    )
    .unwrap();
    let l = lab.to_str().unwrap();
    let solve = |extra: &[&str]| {
        let mut a = vec![
            "aid",
            "s3vm",
            "-c",
            "1",
            "--c-unlabeled",
            "0.05",
            l,
            "m.model",
            "--json",
        ];
        a.extend_from_slice(extra);
        json(&run(&a, dir.path()))["objective"].as_f64().unwrap()
    };
    let plain = solve(&["--exact"]);
    let cost = solve(&["--exact", "--balance-cost"]);
    assert!(cost > plain + 1e-9, "{cost} vs {plain}");
    let aid = solve(&["--balance-cost", "--max-iter", "5"]);
    assert!(aid >= cost - 1e-9, "{aid} vs {cost}");
}

/// `aid * --help`: each command's own flags under its own heading (not under "Input"), the
/// shared AID flags under "AID", `--help` described, and the training file listed before the
/// model file.
#[test]
fn aid_help_groups_the_flags_under_their_headings() {
    let dir = tempfile::tempdir().unwrap();
    for (cmd, own, flag) in [
        ("svm", "AID-SVM:", "  -c <C>"),
        ("lad", "AID-LAD:", "      --no-intercept"),
        ("s3vm", "AID-S3VM:", "  -c, --c-labeled"),
    ] {
        let o = run(&["aid", cmd, "--help"], dir.path());
        assert!(o.status.success());
        let help = String::from_utf8_lossy(&o.stdout).to_string();
        let heading_of = |needle: &str| {
            let at = help
                .find(needle)
                .unwrap_or_else(|| panic!("{cmd}: no {needle:?}"));
            help[..at]
                .lines()
                .rev()
                .find(|l| l.ends_with(':') && !l.starts_with(' '))
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(heading_of(flag), own, "{cmd}:\n{help}");
        assert_eq!(heading_of("      --r0"), "AID:", "{cmd}:\n{help}");
        assert_eq!(
            heading_of("      --resume"),
            "Stop and resume:",
            "{cmd}:\n{help}"
        );
        assert_eq!(heading_of("      --csv"), "Input:", "{cmd}:\n{help}");
        let help_line = help
            .lines()
            .position(|l| l.trim_start().starts_with("--help"))
            .unwrap();
        let described = help
            .lines()
            .skip(help_line)
            .take(2)
            .any(|l| l.contains("Print help"));
        assert!(described, "{cmd}:\n{help}");
        assert!(help.find("<TRAIN_FILE>").unwrap() < help.find("[MODEL_FILE]").unwrap());
        let args_at = help.find("\nArguments:").unwrap();
        assert!(help[args_at..].contains("<TRAIN_FILE>"), "{cmd}:\n{help}");
    }
}

/// `aid s3vm` with the default loop limits runs Algorithm 1 until no cluster splits (not one
/// iteration), prints no NaN (S3VM has no lower bound: no bound or gap column in the table, null
/// in JSON), and its plot has no curve or legend entry for the missing bound.
#[test]
fn aid_s3vm_defaults_run_to_no_split_without_nan() {
    let dir = tempfile::tempdir().unwrap();
    // iris (two classes), every fifth label kept, the others hidden (label 0).
    let text = std::fs::read_to_string(repo_data("clf/iris.train.svm")).unwrap();
    let semi: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 5 == 4 {
                format!("{l}\n")
            } else {
                let (_, rest) = l.split_once(' ').unwrap();
                format!("0 {rest}\n")
            }
        })
        .collect();
    std::fs::write(dir.path().join("iris_semi.svm"), semi).unwrap();
    let args = [
        "aid",
        "s3vm",
        "-c",
        "0.05",
        "--c-unlabeled",
        "0.01",
        "iris_semi.svm",
        "m.model",
    ];
    let o = run(&args, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.to_lowercase().contains("nan"), "{out}");
    assert!(out.contains("stop: no_split"), "{out}");
    assert!(!out.contains("gap"), "{out}");
    let mut with_json = args.to_vec();
    with_json.extend(["--json", "--plot", "s3vm.svg"]);
    let o = run(&with_json, dir.path());
    let raw = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(!raw.to_lowercase().contains("nan"), "{raw}");
    let v = json(&o);
    assert_eq!(v["stop"], "no_split");
    let its = v["iterations"].as_array().unwrap();
    assert!(its.len() > 1, "{its:?}");
    assert_eq!(its.last().unwrap()["violating"], 0);
    for it in its {
        assert!(it["gap"].is_null() && it["lower_bound"].is_null(), "{it}");
    }
    let svg = std::fs::read_to_string(dir.path().join("s3vm.svg")).unwrap();
    assert!(svg.contains("E_best"), "{svg}");
    assert!(!svg.contains("F (lower)"), "{svg}");
    assert!(svg.contains(">iris_semi: objective<"), "{svg}");
    assert!(svg.contains(">iris_semi: aggregation rate<"), "{svg}");
    // A model with a bound keeps its bound curve.
    run(
        &[
            "aid",
            "lad",
            lib_data("engel.raw.svm").to_str().unwrap(),
            "lad.model",
            "-q",
            "--plot",
            "lad.svg",
        ],
        dir.path(),
    );
    let svg = std::fs::read_to_string(dir.path().join("lad.svg")).unwrap();
    assert!(svg.contains("F (lower)"), "{svg}");
}

/// `--json` reports the one shared status (as `train --json` and `fit::Report::status`): a run
/// stopped by `--max-iter` says `max_iterations`, not `converged`; `stop` keeps AID's own
/// detail of a converged run.
#[test]
fn aid_json_status_is_the_shared_status() {
    let dir = tempfile::tempdir().unwrap();
    let tr = lib_data("heart_scale");
    let tr = tr.to_str().unwrap();
    let limited = json(&run(
        &["aid", "svm", tr, "a.model", "--json", "--max-iter", "1"],
        dir.path(),
    ));
    assert_eq!(limited["status"], "max_iterations", "{limited}");
    assert_eq!(limited["converged"], false);
    assert_eq!(limited["stop"], "max_iterations");
    let done = json(&run(&["aid", "svm", tr, "b.model", "--json"], dir.path()));
    assert_eq!(done["status"], "converged", "{done}");
    assert_eq!(done["converged"], true);
    assert!(
        ["optimal", "gap", "no_split"].contains(&done["stop"].as_str().unwrap()),
        "{done}"
    );
    let lad = json(&run(
        &[
            "aid",
            "lad",
            lib_data("engel.raw.svm").to_str().unwrap(),
            "l.model",
            "--json",
            "--max-iter",
            "1",
        ],
        dir.path(),
    ));
    assert_eq!(lad["status"], "max_iterations", "{lad}");
    assert_eq!(lad["certified"], false);
}
