//! `--solver smo|block|auto` on every subcommand whose method solves a kernel dual (`path`,
//! `robust`, `aid svm`, `train -s odm`): `block` runs and reaches the pair engine's result,
//! an unknown value and a combination without an SMO problem are clear errors naming the flag.

mod common;
use common::*;

/// `marginkit ARGS --solver ENGINE --json` in `dir`: the JSON object.
fn with(args: &[&str], engine: &str, dir: &std::path::Path) -> serde_json::Value {
    json(&run(&[args, &["--solver", engine, "--json"]].concat(), dir))
}

fn close(a: &serde_json::Value, b: &serde_json::Value, rel: f64) {
    let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
    assert!((a - b).abs() <= rel * a.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn path_solver_block_runs_and_bogus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let args = [
        "path",
        train.to_str().unwrap(),
        "--c-min",
        "0.1",
        "--c-max",
        "10",
        "--grid",
        "3",
        "-e",
        "1e-7",
    ];
    let (pair, block) = (
        with(&args, "smo", dir.path()),
        with(&args, "block", dir.path()),
    );
    let (pp, pb) = (
        pair["points"].as_array().unwrap(),
        block["points"].as_array().unwrap(),
    );
    assert_eq!(pp.len(), 3);
    assert_eq!(pp.len(), pb.len());
    for (a, b) in pp.iter().zip(pb) {
        close(&a["objective"], &b["objective"], 1e-6);
    }
    fails(
        &run(&[&args[..], &["--solver", "bogus"]].concat(), dir.path()),
        "--solver",
    );
    fails(
        &run(
            &[&args[..], &["--linear", "--solver", "block"]].concat(),
            dir.path(),
        ),
        "--solver block",
    );
}

#[test]
fn robust_solver_block_runs_and_bogus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let args = [
        "robust",
        "svc",
        train.to_str().unwrap(),
        "--path",
        "theta",
        "-c",
        "1",
    ];
    let (pair, block) = (
        with(&args, "smo", dir.path()),
        with(&args, "block", dir.path()),
    );
    let (bp, bb) = (
        pair["breakpoints"].as_array().unwrap(),
        block["breakpoints"].as_array().unwrap(),
    );
    assert!(!bp.is_empty());
    assert_eq!(bp.len(), bb.len());
    for (a, b) in bp.iter().zip(bb) {
        close(&a["objective"], &b["objective"], 1e-6);
    }
    fails(
        &run(&[&args[..], &["--solver", "bogus"]].concat(), dir.path()),
        "--solver",
    );
}

#[test]
fn aid_svm_solver_block_runs_and_bogus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let train = lib_data("heart_scale");
    let args = [
        "aid",
        "svm",
        "-t",
        "2",
        "-c",
        "0.5",
        "-e",
        "1e-8",
        train.to_str().unwrap(),
        "m.model",
    ];
    let (pair, block) = (
        with(&args, "smo", dir.path()),
        with(&args, "block", dir.path()),
    );
    close(&pair["objective"], &block["objective"], 1e-6);
    fails(
        &run(&[&args[..], &["--solver", "bogus"]].concat(), dir.path()),
        "--solver",
    );
    let linear_dcd = [
        "aid",
        "svm",
        "-t",
        "0",
        "--engine",
        "dcd",
        "--solver",
        "block",
        train.to_str().unwrap(),
        "m.model",
    ];
    fails(&run(&linear_dcd, dir.path()), "--solver block");
}

#[test]
fn train_odm_solver_block_runs_and_bogus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let train = data("heart_scale.train");
    let args = [
        "train",
        "-s",
        "odm",
        "-e",
        "1e-8",
        train.to_str().unwrap(),
        "m.model",
    ];
    let (pair, block) = (
        with(&args, "smo", dir.path()),
        with(&args, "block", dir.path()),
    );
    assert_eq!(block["solver"], "block");
    close(&pair["dual"], &block["dual"], 1e-6);
    close(&pair["primal"], &block["primal"], 1e-6);
    fails(
        &run(&[&args[..], &["--solver", "bogus"]].concat(), dir.path()),
        "--solver",
    );
    let dcd = [
        "train",
        "-s",
        "odm",
        "-t",
        "0",
        "--engine",
        "dcd",
        "--solver",
        "block",
        train.to_str().unwrap(),
        "m.model",
    ];
    fails(&run(&dcd, dir.path()), "--solver block");
    let linear = [
        "train",
        "--linear",
        "--solver",
        "block",
        train.to_str().unwrap(),
        "m.model",
    ];
    fails(&run(&linear, dir.path()), "--solver block");
}
