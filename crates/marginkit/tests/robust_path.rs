//! Oracles for the robust SVMs and the outlier path:
//! * every recorded path point equals an independent clarabel solve of the conditional
//!   (fixed-partition) primal problem, polytope constraints included (Definition 1 / Eqs. 12-14, 22-24);
//! * every jump strictly lowers the full objective (Theorem 3);
//! * every returned solution passes the local-optimality checker (Theorems 4, 5), recomputed from
//!   scratch; pre-jump points fail it;
//! * with no outliers and theta = 1 the path starts at the standard SVM of `smo`;
//! * CCCP grid points are local optima of their robust problem and never worse than the start.

mod common;

use common::robust::{factor, Rng};
use marginkit::data::{Dataset, DenseMatrix, Features};
use marginkit::error::FitError;
use marginkit::fit::Control;
use marginkit::kernel::qmatrix::{kernel_value, SvcQ};
use marginkit::robust::cccp::{self, CccpParams, CccpPath, THETA_GRID};
use marginkit::robust::select::{select, Method, SelectParams};
use marginkit::robust::{
    check_local_optimality, model_from_beta, Node, NodeKind, OutlierPath, PathKind, RobustData,
    RobustParams, RobustValidParams, RunEnd, Task,
};
use marginkit::solver::{smo, BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::KernelSpec;

/// The kernel parameters of a concrete kernel (its gamma given, not `Auto`).
fn kernel_params(k: KernelSpec) -> KernelParams {
    let (kind, gamma, coef0, degree) = match k {
        KernelSpec::Linear => (KernelKind::Linear, 1.0, 0.0, 3),
        KernelSpec::Poly {
            gamma,
            coef0,
            degree,
        } => (KernelKind::Poly, gamma, coef0, degree),
        KernelSpec::Rbf { gamma } => (KernelKind::Rbf, gamma, 0.0, 3),
        KernelSpec::Sigmoid { gamma, coef0 } => (KernelKind::Sigmoid, gamma, coef0, 3),
        KernelSpec::Precomputed => (KernelKind::Precomputed, 1.0, 0.0, 3),
    };
    KernelParams {
        kind,
        gamma: Gamma::Value(gamma),
        coef0,
        degree,
    }
}

/// Robust parameters of `task` with kernel `k`, unchecked.
fn params(task: Task, k: KernelSpec) -> RobustParams {
    RobustParams::new().task(task).kernel(kernel_params(k))
}

/// `p` along `kind`, checked.
fn checked(p: &RobustParams, kind: PathKind) -> RobustValidParams {
    p.clone().kind(kind).check().unwrap()
}

/// One outlier path of `p` along `kind` on `data` (the report of `robust::fit`).
fn run_path(
    p: &RobustParams,
    kind: PathKind,
    data: &Dataset,
    valid: Option<&Dataset>,
) -> Result<OutlierPath, FitError> {
    let p = p.clone().kind(kind).check()?;
    let data = RobustData::new(data).validate_on(valid);
    Ok(marginkit::robust::fit(&p, &data, &mut Control::default())?.report)
}

/// CCCP of `p` along `kind` over `grid` on `data`.
fn run_cccp(
    p: &RobustParams,
    kind: PathKind,
    grid: &[f64],
    data: &Dataset,
) -> Result<CccpPath, FitError> {
    let p = CccpParams::new()
        .robust(p.clone().kind(kind))
        .grid(grid.to_vec())
        .check()?;
    Ok(cccp::fit(&p, &RobustData::new(data), &mut Control::default())?.report)
}

/// Two Gaussian blobs in 2-D with a fraction of flipped labels.
fn blobs(n: usize, flip: f64, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        x.push(c * 1.0 + 0.8 * r.normal());
        x.push(c * 0.5 + 0.8 * r.normal());
        let lab = if r.next() < flip { -c } else { c };
        y.push(lab);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
}

/// 1-D-ish regression with a few gross outliers.
fn wave(n: usize, frac: f64, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for _ in 0..n {
        let a = 2.0 * r.next() - 1.0;
        let b = 2.0 * r.next() - 1.0;
        let mut t = (2.0 * a).sin() + 0.5 * b + 0.1 * r.normal();
        let (mut a2, mut b2) = (a, b);
        if r.next() < frac {
            t += 5.0 * r.normal();
            a2 += 2.0 * r.next() - 1.0;
            b2 += 2.0 * r.next() - 1.0;
        }
        x.push(a2);
        x.push(b2);
        y.push(t);
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, 2, x).unwrap()), y, None).unwrap()
}

