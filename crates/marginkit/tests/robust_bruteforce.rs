//! Brute-force oracle for the robust SVC and SVR outlier paths on tiny data, sharing no code with
//! the engine's checker or objective: the kernel is built here by hand, every partition's problem
//! is solved by clarabel, and the full robust objective is evaluated here from its definition.
//! The SVR part (below [`SvrProblem`]) also checks Theorem 5's conditions, written here from the
//! theorem, at every breakpoint.
//!
//! Robust SVC (no bias): `F(f) = 1/2 |f|_H^2 + C sum_i loss(t_i)`, `t_i = 1 - y_i f(x_i)`,
//! `T = 1 - s`, `loss(t) = [t]_+ - (1 - theta) [t - T]_+`.
//!
//! **Global optimum.** `loss = min(g_I, g_O)` with the inlier piece `g_I(t) = [t]_+` and the
//! outlier piece `g_O(t) = [t]_+ - (1 - theta)(t - T)` (`g_O < g_I` exactly when `t > T`), so
//! `min_f F = min_P min_f G_P(f)` over the `2^n` partitions `P`, with `G_P` the convex objective
//! that charges each sample its piece (no polytope needed). The paper's form (Eq. 13), the
//! minimum over `P` of the conditional problem on the polytope `pol(P; s)` (Eq. 12, 14), gives
//! the same value; both are enumerated and must agree.
//!
//! **Local optimality, as Theorem 4 states it.** Theorem 4: `f` is locally optimal iff it is
//! conditionally optimal for its partition (19a-d) and no sample lies on the threshold (19e).
//! Appendix B's argument is that the only partitions with feasible points near `f` are those
//! whose polytope contains `f`, i.e. the own partition with any subset of the samples on the
//! threshold flipped. Near `f`, `F` is the minimum of those partitions' convex conditional
//! objectives, so `f` is locally optimal exactly when it attains the conditional optimum of every
//! partition whose polytope contains it. That is checked here by brute force over those
//! partitions (a single one when 19e holds; more at a degenerate jump, where the flipped sample
//! stays on the threshold and `f` is the optimum of both sides). The theorem's neighbourhood is
//! therefore "flips of samples on the threshold", not "every single-sample flip": a partition
//! that flips a sample strictly inside its side has no points near `f`, and its conditional
//! optimum may be lower (another local optimum farther away). How often that happens is counted
//! and printed, not asserted.
//!
//! Also checked: pre-jump points are not locally optimal by this oracle (Theorem 3: flipping the
//! threshold sample gives a strictly lower conditional optimum) and the jump lowers `F`, unless
//! the jump is degenerate; every point's objective is at least the global optimum at its
//! parameter.

mod common;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, ZeroConeT,
};
use common::robust::{factor, Rng};
use marginkit::data::{Dataset, DenseMatrix, Features};
use marginkit::fit::Control;
use marginkit::robust::{NodeKind, OutlierPath, PathKind, RobustData, RobustParams, RunEnd, Task};
use marginkit::svm::{Gamma, KernelKind, KernelParams};

/// `n` points of two overlapping 2-D blobs with labels `+-1`, some flipped; the first label is
/// `+1`, so the engine's internal labels (first class = +1) equal these.
fn tiny_blobs(n: usize, flip: f64, seed: u64) -> (Vec<[f64; 2]>, Vec<f64>) {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        x.push([c + 0.9 * r.normal(), 0.5 * c + 0.9 * r.normal()]);
        y.push(if i > 0 && r.next() < flip { -c } else { c });
    }
    (x, y)
}

#[derive(Clone, Copy, Debug)]
enum Kern {
    Linear,
    Rbf(f64),
}

/// The Gram matrix, computed here from the points.
fn gram(x: &[[f64; 2]], k: Kern) -> Vec<Vec<f64>> {
    common::robust::gram(x.len(), |i, j| {
        let (a, b) = (x[i], x[j]);
        match k {
            Kern::Linear => a[0] * b[0] + a[1] * b[1],
            Kern::Rbf(g) => (-g * ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2))).exp(),
        }
    })
}

/// One robust SVC instance: factor, labels, `C`, `theta` and `T = 1 - s`.
struct Problem<'a> {
    kmat: &'a [Vec<f64>],
    g: &'a [Vec<f64>],
    y: &'a [f64],
    c: f64,
    theta: f64,
    tt: f64,
}

