//! SMO statuses (iteration limit, observer stop), warm starts, and the storage paths of the
//! Q matrices (dense, sparse, precomputed) agreeing on the same problem.

use marginkit::kernel::qmatrix::{kernel_value, QMatrix, SvcQ};
use marginkit::solver::kkt::check_with;
use marginkit::solver::smo::solve;
use marginkit::solver::{
    BoxQp, Equality, IterStats, NoObserver, Observer, Shrinking, SolveInfo, SolverSettings, Status,
};
use marginkit::{CsrMatrix, DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

fn data(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut g = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c: i8 = if i % 3 == 0 { -1 } else { 1 };
        for k in 0..d {
            // About half the entries are zero, so the sparse path is exercised.
            let z: f64 = if g.gen_bool(0.5) {
                0.0
            } else {
                g.gen_range(-1.0..1.0) + 0.3 * f64::from(c) * (k % 2) as f64
            };
            v.push(z);
        }
        y.push(c);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

fn to_sparse(x: &Features) -> Features {
    let Features::Dense(m) = x else {
        unreachable!()
    };
    let (mut indptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
    for i in 0..m.n_rows() {
        for (k, &v) in m.row(i).iter().enumerate() {
            if v != 0.0 {
                idx.push(k as u32);
                val.push(v);
            }
        }
        indptr.push(idx.len());
    }
    Features::Sparse(CsrMatrix::new(m.n_cols(), indptr, idx, val).unwrap())
}

fn run(
    q: &mut impl QMatrix,
    y: &[i8],
    a: &mut [f64],
    s: &SolverSettings,
    obs: &mut dyn Observer,
) -> SolveInfo {
    let n = y.len();
    let p = vec![-1.0; n];
    let upper = vec![1.5; n];
    let qp = BoxQp {
        p: &p,
        y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    solve(q, &qp, a, s, obs).unwrap()
}

fn tight() -> SolverSettings {
    SolverSettings {
        tol: 1e-8,
        ..SolverSettings::default()
    }
}

#[test]
fn dense_sparse_and_precomputed_agree() {
    let (x, y) = data(1, 150, 6);
    let n = y.len();
    let xs = to_sparse(&x);
    for k in [
        KernelSpec::Rbf { gamma: 0.6 },
        KernelSpec::Poly {
            gamma: 0.3,
            coef0: 0.5,
            degree: 3,
        },
        KernelSpec::Sigmoid {
            gamma: 0.05,
            coef0: 0.0,
        },
    ] {
        let mut a_dense = vec![0.0; n];
        let i_dense = run(
            &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
            &y,
            &mut a_dense,
            &tight(),
            &mut NoObserver,
        );
        let mut a_sparse = vec![0.0; n];
        let i_sparse = run(
            &mut SvcQ::new(&xs, k, &y, 1 << 20).unwrap(),
            &y,
            &mut a_sparse,
            &tight(),
            &mut NoObserver,
        );
        // Precomputed: column 0 = serial number, column j + 1 = K(., sample j).
        // Storage row r holds sample n-1-r; its serial (sample + 1) differs from its position.
        let mut pre = vec![0.0; n * (n + 1)];
        for r in 0..n {
            let i = n - 1 - r;
            pre[r * (n + 1)] = (i + 1) as f64;
            for j in 0..n {
                pre[r * (n + 1) + j + 1] = kernel_value(&x, k, i, j);
            }
        }
        let xp = Features::Dense(DenseMatrix::new(n, n + 1, pre).unwrap());
        let y_rev: Vec<i8> = y.iter().rev().copied().collect();
        let mut a_rev = vec![0.0; n];
        let i_pre = run(
            &mut SvcQ::new(&xp, KernelSpec::Precomputed, &y_rev, 1 << 20).unwrap(),
            &y_rev,
            &mut a_rev,
            &tight(),
            &mut NoObserver,
        );
        let a_pre: Vec<f64> = a_rev.iter().rev().copied().collect();
        for info in [&i_sparse, &i_pre] {
            assert_eq!(info.status, Status::Converged);
            assert!(
                (info.objective - i_dense.objective).abs() <= 1e-6 * i_dense.objective.abs(),
                "{k:?}: {} vs {}",
                info.objective,
                i_dense.objective
            );
        }
        let qf = |i: usize, j: usize| f64::from(y[i] * y[j]) * kernel_value(&x, k, i, j);
        let p = vec![-1.0; n];
        let upper = vec![1.5; n];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        for a in [&a_dense, &a_sparse, &a_pre] {
            // f64 kernel vs the solver's f32 columns: allow the storage rounding.
            let rep = check_with(qf, &qp, a);
            assert!(rep.max_violation <= 1e-4, "{k:?} {rep:?}");
        }
    }
}

#[test]
fn bad_precomputed_serials_are_rejected() {
    let x = Features::Dense(DenseMatrix::new(2, 3, vec![1.0, 1.0, 0.0, 2.5, 0.0, 1.0]).unwrap());
    assert!(SvcQ::new(&x, KernelSpec::Precomputed, &[1, -1], 0).is_err());
    let x = Features::Dense(DenseMatrix::new(2, 3, vec![1.0, 1.0, 0.0, 3.0, 0.0, 1.0]).unwrap());
    assert!(SvcQ::new(&x, KernelSpec::Precomputed, &[1, -1], 0).is_err());
    assert!(SvcQ::new(&x, KernelSpec::Linear, &[1], 0).is_err());
}

struct StopAfter(u64);

impl Observer for StopAfter {
    fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
        assert!(s.active > 0);
        if s.iterations >= self.0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

#[test]
fn statuses_and_warm_start() {
    let (x, y) = data(2, 600, 5);
    let n = y.len();
    let k = KernelSpec::Rbf { gamma: 2.0 };
    let check_feasible = |a: &[f64]| {
        let s: f64 = (0..n).map(|i| f64::from(y[i]) * a[i]).sum();
        assert!(s.abs() < 1e-9);
        assert!(a.iter().all(|&v| (0.0..=1.5).contains(&v)));
    };
    // Iteration limit.
    let mut a = vec![0.0; n];
    let lim = SolverSettings {
        max_iter: Some(7),
        ..tight()
    };
    let info = run(
        &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
        &y,
        &mut a,
        &lim,
        &mut NoObserver,
    );
    assert_eq!(info.status, Status::MaxIterations);
    assert_eq!(info.iterations, 7);
    assert!(info.max_violation > 1e-8);
    check_feasible(&a);
    // Observer stop (reports come every 1000 iterations).
    let mut a = vec![0.0; n];
    let info = run(
        &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
        &y,
        &mut a,
        &SolverSettings {
            shrinking: Shrinking::Off,
            ..tight()
        },
        &mut StopAfter(1000),
    );
    assert_eq!(info.status, Status::Interrupted);
    assert_eq!(info.iterations, 1000);
    check_feasible(&a);
    // Warm start from the interrupted point reaches the same optimum as a cold start.
    let warm = run(
        &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
        &y,
        &mut a,
        &tight(),
        &mut NoObserver,
    );
    let mut c = vec![0.0; n];
    let cold = run(
        &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
        &y,
        &mut c,
        &tight(),
        &mut NoObserver,
    );
    assert_eq!(warm.status, Status::Converged);
    assert!((warm.objective - cold.objective).abs() <= 1e-7 * cold.objective.abs());
    // Restarting at the optimum needs (almost) nothing.
    let again = run(
        &mut SvcQ::new(&x, k, &y, 1 << 20).unwrap(),
        &y,
        &mut c,
        &tight(),
        &mut NoObserver,
    );
    assert!(again.iterations <= 2, "{again:?}");
    assert!((again.objective - cold.objective).abs() <= 1e-9 * cold.objective.abs());
}

mod props {
    use marginkit::kernel::qmatrix::DenseQ;
    use marginkit::solver::kkt::check_dense;
    use marginkit::solver::smo::solve;
    use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings, Status};
    use proptest::prelude::*;

    /// A small QP: PSD `Q = F F'` (entries exactly representable in f32), p, y, bounds.
    fn qp_strategy() -> impl Strategy<Value = (usize, Vec<f64>, Vec<f64>, Vec<i8>, Vec<f64>)> {
        (2usize..12).prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(-4i32..=4, n * 3),
                prop::collection::vec(-8i32..=4, n),
                prop::collection::vec(prop::bool::ANY, n),
                prop::collection::vec(1i32..=8, n),
            )
                .prop_map(|(n, f, p, y, u)| {
                    let mut q = vec![0.0; n * n];
                    for i in 0..n {
                        for j in 0..n {
                            q[i * n + j] = (0..3)
                                .map(|k| f64::from(f[i * 3 + k] * f[j * 3 + k]))
                                .sum::<f64>()
                                / 16.0;
                        }
                    }
                    (
                        n,
                        q,
                        p.iter().map(|&v| f64::from(v) / 4.0).collect(),
                        y.iter().map(|&b| if b { 1 } else { -1 }).collect(),
                        u.iter().map(|&v| f64::from(v) / 4.0).collect(),
                    )
                })
        })
    }

    fn solve_dense(n: usize, q: &[f64], qp: &BoxQp<'_>, shrinking: Shrinking) -> (f64, Vec<f64>) {
        let mut dq = DenseQ::new(n, q).unwrap();
        let mut a = vec![0.0; n];
        let s = SolverSettings {
            tol: 1e-10,
            shrinking,
            ..SolverSettings::default()
        };
        let info = solve(&mut dq, qp, &mut a, &s, &mut NoObserver).unwrap();
        assert_eq!(info.status, Status::Converged);
        (info.objective, a)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn permutation_and_shrinking_invariance((n, q, p, y, u) in qp_strategy(), eq in prop::bool::ANY, rot in 0usize..12) {
            let equality = if eq { Equality::Sum { delta: 0.0 } } else { Equality::None };
            let qp = BoxQp { p: &p, y: &y, upper: &u, equality, fixed: None };
            let (f_on, a) = solve_dense(n, &q, &qp, Shrinking::On);
            let (f_off, _) = solve_dense(n, &q, &qp, Shrinking::Off);
            let scale = 1.0 + f_on.abs();
            prop_assert!((f_on - f_off).abs() <= 1e-8 * scale);
            let rep = check_dense(&q, &qp, &a);
            prop_assert!(rep.max_violation <= 1e-9 && rep.gap <= 1e-7 * scale, "{:?}", rep);
            // Rotate the variables.
            let perm: Vec<usize> = (0..n).map(|t| (t + rot) % n).collect();
            let qr: Vec<f64> = (0..n * n).map(|k| q[perm[k / n] * n + perm[k % n]]).collect();
            let pr: Vec<f64> = perm.iter().map(|&i| p[i]).collect();
            let yr: Vec<i8> = perm.iter().map(|&i| y[i]).collect();
            let ur: Vec<f64> = perm.iter().map(|&i| u[i]).collect();
            let qpr = BoxQp { p: &pr, y: &yr, upper: &ur, equality, fixed: None };
            let (f_rot, _) = solve_dense(n, &qr, &qpr, Shrinking::On);
            prop_assert!((f_rot - f_on).abs() <= 1e-8 * scale);
        }
    }
}
