//! Oracle tests for the ODM classifier (`odm::solve`, `odm::fit`).
//!
//! - The dual optimum equals clarabel's solution of the same QP (built here from dense kernel
//!   values, independent of the SMO/DCD code), and the primal optimum (linear kernel) equals
//!   clarabel's solution of Eq. 1 in (w, xi, eps).
//! - Primal and dual objectives agree at the solution (gap recomputed from scratch).
//! - The gradient formulas match central finite differences of `G`.
//! - SMO and DCD give the same optimum on the linear kernel; models round-trip through the
//!   LIBSVM format; cross-validation is deterministic and sensible on heart_scale.
#![allow(clippy::needless_range_loop)]

use marginkit::data::libsvm_fmt::{read_libsvm_path, ReadOptions};
use marginkit::fit::{Control, Report};
use marginkit::kernel::qmatrix::kernel_value;
use marginkit::odm::{self, OdmConsts, OdmParams, OdmSolver};
use marginkit::solver::{NoObserver, Status};
use marginkit::svm::model_io::{read_model_bytes, write_model};
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::{Dataset, DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn toy(n: usize, d: usize, seed: u64) -> (Features, Vec<i8>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let yi: i8 = if i % 2 == 0 { 1 } else { -1 };
        for k in 0..d {
            let shift = if k == 0 { 0.8 * f64::from(yi) } else { 0.0 };
            v.push(rng.gen_range(-1.0..1.0) + shift);
        }
        y.push(yi);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

fn kp(kind: KernelKind, gamma: f64) -> KernelParams {
    KernelParams {
        kind,
        gamma: Gamma::Value(gamma),
        coef0: 1.0,
        degree: 2,
    }
}

/// min 1/2 a'Pa + q'a s.t. A a + s = b, s in the nonnegative cone (dense inputs).
fn clarabel_qp(p: &[Vec<f64>], q: &[f64], a: &[Vec<f64>], b: &[f64]) -> (Vec<f64>, f64) {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{
        DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus,
    };
    let n = q.len();
    let (mut colptr, mut rowval, mut nzval) = (vec![0], vec![], vec![]);
    for j in 0..n {
        for i in 0..=j {
            if p[i][j] != 0.0 {
                rowval.push(i);
                nzval.push(p[i][j]);
            }
        }
        colptr.push(rowval.len());
    }
    let pm = CscMatrix::new(n, n, colptr, rowval, nzval);
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for (i, row) in a.iter().enumerate() {
        for (j, &x) in row.iter().enumerate() {
            if x != 0.0 {
                r.push(i);
                c.push(j);
                v.push(x);
            }
        }
    }
    let am = CscMatrix::new_from_triplets(a.len(), n, r, c, v);
    let st = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .build()
        .unwrap();
    let cones = [NonnegativeConeT(a.len())];
    let mut s = DefaultSolver::new(&pm, q, &am, b, &cones, st).unwrap();
    s.solve();
    assert!(matches!(
        s.solution.status,
        SolverStatus::Solved | SolverStatus::AlmostSolved
    ));
    (s.solution.x.clone(), s.solution.obj_val)
}

/// Dual optimum by clarabel: max G = -min (1/2 a'Ma + p'a), a >= 0.
fn clarabel_dual(x: &Features, y: &[i8], kernel: KernelSpec, l: f64, nu: f64, th: f64) -> f64 {
    let m = y.len();
    let c = m as f64 * (1.0 - th) * (1.0 - th) / (4.0 * l);
    let n = 2 * m;
    let sign = |a: usize| {
        let s = f64::from(y[a % m]);
        if a < m {
            s
        } else {
            -s
        }
    };
    let mut p = vec![vec![0.0; n]; n];
    for a in 0..n {
        for b in 0..n {
            p[a][b] = sign(a) * sign(b) * kernel_value(x, kernel, a % m, b % m);
        }
        p[a][a] += if a < m { 2.0 * c } else { 2.0 * c / nu };
    }
    let q: Vec<f64> = (0..n)
        .map(|a| if a < m { -(1.0 - th) } else { 1.0 + th })
        .collect();
    let a: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { -1.0 } else { 0.0 }).collect())
        .collect();
    let (_, obj) = clarabel_qp(&p, &q, &a, &vec![0.0; n]);
    -obj
}

