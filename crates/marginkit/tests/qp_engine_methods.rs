//! The block working-set SMO as the QP engine of the regularization path, robust SVM, AID-SVM
//! and ODM (`qp_engine(SvmSolver::Block)`, `--solver block`), against the pair SMO's optimum of
//! the same method on the same data: objectives and decision values to the solver tolerance,
//! the same path points, and bit-identical block paths at 1 and 2 threads. The combinations
//! the block engine cannot run are refused by `check()`, naming `--solver`.

mod common;
use common::robust::Rng;

use std::path::PathBuf;

use marginkit::aid::svm::{self as aid_svm, AidLinearEngine, AidSvmParams};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::Control;
use marginkit::odm::{self, OdmParams, OdmSolver};
use marginkit::path::{self, Grid, PathData, PathParams, PathResult};
use marginkit::robust::cccp::{self, CccpParams};
use marginkit::robust::{OutlierPath, PathKind, RobustData, RobustParams, Task};
use marginkit::solver::{NoObserver, Status, SvmSolver};
use marginkit::svm::params::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, DenseMatrix, Features, KernelSpec};

fn heart() -> Dataset {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", "heart_scale"]
        .iter()
        .collect();
    read_libsvm_path(p, &ReadOptions::default()).unwrap()
}

fn rbf(gamma: f64) -> KernelParams {
    KernelParams {
        kind: KernelKind::Rbf,
        gamma: Gamma::Value(gamma),
        ..KernelParams::default()
    }
}

/// Two overlapping Gaussian blobs in 2-D, labels +1/-1.
fn blobs(n: usize, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        x.push(0.7 * c + r.normal());
        x.push(0.3 * c + r.normal());
        y.push(if r.next() < 0.1 { -c } else { c });
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-12)
}

fn run_path(data: &Dataset, p: PathParams) -> PathResult {
    path::fit(
        &p.check().unwrap(),
        &PathData::new(data),
        &mut Control::default(),
    )
    .unwrap()
    .model
}

/// The kernel path (with and without the bias feature, with IT screening, so the solves have
/// fixed variables and warm starts on a permuted matrix) reaches the pair engine's points.
#[test]
fn path_block_gives_the_pair_engines_points() {
    let d = heart();
    for bias in [None, Some(1.0)] {
        let base = PathParams::kernel(KernelSpec::Rbf { gamma: 1.0 / 13.0 })
            .grid(Grid::Log {
                c_min: 0.01,
                c_max: 100.0,
                points: 9,
            })
            .bias(bias)
            .tol(1e-7);
        let pair = run_path(&d, base.clone().qp_engine(SvmSolver::Smo));
        let block = run_path(&d, base.qp_engine(SvmSolver::Block));
        assert_eq!(pair.points.len(), block.points.len());
        for (a, b) in pair.points.iter().zip(&block.points) {
            assert_eq!(a.c, b.c);
            assert_eq!((a.status, b.status), (Status::Converged, Status::Converged));
            assert!(
                rel(a.objective, b.objective) <= 1e-6,
                "bias {bias:?} C = {}: {} vs {}",
                a.c,
                a.objective,
                b.objective
            );
            let da = a.alpha.iter().zip(&b.alpha).map(|(x, y)| (x - y).abs());
            assert!(da.fold(0.0, f64::max) <= 1e-4 * a.c, "C = {}", a.c);
        }
    }
}

/// The block path is bit-identical at 1 and 2 threads on a problem large enough (2,600 rows)
/// for its gradient pass to split across threads.
#[test]
fn path_block_is_the_same_at_one_and_two_threads() {
    let d = blobs(2600, 11);
    let p = PathParams::kernel(KernelSpec::Rbf { gamma: 0.5 })
        .grid(Grid::List(vec![0.1, 1.0, 10.0]))
        .qp_engine(SvmSolver::Block);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run_path(&d, p.clone()))
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.points.len(), 3);
    for (a, b) in one.points.iter().zip(&two.points) {
        assert_eq!(a.objective.to_bits(), b.objective.to_bits(), "C = {}", a.c);
        assert_eq!(a.iterations, b.iterations);
        assert_eq!(a.alpha, b.alpha);
    }
}

fn robust_path(p: RobustParams, d: &Dataset) -> OutlierPath {
    let p = p.check().unwrap();
    marginkit::robust::fit(&p, &RobustData::new(d), &mut Control::default())
        .unwrap()
        .report
}

