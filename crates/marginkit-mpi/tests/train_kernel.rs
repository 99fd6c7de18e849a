//! `mpirun -np P marginkit-mpi train -s 0|2|3 -t K` (row-partitioned SMO) at P = 1, 2, 3 and 4
//! ranks (and more ranks than rows): with `-h 0` the model file is byte for byte the one a single
//! process writes (`marginkit train`: the library's reader with default options, `svm::fit` and
//! the model writer, computed here in-process), for C-SVC on dense and sparse data, one-class and
//! epsilon-SVR; with shrinking on, the objective and rho agree to the solver's tolerance; bad
//! input fails on every rank with one clear message and no model file. A run stopped by
//! `--max-iter` writes `marginkit train`'s state file, which `--resume` continues at any number
//! of ranks (and `marginkit train --resume`, here the library's `svm::fit`, continues too). Needs `mpirun`
//! With `--solver block -h 0` (the block working-set engine, small working sets through `-m`)
//! the model file is `marginkit train --solver block -h 0`'s byte for byte at P = 1..4, and a
//! stopped block run writes a state file that starts the stopped problems over. Needs `mpirun`
//! (OpenMPI) on PATH; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
//! (the tests set them for the child).

use std::path::{Path, PathBuf};

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::solver::Shrinking;
use marginkit::svm::model_io::write_model;
use marginkit::svm::params::cache_bytes_from_mb;
use marginkit::svm::{
    self, FitCheckpoint, KernelKind, KernelParams, SvmParams, SvmSolver, SvmType,
};
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

/// `marginkit train`'s state file of `params` on `train` stopped after `max_iter` iterations
/// per solve (the library's checkpoint: what the single-process command writes).
fn single_state(params: SvmParams, train: &Path, max_iter: u64) -> Vec<u8> {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    let stop = params.max_iter(max_iter).check().unwrap();
    let fit = svm::fit(&stop, &data, &mut Control::default()).unwrap();
    fit.checkpoint.expect("stopped by the limit").to_bytes()
}

/// `marginkit train --resume STATE`'s model file of `params` on `train`.
fn single_resumed(params: SvmParams, train: &Path, state: &[u8]) -> Vec<u8> {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    let ck = FitCheckpoint::from_bytes(state).unwrap();
    let fit = svm::fit(
        &params.check().unwrap(),
        &data,
        &mut Control::default().resume_from(&ck),
    )
    .unwrap();
    assert!(fit.checkpoint.is_none());
    let mut out = Vec::new();
    write_model(&mut out, &fit.model).unwrap();
    out
}

/// A run stopped by `--max-iter` at P = 2 writes MODEL and MODEL.state (`marginkit train`'s
/// state file byte for byte, without shrinking); `--resume` at P = 1, 2, 3 and `marginkit train
/// --resume` continue it to the uninterrupted single-process model, and a single-process state
/// file is continued over MPI: C-SVC, one-vs-one multiclass (pairs finished and stopped),
/// epsilon-SVR.
#[test]
fn stopped_and_continued_without_shrinking_is_the_single_process_model() {
    let cases = [
        (
            "heart",
            "clf/heart_scale.train.svm",
            vec!["-s", "0", "-c", "4", "-h", "0"],
            params(SvmType::CSvc).c(4.0),
            40,
        ),
        (
            "iris",
            "multiclass/iris.scale.svm",
            vec!["-s", "0", "-c", "100", "-h", "0"],
            params(SvmType::CSvc).c(100.0),
            15,
        ),
        (
            "svr",
            "reg/boston.train.svm",
            vec!["-s", "3", "-c", "2", "-h", "0"],
            params(SvmType::EpsSvr).c(2.0),
            30,
        ),
    ];
    for (tag, file, flags, p, max_iter) in cases {
        let train = repo_data(file);
        let (want, _) = single(p.clone(), &train);
        let stopped = format!("{tag}_stop");
        let state = tmp(&format!("{stopped}.np2.model.state"));
        let _ = std::fs::remove_file(&state);
        let limit = max_iter.to_string();
        let mut stop_flags = flags.clone();
        stop_flags.extend(["--max-iter", &limit]);
        let (v, _) = run(&stopped, 2, &stop_flags, &train);
        assert_eq!(v["status"], "max_iterations", "{tag}: {v}");
        assert_eq!(v["state_file"].as_str(), state.to_str(), "{tag}");
        let bytes = std::fs::read(&state).unwrap();
        assert!(
            bytes == single_state(p.clone(), &train, max_iter),
            "{tag}: the state file is not marginkit train's"
        );
        assert!(single_resumed(p.clone(), &train, &bytes) == want, "{tag}");
        let s = state.to_str().unwrap();
        let mut resume = flags.clone();
        resume.extend(["--resume", s]);
        for np in [1, 2, 3] {
            let (v, got) = run(&format!("{tag}_resumed"), np, &resume, &train);
            assert!(
                got == want,
                "{tag} continued at P = {np}: the model differs"
            );
            assert_eq!(v["resumed"], true);
            assert!(v["state_file"].is_null());
        }
        // A state file of marginkit train, continued over MPI.
        let one = tmp(&format!("{tag}_single.state"));
        std::fs::write(&one, single_state(p.clone(), &train, max_iter)).unwrap();
        let mut resume = flags.clone();
        resume.extend(["--resume", one.to_str().unwrap()]);
        let (_, got) = run(&format!("{tag}_from_single"), 3, &resume, &train);
        assert!(
            got == want,
            "{tag}: a single-process state continued at P = 3"
        );
    }
}

