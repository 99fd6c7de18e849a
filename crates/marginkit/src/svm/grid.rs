//! Grid search over (C, gamma) by k-fold cross-validation (LIBSVM's grid.py), with work reused
//! across C: for a binary C-SVC, every (gamma, fold) keeps one kernel cache for all C values and
//! warm-starts each C from the previous solution scaled by C_new / C_old (which stays feasible:
//! the equality `y'a = 0` is preserved by scaling and the box scales with C).

use super::params::{Probability, SvmType, SvmValidParams};
use super::train::{class_order, cross_validation, fold_assignment};
use crate::data::Dataset;
use crate::error::{DataError, FitError};
use crate::kernel::qmatrix::SvcQ;
use crate::solver::{smo, BoxQp, Cancel, Equality, Status};

/// One point of the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridPoint {
    /// C.
    pub c: f64,
    /// gamma.
    pub gamma: f64,
    /// Cross-validation accuracy in percent (classification) or mean squared error (regression).
    pub score: f64,
    /// The worst solver status over the folds' fits ([`Status::Converged`] if all converged).
    pub status: Status,
}

impl GridPoint {
    /// True when `self` beats `other` (higher accuracy, or lower MSE for regression).
    pub fn better_than(&self, other: &GridPoint, regression: bool) -> bool {
        if regression {
            self.score < other.score
        } else {
            self.score > other.score
        }
    }
}

/// Evaluates every (C, gamma) pair by `folds`-fold cross-validation with the same folds for all
/// points. `on_point` is called as each point is finished.
///
/// When `cancel` is set the search stops and returns the points finished so far: the binary
/// C-SVC path stops inside its solver, the other formulations after the current point. A point
/// is returned only when all its folds finished.
///
/// # Errors
/// [`FitError::Param`] when a C or gamma is not finite and `> 0`; otherwise as
/// [`super::train::fit`].
pub fn grid_search(
    params: &SvmValidParams,
    data: &Dataset,
    cs: &[f64],
    gammas: &[f64],
    folds: usize,
    cancel: &Cancel,
    on_point: &mut dyn FnMut(&GridPoint),
) -> Result<Vec<GridPoint>, FitError> {
    if data.is_empty() {
        return Err(DataError::Empty.into());
    }
    let regression = params.svm_type.is_regression();
    let reuse = params.svm_type == SvmType::CSvc
        && params.probability == Probability::Off
        && class_order(&data.y).len() == 2
        && params.class_weights.is_empty();
    for &gamma in gammas {
        for &c in cs {
            params.with_c_gamma(c, gamma)?;
        }
    }
    let mut out = Vec::with_capacity(cs.len() * gammas.len());
    for &gamma in gammas {
        let p = params.with_c_gamma(params.c, gamma)?;
        if reuse {
            let Some(points) = binary_c_path(&p, data, cs, folds, cancel)? else {
                break;
            };
            for pt in points {
                on_point(&pt);
                out.push(pt);
            }
        } else {
            for &c in cs {
                if cancel.is_cancelled() {
                    return Ok(out);
                }
                let pc = params.with_c_gamma(c, gamma)?;
                let crate::fit::CrossValidation {
                    predictions: pred,
                    status,
                } = cross_validation(&pc, data, folds, &mut crate::fit::Control::default())?;
                let n = data.len() as f64;
                let score = if regression {
                    pred.iter()
                        .zip(&data.y)
                        .map(|(a, b)| (a - b).powi(2))
                        .sum::<f64>()
                        / n
                } else {
                    100.0 * pred.iter().zip(&data.y).filter(|(a, b)| a == b).count() as f64 / n
                };
                let pt = GridPoint {
                    c,
                    gamma,
                    score,
                    status,
                };
                on_point(&pt);
                out.push(pt);
            }
        }
    }
    Ok(out)
}

/// Cross-validation accuracies of a binary C-SVC for all `cs` at one gamma, sharing one kernel
/// cache per fold and warm-starting along C (in increasing order); `None` when `cancel` stopped
/// a solve.
fn binary_c_path(
    params: &SvmValidParams,
    data: &Dataset,
    cs: &[f64],
    folds: usize,
    cancel: &Cancel,
) -> Result<Option<Vec<GridPoint>>, FitError> {
    let n = data.len();
    let k = folds.clamp(1, n);
    let labels = class_order(&data.y);
    let assign = fold_assignment(&data.y, k, true, params.seed);
    let kernel = params.kernel.resolve(data.n_features());
    let gamma = params.kernel.gamma.resolve(data.n_features());
    let mut order: Vec<usize> = (0..cs.len()).collect();
    order.sort_by(|&a, &b| cs[a].total_cmp(&cs[b]));
    let mut correct = vec![0usize; cs.len()];
    let mut status = vec![Status::Converged; cs.len()];
    let cache = usize::try_from(params.cache_bytes).unwrap_or(usize::MAX);
    for f in 0..k {
        let train: Vec<usize> = (0..n).filter(|&i| assign[i] != f).collect();
        let test: Vec<usize> = (0..n).filter(|&i| assign[i] == f).collect();
        if test.is_empty() {
            continue;
        }
        let sub = data.subset(&train);
        let signs: Vec<i8> = sub
            .y
            .iter()
            .map(|&v| if v == labels[0] { 1 } else { -1 })
            .collect();
        let y: Vec<f64> = signs.iter().map(|&s| f64::from(s)).collect();
        let test_x = data.x.select_rows(&test);
        if signs.iter().all(|&s| s == signs[0]) {
            // The training part has one class: every C predicts it.
            let lab = if signs[0] > 0 { labels[0] } else { labels[1] };
            let hits = test.iter().filter(|&&i| data.y[i] == lab).count();
            for c in correct.iter_mut() {
                *c += hits;
            }
            continue;
        }
        let mut q = SvcQ::new(&sub.x, kernel, &signs, cache)?;
        let p = vec![-1.0; train.len()];
        let mut alpha = vec![0.0; train.len()];
        let mut prev_c: Option<f64> = None;
        for &ci in &order {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let c = cs[ci];
            if let Some(pc) = prev_c {
                let s = c / pc;
                for a in alpha.iter_mut() {
                    *a *= s;
                }
            }
            prev_c = Some(c);
            let upper: Vec<f64> = (0..train.len()).map(|i| c * sub.weight(i)).collect();
            let qp = BoxQp {
                p: &p,
                y: &signs,
                upper: &upper,
                equality: Equality::Sum { delta: 0.0 },
                fixed: None,
            };
            let info = smo::solve(&mut q, &qp, &mut alpha, &params.solver, &mut cancel.clone())?;
            if info.status == Status::Interrupted {
                return Ok(None);
            }
            status[ci] = status[ci].worst(info.status);
            let coef: Vec<f64> = alpha.iter().zip(&y).map(|(a, s)| a * s).collect();
            let dec = super::train::binary_decisions(kernel, &sub.x, &coef, info.rho, &test_x);
            correct[ci] += test
                .iter()
                .zip(&dec)
                .filter(|(&i, &d)| {
                    let lab = if d > 0.0 { labels[0] } else { labels[1] };
                    lab == data.y[i]
                })
                .count();
        }
    }
    Ok(Some(
        cs.iter()
            .zip(&correct)
            .zip(&status)
            .map(|((&c, &k), &status)| GridPoint {
                c,
                gamma,
                score: 100.0 * k as f64 / n as f64,
                status,
            })
            .collect(),
    ))
}
