//! Oracles for the no-equality two-variable step: [`super::box2_step`] against clarabel and a
//! grid search on random 2-D box QPs (singular, nearly singular and well-conditioned `H`,
//! zero-width boxes), and the SMO solve with the step against clarabel on ill-conditioned
//! bias-free problems (the setting the step is for).

use super::*;
use crate::kernel::qmatrix::DenseQ;
use crate::solver::NoObserver;
use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// `min 1/2 x'Px + c'x` s.t. `lo <= x <= hi` by clarabel (dense upper triangle of `p`).
fn clarabel_box(p: &[f64], c: &[f64], lo: &[f64], hi: &[f64]) -> (f64, Vec<f64>) {
    let n = c.len();
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for j in 0..n {
        for i in 0..=j {
            if p[i * n + j] != 0.0 {
                rowval.push(i);
                nzval.push(p[i * n + j]);
            }
        }
        colptr.push(rowval.len());
    }
    let pm = CscMatrix::new(n, n, colptr, rowval, nzval);
    // Rows: -x_i <= -lo_i, x_i <= hi_i.
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for i in 0..n {
        rowval.extend([2 * i, 2 * i + 1]);
        nzval.extend([-1.0, 1.0]);
        colptr.push(rowval.len());
    }
    let am = CscMatrix::new(2 * n, n, colptr, rowval, nzval);
    let b: Vec<f64> = (0..n).flat_map(|i| [-lo[i], hi[i]]).collect();
    let set = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-12,
        tol_gap_rel: 1e-12,
        tol_feas: 1e-12,
        ..DefaultSettings::default()
    };
    let mut s = DefaultSolver::new(&pm, c, &am, &b, &[NonnegativeConeT(2 * n)], set).unwrap();
    s.solve();
    assert!(
        matches!(
            s.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ),
        "clarabel: {:?}",
        s.solution.status
    );
    (s.solution.obj_val, s.solution.x.clone())
}

fn phi(g: [f64; 2], h: [f64; 3], a: f64, b: f64) -> f64 {
    g[0] * a + g[1] * b + 0.5 * (h[0] * a * a + 2.0 * h[1] * a * b + h[2] * b * b)
}

#[test]
fn box2_step_is_the_exact_minimizer() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for case in 0..3000 {
        // H = B B' with B's second column scaled to make H singular or nearly so.
        let (b00, b01, b10): (f64, f64, f64) = (
            rng.gen_range(-2.0..2.0),
            rng.gen_range(-2.0..2.0),
            rng.gen_range(-2.0..2.0),
        );
        let s = match case % 4 {
            0 => 0.0,
            1 => 1e-7,
            _ => rng.gen_range(-2.0..2.0),
        };
        let b11 = s;
        let h = [
            b00 * b00 + b01 * b01,
            b00 * b10 + b01 * b11,
            b10 * b10 + b11 * b11,
        ];
        let g = [rng.gen_range(-3.0..3.0), rng.gen_range(-3.0..3.0)];
        let mut side = |k: usize| -> f64 {
            if case % 7 == k {
                0.0
            } else {
                rng.gen_range(0.0..2.0)
            }
        };
        let lo = [-side(1), -side(2)];
        let hi = [side(3), side(4)];
        // The single step of the first variable, as the solver passes it.
        let (d0, _, _) = single_step(g[0], -lo[0], hi[0] - lo[0], h[0]);
        let (a, b) = box2_step(g, h, lo, hi, d0);
        assert!(
            a >= lo[0] && a <= hi[0] && b >= lo[1] && b <= hi[1],
            "case {case}: infeasible"
        );
        let v = phi(g, h, a, b);
        assert!(
            v <= phi(g, h, d0, 0.0) + 1e-15,
            "case {case}: worse than the single step"
        );
        let (opt, _) = clarabel_box(&[h[0], h[1], h[1], h[2]], &g, &lo, &hi);
        assert!(
            v <= opt + 1e-8 * (1.0 + opt.abs()),
            "case {case}: box2 {v} vs clarabel {opt} (h {h:?} g {g:?} lo {lo:?} hi {hi:?})"
        );
        // Independent of clarabel's tolerance: no point of a 41 x 41 grid is better.
        let k = 40;
        for r in 0..=k {
            for c in 0..=k {
                let x = lo[0] + (hi[0] - lo[0]) * r as f64 / k as f64;
                let z = lo[1] + (hi[1] - lo[1]) * c as f64 / k as f64;
                assert!(
                    v <= phi(g, h, x, z) + 1e-12,
                    "case {case}: grid point ({x}, {z}) better"
                );
            }
        }
    }
}

/// Bias-free RBF problems with a small gamma and a large C (nearly singular `Q`, the case the
/// single-variable rule zig-zags on): SMO with the two-variable step reaches clarabel's optimum.
#[test]
fn ill_conditioned_bias_free_solves_match_clarabel() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    for (case, &(gamma, c)) in [(0.01, 100.0), (0.05, 1000.0), (0.5, 10.0), (0.002, 1e4)]
        .iter()
        .enumerate()
    {
        let n = 60;
        let d = 3;
        let x: Vec<f64> = (0..n * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let y: Vec<f64> = (0..n)
            .map(|i| {
                if x[i * d] + 0.3 * x[i * d + 1] > 0.1 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..d).map(|k| (x[i * d + k] - x[j * d + k]).powi(2)).sum();
                // The f32 values the solver's columns hold, so both solve the same problem.
                q[i * n + j] = f64::from((y[i] * y[j] * (-gamma * s).exp()) as f32);
            }
        }
        let p = vec![-1.0; n];
        let ys: Vec<i8> = y.iter().map(|&v| v as i8).collect();
        let upper = vec![c; n];
        let qp = BoxQp {
            p: &p,
            y: &ys,
            upper: &upper,
            equality: Equality::None,
            fixed: None,
        };
        for shrinking in [Shrinking::On, Shrinking::Off] {
            let settings = SolverSettings {
                tol: 1e-6,
                shrinking,
                max_iter: None,
                time_limit: None,
            };
            let mut dq = DenseQ::new(n, &q).unwrap();
            let mut alpha = vec![0.0; n];
            let info = solve(&mut dq, &qp, &mut alpha, &settings, &mut NoObserver).unwrap();
            assert_eq!(info.status, Status::Converged, "case {case}");
            let (opt, _) = clarabel_box(&q, &p, &vec![0.0; n], &upper);
            let rel = (info.objective - opt) / opt.abs().max(1.0);
            assert!(
                rel.abs() < 1e-6,
                "case {case} {shrinking:?}: smo {} vs clarabel {opt}",
                info.objective
            );
        }
    }
}
