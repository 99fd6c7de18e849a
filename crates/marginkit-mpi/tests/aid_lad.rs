//! `mpirun -np P marginkit-mpi aid lad` at P = 1, 2, 3 and 4 ranks (and more ranks than rows):
//! the model file is byte for byte the one a single process writes (`marginkit aid lad`: the
//! library's reader with default options, `aid::lad::fit` and `LadModel::to_json`, computed here
//! in-process), with the same iterations, on dense real data (boston, with and without an
//! intercept), on generated sets larger than the initial sample (dense, and sparse with blocks
//! of different widths), with a first rank that reads no rows and for a directory of files; a
//! state file (of one process, or of a run stopped by a real SIGINT to `mpirun`) continues at
//! any P to the uninterrupted model; and bad input fails on every rank with one clear message
//! and no model file. Needs `mpirun`
//! (OpenMPI) on PATH; as root set OMPI_ALLOW_RUN_AS_ROOT=1 and
//! OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (the tests set them for the child).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Output;

use marginkit::aid::lad::{self, AidLadParams};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::solver::{IterStats, Observer};
use serde_json::Value;

mod common;

use common::repo_data;

const COMMAND: &[&str] = &["aid", "lad"];

fn tmp(name: &str) -> PathBuf {
    common::tmp("aid_lad", name)
}

fn mpirun(np: usize, args: &[&str]) -> Output {
    common::mpirun(np, COMMAND, args)
}

fn fails(np: usize, args: &[&str], model: &Path, needle: &str) {
    common::fails(np, COMMAND, args, model, needle)
}

/// What `marginkit aid lad` writes for `params` on `train`, and the clusters per iteration.
fn single(params: AidLadParams, train: &Path) -> (Vec<u8>, Vec<u64>) {
    let data = read_libsvm_path(train, &ReadOptions::default()).unwrap();
    let fit = lad::fit(&params.check().unwrap(), &data, &mut Control::default()).unwrap();
    let run = fit.report.run.unwrap();
    let clusters = run.iterations.iter().map(|r| r.clusters as u64).collect();
    (fit.model.unwrap().to_json().into_bytes(), clusters)
}

