//! `mpirun -np P marginkit-mpi train -s 0|2|3 -t K` (row-partitioned SMO) at P = 1, 2, 3 and 4
//! ranks (and more ranks than rows): with `-h 0` the model file is byte for byte the one a single
//! process writes (`marginkit train`: the library's reader with default options, `svm::fit` and
//! the model writer, computed here in-process), for C-SVC on dense and sparse data, one-class and
//! epsilon-SVR; with shrinking on, the objective and rho agree to the solver's tolerance; bad
//! input fails on every rank with one clear message and no model file. Needs `mpirun`
//! (OpenMPI) on PATH; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
//! (the tests set them for the child).

use std::path::{Path, PathBuf};

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::solver::Shrinking;
use marginkit::svm::model_io::write_model;
use marginkit::svm::{self, KernelKind, KernelParams, SvmParams, SvmType};
use serde_json::Value;

mod common;

use common::repo_data;

const COMMAND: &[&str] = &["train"];

fn tmp(name: &str) -> PathBuf {
    common::tmp("train_kernel", name)
}

fn fails(np: usize, args: &[&str], model: &Path, needle: &str) {
    common::fails(np, COMMAND, args, model, needle)
}

/// The single-process model file and objective of `params` on `train` (what `marginkit train`
/// writes).
fn single(params: SvmParams, train: &Path) -> (Vec<u8>, f64) {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    let fit = svm::fit(&params.check().unwrap(), &data, &mut Control::default()).unwrap();
    let mut out = Vec::new();
    write_model(&mut out, &fit.model).unwrap();
    (out, fit.report.subproblems[0].objective)
}

fn run(tag: &str, np: usize, flags: &[&str], train: &Path) -> (Value, Vec<u8>) {
    common::run("train_kernel", COMMAND, tag, np, flags, train)
}

/// The model file at each P equals `want` byte for byte.
fn same_model(tag: &str, ranks: &[usize], flags: &[&str], train: &Path, want: &[u8]) {
    for &np in ranks {
        let (v, got) = run(tag, np, flags, train);
        assert!(
            got == want,
            "{tag} P = {np}: the model differs\n--- mpi\n{}\n--- single\n{}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want)
        );
        if np > 1 {
            assert!(v["bytes_per_iteration"].as_f64().unwrap() > 0.0);
            assert!(v["comm_seconds"].as_f64().unwrap() >= 0.0);
        }
    }
}

const RANKS: [usize; 4] = [1, 2, 3, 4];

fn params(t: SvmType) -> SvmParams {
    SvmParams::new().svm_type(t).shrinking(Shrinking::Off)
}

#[test]
fn csvc_without_shrinking_dense_and_sparse() {
    // heart_scale is stored dense, digits_8vr sparse.
    let heart = repo_data("clf/heart_scale.train.svm");
    let (want, _) = single(params(SvmType::CSvc).c(4.0), &heart);
    same_model(
        "heart",
        &RANKS,
        &["-s", "0", "-c", "4", "-h", "0"],
        &heart,
        &want,
    );
    let digits = repo_data("clf/digits_8vr.train.svm");
    let (want, _) = single(params(SvmType::CSvc), &digits);
    same_model("digits", &RANKS, &["-h", "0"], &digits, &want);
    // A polynomial kernel with its flags.
    let poly = KernelParams::from_libsvm(1, Some(0.5), 1.0, 2).unwrap();
    let (want, _) = single(params(SvmType::CSvc).kernel(poly), &heart);
    same_model(
        "heart_poly",
        &[2, 3],
        &["-t", "1", "-g", "0.5", "-r", "1", "-d", "2", "-h", "0"],
        &heart,
        &want,
    );
}

#[test]
fn one_class_and_svr_without_shrinking() {
    let heart = repo_data("clf/heart_scale.train.svm");
    let (want, _) = single(params(SvmType::OneClass).nu(0.3), &heart);
    same_model(
        "oneclass",
        &RANKS,
        &["-s", "2", "-n", "0.3", "-h", "0"],
        &heart,
        &want,
    );
    let boston = repo_data("reg/boston.train.svm");
    let (want, _) = single(params(SvmType::EpsSvr).c(2.0).epsilon(0.2), &boston);
    same_model(
        "svr",
        &RANKS,
        &["-s", "3", "-c", "2", "-p", "0.2", "-h", "0"],
        &boston,
        &want,
    );
    let linear = KernelParams {
        kind: KernelKind::Linear,
        ..KernelParams::default()
    };
    let (want, _) = single(params(SvmType::EpsSvr).kernel(linear), &boston);
    same_model(
        "svr_linear",
        &[3],
        &["-s", "3", "-t", "0", "-h", "0"],
        &boston,
        &want,
    );
}