impl Problem<'_> {
    /// The full robust objective at `f = K beta`, from its definition.
    fn objective(&self, beta: &[f64]) -> f64 {
        let f = self.f_of(beta);
        let reg = 0.5 * beta.iter().zip(&f).map(|(a, b)| a * b).sum::<f64>();
        reg + self.loss_sum(&f)
    }

    fn loss_sum(&self, f: &[f64]) -> f64 {
        let mut s = 0.0;
        for (fi, yi) in f.iter().zip(self.y) {
            let t = 1.0 - yi * fi;
            s += t.max(0.0) - (1.0 - self.theta) * (t - self.tt).max(0.0);
        }
        self.c * s
    }

    fn f_of(&self, beta: &[f64]) -> Vec<f64> {
        self.kmat
            .iter()
            .map(|row| row.iter().zip(beta).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// Minimizes the objective that charges sample `i` its outlier piece when `out[i]`, its
    /// inlier piece otherwise; with `polytope`, on `pol(P; s)` (inliers `t <= T`, outliers
    /// `t >= T`, Eq. 12). Returns `f` and the full objective evaluated at it, or `None` when the
    /// polytope is empty.
    fn solve(&self, out: &[bool], polytope: bool) -> Option<(Vec<f64>, f64)> {
        let n = self.y.len();
        let r = self.g[0].len();
        let nv = r + n;
        let (mut colptr, mut rowval, mut nzval) = (vec![0], vec![], vec![]);
        for j in 0..nv {
            if j < r {
                rowval.push(j);
                nzval.push(1.0);
            }
            colptr.push(rowval.len());
        }
        let pm = CscMatrix::new(nv, nv, colptr, rowval, nzval);
        // Objective: 1/2 |w|^2 + C sum xi_i, minus C (1 - theta) t_i for outliers
        // (t_i = 1 - y_i G_i w, constants dropped).
        let mut q = vec![0.0; nv];
        for i in 0..n {
            q[r + i] = self.c;
            if out[i] {
                for (j, gij) in self.g[i].iter().enumerate() {
                    q[j] += self.c * (1.0 - self.theta) * self.y[i] * gij;
                }
            }
        }
        let (mut ri, mut ci, mut vi, mut b) = (vec![], vec![], vec![], vec![]);
        let mut m = 0;
        // Row `coef * y_i G_i w + xcoef * xi_i <= rhs`.
        let mut row = |coef: f64, i: usize, xcoef: f64, rhs: f64| {
            if coef != 0.0 {
                for (j, &gij) in self.g[i].iter().enumerate() {
                    ri.push(m);
                    ci.push(j);
                    vi.push(coef * self.y[i] * gij);
                }
            }
            if xcoef != 0.0 {
                ri.push(m);
                ci.push(r + i);
                vi.push(xcoef);
            }
            b.push(rhs);
            m += 1;
        };
        for (i, &is_out) in out.iter().enumerate() {
            row(0.0, i, -1.0, 0.0); // xi >= 0
            row(-1.0, i, -1.0, -1.0); // 1 - y f <= xi
            if polytope {
                if is_out {
                    row(1.0, i, 0.0, 1.0 - self.tt); // t >= T: y f <= 1 - T
                } else {
                    row(-1.0, i, 0.0, self.tt - 1.0); // t <= T: y f >= 1 - T
                }
            }
        }
        let a = CscMatrix::new_from_triplets(m, nv, ri, ci, vi);
        let st = DefaultSettingsBuilder::default()
            .verbose(false)
            .tol_gap_abs(1e-11)
            .tol_gap_rel(1e-11)
            .tol_feas(1e-11)
            .max_iter(400)
            .build()
            .unwrap();
        let mut solver = DefaultSolver::new(&pm, &q, &a, &b, &[NonnegativeConeT(m)], st).unwrap();
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {}
            SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible if polytope => {
                return None
            }
            s => panic!("clarabel: {s:?}"),
        }
        let w = &solver.solution.x[..r];
        let f: Vec<f64> = (0..n)
            .map(|i| self.g[i].iter().zip(w).map(|(a, b)| a * b).sum())
            .collect();
        let reg = 0.5 * w.iter().map(|v| v * v).sum::<f64>();
        Some((f.clone(), reg + self.loss_sum(&f)))
    }

    /// The global optimum by enumeration of all `2^n` partitions, in both forms (pieces without
    /// polytope; conditional problems on the polytopes), which must agree.
    fn global(&self) -> f64 {
        let n = self.y.len();
        let (mut by_pieces, mut by_polytopes) = (f64::INFINITY, f64::INFINITY);
        let mut feasible = 0;
        for mask in 0u32..1 << n {
            let out: Vec<bool> = (0..n).map(|i| mask >> i & 1 == 1).collect();
            by_pieces = by_pieces.min(self.solve(&out, false).unwrap().1);
            if let Some((_, j)) = self.solve(&out, true) {
                by_polytopes = by_polytopes.min(j);
                feasible += 1;
            }
        }
        assert!(feasible >= 1);
        assert!(
            (by_pieces - by_polytopes).abs() <= 1e-6 * by_pieces.max(1.0),
            "global optimum: pieces {by_pieces} vs polytopes {by_polytopes}"
        );
        by_pieces.min(by_polytopes)
    }
}

