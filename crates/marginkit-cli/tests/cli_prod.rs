//! Production behaviour of the command line: statuses in the output and the model file,
//! Ctrl-C (a real SIGINT to a running `train`) with a partial model, a state file and an exact
//! resume, per-sample weight files.

use serde_json::Value;

mod common;
use common::*;

#[test]
fn iteration_limit_is_reported_and_the_model_stays_a_libsvm_file() {
    let dir = tempfile::tempdir().unwrap();
    let h = data("heart_scale.train");
    let o = run(
        &[
            "train",
            "--json",
            "-c",
            "100",
            "--max-iter",
            "7",
            h.to_str().unwrap(),
            "m",
        ],
        dir.path(),
    );
    let j = json(&o);
    assert_eq!(j["status"], "max_iterations");
    assert_eq!(j["converged"], false);
    assert!(j["max_violation"].as_f64().unwrap() > 1e-3);
    assert!(j["duality_gap"].as_f64().unwrap() > 0.0);
    let model = std::fs::read_to_string(dir.path().join("m")).unwrap();
    assert!(
        model.starts_with("svm_type c_svc\nkernel_type rbf\n"),
        "{model}"
    );
    assert!(!model.contains("status"), "{model}");
    let state = j["state_file"].as_str().unwrap();
    assert!(dir.path().join(state).exists());
    let o = run(&["predict", h.to_str().unwrap(), "m", "out"], dir.path());
    assert!(o.status.success());
    // Resume with the limit lifted: converged, and the same file as a direct fit.
    let j = json(&run(
        &[
            "train",
            "--json",
            "-c",
            "100",
            "--resume",
            state,
            h.to_str().unwrap(),
            "m",
        ],
        dir.path(),
    ));
    assert_eq!(j["status"], "converged");
    assert_eq!(j["state_file"], Value::Null);
    json(&run(
        &["train", "--json", "-c", "100", h.to_str().unwrap(), "m2"],
        dir.path(),
    ));
    assert_eq!(
        std::fs::read(dir.path().join("m")).unwrap(),
        std::fs::read(dir.path().join("m2")).unwrap()
    );
    // A resume with other parameters is refused.
    let o = run(
        &[
            "train",
            "-c",
            "10",
            "--resume",
            state,
            h.to_str().unwrap(),
            "m3",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!(
            "{state}: the fit checkpoint was written with -c 100 (now -c 10)"
        )),
        "{e}"
    );
    // So is one with other data (one row fewer), and the message names the data.
    let text = std::fs::read_to_string(&h).unwrap();
    let rows = text.lines().count();
    let fewer: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("fewer.svm"), fewer).unwrap();
    let o = run(
        &["train", "-c", "100", "--resume", state, "fewer.svm", "m4"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!(
            "{state}: the fit checkpoint was written for training data with {rows} rows, 13 features and fingerprint "
        )) && e.contains(&format!("(now {} rows, 13 features", rows - 1)),
        "{e}"
    );
    // Linear: the limit is reported (with LIBLINEAR's warning), the model is plain.
    let o = run(
        &[
            "train",
            "--linear",
            "-s",
            "3",
            "-c",
            "100",
            "-e",
            "1e-6",
            "--max-iter",
            "1",
            "--json",
            h.to_str().unwrap(),
            "lin",
        ],
        dir.path(),
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("WARNING: reaching max number of iterations")
    );
    let j = json(&o);
    assert_eq!(j["status"], "max_iterations");
    let lin = std::fs::read_to_string(dir.path().join("lin")).unwrap();
    assert!(
        lin.starts_with("solver_type L2R_L1LOSS_SVC_DUAL\nnr_class 2\n"),
        "{lin}"
    );
    assert!(!lin.contains("status"), "{lin}");
}

