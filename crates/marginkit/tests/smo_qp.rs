//! SMO solver oracles: clarabel on small random QPs, the independent KKT checker on every
//! solution, shrinking/cache/thread/permutation invariances, duplicated sample == doubled bound,
//! SVR and one-class duals, and a real data set (heart_scale).
#![allow(clippy::needless_range_loop)]

mod common;
use common::qp_oracle::{clarabel_opt, clarabel_opt_eq, random_psd};
use marginkit::kernel::qmatrix::{kernel_value, DenseQ, OneClassQ, QMatrix, SvcQ, SvrQ};
use marginkit::solver::kkt::{check_dense, KktReport};
use marginkit::solver::smo::{solve, Smo};
use marginkit::solver::{
    BoxQp, Equality, NoObserver, Shrinking, SolveInfo, SolverSettings, Status, VarFix,
};
use marginkit::{DenseMatrix, Features, KernelSpec};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn rng(seed: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

fn settings(tol: f64, shrinking: Shrinking) -> SolverSettings {
    SolverSettings {
        tol,
        shrinking,
        max_iter: None,
        time_limit: None,
    }
}

/// Row-major dense matrix rounded to f32 (the precision the solver's columns have).
fn round32(q: &[f64]) -> Vec<f64> {
    q.iter().map(|&v| f64::from(v as f32)).collect()
}

/// Runs SMO on a dense Q (stored as f32 by DenseQ), checks it against the KKT checker (on the
/// f32-rounded Q) and clarabel; returns the info, the solution and the report.
fn solve_and_check(
    q: &[f64],
    qp: &BoxQp<'_>,
    start: &[f64],
    s: &SolverSettings,
) -> (SolveInfo, Vec<f64>, KktReport) {
    let n = qp.p.len();
    let q32 = round32(q);
    let mut dq = DenseQ::new(n, q).unwrap();
    let mut a = start.to_vec();
    let info = solve(&mut dq, qp, &mut a, s, &mut NoObserver).unwrap();
    assert_eq!(info.status, Status::Converged);
    let rep = check_dense(&q32, qp, &a);
    let scale = 1.0 + info.objective.abs();
    assert!(rep.bound_violation <= 1e-12, "{rep:?}");
    assert!(rep.equality_residual <= 1e-9 * scale, "{rep:?}");
    assert!(
        rep.max_violation <= s.tol * 1.01 + 1e-9,
        "{rep:?} tol {}",
        s.tol
    );
    assert!(
        (rep.objective - info.objective).abs() <= 1e-9 * scale,
        "{rep:?} vs {info:?}"
    );
    if s.tol <= 1e-7 {
        assert!(rep.gap <= 1e-5 * scale, "gap {rep:?}");
        assert!(rep.dual_residual <= 1e-8, "dual residual {rep:?}");
        let (opt, _) = clarabel_opt(&q32, qp).expect("clarabel solves");
        assert!(
            (opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()),
            "clarabel {opt} vs smo {}",
            info.objective
        );
    }
    (info, a, rep)
}

#[test]
fn random_qps_match_clarabel() {
    let mut g = rng(7);
    for case in 0..60 {
        let n = g.gen_range(2..40);
        let r = g.gen_range(1..n + 3);
        let with_eq = case % 2 == 0;
        let ridge = if case % 3 == 0 { 0.1 } else { 0.0 };
        let q = random_psd(&mut g, n, r, ridge);
        let p: Vec<f64> = (0..n).map(|_| g.gen_range(-2.0..1.0)).collect();
        let y: Vec<i8> = (0..n)
            .map(|_| if g.gen_bool(0.5) { 1 } else { -1 })
            .collect();
        let upper: Vec<f64> = (0..n)
            .map(|_| {
                if ridge > 0.0 && g.gen_bool(0.2) {
                    f64::INFINITY
                } else if g.gen_bool(0.1) {
                    0.0
                } else {
                    g.gen_range(0.1..3.0)
                }
            })
            .collect();
        let fixed: Vec<VarFix> = (0..n)
            .map(|_| match g.gen_range(0..10) {
                0 => VarFix::AtZero,
                1 => VarFix::AtUpper,
                _ => VarFix::Free,
            })
            .collect();
        let fixed: Vec<VarFix> = fixed
            .iter()
            .zip(&upper)
            .map(|(&f, &u)| {
                if f == VarFix::AtUpper && !u.is_finite() {
                    VarFix::AtZero
                } else {
                    f
                }
            })
            .collect();
        let use_fixed = case % 4 >= 2;
        // Warm start: random point in the box, fixed variables at their values.
        let warm = case % 5 != 0;
        let start: Vec<f64> = (0..n)
            .map(|i| {
                let u = upper[i];
                match (use_fixed, fixed[i]) {
                    (true, VarFix::AtZero) => 0.0,
                    (true, VarFix::AtUpper) => u,
                    _ if warm => {
                        if u.is_finite() {
                            g.gen_range(0.0..=u)
                        } else {
                            g.gen_range(0.0..2.0)
                        }
                    }
                    _ => 0.0,
                }
            })
            .collect();
        let delta: f64 = (0..n).map(|i| f64::from(y[i]) * start[i]).sum();
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: if with_eq {
                Equality::Sum { delta }
            } else {
                Equality::None
            },
            fixed: if use_fixed { Some(&fixed) } else { None },
        };
        let (on, a_on, _) = solve_and_check(&q, &qp, &start, &settings(1e-9, Shrinking::On));
        let (off, _, _) = solve_and_check(&q, &qp, &start, &settings(1e-9, Shrinking::Off));
        assert!(
            (on.objective - off.objective).abs() <= 1e-8 * (1.0 + on.objective.abs()),
            "case {case}: shrinking changes the optimum"
        );
        if use_fixed {
            for i in 0..n {
                match fixed[i] {
                    VarFix::AtZero => assert_eq!(a_on[i], 0.0),
                    VarFix::AtUpper => assert_eq!(a_on[i], upper[i]),
                    VarFix::Free => {}
                }
            }
        }
        // A loose tolerance still satisfies its own stopping rule.
        solve_and_check(&q, &qp, &start, &settings(1e-2, Shrinking::On));
    }
}

