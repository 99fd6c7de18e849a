//! End-to-end tests of `marginkit path`: JSON report, screened == unscreened objectives, plot,
//! saved models usable by `predict`, errors.

use serde_json::Value;

mod common;
use common::*;

#[test]
fn path_json_plot_and_models() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let test = data("heart_scale.test");
    let (tr, te) = (train.to_str().unwrap(), test.to_str().unwrap());
    let common = [
        "--c-min", "0.01", "--c-max", "100", "--grid", "9", "-e", "1e-6",
    ];
    let mut args = vec!["path", tr, "--valid", te, "--json", "--screening", "it"];
    args.extend(common);
    args.extend([
        "--plot",
        "p.svg",
        "--save-models",
        "models",
        "--best-model",
        "best.model",
    ]);
    let it = json(&run(&args, dir.path()));
    let mut args = vec!["path", tr, "--json", "--screening", "none"];
    args.extend(common);
    let none = json(&run(&args, dir.path()));
    let (pi, pn) = (
        it["points"].as_array().unwrap(),
        none["points"].as_array().unwrap(),
    );
    assert_eq!(pi.len(), 9);
    assert!(it["total_seconds"].as_f64().unwrap() > 0.0);
    let mut screened = 0;
    for (a, b) in pi.iter().zip(pn) {
        for key in [
            "c",
            "objective",
            "n_sv",
            "screened_r",
            "screened_l",
            "screening_rate",
            "rule_seconds",
            "solve_seconds",
            "kkt_violators_freed",
            "valid_accuracy",
        ] {
            assert!(a.get(key).is_some(), "missing {key}");
        }
        assert!(b.get("valid_accuracy").is_none());
        let (oa, ob) = (
            a["objective"].as_f64().unwrap(),
            b["objective"].as_f64().unwrap(),
        );
        assert!((oa - ob).abs() <= 1e-6 * ob.abs(), "{oa} vs {ob}");
        screened += a["screened_r"].as_u64().unwrap() + a["screened_l"].as_u64().unwrap();
    }
    assert!(screened > 0);
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("screening rate"));
    assert!(
        svg.contains("validation accuracy"),
        "--valid plots the accuracy per C"
    );
    assert!(dir.path().join("models/c_008.model").exists());
    // The best model is an ordinary LIBSVM model: predict reads it.
    let o = run(&["predict", te, "best.model", "out.txt"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let model = std::fs::read_to_string(dir.path().join("best.model")).unwrap();
    assert!(model.contains("rho 0\n"), "{model}");
}

#[test]
fn linear_path_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let tr = train.to_str().unwrap();
    let v = json(&run(
        &[
            "path",
            tr,
            "--linear",
            "-B",
            "1",
            "--c-list",
            "0.1,1,10",
            "--json",
            "--save-models",
            "m",
        ],
        dir.path(),
    ));
    assert_eq!(v["points"].as_array().unwrap().len(), 3);
    let model = std::fs::read_to_string(dir.path().join("m/c_002.model")).unwrap();
    assert!(model.contains("bias 1"), "{model}");
    // Per-point CPU seconds (Linux: read from /proc), and the cold start reaches the same
    // objectives as the default warm start.
    let warm = json(&run(
        &[
            "path", tr, "--linear", "--c-list", "0.1,1,10", "--json", "-e", "1e-6",
        ],
        dir.path(),
    ));
    let cold = json(&run(
        &[
            "path", tr, "--linear", "--c-list", "0.1,1,10", "--json", "-e", "1e-6", "--start",
            "cold",
        ],
        dir.path(),
    ));
    for (a, b) in warm["points"]
        .as_array()
        .unwrap()
        .iter()
        .zip(cold["points"].as_array().unwrap())
    {
        let (fa, fb) = (
            a["objective"].as_f64().unwrap(),
            b["objective"].as_f64().unwrap(),
        );
        assert!((fa - fb).abs() <= 1e-5 * fa.abs(), "{fa} vs {fb}");
        if cfg!(target_os = "linux") {
            assert!(a["cpu_seconds"].as_f64().unwrap() >= 0.0);
        }
    }
    let o = run(&["path", tr, "--start", "cold"], dir.path());
    assert!(!o.status.success(), "cold start of a kernel path");
    let o = run(&["path", tr, "--linear", "--start", "bogus"], dir.path());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--start"));
    let o = run(&["path", tr, "--screening", "bogus"], dir.path());
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--screening"));
    let o = run(&["path", tr, "-s", "1"], dir.path());
    assert!(!o.status.success());
}