/// Robust SVC (outlier path from the standard SVM) and the CCCP baseline, whose box problems
/// the block engine solves: the same nodes as with the pair engine.
#[test]
fn robust_block_gives_the_pair_engines_nodes() {
    let d = blobs(80, 3);
    let base = RobustParams::new()
        .task(Task::Svc)
        .kind(PathKind::Theta)
        .kernel(rbf(0.5))
        .c(1.0);
    let pair = robust_path(base.clone().qp_engine(SvmSolver::Smo), &d);
    let block = robust_path(base.clone().qp_engine(SvmSolver::Block), &d);
    assert!(!pair.nodes.is_empty());
    assert_eq!(pair.nodes.len(), block.nodes.len());
    for (a, b) in pair.nodes.iter().zip(&block.nodes) {
        assert!(
            (a.param - b.param).abs() <= 1e-6,
            "{} vs {}",
            a.param,
            b.param
        );
        assert!((a.objective - b.objective).abs() <= 1e-6 * a.objective.abs().max(1.0));
        assert_eq!(a.n_outliers, b.n_outliers);
    }
    let cccp_run = |e: SvmSolver| {
        let p = CccpParams::new()
            .robust(base.clone().qp_engine(e))
            .grid(vec![1.0, 0.5, 0.0])
            .check()
            .unwrap();
        cccp::fit(&p, &RobustData::new(&d), &mut Control::default())
            .unwrap()
            .report
    };
    let (pc, bc) = (cccp_run(SvmSolver::Smo), cccp_run(SvmSolver::Block));
    assert_eq!(pc.nodes.len(), bc.nodes.len());
    for (a, b) in pc.nodes.iter().zip(&bc.nodes) {
        assert!((a.objective - b.objective).abs() <= 1e-6 * a.objective.abs().max(1.0));
    }
    let db = pc
        .final_beta
        .iter()
        .zip(&bc.final_beta)
        .map(|(x, y)| (x - y).abs());
    assert!(db.fold(0.0, f64::max) <= 1e-6);
}

fn aid_best(p: AidSvmParams, d: &Dataset) -> (f64, usize) {
    let fit = aid_svm::fit(&p.check().unwrap(), d, &mut Control::default()).unwrap();
    let run = fit.report.run.unwrap();
    (run.best_objective, run.iterations.len())
}

/// Kernel AID (dense aggregated problems, the sample fit) and linear AID with SMO at every
/// size (warm-gradient solves): the block engine's runs end at the pair engine's objective.
#[test]
fn aid_block_gives_the_pair_engines_objective() {
    let d = heart();
    let kernel = AidSvmParams::new()
        .c(1.0)
        .kernel(rbf(1.0 / 13.0))
        .r0(0.05)
        .solver_tol(1e-8);
    let linear = AidSvmParams::new()
        .c(0.5)
        .r0(0.05)
        .solver_tol(1e-8)
        .linear_engine(AidLinearEngine::SmoUpTo(usize::MAX));
    for base in [kernel, linear] {
        let (ep, ip) = aid_best(base.clone().qp_engine(SvmSolver::Smo), &d);
        let (eb, ib) = aid_best(base.qp_engine(SvmSolver::Block), &d);
        assert!(rel(ep, eb) <= 1e-6, "{ep} vs {eb}");
        assert_eq!(ip, ib);
    }
}

/// The ODM dual (no equality, unbounded above; zero-weight samples fixed at 0): the block
/// engine's decision values and dual objective are the pair engine's.
#[test]
fn odm_block_gives_the_pair_engines_decision_values() {
    let d = heart();
    let y: Vec<i8> = d.y.iter().map(|&v| if v > 0.0 { 1 } else { -1 }).collect();
    let mut w = vec![1.0; d.len()];
    w.iter_mut().step_by(17).for_each(|v| *v = 0.0);
    for weights in [None, Some(&w[..])] {
        let solve = |e: SvmSolver| {
            let p = OdmParams::new()
                .kernel(rbf(1.0 / 13.0))
                .tol(1e-8)
                .qp_engine(e)
                .check()
                .unwrap();
            odm::solve(&p, &d.x, &y, weights, &mut NoObserver).unwrap()
        };
        let (a, b) = (solve(SvmSolver::Smo), solve(SvmSolver::Block));
        assert_eq!(b.report.info.status, Status::Converged);
        let scale = a.f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (fa, fb) in a.f.iter().zip(&b.f) {
            assert!((fa - fb).abs() <= 1e-6 * scale, "{fa} vs {fb}");
        }
        assert!(rel(a.report.dual, b.report.dual) <= 1e-6);
        assert!(b.report.gap.abs() <= 1e-6 * b.report.primal.abs());
    }
}

/// Where the block engine has nothing to solve, `check()` refuses it and names `--solver`.
#[test]
fn block_without_an_smo_problem_is_refused() {
    let linear_path = PathParams::linear().qp_engine(SvmSolver::Block).check();
    let odm_dcd = OdmParams::new()
        .kernel(KernelParams {
            kind: KernelKind::Linear,
            ..KernelParams::default()
        })
        .engine(OdmSolver::Dcd)
        .qp_engine(SvmSolver::Block)
        .check();
    let aid_dcd = AidSvmParams::new()
        .linear_engine(AidLinearEngine::Dcd)
        .qp_engine(SvmSolver::Block)
        .check();
    for (what, msg) in [
        ("path", linear_path.err().map(|e| e.to_string())),
        ("-s odm", odm_dcd.err().map(|e| e.to_string())),
        ("aid svm", aid_dcd.err().map(|e| e.to_string())),
    ] {
        let msg = msg.unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(
            msg.contains("--solver block") && msg.contains(what),
            "{what}: {msg}"
        );
    }
    // The pair engine and auto run everywhere.
    for e in [SvmSolver::Smo, SvmSolver::Auto] {
        assert!(PathParams::linear().qp_engine(e).check().is_ok());
        assert!(AidSvmParams::new()
            .linear_engine(AidLinearEngine::Dcd)
            .qp_engine(e)
            .check()
            .is_ok());
    }
}