/// The robust SVC path on `(x, y)` along `kind`, every node with its coefficients.
fn run_path(x: &[[f64; 2]], y: &[f64], k: Kern, c: f64, kind: PathKind) -> OutlierPath {
    run_task_path(x, y, k, c, kind, Task::Svc, None)
}

/// The robust path of `task` on `(x, y)` along `kind` (OP-theta at `s_fixed`, or the task's
/// default), every node with its coefficients.
fn run_task_path(
    x: &[[f64; 2]],
    y: &[f64],
    k: Kern,
    c: f64,
    kind: PathKind,
    task: Task,
    s_fixed: Option<f64>,
) -> OutlierPath {
    let n = x.len();
    let flat: Vec<f64> = x.iter().flat_map(|p| p.iter().copied()).collect();
    let data = Dataset::new(
        Features::Dense(DenseMatrix::new(n, 2, flat).unwrap()),
        y.to_vec(),
        None,
    )
    .unwrap();
    let kernel = match k {
        Kern::Linear => KernelParams {
            kind: KernelKind::Linear,
            gamma: Gamma::Value(1.0),
            coef0: 0.0,
            degree: 3,
        },
        Kern::Rbf(g) => KernelParams {
            kind: KernelKind::Rbf,
            gamma: Gamma::Value(g),
            coef0: 0.0,
            degree: 3,
        },
    };
    let mut p = RobustParams::new()
        .task(task)
        .kind(kind)
        .kernel(kernel)
        .c(c)
        .keep_solutions(true);
    if let Some(s) = s_fixed {
        p = p.s_fixed(s);
    }
    let p = p.check().unwrap();
    let fit = marginkit::robust::fit(&p, &RobustData::new(&data), &mut Control::default()).unwrap();
    fit.report
}

/// What the oracle found on one path.
#[derive(Default, Debug)]
struct Tally {
    /// Non-pre-jump points checked for local optimality.
    points: usize,
    /// Of those, points with a sample on the threshold (degenerate jumps).
    on_threshold: usize,
    /// Pre-jump points shown not locally optimal by a strictly better threshold flip.
    prejump_improved: usize,
    /// Single-sample flips (any sample) whose conditional optimum is below a local optimum.
    one_flip_better: usize,
    /// Points whose objective equals the global optimum at their parameter.
    at_global: usize,
    /// Final points equal to the global optimum, and final points checked.
    final_at_global: usize,
    finals: usize,
}

/// Checks every point of `path` on `(x, y)` against the brute-force oracle.
fn check(x: &[[f64; 2]], y: &[f64], k: Kern, c: f64, path: &OutlierPath, tally: &mut Tally) {
    assert_eq!(path.end, RunEnd::Completed);
    let n = y.len();
    let kmat = gram(x, k);
    let g = factor(&kmat);
    let mut globals: Vec<(f64, f64, f64)> = Vec::new();
    let last = path.nodes.len() - 1;
    for (idx, node) in path.nodes.iter().enumerate() {
        let beta = node.beta.as_ref().unwrap();
        let (theta, s) = match path.kind {
            PathKind::Theta => (node.param, 0.0),
            // The standard SVM opens OP-s: the theta = 1 problem (no sample beyond s).
            PathKind::S if node.kind == NodeKind::Start => (1.0, node.param),
            PathKind::S => (0.0, node.param),
        };
        let pr = Problem {
            kmat: &kmat,
            g: &g,
            y,
            c,
            theta,
            tt: 1.0 - s,
        };
        let fval = pr.objective(beta);
        let scale = fval.abs().max(1.0);
        let tol = 1e-6 * scale;
        let f = pr.f_of(beta);
        let t: Vec<f64> = (0..n).map(|i| 1.0 - y[i] * f[i]).collect();
        // The side of each sample, and the samples on the threshold (within rounding).
        let side_tol = 1e-7 * pr.tt.abs().max(1.0);
        let base: Vec<bool> = t.iter().map(|&ti| ti > pr.tt).collect();
        let on: Vec<usize> = (0..n)
            .filter(|&i| (t[i] - pr.tt).abs() <= side_tol)
            .collect();
        assert!(on.len() <= 4, "{} samples on the threshold", on.len());
        // Conditional optima of the partitions whose polytope contains f.
        let mut best_near = f64::INFINITY;
        for sub in 0u32..1 << on.len() {
            let mut out = base.clone();
            for (b, &i) in on.iter().enumerate() {
                if sub >> b & 1 == 1 {
                    out[i] = !out[i];
                }
            }
            if let Some((_, j)) = pr.solve(&out, true) {
                best_near = best_near.min(j);
            }
        }
        let locally_optimal = best_near >= fval - tol;
        let what = format!(
            "{:?} {:?} node {idx} ({:?}, theta {theta}, s {s}): F = {fval}, best near = {best_near}",
            k, path.kind, node.kind
        );
        if node.kind == NodeKind::PreJump {
            // Theorem 3: the flip across the threshold is strictly better, unless the jump is
            // degenerate (f unchanged: the next point has the same objective).
            let next = pr.objective(path.nodes[idx + 1].beta.as_ref().unwrap());
            let degenerate = (next - fval).abs() <= tol;
            assert!(!on.is_empty(), "{what}: pre-jump point off the threshold");
            if degenerate {
                assert!(locally_optimal, "{what}: degenerate jump not at an optimum");
            } else {
                assert!(!locally_optimal, "{what}: pre-jump point locally optimal");
                // The jump lands strictly lower (it may flip further samples on the way, so
                // its landing need not be the single flip's optimum).
                assert!(
                    next < fval - tol,
                    "{what}: the jump does not lower F ({next})"
                );
                tally.prejump_improved += 1;
            }
            continue;
        }
        assert!(locally_optimal, "{what}: not locally optimal");
        // f attains its own partition's conditional optimum (no better point in its polytope).
        assert!(
            (best_near - fval).abs() <= tol,
            "{what}: not conditionally optimal"
        );
        tally.points += 1;
        tally.on_threshold += usize::from(!on.is_empty());
        // Single-sample flips of samples off the threshold: their polytopes have no point near f;
        // counted only.
        for i in (0..n).filter(|i| !on.contains(i)) {
            let mut out = base.clone();
            out[i] = !out[i];
            if let Some((_, j)) = pr.solve(&out, true) {
                tally.one_flip_better += usize::from(j < fval - tol);
            }
        }
        // The global optimum at this (theta, s), by enumeration.
        let glob = match globals.iter().find(|(a, b, _)| *a == theta && *b == s) {
            Some(&(_, _, v)) => v,
            None => {
                let v = pr.global();
                globals.push((theta, s, v));
                v
            }
        };
        assert!(
            fval >= glob - tol,
            "{what}: below the global optimum {glob}"
        );
        let at_global = fval <= glob + tol;
        tally.at_global += usize::from(at_global);
        if idx == last {
            tally.finals += 1;
            tally.final_at_global += usize::from(at_global);
        }
        eprintln!("{what}, global {glob}, on the threshold {on:?}");
    }
}