fn gram(data: &Dataset, k: KernelSpec, bias: Option<f64>) -> Vec<Vec<f64>> {
    let b2 = bias.map_or(0.0, |b| b * b);
    common::robust::gram(data.len(), |i, j| kernel_value(&data.x, k, i, j) + b2)
}

/// The conditional primal for a partition, solved by clarabel; returns `f = K beta`.
/// Variables `[w; xi]` with `f = G w`; SVC slack `t = 1 - y f`, SVR residual `r = y - f`.
#[allow(clippy::too_many_arguments)]
fn conditional_f(
    task: Task,
    kmat: &[Vec<f64>],
    y: &[f64],
    out: &[i8],
    c: f64,
    theta: f64,
    s: f64,
) -> Vec<f64> {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{
        DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus,
    };
    let n = y.len();
    let g = factor(kmat);
    let r = g[0].len();
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
    let mut q = vec![0.0; nv];
    for i in 0..n {
        q[r + i] = c * if out[i] != 0 { theta } else { 1.0 };
    }
    let (mut ri, mut ci, mut vi, mut b) = (vec![], vec![], vec![], vec![]);
    let mut m = 0;
    // Row: coef f_i + xcoef xi_i <= rhs, with f_i = G_i w.
    let mut row = |coef: f64, i: usize, xcoef: f64, rhs: f64| {
        if coef != 0.0 {
            for (j, &gij) in g[i].iter().enumerate() {
                ri.push(m);
                ci.push(j);
                vi.push(coef * gij);
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
    for i in 0..n {
        row(0.0, i, -1.0, 0.0);
        match task {
            Task::Svc => {
                let tt = 1.0 - s;
                // t = 1 - y f <= xi
                row(-y[i], i, -1.0, -1.0);
                if out[i] == 0 {
                    row(-y[i], i, 0.0, tt - 1.0); // t <= T
                } else {
                    row(y[i], i, 0.0, 1.0 - tt); // t >= T
                }
            }
            Task::Svr => {
                row(-1.0, i, -1.0, -y[i]); // r <= xi
                row(1.0, i, -1.0, y[i]); // -r <= xi
                if out[i] == 0 {
                    row(-1.0, i, 0.0, s - y[i]);
                    row(1.0, i, 0.0, s + y[i]);
                } else {
                    let sg = f64::from(out[i]);
                    row(sg, i, 0.0, sg * y[i] - s); // sg r >= s
                }
            }
        }
    }
    let a = CscMatrix::new_from_triplets(m, nv, ri, ci, vi);
    let st = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .max_iter(400)
        .build()
        .unwrap();
    let cones = [NonnegativeConeT(m)];
    let mut solver = DefaultSolver::new(&pm, &q, &a, &b, &cones, st).unwrap();
    solver.solve();
    assert!(
        matches!(
            solver.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ),
        "clarabel: {:?}",
        solver.solution.status
    );
    let w = &solver.solution.x[..r];
    LAST_OBJ.with(|o| o.set(solver.solution.obj_val));
    (0..n)
        .map(|i| g[i].iter().zip(w).map(|(k, b)| k * b).sum())
        .collect()
}

thread_local! {
    static LAST_OBJ: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
}

fn internal_y(task: Task, data: &Dataset) -> Vec<f64> {
    match task {
        Task::Svr => data.y.clone(),
        Task::Svc => {
            let first = data.y[0];
            data.y
                .iter()
                .map(|&v| if v == first { 1.0 } else { -1.0 })
                .collect()
        }
    }
}

/// Oracle for one recorded point: the fixed-partition (conditional) problem of its outlier signs,
/// solved by clarabel, has the same objective and the same `f` (within the interior-point
/// accuracy), and the point is feasible for the partition's polytope.
fn assert_conditional_optimum(
    p: &RobustValidParams,
    kmat: &[Vec<f64>],
    y: &[f64],
    k: usize,
    node: &Node,
    theta: f64,
    s: f64,
) {
    let beta = node.beta.as_ref().unwrap();
    let out = node.outlier_sign.as_ref().unwrap();
    let yscale = y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    // Independent conditional solve of this partition (clarabel, primal with the polytope).
    let f_or = conditional_f(p.task(), kmat, y, out, p.c(), theta, s);
    let j_or = LAST_OBJ.with(|o| o.get());
    let f: Vec<f64> = (0..y.len())
        .map(|i| kmat[i].iter().zip(beta).map(|(a, b)| a * b).sum())
        .collect();
    // Ours is feasible for the partition's polytope ...
    let tt = match p.task() {
        Task::Svc => 1.0 - s,
        Task::Svr => s,
    };
    let mut j_ours = 0.5 * beta.iter().zip(&f).map(|(a, b)| a * b).sum::<f64>();
    for i in 0..y.len() {
        let (t, pos) = match p.task() {
            Task::Svc => (y[i] * (y[i] - f[i]), 1.0 - y[i] * f[i]),
            Task::Svr => ((y[i] - f[i]).abs(), (y[i] - f[i]).abs()),
        };
        let slack_tol = 1e-7 * tt.abs().max(1.0);
        if out[i] == 0 {
            assert!(
                t <= tt + slack_tol,
                "node {k}: inlier {i} beyond T ({t} > {tt})"
            );
        } else {
            assert!(
                t >= tt - slack_tol,
                "node {k}: outlier {i} inside T ({t} < {tt})"
            );
            if p.task() == Task::Svr {
                assert_eq!(
                    (y[i] - f[i]).signum() as i8,
                    out[i],
                    "node {k}: outlier side"
                );
            }
        }
        let w = if out[i] != 0 { theta } else { 1.0 };
        j_ours += p.c() * w * pos.max(0.0);
    }
    // ... and at least as good as the interior-point solution (up to its accuracy).
    let eps_j = 1e-7 * j_or.abs().max(1.0);
    assert!(
        j_ours <= j_or + eps_j,
        "node {k} ({:?}, param {}): J = {j_ours} > conditional optimum {j_or}",
        node.kind,
        node.param
    );
    // J is 1-strongly convex in w: |f_i - f*_i| <= |w - w*| sqrt(K_ii) <= sqrt(2 dJ K_ii).
    let dj = (j_ours - j_or).abs() + eps_j;
    for i in 0..y.len() {
        let bound = (2.0 * dj * kmat[i][i]).sqrt() + 1e-7 * yscale;
        assert!(
            (f[i] - f_or[i]).abs() <= bound,
            "node {k} ({:?}, param {}): f[{i}] = {} vs conditional {} (bound {bound})",
            node.kind,
            node.param,
            f[i],
            f_or[i]
        );
    }
}

/// Checks every oracle on one path.
fn check_path(p: &RobustParams, kind: PathKind, data: &Dataset, path: &OutlierPath) {
    let p = &checked(p, kind);
    assert_eq!(path.end, RunEnd::Completed, "status");
    assert!(
        path.final_locally_optimal,
        "final solution not locally optimal"
    );
    let kernel = p.kernel_for(data.n_features());
    let kmat = gram(data, kernel, p.bias());
    let y = internal_y(p.task(), data);
    let mut jumps = 0;
    let mut degenerate = 0;
    for (k, node) in path.nodes.iter().enumerate() {
        let beta = node.beta.as_ref().unwrap();
        let (theta, s) = match kind {
            PathKind::Theta => (node.param, p.s_theta()),
            // The standard SVM opens OP-s: checked as the theta = 1 optimum (no sample beyond s).
            PathKind::S if node.kind == NodeKind::Start => (1.0, node.param),
            PathKind::S => (0.0, node.param),
        };
        assert_conditional_optimum(p, &kmat, &y, k, node, theta, s);
        if k > 0 && path.nodes[k - 1].kind == NodeKind::PreJump && degenerate_at(&kmat, path, k) {
            // A degenerate jump: the same f is the conditional optimum of the partition before
            // the flip (checked at the pre-jump node) and after it (checked just above), so it
            // is a local optimum of the robust objective (the loss of a flipped sample is the
            // minimum of its inlier and outlier pieces, each minimized at f), although the
            // flipped sample stays on the threshold (Theorem 4's 19e presumes unique
            // multipliers). Only a singular K (linear kernel) allows it.
            assert_eq!(
                kernel,
                KernelSpec::Linear,
                "degenerate jump, non-linear kernel"
            );
            continue;
        }
        let lo = check_local_optimality(p, data, beta, theta, s).unwrap();
        assert!(
            (lo.objective - node.objective).abs() <= 1e-7 * node.objective.abs().max(1.0),
            "objective {} vs recomputed {}",
            node.objective,
            lo.objective
        );
        if node.kind == NodeKind::PreJump {
            assert!(
                !node.locally_optimal,
                "pre-jump node {k} passes the checker"
            );
            let next = &path.nodes[k + 1];
            assert_eq!(next.kind, NodeKind::PostJump);
            if degenerate_at(&kmat, path, k + 1) {
                degenerate += 1;
                jumps += 1;
                continue;
            }
            assert!(
                next.objective < node.objective,
                "jump at {} does not lower the objective: {} -> {}",
                node.param,
                node.objective,
                next.objective
            );
            jumps += 1;
        } else {
            assert!(
                node.locally_optimal && lo.ok,
                "node {k} ({:?}, param {}) not locally optimal: {:?}",
                node.kind,
                node.param,
                lo.violation
            );
        }
    }
    assert_eq!(jumps, path.d_steps);
    assert_eq!(degenerate, path.degenerate_jumps);
}

/// Whether the jump ending at node `k` left `f` unchanged (up to rounding) or, as the engine
/// also counts it, the objective.
fn degenerate_at(kmat: &[Vec<f64>], path: &OutlierPath, k: usize) -> bool {
    let (a, b) = (&path.nodes[k - 1], &path.nodes[k]);
    if (a.objective - b.objective).abs() <= 1e-12 * a.objective.abs() {
        return true;
    }
    let (ba, bb) = (a.beta.as_ref().unwrap(), b.beta.as_ref().unwrap());
    let scale = kmat
        .iter()
        .map(|r| r.iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .fold(1.0f64, f64::max);
    kmat.iter().all(|row| {
        let d: f64 = row
            .iter()
            .zip(ba.iter().zip(bb))
            .map(|(k, (x, y))| k * (x - y))
            .sum();
        d.abs() <= 1e-9 * scale
    })
}

fn smo_standard_f(data: &Dataset, kernel: KernelSpec, c: f64) -> Vec<f64> {
    let n = data.len();
    let y: Vec<i8> = internal_y(Task::Svc, data)
        .iter()
        .map(|&v| v as i8)
        .collect();
    let mut q = SvcQ::new(&data.x, kernel, &y, 1 << 20).unwrap();
    let p = vec![-1.0; n];
    let upper = vec![c; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::None,
        fixed: None,
    };
    let mut a = vec![0.0; n];
    let st = SolverSettings {
        tol: 1e-9,
        shrinking: Shrinking::Off,
        max_iter: None,
        time_limit: None,
    };
    smo::solve(&mut q, &qp, &mut a, &st, &mut NoObserver).unwrap();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| f64::from(y[j]) * a[j] * kernel_value(&data.x, kernel, i, j))
                .sum()
        })
        .collect()
}

#[test]
fn svc_theta_path_rbf_matches_conditional_solves() {
    for (seed, c) in [(1u64, 1.0), (2, 10.0), (3, 3.0)] {
        let data = blobs(40, 0.15, seed);
        let p = params(Task::Svc, KernelSpec::Rbf { gamma: 0.5 })
            .c(c)
            .keep_solutions(true);
        let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
        check_path(&p, PathKind::Theta, &data, &path);
    }
}

#[test]
fn svc_theta_path_linear_and_bias() {
    for seed in [4u64, 5] {
        let data = blobs(40, 0.2, seed);
        let p = params(Task::Svc, KernelSpec::Linear)
            .c(1.0)
            .bias(Some(1.0))
            .keep_solutions(true);
        let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
        check_path(&p, PathKind::Theta, &data, &path);
    }
}

#[test]
fn svc_s_path_matches_conditional_solves() {
    for (seed, kernel) in [
        (6u64, KernelSpec::Rbf { gamma: 0.5 }),
        (7, KernelSpec::Linear),
        (8, KernelSpec::Rbf { gamma: 2.0 }),
    ] {
        let data = blobs(40, 0.15, seed);
        let p = params(Task::Svc, kernel).c(2.0).keep_solutions(true);
        let path = run_path(&p, PathKind::S, &data, None).unwrap();
        assert!(path.s_standard < 0.0);
        check_path(&p, PathKind::S, &data, &path);
        assert!(path.d_steps > 0);
        assert_eq!(path.nodes.last().unwrap().param, 0.0);
    }
}

#[test]
fn svr_theta_and_s_paths_match_conditional_solves() {
    for (seed, kernel, c) in [
        (9u64, KernelSpec::Rbf { gamma: 1.0 }, 1.0),
        (10, KernelSpec::Rbf { gamma: 0.5 }, 5.0),
        (11, KernelSpec::Linear, 1.0),
    ] {
        let data = wave(40, 0.1, seed);
        for kind in [PathKind::Theta, PathKind::S] {
            let p = params(Task::Svr, kernel)
                .c(c)
                .s_fixed(0.5)
                .keep_solutions(true);
            let path = run_path(&p, kind, &data, None).unwrap();
            check_path(&p, kind, &data, &path);
        }
    }
}

#[test]
fn no_outliers_theta_path_starts_at_smo_solution_and_stays() {
    // Well separated blobs, no flips, RBF with large C: no sample has a negative margin.
    let data = blobs(30, 0.0, 12);
    let kernel = KernelSpec::Rbf { gamma: 1.0 };
    let p = params(Task::Svc, kernel).c(100.0).keep_solutions(true);
    let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
    let f_smo = smo_standard_f(&data, kernel, 100.0);
    let kmat = gram(&data, kernel, None);
    let beta = path.nodes[0].beta.as_ref().unwrap();
    for i in 0..data.len() {
        let f: f64 = kmat[i].iter().zip(beta).map(|(a, b)| a * b).sum();
        assert!((f - f_smo[i]).abs() < 1e-4, "{f} vs smo {}", f_smo[i]);
    }
    assert_eq!(path.d_steps, 0);
    assert_eq!(path.nodes.last().unwrap().param, 0.0);
    assert_eq!(path.nodes[0].beta, path.nodes.last().unwrap().beta);
    check_path(&p, PathKind::Theta, &data, &path);
}

#[test]
fn duplicated_points_and_event_limit() {
    let base = blobs(20, 0.2, 13);
    let idx: Vec<usize> = (0..20).chain(0..20).collect();
    let data = base.subset(&idx);
    let p = params(Task::Svc, KernelSpec::Linear)
        .c(1.0)
        .keep_solutions(true);
    let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
    check_path(&p, PathKind::Theta, &data, &path);
    let limited = run_path(&p.clone().max_events(1), PathKind::Theta, &data, None).unwrap();
    assert_eq!(limited.end, RunEnd::EventLimit);
}

/// Many points in 2-D with the linear kernel: the active set reaches the data's rank (2, or 3
/// with the constant feature) again and again, and samples reach their targets while the active
/// rows already span the data (dependent samples). They are parked instead of joining: the active
/// set never exceeds the rank, and every oracle holds on SVC and SVR, OP-theta and OP-s.
#[test]
fn active_set_stays_within_the_linear_rank() {
    for (task, bias, seed) in [
        (Task::Svc, None, 15u64),
        (Task::Svc, Some(1.0), 16),
        (Task::Svr, None, 17),
        (Task::Svr, Some(1.0), 18),
    ] {
        let data = match task {
            Task::Svc => blobs(120, 0.2, seed),
            Task::Svr => wave(120, 0.1, seed),
        };
        let rank = 2 + usize::from(bias.is_some());
        for kind in [PathKind::Theta, PathKind::S] {
            let p = params(task, KernelSpec::Linear)
                .c(2.0)
                .bias(bias)
                .s_fixed(if task == Task::Svr { 0.5 } else { 0.0 })
                .keep_solutions(true);
            let path = run_path(&p, kind, &data, None).unwrap();
            assert!(
                path.max_active <= rank,
                "{task:?} {kind:?} bias {bias:?}: active set {} past the rank {rank}",
                path.max_active
            );
            check_path(&p, kind, &data, &path);
        }
    }
}

/// Two Gaussian blobs in `d` dimensions (no flips beyond `flip`), for the larger rank cases.
fn blobs_d(n: usize, d: usize, flip: f64, seed: u64) -> Dataset {
    let mut r = Rng(seed);
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let c = if i % 2 == 0 { 1.0 } else { -1.0 };
        for k in 0..d {
            x.push(c * (0.5 / (k as f64 + 1.0)) + 0.8 * r.normal());
        }
        y.push(if r.next() < flip { -c } else { c });
    }
    Dataset::new(Features::Dense(DenseMatrix::new(n, d, x).unwrap()), y, None).unwrap()
}

