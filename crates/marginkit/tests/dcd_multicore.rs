//! Multi-core linear DCD (`solve_svc_parallel`, `solve_svr_parallel`) against independent
//! oracles: `w`, the dual and primal objectives, the duality gap and every projected gradient
//! are recomputed from the returned dual variables with naive dense loops. Also: the same
//! optimum as the serial solver, bit-identical results at 2, 3 and 8 threads, the serial solver
//! itself on a one-thread pool, shrinking on and off, fixed variables and warm starts.
//!
//! The problems have at least `PAR_MIN_ROWS` samples (below it the serial solver runs at any
//! thread count), so every pass runs several blocks and moves shrunk variables across block
//! boundaries.
#![allow(clippy::needless_range_loop)] // naive index loops keep the oracles readable

use marginkit::solver::dcd::{
    solve_svc, solve_svc_parallel, solve_svr, solve_svr_parallel, DcdResult, LinearDesign, SvcDual,
    SvrDual, PAR_MIN_ROWS,
};
use marginkit::solver::{BoxQp, Equality, NoObserver, Shrinking, SolverSettings, Status, VarFix};
use marginkit::{CsrMatrix, DenseMatrix, Features};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn gauss(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = rng.gen_range(1e-12..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Overlapping Gaussian blobs, labels sorted (as data files often are), and a regression
/// target from a noisy linear teacher.
fn blobs(n: usize, d: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<i8>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut x, mut y, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let yi: i8 = if i < n / 2 { 1 } else { -1 };
        let row: Vec<f64> = (0..d)
            .map(|_| gauss(&mut rng) + 0.8 * f64::from(yi) / (d as f64).sqrt())
            .collect();
        let ti = row
            .iter()
            .enumerate()
            .map(|(k, v)| v / (k + 1) as f64)
            .sum::<f64>()
            + 0.3 * gauss(&mut rng);
        x.push(row);
        y.push(yi);
        t.push(ti);
    }
    (x, y, t)
}

fn dense(x: &[Vec<f64>]) -> Features {
    Features::Dense(DenseMatrix::new(x.len(), x[0].len(), x.concat()).unwrap())
}

/// CSR with about a third of the entries dropped (a genuinely sparse pattern).
fn sparse(x: &[Vec<f64>]) -> Features {
    let (mut indptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
    for (i, r) in x.iter().enumerate() {
        for (k, &v) in r.iter().enumerate() {
            if (i + 2 * k) % 3 != 0 {
                idx.push(k as u32);
                val.push(v);
            }
        }
        indptr.push(idx.len());
    }
    Features::Sparse(CsrMatrix::new(x[0].len(), indptr, idx, val).unwrap())
}

/// The rows as the solver sees them (stored entries, bias feature appended), densely.
fn rows_of(x: &Features, bias: Option<f64>) -> Vec<Vec<f64>> {
    (0..x.n_rows())
        .map(|i| {
            let mut r = vec![0.0; x.n_cols()];
            for (k, v) in x.row(i).iter() {
                r[k] = v;
            }
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

/// Primal loss `max_{0 <= t <= u} (t z - d t^2 / 2)`.
fn loss(z: f64, u: f64, d: f64) -> f64 {
    if z <= 0.0 || u <= 0.0 {
        0.0
    } else if d > 0.0 {
        let t = (z / d).min(u);
        t * z - 0.5 * d * t * t
    } else {
        u * z
    }
}

struct Svc {
    x: Features,
    y: Vec<i8>,
    p: Vec<f64>,
    upper: Vec<f64>,
    shift: Vec<f64>,
    fixed: Option<Vec<VarFix>>,
    bias: Option<f64>,
}

impl Svc {
    fn new(x: Features, y: Vec<i8>, c: f64, l2: bool, bias: Option<f64>) -> Self {
        let n = y.len();
        let (upper, shift) = if l2 {
            (vec![f64::INFINITY; n], vec![0.5 / c; n])
        } else {
            (vec![c; n], vec![0.0; n])
        };
        Self {
            x,
            y,
            p: vec![-1.0; n],
            upper,
            shift,
            fixed: None,
            bias,
        }
    }
    fn dual(&self) -> SvcDual<'_> {
        SvcDual {
            design: LinearDesign {
                x: &self.x,
                bias: self.bias,
            },
            qp: BoxQp {
                p: &self.p,
                y: &self.y,
                upper: &self.upper,
                equality: Equality::None,
                fixed: self.fixed.as_deref(),
            },
            diag_shift: &self.shift,
        }
    }

    /// Independent oracle: (projected-gradient span over the movable variables, dual
    /// objective f, primal objective P) recomputed from `alpha`.
    fn oracle(&self, alpha: &[f64]) -> (f64, f64, f64) {
        let rows = rows_of(&self.x, self.bias);
        let dim = rows[0].len();
        let mut w = vec![0.0; dim];
        for (i, r) in rows.iter().enumerate() {
            for k in 0..dim {
                w[k] += alpha[i] * f64::from(self.y[i]) * r[k];
            }
        }
        let ww = 0.5 * dotv(&w, &w);
        let (mut f, mut primal) = (ww, ww);
        let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
        for (i, r) in rows.iter().enumerate() {
            let a = alpha[i];
            let m = f64::from(self.y[i]) * dotv(r, &w);
            f += 0.5 * self.shift[i] * a * a + self.p[i] * a;
            primal += loss(-self.p[i] - m, self.upper[i], self.shift[i]);
            let free = self.fixed.as_ref().is_none_or(|f| f[i] == VarFix::Free);
            if free && self.upper[i] > 0.0 {
                let g = m + self.p[i] + self.shift[i] * a;
                let pg = if a <= 0.0 {
                    g.min(0.0)
                } else if a >= self.upper[i] {
                    g.max(0.0)
                } else {
                    g
                };
                hi = hi.max(pg);
                lo = lo.min(pg);
            }
        }
        (hi - lo, f, primal)
    }
}

fn settings(tol: f64, shrinking: Shrinking) -> SolverSettings {
    SolverSettings {
        tol,
        shrinking,
        max_iter: None,
        time_limit: None,
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn svc_at(pr: &Svc, s: &SolverSettings, threads: usize, start: &[f64]) -> (Vec<f64>, DcdResult) {
    let mut alpha = start.to_vec();
    let r = pool(threads)
        .install(|| solve_svc_parallel(&pr.dual(), s, 7, &mut alpha, &mut NoObserver))
        .unwrap();
    (alpha, r)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1.0)
}

#[test]
fn svc_reaches_the_serial_optimum_with_a_closed_gap() {
    let n = PAR_MIN_ROWS + 300;
    let (x, y, _) = blobs(n, 10, 1);
    for (feat, l2, c, bias, shrinking) in [
        (dense(&x), false, 1.0, Some(1.0), Shrinking::On),
        (dense(&x), true, 0.5, None, Shrinking::Off),
        (sparse(&x), false, 4.0, None, Shrinking::On),
        (sparse(&x), true, 2.0, Some(1.0), Shrinking::On),
        (dense(&x), false, 0.1, None, Shrinking::Off),
    ] {
        let pr = Svc::new(feat, y.clone(), c, l2, bias);
        let tol = 1e-4;
        let s = settings(tol, shrinking);
        let (alpha, r) = svc_at(&pr, &s, 2, &vec![0.0; n]);
        assert_eq!(r.info.status, Status::Converged, "l2 {l2} c {c}");
        let (span, f, primal) = pr.oracle(&alpha);
        assert!(span <= 1.001 * tol, "KKT span {span} (l2 {l2}, c {c})");
        assert!(
            rel(f, r.info.objective) <= 1e-10,
            "{f} vs {}",
            r.info.objective
        );
        assert!(rel(primal, r.primal) <= 1e-10, "{primal} vs {}", r.primal);
        let gap = primal + f;
        assert!(gap >= -1e-9 * primal.abs(), "negative gap {gap}");
        assert!(gap <= 1e-3 * primal.abs(), "gap {gap} of primal {primal}");
        // The serial solver at a tight tolerance: the same optimum, within the gap.
        let mut tight = vec![0.0; n];
        let rt = solve_svc(
            &pr.dual(),
            &settings(1e-8, Shrinking::On),
            3,
            &mut tight,
            &mut NoObserver,
        )
        .unwrap();
        let (_, ft, _) = pr.oracle(&tight);
        assert_eq!(rt.info.status, Status::Converged);
        assert!(f >= ft - 1e-9 * ft.abs(), "{f} below the optimum {ft}");
        assert!(
            f - ft <= gap + 1e-9 * ft.abs(),
            "suboptimality {} > gap {gap}",
            f - ft
        );
        assert!(rel(f, ft) <= 1e-5, "{f} vs {ft}");
    }
}

#[test]
fn svc_is_bit_identical_from_two_threads_up_and_serial_on_one() {
    let n = PAR_MIN_ROWS + 300;
    let (x, y, _) = blobs(n, 8, 2);
    for (feat, l2) in [(dense(&x), false), (sparse(&x), true)] {
        let pr = Svc::new(feat, y.clone(), 1.0, l2, Some(1.0));
        let s = settings(1e-3, Shrinking::On);
        let zero = vec![0.0; n];
        let (a2, r2) = svc_at(&pr, &s, 2, &zero);
        for t in [3, 8] {
            let (at, rt) = svc_at(&pr, &s, t, &zero);
            assert_eq!(bits(&a2), bits(&at), "alpha at {t} threads (l2 {l2})");
            assert_eq!(bits(&r2.w), bits(&rt.w), "w at {t} threads");
            assert_eq!(r2.info.iterations, rt.info.iterations);
            assert_eq!(r2.info.objective.to_bits(), rt.info.objective.to_bits());
        }
        // One thread: the serial solver, bit for bit.
        let (a1, r1) = svc_at(&pr, &s, 1, &zero);
        let mut alpha_s = zero.clone();
        let rs = pool(1)
            .install(|| solve_svc(&pr.dual(), &s, 7, &mut alpha_s, &mut NoObserver))
            .unwrap();
        assert_eq!(bits(&a1), bits(&alpha_s));
        assert_eq!(r1, rs);
        // Different iterates, same optimum to the tolerance's reach.
        assert!(rel(r1.info.objective, r2.info.objective) <= 1e-4);
    }
}

#[test]
fn svc_respects_fixed_variables_and_warm_starts() {
    let n = PAR_MIN_ROWS + 300;
    let (x, y, _) = blobs(n, 6, 3);
    let mut pr = Svc::new(dense(&x), y, 2.0, false, None);
    let fixed: Vec<VarFix> = (0..n)
        .map(|i| match (i % 17, i % 19) {
            (0, _) => VarFix::AtUpper,
            (_, 0) => VarFix::AtZero,
            _ => VarFix::Free,
        })
        .collect();
    pr.fixed = Some(fixed.clone());
    let tol = 1e-5;
    let start: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 1.0 } else { 0.0 }).collect();
    let (alpha, r) = svc_at(&pr, &settings(tol, Shrinking::On), 2, &start);
    assert_eq!(r.info.status, Status::Converged);
    for i in 0..n {
        match fixed[i] {
            VarFix::AtUpper => assert_eq!(alpha[i], 2.0),
            VarFix::AtZero => assert_eq!(alpha[i], 0.0),
            VarFix::Free => assert!((0.0..=2.0).contains(&alpha[i])),
        }
    }
    let (span, f, _) = pr.oracle(&alpha);
    assert!(span <= 1.001 * tol, "span {span}");
    let mut alpha_s = vec![0.0; n];
    solve_svc(
        &pr.dual(),
        &settings(tol, Shrinking::On),
        1,
        &mut alpha_s,
        &mut NoObserver,
    )
    .unwrap();
    let (_, fs, _) = pr.oracle(&alpha_s);
    assert!(rel(f, fs) <= 1e-7, "{f} vs {fs}");
}

#[test]
fn svc_pass_limit_and_bad_input_behave_as_the_serial_solver() {
    let n = PAR_MIN_ROWS;
    let (x, y, _) = blobs(n, 5, 4);
    let pr = Svc::new(dense(&x), y, 10.0, false, None);
    let s = SolverSettings {
        max_iter: Some(2),
        ..settings(1e-9, Shrinking::On)
    };
    let (alpha, r) = svc_at(&pr, &s, 2, &vec![0.0; n]);
    assert_eq!(r.info.status, Status::MaxIterations);
    assert_eq!(r.info.iterations, 2);
    assert!(alpha.iter().all(|&a| (0.0..=10.0).contains(&a)));
    let mut short = vec![0.0; n - 1];
    let e = pool(2).install(|| solve_svc_parallel(&pr.dual(), &s, 0, &mut short, &mut NoObserver));
    assert!(e.is_err());
}

struct Svr {
    x: Features,
    t: Vec<f64>,
    eps: f64,
    upper: Vec<f64>,
    shift: Vec<f64>,
    bias: Option<f64>,
}

impl Svr {
    fn dual(&self) -> SvrDual<'_> {
        SvrDual {
            design: LinearDesign {
                x: &self.x,
                bias: self.bias,
            },
            target: &self.t,
            epsilon: self.eps,
            upper: &self.upper,
            diag_shift: &self.shift,
        }
    }
    /// Independent oracle: (dual objective, primal objective, largest subgradient violation).
    fn oracle(&self, beta: &[f64]) -> (f64, f64, f64) {
        let rows = rows_of(&self.x, self.bias);
        let dim = rows[0].len();
        let mut w = vec![0.0; dim];
        for (i, r) in rows.iter().enumerate() {
            for k in 0..dim {
                w[k] += beta[i] * r[k];
            }
        }
        let ww = 0.5 * dotv(&w, &w);
        let (mut f, mut primal, mut viol) = (ww, ww, 0.0f64);
        for (i, r) in rows.iter().enumerate() {
            let (b, u, d) = (beta[i], self.upper[i], self.shift[i]);
            let xw = dotv(r, &w);
            f += 0.5 * d * b * b - self.t[i] * b + self.eps * b.abs();
            primal += loss((self.t[i] - xw).abs() - self.eps, u, d);
            // Minimum-norm subgradient of the dual in beta_i, projected on the box.
            let g = xw - self.t[i] + d * b;
            let (gp, gn) = (g + self.eps, g - self.eps);
            let v = if b > 0.0 && b < u {
                gp.abs()
            } else if b < 0.0 && b > -u {
                gn.abs()
            } else if b == 0.0 {
                (-gp).max(gn).max(0.0)
            } else if b >= u {
                gp.max(0.0)
            } else {
                (-gn).max(0.0)
            };
            viol = viol.max(v);
        }
        (f, primal, viol)
    }
}

#[test]
fn svr_reaches_the_serial_optimum_and_is_thread_count_independent() {
    let n = PAR_MIN_ROWS + 300;
    let (x, _, t) = blobs(n, 8, 5);
    for (feat, l2, c, shrinking) in [
        (dense(&x), false, 1.0, Shrinking::On),
        (sparse(&x), true, 0.5, Shrinking::On),
        (dense(&x), true, 2.0, Shrinking::Off),
    ] {
        let (upper, shift) = if l2 {
            (vec![f64::INFINITY; n], vec![0.5 / c; n])
        } else {
            (vec![c; n], vec![0.0; n])
        };
        let pr = Svr {
            x: feat,
            t: t.clone(),
            eps: 0.1,
            upper,
            shift,
            bias: Some(1.0),
        };
        let s = settings(1e-4, shrinking);
        let run = |threads: usize| {
            let mut beta = vec![0.0; n];
            let r = pool(threads)
                .install(|| solve_svr_parallel(&pr.dual(), &s, 3, &mut beta, &mut NoObserver))
                .unwrap();
            (beta, r)
        };
        let (b2, r2) = run(2);
        assert_eq!(r2.info.status, Status::Converged, "l2 {l2}");
        let (f, primal, viol) = pr.oracle(&b2);
        assert!(rel(f, r2.info.objective) <= 1e-10);
        assert!(rel(primal, r2.primal) <= 1e-10);
        assert!(
            rel(viol, r2.info.max_violation) <= 1e-8,
            "{viol} vs {}",
            r2.info.max_violation
        );
        let gap = primal + f;
        assert!(
            gap >= -1e-9 * primal.abs() && gap <= 1e-3 * primal.abs(),
            "gap {gap}"
        );
        let (b3, r3) = run(3);
        assert_eq!(bits(&b2), bits(&b3), "beta at 3 threads (l2 {l2})");
        assert_eq!(r2.info.iterations, r3.info.iterations);
        // One thread is the serial solver.
        let (b1, r1) = run(1);
        let mut beta_s = vec![0.0; n];
        let rs = solve_svr(&pr.dual(), &s, 3, &mut beta_s, &mut NoObserver).unwrap();
        assert_eq!(bits(&b1), bits(&beta_s));
        assert_eq!(r1, rs);
        // Serial at a tight tolerance: the same optimum, within the gap.
        let mut tight = vec![0.0; n];
        solve_svr(
            &pr.dual(),
            &settings(1e-9, Shrinking::On),
            1,
            &mut tight,
            &mut NoObserver,
        )
        .unwrap();
        let (ft, _, _) = pr.oracle(&tight);
        assert!(f >= ft - 1e-9 * ft.abs(), "{f} below the optimum {ft}");
        assert!(f - ft <= gap + 1e-9 * ft.abs());
        // The serial solver at the same tolerance: both within their gaps of each other (the
        // SVR rule is relative to the first pass, so the gaps, not the tolerance, bound them).
        let (fs, ps, _) = pr.oracle(&beta_s);
        assert!(
            (f - fs).abs() <= gap.max(ps + fs) + 1e-9 * fs.abs(),
            "{f} vs {fs}"
        );
    }
}

#[test]
fn below_the_size_threshold_every_thread_count_runs_the_serial_solver() {
    let n = PAR_MIN_ROWS - 1;
    let (x, y, _) = blobs(n, 4, 6);
    let pr = Svc::new(dense(&x), y, 1.0, false, Some(1.0));
    let s = settings(1e-2, Shrinking::On);
    let mut alpha_s = vec![0.0; n];
    let rs = solve_svc(&pr.dual(), &s, 7, &mut alpha_s, &mut NoObserver).unwrap();
    let (a2, r2) = svc_at(&pr, &s, 2, &vec![0.0; n]);
    assert_eq!(bits(&a2), bits(&alpha_s));
    assert_eq!(r2, rs);
}
