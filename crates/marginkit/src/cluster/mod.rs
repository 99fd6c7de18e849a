//! Clustering support shared by ODMC and the baselines: dense point sets with standardization,
//! k-means (k-means++ seeding, [`kmeans`]), external metrics ([`metrics`]) and the errors of
//! clustering runs.
// Index loops over paired arrays (labels, duals, rows) read like the formulas.
#![allow(clippy::needless_range_loop)]

pub mod kmeans;
pub mod metrics;

use thiserror::Error;

use crate::data::Features;
use crate::error::{DataError, ParamError};

/// Anything that can go wrong in a clustering run.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClusterError {
    /// Invalid parameters.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// Invalid data.
    #[error(transparent)]
    Data(#[from] DataError),
    /// More clusters than points, or fewer than the method needs.
    #[error("k = {k} clusters cannot be formed from {n} points (need 2 <= k <= n)")]
    BadK {
        /// Requested clusters.
        k: usize,
        /// Points.
        n: usize,
    },
    /// Every point is the same (after dropping constant features nothing is left).
    #[error("the data is constant: every feature has the same value in all {n} points, so there is nothing to cluster")]
    ConstantData {
        /// Points.
        n: usize,
    },
    /// The balance constraint admits no labeling with two non-empty clusters.
    #[error("balance constraint infeasible: {reason}")]
    InfeasibleBalance {
        /// Why.
        reason: String,
    },
    /// The dense kernel matrix would be too large.
    #[error("{n} points need a {n}x{n} kernel matrix, above the limit of {limit} points for the Gaussian kernel; use the linear kernel or a subsample")]
    TooLarge {
        /// Points.
        n: usize,
        /// Limit.
        limit: usize,
    },
}

/// A dense, row-major point set (`n x d`).
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    /// Number of points.
    pub n: usize,
    /// Number of coordinates.
    pub d: usize,
    /// Row-major values, `n * d`.
    pub v: Vec<f64>,
}

impl Points {
    /// Dense copy of any feature matrix.
    ///
    /// # Errors
    /// [`DataError::DenseTooLarge`] when the dense copy does not fit in memory.
    pub fn from_features(x: &Features) -> Result<Self, DataError> {
        x.check_dense_rows("the dense points", x.n_rows())?;
        let (n, d) = (x.n_rows(), x.n_cols());
        let mut v = vec![0.0; n * d];
        for i in 0..n {
            for (k, val) in x.row(i).iter() {
                if k < d {
                    v[i * d + k] = val;
                }
            }
        }
        Ok(Self { n, d, v })
    }
    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.v[i * self.d..(i + 1) * self.d]
    }
    /// The rows `idx` as a new point set.
    pub fn select(&self, idx: &[usize]) -> Self {
        let mut v = Vec::with_capacity(idx.len() * self.d);
        for &i in idx {
            v.extend_from_slice(self.row(i));
        }
        Self {
            n: idx.len(),
            d: self.d,
            v,
        }
    }

    /// Centres every feature and scales it to unit variance; features with zero variance
    /// (relative to their magnitude) are dropped.
    ///
    /// # Errors
    /// [`ClusterError::ConstantData`] when every feature is constant.
    pub fn standardized(&self) -> Result<Self, ClusterError> {
        let (n, d) = (self.n, self.d);
        let mut mean = vec![0.0; d];
        for i in 0..n {
            for (m, &x) in mean.iter_mut().zip(self.row(i)) {
                *m += x;
            }
        }
        for m in &mut mean {
            *m /= n.max(1) as f64;
        }
        let mut var = vec![0.0; d];
        let mut mag = vec![0.0f64; d];
        for i in 0..n {
            for k in 0..d {
                let x = self.v[i * d + k];
                var[k] += (x - mean[k]) * (x - mean[k]);
                mag[k] = mag[k].max(x.abs());
            }
        }
        // A feature's spread: its standard deviation or, for values so small (or large) that
        // their squared deviations lose precision or underflow (overflow), the standard
        // deviation of the values divided by their magnitude, times that magnitude. A feature
        // is kept when its spread is above 1e-12 of its magnitude.
        let spread = |k: usize| -> f64 {
            let sd = (var[k] / n.max(1) as f64).sqrt();
            if (1e-100..=1e100).contains(&mag[k]) {
                return if sd > 1e-12 * mag[k] { sd } else { 0.0 };
            }
            if mag[k] == 0.0 {
                return 0.0;
            }
            let s: f64 = (0..n)
                .map(|i| ((self.v[i * d + k] - mean[k]) / mag[k]).powi(2))
                .sum();
            let rel = (s / n.max(1) as f64).sqrt();
            if rel > 1e-12 {
                rel * mag[k]
            } else {
                0.0
            }
        };
        let kept: Vec<(usize, f64)> = (0..d)
            .map(|k| (k, spread(k)))
            .filter(|&(_, sd)| sd > 0.0)
            .collect();
        if kept.is_empty() {
            return Err(ClusterError::ConstantData { n });
        }
        let nd = kept.len();
        let mut v = vec![0.0; n * nd];
        for i in 0..n {
            for (c, &(k, sd)) in kept.iter().enumerate() {
                v[i * nd + c] = (self.v[i * d + k] - mean[k]) / sd;
            }
        }
        Ok(Self { n, d: nd, v })
    }

    /// The same points with every feature centred (no scaling).
    pub fn centered(&self) -> Self {
        let (n, d) = (self.n, self.d);
        let mut mean = vec![0.0; d];
        for i in 0..n {
            for (m, &x) in mean.iter_mut().zip(self.row(i)) {
                *m += x;
            }
        }
        for m in &mut mean {
            *m /= n.max(1) as f64;
        }
        let mut v = self.v.clone();
        for i in 0..n {
            for k in 0..d {
                v[i * d + k] -= mean[k];
            }
        }
        Self { n, d, v }
    }
}

/// Squared Euclidean distance.
#[inline]
pub(crate) fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kept feature ends with mean 0 and variance 1, for values of any magnitude; only a
    /// feature with one value throughout is dropped.
    #[test]
    fn standardized_keeps_tiny_and_huge_features_and_drops_constant_ones() {
        let base = [1.0, 2.0, 4.0];
        for scale in [1e-300, 1e-160, 1.0, 1e160, 1e300] {
            let v: Vec<f64> = base.iter().flat_map(|&x| [x * scale, 7.0]).collect();
            let s = Points { n: 3, d: 2, v }.standardized().unwrap();
            assert_eq!(s.d, 1, "scale {scale}: the constant feature is dropped");
            let mean = s.v.iter().sum::<f64>() / 3.0;
            let var = s.v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0;
            assert!(
                mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-12,
                "scale {scale}: {:?}",
                s.v
            );
        }
        let constant = Points {
            n: 3,
            d: 1,
            v: vec![1e-300; 3],
        };
        assert!(matches!(
            constant.standardized(),
            Err(ClusterError::ConstantData { n: 3 })
        ));
    }
}
