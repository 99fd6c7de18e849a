//! Oracle tests for the linear dual coordinate descent engine (`solver::dcd`).
//!
//! Every check recomputes `w`, the dual objective, the primal objective and the projected
//! gradients from scratch with naive dense loops (independent of the solver's code), and small
//! problems are cross-checked against clarabel.
#![allow(clippy::needless_range_loop)] // naive index loops keep the oracles readable

use marginkit::solver::dcd::{solve_svc, solve_svr, DcdResult, LinearDesign, SvcDual, SvrDual};
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings, Status, VarFix};
use marginkit::{CsrMatrix, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::ControlFlow;

/// Two Gaussian blobs in `d` dimensions (overlapping), labels +-1.
fn blobs(n: usize, d: usize, sep: f64, seed: u64) -> (Vec<Vec<f64>>, Vec<i8>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut gauss = move || {
        // Box-Muller.
        let u1: f64 = rng.gen_range(1e-12..1.0);
        let u2: f64 = rng.gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let yi: i8 = if i % 3 == 0 { -1 } else { 1 };
        let row: Vec<f64> = (0..d)
            .map(|k| gauss() + if k < 2 { sep * f64::from(yi) } else { 0.0 })
            .collect();
        x.push(row);
        y.push(yi);
    }
    (x, y)
}

fn dense(x: &[Vec<f64>]) -> Features {
    let d = x.first().map_or(0, |r| r.len());
    Features::Dense(DenseMatrix::new(x.len(), d, x.concat()).unwrap())
}

fn sparse(x: &[Vec<f64>]) -> Features {
    let d = x.first().map_or(0, |r| r.len());
    let (mut indptr, mut idx, mut val) = (vec![0], vec![], vec![]);
    for r in x {
        for (k, &v) in r.iter().enumerate() {
            if v != 0.0 {
                idx.push(k as u32);
                val.push(v);
            }
        }
        indptr.push(idx.len());
    }
    Features::Sparse(CsrMatrix::new(d, indptr, idx, val).unwrap())
}

/// Rows with the bias feature appended (naive).
fn with_bias(x: &[Vec<f64>], bias: Option<f64>) -> Vec<Vec<f64>> {
    x.iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(b) = bias {
                r.push(b);
            }
            r
        })
        .collect()
}

