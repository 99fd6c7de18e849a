//! AID for the C-SVM with an unregularized bias: linear (aggregated problems by [`smo`]/[`dcd`]) and
//! kernel (the paper's Appendix B: averaged Gram entries, aggregated problems by [`smo`]).
//!
//! # Problem (paper eq. 5/7; what `marginkit train -t 0 -c M` solves for the linear kernel)
//!
//! ```text
//! E* = min_{w,b} 1/2 |w|^2 + M sum_i max(0, 1 - y_i (w phi(x_i) + b))
//! ```
//!
//! # Aggregated problem (eq. 9 / 21)
//!
//! Clusters are label-pure. With centroids `x_k = mean_{C_k} x_i` and labels `y_k`,
//! `F^t = min 1/2 |w|^2 + M sum_k |C_k| max(0, 1 - y_k (w phi_k + b))`, whose dual is the box QP
//! `min 1/2 a'Qa - e'a, y'a = 0, 0 <= a_k <= M |C_k|` ([`BoxQp`] with per-sample bounds):
//! * linear: `Q = Y Xc Xc' Y` on the centroid matrix, solved by [`smo::solve`] with a linear
//!   kernel on the centroids up to 20,000 clusters and by [`dcd::solve_svc`] (with the equality
//!   constraint) above. SMO is the default because the weighted problems have bounds `M|C_k|`
//!   spanning orders of magnitude, on which the equality-constrained DCD (maximal-violating-pair
//!   steps, no shrinking) converged 35x slower (50,000 x 10: 24.5 s vs 0.7 s; the
//!   parameter `linear_engine: AidLinearEngine::Dcd` / CLI `--engine dcd` forces DCD for comparison);
//! * kernel: `Q_kq = y_k y_q mean_{i in C_k, j in C_q} K(x_i, x_j)` (the inner product of the
//!   feature-space centroids), solved by [`smo::solve`] on a [`DenseQ`]. The cluster-pair sums
//!   `S_kq` are kept between iterations; only pairs touching a split cluster are recomputed.
//!
//! The lower bound is the aggregated *dual* value `e'a - 1/2 a'Qa` recomputed in f64: any
//! feasible `a` bounds `F^t` from below, and `F^t <= E*` (convexity of the hinge, Prop. 4), so the
//! reported gap is valid even when the aggregated solve stops early (digest P7).
//!
//! # Sides and declustering
//!
//! `s_i = 1 - y_i f(x_i)`; side code 1 if `s_i > eps`, else 0 (`eps = 1e-9`), the same predicate
//! for the test and the split. If every cluster is uniform, `E^t` equals the aggregated primal
//! (Prop. 3: the hinge is linear on one side of the margin and zero on the other).
//!
//! # Initial clusters (§4.2)
//!
//! Per class, `ceil(r^0 n_c)` clusters with `r^0 = max(1.1 m / n_c, 1e-4)` (the paper's rule applied
//! per class, digest P8) by one iteration of k-means on the 1-D signed distances to a hyperplane
//! (linear) or on the decision values of a kernel SVM (kernel), both fitted on a seeded sample of
//! `min(n, 2000)` rows.
//!
//! # Cost per iteration
//!
//! Linear: one DCD solve on `K` centroids plus `O(nnz)`. Kernel: `O(n * rows in split clusters)`
//! kernel evaluations for the Gram sums, `O(n * rows in support clusters)` for the decision
//! values, one SMO solve on `K` variables: kernel AID costs `O(n^2)` kernel evaluations per
//! iteration in the worst case (the paper never ran it, digest P18).
//!
//! Warm start: a split cluster's children start from `a_parent |C_child| / |C_parent|` (inside
//! their boxes, the equality unchanged).
//!
//! Citation: Park & Klabjan (2016), §3.2, Props 3-4, Appendix B.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::cluster::{det_sum, kmeans_one_iteration, Clusters};
use super::{run, Aggregated, AidProblem, AidRun, AidSettings, IterRecord};
use crate::data::{ops, Dataset, DenseMatrix, Features};
use crate::error::{DataError, FitError, ParamError, SolveError};
use crate::kernel::qmatrix::{DenseQ, SvcQ};
use crate::kernel::KernelSpec;
use crate::solver::dcd::{self, LinearDesign, SvcDual};
use crate::solver::{smo, BoxQp, Equality, NoObserver, Shrinking, SolverSettings};
use crate::svm::linear::{LinearModel, LinearSolver};
use crate::svm::model::SvmModel;
use crate::svm::params::SvmType;
use crate::svm::train::class_order;