/// A real SIGINT during `marginkit path`: exit code 130, the finished points,
/// `interrupted: true` and a state file; `--resume` continues to the points of an uninterrupted
/// run (objectives to 1e-9 relative; they are in fact bit-identical). Linux only: the wait for the
/// signal reads the child's signal mask and CPU time from `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_path_and_resume_gives_the_same_points() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hard.svm");
    write_hard(&file, 3000);
    let f = file.to_str().unwrap();
    let args = [
        "path", "--json", "-g", "1", "-e", "1e-6", "-m", "1", "--c-min", "1", "--c-max", "10000",
        "--grid", "12", f,
    ];
    let full = json(&run(&args, dir.path()));
    let full_pts = full["points"].as_array().unwrap().clone();
    assert_eq!(full_pts.len(), 12);
    assert_eq!(full["interrupted"], false);
    assert!(full["state_file"].is_null());
    // Interrupted after 300 ms of CPU time in the fit, a small part of the whole path.
    let o = interrupt_after_cpu(&args, dir.path(), 30);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    let part = j["points"].as_array().unwrap();
    assert!(part.len() < 12);
    let state = j["state_file"].as_str().unwrap().to_string();
    assert_eq!(state, "hard.svm.path.state");
    assert!(dir.path().join(&state).exists());
    // Resume (the state file is overwritten only if stopped again).
    let mut res = args.to_vec();
    res.extend(["--resume", &state]);
    let r = json(&run(&res, dir.path()));
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["resumed"], true);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 12);
    for (a, b) in pts.iter().zip(&full_pts) {
        assert_eq!(a["c"], b["c"]);
        let (x, y) = (
            a["objective"].as_f64().unwrap(),
            b["objective"].as_f64().unwrap(),
        );
        assert!((x - y).abs() <= 1e-9 * y.abs(), "C {}: {x} vs {y}", a["c"]);
        assert_eq!(a["n_sv"], b["n_sv"]);
        assert_eq!(a["status"], "converged");
    }
    // The state belongs to this path: other parameters are refused.
    let mut other = args.to_vec();
    other[3] = "4";
    other.extend(["--resume", &state]);
    let o = run(&other, dir.path());
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("the path checkpoint was written with -g 1 (now -g 4)"),
        "{e}"
    );
}

/// Flags a path has no use for are refused with the reason, and `--help` does not list them.
#[test]
fn path_refuses_and_hides_the_flags_it_does_not_take() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let tr = train.to_str().unwrap();
    for (flags, said) in [
        (&["-c", "2"][..], "--c-list"),
        (&["-n", "0.3"][..], "-n and -p"),
        (&["-p", "0.2"][..], "-n and -p"),
        (&["-b", "1"][..], "probability"),
        (&["-w1", "2"][..], "class weights"),
    ] {
        let mut args = vec!["path", tr];
        args.extend_from_slice(flags);
        let o = run(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{flags:?}: {err}");
        assert!(err.contains(said), "{flags:?}: {err}");
    }
    let help = run(&["path", "--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["-c <", "-n <", "-p <", "-b <", "--class-weight"] {
        assert!(!help.contains(flag), "{flag} listed:\n{help}");
    }
    for flag in ["-s <", "-t <", "-g <", "-B <", "--c-list"] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}