fn dotv(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[derive(Debug, Clone)]
struct SvcSpec {
    x: Vec<Vec<f64>>,
    y: Vec<i8>,
    p: Vec<f64>,
    upper: Vec<f64>,
    shift: Vec<f64>,
    bias: Option<f64>,
}

impl SvcSpec {
    /// L1 (hinge) or L2 (squared hinge) loss with per-sample C.
    fn new(x: Vec<Vec<f64>>, y: Vec<i8>, c: &[f64], l2: bool, bias: Option<f64>) -> Self {
        let n = y.len();
        let (upper, shift) = if l2 {
            (vec![f64::INFINITY; n], c.iter().map(|c| 0.5 / c).collect())
        } else {
            (c.to_vec(), vec![0.0; n])
        };
        Self {
            x,
            y,
            p: vec![-1.0; n],
            upper,
            shift,
            bias,
        }
    }

    fn solve(
        &self,
        feats: &Features,
        equality: Equality,
        settings: &SolverSettings,
        seed: u64,
    ) -> (Vec<f64>, DcdResult) {
        let mut alpha = vec![0.0; self.y.len()];
        let prob = SvcDual {
            design: LinearDesign {
                x: feats,
                bias: self.bias,
            },
            qp: BoxQp {
                p: &self.p,
                y: &self.y,
                upper: &self.upper,
                equality,
                fixed: None,
            },
            diag_shift: &self.shift,
        };
        let r = solve_svc(&prob, settings, seed, &mut alpha, &mut NoObserver).unwrap();
        (alpha, r)
    }

    /// Independent recomputation: (w, dual f, primal P, PG range or pair violation, rho).
    fn check(&self, alpha: &[f64], equality: Equality) -> (Vec<f64>, f64, f64, f64) {
        let xb = with_bias(&self.x, self.bias);
        let dim = xb[0].len();
        let mut w = vec![0.0; dim];
        for (i, r) in xb.iter().enumerate() {
            for k in 0..dim {
                w[k] += alpha[i] * f64::from(self.y[i]) * r[k];
            }
        }
        let half = 0.5 * dotv(&w, &w);
        let mut dual = half;
        for i in 0..alpha.len() {
            assert!(alpha[i] >= 0.0 && alpha[i] <= self.upper[i], "box violated");
            dual += 0.5 * self.shift[i] * alpha[i] * alpha[i] + self.p[i] * alpha[i];
        }
        let g: Vec<f64> = (0..alpha.len())
            .map(|i| f64::from(self.y[i]) * dotv(&w, &xb[i]) + self.p[i] + self.shift[i] * alpha[i])
            .collect();
        let (viol, b) = match equality {
            Equality::None => {
                let pg: Vec<f64> = (0..alpha.len())
                    .map(|i| {
                        if self.upper[i] == 0.0 {
                            0.0 // pinned: [0, 0] leaves no room
                        } else if alpha[i] == 0.0 {
                            g[i].min(0.0)
                        } else if alpha[i] == self.upper[i] {
                            g[i].max(0.0)
                        } else {
                            g[i]
                        }
                    })
                    .collect();
                let hi = pg.iter().cloned().fold(f64::MIN, f64::max);
                let lo = pg.iter().cloned().fold(f64::MAX, f64::min);
                (hi - lo, 0.0)
            }
            Equality::Sum { delta } => {
                let ya: f64 = alpha
                    .iter()
                    .zip(&self.y)
                    .map(|(a, &y)| a * f64::from(y))
                    .sum();
                assert!(
                    (ya - delta).abs() < 1e-8,
                    "equality violated: {ya} vs {delta}"
                );
                // Best b: minimise the primal over b by scanning the candidate breakpoints is
                // overkill here; use the KKT interval midpoint from the free variables.
                let (mut up, mut low) = (f64::MIN, f64::MAX);
                let mut free_b = Vec::new();
                for i in 0..alpha.len() {
                    let yi = f64::from(self.y[i]);
                    let v = -yi * g[i];
                    let can_up = if yi > 0.0 {
                        alpha[i] < self.upper[i]
                    } else {
                        alpha[i] > 0.0
                    };
                    let can_low = if yi > 0.0 {
                        alpha[i] > 0.0
                    } else {
                        alpha[i] < self.upper[i]
                    };
                    if can_up {
                        up = up.max(v);
                    }
                    if can_low {
                        low = low.min(v);
                    }
                    if alpha[i] > 0.0 && alpha[i] < self.upper[i] {
                        free_b.push(v);
                    }
                }
                let b = if free_b.is_empty() {
                    0.5 * (up.min(1e300) + low.max(-1e300))
                } else {
                    free_b.iter().sum::<f64>() / free_b.len() as f64
                };
                ((up - low).max(0.0), b)
            }
        };
        let mut primal = half;
        if let Equality::Sum { delta } = equality {
            primal += delta * b;
        }
        for i in 0..alpha.len() {
            let z = -self.p[i] - f64::from(self.y[i]) * (dotv(&w, &xb[i]) + b);
            if z > 0.0 {
                primal += if self.shift[i] > 0.0 {
                    let t = (z / self.shift[i]).min(self.upper[i]);
                    t * z - 0.5 * self.shift[i] * t * t
                } else {
                    self.upper[i] * z
                };
            }
        }
        (w, dual, primal, viol)
    }
}

fn settings(tol: f64, shrinking: Shrinking) -> SolverSettings {
    SolverSettings {
        tol,
        shrinking,
        max_iter: Some(100_000),
        time_limit: None,
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / (1.0 + a.abs().max(b.abs()))
}

#[test]
fn svc_l1_l2_optimality_dense_and_sparse() {
    let (x, y) = blobs(300, 6, 0.7, 1);
    let c: Vec<f64> = (0..300).map(|i| 0.5 + (i % 4) as f64 * 0.5).collect();
    for l2 in [false, true] {
        for bias in [None, Some(1.0)] {
            let spec = SvcSpec::new(x.clone(), y.clone(), &c, l2, bias);
            for feats in [dense(&x), sparse(&x)] {
                let (alpha, r) =
                    spec.solve(&feats, Equality::None, &settings(1e-8, Shrinking::On), 7);
                assert_eq!(r.info.status, Status::Converged);
                let (w, dual, primal, viol) = spec.check(&alpha, Equality::None);
                assert!(viol <= 1e-8 * 1.0001, "PG range {viol}");
                assert!(r.info.max_violation <= 1e-7, "{}", r.info.max_violation);
                assert!(rel(dual, r.info.objective) < 1e-10);
                assert!(rel(primal, r.primal) < 1e-10);
                let gap = primal + dual;
                assert!(
                    gap >= -1e-9 && gap < 1e-6 * (1.0 + primal.abs()),
                    "gap {gap}"
                );
                assert!((gap - r.gap).abs() < 1e-8);
                assert_eq!(w.len(), r.w.len());
                for (a, b) in w.iter().zip(&r.w) {
                    assert!((a - b).abs() < 1e-10);
                }
            }
        }
    }
}

#[test]
fn shrinking_on_off_and_seeds_reach_the_same_optimum() {
    let (x, y) = blobs(400, 5, 0.5, 3);
    let c = vec![2.0; 400];
    for l2 in [false, true] {
        let spec = SvcSpec::new(x.clone(), y.clone(), &c, l2, Some(1.0));
        let f = dense(&x);
        let (_, a) = spec.solve(&f, Equality::None, &settings(1e-9, Shrinking::On), 1);
        let (_, b) = spec.solve(&f, Equality::None, &settings(1e-9, Shrinking::Off), 1);
        let (_, c2) = spec.solve(&f, Equality::None, &settings(1e-9, Shrinking::On), 99);
        let (_, a2) = spec.solve(&f, Equality::None, &settings(1e-9, Shrinking::On), 1);
        assert_eq!(a.w, a2.w, "same seed must give bit-identical results");
        for r in [&b, &c2] {
            assert!(rel(a.info.objective, r.info.objective) < 1e-9);
            for (u, v) in a.w.iter().zip(&r.w) {
                assert!((u - v).abs() < 1e-5, "{u} vs {v}");
            }
        }
    }
}

#[test]
fn permutation_of_samples_leaves_the_optimum() {
    let (x, y) = blobs(200, 4, 0.6, 5);
    let c: Vec<f64> = (0..200).map(|i| 1.0 + (i % 3) as f64).collect();
    let mut perm: Vec<usize> = (0..200).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for k in (1..perm.len()).rev() {
        perm.swap(k, rng.gen_range(0..=k));
    }
    for l2 in [false, true] {
        let a = SvcSpec::new(x.clone(), y.clone(), &c, l2, Some(1.0));
        let xp: Vec<Vec<f64>> = perm.iter().map(|&i| x[i].clone()).collect();
        let yp: Vec<i8> = perm.iter().map(|&i| y[i]).collect();
        let cp: Vec<f64> = perm.iter().map(|&i| c[i]).collect();
        let b = SvcSpec::new(xp.clone(), yp, &cp, l2, Some(1.0));
        let s = settings(1e-9, Shrinking::On);
        let (_, ra) = a.solve(&dense(&x), Equality::None, &s, 3);
        let (_, rb) = b.solve(&sparse(&xp), Equality::None, &s, 3);
        assert!(rel(ra.info.objective, rb.info.objective) < 1e-9);
        for (u, v) in ra.w.iter().zip(&rb.w) {
            assert!((u - v).abs() < 1e-5);
        }
    }
}

#[test]
fn integer_weight_equals_duplicated_rows() {
    let (x, y) = blobs(60, 3, 0.4, 8);
    let k: Vec<usize> = (0..60).map(|i| 1 + i % 3).collect();
    let c = 0.7;
    let mut xd = Vec::new();
    let mut yd = Vec::new();
    for i in 0..60 {
        for _ in 0..k[i] {
            xd.push(x[i].clone());
            yd.push(y[i]);
        }
    }
    for l2 in [false, true] {
        let cw: Vec<f64> = k.iter().map(|&m| c * m as f64).collect();
        let weighted = SvcSpec::new(x.clone(), y.clone(), &cw, l2, Some(1.0));
        let dup = SvcSpec::new(xd.clone(), yd.clone(), &vec![c; xd.len()], l2, Some(1.0));
        let s = settings(1e-10, Shrinking::On);
        let (_, rw) = weighted.solve(&dense(&x), Equality::None, &s, 1);
        let (_, rd) = dup.solve(&dense(&xd), Equality::None, &s, 1);
        assert!(
            rel(rw.primal, rd.primal) < 1e-8,
            "{} vs {}",
            rw.primal,
            rd.primal
        );
        for (u, v) in rw.w.iter().zip(&rd.w) {
            assert!((u - v).abs() < 1e-5);
        }
    }
}

/// Solves min 1/2 a'Qa + p'a, 0 <= a <= u (finite entries only), optional y'a = delta, with clarabel.
fn clarabel_qp(
    q: &[Vec<f64>],
    p: &[f64],
    upper: &[f64],
    eq: Option<(&[i8], f64)>,
) -> (Vec<f64>, f64) {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{
        DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, ZeroConeT,
    };
    let n = p.len();
    let (mut colptr, mut rowval, mut nzval) = (vec![0], vec![], vec![]);
    for j in 0..n {
        for (i, row) in q.iter().enumerate().take(j + 1) {
            rowval.push(i);
            nzval.push(row[j]);
        }
        colptr.push(rowval.len());
    }
    let pm = CscMatrix::new(n, n, colptr, rowval, nzval);
    // Rows: [y' (eq)], a_j = 0 for zero-width boxes (an interior-point method has no interior
    // for 0 <= a_j <= 0), then -a <= 0 and a <= u (finite ones) for the others.
    let mut trip = (vec![], vec![], vec![]);
    let mut b = vec![];
    let mut m = 0;
    let mut cones = vec![];
    if let Some((y, delta)) = eq {
        for j in 0..n {
            trip.0.push(0);
            trip.1.push(j);
            trip.2.push(f64::from(y[j]));
        }
        b.push(delta);
        m = 1;
    }
    for j in 0..n {
        if upper[j] == 0.0 {
            trip.0.push(m);
            trip.1.push(j);
            trip.2.push(1.0);
            b.push(0.0);
            m += 1;
        }
    }
    if m > 0 {
        cones.push(ZeroConeT(m));
    }
    let start = m;
    for j in (0..n).filter(|&j| upper[j] != 0.0) {
        trip.0.push(m);
        trip.1.push(j);
        trip.2.push(-1.0);
        b.push(0.0);
        m += 1;
    }
    for j in (0..n).filter(|&j| upper[j] != 0.0) {
        if upper[j].is_finite() {
            trip.0.push(m);
            trip.1.push(j);
            trip.2.push(1.0);
            b.push(upper[j]);
            m += 1;
        }
    }
    cones.push(NonnegativeConeT(m - start));
    let a = CscMatrix::new_from_triplets(m, n, trip.0, trip.1, trip.2);
    let st = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-11)
        .tol_gap_rel(1e-11)
        .tol_feas(1e-11)
        .build()
        .unwrap();
    let mut solver = DefaultSolver::new(&pm, p, &a, &b, &cones, st).unwrap();
    solver.solve();
    assert!(matches!(
        solver.solution.status,
        SolverStatus::Solved | SolverStatus::AlmostSolved
    ));
    (solver.solution.x.clone(), solver.solution.obj_val)
}

fn dense_q(spec: &SvcSpec) -> Vec<Vec<f64>> {
    let xb = with_bias(&spec.x, spec.bias);
    let n = xb.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let v = f64::from(spec.y[i]) * f64::from(spec.y[j]) * dotv(&xb[i], &xb[j]);
                    if i == j {
                        v + spec.shift[i]
                    } else {
                        v
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn small_problems_match_clarabel() {
    let (x, y) = blobs(25, 3, 0.5, 21);
    let c: Vec<f64> = (0..25).map(|i| 0.3 + 0.2 * (i % 5) as f64).collect();
    for l2 in [false, true] {
        for eq in [None, Some(0.0)] {
            let bias = if eq.is_some() { None } else { Some(1.0) };
            let mut spec = SvcSpec::new(x.clone(), y.clone(), &c, l2, bias);
            // A non-uniform linear term (weighted / aggregated problems).
            spec.p = (0..25).map(|i| -1.0 - 0.1 * (i % 4) as f64).collect();
            let equality = eq.map_or(Equality::None, |delta| Equality::Sum { delta });
            let (alpha, r) = spec.solve(&dense(&x), equality, &settings(1e-10, Shrinking::On), 4);
            assert_eq!(r.info.status, Status::Converged);
            let q = dense_q(&spec);
            let (_, obj) = clarabel_qp(&q, &spec.p, &spec.upper, eq.map(|d| (&spec.y[..], d)));
            assert!(
                rel(obj, r.info.objective) < 1e-8,
                "{obj} vs {}",
                r.info.objective
            );
            let (_, dual, primal, viol) = spec.check(&alpha, equality);
            assert!(viol < 1e-9, "violation {viol}");
            assert!(rel(dual, r.info.objective) < 1e-10);
            assert!(
                primal + dual < 1e-7 && primal + dual > -1e-9,
                "gap {}",
                primal + dual
            );
            assert!((r.gap - (primal + dual)).abs() < 1e-7);
        }
    }
}

#[test]
fn equality_constraint_with_nonzero_delta_and_fixed_variables() {
    let (x, y) = blobs(80, 4, 0.3, 31);
    let c = vec![1.0; 80];
    let spec = SvcSpec::new(x.clone(), y.clone(), &c, false, None);
    // Feasible start with y'a = delta: put 0.5 on the first positive sample.
    let first_pos = y.iter().position(|&v| v > 0).unwrap();
    let delta = 0.5;
    let mut fixed = vec![VarFix::Free; 80];
    fixed[2] = VarFix::AtUpper;
    fixed[5] = VarFix::AtZero;
    let mut alpha = vec![0.0; 80];
    alpha[first_pos] = 0.5;
    alpha[2] = 1.0;
    let fixed_contrib = f64::from(y[2]);
    let f = sparse(&x);
    let prob = SvcDual {
        design: LinearDesign { x: &f, bias: None },
        qp: BoxQp {
            p: &spec.p,
            y: &spec.y,
            upper: &spec.upper,
            equality: Equality::Sum {
                delta: delta + fixed_contrib,
            },
            fixed: Some(&fixed),
        },
        diag_shift: &spec.shift,
    };
    let r = solve_svc(
        &prob,
        &settings(1e-9, Shrinking::On),
        2,
        &mut alpha,
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(r.info.status, Status::Converged);
    assert_eq!(alpha[2], 1.0);
    assert_eq!(alpha[5], 0.0);
    // Restricted problem against clarabel: eliminate the two fixed variables by bounds.
    let mut upper = spec.upper.clone();
    upper[5] = 0.0;
    let q = dense_q(&spec);
    // Fix alpha_2 = 1 by giving clarabel the bound [0, 1] and the equality; check the objective of
    // our solution is no worse than clarabel's on the restricted set (alpha_2 pinned).
    let mut lin = spec.p.clone();
    for (j, l) in lin.iter_mut().enumerate() {
        if j != 2 {
            *l += q[j][2];
        }
    }
    let keep: Vec<usize> = (0..80).filter(|&j| j != 2).collect();
    let qr: Vec<Vec<f64>> = keep
        .iter()
        .map(|&i| keep.iter().map(|&j| q[i][j]).collect())
        .collect();
    let pr: Vec<f64> = keep.iter().map(|&j| lin[j]).collect();
    let ur: Vec<f64> = keep.iter().map(|&j| upper[j]).collect();
    let yr: Vec<i8> = keep.iter().map(|&j| y[j]).collect();
    let (_, obj) = clarabel_qp(&qr, &pr, &ur, Some((&yr, delta)));
    let const_part = 0.5 * q[2][2] + spec.p[2];
    assert!(
        rel(obj + const_part, r.info.objective) < 1e-8,
        "{} vs {}",
        obj + const_part,
        r.info.objective
    );
}

#[test]
fn infeasible_start_and_bad_inputs_are_errors() {
    let (x, y) = blobs(10, 2, 1.0, 2);
    let spec = SvcSpec::new(x.clone(), y.clone(), &[1.0; 10], false, None);
    let f = dense(&x);
    let mut alpha = vec![0.0; 10];
    let mk = |eq| SvcDual {
        design: LinearDesign { x: &f, bias: None },
        qp: BoxQp {
            p: &spec.p,
            y: &spec.y,
            upper: &spec.upper,
            equality: eq,
            fixed: None,
        },
        diag_shift: &spec.shift,
    };
    let s = SolverSettings::default();
    assert!(solve_svc(
        &mk(Equality::Sum { delta: 1.0 }),
        &s,
        0,
        &mut alpha,
        &mut NoObserver
    )
    .is_err());
    alpha[0] = 5.0;
    assert!(solve_svc(&mk(Equality::None), &s, 0, &mut alpha, &mut NoObserver).is_err());
    let mut short = vec![0.0; 9];
    assert!(solve_svc(&mk(Equality::None), &s, 0, &mut short, &mut NoObserver).is_err());
}

#[test]
fn max_passes_is_reported() {
    let (x, y) = blobs(500, 5, 0.2, 9);
    let spec = SvcSpec::new(x.clone(), y, &[10.0; 500], false, None);
    let s = SolverSettings {
        tol: 1e-12,
        shrinking: Shrinking::On,
        max_iter: Some(2),
        time_limit: None,
    };
    let (_, r) = spec.solve(&dense(&x), Equality::None, &s, 0);
    assert_eq!(r.info.status, Status::MaxIterations);
    assert_eq!(r.info.iterations, 2);
    assert!(r.gap >= -1e-9);
}

/// Independent SVR check: (dual f, primal P).
fn svr_check(
    x: &[Vec<f64>],
    t: &[f64],
    eps: f64,
    upper: &[f64],
    shift: &[f64],
    beta: &[f64],
) -> (f64, f64) {
    let dim = x[0].len();
    let mut w = vec![0.0; dim];
    for (i, r) in x.iter().enumerate() {
        for k in 0..dim {
            w[k] += beta[i] * r[k];
        }
    }
    let half = 0.5 * dotv(&w, &w);
    let (mut dual, mut primal) = (half, half);
    for i in 0..t.len() {
        assert!(beta[i].abs() <= upper[i]);
        dual += 0.5 * shift[i] * beta[i] * beta[i] - t[i] * beta[i] + eps * beta[i].abs();
        let z = (t[i] - dotv(&w, &x[i])).abs() - eps;
        if z > 0.0 {
            primal += if shift[i] > 0.0 {
                z * z / (2.0 * shift[i])
            } else {
                upper[i] * z
            };
        }
    }
    (dual, primal)
}

#[test]
fn svr_l1_l2_duality_gap_closes() {
    let (x, _) = blobs(300, 5, 0.0, 13);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let t: Vec<f64> = x
        .iter()
        .map(|r| 1.5 * r[0] - 0.5 * r[1] + 0.3 + rng.gen_range(-0.5..0.5))
        .collect();
    let c: Vec<f64> = (0..300).map(|i| 0.5 + (i % 2) as f64).collect();
    for l2 in [false, true] {
        for shrinking in [Shrinking::On, Shrinking::Off] {
            let (upper, shift): (Vec<f64>, Vec<f64>) = if l2 {
                (
                    vec![f64::INFINITY; 300],
                    c.iter().map(|c| 0.5 / c).collect(),
                )
            } else {
                (c.clone(), vec![0.0; 300])
            };
            let f = if l2 { sparse(&x) } else { dense(&x) };
            let prob = SvrDual {
                design: LinearDesign {
                    x: &f,
                    bias: Some(1.0),
                },
                target: &t,
                epsilon: 0.2,
                upper: &upper,
                diag_shift: &shift,
            };
            let mut beta = vec![0.0; 300];
            let r = solve_svr(
                &prob,
                &settings(1e-9, shrinking),
                5,
                &mut beta,
                &mut NoObserver,
            )
            .unwrap();
            assert_eq!(r.info.status, Status::Converged);
            let xb = with_bias(&x, Some(1.0));
            let (dual, primal) = svr_check(&xb, &t, 0.2, &upper, &shift, &beta);
            assert!(rel(dual, r.info.objective) < 1e-10);
            assert!(rel(primal, r.primal) < 1e-10);
            assert!(
                primal + dual < 1e-6 * (1.0 + primal.abs()),
                "gap {}",
                primal + dual
            );
            assert!(primal + dual > -1e-9);
            assert!(
                (r.w[0] - 1.5).abs() < 0.2 && (r.w[1] + 0.5).abs() < 0.2,
                "{:?}",
                r.w
            );
        }
    }
}

mod random_problems {
    use super::*;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest, ProptestConfig, Strategy};

    fn problem() -> impl Strategy<Value = (SvcSpec, bool, u64)> {
        (
            2usize..25,
            1usize..5,
            any::<u64>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(n, d, seed, eq, bias)| {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let x: Vec<Vec<f64>> = (0..n)
                    .map(|_| {
                        (0..d)
                            .map(|_| {
                                if rng.gen_bool(0.2) {
                                    0.0
                                } else {
                                    rng.gen_range(-2.0..2.0)
                                }
                            })
                            .collect()
                    })
                    .collect();
                let mut y: Vec<i8> = (0..n).map(|_| if rng.gen() { 1 } else { -1 }).collect();
                y[0] = 1;
                y[1] = -1;
                // Mixed losses: finite or infinite bounds, zero or positive shifts.
                let upper: Vec<f64> = (0..n)
                    .map(|_| match rng.gen_range(0..4) {
                        0 => f64::INFINITY,
                        1 => 0.0,
                        _ => rng.gen_range(0.1..3.0),
                    })
                    .collect();
                let shift: Vec<f64> = upper
                    .iter()
                    .map(|u| {
                        if u.is_infinite() || rng.gen_bool(0.3) {
                            rng.gen_range(0.05..1.0)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let p: Vec<f64> = (0..n).map(|_| -rng.gen_range(0.2..1.5)).collect();
                let spec = SvcSpec {
                    x,
                    y,
                    p,
                    upper,
                    shift,
                    bias: if bias && !eq { Some(1.5) } else { None },
                };
                (spec, eq, seed)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn kkt_and_gap_hold_on_random_problems((spec, eq, seed) in problem()) {
            let equality = if eq { Equality::Sum { delta: 0.0 } } else { Equality::None };
            let s = settings(1e-9, if seed % 2 == 0 { Shrinking::On } else { Shrinking::Off });
            let feats = if seed % 3 == 0 { sparse(&spec.x) } else { dense(&spec.x) };
            let (alpha, r) = spec.solve(&feats, equality, &s, seed);
            prop_assert_eq!(r.info.status, Status::Converged);
            let (_, dual, primal, viol) = spec.check(&alpha, equality);
            prop_assert!(viol <= 1e-8, "violation {}", viol);
            prop_assert!(rel(dual, r.info.objective) < 1e-10);
            let gap = primal + dual;
            prop_assert!(gap > -1e-8 && gap < 1e-6 * (1.0 + primal.abs()), "gap {}", gap);
            // Cross-check the objective with clarabel.
            let q = dense_q(&spec);
            let (_, obj) = clarabel_qp(&q, &spec.p, &spec.upper, if eq { Some((&spec.y[..], 0.0)) } else { None });
            prop_assert!(rel(obj, r.info.objective) < 1e-7, "{} vs {}", obj, r.info.objective);
        }
    }
}

#[test]
fn observer_stop_and_time_limit_are_reported() {
    use marginkit::solver::{IterStats, Observer};
    struct StopAt(u64, Vec<IterStats>);
    impl Observer for StopAt {
        fn on_iter(&mut self, s: &IterStats) -> ControlFlow<()> {
            self.1.push(*s);
            if s.iterations >= self.0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    let (x, y) = blobs(300, 4, 0.1, 17);
    let spec = SvcSpec::new(x.clone(), y, &[5.0; 300], false, None);
    let f = dense(&x);
    let prob = SvcDual {
        design: LinearDesign { x: &f, bias: None },
        qp: BoxQp {
            p: &spec.p,
            y: &spec.y,
            upper: &spec.upper,
            equality: Equality::None,
            fixed: None,
        },
        diag_shift: &spec.shift,
    };
    let s = settings(1e-12, Shrinking::On);
    let mut obs = StopAt(3, Vec::new());
    let mut alpha = vec![0.0; 300];
    let r = solve_svc(&prob, &s, 0, &mut alpha, &mut obs).unwrap();
    assert_eq!(r.info.status, Status::Interrupted);
    assert_eq!(r.info.iterations, 3);
    assert_eq!(obs.1.len(), 3);
    assert!(obs
        .1
        .iter()
        .all(|st| st.active <= 300 && st.max_violation >= 0.0));
    let s = SolverSettings {
        time_limit: Some(std::time::Duration::ZERO),
        ..s
    };
    let mut alpha = vec![0.0; 300];
    let r = solve_svc(&prob, &s, 0, &mut alpha, &mut NoObserver).unwrap();
    assert_eq!(r.info.status, Status::TimeLimit);
    assert_eq!(r.info.iterations, 1);
}