/// Solver of the linear aggregated problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AidLinearEngine {
    /// SMO with a linear kernel on the centroids up to 20 000 clusters, DCD beyond (default).
    #[default]
    Auto,
    /// Always dual coordinate descent.
    Dcd,
}

/// AID-SVM parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct AidSvmParams {
    /// The penalty `M` (LIBSVM's `C`), default 1.
    pub c: f64,
    /// `None`: linear SVM (aggregated problems by DCD); `Some(k)`: kernel SVM (Appendix B).
    pub kernel: Option<KernelSpec>,
    /// Initial aggregation rate per class (`None`: the paper's rule).
    pub r0: Option<f64>,
    /// Seed of the sample and of the k-means centres.
    pub seed: u64,
    /// Stopping tolerance of the aggregated solves (DCD/SMO), default 1e-5.
    pub solver_tol: f64,
    /// Loop limits; default gap tolerance 1e-4 (the paper's).
    pub settings: AidSettings,
    /// Solver of the linear aggregated problems (ignored with a kernel); default `Auto`.
    pub linear_engine: AidLinearEngine,
}

impl Default for AidSvmParams {
    fn default() -> Self {
        Self {
            c: 1.0,
            kernel: None,
            r0: None,
            seed: 0,
            solver_tol: 1e-5,
            settings: AidSettings::default(),
            linear_engine: AidLinearEngine::Auto,
        }
    }
}

/// An AID-SVM solution: `f(x) = w'x + b` (linear) or `sum_i coef_i K(x_i, x) + b` (kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct SvmSolution {
    /// Linear weights (empty for a kernel model).
    pub w: Vec<f64>,
    /// The bias.
    pub b: f64,
    /// Aggregated dual variables, one per cluster.
    pub alpha: Vec<f64>,
    /// Kernel expansion `(row, coef)` over the members of support clusters (empty if linear).
    pub expansion: Vec<(u32, f64)>,
    /// `|w|^2` (for kernels `a'Qa`).
    pub w_sq: f64,
}

/// The fitted model: an ordinary marginkit model.
#[derive(Debug, Clone, PartialEq)]
pub enum AidSvmModel {
    /// LIBLINEAR layout, bias feature 1 carrying `b` (predict, save and load as any linear model).
    Linear(LinearModel),
    /// LIBSVM layout (C-SVC): the support vectors are the members of the support clusters.
    Kernel(Box<SvmModel>),
}

/// The result of AID-SVM.
#[derive(Debug, Clone)]
pub struct AidSvmFit {
    /// The model of the best iterate.
    pub model: AidSvmModel,
    /// The loop's record.
    pub run: AidRun<SvmSolution>,
    /// Seconds spent on the initial clustering.
    pub init_seconds: f64,
    /// Class labels; `labels[0]` is the positive class.
    pub labels: Vec<f64>,
}

/// Labels as +-1 (`labels[0]` positive) after the checks of a supervised binary problem.
pub(crate) fn binary_signs(data: &Dataset) -> Result<(Vec<f64>, Vec<i8>), FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    let labels = class_order(&data.y);
    if labels.len() > 2 && labels.contains(&0.0) {
        return Err(ParamError::Incompatible(
            "label 0 marks unlabeled rows (S3VM); a supervised SVM needs exactly two classes",
        )
        .into());
    }
    if labels.len() == 1 {
        return Err(DataError::SingleClass { label: labels[0] }.into());
    }
    if labels.len() > 2 {
        return Err(
            ParamError::Incompatible("AID-SVM is binary: found more than two classes").into(),
        );
    }
    let y = data
        .y
        .iter()
        .map(|&v| if v == labels[0] { 1 } else { -1 })
        .collect();
    Ok((labels, y))
}

fn kernel_rows(x: &Features, k: KernelSpec) -> impl Fn(usize, usize) -> f64 + Sync + '_ {
    let norms: Vec<f64> = if k.needs_norms() {
        (0..x.n_rows()).map(|i| ops::sq_norm(x.row(i))).collect()
    } else {
        Vec::new()
    };
    move |i, j| {
        let d = ops::dot(x.row(i), x.row(j));
        if norms.is_empty() {
            k.from_dot(d, 0.0, 0.0)
        } else {
            k.from_dot(d, norms[i], norms[j])
        }
    }
}

