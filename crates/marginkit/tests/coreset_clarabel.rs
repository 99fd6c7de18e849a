//! The kernel SVDD, one-class L2-SVM and L2-SVM core-set optima against clarabel.
//!
//! Every problem is the MEB dual over its kernel `K~` (Tsang et al.'s mappings, built here from
//! the definitions, not by the library's `FeatureKernel::eval`):
//! - SVDD: `K~ = K` (RBF);
//! - one-class L2-SVM: `K~ = K + I / C`;
//! - L2-SVM: `K~_ij = y_i y_j (K_ij + 1) + [i = j] / C`;
//!
//! `r^2 = max { diag(K~)'a - a'K~a : a >= 0, 1'a = 1 }`, solved by clarabel's interior-point
//! method. Checked: the library's exact solve (`quality::exact_r2`: active-set simplex solver
//! or the SMO engine) equals it; the centralized and the distributed (3 nodes) core-sets have the
//! `r^2` of clarabel's MEB of their own points, at most the full optimum, and the full data lie
//! within `(1 + eps)^2` of it.

#![allow(clippy::needless_range_loop)]

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
    ZeroConeT,
};
use marginkit::coreset::consensus::{self, ConsensusData, CoreSetMsg};
use marginkit::coreset::quality::exact_r2;
use marginkit::coreset::{ConsensusParams, CoresetParams, FeatureKernel, PointSet, Problem};
use marginkit::fit::Control;
use marginkit::svm::{Gamma, KernelKind, KernelParams};
use marginkit::KernelSpec;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const GAMMA: f64 = 0.5;

/// `max diag(K~)'a - a'K~a` over the simplex, by clarabel (`K~` dense, row-major).
fn clarabel_meb_dual(kt: &[f64], n: usize) -> f64 {
    // min a'(2K~)a/2 - diag'a  s.t.  1'a = 1, -a <= 0.
    let (mut colptr, mut rowval, mut nzval) = (vec![0usize], Vec::new(), Vec::new());
    for j in 0..n {
        for i in 0..=j {
            rowval.push(i);
            nzval.push(2.0 * kt[i * n + j]);
        }
        colptr.push(rowval.len());
    }
    let p = CscMatrix::new(n, n, colptr, rowval, nzval);
    let q: Vec<f64> = (0..n).map(|i| -kt[i * n + i]).collect();
    let (mut ri, mut ci, mut vi) = (Vec::new(), Vec::new(), Vec::new());
    for j in 0..n {
        ri.push(0);
        ci.push(j);
        vi.push(1.0);
        ri.push(1 + j);
        ci.push(j);
        vi.push(-1.0);
    }
    let a = CscMatrix::new_from_triplets(n + 1, n, ri, ci, vi);
    let mut b = vec![0.0; n + 1];
    b[0] = 1.0;
    let cones: Vec<SupportedConeT<f64>> = vec![ZeroConeT(1), NonnegativeConeT(n)];
    let set = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-12,
        tol_gap_rel: 1e-12,
        tol_feas: 1e-12,
        ..DefaultSettings::default()
    };
    let mut s = DefaultSolver::new(&p, &q, &a, &b, &cones, set).expect("clarabel setup");
    s.solve();
    assert!(
        matches!(
            s.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        ),
        "clarabel: {:?}",
        s.solution.status
    );
    -s.solution.obj_val
}

/// `n` points in `d` dimensions, the first half labelled `+1` around `+shift`, the rest `-1`
/// around `-shift` (labels only matter for the L2-SVM).
fn points(n: usize, d: usize, shift: f64, seed: u64) -> PointSet {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut s = PointSet::new(d);
    for i in 0..n {
        let y = if i < n / 2 { 1.0 } else { -1.0 };
        let row: Vec<f64> = (0..d)
            .map(|_| y * shift + rng.gen_range(-1.0..1.0))
            .collect();
        s.push(i as u64, y, &row);
    }
    s
}

/// `K~` of `problem` over the RBF kernel, from the definitions.
fn kernel_tilde(pts: &PointSet, problem: Problem) -> Vec<f64> {
    let n = pts.len();
    let mut kt = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let d2: f64 = pts
                .row(i)
                .iter()
                .zip(pts.row(j))
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            let k = (-GAMMA * d2).exp();
            let (yi, yj) = (pts.label(i), pts.label(j));
            let same = if i == j { 1.0 } else { 0.0 };
            kt[i * n + j] = match problem {
                Problem::Svdd | Problem::Meb => k,
                Problem::OneClassL2 { c } => k + same / c,
                Problem::L2Svm { c } => yi * yj * (k + 1.0) + same / c,
            };
        }
    }
    kt
}