/// OP-theta and OP-s of robust SVC on tiny overlapping blobs with flipped labels (n = 8, all 256
/// partitions), linear and RBF kernels, two values of C. Every point (theta from 1 down to 0, s
/// from the standard SVM's value up to 0) is checked against the brute-force oracle above.
///
/// On this data (printed with `--nocapture`): 89 points pass as local optima, 16 pre-jump points
/// are rejected with a strictly better threshold flip and the jump lowers `F`; the only points
/// with a sample on the threshold are the 9 OP-s starts (theta = 1, where the problem is convex,
/// s placed at the standard SVM's extreme slack); 78 of the 89 points and 20 of the 24 final
/// points (OP-theta 9 of 12, OP-s 11 of 12, three of those OP-s paths being only the convex
/// theta = 1 start as no sample lies beyond T) equal the global optimum at their parameter, none is
/// below it; 10 single flips of samples off the threshold have a conditional optimum below a
/// local optimum, so "no single flip improves" is not what Theorem 4 guarantees.
#[test]
fn path_points_are_local_optima_by_brute_force_and_never_below_the_global_optimum() {
    let mut tally = Tally::default();
    for seed in [1u64, 2, 3] {
        let (x, y) = tiny_blobs(8, 0.3, seed);
        for k in [Kern::Linear, Kern::Rbf(1.0)] {
            for c in [1.0, 5.0] {
                for kind in [PathKind::Theta, PathKind::S] {
                    let path = run_path(&x, &y, k, c, kind);
                    check(&x, &y, k, c, &path, &mut tally);
                }
            }
        }
    }
    eprintln!("{tally:?}");
    assert_eq!(tally.finals, 24);
    // The oracle discriminates: it rejects the pre-jump points the path passes through.
    assert!(tally.prejump_improved > 0, "no jump on this data");
}

/// `n` points of a smooth function of two inputs with gross errors added to every fourth
/// output (sign at random).
fn tiny_wave(n: usize, seed: u64) -> (Vec<[f64; 2]>, Vec<f64>) {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let (a, b) = (2.0 * r.next() - 1.0, 2.0 * r.next() - 1.0);
        let mut t = (2.0 * a).sin() + 0.5 * b + 0.1 * r.normal();
        if i % 4 == 1 {
            t += if r.next() < 0.5 { 2.5 } else { -2.5 };
        }
        x.push([a, b]);
        y.push(t);
    }
    (x, y)
}