struct SvmProblem<'a> {
    data: &'a Dataset,
    y: Vec<i8>,
    c: f64,
    kernel: Option<KernelSpec>,
    tol: f64,
    seed: u64,
    engine: AidLinearEngine,
    /// Kernel only: cluster-pair sums `S_kq` of the previous iteration and the cluster sizes.
    gram: Vec<f64>,
    sizes: Vec<usize>,
}

impl SvmProblem<'_> {
    fn settings(&self) -> SolverSettings {
        SolverSettings {
            tol: self.tol,
            shrinking: Shrinking::On,
            max_iter: None,
            time_limit: None,
        }
    }

    fn warm_alpha(
        &self,
        clusters: &Clusters,
        prev: Option<(&SvmSolution, &[usize])>,
        upper: &[f64],
    ) -> Vec<f64> {
        let k = clusters.len();
        match prev {
            Some((s, parent)) if parent.len() == k && !self.sizes.is_empty() => (0..k)
                .map(|c| {
                    let p = parent[c];
                    let a = s.alpha[p] * clusters.size(c) as f64 / self.sizes[p] as f64;
                    a.clamp(0.0, upper[c])
                })
                .collect(),
            _ => vec![0.0; k],
        }
    }

    fn cluster_signs(&self, clusters: &Clusters) -> Vec<i8> {
        (0..clusters.len())
            .map(|c| self.y[clusters.members(c)[0] as usize])
            .collect()
    }

    /// Updates `self.gram` (cluster-pair kernel sums) for the new clusters.
    fn update_gram(&mut self, clusters: &Clusters, parent: Option<&[usize]>, kern: KernelSpec) {
        let k = clusters.len();
        let old_k = self.sizes.len();
        // A cluster is unchanged when its parent has a single child.
        let mut children = vec![0usize; old_k];
        let unchanged: Vec<Option<usize>> = match parent {
            Some(par) if par.len() == k && old_k > 0 => {
                par.iter().for_each(|&p| children[p] += 1);
                par.iter()
                    .map(|&p| (children[p] == 1).then_some(p))
                    .collect()
            }
            _ => vec![None; k],
        };
        let x = &self.data.x;
        let kv = kernel_rows(x, kern);
        let n = self.data.len();
        // Row sums v_a(j) = sum_{i in C_a} K(x_i, x_j) for every changed cluster a, folded into
        // S_aq = sum_{j in C_q} v_a(j): O(n |C_a|) kernel values per changed cluster.
        let changed: Vec<usize> = (0..k).filter(|&a| unchanged[a].is_none()).collect();
        let rows: Vec<(usize, Vec<f64>)> = changed
            .par_iter()
            .map(|&a| {
                let mem = clusters.members(a);
                let mut v = vec![0.0; n];
                for (j, vj) in v.iter_mut().enumerate() {
                    let mut s = 0.0;
                    for &i in mem {
                        s += kv(i as usize, j);
                    }
                    *vj = s;
                }
                let srow: Vec<f64> = (0..k)
                    .map(|q| clusters.members(q).iter().map(|&j| v[j as usize]).sum())
                    .collect();
                (a, srow)
            })
            .collect();
        let mut g = vec![0.0; k * k];
        for a in 0..k {
            if let Some(pa) = unchanged[a] {
                for q in 0..k {
                    if let Some(pq) = unchanged[q] {
                        g[a * k + q] = self.gram[pa * old_k + pq];
                    }
                }
            }
        }
        for (a, srow) in rows {
            for q in 0..k {
                g[a * k + q] = srow[q];
                g[q * k + a] = srow[q];
            }
        }
        self.gram = g;
    }
}