/// 2,000 points in 5-D, linear OP-theta: rounding brings a sixth, dependent sample to its
/// target; it is parked, not added, so the active set stays within the rank 5, every recorded point but the pre-jump ones passes the checker, and a spread of nodes
/// (every post-jump node among them, up to six) equals the independent conditional solve.
#[test]
fn active_set_stays_within_the_rank_at_n_2000() {
    let data = blobs_d(2000, 5, 0.15, 1);
    let p = params(Task::Svc, KernelSpec::Linear)
        .c(1.0)
        .keep_solutions(true);
    let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
    assert_eq!(path.end, RunEnd::Completed);
    assert!(path.final_locally_optimal);
    assert!(
        path.max_active <= 5,
        "active set {} past the rank 5",
        path.max_active
    );
    for (k, node) in path.nodes.iter().enumerate() {
        if node.kind != NodeKind::PreJump {
            assert!(
                node.locally_optimal,
                "node {k} ({:?}) fails the checker",
                node.kind
            );
        }
    }
    let kmat = gram(
        &data,
        checked(&p, PathKind::Theta).kernel_for(data.n_features()),
        None,
    );
    let y = internal_y(Task::Svc, &data);
    let m = path.nodes.len();
    let mut pick: Vec<usize> = vec![0, m / 3, 2 * m / 3, m - 1];
    pick.extend(
        (0..m)
            .filter(|&k| path.nodes[k].kind == NodeKind::PostJump)
            .step_by(60)
            .take(3),
    );
    for k in pick {
        let node = &path.nodes[k];
        assert_conditional_optimum(
            &checked(&p, PathKind::Theta),
            &kmat,
            &y,
            k,
            node,
            node.param,
            0.0,
        );
    }
}