/// `train --solver block` stopped by `--max-iter` writes the block engine's state (its
/// snapshot of each stopped problem: the working set and the outer-iteration count with the
/// solver's arrays), and `--resume` gives the uninterrupted run's model file byte for byte: for
/// C-SVC, multi-class C-SVC (stopped problems among finished ones), one-class and epsilon-SVR,
/// with shrinking on (small working sets through `-m`: many outer iterations).
#[test]
fn block_engine_stop_and_resume_gives_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let heart = repo_data("clf/heart_scale.train.svm");
    let iris = repo_data("multiclass/iris.scale.svm");
    let boston = repo_data("reg/boston.train.svm");
    let (heart, iris, boston) = (
        heart.to_str().unwrap(),
        iris.to_str().unwrap(),
        boston.to_str().unwrap(),
    );
    let cases: [(&str, &[&str], &str, &[u64]); 4] = [
        ("csvc", &["-c", "100", "-m", "0.03"], heart, &[1, 400, 3000]),
        // Pairs of 26, 27 and 248 iterations: at 30 the last one stops after the others finish.
        ("multi", &["-c", "100", "-m", "0.02"], iris, &[1, 30]),
        (
            "oneclass",
            &["-s", "2", "-n", "0.3", "-m", "0.03"],
            heart,
            &[1, 60],
        ),
        (
            "svr",
            &["-s", "3", "-c", "2", "-m", "0.1"],
            boston,
            &[1, 200],
        ),
    ];
    for (tag, flags, file, limits) in cases {
        let mut full = vec!["train", "--json", "--solver", "block", "-e", "1e-5"];
        full.extend(flags);
        let want = format!("{tag}.full");
        full.extend([file, &want]);
        let j = json(&run(&full, dir.path()));
        assert_eq!(j["status"], "converged", "{tag}");
        for &limit in limits {
            let model = format!("{tag}.{limit}");
            let limit_s = limit.to_string();
            let mut stop = full[..full.len() - 2].to_vec();
            stop.extend(["--max-iter", &limit_s, file, &model]);
            let j = json(&run(&stop, dir.path()));
            assert_eq!(j["status"], "max_iterations", "{tag} {limit}");
            let state = j["state_file"].as_str().unwrap().to_string();
            let bytes = std::fs::read(dir.path().join(&state)).unwrap();
            assert!(
                bytes.windows(8).any(|w| w == b"MKSMOB01"),
                "{tag} {limit}: no block snapshot in the state"
            );
            let mut res = full[..full.len() - 2].to_vec();
            res.extend(["--resume", &state, file, &model]);
            let j = json(&run(&res, dir.path()));
            assert_eq!(j["status"], "converged", "{tag} {limit}");
            assert_eq!(j["state_file"], Value::Null);
            assert!(
                std::fs::read(dir.path().join(&model)).unwrap()
                    == std::fs::read(dir.path().join(&want)).unwrap(),
                "{tag} {limit}: the resumed model differs"
            );
        }
    }
}

/// Linux only: the wait for the signal reads the child's signal mask and CPU time from `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_train_and_resume_gives_the_same_model() {
    ctrl_c_and_resume(8000, &["-c", "10000", "-g", "20", "-e", "1e-7", "-m", "1"]);
}

/// As [`ctrl_c_stops_train_and_resume_gives_the_same_model`] with the block engine (a working
/// set of 16: half of `-m 1` over 8,000 rows): the state holds the block snapshot, continued on
/// the block engine.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_block_train_and_resume_gives_the_same_model() {
    ctrl_c_and_resume(
        8000,
        &[
            "--solver", "block", "-c", "10000", "-g", "20", "-e", "1e-7", "-m", "1",
        ],
    );
}

/// `train ARGS` on `rows` rows of [`write_hard`]: uninterrupted, then interrupted by a real
/// SIGINT after 300 ms of CPU time in the fit (a small part of it) and resumed: the same model
/// file byte for byte.
#[cfg(target_os = "linux")]
fn ctrl_c_and_resume(rows: usize, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hard.svm");
    write_hard(&file, rows);
    let f = file.to_str().unwrap();
    // The uninterrupted reference (seconds of CPU time).
    let mut full = vec!["train", "-q"];
    full.extend(args);
    full.extend([f, "full.model"]);
    let o = run(&full, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut part = vec!["train", "--json"];
    part.extend(args);
    part.extend([f, "part.model"]);
    let o = interrupt_after_cpu(&part, dir.path(), 30);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["status"], "interrupted");
    let model = std::fs::read_to_string(dir.path().join("part.model")).unwrap();
    assert!(model.starts_with("svm_type c_svc\nkernel_type"), "{model}");
    assert!(!model.contains("status"), "{model}");
    let state = j["state_file"].as_str().unwrap().to_string();
    assert!(dir.path().join(&state).exists());
    // Resume: the same model file as the uninterrupted fit, byte for byte.
    let mut res = vec!["train", "--json", "--resume", &state];
    res.extend(args);
    res.extend([f, "part.model"]);
    let j = json(&run(&res, dir.path()));
    assert_eq!(j["status"], "converged");
    assert_eq!(
        std::fs::read(dir.path().join("part.model")).unwrap(),
        std::fs::read(dir.path().join("full.model")).unwrap()
    );
}