/// One robust SVR instance: `F(f) = 1/2 |f|_H^2 + C sum_i loss(|r_i|)`, `r_i = y_i - f(x_i)`,
/// `loss(t) = t - (1 - theta) [t - s]_+`.
///
/// **Global optimum.** For `t >= 0`, `loss(t) = min(t, theta t + (1 - theta) s)`: the inlier
/// piece `|r|` and the outlier piece `theta |r| + (1 - theta) s` are both convex in `r`, so
/// `min_f F` is the least of the `2^n` convex problems that charge each sample one piece. The
/// paper's form (Eqs. 22-24) minimizes on polytopes instead; the set `|r_i| >= s` is two
/// half-spaces, so an outlier carries a sign (`r_i >= s` or `r_i <= -s`) and the polytopes are
/// `3^n`. Both are enumerated and must agree.
struct SvrProblem<'a> {
    kmat: &'a [Vec<f64>],
    g: &'a [Vec<f64>],
    y: &'a [f64],
    c: f64,
    theta: f64,
    s: f64,
    undecided: std::cell::Cell<usize>,
}

impl SvrProblem<'_> {
    fn f_of(&self, beta: &[f64]) -> Vec<f64> {
        self.kmat
            .iter()
            .map(|row| row.iter().zip(beta).map(|(a, b)| a * b).sum())
            .collect()
    }

    fn loss_sum(&self, f: &[f64]) -> f64 {
        let mut sum = 0.0;
        for (fi, yi) in f.iter().zip(self.y) {
            let t = (yi - fi).abs();
            sum += t - (1.0 - self.theta) * (t - self.s).max(0.0);
        }
        self.c * sum
    }

    /// The full robust objective at `f = K beta`, from its definition.
    fn objective(&self, beta: &[f64]) -> f64 {
        let f = self.f_of(beta);
        let reg = 0.5 * beta.iter().zip(&f).map(|(a, b)| a * b).sum::<f64>();
        reg + self.loss_sum(&f)
    }

    /// Minimizes the objective that charges sample `i` its inlier piece when `side[i] == 0`,
    /// its outlier piece otherwise; with `polytope`, on the partition's polytope (inliers
    /// `|r| <= s`, outliers `side[i] r >= s`). Returns `f` and the full objective at it, or
    /// `None` when the polytope is empty, or when clarabel cannot decide and `undecided_ok`
    /// (a polytope that is empty or all boundary, counted in `undecided`).
    fn solve(&self, side: &[i8], polytope: bool, undecided_ok: bool) -> Option<(Vec<f64>, f64)> {
        let n = self.y.len();
        let r = self.g[0].len();
        let nv = r + n;
        let (mut colptr, mut rowval, mut nzval) = (vec![0], vec![], vec![]);
        for j in 0..nv {
            if j < r {
                rowval.push(j);
                nzval.push(1.0);
            }
            colptr.push(rowval.len());
        }
        let pm = CscMatrix::new(nv, nv, colptr, rowval, nzval);
        // Objective: 1/2 |w|^2 + C sum_i weight_i xi_i with xi_i >= |r_i| (constants dropped).
        let weight: Vec<f64> = side
            .iter()
            .map(|&sd| if sd == 0 { 1.0 } else { self.theta })
            .collect();
        let q: Vec<f64> = (0..nv)
            .map(|j| if j < r { 0.0 } else { self.c * weight[j - r] })
            .collect();
        let (mut ri, mut ci, mut vi, mut b) = (vec![], vec![], vec![], vec![]);
        let mut m = 0;
        // Row `coef * G_i w + xcoef * xi_i <= rhs` (`f_i = G_i w`).
        let mut row = |coef: f64, i: usize, xcoef: f64, rhs: f64| {
            if coef != 0.0 {
                for (j, &gij) in self.g[i].iter().enumerate() {
                    ri.push(m);
                    ci.push(j);
                    vi.push(coef * gij);
                }
            }
            ri.push(m);
            ci.push(r + i);
            vi.push(xcoef);
            b.push(rhs);
            m += 1;
        };
        // Free of charge (theta = 0 outliers): xi pinned at 0 by the zero cone, as it would be
        // unbounded above otherwise.
        let pinned: Vec<usize> = (0..n).filter(|&i| weight[i] == 0.0).collect();
        for &i in &pinned {
            row(0.0, i, 1.0, 0.0);
        }
        for i in 0..n {
            if weight[i] > 0.0 {
                row(-1.0, i, -1.0, -self.y[i]); // r = y - f <= xi
                row(1.0, i, -1.0, self.y[i]); // -r <= xi
            }
            if polytope {
                match side[i] {
                    0 => {
                        row(1.0, i, 0.0, self.y[i] + self.s); // r >= -s
                        row(-1.0, i, 0.0, self.s - self.y[i]); // r <= s
                    }
                    1 => row(1.0, i, 0.0, self.y[i] - self.s), // r >= s
                    _ => row(-1.0, i, 0.0, -self.y[i] - self.s), // r <= -s
                }
            }
        }
        let a = CscMatrix::new_from_triplets(m, nv, ri, ci, vi);
        let st = DefaultSettingsBuilder::default()
            .verbose(false)
            .tol_gap_abs(1e-11)
            .tol_gap_rel(1e-11)
            .tol_feas(1e-11)
            .max_iter(400)
            .build()
            .unwrap();
        let cones = [ZeroConeT(pinned.len()), NonnegativeConeT(m - pinned.len())];
        let mut solver = DefaultSolver::new(&pm, &q, &a, &b, &cones, st).unwrap();
        solver.solve();
        match solver.solution.status {
            SolverStatus::Solved | SolverStatus::AlmostSolved => {}
            SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible if polytope => {
                return None
            }
            SolverStatus::MaxIterations | SolverStatus::InsufficientProgress
                if polytope && undecided_ok =>
            {
                self.undecided.set(self.undecided.get() + 1);
                return None;
            }
            st => panic!("clarabel: {st:?}"),
        }
        let w = &solver.solution.x[..r];
        let f: Vec<f64> = (0..n)
            .map(|i| self.g[i].iter().zip(w).map(|(a, b)| a * b).sum())
            .collect();
        let reg = 0.5 * w.iter().map(|v| v * v).sum::<f64>();
        Some((f.clone(), reg + self.loss_sum(&f)))
    }

    /// The global optimum by enumeration of the `2^n` piece assignments; `with_polytopes`, also
    /// of the `3^n` signed polytopes, which must agree. A polytope clarabel cannot decide is
    /// skipped: that can only raise the polytopes' minimum, so it cannot hide a disagreement.
    fn global(&self, with_polytopes: bool) -> f64 {
        let n = self.y.len();
        let mut by_pieces = f64::INFINITY;
        for mask in 0u32..1 << n {
            let side: Vec<i8> = (0..n).map(|i| (mask >> i & 1) as i8).collect();
            by_pieces = by_pieces.min(self.solve(&side, false, false).unwrap().1);
        }
        if !with_polytopes {
            return by_pieces;
        }
        let mut by_polytopes = f64::INFINITY;
        for code in 0..3u32.pow(n as u32) {
            let side: Vec<i8> = (0..n)
                .map(|i| (code / 3u32.pow(i as u32) % 3) as i8 - 1)
                .collect();
            if let Some((_, j)) = self.solve(&side, true, true) {
                by_polytopes = by_polytopes.min(j);
            }
        }
        assert!(
            (by_pieces - by_polytopes).abs() <= 1e-6 * by_pieces.max(1.0),
            "global optimum: pieces {by_pieces} vs polytopes {by_polytopes}"
        );
        by_pieces.min(by_polytopes)
    }
}

