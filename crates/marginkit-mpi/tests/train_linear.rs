//! `mpirun -np P marginkit-mpi train --linear -s 2|11` at P = 1, 2, 3 and 4 ranks (and more
//! ranks than chunks or rows): the model file is byte for byte the one a single process writes
//! (`marginkit train --linear`: the library's reader with default options, `linear::fit` and
//! `LinearModel::write`, computed here in-process), on dense and sparse real data, on generated
//! data large enough for several chunks, with and without a bias feature, and for a directory of
//! files; and bad input fails on every rank with a clear message and no model file. Needs
//! `mpirun` (OpenMPI) on PATH; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
//! OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (the tests set them for the child).

use std::path::{Path, PathBuf};
use std::process::Output;

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::solver::newton::{cut_chunks, row_work};
use marginkit::svm::linear::{self, LinearParams, LinearSolver};
use serde_json::Value;

mod common;

use common::repo_data;

const COMMAND: &[&str] = &["train"];

fn tmp(name: &str) -> PathBuf {
    common::tmp("train_linear", name)
}

fn mpirun(np: usize, args: &[&str]) -> Output {
    common::mpirun(np, COMMAND, args)
}

fn fails(np: usize, args: &[&str], model: &Path, needle: &str) {
    common::fails(np, COMMAND, args, model, needle)
}

/// The single-process model file of `params` on `train` (what `marginkit train --linear` writes).
fn single(params: LinearParams, train: &Path) -> Vec<u8> {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    let fit = linear::fit(&params.check().unwrap(), &data, &mut Control::default()).unwrap();
    let mut out = Vec::new();
    fit.model.write(&mut out).unwrap();
    out
}

/// The number of chunks a single process cuts `train` into.
fn chunks(train: &Path, bias: bool) -> usize {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    cut_chunks(&row_work(&data.x), data.n_features() + usize::from(bias)).len()
}

/// Runs `marginkit-mpi train` at each P and asserts the model file equals `want`.
fn same_model(tag: &str, ranks: &[usize], flags: &[&str], train: &Path, want: &[u8]) {
    for &np in ranks {
        let (_, got) = common::run("train_linear", COMMAND, tag, np, flags, train);
        assert!(
            got == want,
            "{tag} P = {np}: the model differs\n--- mpi\n{}\n--- single\n{}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want)
        );
    }
}

const RANKS: [usize; 4] = [1, 2, 3, 4];

fn svc(bias: bool) -> LinearParams {
    let p = LinearParams::new(LinearSolver::L2LossSvcPrimal);
    if bias {
        p.bias(1.0)
    } else {
        p
    }
}

fn svr(bias: bool) -> LinearParams {
    let p = LinearParams::new(LinearSolver::L2LossSvrPrimal);
    if bias {
        p.bias(1.0)
    } else {
        p
    }
}

#[test]
fn svc_real_data_dense_and_sparse() {
    // heart_scale is dense enough to be stored dense; digits_8vr is stored sparse.
    for (tag, file) in [
        ("heart", "clf/heart_scale.train.svm"),
        ("digits", "clf/digits_8vr.train.svm"),
    ] {
        let train = repo_data(file);
        same_model(
            tag,
            &RANKS,
            &["--linear", "-s", "2"],
            &train,
            &single(svc(false), &train),
        );
        same_model(
            &format!("{tag}_b"),
            &RANKS,
            &["--linear", "-s", "2", "-B", "1"],
            &train,
            &single(svc(true), &train),
        );
    }
}

#[test]
fn svr_real_data_with_and_without_bias() {
    let train = repo_data("reg/boston.train.svm");
    same_model(
        "boston",
        &RANKS,
        &["--linear", "-s", "11"],
        &train,
        &single(svr(false), &train),
    );
    same_model(
        "boston_b",
        &RANKS,
        &["--linear", "-s", "11", "-B", "1"],
        &train,
        &single(svr(true), &train),
    );
}

#[test]
fn multiclass_one_vs_rest() {
    let train = repo_data("multiclass/iris.scale.svm");
    same_model(
        "iris",
        &[1, 3],
        &["--linear", "-s", "2"],
        &train,
        &single(svc(false), &train),
    );
}