/// Primal optimum of Eq. 1 (linear kernel) by clarabel, variables (w, xi, eps).
fn clarabel_primal(x: &[Vec<f64>], y: &[i8], l: f64, nu: f64, th: f64) -> f64 {
    let m = y.len();
    let d = x[0].len();
    let n = d + 2 * m;
    let w = 2.0 * l / (m as f64 * (1.0 - th) * (1.0 - th));
    let mut p = vec![vec![0.0; n]; n];
    for k in 0..d {
        p[k][k] = 1.0;
    }
    for i in 0..m {
        p[d + i][d + i] = w;
        p[d + m + i][d + m + i] = w * nu;
    }
    let q = vec![0.0; n];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..m {
        let yi = f64::from(y[i]);
        // -y w'x - xi <= -(1 - theta)
        let mut r = vec![0.0; n];
        for k in 0..d {
            r[k] = -yi * x[i][k];
        }
        r[d + i] = -1.0;
        a.push(r);
        b.push(-(1.0 - th));
        // y w'x - eps <= 1 + theta
        let mut r = vec![0.0; n];
        for k in 0..d {
            r[k] = yi * x[i][k];
        }
        r[d + m + i] = -1.0;
        a.push(r);
        b.push(1.0 + th);
    }
    clarabel_qp(&p, &q, &a, &b).1
}

#[test]
fn dual_matches_clarabel_for_every_kernel_and_gap_closes() {
    let (x, y) = toy(18, 3, 1);
    let cases = [
        (kp(KernelKind::Linear, 1.0), OdmSolver::Smo),
        (kp(KernelKind::Linear, 1.0), OdmSolver::Dcd),
        (kp(KernelKind::Rbf, 0.7), OdmSolver::Smo),
        (kp(KernelKind::Poly, 0.5), OdmSolver::Smo),
    ];
    for (lambda, nu, theta) in [(1.0, 0.5, 0.2), (100.0, 0.8, 0.6), (10.0, 2.0, 0.0)] {
        for &(k, engine) in &cases {
            let p = OdmParams::new()
                .lambda(lambda)
                .nu(nu)
                .theta(theta)
                .kernel(k)
                .engine(engine)
                .tol(1e-9)
                .check()
                .unwrap();
            let sol = odm::solve(&p, &x, &y, None, &mut NoObserver).unwrap();
            let r = &sol.report;
            assert_eq!(r.status(), Status::Converged);
            let reference = clarabel_dual(&x, &y, r.kernel, lambda, nu, theta);
            let scale = 1.0 + reference.abs();
            assert!(
                (r.dual - reference).abs() <= 1e-6 * scale,
                "{k:?} {engine:?} l={lambda}: dual {} vs clarabel {reference}",
                r.dual
            );
            assert!(
                r.gap.abs() <= 1e-6 * scale,
                "{k:?} {engine:?}: primal {} dual {} gap {}",
                r.primal,
                r.dual,
                r.gap
            );
        }
    }
}

