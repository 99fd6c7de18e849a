//! A trained kernel SVM with LIBSVM's layout, and prediction.
//!
//! Layout (as in LIBSVM's model files): support vectors are grouped by class in label order;
//! `sv_coef` has `n_class - 1` rows (one row for two classes, regression and one-class); for the
//! pair of classes (i, j), i < j, the coefficients of class i's SVs are in row `j - 1` and those of
//! class j's SVs in row `i`; `rho` has one entry per pair in the order (0,1), (0,2), ..., (1,2), ...
//!
//! Prediction ([`SvmModel::decision_values`]) evaluates the kernel between a batch of rows and all
//! support vectors as one blocked, parallel product (`kernel::batch`): per row, the sums
//! `sum_{k in class c} sv_coef[r][k] K(x, sv_k)` for every class `c` and coefficient row `r`,
//! each in support-vector order, then the pairs as LIBSVM combines them. A row's values do not
//! depend on the other rows or on the thread count. [`SvmModel::decision_values_row`] is the
//! reference: LIBSVM's `k_function` one support vector at a time; the two agree to rounding
//! (the blocked product sums each inner product sequentially and uses a vectorizable
//! exponential for RBF, relative error below 1e-15 per kernel value).

use rayon::prelude::*;

use super::params::SvmType;
use super::probability;
use crate::data::{ops, Features, Row};
use crate::error::DataError;
use crate::kernel::batch::{KernelSums, SvLayout};
use crate::kernel::KernelSpec;

/// A trained kernel SVM.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmModel {
    /// Formulation.
    pub svm_type: SvmType,
    /// Kernel with resolved parameters.
    pub kernel: KernelSpec,
    /// Class labels in LIBSVM's order (first appearance); empty for regression and one-class.
    pub labels: Vec<f64>,
    /// Support vectors per class (classification only).
    pub n_sv: Vec<usize>,
    /// The support vectors, one row each, grouped by class.
    pub sv: Features,
    /// 0-based index of each support vector in the training data (`None` for a loaded model
    /// whose file does not say).
    pub sv_indices: Option<Vec<usize>>,
    /// Coefficients, `n_class - 1` rows of `total_sv` entries.
    pub sv_coef: Vec<Vec<f64>>,
    /// Thresholds (`b = -rho`), one per class pair.
    pub rho: Vec<f64>,
    /// Platt parameters A per pair (classification with `-b 1`).
    pub prob_a: Vec<f64>,
    /// Platt parameters B per pair.
    pub prob_b: Vec<f64>,
    /// Squared norms of the support vectors (RBF), computed once.
    pub(crate) sv_norms: Vec<f64>,
}

impl SvmModel {
    /// Precomputes what prediction needs (squared SV norms for RBF); call after building or
    /// changing the support vectors.
    pub(crate) fn with_norms(mut self) -> Self {
        self.sv_norms = sv_norms(&self.sv, &self.kernel);
        self
    }

    /// Number of classes (2 for regression and one-class, as LIBSVM writes).
    pub fn n_class(&self) -> usize {
        if self.svm_type.is_classifier() {
            self.labels.len()
        } else {
            2
        }
    }
    /// Total number of support vectors.
    pub fn total_sv(&self) -> usize {
        self.sv.n_rows()
    }
    /// True when the model carries a probability model.
    pub fn has_probability(&self) -> bool {
        if self.svm_type.is_classifier() {
            !self.prob_a.is_empty()
        } else {
            self.svm_type.is_regression() && !self.prob_a.is_empty()
        }
    }
    /// Number of features of the training data (the width of the support-vector matrix; a
    /// model file records it as the largest index of its support vectors, see
    /// [`super::model_io::write_model`]).
    pub fn n_features(&self) -> usize {
        self.sv.n_cols()
    }

    /// Number of features of `x` beyond the model's that hold a value in some row (0 when none
    /// does). Prediction accepts them as LIBSVM does: a support vector is 0 there, so they add
    /// nothing to `x'sv` and their squares to `||x||^2` (RBF); front ends warn.
    pub fn extra_features(&self, x: &Features) -> usize {
        if self.kernel == KernelSpec::Precomputed || x.n_cols() <= self.n_features() {
            return 0;
        }
        if x.has_values_beyond(self.n_features()) {
            x.n_cols() - self.n_features()
        } else {
            0
        }
    }