#[test]
fn multiclass_one_vs_one() {
    let iris = repo_data("multiclass/iris.scale.svm");
    let (want, _) = single(params(SvmType::CSvc), &iris);
    same_model("iris", &[1, 3], &["-h", "0"], &iris, &want);
}

/// `rho` of a one-function model file.
fn rho_of(model: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(model);
    let line = text.lines().find(|l| l.starts_with("rho ")).unwrap();
    line[4..].trim().parse().unwrap()
}

#[test]
fn with_shrinking_the_same_optimum() {
    for (tag, file, flags, p) in [
        (
            "heart_h1",
            "clf/heart_scale.train.svm",
            vec!["-c", "4", "-e", "1e-6"],
            params(SvmType::CSvc).c(4.0),
        ),
        (
            "digits_h1",
            "clf/digits_8vr.train.svm",
            vec!["-e", "1e-6"],
            params(SvmType::CSvc),
        ),
        (
            "svr_h1",
            "reg/boston.train.svm",
            vec!["-s", "3", "-e", "1e-6"],
            params(SvmType::EpsSvr),
        ),
    ] {
        let train = repo_data(file);
        let (want, obj) = single(p.shrinking(Shrinking::On).tol(1e-6), &train);
        for np in RANKS {
            let (v, got) = run(tag, np, &flags, &train);
            let o = v["objective"].as_f64().unwrap();
            assert!(
                (o - obj).abs() <= 1e-6 * obj.abs().max(1.0),
                "{tag} P = {np}: objective {o} vs {obj}"
            );
            let (r, r1) = (rho_of(&got), rho_of(&want));
            assert!((r - r1).abs() <= 1e-4, "{tag} P = {np}: rho {r} vs {r1}");
        }
    }
}

#[test]
fn more_ranks_than_rows() {
    let f = tmp("three_rows.svm");
    std::fs::write(&f, "1 1:1 2:0.5\n-1 1:-1 2:0.25\n1 1:0.5 2:-0.5\n").unwrap();
    let (want, _) = single(params(SvmType::CSvc), &f);
    let (v, got) = run("three_rows", 5, &["-h", "0"], &f);
    assert_eq!(got, want);
    let empty = v["rows_per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.as_u64() == Some(0))
        .count();
    assert!(empty >= 2, "{v}");
}

#[test]
fn bad_input_fails_on_every_rank() {
    let model = tmp("bad.model");
    let m = model.to_str().unwrap();
    // A malformed line late in the file: the last rank's block cannot be read.
    let bad = tmp("bad_line.svm");
    let mut text = std::fs::read_to_string(repo_data("clf/heart_scale.train.svm")).unwrap();
    text.push_str("+1 1:0.5 2:oops\n");
    let line = text.lines().count();
    std::fs::write(&bad, &text).unwrap();
    let b = bad.to_str().unwrap();
    fails(3, &["-s", "0", b, m], &model, &format!("{b}:{line}:"));
    // An unreadable file.
    let missing = tmp("does_not_exist.svm");
    fails(2, &[missing.to_str().unwrap(), m], &model, "does_not_exist");
    // Empty data.
    let empty = tmp("empty.svm");
    std::fs::write(&empty, "\n\n").unwrap();
    fails(2, &[empty.to_str().unwrap(), m], &model, "no data");
    // One class for C-SVC: the library's error.
    let one = tmp("one_class.svm");
    std::fs::write(&one, "1 1:1\n1 1:2\n1 1:3\n1 2:1\n").unwrap();
    fails(3, &["-s", "0", one.to_str().unwrap(), m], &model, "class");
    // Formulations that do not run over MPI.
    let heart = repo_data("clf/heart_scale.train.svm");
    fails(2, &["-s", "1", heart.to_str().unwrap(), m], &model, "-s 1");
    fails(2, &["-t", "4", heart.to_str().unwrap(), m], &model, "-t 4");
}