#[test]
fn primal_matches_clarabel_on_eq1() {
    let (x, y) = toy(16, 2, 4);
    let rows: Vec<Vec<f64>> = (0..16)
        .map(|i| (0..2).map(|k| x.row(i).get(k)).collect())
        .collect();
    for (lambda, nu, theta) in [(1.0, 0.4, 0.2), (1000.0, 0.2, 0.8)] {
        let p = OdmParams::new()
            .lambda(lambda)
            .nu(nu)
            .theta(theta)
            .kernel(kp(KernelKind::Linear, 1.0))
            .engine(OdmSolver::Smo)
            .tol(1e-10)
            .check()
            .unwrap();
        let sol = odm::solve(&p, &x, &y, None, &mut NoObserver).unwrap();
        let reference = clarabel_primal(&rows, &y, lambda, nu, theta);
        assert!(
            (sol.report.primal - reference).abs() <= 1e-6 * (1.0 + reference),
            "primal {} vs clarabel {reference}",
            sol.report.primal
        );
        // The KKT maps: xi = 2c alpha1 is the hinge deviation at the optimum.
        let m = y.len();
        let c = OdmConsts::new(lambda, nu, theta, m).c;
        for i in 0..m {
            let yf = f64::from(y[i]) * sol.f[i];
            let xi = (1.0 - theta - yf).max(0.0);
            // Solved to tol 1e-10 on the dual's gradient, which lambda scales: the largest
            // deviation is about 4e-8 at lambda 1 and 1.4e-5 at lambda 1000.
            let dev = (xi - 2.0 * c * sol.alpha[i]).abs();
            assert!(
                dev < 1e-7 * lambda.max(1.0) * (1.0 + xi),
                "lambda {lambda}: xi {xi}, 2c alpha {}",
                2.0 * c * sol.alpha[i]
            );
        }
    }
}

#[test]
fn gradient_matches_finite_differences() {
    let (x, y) = toy(9, 2, 7);
    let kernel = KernelSpec::Rbf { gamma: 0.9 };
    let m = y.len();
    let consts = OdmConsts::new(3.0, 0.6, 0.3, m);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let alpha: Vec<f64> = (0..2 * m).map(|_| rng.gen_range(0.0..0.5)).collect();
    let g_of = |a: &[f64]| {
        let z: Vec<f64> = (0..m)
            .map(|i| f64::from(y[i]) * (a[i] - a[m + i]))
            .collect();
        let kz = odm::kernel_times(&x, kernel, &z);
        let zkz: f64 = z.iter().zip(&kz).map(|(p, q)| p * q).sum();
        (consts.dual_value(a, zkz), kz)
    };
    let (_, kz) = g_of(&alpha);
    let yf: Vec<f64> = (0..m).map(|i| f64::from(y[i]) * kz[i]).collect();
    let mut grad = vec![0.0; 2 * m];
    consts.dual_gradient(&alpha, &yf, &mut grad);
    let h = 1e-6;
    for a in 0..2 * m {
        let mut ap = alpha.clone();
        ap[a] += h;
        let mut am = alpha.clone();
        am[a] -= h;
        let fd = (g_of(&ap).0 - g_of(&am).0) / (2.0 * h);
        assert!(
            (fd - grad[a]).abs() < 1e-6 * (1.0 + fd.abs()),
            "coordinate {a}: analytic {} vs finite difference {fd}",
            grad[a]
        );
    }
}

#[test]
fn smo_and_dcd_agree_and_weights_zero_drop_samples() {
    let (x, y) = toy(40, 4, 11);
    let mk = |e| {
        OdmParams::new()
            .lambda(10.0)
            .kernel(kp(KernelKind::Linear, 1.0))
            .engine(e)
            .tol(1e-8)
            .check()
            .unwrap()
    };
    let a = odm::solve(&mk(OdmSolver::Smo), &x, &y, None, &mut NoObserver).unwrap();
    let b = odm::solve(&mk(OdmSolver::Dcd), &x, &y, None, &mut NoObserver).unwrap();
    assert!((a.report.primal - b.report.primal).abs() < 1e-7 * (1.0 + a.report.primal));
    for (u, v) in a.f.iter().zip(&b.f) {
        assert!((u - v).abs() < 1e-4);
    }
    // A zero-weight sample contributes nothing: its multipliers stay 0.
    let mut w = vec![1.0; 40];
    w[3] = 0.0;
    let c = odm::solve(&mk(OdmSolver::Smo), &x, &y, Some(&w), &mut NoObserver).unwrap();
    assert_eq!(c.alpha[3], 0.0);
    assert_eq!(c.alpha[43], 0.0);
    assert!(c.report.gap.abs() < 1e-6 * (1.0 + c.report.primal));
}

fn heart() -> Dataset {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/heart_scale");
    read_libsvm_path(&p, &ReadOptions::default()).unwrap()
}