/// 3,000 points in 10-D, linear OP-theta. Samples flipped together in one jump can push one
/// another back across the threshold after an event inside the jump (a clamped slack has no
/// event), landing an outlier inside `T` or an inlier beyond it: such nodes fail the checker with
/// "inlier needs alpha = C" / "outlier needs alpha = C theta" (slack off `T` by up to 1e-3 on
/// this data). Jumps flip one sample at a time, so every node but the pre-jump ones passes.
#[test]
fn flipped_samples_land_on_their_side_of_the_threshold() {
    let data = blobs_d(3000, 10, 0.15, 1);
    let p = params(Task::Svc, KernelSpec::Linear).c(1.0);
    let path = run_path(&p, PathKind::Theta, &data, None).unwrap();
    assert_eq!(path.end, RunEnd::Completed);
    assert!(path.final_locally_optimal);
    let wrong_side: Vec<usize> = (0..path.nodes.len())
        .filter(|&k| {
            let n = &path.nodes[k];
            n.kind != NodeKind::PreJump && !n.locally_optimal
        })
        .collect();
    assert!(
        wrong_side.is_empty(),
        "{} of {} nodes fail the checker: {:?}",
        wrong_side.len(),
        path.nodes.len(),
        &wrong_side[..wrong_side.len().min(10)]
    );
}