#[test]
fn infeasible_starts_are_errors() {
    let q = [1.0, 0.0, 0.0, 1.0];
    let mut dq = DenseQ::new(2, &q).unwrap();
    let qp = BoxQp {
        p: &[-1.0, -1.0],
        y: &[1, -1],
        upper: &[1.0, 1.0],
        equality: Equality::Sum { delta: 0.5 },
        fixed: None,
    };
    let mut a = vec![0.0, 0.0];
    assert!(solve(
        &mut dq,
        &qp,
        &mut a,
        &SolverSettings::default(),
        &mut NoObserver
    )
    .is_err());
    let mut a = vec![2.0, 1.5];
    assert!(solve(
        &mut dq,
        &qp,
        &mut a,
        &SolverSettings::default(),
        &mut NoObserver
    )
    .is_err());
    let mut a = vec![0.0];
    assert!(solve(
        &mut dq,
        &qp,
        &mut a,
        &SolverSettings::default(),
        &mut NoObserver
    )
    .is_err());
}

/// Two overlapping Gaussian classes in `d` dimensions.
fn blobs(seed: u64, n: usize, d: usize) -> (Features, Vec<i8>) {
    let mut g = rng(seed);
    let mut v = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = if i % 2 == 0 { 1i8 } else { -1 };
        for _ in 0..d {
            // Sum of uniforms: roughly Gaussian.
            let z: f64 = (0..4).map(|_| g.gen_range(-1.0..1.0)).sum::<f64>() * 0.9;
            v.push(z + 0.5 * f64::from(c));
        }
        y.push(c);
    }
    (Features::Dense(DenseMatrix::new(n, d, v).unwrap()), y)
}

fn svc_dense_q(x: &Features, y: &[i8], k: KernelSpec) -> Vec<f64> {
    let n = y.len();
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            q[i * n + j] = f64::from(y[i] * y[j]) * kernel_value(x, k, i, j);
        }
    }
    q
}

