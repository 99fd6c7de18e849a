//! A Q matrix reused across solves (warm starts along C, as `svm::grid` does) must behave
//! exactly like a fresh one: the solver permutes `q` while it runs and must hand it back in
//! the caller's order, with cached columns still correct.

use marginkit::kernel::qmatrix::{kernel_value, OneClassQ, QMatrix, SvcQ};
use marginkit::solver::kkt::check_with;
use marginkit::solver::smo::{solve, Smo};
use marginkit::solver::{
    BoxQp, Equality, NoObserver, Shrinking, SolveInfo, SolverSettings, Status, VarFix,
};
use marginkit::{DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn blobs(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 3 == 0 { -1i8 } else { 1 };
        for _ in 0..d {
            let z: f64 = (0..4).map(|_| g.gen_range(-1.0..1.0)).sum::<f64>() * 0.9;
            v.push(z + 0.4 * f64::from(c));
        }
        y.push(c);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

fn settings() -> SolverSettings {
    SolverSettings {
        tol: 1e-6,
        shrinking: Shrinking::On,
        max_iter: None,
        time_limit: None,
    }
}

/// The problem with costs `c`, every fifth variable fixed at zero when `fix` (so the solver
/// also permutes fixed variables to the end).
fn qp_parts(y: &[i8], c: f64, fix: bool) -> (Vec<f64>, Vec<f64>, Vec<VarFix>) {
    let n = y.len();
    let fixed = (0..n)
        .map(|i| {
            if fix && i % 5 == 4 {
                VarFix::AtZero
            } else {
                VarFix::Free
            }
        })
        .collect();
    (vec![-1.0; n], vec![c; n], fixed)
}

fn solve_svc(
    q: &mut SvcQ<'_>,
    y: &[i8],
    c: f64,
    fix: bool,
    alpha: &mut [f64],
) -> (SolveInfo, Vec<f64>) {
    let (p, upper, fixed) = qp_parts(y, c, fix);
    let qp = BoxQp {
        p: &p,
        y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: Some(&fixed),
    };
    let info = solve(q, &qp, alpha, &settings(), &mut NoObserver).unwrap();
    (info, upper)
}

#[test]
fn second_solve_on_the_same_q_equals_a_fresh_q() {
    let (x, y) = blobs(7, 400, 3);
    let n = y.len();
    let k = KernelSpec::Rbf { gamma: 0.5 };
    // Cache sizes: the minimum (2 columns: evictions, partial columns dropped on swaps),
    // a few dozen columns, everything.
    for cache in [0usize, 40 * 4 * n, 16 << 20] {
        for fix in [false, true] {
            let mut q = SvcQ::new(&x, k, &y, cache).unwrap();
            let mut alpha = vec![0.0; n];
            let (i1, _) = solve_svc(&mut q, &y, 1.0, fix, &mut alpha);
            assert_eq!(i1.status, Status::Converged);
            // Warm start along C: scale alpha with C (stays feasible, y'a = 0 kept).
            for a in alpha.iter_mut() {
                *a *= 2.5;
            }
            let start = alpha.clone();
            let (i2, upper) = solve_svc(&mut q, &y, 2.5, fix, &mut alpha);
            let mut fresh = SvcQ::new(&x, k, &y, cache).unwrap();
            let mut alpha_f = start;
            let (i_f, _) = solve_svc(&mut fresh, &y, 2.5, fix, &mut alpha_f);
            assert_eq!(i2, i_f, "cache {cache}, fix {fix}");
            assert_eq!(alpha, alpha_f, "cache {cache}, fix {fix}");
            // q is back in the caller's order: every column equals the fresh matrix's.
            for i in (0..n).step_by(37) {
                let want = fresh.column(i, n).to_vec();
                assert_eq!(q.column(i, n), &want[..], "column {i}");
            }
            assert_eq!(q.diag(), fresh.diag());
            // And the point is optimal for the second problem (independent check).
            let (p, _, fixed) = qp_parts(&y, 2.5, fix);
            let qp = BoxQp {
                p: &p,
                y: &y,
                upper: &upper,
                equality: Equality::Sum { delta: 0.0 },
                fixed: Some(&fixed),
            };
            let qv = |i: usize, j: usize| {
                f64::from(y[i] * y[j]) * f64::from(kernel_value(&x, k, i, j) as f32)
            };
            let rep = check_with(qv, &qp, &alpha);
            assert!(rep.max_violation <= 1.01e-6, "{rep:?}");
            assert!(rep.bound_violation == 0.0 && rep.equality_residual <= 1e-10);
            assert!((rep.objective - i2.objective).abs() <= 1e-9 * (1.0 + rep.objective.abs()));
        }
    }
}

#[test]
fn nu_solver_also_restores_the_order() {
    // One-class dual: sum a = nu l, 0 <= a <= 1, solved by the nu driver with y = +1.
    let (x, _) = blobs(9, 300, 2);
    let n = x.n_rows();
    let k = KernelSpec::Rbf { gamma: 1.0 };
    let y = vec![1i8; n];
    let p = vec![0.0; n];
    let upper = vec![1.0; n];
    let nu_l = 0.2 * n as f64;
    let start: Vec<f64> = (0..n).map(|i| (nu_l - i as f64).clamp(0.0, 1.0)).collect();
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: nu_l },
        fixed: None,
    };
    let mut q = OneClassQ::new(&x, k, 30 * 4 * n).unwrap();
    let mut a1 = start.clone();
    let st = settings();
    let nu = Smo::new(&st).nu(true);
    let r1 = nu
        .solve(&mut q, &qp, &mut a1, &mut NoObserver)
        .unwrap()
        .info;
    // Same problem again on the reused q, from the same start.
    let mut a2 = start;
    let r2 = nu
        .solve(&mut q, &qp, &mut a2, &mut NoObserver)
        .unwrap()
        .info;
    assert_eq!(r1, r2);
    assert_eq!(a1, a2);
}