    /// Checks that `x` can be fed to this model. Features beyond the model's are accepted
    /// (see [`SvmModel::extra_features`]).
    ///
    /// # Errors
    /// [`DataError::FeatureMismatch`] for precomputed rows that do not have a column for every
    /// support vector's serial number.
    pub fn check_features(&self, x: &Features) -> Result<(), DataError> {
        if self.kernel == KernelSpec::Precomputed {
            let need = (0..self.total_sv())
                .map(|k| self.sv.row(k).get(0) as usize)
                .max()
                .unwrap_or(0);
            if x.n_cols() <= need {
                return Err(DataError::FeatureMismatch {
                    expected: need + 1,
                    found: x.n_cols(),
                });
            }
            return Ok(());
        }
        Ok(())
    }

    /// Kernel values `K(x, sv_k)` for all support vectors into `out`.
    fn kernel_row(&self, x: Row<'_>, out: &mut [f64]) {
        match self.kernel {
            KernelSpec::Precomputed => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = x.get(self.sv.row(k).get(0) as usize);
                }
            }
            KernelSpec::Rbf { .. } => {
                let nx = ops::sq_norm(x);
                for (k, o) in out.iter_mut().enumerate() {
                    *o = self
                        .kernel
                        .from_dot(ops::dot(x, self.sv.row(k)), nx, self.sv_norms[k]);
                }
            }
            kernel => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = kernel.from_dot(ops::dot(x, self.sv.row(k)), 0.0, 0.0);
                }
            }
        }
    }

    /// Decision values of one row: one per class pair (classification, LIBSVM's pair order) or a
    /// single value (regression: the prediction; one-class: positive inside), evaluated one
    /// support vector at a time with LIBSVM's kernel formula. [`SvmModel::decision_values`]
    /// computes a batch as one blocked product; the two agree to rounding.
    pub fn decision_values_row(&self, x: Row<'_>, kbuf: &mut Vec<f64>) -> Vec<f64> {
        kbuf.resize(self.total_sv(), 0.0);
        self.kernel_row(x, kbuf);
        if !self.svm_type.is_classifier() {
            let s: f64 = self.sv_coef[0]
                .iter()
                .zip(kbuf.iter())
                .map(|(a, k)| a * k)
                .sum();
            return vec![s - self.rho[0]];
        }
        let nc = self.labels.len();
        let mut start = vec![0usize; nc];
        for c in 1..nc {
            start[c] = start[c - 1] + self.n_sv[c - 1];
        }
        let mut out = Vec::with_capacity(nc * (nc - 1) / 2);
        let mut p = 0;
        for i in 0..nc {
            for j in i + 1..nc {
                let (si, sj) = (start[i], start[j]);
                let (ci, cj) = (self.n_sv[i], self.n_sv[j]);
                let dot = |coef: &[f64], range: std::ops::Range<usize>| -> f64 {
                    coef[range.clone()]
                        .iter()
                        .zip(&kbuf[range])
                        .map(|(a, k)| a * k)
                        .sum::<f64>()
                };
                let s = dot(&self.sv_coef[j - 1], si..si + ci) + dot(&self.sv_coef[i], sj..sj + cj);
                out.push(s - self.rho[p]);
                p += 1;
            }
        }
        out
    }

    /// Prediction from decision values (votes for classification, LIBSVM's tie rule: the first
    /// class with the most votes).
    pub fn predict_from_decision(&self, dec: &[f64]) -> f64 {
        match self.svm_type {
            SvmType::EpsSvr | SvmType::NuSvr => dec[0],
            SvmType::OneClass => {
                if dec[0] > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            }
            SvmType::CSvc | SvmType::NuSvc => {
                let nc = self.labels.len();
                let mut votes = vec![0usize; nc];
                let mut p = 0;
                for i in 0..nc {
                    for j in i + 1..nc {
                        if dec[p] > 0.0 {
                            votes[i] += 1;
                        } else {
                            votes[j] += 1;
                        }
                        p += 1;
                    }
                }
                let mut best = 0;
                for c in 1..nc {
                    if votes[c] > votes[best] {
                        best = c;
                    }
                }
                self.labels[best]
            }
        }
    }

    /// Decision values for every row of `x`, as [`SvmModel::decision_values_row`] defines them:
    /// the kernel between blocks of rows and all support vectors as one cache-blocked product,
    /// in parallel over the blocks on the current rayon pool. The result does not depend on the
    /// thread count. A precomputed kernel (the kernel values are the data) reads row by row.
    pub fn decision_values(&self, x: &Features) -> Vec<Vec<f64>> {
        self.decision_values_in(x, SvLayout::Auto)
    }

    /// [`SvmModel::decision_values`] with the support vectors held as `layout` says.
    pub(crate) fn decision_values_in(&self, x: &Features, layout: SvLayout) -> Vec<Vec<f64>> {
        if self.kernel == KernelSpec::Precomputed {
            return self.decision_values_by_row(x);
        }
        let groups = if self.svm_type.is_classifier() {
            self.n_sv.clone()
        } else {
            vec![self.total_sv()]
        };
        let sums = KernelSums::new(self.kernel, &self.sv, &self.sv_coef, &groups, layout);
        sums.map_rows(x, |s| self.combine_sums(s))
    }

    /// [`SvmModel::decision_values_row`] for every row of `x`, in parallel over rows.
    pub(crate) fn decision_values_by_row(&self, x: &Features) -> Vec<Vec<f64>> {
        (0..x.n_rows())
            .into_par_iter()
            .map_init(Vec::new, |buf, i| self.decision_values_row(x.row(i), buf))
            .collect()
    }

    /// Decision values from the per-class sums `s[c * (n_class - 1) + r]` of
    /// `sv_coef[r][k] K(x, sv_k)` over the SVs `k` of class `c` (one sum for regression and
    /// one-class): for the pair (i, j), class i's SVs weigh with row `j - 1`, class j's with
    /// row `i`, added in that order as [`SvmModel::decision_values_row`] adds them.
    fn combine_sums(&self, s: &[f64]) -> Vec<f64> {
        if !self.svm_type.is_classifier() {
            return vec![s[0] - self.rho[0]];
        }
        let nc = self.labels.len();
        let nr = nc.saturating_sub(1);
        let mut out = Vec::with_capacity(nc * nr / 2);
        let mut p = 0;
        for i in 0..nc {
            for j in i + 1..nc {
                out.push((s[i * nr + j - 1] + s[j * nr + i]) - self.rho[p]);
                p += 1;
            }
        }
        out
    }

    /// Predicted label or value for every row of `x`.
    ///
    /// # Errors
    /// [`DataError::FeatureMismatch`] (see [`SvmModel::check_features`]).
    pub fn predict(&self, x: &Features) -> Result<Vec<f64>, DataError> {
        self.check_features(x)?;
        Ok(self
            .decision_values(x)
            .iter()
            .map(|d| self.predict_from_decision(d))
            .collect())
    }

    /// Class probabilities (in `labels` order) for every row, with the predicted label.
    /// Regression models have no class probabilities; use [`SvmModel::svr_sigma`].
    ///
    /// # Errors
    /// [`DataError::FeatureMismatch`].
    pub fn predict_probability(&self, x: &Features) -> Result<Vec<(f64, Vec<f64>)>, DataError> {
        self.check_features(x)?;
        let dec = self.decision_values(x);
        Ok(dec
            .iter()
            .map(|d| {
                if self.svm_type.is_classifier() && !self.prob_a.is_empty() {
                    let probs = probability::multiclass_probability(
                        self.labels.len(),
                        d,
                        &self.prob_a,
                        &self.prob_b,
                    );
                    let mut best = 0;
                    for c in 1..probs.len() {
                        if probs[c] > probs[best] {
                            best = c;
                        }
                    }
                    // A tie between two classes goes to the predicted one.
                    if probs.len() == 2 && probs[0] == probs[1] {
                        return (self.predict_from_decision(d), probs);
                    }
                    (self.labels[best], probs)
                } else {
                    (self.predict_from_decision(d), Vec::new())
                }
            })
            .collect())
    }

    /// For a regression model with `-b 1`: the scale sigma of the Laplace noise model
    /// `p(z) = exp(-|z|/sigma) / (2 sigma)` of `y - f(x)`.
    pub fn svr_sigma(&self) -> Option<f64> {
        if self.svm_type.is_regression() {
            self.prob_a.first().copied()
        } else {
            None
        }
    }
}

fn sv_norms(sv: &Features, kernel: &KernelSpec) -> Vec<f64> {
    if kernel.needs_norms() {
        (0..sv.n_rows()).map(|k| ops::sq_norm(sv.row(k))).collect()
    } else {
        Vec::new()
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