/// A generated set: `n` rows of `d` features, `per_row` of them non-zero (all when `d`),
/// two classes or a linear target.
fn generate(path: &Path, n: usize, d: usize, per_row: usize, regression: bool) {
    let mut s = String::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..n {
        let class = if next() < 0.4 { 1.0 } else { -1.0 };
        let mut feats = Vec::new();
        let mut t = 0.0;
        let mut k = 0;
        while feats.len() < per_row && k < d {
            if per_row == d || next() < per_row as f64 / d as f64 * 1.5 {
                let v = 2.0 * next() - 1.0 + 0.3 * class * ((k % 3) as f64 - 1.0);
                t += v * ((k % 5) as f64 - 2.0);
                feats.push(format!("{}:{v}", k + 1));
            }
            k += 1;
        }
        let y = if regression {
            format!("{}", t + 0.1 * (next() - 0.5))
        } else {
            format!("{class}")
        };
        s.push_str(&y);
        for f in feats {
            s.push(' ');
            s.push_str(&f);
        }
        s.push('\n');
        let _ = i;
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn several_chunks_and_ranks_without_chunks() {
    // Dense: 8000 x 20, work 160,000 > 2 * 32768: several chunks.
    let dense = tmp("gen_dense.svm");
    generate(&dense, 8000, 20, 20, false);
    let k = chunks(&dense, true);
    assert!((2..6).contains(&k), "{k} chunks");
    // 6 ranks: more ranks than chunks, some hold none.
    let ranks = [1, 2, 3, 4, 6];
    same_model(
        "gen_dense",
        &ranks,
        &["--linear", "-s", "2", "-B", "1", "-e", "0.0001"],
        &dense,
        &single(svc(true).eps(1e-4), &dense),
    );
    // Sparse: 30000 rows, about 5 of 300 features each.
    let sparse = tmp("gen_sparse.svm");
    generate(&sparse, 30_000, 300, 5, false);
    assert!(chunks(&sparse, false) >= 2);
    same_model(
        "gen_sparse",
        &ranks,
        &["--linear", "-s", "2"],
        &sparse,
        &single(svc(false), &sparse),
    );
    let reg = tmp("gen_reg.svm");
    generate(&reg, 8000, 20, 20, true);
    assert!(chunks(&reg, false) >= 2);
    same_model(
        "gen_reg",
        &RANKS,
        &["--linear", "-s", "11", "-p", "0.05"],
        &reg,
        &single(svr(false).p(0.05), &reg),
    );
}

#[test]
fn class_weights_and_threads_per_rank() {
    // LIBLINEAR's -wLABEL spelling, two threads per rank: still the single-process bits.
    let train = repo_data("clf/heart_scale.train.svm");
    let want = single(svc(true).class_weight(1.0, 2.0), &train);
    let flags = [
        "--linear",
        "-s",
        "2",
        "-B",
        "1",
        "-w1",
        "2",
        "--threads",
        "2",
    ];
    same_model("heart_w", &[2, 3], &flags, &train, &want);
}

#[test]
fn more_ranks_than_rows_works() {
    let f = tmp("three_rows.svm");
    std::fs::write(&f, "1 1:1 2:0.5\n-1 1:-1 2:0.25\n1 1:0.5 2:-0.5\n").unwrap();
    same_model(
        "three_rows",
        &[4],
        &["--linear", "-s", "2"],
        &f,
        &single(svc(false), &f),
    );
}

#[test]
fn a_first_rank_without_rows_starts_the_sums() {
    // 20,000 blank lines first: at P = 3 and 4 rank 0 reads only blank lines, so the first rank
    // that holds a chunk (and starts each sum from zero) is rank 1.
    let f = tmp("blank_first.svm");
    let mut text = "\n".repeat(20_000);
    text.push_str(&std::fs::read_to_string(repo_data("clf/heart_scale.train.svm")).unwrap());
    std::fs::write(&f, text).unwrap();
    same_model(
        "blank_first",
        &[3, 4],
        &["--linear", "-s", "2"],
        &f,
        &single(svc(false), &f),
    );
    let out = mpirun(
        3,
        &[
            "--linear",
            "-s",
            "2",
            "--json",
            f.to_str().unwrap(),
            tmp("bf.model").to_str().unwrap(),
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows_per_rank"][0].as_u64(), Some(0));
}

#[test]
fn a_directory_is_its_files_in_name_order() {
    let src = std::fs::read_to_string(repo_data("clf/heart_scale.train.svm")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let dir = tmp("heart_dir");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (k, part) in lines.chunks(50).enumerate() {
        let mut text = part.join("\n");
        text.push('\n');
        std::fs::write(dir.join(format!("part{k:02}.svm")), text).unwrap();
    }
    let whole = repo_data("clf/heart_scale.train.svm");
    same_model(
        "heart_dir",
        &[1, 2, 3, 4],
        &["--linear", "-s", "2"],
        &dir,
        &single(svc(false), &whole),
    );
}

#[test]
fn bad_input_fails_on_every_rank() {
    let model = tmp("bad.model");
    let m = model.to_str().unwrap();
    // A malformed line late in the file (read by the last rank): the global line number.
    let bad = tmp("bad_line.svm");
    let mut text = std::fs::read_to_string(repo_data("clf/heart_scale.train.svm")).unwrap();
    text.push_str("+1 1:0.5 2:oops\n");
    let line = text.lines().count();
    std::fs::write(&bad, &text).unwrap();
    let b = bad.to_str().unwrap();
    for np in [1, 3] {
        fails(
            np,
            &["--linear", "-s", "2", b, m],
            &model,
            &format!("{b}:{line}:"),
        );
    }
    // Empty data.
    let empty = tmp("empty.svm");
    std::fs::write(&empty, "\n\n").unwrap();
    fails(
        2,
        &["--linear", "-s", "2", empty.to_str().unwrap(), m],
        &model,
        "no data",
    );
    // One class: the library's error, as in single-process training.
    let one = tmp("one_class.svm");
    std::fs::write(&one, "1 1:1\n1 1:2\n1 1:3\n1 2:1\n").unwrap();
    fails(
        3,
        &["--linear", "-s", "2", one.to_str().unwrap(), m],
        &model,
        "class",
    );
    // A directory without files.
    let dir = tmp("empty_dir");
    std::fs::create_dir_all(&dir).unwrap();
    fails(
        2,
        &["--linear", "-s", "2", dir.to_str().unwrap(), m],
        &model,
        "no files",
    );
    // An unreadable file.
    let missing = tmp("does_not_exist.svm");
    fails(
        2,
        &["--linear", "-s", "2", missing.to_str().unwrap(), m],
        &model,
        "does_not_exist",
    );
    // An output path that cannot be written, checked before reading.
    let unwritable = tmp("no_such_dir/x.model");
    let heart = repo_data("clf/heart_scale.train.svm");
    fails(
        2,
        &[
            "--linear",
            "-s",
            "2",
            heart.to_str().unwrap(),
            unwritable.to_str().unwrap(),
        ],
        &unwritable,
        "no_such_dir",
    );
    // A dual solver.
    fails(
        2,
        &["--linear", "-s", "1", heart.to_str().unwrap(), m],
        &model,
        "-s 1",
    );
}