fn svc_solve(
    x: &Features,
    y: &[i8],
    k: KernelSpec,
    upper: &[f64],
    cache: usize,
    s: &SolverSettings,
) -> (SolveInfo, Vec<f64>) {
    let n = y.len();
    let mut q = SvcQ::new(x, k, y, cache).unwrap();
    let p = vec![-1.0; n];
    let qp = BoxQp {
        p: &p,
        y,
        upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let mut a = vec![0.0; n];
    let info = solve(&mut q, &qp, &mut a, s, &mut NoObserver).unwrap();
    (info, a)
}

#[test]
fn svc_kernel_dual_matches_clarabel_and_is_cache_independent() {
    let (x, y) = blobs(3, 120, 4);
    let n = y.len();
    for k in [
        KernelSpec::Rbf { gamma: 0.3 },
        KernelSpec::Linear,
        KernelSpec::Poly {
            gamma: 0.2,
            coef0: 1.0,
            degree: 2,
        },
    ] {
        let upper = vec![1.0; n];
        let s = settings(1e-8, Shrinking::On);
        let (info, a) = svc_solve(&x, &y, k, &upper, 100 << 20, &s);
        let (info2, a2) = svc_solve(&x, &y, k, &upper, 0, &s);
        assert_eq!(a, a2, "cache size changed the iterates");
        assert_eq!(info, info2);
        let q = round32(&svc_dense_q(&x, &y, k));
        let p = vec![-1.0; n];
        let qp = BoxQp {
            p: &p,
            y: &y,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let rep = check_dense(&q, &qp, &a);
        assert!(rep.max_violation <= 1.01e-8, "{rep:?}");
        assert!(rep.gap <= 1e-5 * (1.0 + info.objective.abs()), "{rep:?}");
        // rho: -b from the checker when there are free variables.
        assert!(
            (info.rho + rep.b).abs() <= 1e-6,
            "rho {} b {}",
            info.rho,
            rep.b
        );
        let (opt, _) = clarabel_opt(&q, &qp).unwrap();
        assert!((opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()));
        // No bias: Equality::None on the same Q.
        let qp0 = BoxQp {
            equality: Equality::None,
            ..qp
        };
        let mut sq = SvcQ::new(&x, k, &y, 1 << 20).unwrap();
        let mut a0 = vec![0.0; n];
        let i0 = solve(&mut sq, &qp0, &mut a0, &s, &mut NoObserver).unwrap();
        assert_eq!(i0.status, Status::Converged);
        assert_eq!(i0.rho, 0.0);
        let rep0 = check_dense(&q, &qp0, &a0);
        assert!(rep0.max_violation <= 1.01e-8, "{rep0:?}");
        let (opt0, _) = clarabel_opt(&q, &qp0).unwrap();
        assert!((opt0 - i0.objective).abs() <= 1e-6 * (1.0 + opt0.abs()));
    }
}

#[test]
fn thread_count_does_not_change_results() {
    // Long enough columns for the parallel fill.
    let (x, y) = blobs(11, 3000, 3);
    let n = y.len();
    let upper = vec![0.5; n];
    let s = settings(1e-2, Shrinking::On);
    let k = KernelSpec::Rbf { gamma: 0.5 };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| svc_solve(&x, &y, k, &upper, 8 << 20, &s))
    };
    let (i1, a1) = run(1);
    let (i2, a2) = run(2);
    assert_eq!(i1, i2);
    assert_eq!(a1, a2);
}

#[test]
fn permutation_invariance_and_duplicated_sample() {
    let (x, y) = blobs(5, 80, 3);
    let n = y.len();
    let k = KernelSpec::Rbf { gamma: 0.4 };
    let s = settings(1e-9, Shrinking::On);
    let upper = vec![2.0; n];
    let (base, a) = svc_solve(&x, &y, k, &upper, 1 << 20, &s);
    // Reversed order.
    let idx: Vec<usize> = (0..n).rev().collect();
    let Features::Dense(m) = &x else {
        unreachable!()
    };
    let xr = x.select_rows(&idx);
    let yr: Vec<i8> = idx.iter().map(|&i| y[i]).collect();
    let (rev, ar) = svc_solve(&xr, &yr, k, &upper, 1 << 20, &s);
    assert!((rev.objective - base.objective).abs() <= 1e-7 * base.objective.abs());
    for (t, &i) in idx.iter().enumerate() {
        // The RBF kernel matrix is positive definite: the solution is unique.
        assert!((ar[t] - a[i]).abs() <= 1e-4, "{} vs {}", ar[t], a[i]);
    }
    // Duplicate sample 0 (bounded SV or not) versus doubling its bound.
    let bounded = (0..n).find(|&i| a[i] >= upper[i]).unwrap_or(0);
    let mut vals = m.values().to_vec();
    vals.extend_from_slice(m.row(bounded));
    let xd = Features::Dense(DenseMatrix::new(n + 1, 3, vals).unwrap());
    let mut yd = y.clone();
    yd.push(y[bounded]);
    let ud = vec![2.0; n + 1];
    let (dup, ad) = svc_solve(&xd, &yd, k, &ud, 1 << 20, &s);
    let mut u2 = upper.clone();
    u2[bounded] = 4.0;
    let (dbl, a2) = svc_solve(&x, &y, k, &u2, 1 << 20, &s);
    assert!(
        (dup.objective - dbl.objective).abs() <= 1e-7 * dbl.objective.abs(),
        "{} vs {}",
        dup.objective,
        dbl.objective
    );
    assert!((ad[bounded] + ad[n] - a2[bounded]).abs() <= 1e-4);
}

