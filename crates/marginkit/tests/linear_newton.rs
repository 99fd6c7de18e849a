//! The primal truncated Newton solvers (`-s 2` L2-loss SVC, `-s 11` L2-loss SVR): the optimum
//! equals the dual DCD optimum (`-s 1` / `-s 12`) and a clarabel solve of the primal QP, the
//! gradient of the primal vanishes (recomputed naively here), the reported gap and violation are
//! those of the implied dual point, results are bit-identical at 1, 2 and 8 threads, integer
//! weights equal duplicated rows, limits and interrupts are reported, and model files round-trip.
#![allow(clippy::needless_range_loop)] // naive index loops keep the oracles readable

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
};
use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::solver::newton::{solve_svc_primal, SvcPrimal};
use marginkit::solver::{
    dcd::LinearDesign, Cancel, IterStats, NoObserver, Observer, SolverSettings, Status,
};
use marginkit::svm::linear::{self, LinearFit, LinearModel, LinearParams, LinearSolver};
use marginkit::{CsrMatrix, Dataset, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

/// Checks `p`, then fits it without an observer.
fn fit_linear(p: LinearParams, data: &Dataset) -> Result<LinearFit, FitError> {
    linear::fit(&p.check()?, data, &mut Control::default())
}

fn data_file(name: &str) -> Dataset {
    let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    read_libsvm_path(std::path::Path::new(&p), &ReadOptions::default()).unwrap()
}

/// Two or three overlapping classes (or a noisy linear target with `regression`), `d` features,
/// about `density` of them non-zero, dense or CSR.
fn blobs(seed: u64, n: usize, d: usize, density: f64, sparse: bool, regression: bool) -> Dataset {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut v, mut y) = (Vec::with_capacity(n * d), Vec::with_capacity(n));
    for i in 0..n {
        let c = (i % 2) as f64;
        let mut t = 0.0;
        for k in 0..d {
            let z = if g.gen_bool(density) {
                g.gen_range(-1.0..1.0) + 0.5 * (2.0 * c - 1.0) * ((k % 3) as f64 - 0.5)
            } else {
                0.0
            };
            t += z * ((k % 5) as f64 - 2.0);
            v.push(z);
        }
        y.push(if regression {
            t + g.gen_range(-0.5..0.5)
        } else {
            c
        });
    }
    let x = if sparse {
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for k in 0..d {
                if v[i * d + k] != 0.0 {
                    idx.push(k as u32);
                    val.push(v[i * d + k]);
                }
            }
            ptr.push(idx.len());
        }
        Features::Sparse(CsrMatrix::new(d, ptr, idx, val).unwrap())
    } else {
        Features::Dense(DenseMatrix::new(n, d, v).unwrap())
    };
    Dataset::new(x, y, None).unwrap()
}

fn fit(solver: LinearSolver, data: &Dataset, c: f64, bias: Option<f64>, eps: f64) -> LinearFit {
    let mut p = LinearParams::new(solver).c(c).p(0.1).eps(eps);
    if let Some(b) = bias {
        p = p.bias(b);
    }
    fit_linear(p, data).unwrap()
}

/// Dense copy of row `i` with the bias feature appended.
fn row_b(data: &Dataset, i: usize, bias: Option<f64>) -> Vec<f64> {
    let d = data.n_features();
    let mut r = vec![0.0; d];
    match data.x.row(i) {
        marginkit::Row::Dense(x) => r.copy_from_slice(x),
        marginkit::Row::Sparse { indices, values } => {
            for (&k, &v) in indices.iter().zip(values) {
                r[k as usize] = v;
            }
        }
    }
    if let Some(b) = bias {
        r.push(b);
    }
    r
}