/// A linear OP-s case (seed 7): at the pre-jump point the active set spans the
/// data (two samples on the margin in 2-D), so the flip is absorbed by the coefficients and `f`
/// cannot move: a degenerate jump, detected exactly and checked in `check_path` as the
/// conditional optimum of both partitions (a local optimum with a sample on the threshold).
#[test]
fn spanning_active_set_gives_a_degenerate_jump() {
    let data = blobs(40, 0.15, 7);
    let p = params(Task::Svc, KernelSpec::Linear)
        .c(2.0)
        .keep_solutions(true);
    let path = run_path(&p, PathKind::S, &data, None).unwrap();
    check_path(&p, PathKind::S, &data, &path);
    assert!(path.degenerate_jumps >= 1);
    assert!(path.max_active <= 2);
}

/// Duplicated points with the RBF kernel (a singular Gram matrix): a duplicate of an active
/// sample is parked, never added, and the paths keep every oracle.
#[test]
fn duplicated_points_rbf() {
    let base = blobs(20, 0.2, 19);
    let idx: Vec<usize> = (0..20).chain(0..20).collect();
    let data = base.subset(&idx);
    for kind in [PathKind::Theta, PathKind::S] {
        let p = params(Task::Svc, KernelSpec::Rbf { gamma: 0.5 })
            .c(2.0)
            .keep_solutions(true);
        let path = run_path(&p, kind, &data, None).unwrap();
        check_path(&p, kind, &data, &path);
        assert!(path.max_active <= 20, "active set {}", path.max_active);
    }
}