#[test]
fn svr_dual_is_solved() {
    let (x, _) = blobs(9, 60, 2);
    let l = 60;
    let mut g = rng(1);
    let z: Vec<f64> = (0..l)
        .map(|i| (x.row(i).get(0)).sin() + 0.1 * g.gen_range(-1.0..1.0))
        .collect();
    let (c, eps) = (2.0, 0.1);
    let k = KernelSpec::Rbf { gamma: 0.7 };
    let mut q = SvrQ::new(&x, k, 1 << 20).unwrap();
    let mut p: Vec<f64> = z.iter().map(|&v| eps - v).collect();
    p.extend(z.iter().map(|&v| eps + v));
    let mut y = vec![1i8; l];
    y.extend(vec![-1i8; l]);
    let upper = vec![c; 2 * l];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let mut a = vec![0.0; 2 * l];
    let s = settings(1e-9, Shrinking::On);
    let info = solve(&mut q, &qp, &mut a, &s, &mut NoObserver).unwrap();
    assert_eq!(info.status, Status::Converged);
    let mut dense = vec![0.0; 4 * l * l];
    for i in 0..2 * l {
        for j in 0..2 * l {
            let sgn = f64::from(y[i] * y[j]);
            dense[i * 2 * l + j] = sgn * kernel_value(&x, k, i % l, j % l);
        }
    }
    let dense = round32(&dense);
    let rep = check_dense(&dense, &qp, &a);
    assert!(rep.max_violation <= 1.01e-9, "{rep:?}");
    let (opt, _) = clarabel_opt(&dense, &qp).unwrap();
    assert!((opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()));
    // Each sample uses at most one of alpha, alpha* (a property of the optimum).
    for i in 0..l {
        assert!(a[i] * a[i + l] <= 1e-8);
    }
}

#[test]
fn one_class_dual_is_solved() {
    let (x, _) = blobs(13, 70, 3);
    let n = 70;
    let nu = 0.3;
    let k = KernelSpec::Rbf { gamma: 0.5 };
    let mut q = OneClassQ::new(&x, k, 1 << 20).unwrap();
    // LIBSVM's start: the first floor(nu n) at 1, the next one fractional.
    let total = nu * n as f64;
    let mut a = vec![0.0; n];
    let whole = total.floor() as usize;
    for ai in a.iter_mut().take(whole) {
        *ai = 1.0;
    }
    a[whole] = total - whole as f64;
    let p = vec![0.0; n];
    let y = vec![1i8; n];
    let upper = vec![1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: total },
        fixed: None,
    };
    let info = solve(
        &mut q,
        &qp,
        &mut a,
        &settings(1e-9, Shrinking::On),
        &mut NoObserver,
    )
    .unwrap();
    let mut dense = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            dense[i * n + j] = kernel_value(&x, k, i, j);
        }
    }
    let dense = round32(&dense);
    let rep = check_dense(&dense, &qp, &a);
    assert!(
        rep.max_violation <= 1.01e-9 && rep.equality_residual < 1e-9,
        "{rep:?}"
    );
    let (opt, _) = clarabel_opt(&dense, &qp).unwrap();
    assert!((opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()));
    assert!(q.cache_stats().hits > 0);
}

/// Minimal LIBSVM-format reader for the tests (dense output).
fn read_svm(path: &str) -> Option<(Features, Vec<i8>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut y = Vec::new();
    let mut d = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let label: f64 = it.next()?.parse().ok()?;
        y.push(if label > 0.0 { 1 } else { -1 });
        let mut r = Vec::new();
        for tok in it {
            let (k, v) = tok.split_once(':')?;
            let k: usize = k.parse().ok()?;
            d = d.max(k);
            r.push((k - 1, v.parse().ok()?));
        }
        rows.push(r);
    }
    let mut v = vec![0.0; rows.len() * d];
    for (i, r) in rows.iter().enumerate() {
        for &(k, x) in r {
            v[i * d + k] = x;
        }
    }
    Some((Features::Dense(DenseMatrix::new(rows.len(), d, v).ok()?), y))
}