/// Runs `marginkit-mpi aid lad` at each P and asserts the model file and the clusters per
/// iteration are the single process's.
fn same_model(tag: &str, ranks: &[usize], flags: &[&str], train: &Path, params: AidLadParams) {
    let (want, clusters) = single(params, train);
    for &np in ranks {
        let (v, got) = common::run("aid_lad", COMMAND, tag, np, flags, train);
        let got_clusters: Vec<u64> = v["clusters_per_iteration"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(got_clusters, clusters, "{tag} P = {np}");
        let its = v["iterations"].as_array().unwrap();
        assert_eq!(its.len(), clusters.len());
        if np > 1 {
            assert!(its.iter().all(|i| i["bytes"].as_u64().unwrap() > 0));
        }
        assert!(
            got == want,
            "{tag} P = {np}: the model differs\n--- mpi\n{}\n--- single\n{}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
    }
}

const RANKS: [usize; 4] = [1, 2, 3, 4];

#[test]
fn boston_with_and_without_intercept() {
    let train = repo_data("reg/boston.scale.svm");
    same_model("boston", &RANKS, &[], &train, AidLadParams::new());
    same_model(
        "boston_ni",
        &[2, 3],
        &["--no-intercept", "--seed", "3"],
        &train,
        AidLadParams::new().intercept(false).seed(3),
    );
    // The certificate: the JSON says so.
    let out = mpirun(
        2,
        &[
            "--json",
            train.to_str().unwrap(),
            tmp("boston_cert.model").to_str().unwrap(),
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stop"], "optimal");
    assert_eq!(v["certified"], true);
    assert_eq!(v["status"], "converged");
}

/// A generated regression set: `n` rows of `d` features (`per_row` of them set, all when
/// `d`; the last row also sets feature `d + extra`), a linear target with heavy-tailed noise.
fn generate(path: &Path, n: usize, d: usize, per_row: usize, extra: usize) {
    let mut s = String::new();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..n {
        let mut feats = Vec::new();
        let mut t = 0.5;
        for k in 0..d {
            if per_row == d || next() < per_row as f64 / d as f64 {
                let v = 4.0 * next() - 2.0;
                t += v * (1.0 + (k % 3) as f64);
                feats.push(format!("{}:{v}", k + 1));
            }
        }
        let u = 2.0 * next() - 1.0;
        t += 4.0 * u * u * u;
        if i % 20 == 7 {
            t += if next() < 0.5 { 50.0 } else { -50.0 };
        }
        if i + 1 == n && extra > 0 {
            feats.push(format!("{}:1", d + extra));
        }
        s.push_str(&format!("{t}"));
        for f in feats {
            s.push(' ');
            s.push_str(&f);
        }
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn generated_sets_larger_than_the_sample() {
    // 9,000 dense rows: a sample of 2,000 rows gathered on rank 0, three chunks of the
    // full-data pass, all cut by the rank boundaries.
    let dense = tmp("gen_dense.svm");
    generate(&dense, 9000, 3, 3, 0);
    same_model(
        "gen_dense",
        &RANKS,
        &["--seed", "7"],
        &dense,
        AidLadParams::new().seed(7),
    );
    // Sparse (about 2 of 8 features per row), and the widest feature only in the last row:
    // the ranks read blocks of different widths, the feature count is the largest.
    let sparse = tmp("gen_sparse.svm");
    generate(&sparse, 5000, 8, 2, 1);
    let d = read_libsvm_path(&sparse, &ReadOptions::default()).unwrap();
    assert!(matches!(d.x, marginkit::Features::Sparse(_)));
    assert_eq!(d.n_features(), 9);
    same_model(
        "gen_sparse",
        &[1, 2, 4],
        &["--r0", "0.004"],
        &sparse,
        AidLadParams::new().r0(0.004),
    );
}

#[test]
fn more_ranks_than_rows_and_a_first_rank_without_rows() {
    let f = tmp("three_rows.svm");
    std::fs::write(&f, "1 1:1\n2.5 1:2\n2 1:3\n").unwrap();
    same_model("three_rows", &[4], &[], &f, AidLadParams::new());
    // 100,000 blank lines first (more than a third of the file): at P = 3 and 4 rank 0 reads
    // only blank lines.
    let blank = tmp("blank_first.svm");
    let mut text = "\n".repeat(100_000);
    text.push_str(&std::fs::read_to_string(repo_data("reg/boston.scale.svm")).unwrap());
    std::fs::write(&blank, text).unwrap();
    same_model("blank_first", &[3, 4], &[], &blank, AidLadParams::new());
    let out = mpirun(
        3,
        &[
            "--json",
            blank.to_str().unwrap(),
            tmp("bf.model").to_str().unwrap(),
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows_per_rank"][0].as_u64(), Some(0));
}

#[test]
fn a_directory_is_its_files_in_name_order() {
    let whole = repo_data("reg/boston.scale.svm");
    let src = std::fs::read_to_string(&whole).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let dir = tmp("boston_dir");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (k, part) in lines.chunks(120).enumerate() {
        let mut text = part.join("\n");
        text.push('\n');
        std::fs::write(dir.join(format!("part{k:02}.svm")), text).unwrap();
    }
    let (want, _) = single(AidLadParams::new(), &whole);
    for np in [2, 3] {
        let model = tmp(&format!("boston_dir.np{np}.model"));
        let _ = std::fs::remove_file(&model);
        let out = mpirun(np, &["-q", dir.to_str().unwrap(), model.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&model).unwrap(), want, "P = {np}");
    }
}

#[test]
fn bad_input_fails_on_every_rank() {
    let model = tmp("bad.model");
    let m = model.to_str().unwrap();
    // A malformed line late in the file (read by the last rank): the global line number.
    let bad = tmp("bad_line.svm");
    let mut text = std::fs::read_to_string(repo_data("reg/boston.scale.svm")).unwrap();
    text.push_str("3.5 1:0.5 2:oops\n");
    let line = text.lines().count();
    std::fs::write(&bad, &text).unwrap();
    let b = bad.to_str().unwrap();
    for np in [1, 3] {
        fails(np, &[b, m], &model, &format!("{b}:{line}:"));
    }
    // Empty data.
    let empty = tmp("empty.svm");
    std::fs::write(&empty, "\n\n").unwrap();
    fails(2, &[empty.to_str().unwrap(), m], &model, "no data");
    // Fewer rows than coefficients: the library's error.
    let few = tmp("few.svm");
    std::fs::write(&few, "1 1:1 2:3 3:1\n2 1:2 2:1\n").unwrap();
    fails(
        3,
        &[few.to_str().unwrap(), m],
        &model,
        "at least as many rows",
    );
    // An unreadable file.
    let missing = tmp("does_not_exist.svm");
    fails(2, &[missing.to_str().unwrap(), m], &model, "does_not_exist");
    // An output path that cannot be written, checked before reading.
    let unwritable = tmp("no_such_dir/x.model");
    let boston = repo_data("reg/boston.scale.svm");
    fails(
        2,
        &[boston.to_str().unwrap(), unwritable.to_str().unwrap()],
        &unwritable,
        "no_such_dir",
    );
    // A bad parameter.
    fails(
        2,
        &["--r0", "1.5", boston.to_str().unwrap(), m],
        &model,
        "r0",
    );
}

/// Asks to stop before iteration `.0` (as Ctrl-C stops `marginkit aid lad` there).
struct StopBefore(u64);

impl Observer for StopBefore {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        if s.iterations >= self.0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// The state file of a run one process stopped before iteration 1 continues at P = 1, 2 and 3
/// to the uninterrupted run's model file, byte for byte; the state of another run and a
/// damaged one are refused on every rank, with no model file.
#[test]
fn resume_continues_a_state_file_at_any_p() {
    let train = tmp("resume.svm");
    generate(&train, 9000, 3, 3, 0);
    let data = read_libsvm_path(&train, &ReadOptions::default()).unwrap();
    let valid = AidLadParams::new().check().unwrap();
    let full = lad::fit(&valid, &data, &mut Control::default()).unwrap();
    assert!(full.report.run.as_ref().unwrap().iterations.len() >= 2);
    let want = full.model.unwrap().to_json().into_bytes();
    let stopped = lad::fit(&valid, &data, &mut Control::new(StopBefore(1))).unwrap();
    let state = tmp("resume.state");
    std::fs::write(&state, stopped.checkpoint.unwrap().to_bytes()).unwrap();
    let (t, s) = (train.to_str().unwrap(), state.to_str().unwrap());
    for np in [1, 2, 3] {
        let model = tmp(&format!("resume.np{np}.model"));
        let _ = std::fs::remove_file(&model);
        let out = mpirun(np, &["-q", "--resume", s, t, model.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "P = {np}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&model).unwrap(), want, "P = {np}");
    }
    let model = tmp("resume.bad.model");
    let m = model.to_str().unwrap();
    fails(
        2,
        &["--seed", "7", "--resume", s, t, m],
        &model,
        &format!("{s}: the AID state file was written with --seed 0 (now --seed 7)"),
    );
    let mut bytes = std::fs::read(&state).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    let damaged = tmp("resume.damaged.state");
    std::fs::write(&damaged, &bytes).unwrap();
    let d = damaged.to_str().unwrap();
    fails(2, &["--resume", d, t, m], &model, &format!("{d}:"));
    // The state file cannot also be the model file.
    fails(2, &["--state-file", m, t, m], &model, "is the model file");
}

/// A real SIGINT to `mpirun` once rank 0 printed the first iteration's row: every rank stops
/// before the same aggregated solve, rank 0 writes the best model so far and the state file;
/// continued at P = 3 it gives the uninterrupted model file, byte for byte.
#[test]
fn ctrl_c_writes_a_state_file_that_continues_to_the_same_model() {
    // Large enough that the iterations after the first take far longer than the signal's way.
    let train = tmp("sigint.svm");
    generate(&train, 400_000, 4, 4, 0);
    let (want, clusters) = single(AidLadParams::new(), &train);
    assert!(clusters.len() >= 3, "{clusters:?}");
    let model = tmp("sigint.model");
    let state = tmp("sigint.model.state");
    let (t, m) = (train.to_str().unwrap(), model.to_str().unwrap());
    let _ = std::fs::remove_file(&state);
    let out = common::interrupt_after_line(2, COMMAND, &[t, m], |l| l.starts_with("   0 "));
    let err = String::from_utf8_lossy(&out.stderr);
    // Every rank exits with 130; `mpirun`, told to stop the job, with a failure status of its own.
    assert!(!out.status.success(), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\nstop: interrupted\n"), "{stdout}");
    let s = state.to_str().unwrap();
    assert!(
        err.contains(&format!("continue with --resume {s}")),
        "{err}"
    );
    assert!(model.exists() && state.exists());
    let out = mpirun(3, &["-q", "--resume", s, t, m]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&model).unwrap(), want);
}
