//! How good a core-set is, measured against all the points: the exact minimum enclosing ball
//! of the problem kernel (the reference radius `r*^2`, while it is within reach) and the
//! coverage ratio `max_s |s - c(C)|^2 / r*^2`, which Badoiu-Clarkson bound by `(1 + eps)^2`.
//! The command lines report both; the tests and the reproduction examples check the bound.

use super::bc::{dist2, meb_of, Pool};
use super::meb::{solve_simplex_capped, Start};
use super::model::CoreSetMsg;
use super::space::{FeatureKernel, PointSet, Problem};
use crate::kernel::qmatrix::DenseQ;
use crate::solver::{smo, BoxQp, Equality, NoObserver, SolverSettings};

/// Largest number of points for which the reference radius is the exact MEB.
pub const EXACT_LIMIT: usize = 50_000;

/// Largest number of points for which [`exact_r2`] falls back to the SMO engine on a dense `Q`.
pub const SMO_LIMIT: usize = 4_000;

/// The exact MEB `r^2` of all points, or `None` when it is out of reach:
/// - MEB and SVDD: the active set ([`solve_simplex_capped`], kernel columns on demand, memory
///   `O(n |support|)`) while the support stays within 300 points, up to [`EXACT_LIMIT`] points;
/// - otherwise, up to [`SMO_LIMIT`] points, the simplex QP as a [`BoxQp`]
///   (`Q = 2 K~`, `p = -diag K~`, `1'a = 1`, `0 <= a <= 1`) solved by the SMO engine at tolerance
///   1e-9 (the SVM mappings, where every point is a support point); `Q` is stored in f32, so this
///   `r^2` is exact to about 1e-7 relative.
pub fn exact_r2(pts: &PointSet, kern: &FeatureKernel) -> Option<f64> {
    exact_solution(pts, kern).map(|(_, r2)| r2)
}

/// The exact MEB of all points as a set carrying every point with its optimal weight (for the
/// L2-SVM mapping: the exact 2-norm SVM, whose [`super::model::to_model`] is the full-data
/// classifier the core-set approximates), when [`exact_r2`] reaches it.
pub fn exact_set(pts: &PointSet, kern: &FeatureKernel) -> Option<CoreSetMsg> {
    let (x, r2) = exact_solution(pts, kern)?;
    let n = pts.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| pts.id(i));
    let mut points = PointSet::new(pts.dim());
    let mut weights = Vec::with_capacity(n);
    for &i in &order {
        points.push_from(pts, i);
        weights.push(x[i]);
    }
    let mut c2 = 0.0;
    for i in 0..n {
        if x[i] != 0.0 {
            for j in 0..n {
                if x[j] != 0.0 {
                    c2 += x[i] * x[j] * kern.eval(pts.get(i), pts.get(j));
                }
            }
        }
    }
    Some(CoreSetMsg {
        node: 0,
        ids: points.ids().to_vec(),
        points,
        weights,
        r2,
        c2,
    })
}

/// Weights and `r^2` of the exact MEB (see [`exact_r2`]).
fn exact_solution(pts: &PointSet, kern: &FeatureKernel) -> Option<(Vec<f64>, f64)> {
    let n = pts.len();
    if n > EXACT_LIMIT {
        return None;
    }
    let diag: Vec<f64> = (0..n).map(|i| kern.eval(pts.get(i), pts.get(i))).collect();
    // The SVM mappings make (almost) every point a support point: straight to SMO.
    let svm = matches!(
        kern.problem,
        Problem::L2Svm { .. } | Problem::OneClassL2 { .. }
    );
    if svm && n > SMO_LIMIT {
        return None;
    }
    let sol = solve_simplex_capped(
        &diag,
        |i, j| kern.eval(pts.get(i), pts.get(j)),
        Start::Farthest,
        if svm { 0 } else { 300 },
    );
    if sol.converged {
        return Some((sol.x, sol.r2));
    }
    if n > SMO_LIMIT {
        return None;
    }
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            let v = 2.0 * kern.eval(pts.get(i), pts.get(j));
            q[i * n + j] = v;
            q[j * n + i] = v;
        }
    }
    let mut qm = DenseQ::new(n, &q).ok()?;
    let p: Vec<f64> = diag.iter().map(|d| -d).collect();
    let y = vec![1i8; n];
    let upper = vec![1.0; n];
    let qp = BoxQp {
        p: &p,
        y: &y,
        upper: &upper,
        equality: Equality::Sum { delta: 1.0 },
        fixed: None,
    };
    let mut alpha = vec![1.0 / n as f64; n];
    let settings = SolverSettings {
        tol: 1e-9,
        ..SolverSettings::default()
    };
    let info = smo::solve(&mut qm, &qp, &mut alpha, &settings, &mut NoObserver).ok()?;
    // Recompute the objective in f64 from the solution.
    let mut quad = 0.0;
    for i in 0..n {
        if alpha[i] != 0.0 {
            let mut row = 0.0;
            for j in 0..n {
                row += q[i * n + j] * alpha[j];
            }
            quad += alpha[i] * row;
        }
    }
    let lin: f64 = diag.iter().zip(&alpha).map(|(d, a)| d * a).sum();
    (info.status == crate::solver::Status::Converged).then(|| (alpha, (lin - quad / 2.0).max(0.0)))
}

/// The reference radius `r*^2` for the coverage ratio: the exact one when [`exact_r2`] reaches it,
/// else the best known, `r^2` of the core-set found (a lower bound on `r*^2`, so the ratio is then
/// an upper bound: the Badoiu-Clarkson test `max |s - c|^2 <= (1+eps)^2 r(C)^2`). Returns
/// `(r*^2, exact?)`.
pub fn reference_r2(pts: &PointSet, kern: &FeatureKernel, found: &CoreSetMsg) -> (f64, bool) {
    match exact_r2(pts, kern) {
        Some(r2) => (r2.max(found.r2), true),
        None => (found.r2, false),
    }
}

/// `max_s |s - c(C)|^2 / r*^2` over all points.
pub fn coverage_ratio(pts: &PointSet, kern: &FeatureKernel, set: &CoreSetMsg, r_star2: f64) -> f64 {
    let mut pool = Pool::new(pts, None);
    let members: Vec<usize> = (0..set.points.len())
        .map(|i| pool.add(&set.points, i))
        .collect();
    let m = meb_of(&pool, kern, &members);
    let far = (0..pts.len())
        .map(|p| dist2(&pool, kern, &m, p))
        .fold(0.0, f64::max);
    far / r_star2
}