#[test]
fn weight_files_scale_the_costs_and_bad_weights_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let h = data("heart_scale.train");
    let h = h.to_str().unwrap();
    let n = std::fs::read_to_string(h).unwrap().lines().count();
    // Weight 2 everywhere at C = 1 is C = 2.
    std::fs::write(dir.path().join("w2"), "2\n".repeat(n)).unwrap();
    json(&run(&["train", "--json", "-W", "w2", h, "a"], dir.path()));
    json(&run(&["train", "--json", "-c", "2", h, "b"], dir.path()));
    let (a, b) = (
        std::fs::read_to_string(dir.path().join("a")).unwrap(),
        std::fs::read_to_string(dir.path().join("b")).unwrap(),
    );
    // Same header, support vectors and labels; rho and the coefficients equal up to rounding.
    assert_eq!(a.lines().count(), b.lines().count());
    let close = |x: &str, y: &str| {
        let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
        (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0)
    };
    let mut in_svs = false;
    for (la, lb) in a.lines().zip(b.lines()) {
        if in_svs {
            let (ca, ra) = la.split_once(' ').unwrap_or((la, ""));
            let (cb, rb) = lb.split_once(' ').unwrap_or((lb, ""));
            assert!(close(ca, cb), "coefficient {ca} vs {cb}");
            assert_eq!(ra, rb);
        } else if let (Some(ra), Some(rb)) = (la.strip_prefix("rho "), lb.strip_prefix("rho ")) {
            assert!(close(ra, rb), "rho {ra} vs {rb}");
        } else {
            assert_eq!(la, lb);
            in_svs = la == "SV";
        }
    }
    assert!(in_svs, "no SV section:\n{a}");
    let mut bad = "1\n".repeat(n - 1);
    bad.push_str("-1\n");
    std::fs::write(dir.path().join("wbad"), &bad).unwrap();
    let o = run(&["train", "-W", "wbad", h, "c"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("wbad:{n}:1")), "{err}");
    std::fs::write(dir.path().join("wshort"), "1\n1\n").unwrap();
    let o = run(&["train", "-W", "wshort", h, "c"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    std::fs::write(dir.path().join("wnan"), "nan\n".repeat(n)).unwrap();
    let o = run(&["train", "-W", "wnan", h, "c"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(!dir.path().join("c").exists());
}

/// Weights that are all zero, a state file that is the model file, and `-v` with `--resume`
/// are refused with a message that says why, and nothing is written.
#[test]
fn misuses_of_weights_state_files_and_cross_validation_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let h = data("heart_scale.train");
    let h = h.to_str().unwrap();
    let n = std::fs::read_to_string(h).unwrap().lines().count();
    std::fs::write(dir.path().join("w0"), "0\n".repeat(n)).unwrap();
    for extra in [&[][..], &["--linear"][..], &["-s", "3"][..]] {
        let mut args = vec!["train", "-W", "w0"];
        args.extend(extra);
        args.extend([h, "z.model"]);
        let o = run(&args, dir.path());
        assert_eq!(o.status.code(), Some(1), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("sample weights are zero"), "{extra:?}: {err}");
        assert!(!dir.path().join("z.model").exists());
    }
    // --state-file naming the model file (also through another spelling of the same path).
    for state in ["m.model", "./m.model"] {
        let o = run(
            &[
                "train",
                "--max-iter",
                "5",
                "--state-file",
                state,
                h,
                "m.model",
            ],
            dir.path(),
        );
        assert_eq!(o.status.code(), Some(1), "{state}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is the model file"), "{err}");
        assert!(!dir.path().join("m.model").exists());
    }
    // A real state file, then -v with --resume.
    let o = run(
        &["train", "-q", "--max-iter", "5", h, "m.model"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.path().join("m.model.state").exists());
    let o = run(
        &["train", "-v", "5", "--resume", "m.model.state", h],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("-v (cross-validation) cannot be combined"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // The state file still resumes the fit it came from.
    let j = json(&run(
        &["train", "--json", "--resume", "m.model.state", h, "m.model"],
        dir.path(),
    ));
    assert_eq!(j["status"], "converged");
}

/// A state file of the previous version (`MKFITCK2`, without the run record: the fixture in
/// `data/state`, with its provenance there) still resumes, to the model file of an
/// uninterrupted fit byte for byte; a mismatch against it can only say that the data or the
/// parameters differ.
#[test]
fn a_previous_version_state_file_still_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let iris = root.join("clf/iris.train.svm");
    let state = root.join("state/iris.train.mkfitck2.state");
    assert!(std::fs::read(&state).unwrap().starts_with(b"MKFITCK2"));
    let (iris, state) = (iris.to_str().unwrap(), state.to_str().unwrap());
    let o = run(
        &["train", "-q", "-c", "1000", iris, "full.model"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(
        &[
            "train",
            "-q",
            "-c",
            "1000",
            "--resume",
            state,
            iris,
            "resumed.model",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(dir.path().join("full.model")).unwrap(),
        std::fs::read(dir.path().join("resumed.model")).unwrap()
    );
    let o = run(
        &[
            "train",
            "-q",
            "-c",
            "10",
            "--resume",
            state,
            iris,
            "other.model",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("the fit checkpoint was made with other data or other parameters"),
        "{e}"
    );
}