/// Three overlapping classes in the plane, written as a LIBSVM file (deterministic): with
/// `-c 1000` the pairs take thousands of SMO iterations, and with shrinking the model file at
/// P = 2 and at P = 3 differ in their last bits (the ranks shrink their own rows).
fn three_classes(per_class: usize) -> PathBuf {
    let noise = |i: usize, k: u64| {
        let h = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ k.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = h ^ (h >> 31);
        (h % 10_000) as f64 / 10_000.0 - 0.5
    };
    let mut text = String::new();
    for i in 0..3 * per_class {
        let c = i % 3;
        let x = c as f64 * 0.4 + 2.0 * noise(i, 1);
        let y = (c as f64 * 1.3).sin() * 0.4 + 2.0 * noise(i, 2);
        text.push_str(&format!("{c} 1:{x:?} 2:{y:?}\n"));
    }
    let f = tmp("three_classes.svm");
    std::fs::write(&f, text).unwrap();
    f
}

/// With shrinking on, a run stopped and continued at the same number of ranks (the same row
/// split: every rank's shrunk order is restored) gives the uninterrupted run's model file at
/// that number; at another number, the same optimum. `--state-file` names the state file.
#[test]
fn with_shrinking_continued_at_the_same_ranks_is_the_uninterrupted_run() {
    let train = three_classes(150);
    let flags = ["-s", "0", "-c", "1000"];
    let (whole, want) = run("three_h1_whole", 2, &flags, &train);
    let (_, at3) = run("three_h1_whole", 3, &flags, &train);
    assert!(
        at3 != want,
        "the test needs data on which P changes the last bits"
    );
    let state = tmp("three_h1.state");
    let _ = std::fs::remove_file(&state);
    let s = state.to_str().unwrap();
    let mut stop = flags.to_vec();
    // Past several shrinking steps (every 300 iterations) of every pair.
    stop.extend(["--max-iter", "3000", "--state-file", s]);
    let (v, _) = run("three_h1_stop", 2, &stop, &train);
    assert_eq!(v["state_file"].as_str(), Some(s));
    let mut resume = flags.to_vec();
    resume.extend(["--resume", s]);
    let (_, got) = run("three_h1_resumed", 2, &resume, &train);
    assert!(got == want, "continued at P = 2: the model differs");
    let (v, _) = run("three_h1_resumed", 3, &resume, &train);
    let objs = |v: &Value| -> Vec<f64> {
        v["objectives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_f64().unwrap())
            .collect()
    };
    for (a, b) in objs(&v).iter().zip(objs(&whole)) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "P = 3: {a} vs {b}"
        );
    }
}

#[test]
fn a_bad_or_foreign_state_file_fails_on_every_rank() {
    let heart = repo_data("clf/heart_scale.train.svm");
    let h = heart.to_str().unwrap();
    let model = tmp("bad_state.model");
    let m = model.to_str().unwrap();
    let good = single_state(params(SvmType::CSvc).c(4.0), &heart, 40);
    // Damaged (a byte changed), foreign (not a state file), missing.
    let damaged = tmp("damaged.state");
    let mut b = good.clone();
    let mid = b.len() / 2;
    b[mid] ^= 0x55;
    std::fs::write(&damaged, &b).unwrap();
    let foreign = tmp("foreign.state");
    std::fs::write(&foreign, "svm_type c_svc\n").unwrap();
    let missing = tmp("missing.state");
    let _ = std::fs::remove_file(&missing);
    for f in [&damaged, &foreign, &missing] {
        let f = f.to_str().unwrap();
        fails(3, &["-c", "4", "-h", "0", "--resume", f, h, m], &model, f);
    }
    // The state of other parameters: the difference is named.
    let state = tmp("c4.state");
    std::fs::write(&state, &good).unwrap();
    let s = state.to_str().unwrap();
    fails(
        2,
        &["-c", "8", "-h", "0", "--resume", s, h, m],
        &model,
        &format!("{s}: the fit checkpoint was written with -c 4 (now -c 8)"),
    );
    // The linear fit has no state (as marginkit train --linear).
    fails(
        2,
        &["--linear", "-s", "2", "--resume", s, h, m],
        &model,
        "--resume continues kernel fits",
    );
    // The state file may not be the model file, nor the model the state to continue.
    fails(2, &["--state-file", m, h, m], &model, "--state-file");
    fails(
        2,
        &["-c", "4", "--resume", s, h, s],
        &state,
        "--resume state file",
    );
}