impl AidProblem for SvmProblem<'_> {
    type Solution = SvmSolution;

    fn n_rows(&self) -> usize {
        self.data.len()
    }

    fn solve_aggregated(
        &mut self,
        clusters: &Clusters,
        previous: Option<(&SvmSolution, &[usize])>,
    ) -> Result<Aggregated<SvmSolution>, FitError> {
        let k = clusters.len();
        let yk = self.cluster_signs(clusters);
        let upper: Vec<f64> = (0..k).map(|c| self.c * clusters.size(c) as f64).collect();
        let p = vec![-1.0; k];
        let mut alpha = self.warm_alpha(clusters, previous, &upper);
        let qp = BoxQp {
            p: &p,
            y: &yk,
            upper: &upper,
            equality: Equality::Sum { delta: 0.0 },
            fixed: None,
        };
        let settings = self.settings();
        let sol = match self.kernel {
            None => {
                let d = self.data.n_features();
                let (mut sx, _) = clusters.sums(&self.data.x, None);
                for c in 0..k {
                    let s = clusters.size(c) as f64;
                    sx[c * d..(c + 1) * d].iter_mut().for_each(|v| *v /= s);
                }
                let xc = Features::Dense(DenseMatrix::new(k, d, sx)?);
                let (w, rho) = if self.engine == AidLinearEngine::Dcd || k > SMO_MAX {
                    let zero = vec![0.0; k];
                    let prob = SvcDual {
                        design: LinearDesign { x: &xc, bias: None },
                        qp,
                        diag_shift: &zero,
                    };
                    let res =
                        dcd::solve_svc(&prob, &settings, self.seed, &mut alpha, &mut NoObserver)?;
                    (res.w, res.info.rho)
                } else {
                    // SMO with a linear kernel on the centroids: the weighted problems have
                    // bounds M|C_k| of very different sizes, on which the equality-constrained
                    // DCD (no shrinking) converges slowly; SMO's second-order working sets do not.
                    let mut q = SvcQ::new(&xc, KernelSpec::Linear, &yk, 256 << 20)?;
                    let info = smo::solve(&mut q, &qp, &mut alpha, &settings, &mut NoObserver)?;
                    let mut w = vec![0.0; d];
                    for c in 0..k {
                        if alpha[c] != 0.0 {
                            ops::axpy(alpha[c] * f64::from(yk[c]), xc.row(c), &mut w);
                        }
                    }
                    (w, info.rho)
                };
                let w_sq = ops::dense_dot(&w, &w);
                let dual = alpha.iter().sum::<f64>() - 0.5 * w_sq;
                let b = -rho;
                // Aggregated primal at (w, b).
                let hinge: f64 = (0..k)
                    .map(|c| {
                        let f = ops::dot_dense(xc.row(c), &w) + b;
                        upper[c] * (1.0 - f64::from(yk[c]) * f).max(0.0)
                    })
                    .sum();
                Aggregated {
                    lower_bound: Some(dual),
                    objective: 0.5 * w_sq + hinge,
                    solution: SvmSolution {
                        w,
                        b,
                        alpha,
                        expansion: Vec::new(),
                        w_sq,
                    },
                }
            }
            Some(kern) => {
                let parent = previous.map(|(_, p)| p);
                self.update_gram(clusters, parent, kern);
                let sizes: Vec<f64> = (0..k).map(|c| clusters.size(c) as f64).collect();
                let mut q = vec![0.0; k * k];
                for a in 0..k {
                    for c in 0..k {
                        q[a * k + c] = f64::from(yk[a]) * f64::from(yk[c]) * self.gram[a * k + c]
                            / (sizes[a] * sizes[c]);
                    }
                }
                let mut dq = DenseQ::new(k, &q)?;
                let info = smo::solve(&mut dq, &qp, &mut alpha, &settings, &mut NoObserver)?;
                let b = -info.rho;
                let qa: Vec<f64> = (0..k)
                    .map(|a| ops::dense_dot(&q[a * k..(a + 1) * k], &alpha))
                    .collect();
                let w_sq = ops::dense_dot(&qa, &alpha).max(0.0);
                let dual = alpha.iter().sum::<f64>() - 0.5 * w_sq;
                // y_k f(centroid_k) = (Q a)_k + y_k b.
                let hinge: f64 = (0..k)
                    .map(|c| upper[c] * (1.0 - qa[c] - f64::from(yk[c]) * b).max(0.0))
                    .sum();
                let mut expansion = Vec::new();
                for c in 0..k {
                    if alpha[c] > 0.0 {
                        let coef = alpha[c] * f64::from(yk[c]) / sizes[c];
                        expansion.extend(clusters.members(c).iter().map(|&i| (i, coef)));
                    }
                }
                Aggregated {
                    lower_bound: Some(dual),
                    objective: 0.5 * w_sq + hinge,
                    solution: SvmSolution {
                        w: Vec::new(),
                        b,
                        alpha,
                        expansion,
                        w_sq,
                    },
                }
            }
        };
        self.sizes = (0..k).map(|c| clusters.size(c)).collect();
        if !sol.objective.is_finite() {
            return Err(SolveError::NonFinite {
                what: "aggregated SVM objective",
            }
            .into());
        }
        Ok(sol)
    }

    fn evaluate(&self, sol: &SvmSolution, side: &mut [u8]) -> f64 {
        let x = &self.data.x;
        let y = &self.y;
        let n = self.data.len();
        let margins: Vec<f64> = match self.kernel {
            None => (0..n)
                .into_par_iter()
                .map(|i| 1.0 - f64::from(y[i]) * (ops::dot_dense(x.row(i), &sol.w) + sol.b))
                .collect(),
            Some(kern) => {
                let kv = kernel_rows(x, kern);
                (0..n)
                    .into_par_iter()
                    .map(|j| {
                        let f: f64 = sol
                            .expansion
                            .iter()
                            .map(|&(i, c)| c * kv(i as usize, j))
                            .sum();
                        1.0 - f64::from(y[j]) * (f + sol.b)
                    })
                    .collect()
            }
        };
        side.par_iter_mut()
            .zip(margins.par_iter())
            .for_each(|(s, &m)| *s = u8::from(m > 1e-9));
        0.5 * sol.w_sq + self.c * det_sum(n, |i| margins[i].max(0.0))
    }
}