#[test]
fn bad_input_is_an_error() {
    let data = blobs(20, 0.1, 14);
    let p = params(Task::Svc, KernelSpec::Linear);
    assert!(run_path(&p.clone().c(-1.0), PathKind::Theta, &data, None).is_err());
    assert!(run_path(&p.clone().s_fixed(0.5), PathKind::Theta, &data, None).is_err());
    assert!(run_cccp(&p, PathKind::Theta, &[1.5], &data).is_err());
    let three = Dataset::new(
        data.x.clone(),
        (0..20).map(|i| (i % 3) as f64).collect(),
        None,
    )
    .unwrap();
    assert!(run_path(&p, PathKind::Theta, &three, None).is_err());
    let svr = params(Task::Svr, KernelSpec::Linear).s_fixed(-1.0);
    assert!(run_path(&svr, PathKind::Theta, &wave(10, 0.0, 1), None).is_err());
}

#[test]
fn cccp_points_are_local_optima_and_improve_on_the_start() {
    for task in [Task::Svc, Task::Svr] {
        let data = match task {
            Task::Svc => blobs(40, 0.15, 15),
            Task::Svr => wave(40, 0.1, 16),
        };
        let p = params(task, KernelSpec::Rbf { gamma: 0.5 })
            .c(2.0)
            .keep_solutions(true);
        let cp = run_cccp(&p, PathKind::Theta, &THETA_GRID, &data).unwrap();
        let p = checked(&p, PathKind::Theta);
        assert_eq!(cp.nodes.len(), 5);
        assert_eq!(cp.unconverged, 0);
        let mut prev: Option<Vec<f64>> = None;
        for node in &cp.nodes {
            let beta = node.beta.as_ref().unwrap();
            let lo = check_local_optimality(&p, &data, beta, node.param, p.s_theta()).unwrap();
            assert!((lo.objective - node.objective).abs() <= 1e-7 * lo.objective.max(1.0));
            // CCCP never increases the objective from its warm start.
            if let Some(pb) = &prev {
                let start = check_local_optimality(&p, &data, pb, node.param, p.s_theta()).unwrap();
                assert!(node.objective <= start.objective + 1e-7 * start.objective.max(1.0));
            }
            if node.param < 1.0 {
                assert!(node.locally_optimal && lo.ok, "{:?}", lo.violation);
            }
            prev = Some(beta.clone());
        }
    }
}

