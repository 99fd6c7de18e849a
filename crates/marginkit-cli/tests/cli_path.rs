//! End-to-end tests of `marginkit path`: JSON report, screened == unscreened objectives, plot,
//! saved models usable by `predict`, errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_marginkit");

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

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
    let o = run(&["path", tr, "--screening", "bogus"], dir.path());
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--screening"));
    let o = run(&["path", tr, "-s", "1"], dir.path());
    assert!(!o.status.success());
}