#[test]
fn model_round_trips_and_cross_validation_is_sensible() {
    let data = heart();
    let p = OdmParams::new()
        .lambda(10.0)
        .nu(0.5)
        .theta(0.2)
        .kernel(kp(KernelKind::Rbf, 0.05))
        .check()
        .unwrap();
    let fit = odm::fit(&p, &data, &mut Control::default()).unwrap();
    let (model, report) = (fit.model, fit.report);
    assert_eq!(report.status(), Status::Converged);
    assert!(report.gap.abs() <= 1e-3 * (1.0 + report.primal.abs()));
    let pred = model.predict(&data.x).unwrap();
    let acc = pred.iter().zip(&data.y).filter(|(a, b)| a == b).count() as f64 / 270.0;
    assert!(acc > 0.8, "training accuracy {acc}");
    let mut buf = Vec::new();
    write_model(&mut buf, &model).unwrap();
    let back = read_model_bytes(&buf).unwrap();
    assert_eq!(back.predict(&data.x).unwrap(), pred);
    // Decision values equal sum_i y_i d_i K(x_i, x) (no bias), with d = alpha1 - alpha2 from
    // the dual solution and the RBF kernel recomputed here; also the solver's own f(x_i).
    let dv = model.decision_values(&data.x);
    assert_eq!(model.rho, vec![0.0]);
    assert!(dv.iter().all(|d| d.len() == 1));
    let m = data.len();
    let y: Vec<i8> = data
        .y
        .iter()
        .map(|&v| if v == data.y[0] { 1 } else { -1 })
        .collect();
    let sol = odm::solve(&p, &data.x, &y, None, &mut NoObserver).unwrap();
    let rows: Vec<Vec<f64>> = (0..m)
        .map(|i| {
            let mut r = vec![0.0; data.n_features()];
            for (k, v) in data.x.row(i).iter() {
                r[k] = v;
            }
            r
        })
        .collect();
    let rbf = |a: &[f64], b: &[f64]| {
        let d2: f64 = a.iter().zip(b).map(|(u, v)| (u - v) * (u - v)).sum();
        (-0.05 * d2).exp()
    };
    let mut nonzero = 0;
    for (j, d) in dv.iter().enumerate() {
        let (mut sum, mut mag) = (0.0, 0.0);
        for i in 0..m {
            let t = f64::from(y[i]) * (sol.alpha[i] - sol.alpha[m + i]) * rbf(&rows[i], &rows[j]);
            sum += t;
            mag += t.abs();
        }
        assert!(
            (d[0] - sum).abs() <= 1e-9 * (1.0 + mag),
            "x_{j}: model {} vs sum {sum}",
            d[0]
        );
        assert!(
            (sol.f[j] - sum).abs() <= 1e-6 * (1.0 + mag),
            "x_{j}: f {} vs {sum}",
            sol.f[j]
        );
        nonzero += usize::from(sum != 0.0);
    }
    assert!(nonzero > m / 2, "{nonzero} nonzero decision values");

    let cv = odm::cross_validation(&p, &data, 5, &mut Control::default()).unwrap();
    assert_eq!(
        cv,
        odm::cross_validation(&p, &data, 5, &mut Control::default()).unwrap()
    );
    let cva = cv
        .predictions
        .iter()
        .zip(&data.y)
        .filter(|(a, b)| a == b)
        .count() as f64
        / 270.0;
    assert!(cva > 0.75, "5-fold accuracy {cva}");
}

#[test]
fn rejects_non_binary_data() {
    let x = Features::Dense(DenseMatrix::new(3, 1, vec![0.0, 1.0, 2.0]).unwrap());
    let one = Dataset::new(x.clone(), vec![1.0; 3], None).unwrap();
    let three = Dataset::new(x, vec![1.0, 2.0, 3.0], None).unwrap();
    let p = OdmParams::new().check().unwrap();
    assert!(odm::fit(&p, &one, &mut Control::default()).is_err());
    assert!(odm::fit(&p, &three, &mut Control::default()).is_err());
}
