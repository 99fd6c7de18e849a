//! Clarabel's optimum of a [`BoxQp`] with a dense Q: the independent oracle of the SMO and block
//! engines' tests.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
    ZeroConeT,
};
use marginkit::solver::{BoxQp, Equality, VarFix};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Clarabel's optimum of the box QP (dense Q), or None if it did not solve.
pub fn clarabel_opt(q: &[f64], qp: &BoxQp<'_>) -> Option<(f64, Vec<f64>)> {
    clarabel_opt_eq(q, qp, &[])
}

/// As [`clarabel_opt`] with extra equality rows `(coefficients, rhs)`.
pub fn clarabel_opt_eq(
    q: &[f64],
    qp: &BoxQp<'_>,
    extra: &[(Vec<f64>, f64)],
) -> Option<(f64, Vec<f64>)> {
    let n = qp.p.len();
    // Upper triangle of Q in CSC.
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for j in 0..n {
        for i in 0..=j {
            let v = q[i * n + j];
            if v != 0.0 {
                rowval.push(i);
                nzval.push(v);
            }
        }
        colptr.push(rowval.len());
    }
    let p_mat = CscMatrix::new(n, n, colptr, rowval, nzval);
    // Constraint rows: [equality], fixed equalities, -a <= 0, a <= u (finite u).
    let mut rows: Vec<(Vec<(usize, f64)>, f64)> = Vec::new();
    let mut n_zero = 0;
    if let Equality::Sum { delta } = qp.equality {
        rows.push(((0..n).map(|i| (i, f64::from(qp.y[i]))).collect(), delta));
        n_zero += 1;
    }
    for (coef, rhs) in extra {
        rows.push((coef.iter().copied().enumerate().collect(), *rhs));
        n_zero += 1;
    }
    let fixed = |i: usize| qp.fixed.map_or(VarFix::Free, |f| f[i]);
    for i in 0..n {
        match fixed(i) {
            VarFix::AtZero => rows.push((vec![(i, 1.0)], 0.0)),
            VarFix::AtUpper => rows.push((vec![(i, 1.0)], qp.upper[i])),
            VarFix::Free => continue,
        }
        n_zero += 1;
    }
    let mut n_nonneg = 0;
    for i in 0..n {
        if fixed(i) == VarFix::Free {
            rows.push((vec![(i, -1.0)], 0.0));
            n_nonneg += 1;
            if qp.upper[i].is_finite() {
                rows.push((vec![(i, 1.0)], qp.upper[i]));
                n_nonneg += 1;
            }
        }
    }
    let m = rows.len();
    let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
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
    let a_mat = CscMatrix::new(m, n, colptr, rowval, nzval);
    let b: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let mut cones: Vec<SupportedConeT<f64>> = Vec::new();
    if n_zero > 0 {
        cones.push(ZeroConeT(n_zero));
    }
    cones.push(NonnegativeConeT(n_nonneg));
    let set = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-10,
        tol_gap_rel: 1e-10,
        tol_feas: 1e-10,
        ..DefaultSettings::default()
    };
    let mut s = DefaultSolver::new(&p_mat, qp.p, &a_mat, &b, &cones, set).ok()?;
    s.solve();
    match s.solution.status {
        SolverStatus::Solved | SolverStatus::AlmostSolved => {
            Some((s.solution.obj_val, s.solution.x.clone()))
        }
        _ => None,
    }
}

/// A PSD matrix `F F' (+ ridge)`, row-major, with rank `r`.
pub fn random_psd(rng: &mut Xoshiro256PlusPlus, n: usize, r: usize, ridge: f64) -> Vec<f64> {
    let f: Vec<f64> = (0..n * r).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let mut s = 0.0;
            for k in 0..r {
                s += f[i * r + k] * f[j * r + k];
            }
            q[i * n + j] = s + if i == j { ridge } else { 0.0 };
        }
    }
    q
}