/// Theorem 5 (with the sign corrections of the paper's digest) at `beta` with residuals `r`:
/// `r_i = 0 => |beta_i| <= C` (26a); `0 < |r_i| < s => beta_i = C sign(r_i)` (26b);
/// `|r_i| > s => beta_i = C theta sign(r_i)` (26c); `|r_i| != s` (26d, for `theta < 1`; at
/// `theta = 1` the loss is the convex LAD loss and both sides ask `beta_i = C sign(r_i)`).
/// `Err` names the first condition that fails.
fn theorem5(beta: &[f64], r: &[f64], c: f64, theta: f64, s: f64) -> Result<(), String> {
    let tol_b = 1e-7 * c;
    let tol_r = 1e-7 * s.max(1.0);
    for (i, (&b, &ri)) in beta.iter().zip(r).enumerate() {
        let a = ri.abs();
        if a <= tol_r {
            if b.abs() > c + tol_b {
                return Err(format!("26a: sample {i}, r = {ri}, beta = {b}"));
            }
        } else if theta < 1.0 && (a - s).abs() <= tol_r {
            return Err(format!("26d: sample {i} on the threshold, r = {ri}"));
        } else {
            let (target, cond) = if a < s {
                (c * ri.signum(), "26b")
            } else {
                (c * theta * ri.signum(), "26c")
            };
            if (b - target).abs() > tol_b {
                return Err(format!(
                    "{cond}: sample {i}, r = {ri}, beta = {b} vs {target}"
                ));
            }
        }
    }
    Ok(())
}

/// What the SVR oracle found on one path.
#[derive(Default, Debug)]
struct SvrTally {
    /// Non-pre-jump points checked for local optimality.
    points: usize,
    /// Of those, points at `theta < 1` where Theorem 5 and the brute force give one verdict.
    theorem5_agrees: usize,
    /// Points at `theta < 1` with a sample on the threshold (Theorem 5 fails by 26d alone).
    on_threshold: usize,
    /// Pre-jump points failing Theorem 5 and shown not locally optimal by a better flip.
    prejump_improved: usize,
    /// Degenerate jumps (`F` unchanged across the flip).
    degenerate: usize,
    /// Single-sample flips (any sample) whose conditional optimum is below a local optimum.
    one_flip_better: usize,
    /// Points whose objective equals the global optimum at their parameter.
    at_global: usize,
    /// Final points equal to the global optimum, and final points checked.
    final_at_global: usize,
    finals: usize,
    /// Polytopes clarabel could not decide (skipped in the enumerations that allow it).
    undecided: usize,
}