/// Naive primal objective and gradient of the binary SVC (`y > 0` positive) or the SVR.
fn primal_and_grad(
    data: &Dataset,
    w: &[f64],
    c: f64,
    bias: Option<f64>,
    svr_eps: Option<f64>,
    positive: f64,
) -> (f64, Vec<f64>) {
    let mut f = 0.5 * w.iter().map(|v| v * v).sum::<f64>();
    let mut g = w.to_vec();
    for i in 0..data.len() {
        let x = row_b(data, i, bias);
        let z: f64 = x.iter().zip(w).map(|(a, b)| a * b).sum();
        let ci = c * data.weight(i);
        let d1 = match svr_eps {
            None => {
                let y = if data.y[i] == positive { 1.0 } else { -1.0 };
                let r = (1.0 - y * z).max(0.0);
                f += ci * r * r;
                -2.0 * ci * y * r
            }
            Some(e) => {
                let r = (z - data.y[i]).abs() - e;
                if r > 0.0 {
                    f += ci * r * r;
                    2.0 * ci * r * (z - data.y[i]).signum()
                } else {
                    0.0
                }
            }
        };
        for j in 0..x.len() {
            g[j] += d1 * x[j];
        }
    }
    (f, g)
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

fn close_weights(a: &[f64], b: &[f64], tol: f64) -> Result<(), String> {
    let scale = 1.0 + norm(b);
    for (j, (u, v)) in a.iter().zip(b).enumerate() {
        if (u - v).abs() > tol * scale {
            return Err(format!("w[{j}]: {u} vs {v}"));
        }
    }
    Ok(())
}

#[test]
fn svc_primal_equals_dual_dcd_optimum() {
    let heart = data_file("heart_scale");
    let iris = data_file("iris.scale.svm");
    let dense = blobs(3, 600, 12, 0.9, false, false);
    let sparse = blobs(4, 600, 80, 0.1, true, false);
    let mut bad = Vec::new();
    for (name, data) in [
        ("heart", &heart),
        ("iris", &iris),
        ("dense", &dense),
        ("sparse", &sparse),
    ] {
        for c in [0.1, 1.0, 10.0] {
            for bias in [None, Some(1.0)] {
                let pr = fit(LinearSolver::L2LossSvcPrimal, data, c, bias, 1e-10);
                let du = fit(LinearSolver::L2LossSvcDual, data, c, bias, 1e-9);
                for (k, (a, b)) in pr
                    .report
                    .subproblems
                    .iter()
                    .zip(&du.report.subproblems)
                    .enumerate()
                {
                    let ctx = format!("{name} C={c} bias={bias:?} class {k}");
                    assert_eq!(a.status, Status::Converged, "{ctx}");
                    assert_eq!(b.status, Status::Converged, "{ctx}");
                    let rel = (a.primal_objective - b.primal_objective).abs()
                        / b.primal_objective.abs().max(1e-300);
                    if rel > 1e-6 {
                        bad.push(format!(
                            "{ctx}: primal {} vs dual DCD {}",
                            a.primal_objective, b.primal_objective
                        ));
                    }
                    // The primal solution is at least as good as the dual's (to rounding).
                    if a.primal_objective > b.primal_objective * (1.0 + 1e-9) {
                        bad.push(format!("{ctx}: Newton primal above DCD's"));
                    }
                    if !(a.gap >= -1e-9 * a.primal_objective && a.gap <= 1e-6 * a.primal_objective)
                    {
                        bad.push(format!("{ctx}: gap {}", a.gap));
                    }
                    if a.max_violation > 1e-4 {
                        bad.push(format!("{ctx}: violation {}", a.max_violation));
                    }
                    // Independent optimality check: the primal gradient vanishes.
                    let w = pr.model.weights(k);
                    let pos = pr.model.labels()[k];
                    let (f, g) = primal_and_grad(data, w, c, bias, None, pos);
                    if (f - a.primal_objective).abs() > 1e-9 * f {
                        bad.push(format!(
                            "{ctx}: reported primal {} vs {f}",
                            a.primal_objective
                        ));
                    }
                    let (_, g0) = primal_and_grad(data, &vec![0.0; w.len()], c, bias, None, pos);
                    if norm(&g) > 1e-8 * norm(&g0) {
                        bad.push(format!(
                            "{ctx}: |grad| {} vs |grad0| {}",
                            norm(&g),
                            norm(&g0)
                        ));
                    }
                    if let Err(e) = close_weights(w, du.model.weights(k), 1e-4) {
                        bad.push(format!("{ctx}: {e}"));
                    }
                }
                assert_eq!(pr.model.labels(), du.model.labels());
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn svr_primal_equals_dual_dcd_optimum() {
    let auto = data_file("auto.scale.svm");
    let dense = blobs(5, 500, 10, 1.0, false, true);
    let sparse = blobs(6, 500, 60, 0.15, true, true);
    let mut bad = Vec::new();
    for (name, data) in [("auto", &auto), ("dense", &dense), ("sparse", &sparse)] {
        for c in [0.1, 1.0] {
            for bias in [None, Some(1.0)] {
                let ctx = format!("{name} C={c} bias={bias:?}");
                let pr = fit(LinearSolver::L2LossSvrPrimal, data, c, bias, 1e-10);
                let du = fit(LinearSolver::L2LossSvrDual, data, c, bias, 1e-8);
                let (a, b) = (&pr.report.subproblems[0], &du.report.subproblems[0]);
                assert_eq!(a.status, Status::Converged, "{ctx}");
                assert_eq!(b.status, Status::Converged, "{ctx}");
                let rel = (a.primal_objective - b.primal_objective).abs() / b.primal_objective;
                if rel > 1e-6 {
                    bad.push(format!(
                        "{ctx}: {} vs {}",
                        a.primal_objective, b.primal_objective
                    ));
                }
                if a.gap.is_nan()
                    || a.gap.abs() > 1e-6 * a.primal_objective
                    || a.max_violation > 1e-4
                {
                    bad.push(format!("{ctx}: gap {} viol {}", a.gap, a.max_violation));
                }
                let w = pr.model.weights(0);
                let (_, g) = primal_and_grad(data, w, c, bias, Some(0.1), 0.0);
                let (_, g0) = primal_and_grad(data, &vec![0.0; w.len()], c, bias, Some(0.1), 0.0);
                if norm(&g) > 1e-8 * norm(&g0) {
                    bad.push(format!("{ctx}: |grad| {} vs {}", norm(&g), norm(&g0)));
                }
                if let Err(e) = close_weights(w, du.model.weights(0), 1e-4) {
                    bad.push(format!("{ctx}: {e}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The primal QP `min 1/2 |w|^2 + sum C_i xi_i^2` over `(w, xi)` with `xi >= 0` and
/// `xi_i >= 1 - y_i w'x_i` (SVC) or `xi_i >= |w'x_i - t_i| - eps` (SVR), by clarabel.
fn clarabel_primal(x: &[Vec<f64>], lab: &[f64], cost: &[f64], svr_eps: Option<f64>) -> f64 {
    let (n, dim) = (x.len(), x[0].len());
    let nv = dim + n;
    let mut colptr = vec![0usize];
    let (mut rowval, mut nzval) = (Vec::new(), Vec::new());
    for j in 0..nv {
        rowval.push(j);
        nzval.push(if j < dim { 1.0 } else { 2.0 * cost[j - dim] });
        colptr.push(rowval.len());
    }
    let p_mat = CscMatrix::new(nv, nv, colptr, rowval, nzval);
    // Rows of A x <= b.
    let mut rows: Vec<(Vec<(usize, f64)>, f64)> = Vec::new();
    for i in 0..n {
        let xi = dim + i;
        match svr_eps {
            None => {
                let mut r: Vec<(usize, f64)> = (0..dim).map(|j| (j, -lab[i] * x[i][j])).collect();
                r.push((xi, -1.0));
                rows.push((r, -1.0));
            }
            Some(e) => {
                let mut r: Vec<(usize, f64)> = (0..dim).map(|j| (j, x[i][j])).collect();
                r.push((xi, -1.0));
                rows.push((r, lab[i] + e));
                let mut r: Vec<(usize, f64)> = (0..dim).map(|j| (j, -x[i][j])).collect();
                r.push((xi, -1.0));
                rows.push((r, -lab[i] + e));
            }
        }
        rows.push((vec![(xi, -1.0)], 0.0));
    }
    let m = rows.len();
    let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); nv];
    for (r, (entries, _)) in rows.iter().enumerate() {
        for &(c, v) in entries {
            cols[c].push((r, v));
        }
    }
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for c in cols {
        for (r, v) in c {
            rowval.push(r);
            nzval.push(v);
        }
        colptr.push(rowval.len());
    }
    let a_mat = CscMatrix::new(m, nv, colptr, rowval, nzval);
    let b: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let cones: Vec<SupportedConeT<f64>> = vec![NonnegativeConeT(m)];
    let set = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-11,
        tol_gap_rel: 1e-11,
        tol_feas: 1e-11,
        ..DefaultSettings::default()
    };
    let q = vec![0.0; nv];
    let mut s = DefaultSolver::new(&p_mat, &q, &a_mat, &b, &cones, set).unwrap();
    s.solve();
    assert!(matches!(
        s.solution.status,
        SolverStatus::Solved | SolverStatus::AlmostSolved
    ));
    s.solution.obj_val
}

#[test]
fn tiny_problems_match_clarabel() {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(11);
    for case in 0..30 {
        let n = g.gen_range(2..25);
        let d = g.gen_range(1..5);
        let regression = case % 3 == 2;
        let bias = if case % 2 == 0 { Some(1.0) } else { None };
        let mut v = Vec::new();
        let mut y = Vec::new();
        let mut wts = Vec::new();
        for i in 0..n {
            for _ in 0..d {
                v.push(g.gen_range(-2.0..2.0));
            }
            y.push(if regression {
                g.gen_range(-3.0..3.0)
            } else if i < 2 {
                i as f64
            } else {
                f64::from(g.gen_range(0..2u8))
            });
            wts.push(if g.gen_bool(0.2) {
                0.0
            } else {
                g.gen_range(0.2..3.0)
            });
        }
        wts[0] = 1.0;
        wts[1] = 1.0;
        let c = [0.05, 1.0, 20.0][case % 3];
        let data = Dataset::new(
            Features::Dense(DenseMatrix::new(n, d, v).unwrap()),
            y,
            Some(wts.clone()),
        )
        .unwrap();
        let solver = if regression {
            LinearSolver::L2LossSvrPrimal
        } else {
            LinearSolver::L2LossSvcPrimal
        };
        let f = fit(solver, &data, c, bias, 1e-12);
        let ours = f.report.subproblems[0].primal_objective;
        let x: Vec<Vec<f64>> = (0..n).map(|i| row_b(&data, i, bias)).collect();
        let pos = if regression { 0.0 } else { f.model.labels()[0] };
        let lab: Vec<f64> = if regression {
            data.y.clone()
        } else {
            data.y
                .iter()
                .map(|&v| if v == pos { 1.0 } else { -1.0 })
                .collect()
        };
        let cost: Vec<f64> = wts.iter().map(|w| c * w).collect();
        let reference = clarabel_primal(&x, &lab, &cost, regression.then_some(0.1));
        assert!(
            (ours - reference).abs() <= 1e-7 * (1.0 + reference.abs()),
            "case {case} (n {n}, d {d}, C {c}): {ours} vs clarabel {reference}"
        );
    }
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn bytes(fit: &LinearFit) -> Vec<u8> {
    let mut out = Vec::new();
    fit.model.write(&mut out).unwrap();
    out
}

#[test]
fn bit_identical_at_1_2_and_8_threads() {
    // Large enough for several row chunks (the unit of parallel work).
    let dense = blobs(7, 6000, 30, 1.0, false, false);
    let sparse = blobs(8, 6000, 400, 0.05, true, false);
    let reg = blobs(9, 6000, 30, 1.0, false, true);
    for (name, data, solver) in [
        ("dense", &dense, LinearSolver::L2LossSvcPrimal),
        ("sparse", &sparse, LinearSolver::L2LossSvcPrimal),
        ("svr", &reg, LinearSolver::L2LossSvrPrimal),
    ] {
        let run = |t: usize| in_pool(t, || fit(solver, data, 1.0, Some(1.0), 1e-6));
        let one = run(1);
        for t in [2, 8] {
            let other = run(t);
            assert_eq!(bytes(&one), bytes(&other), "{name}: model at {t} threads");
            assert_eq!(one.report, other.report, "{name}: report at {t} threads");
        }
    }
}

#[test]
fn integer_weights_equal_duplicated_rows_and_zero_weights_drop() {
    for (solver, regression) in [
        (LinearSolver::L2LossSvcPrimal, false),
        (LinearSolver::L2LossSvrPrimal, true),
    ] {
        for sparse in [false, true] {
            let base = blobs(12, 120, 6, 0.7, sparse, regression);
            let n = base.len();
            // Rows 0 and 1 keep weight 1 so that both fits see the labels in the same order.
            let wts: Vec<f64> = (0..n)
                .map(|i| if i < 2 { 1.0 } else { (i % 4) as f64 })
                .collect();
            let weighted = Dataset::new(base.x.clone(), base.y.clone(), Some(wts.clone())).unwrap();
            let mut idx = Vec::new();
            for i in 0..n {
                for _ in 0..wts[i] as usize {
                    idx.push(i);
                }
            }
            let dup = base.subset(&idx);
            let a = fit(solver, &weighted, 0.7, Some(1.0), 1e-12);
            let b = fit(solver, &dup, 0.7, Some(1.0), 1e-12);
            let (pa, pb) = (
                a.report.subproblems[0].primal_objective,
                b.report.subproblems[0].primal_objective,
            );
            assert!(
                (pa - pb).abs() <= 1e-8 * pb,
                "{solver:?} sparse={sparse}: {pa} vs {pb}"
            );
            close_weights(a.model.weights(0), b.model.weights(0), 1e-8).unwrap();
        }
    }
}

#[test]
fn limits_and_interrupts_are_reported() {
    let data = blobs(13, 2000, 20, 1.0, false, false);
    let one = fit_linear(
        LinearParams::new(LinearSolver::L2LossSvcPrimal)
            .c(100.0)
            .eps(1e-12)
            .max_passes(1),
        &data,
    )
    .unwrap();
    let s = &one.report.subproblems[0];
    assert_eq!(s.status, Status::MaxIterations);
    assert_eq!(s.iterations, 1);
    assert!(s.gap > 0.0 && s.max_violation > 0.0);
    assert!(!one.report.warnings.is_empty());

    let cancel = Cancel::new();
    cancel.cancel();
    let stopped = LinearParams::new(LinearSolver::L2LossSvrPrimal)
        .check()
        .unwrap();
    let stopped = linear::fit(&stopped, &data, &mut Control::new(cancel.clone())).unwrap();
    assert_eq!(stopped.report.subproblems[0].status, Status::Interrupted);

    // The observer sees the relative gradient norm fall to the tolerance.
    struct Last(f64, u64);
    impl Observer for Last {
        fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
            self.0 = s.max_violation;
            self.1 = s.iterations;
            ControlFlow::Continue(())
        }
    }
    let y: Vec<i8> = data
        .y
        .iter()
        .map(|&v| if v > 0.5 { 1 } else { -1 })
        .collect();
    let cost = vec![1.0; data.len()];
    let prob = SvcPrimal {
        design: LinearDesign {
            x: &data.x,
            bias: None,
        },
        y: &y,
        cost: &cost,
    };
    let settings = SolverSettings {
        tol: 1e-6,
        ..SolverSettings::default()
    };
    let mut last = Last(f64::NAN, 0);
    let r = solve_svc_primal(&prob, &settings, &mut last).unwrap();
    assert_eq!(r.info.status, Status::Converged);
    assert!(
        last.0 <= 1e-6 && last.1 == r.info.iterations,
        "{} {}",
        last.0,
        last.1
    );
    assert_eq!(r.xw.len(), data.len());
    // Bad input is an error, not a panic.
    let short = vec![1.0; 3];
    let bad = SvcPrimal {
        cost: &short,
        ..prob
    };
    assert!(solve_svc_primal(&bad, &settings, &mut NoObserver).is_err());
}

#[test]
fn model_files_round_trip_with_liblinear_names() {
    let iris = data_file("iris.scale.svm");
    let f = fit(LinearSolver::L2LossSvcPrimal, &iris, 1.0, Some(1.0), 0.01);
    let b = bytes(&f);
    assert!(b.starts_with(b"solver_type L2R_L2LOSS_SVC\n"));
    assert_eq!(LinearModel::from_bytes(&b).unwrap(), f.model);
    let auto = data_file("auto.scale.svm");
    let r = fit(LinearSolver::L2LossSvrPrimal, &auto, 1.0, None, 1e-4);
    let b = bytes(&r);
    assert!(b.starts_with(b"solver_type L2R_L2LOSS_SVR\n"));
    assert_eq!(LinearModel::from_bytes(&b).unwrap(), r.model);
    assert_eq!(
        LinearSolver::from_id(2),
        Some(LinearSolver::L2LossSvcPrimal)
    );
    assert_eq!(
        LinearSolver::from_id(11),
        Some(LinearSolver::L2LossSvrPrimal)
    );
}