#[test]
fn selection_picks_the_lowest_validation_error_and_exports_a_model() {
    let train = blobs(60, 0.15, 17);
    let valid = blobs(60, 0.15, 18);
    let p = params(Task::Svc, KernelSpec::Rbf { gamma: 0.5 }).kind(PathKind::Theta);
    let sp = SelectParams::new()
        .robust(p.clone())
        .method(Method::Path)
        .c_grid(vec![0.1, 1.0, 10.0])
        .check()
        .unwrap();
    let fit = select(
        &sp,
        &RobustData::new(&train).validate_on(Some(&valid)),
        &mut Control::default(),
    )
    .unwrap();
    let sel = &fit.report;
    let best = sel
        .runs
        .iter()
        .flat_map(|r| r.nodes.iter())
        .filter(|n| n.kind != NodeKind::PreJump && n.locally_optimal)
        .filter_map(|n| n.valid_error)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(sel.chosen.valid_error, Some(best));
    let model = &fit.model;
    let pred = model.predict(&valid.x).unwrap();
    let err = pred.iter().zip(&valid.y).filter(|(a, b)| a != b).count() as f64 / 60.0;
    assert!(
        (err - best).abs() < 1e-12,
        "model error {err} vs path {best}"
    );
    // The model passes the checker at the chosen parameter.
    let pc = checked(&p.clone().c(sel.chosen.c), PathKind::Theta);
    let lo = check_local_optimality(&pc, &train, &sel.chosen.beta, sel.chosen.param, 0.0).unwrap();
    assert!(lo.ok || sel.chosen.param == 1.0, "{:?}", lo.violation);
    // SVR model: predictions equal K beta.
    let data = wave(30, 0.1, 19);
    let ps = params(Task::Svr, KernelSpec::Linear).bias(Some(1.0));
    let path = run_path(&ps, PathKind::S, &data, None).unwrap();
    let m = model_from_beta(
        Task::Svr,
        KernelSpec::Linear,
        Some(1.0),
        &data,
        &path.final_beta,
    )
    .unwrap();
    let pr = m.predict(&data.x).unwrap();
    let kmat = gram(&data, KernelSpec::Linear, Some(1.0));
    for i in 0..30 {
        let f: f64 = kmat[i]
            .iter()
            .zip(&path.final_beta)
            .map(|(a, b)| a * b)
            .sum();
        assert!((pr[i] - f).abs() < 1e-9);
    }
}