/// The rows of `pts` whose ids are in `set` (its distinct points), as indices into `pts`.
fn members(pts: &PointSet, set: &CoreSetMsg) -> Vec<usize> {
    let ids = set.points.ids();
    (0..pts.len())
        .filter(|&i| ids.contains(&pts.id(i)))
        .collect()
}

fn sub(kt: &[f64], n: usize, idx: &[usize]) -> Vec<f64> {
    let mut s = Vec::with_capacity(idx.len() * idx.len());
    for &i in idx {
        for &j in idx {
            s.push(kt[i * n + j]);
        }
    }
    s
}

/// `max_p |phi(p) - c|^2` for the centre `c = sum_j a_j phi(j)` of the set's dual weights.
fn max_dist2(kt: &[f64], n: usize, idx: &[usize], w: &[f64]) -> f64 {
    let mut cc = 0.0;
    for (a, &i) in idx.iter().enumerate() {
        for (b, &j) in idx.iter().enumerate() {
            cc += w[a] * w[b] * kt[i * n + j];
        }
    }
    (0..n)
        .map(|p| {
            let cross: f64 = idx.iter().zip(w).map(|(&j, &wj)| wj * kt[p * n + j]).sum();
            kt[p * n + p] - 2.0 * cross + cc
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

fn check_set(kt: &[f64], pts: &PointSet, set: &CoreSetMsg, r_star2: f64, eps: f64, what: &str) {
    let n = pts.len();
    let idx = members(pts, set);
    assert_eq!(
        idx.len(),
        set.points.len(),
        "{what}: the set's points are data points"
    );
    let own = clarabel_meb_dual(&sub(kt, n, &idx), idx.len());
    assert!(
        (set.r2 - own).abs() <= 1e-8 * own,
        "{what}: set r^2 {} vs clarabel on its points {own}",
        set.r2
    );
    assert!(
        set.r2 <= r_star2 * (1.0 + 1e-9),
        "{what}: {} > r*^2 {r_star2}",
        set.r2
    );
    // The set's weights (sorted by id, as `idx`) give a centre covering every point.
    let far = max_dist2(kt, n, &idx, &set.weights);
    assert!(
        far <= (1.0 + eps).powi(2) * set.r2 * (1.0 + 1e-9),
        "{what}: a point at {far} > (1+eps)^2 {}",
        set.r2
    );
}

#[test]
fn svdd_one_class_and_l2svm_optima_equal_clarabel() {
    let eps = 0.05;
    for (n, d, shift, seed) in [
        (40usize, 3usize, 0.5, 1u64),
        (60, 2, 1.0, 2),
        (30, 5, 0.2, 3),
    ] {
        let pts = points(n, d, shift, seed);
        for problem in [
            Problem::Svdd,
            Problem::OneClassL2 { c: 1.0 },
            Problem::OneClassL2 { c: 20.0 },
            Problem::L2Svm { c: 1.0 },
            Problem::L2Svm { c: 20.0 },
        ] {
            let what = format!("{problem:?} n={n} d={d}");
            let kern = FeatureKernel::new(problem, KernelSpec::Rbf { gamma: GAMMA }).unwrap();
            let kt = kernel_tilde(&pts, problem);
            let r_star2 = clarabel_meb_dual(&kt, n);
            let ours = exact_r2(&pts, &kern).expect("exact solve within reach");
            assert!(
                (ours - r_star2).abs() <= 1e-7 * r_star2,
                "{what}: exact {ours} vs clarabel {r_star2}"
            );
            let rbf = KernelParams {
                kind: KernelKind::Rbf,
                gamma: Gamma::Value(GAMMA),
                ..KernelParams::default()
            };
            let cp = CoresetParams::new()
                .problem(problem)
                .kernel(rbf)
                .eps(eps)
                .seed(seed);
            let fit = marginkit::coreset::fit(&cp.check().unwrap(), &pts, &mut Control::default());
            let set = fit.unwrap().model.set;
            check_set(
                &kt,
                &pts,
                &set,
                r_star2,
                eps,
                &format!("{what} centralized"),
            );
            let params = ConsensusParams::new().coreset(cp).check().unwrap();
            let network = ConsensusData::InProcess {
                points: &pts,
                nodes: 3,
            };
            let rep = consensus::fit(&params, &network, &mut Control::default())
                .unwrap()
                .report;
            assert!(rep.agreed, "{what}: the nodes agree");
            for (node, s) in &rep.states {
                check_set(&kt, &pts, s, r_star2, eps, &format!("{what} node {node}"));
            }
        }
    }
}