/// Largest aggregated linear problem solved by SMO (above: DCD).
const SMO_MAX: usize = 20_000;

/// The paper's SVM rule per class: `r^0 = max(1.1 m / n_c, 1e-4)`.
pub fn svm_r0(n_class: usize, m: usize) -> f64 {
    (1.1 * m as f64 / n_class.max(1) as f64).max(1e-4)
}

/// Initial clusters: per class, one k-means iteration on 1-D scores (see module docs).
fn initial_clusters(data: &Dataset, y: &[i8], params: &AidSvmParams) -> Result<Clusters, FitError> {
    let n = data.len();
    let m = data.n_features();
    let s = n.min(2000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let mut ids: Vec<usize> = (0..n).collect();
    for i in 0..s {
        let j = rng.gen_range(i..n);
        ids.swap(i, j);
    }
    let mut sample = ids[..s].to_vec();
    sample.sort_unstable();
    let sub = data.subset(&sample);
    let ys: Vec<i8> = sample.iter().map(|&i| y[i]).collect();
    let settings = SolverSettings {
        tol: 1e-3,
        ..SolverSettings::default()
    };
    let upper = vec![params.c; s];
    let p = vec![-1.0; s];
    let qp = BoxQp {
        p: &p,
        y: &ys,
        upper: &upper,
        equality: Equality::Sum { delta: 0.0 },
        fixed: None,
    };
    let mut alpha = vec![0.0; s];
    let two_classes = ys.contains(&1) && ys.contains(&-1);
    let score: Vec<f64> = match params.kernel {
        None => {
            let (w, b) = if two_classes {
                let zero = vec![0.0; s];
                let prob = SvcDual {
                    design: LinearDesign {
                        x: &sub.x,
                        bias: None,
                    },
                    qp,
                    diag_shift: &zero,
                };
                let r = dcd::solve_svc(&prob, &settings, params.seed, &mut alpha, &mut NoObserver)?;
                (r.w, -r.info.rho)
            } else {
                (vec![0.0; m], 0.0)
            };
            let nw = ops::dense_dot(&w, &w).sqrt().max(f64::MIN_POSITIVE);
            (0..n)
                .into_par_iter()
                .map(|i| (ops::dot_dense(data.x.row(i), &w) + b) / nw)
                .collect()
        }
        Some(kern) => {
            let (coef, b) = if two_classes {
                let mut q = SvcQ::new(&sub.x, kern, &ys, 64 << 20)?;
                let info = smo::solve(&mut q, &qp, &mut alpha, &settings, &mut NoObserver)?;
                (
                    alpha
                        .iter()
                        .zip(&ys)
                        .map(|(a, &v)| a * f64::from(v))
                        .collect::<Vec<_>>(),
                    -info.rho,
                )
            } else {
                (vec![0.0; s], 0.0)
            };
            let sv: Vec<usize> = (0..s).filter(|&i| coef[i] != 0.0).collect();
            let norms: Vec<f64> = (0..n).map(|i| ops::sq_norm(data.x.row(i))).collect();
            (0..n)
                .into_par_iter()
                .map(|j| {
                    let f: f64 = sv
                        .iter()
                        .map(|&t| {
                            let i = sample[t];
                            coef[t]
                                * kern.from_dot(
                                    ops::dot(data.x.row(i), data.x.row(j)),
                                    norms[i],
                                    norms[j],
                                )
                        })
                        .sum();
                    f + b
                })
                .collect()
        }
    };
    let mut parts = Vec::new();
    for (ci, class) in [1i8, -1].into_iter().enumerate() {
        let rows: Vec<usize> = (0..n).filter(|&i| y[i] == class).collect();
        if rows.is_empty() {
            continue;
        }
        let r0 = params.r0.unwrap_or_else(|| svm_r0(rows.len(), m));
        let k = ((r0 * rows.len() as f64).ceil() as usize).clamp(1, rows.len());
        let pts: Vec<f64> = rows.iter().map(|&i| score[i]).collect();
        let c = kmeans_one_iteration(&pts, 1, k, params.seed.wrapping_add(ci as u64 + 1));
        parts.push(c.relabel(&rows));
    }
    Ok(Clusters::concat(parts))
}

/// AID-SVM (see module docs).
///
/// # Errors
/// [`DataError::Empty`], [`DataError::SingleClass`], [`ParamError`] for a bad `c`, `r0`, more
/// than two classes or rows labelled 0 next to two classes (unlabeled rows belong to S3VM),
/// solver errors.
pub fn fit_aid_svm(
    data: &Dataset,
    params: &AidSvmParams,
    progress: &mut dyn FnMut(&IterRecord),
) -> Result<AidSvmFit, FitError> {
    crate::error::positive("C", params.c)?;
    crate::error::positive("solver tolerance", params.solver_tol)?;
    if let Some(r) = params.r0 {
        if !(r.is_finite() && r > 0.0 && r <= 1.0) {
            return Err(ParamError::OutOfRange {
                name: "r0",
                value: r,
                range: "(0, 1]",
            }
            .into());
        }
    }
    if let Some(k) = params.kernel {
        if k == KernelSpec::Precomputed {
            return Err(
                ParamError::Incompatible("AID-SVM does not take a precomputed kernel").into(),
            );
        }
        k.check()?;
    }
    let (labels, y) = binary_signs(data)?;
    let t0 = Instant::now();
    let clusters = initial_clusters(data, &y, params)?;
    let init_seconds = t0.elapsed().as_secs_f64();
    let mut problem = SvmProblem {
        data,
        y,
        c: params.c,
        kernel: params.kernel,
        tol: params.solver_tol,
        seed: params.seed,
        engine: params.linear_engine,
        gram: Vec::new(),
        sizes: Vec::new(),
    };
    let run = run(&mut problem, clusters, &params.settings, progress)?;
    let model = build_model(data, &labels, params.kernel, &run.best)?;
    Ok(AidSvmFit {
        model,
        run,
        init_seconds,
        labels,
    })
}

fn build_model(
    data: &Dataset,
    labels: &[f64],
    kernel: Option<KernelSpec>,
    sol: &SvmSolution,
) -> Result<AidSvmModel, FitError> {
    match kernel {
        None => {
            let mut w = sol.w.clone();
            w.push(sol.b);
            Ok(AidSvmModel::Linear(LinearModel::from_parts(
                LinearSolver::L1LossSvcDual,
                labels.to_vec(),
                data.n_features(),
                Some(1.0),
                vec![w],
            )?))
        }
        Some(kern) => {
            // LIBSVM layout: positive-class SVs first.
            let mut pos: Vec<(usize, f64)> = Vec::new();
            let mut neg: Vec<(usize, f64)> = Vec::new();
            let mut exp = sol.expansion.clone();
            exp.sort_by_key(|e| e.0);
            for (i, c) in exp {
                if c > 0.0 {
                    pos.push((i as usize, c));
                } else if c < 0.0 {
                    neg.push((i as usize, c));
                }
            }
            let idx: Vec<usize> = pos.iter().chain(&neg).map(|e| e.0).collect();
            let coef: Vec<f64> = pos.iter().chain(&neg).map(|e| e.1).collect();
            Ok(AidSvmModel::Kernel(Box::new(
                SvmModel {
                    svm_type: SvmType::CSvc,
                    kernel: kern,
                    labels: labels.to_vec(),
                    n_sv: vec![pos.len(), neg.len()],
                    sv: data.x.select_rows(&idx),
                    sv_indices: Some(idx),
                    sv_coef: vec![coef],
                    rho: vec![-sol.b],
                    prob_a: Vec::new(),
                    prob_b: Vec::new(),
                    sv_norms: Vec::new(),
                }
                .with_norms(),
            )))
        }
    }
}