/// Independent oracle for CCCP (SVC and SVR, both grids, RBF and linear): at every grid point the
/// converged partition's conditional problem, solved by clarabel, has CCCP's objective and `f`
/// (CCCP's last convex subproblem agrees with the conditional problem on its polytope, and its
/// optimum lies in that polytope once the partition no longer changes).
#[test]
fn cccp_points_equal_clarabel_solves_of_their_partition() {
    use marginkit::robust::cccp::{S_GRID_SVC, S_GRID_SVR};
    for task in [Task::Svc, Task::Svr] {
        let data = match task {
            Task::Svc => blobs(36, 0.15, 21),
            Task::Svr => wave(36, 0.1, 22),
        };
        let kmat_of = |k| gram(&data, k, None);
        let y = internal_y(task, &data);
        for kernel in [KernelSpec::Rbf { gamma: 0.5 }, KernelSpec::Linear] {
            let kmat = kmat_of(kernel);
            let p = params(task, kernel).c(2.0).keep_solutions(true);
            let s_grid: &[f64] = match task {
                Task::Svc => &S_GRID_SVC,
                Task::Svr => &S_GRID_SVR,
            };
            for (kind, grid) in [(PathKind::Theta, &THETA_GRID[..]), (PathKind::S, s_grid)] {
                let cp = run_cccp(&p, kind, grid, &data).unwrap();
                let p = checked(&p, kind);
                assert_eq!(cp.unconverged, 0, "{task:?} {kernel:?} {kind:?}");
                assert_eq!(cp.nodes.len(), grid.len());
                for (k, node) in cp.nodes.iter().enumerate() {
                    let (theta, s) = match kind {
                        PathKind::Theta => (node.param, p.s_theta()),
                        PathKind::S => (0.0, node.param),
                    };
                    assert_conditional_optimum(&p, &kmat, &y, k, node, theta, s);
                }
            }
        }
    }
}