/// Checks every point of the SVR `path` on `(x, y)` against Theorem 5 and the brute force.
#[allow(clippy::too_many_arguments)]
fn check_svr(
    x: &[[f64; 2]],
    y: &[f64],
    k: Kern,
    c: f64,
    s_theta: f64,
    path: &OutlierPath,
    polytopes_at_end: bool,
    tally: &mut SvrTally,
) {
    assert_eq!(path.end, RunEnd::Completed);
    let n = y.len();
    let kmat = gram(x, k);
    let g = factor(&kmat);
    let mut globals: Vec<(f64, f64, f64)> = Vec::new();
    let last = path.nodes.len() - 1;
    for (idx, node) in path.nodes.iter().enumerate() {
        let beta = node.beta.as_ref().unwrap();
        let (theta, s) = match path.kind {
            PathKind::Theta => (node.param, s_theta),
            // The LAD-SVR opens OP-s: the theta = 1 problem at s = s_R.
            PathKind::S if node.kind == NodeKind::Start => (1.0, node.param),
            PathKind::S => (0.0, node.param),
        };
        let pr = SvrProblem {
            kmat: &kmat,
            g: &g,
            y,
            c,
            theta,
            s,
            undecided: std::cell::Cell::new(0),
        };
        let fval = pr.objective(beta);
        let tol = 1e-6 * fval.abs().max(1.0);
        let f = pr.f_of(beta);
        let r: Vec<f64> = (0..n).map(|i| y[i] - f[i]).collect();
        let side_tol = 1e-7 * s.max(1.0);
        let base: Vec<i8> = r
            .iter()
            .map(|&ri| if ri.abs() > s { ri.signum() as i8 } else { 0 })
            .collect();
        let on: Vec<usize> = (0..n)
            .filter(|&i| (r[i].abs() - s).abs() <= side_tol)
            .collect();
        assert!(on.len() <= 4, "{} samples on the threshold", on.len());
        // Conditional optima of the partitions whose polytope contains f: samples on the
        // threshold may be inliers or outliers on the side of their residual.
        let mut best_near = f64::INFINITY;
        for sub in 0u32..1 << on.len() {
            let mut side = base.clone();
            for (bit, &i) in on.iter().enumerate() {
                if sub >> bit & 1 == 1 {
                    side[i] = if side[i] == 0 { r[i].signum() as i8 } else { 0 };
                }
            }
            if let Some((_, j)) = pr.solve(&side, true, false) {
                best_near = best_near.min(j);
            }
        }
        let locally_optimal = best_near >= fval - tol;
        let thm5 = theorem5(beta, &r, c, theta, s);
        let what = format!(
            "SVR {k:?} {:?} node {idx} ({:?}, theta {theta}, s {s}): F = {fval}, best near = \
             {best_near}, Theorem 5 {thm5:?}",
            path.kind, node.kind
        );
        if node.kind == NodeKind::PreJump {
            let next = pr.objective(path.nodes[idx + 1].beta.as_ref().unwrap());
            assert!(!on.is_empty(), "{what}: pre-jump point off the threshold");
            assert!(
                thm5.as_ref().is_err_and(|e| e.starts_with("26d")),
                "{what}: Theorem 5 does not fail by 26d alone"
            );
            if (next - fval).abs() <= tol {
                // Degenerate: f unchanged by the flip, the optimum of both partitions. Only a
                // singular K (linear kernel, n > d) leaves the multipliers free to absorb it.
                assert!(locally_optimal, "{what}: degenerate jump not at an optimum");
                assert!(
                    matches!(k, Kern::Linear),
                    "{what}: degenerate jump, RBF kernel"
                );
                tally.degenerate += 1;
            } else {
                assert!(!locally_optimal, "{what}: pre-jump point locally optimal");
                assert!(
                    next < fval - tol,
                    "{what}: the jump does not lower F ({next})"
                );
                tally.prejump_improved += 1;
            }
            continue;
        }
        assert!(locally_optimal, "{what}: not locally optimal");
        assert!(
            (best_near - fval).abs() <= tol,
            "{what}: not conditionally optimal"
        );
        tally.points += 1;
        if theta < 1.0 {
            if on.is_empty() {
                // Theorem 5: off the threshold, locally optimal iff 26a-c hold.
                assert!(thm5.is_ok(), "{what}: local optimum fails Theorem 5");
                tally.theorem5_agrees += 1;
            } else {
                // A degenerate jump's landing: locally optimal (both partitions' optimum),
                // although 26d fails; Theorem 5 presumes unique multipliers.
                assert!(
                    thm5.as_ref().is_err_and(|e| e.starts_with("26d")),
                    "{what}: on the threshold, Theorem 5 fails by more than 26d"
                );
                assert!(
                    matches!(k, Kern::Linear),
                    "{what}: on the threshold, RBF kernel"
                );
                tally.on_threshold += 1;
            }
        } else {
            // theta = 1: 26a-c are the KKT conditions of the convex LAD-SVR.
            assert!(thm5.is_ok(), "{what}: the convex optimum fails 26a-c");
        }
        for i in (0..n).filter(|i| !on.contains(i)) {
            let mut side = base.clone();
            side[i] = if side[i] == 0 { r[i].signum() as i8 } else { 0 };
            if let Some((_, j)) = pr.solve(&side, true, true) {
                tally.one_flip_better += usize::from(j < fval - tol);
            }
        }
        let glob = match globals.iter().find(|(a, b, _)| *a == theta && *b == s) {
            Some(&(_, _, v)) => v,
            None => {
                let v = pr.global(polytopes_at_end && idx == last);
                globals.push((theta, s, v));
                v
            }
        };
        assert!(
            fval >= glob - tol,
            "{what}: below the global optimum {glob}"
        );
        let at_global = fval <= glob + tol;
        tally.at_global += usize::from(at_global);
        if idx == last {
            tally.finals += 1;
            tally.final_at_global += usize::from(at_global);
        }
        tally.undecided += pr.undecided.get();
        eprintln!("{what}, global {glob}, on the threshold {on:?}");
    }
}