#[test]
fn heart_scale_matches_clarabel() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/clf/heart_scale.train.svm"
    );
    let (x, y) = read_svm(path)
        .unwrap_or_else(|| panic!("{path}: missing or not LIBSVM text (see data/README.md)"));
    let n = y.len();
    let k = KernelSpec::Rbf {
        gamma: 1.0 / x.n_cols() as f64,
    };
    let upper = vec![1.0; n];
    let (info, a) = svc_solve(&x, &y, k, &upper, 1 << 20, &settings(1e-3, Shrinking::On));
    let q = round32(&svc_dense_q(&x, &y, k));
    let p = vec![-1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let rep = check_dense(&q, &qp, &a);
    assert!(rep.max_violation <= 1.01e-3, "{rep:?}");
    let (opt, _) = clarabel_opt(&q, &qp).unwrap();
    // eps = 1e-3 gives an objective close to the optimum (LIBSVM-level accuracy).
    assert!(
        info.objective - opt <= 1e-3 * opt.abs(),
        "{} vs {opt}",
        info.objective
    );
    assert!(info.objective >= opt - 1e-6 * opt.abs());
}

#[test]
fn nu_svc_dual_is_solved() {
    let (x, y) = blobs(17, 90, 3);
    let n = y.len();
    let k = KernelSpec::Rbf { gamma: 0.5 };
    let q_dense = round32(&svc_dense_q(&x, &y, k));
    for nu in [0.2, 0.5] {
        for shrinking in [Shrinking::On, Shrinking::Off] {
            // LIBSVM's start: each class sum is nu n / 2, filled greedily with bound 1.
            let (mut sp, mut sn) = (nu * n as f64 / 2.0, nu * n as f64 / 2.0);
            let mut a = vec![0.0; n];
            for i in 0..n {
                let s = if y[i] > 0 { &mut sp } else { &mut sn };
                a[i] = s.min(1.0);
                *s -= a[i];
            }
            let p = vec![0.0; n];
            let upper = vec![1.0; n];
            let delta: f64 = (0..n).map(|i| f64::from(y[i]) * a[i]).sum();
            let qp = BoxQp {
                p: &p,
                y: &y,
                upper: &upper,
                equality: Equality::Sum { delta },
                fixed: None,
            };
            let mut q = SvcQ::new(&x, k, &y, 1 << 20).unwrap();
            let tol = 1e-9;
            let st = settings(tol, shrinking);
            let out = Smo::new(&st)
                .nu(true)
                .solve(&mut q, &qp, &mut a, &mut NoObserver)
                .unwrap();
            let (info, r) = (out.info, out.r);
            assert_eq!(info.status, Status::Converged);
            // Class sums preserved.
            let sum_c = |c: i8| -> f64 { (0..n).filter(|&i| y[i] == c).map(|i| a[i]).sum() };
            assert!((sum_c(1) - nu * n as f64 / 2.0).abs() < 1e-9);
            assert!((sum_c(-1) - nu * n as f64 / 2.0).abs() < 1e-9);
            // Independent per-class KKT: g = Q a, band of -y g within each class.
            let g: Vec<f64> = (0..n)
                .map(|i| (0..n).map(|j| q_dense[i * n + j] * a[j]).sum())
                .collect();
            for c in [1i8, -1] {
                let (mut up, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
                for i in (0..n).filter(|&i| y[i] == c) {
                    let f = -f64::from(c) * g[i];
                    let (at0, at1) = (a[i] <= 0.0, a[i] >= 1.0);
                    let (inc, dec) = if c > 0 { (!at1, !at0) } else { (!at0, !at1) };
                    if inc {
                        up = up.max(f);
                    }
                    if dec {
                        low = low.min(f);
                    }
                    // Free variables sit at the class threshold r_c.
                    if !at0 && !at1 {
                        let rc = if c > 0 { r + info.rho } else { r - info.rho };
                        assert!((g[i] - rc).abs() < 1e-6, "g {} vs r_c {rc}", g[i]);
                    }
                }
                assert!(up - low <= tol * 1.01 + 1e-12, "class {c}: {up} - {low}");
            }
            let ypos: Vec<f64> = y.iter().map(|&v| if v > 0 { 1.0 } else { 0.0 }).collect();
            let (opt, _) = clarabel_opt_eq(&q_dense, &qp, &[(ypos, nu * n as f64 / 2.0)]).unwrap();
            assert!(
                (opt - info.objective).abs() <= 1e-6 * (1.0 + opt.abs()),
                "{opt} vs {info:?}"
            );
            assert!(r > 0.0);
        }
    }
}
