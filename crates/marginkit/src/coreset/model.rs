//! Core-set solutions as ordinary LIBSVM-format models ([`SvmModel`]): `predict`, `save_model` and
//! `load_model` work on them unchanged (the CLI's `marginkit predict` too).
//!
//! With weights `x_j` on the core-set points `u_j` (only `x_j > 0` become support vectors) and
//! constant base-kernel diagonal `c`:
//!
//! | problem | model | coefficients | `rho` | decision `sum coef_j K(u_j, p) - rho` |
//! |---|---|---|---|---|
//! | L2-SVM (eq. 6/7) | `c_svc`, 2 classes | `l_j x_j` | `-b = -sum l_j x_j` | `f(p) = sum x_j l_j (K(u_j,p) + 1)`, `> 0` = first label |
//! | SVDD (eq. 8) | `one_class` | `2 x_j` | `c + delta + |c|^2 - r^2` | `r^2 - |phi(p) - c|^2` (`> 0` inside the ball) |
//! | one-class L2 | `one_class` | `x_j` | `rho = x'K~x = |c|^2` | `w'phi(p) - rho` |
//!
//! Derivations (digest section 2.3, checked): the Lagrangian of (6) gives `w = sum l_i x_i phi_i`,
//! `b = sum l_i x_i`, `xi_i = x_i / C`, `rho = x'K~x`; for SVDD,
//! `|phi(p) - c|^2 = K(p,p) + delta - 2 sum x_j K(u_j, p) + |c|^2` for a point `p` outside the
//! training ids (the ridge `delta` of the lifted points, see the module docs).

use super::consensus::CoreSetMsg;
use super::space::{FeatureKernel, Problem};
use super::CoresetError;
use crate::data::{DenseMatrix, Features};
use crate::svm::{SvmModel, SvmType};

/// What a core-set fit finds: the core-set and the problem kernel it was found with.
#[derive(Debug, Clone, PartialEq)]
pub struct CoresetModel {
    /// The core-set: its ids, distinct points, dual weights, `r^2` and `|c|^2`.
    pub set: CoreSetMsg,
    /// The problem kernel `K~` (gamma resolved against the points).
    pub kernel: FeatureKernel,
}

impl CoresetModel {
    /// The core-set as an ordinary LIBSVM-format model ([`to_model`]); `labels` are the two
    /// classes in LIBSVM order (first = `+1`) for the L2-SVM, ignored otherwise.
    ///
    /// # Errors
    /// As [`to_model`].
    pub fn to_svm(&self, labels: [f64; 2]) -> Result<SvmModel, CoresetError> {
        to_model(&self.set, &self.kernel, labels)
    }
}

/// Builds the model of `set` (a core-set of `problem`). `labels` are the two classes in LIBSVM
/// order (first = `+1`) for the L2-SVM, ignored otherwise.
///
/// # Errors
/// [`crate::error::ParamError::Incompatible`] for [`Problem::Meb`] (no kernel model).
pub fn to_model(
    set: &CoreSetMsg,
    kern: &FeatureKernel,
    labels: [f64; 2],
) -> Result<SvmModel, CoresetError> {
    let pts = &set.points;
    let d = pts.dim();
    let support: Vec<usize> = (0..pts.len()).filter(|&i| set.weights[i] > 0.0).collect();
    let diag = if support.is_empty() {
        0.0
    } else {
        kern.base(pts.get(support[0]), pts.get(support[0]))
    };
    let mut rows = Vec::new();
    let mut coef = Vec::new();
    let mut idx = Vec::new();
    let mut n_sv = Vec::new();
    let mut push = |i: usize, c: f64, rows: &mut Vec<f64>, coef: &mut Vec<f64>| {
        rows.extend_from_slice(pts.row(i));
        coef.push(c);
        idx.push(pts.id(i) as usize);
    };
    let (svm_type, rho, model_labels) = match kern.problem {
        Problem::Meb => {
            return Err(crate::error::ParamError::Incompatible(
                "a minimum enclosing ball has no kernel model; use SVDD with a linear kernel",
            )
            .into())
        }
        Problem::L2Svm { .. } => {
            let mut b = 0.0;
            for &i in &support {
                b += pts.label(i) * set.weights[i];
            }
            for class in [1.0, -1.0] {
                let mut cnt = 0;
                for &i in &support {
                    if pts.label(i) == class {
                        push(i, class * set.weights[i], &mut rows, &mut coef);
                        cnt += 1;
                    }
                }
                n_sv.push(cnt);
            }
            (SvmType::CSvc, -b, labels.to_vec())
        }
        Problem::Svdd => {
            for &i in &support {
                push(i, 2.0 * set.weights[i], &mut rows, &mut coef);
            }
            (
                SvmType::OneClass,
                diag + kern.ridge + set.c2 - set.r2,
                Vec::new(),
            )
        }
        Problem::OneClassL2 { .. } => {
            for &i in &support {
                push(i, set.weights[i], &mut rows, &mut coef);
            }
            (SvmType::OneClass, set.c2, Vec::new())
        }
    };
    let m = coef.len();
    let sv = DenseMatrix::new(m, d, rows)?;
    Ok(SvmModel {
        svm_type,
        kernel: kern.kernel,
        labels: model_labels,
        n_sv,
        sv: Features::Dense(sv),
        sv_indices: Some(idx),
        sv_coef: vec![coef],
        rho: vec![rho],
        prob_a: Vec::new(),
        prob_b: Vec::new(),
        sv_norms: Vec::new(),
    }
    .with_norms())
}