/// OP-theta (s = 0.5) and OP-s (s from s_R down to 0.2 s_R) of robust SVR on a tiny regression
/// with two gross output errors (n = 7: all 128 piece assignments at every point, and all 2,187
/// signed polytopes at the end of the six OP-theta paths at C = 1), linear and RBF kernels, two
/// values of C. Every point is checked against Theorem 5 and the brute-force oracle; asserted at
/// every point: pre-jump points fail Theorem 5 by 26d alone and, unless the jump is degenerate,
/// a threshold flip is strictly better and the jump lowers `F`; every other point is its
/// partition's conditional optimum and a local optimum by brute force, satisfies 26a-c, and is
/// never below the global optimum at its parameter.
///
/// On this data (printed with `--nocapture`): 84 points pass as local optima; 19 pre-jump points
/// are rejected with a strictly better flip; 4 jumps are degenerate (linear kernel, n = 7 > d = 2),
/// their 4 landings stay on the threshold and are the only points at `theta < 1` where Theorem 5
/// (26d) and the brute force disagree, the other 56 agree; the 12 OP-s starts put the sample of
/// largest residual on the threshold at `theta = 1`, where the loss is convex. 75 of the 84 points
/// and 17 of the 24 final points equal the global optimum at their parameter: the path follows
/// local optima, and the global one may lie in a partition the path never reaches, so that rate
/// is asserted at its measured level with a margin (a lower rate means the path settles in worse
/// local optima than it does now), not as "always". 7 single flips of samples off the threshold
/// have a lower conditional optimum than a local optimum (counted, not asserted, as for SVC).
#[test]
fn svr_path_points_satisfy_theorem5_and_are_local_optima_by_brute_force() {
    let mut tally = SvrTally::default();
    let s_theta = 0.5;
    for seed in [1u64, 2, 3] {
        let (x, y) = tiny_wave(7, seed);
        for k in [Kern::Linear, Kern::Rbf(1.0)] {
            for c in [1.0, 5.0] {
                for kind in [PathKind::Theta, PathKind::S] {
                    let path = run_task_path(&x, &y, k, c, kind, Task::Svr, Some(s_theta));
                    // The paper's polytope form (3^n problems) at the end of OP-theta at C = 1.
                    let polytopes = kind == PathKind::Theta && c == 1.0;
                    check_svr(&x, &y, k, c, s_theta, &path, polytopes, &mut tally);
                }
            }
        }
    }
    eprintln!("{tally:?}");
    assert_eq!(tally.finals, 24);
    // The oracle discriminates: it rejects the pre-jump points the path passes through.
    assert!(tally.prejump_improved > 0, "no jump on this data");
    // Measured 75 of 84 and 17 of 24 (see above); not a theorem.
    assert!(
        tally.at_global * 10 >= tally.points * 8,
        "{} of {} points at the global optimum",
        tally.at_global,
        tally.points
    );
    assert!(
        tally.final_at_global * 10 >= tally.finals * 6,
        "{} of {} final points at the global optimum",
        tally.final_at_global,
        tally.finals
    );
}