/// `marginkit train --solver block -m MB` (the working set takes half of `-m`).
fn block(p: SvmParams, mb: f64) -> SvmParams {
    p.engine(SvmSolver::Block)
        .cache_bytes(cache_bytes_from_mb("-m", mb).unwrap())
}

#[test]
fn block_solver_is_the_single_process_block_model() {
    let heart = repo_data("clf/heart_scale.train.svm");
    // 216 rows: -m 0.03 gives a working set of 18.
    let (want, _) = single(block(params(SvmType::CSvc).c(4.0), 0.03), &heart);
    let flags = ["--solver", "block", "-h", "0", "-m", "0.03", "-c", "4"];
    same_model("block_heart", &RANKS, &flags, &heart, &want);
    let (v, _) = run("block_heart", 2, &flags, &heart);
    assert_eq!(v["solver"], "block");
    let digits = repo_data("clf/digits_8vr.train.svm");
    let (want, _) = single(block(params(SvmType::CSvc), 0.2), &digits);
    same_model(
        "block_digits",
        &[2, 3],
        &["--solver", "block", "-h", "0", "-m", "0.2"],
        &digits,
        &want,
    );
    let (want, _) = single(block(params(SvmType::OneClass).nu(0.3), 0.03), &heart);
    same_model(
        "block_oneclass",
        &[2, 4],
        &[
            "--solver", "block", "-h", "0", "-m", "0.03", "-s", "2", "-n", "0.3",
        ],
        &heart,
        &want,
    );
    let boston = repo_data("reg/boston.train.svm");
    let (want, _) = single(block(params(SvmType::EpsSvr).c(2.0), 0.1), &boston);
    same_model(
        "block_svr",
        &[1, 3],
        &[
            "--solver", "block", "-h", "0", "-m", "0.1", "-s", "3", "-c", "2",
        ],
        &boston,
        &want,
    );
    // Ranks without rows.
    let f = tmp("block_three_rows.svm");
    std::fs::write(&f, "1 1:1 2:0.5\n-1 1:-1 2:0.25\n1 1:0.5 2:-0.5\n").unwrap();
    let (want, _) = single(block(params(SvmType::CSvc), 1.0), &f);
    let (_, got) = run(
        "block_three_rows",
        5,
        &["--solver", "block", "-h", "0", "-m", "1"],
        &f,
    );
    assert_eq!(got, want);
}

/// A block run stopped by `--max-iter` writes a state file with the stopped problems recorded
/// as not started (the ranks keep no block snapshot), and `--resume` starts them over; the
/// state file of `marginkit train --solver block` (with its block snapshots) continued by the
/// ranks also starts them over; both give the uninterrupted model.
#[test]
fn block_solver_stopped_writes_a_state_that_starts_the_problem_over() {
    let iris = repo_data("multiclass/iris.scale.svm");
    let p = block(params(SvmType::CSvc).c(100.0), 0.02);
    let (want, _) = single(p.clone(), &iris);
    let state = tmp("block_iris_stop.np2.model.state");
    let _ = std::fs::remove_file(&state);
    let flags = ["--solver", "block", "-m", "0.02", "-c", "100", "-h", "0"];
    let mut stop = flags.to_vec();
    stop.extend(["--max-iter", "40"]);
    let (v, _) = run("block_iris_stop", 2, &stop, &iris);
    assert_eq!(v["status"], "max_iterations", "{v}");
    let mut resume = flags.to_vec();
    resume.extend(["--resume", state.to_str().unwrap()]);
    let (_, got) = run("block_iris_resumed", 3, &resume, &iris);
    assert!(got == want, "continued at P = 3: the model differs");
    let single_file = tmp("block_iris_single.state");
    std::fs::write(&single_file, single_state(p.clone(), &iris, 40)).unwrap();
    let mut resume = flags.to_vec();
    resume.extend(["--resume", single_file.to_str().unwrap()]);
    let (_, got) = run("block_iris_single_resumed", 2, &resume, &iris);
    assert!(
        got == want,
        "one process's state at P = 2: the model differs"
    );
}

#[test]
fn an_unknown_solver_is_refused_once() {
    let heart = repo_data("clf/heart_scale.train.svm");
    let model = tmp("bogus_solver.model");
    let (h, m) = (heart.to_str().unwrap(), model.to_str().unwrap());
    fails(
        2,
        &["--solver", "bogus", h, m],
        &model,
        "invalid value 'bogus'",
    );
    fails(
        2,
        &["--linear", "--solver", "block", h, m],
        &model,
        "--solver",
    );
    // nu-SVC, which neither engine runs over MPI: the -s refusal, with the block engine too.
    fails(
        2,
        &["-s", "1", "--solver", "block", h, m],
        &model,
        "-s 1: over MPI the kernel SVMs are 0 (C-SVC), 2 (one-class) and 3 (epsilon-SVR)",
    );
}
