//! Data sets: dense and sparse (CSR) feature matrices, labels and optional per-sample weights.
//!
//! Feature columns are 0-based in memory: LIBSVM's feature index `k` (1-based) is column `k - 1`.
//! For a precomputed kernel (LIBSVM's `0:i` convention) the reader is told so and keeps index 0 as
//! column 0 (the sample's serial number) and kernel value `k:K(i, x_k)` as column `k`.

pub mod csv;
pub mod design;
pub mod libsvm_fmt;
pub mod memory;
pub mod ops;
pub mod output;
pub mod scale;

use crate::error::DataError;

pub use memory::dense_bytes_check;
pub use output::{check_output, same_file, write_output};

/// A dense row-major matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseMatrix {
    n_rows: usize,
    n_cols: usize,
    values: Vec<f64>,
}

impl DenseMatrix {
    /// Builds a matrix from row-major values.
    ///
    /// # Errors
    /// [`DataError::Shape`] if `values.len() != n_rows * n_cols`.
    pub fn new(n_rows: usize, n_cols: usize, values: Vec<f64>) -> Result<Self, DataError> {
        if n_rows.checked_mul(n_cols) != Some(values.len()) {
            return Err(DataError::Shape {
                what: "dense values",
                expected: n_rows.saturating_mul(n_cols),
                found: values.len(),
            });
        }
        Ok(Self {
            n_rows,
            n_cols,
            values,
        })
    }
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Row `i` as a slice.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.n_cols..(i + 1) * self.n_cols]
    }
    /// All values, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

/// A compressed sparse row matrix with strictly increasing column indices in each row.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix {
    n_cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl CsrMatrix {
    /// Builds a CSR matrix, checking its structure.
    ///
    /// # Errors
    /// [`DataError::Shape`] or [`DataError::BadCsr`] when the arrays are inconsistent, an index is
    /// out of range or the indices of a row are not strictly increasing.
    pub fn new(
        n_cols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Self, DataError> {
        if indptr.is_empty() || indptr[0] != 0 {
            return Err(DataError::BadCsr {
                reason: "indptr must start with 0",
            });
        }
        if indices.len() != values.len() || *indptr.last().unwrap_or(&0) != indices.len() {
            return Err(DataError::Shape {
                what: "csr indices/values",
                expected: *indptr.last().unwrap_or(&0),
                found: indices.len(),
            });
        }
        for w in indptr.windows(2) {
            if w[1] < w[0] {
                return Err(DataError::BadCsr {
                    reason: "indptr must be non-decreasing",
                });
            }
            let row = &indices[w[0]..w[1]];
            if row.windows(2).any(|p| p[1] <= p[0]) {
                return Err(DataError::BadCsr {
                    reason: "column indices must increase within a row",
                });
            }
            if row.last().is_some_and(|&c| c as usize >= n_cols) {
                return Err(DataError::BadCsr {
                    reason: "column index out of range",
                });
            }
        }
        Ok(Self {
            n_cols,
            indptr,
            indices,
            values,
        })
    }
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.indptr.len() - 1
    }
    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Row `i`: (column indices, values).
    #[inline]
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.indptr[i], self.indptr[i + 1]);
        (&self.indices[a..b], &self.values[a..b])
    }
    /// The raw arrays (indptr, indices, values).
    pub fn parts(&self) -> (&[usize], &[u32], &[f64]) {
        (&self.indptr, &self.indices, &self.values)
    }
}

/// Features: dense or sparse.
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    /// Dense row-major storage.
    Dense(DenseMatrix),
    /// Compressed sparse rows.
    Sparse(CsrMatrix),
}

/// One row of a feature matrix.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A dense row (value of column `k` at position `k`).
    Dense(&'a [f64]),
    /// A sparse row: strictly increasing column indices and their values.
    Sparse {
        /// Column indices.
        indices: &'a [u32],
        /// Values.
        values: &'a [f64],
    },
}

impl Row<'_> {
    /// Value of column `k` (0 if absent).
    pub fn get(&self, k: usize) -> f64 {
        match *self {
            Row::Dense(v) => v.get(k).copied().unwrap_or(0.0),
            Row::Sparse { indices, values } => match indices.binary_search(&(k as u32)) {
                Ok(p) => values[p],
                Err(_) => 0.0,
            },
        }
    }
    /// Iterates the non-zero (sparse) or all (dense) entries as (column, value).
    pub fn iter(&self) -> Box<dyn Iterator<Item = (usize, f64)> + '_> {
        match *self {
            Row::Dense(v) => Box::new(v.iter().copied().enumerate()),
            Row::Sparse { indices, values } => {
                Box::new(indices.iter().zip(values).map(|(&k, &v)| (k as usize, v)))
            }
        }
    }
}

impl Features {
    /// Number of non-zero values (stored zeros of a sparse matrix do not count).
    pub fn count_nonzero(&self) -> usize {
        match self {
            Features::Dense(m) => (0..m.n_rows())
                .map(|i| m.row(i).iter().filter(|&&v| v != 0.0).count())
                .sum(),
            Features::Sparse(m) => (0..m.n_rows())
                .map(|i| m.row(i).1.iter().filter(|&&v| v != 0.0).count())
                .sum(),
        }
    }
    /// Number of rows (samples).
    pub fn n_rows(&self) -> usize {
        match self {
            Features::Dense(m) => m.n_rows(),
            Features::Sparse(m) => m.n_rows(),
        }
    }
    /// Number of columns (features).
    pub fn n_cols(&self) -> usize {
        match self {
            Features::Dense(m) => m.n_cols(),
            Features::Sparse(m) => m.n_cols(),
        }
    }
    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> Row<'_> {
        match self {
            Features::Dense(m) => Row::Dense(m.row(i)),
            Features::Sparse(m) => {
                let (indices, values) = m.row(i);
                Row::Sparse { indices, values }
            }
        }
    }
    /// True when some row has a non-zero value in a column `>= n`.
    pub fn has_values_beyond(&self, n: usize) -> bool {
        if self.n_cols() <= n {
            return false;
        }
        (0..self.n_rows()).any(|i| match self.row(i) {
            Row::Dense(v) => v[n..].iter().any(|&x| x != 0.0),
            Row::Sparse { indices, values } => {
                let from = indices.partition_point(|&k| (k as usize) < n);
                values[from..].iter().any(|&x| x != 0.0)
            }
        })
    }
    /// Fraction of stored non-zeros (1.0 for dense storage).
    pub fn density(&self) -> f64 {
        match self {
            Features::Dense(_) => 1.0,
            Features::Sparse(m) => {
                let cells = (m.n_rows() * m.n_cols()).max(1);
                m.nnz() as f64 / cells as f64
            }
        }
    }
    /// The rows `idx` (in that order) as a new matrix of the same storage kind.
    pub fn select_rows(&self, idx: &[usize]) -> Features {
        match self {
            Features::Dense(m) => {
                let mut v = Vec::with_capacity(idx.len() * m.n_cols());
                for &i in idx {
                    v.extend_from_slice(m.row(i));
                }
                Features::Dense(DenseMatrix {
                    n_rows: idx.len(),
                    n_cols: m.n_cols(),
                    values: v,
                })
            }
            Features::Sparse(m) => {
                let mut indptr = Vec::with_capacity(idx.len() + 1);
                indptr.push(0);
                let mut indices = Vec::new();
                let mut values = Vec::new();
                for &i in idx {
                    let (c, v) = m.row(i);
                    indices.extend_from_slice(c);
                    values.extend_from_slice(v);
                    indptr.push(indices.len());
                }
                Features::Sparse(CsrMatrix {
                    n_cols: m.n_cols(),
                    indptr,
                    indices,
                    values,
                })
            }
        }
    }
    /// The same matrix with `n_cols` widened to at least `n` (no data changes).
    pub fn with_min_cols(self, n: usize) -> Features {
        match self {
            Features::Sparse(mut m) => {
                m.n_cols = m.n_cols.max(n);
                Features::Sparse(m)
            }
            Features::Dense(m) if m.n_cols >= n => Features::Dense(m),
            Features::Dense(m) => {
                let mut v = vec![0.0; m.n_rows * n];
                for i in 0..m.n_rows {
                    v[i * n..i * n + m.n_cols].copy_from_slice(m.row(i));
                }
                Features::Dense(DenseMatrix {
                    n_rows: m.n_rows,
                    n_cols: n,
                    values: v,
                })
            }
        }
    }
    /// Converts to dense storage when the matrix is dense enough that dense kernels pay
    /// (density >= `min_density`) and the dense copy stays below `max_bytes`.
    pub fn densify_if(self, min_density: f64, max_bytes: usize) -> Features {
        match self {
            Features::Sparse(m)
                if densify_pays(m.n_rows(), m.n_cols(), m.nnz(), min_density, max_bytes) =>
            {
                let (r, c) = (m.n_rows(), m.n_cols());
                let mut v = vec![0.0; r * c];
                for i in 0..r {
                    let (idx, val) = m.row(i);
                    for (&k, &x) in idx.iter().zip(val) {
                        v[i * c + k as usize] = x;
                    }
                }
                Features::Dense(DenseMatrix {
                    n_rows: r,
                    n_cols: c,
                    values: v,
                })
            }
            other => other,
        }
    }
}

/// Whether [`Features::densify_if`] stores a CSR matrix of `n_rows` x `n_cols` with `nnz`
/// stored entries densely: its density is at least `min_density` and the dense copy takes at
/// most `max_bytes`. Depends on the shape only, so processes that each hold some rows of a data
/// set can make the whole data set's choice from its reduced shape.
pub fn densify_pays(
    n_rows: usize,
    n_cols: usize,
    nnz: usize,
    min_density: f64,
    max_bytes: usize,
) -> bool {
    n_rows.saturating_mul(n_cols).saturating_mul(8) <= max_bytes
        && (nnz as f64) >= min_density * (n_rows * n_cols) as f64
}

/// A data set: features, one label (class or target) per row, optional per-sample weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The feature matrix.
    pub x: Features,
    /// Labels: class labels for classification, targets for regression.
    pub y: Vec<f64>,
    /// Optional non-negative per-sample weights (multiply C for that sample).
    pub weights: Option<Vec<f64>>,
}

impl Dataset {
    /// Builds a data set, checking shapes, finiteness and weights.
    ///
    /// # Errors
    /// [`DataError::Shape`] on length mismatches, [`DataError::NonFinite`] for NaN/Inf labels or
    /// features, [`DataError::BadWeight`] for a negative or non-finite weight.
    pub fn new(x: Features, y: Vec<f64>, weights: Option<Vec<f64>>) -> Result<Self, DataError> {
        if y.len() != x.n_rows() {
            return Err(DataError::Shape {
                what: "labels",
                expected: x.n_rows(),
                found: y.len(),
            });
        }
        if let Some(i) = y.iter().position(|v| !v.is_finite()) {
            return Err(DataError::NonFinite {
                what: "label",
                row: i,
            });
        }
        let bad_feature = match &x {
            Features::Dense(m) => m
                .values()
                .iter()
                .position(|v| !v.is_finite())
                .map(|p| p / m.n_cols().max(1)),
            Features::Sparse(m) => {
                let (indptr, _, vals) = m.parts();
                vals.iter()
                    .position(|v| !v.is_finite())
                    .map(|p| indptr.partition_point(|&s| s <= p) - 1)
            }
        };
        if let Some(row) = bad_feature {
            return Err(DataError::NonFinite {
                what: "feature",
                row,
            });
        }
        if let Some(w) = &weights {
            if w.len() != y.len() {
                return Err(DataError::Shape {
                    what: "weights",
                    expected: y.len(),
                    found: w.len(),
                });
            }
            if let Some(i) = w.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(DataError::BadWeight {
                    row: i,
                    value: w[i],
                });
            }
        }
        Ok(Self { x, y, weights })
    }
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }
    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.x.n_cols()
    }
    /// Weight of sample `i` (1 when there are no weights).
    #[inline]
    pub fn weight(&self, i: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }
    /// The samples `idx` (in that order).
    pub fn subset(&self, idx: &[usize]) -> Dataset {
        Dataset {
            x: self.x.select_rows(idx),
            y: idx.iter().map(|&i| self.y[i]).collect(),
            weights: self
                .weights
                .as_ref()
                .map(|w| idx.iter().map(|&i| w[i]).collect()),
        }
    }
    /// The distinct labels in order of first appearance (LIBSVM's class order).
    pub fn labels_in_order(&self) -> Vec<f64> {
        first_appearances(self.y.iter().copied())
    }
}

/// The distinct values of `values` in order of first appearance (`==` equality, so `-0.0` and
/// `0.0` are one value). Applied to the concatenation of several row blocks' own
/// [`Dataset::labels_in_order`], in row order, it gives the labels of the whole data set.
pub fn first_appearances(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A training set and, optionally, a validation set on which a fit evaluates what it produces
/// (the points of a regularization path, the nodes of a robust path).
#[derive(Debug, Clone, Copy)]
pub struct TrainValid<'a> {
    /// The training set.
    pub train: &'a Dataset,
    /// The validation set, if any (same features as the training set).
    pub valid: Option<&'a Dataset>,
}

impl<'a> TrainValid<'a> {
    /// `train` without validation.
    pub fn new(train: &'a Dataset) -> Self {
        Self { train, valid: None }
    }
    /// Evaluates on `valid` (when given).
    #[must_use]
    pub fn validate_on(mut self, valid: Option<&'a Dataset>) -> Self {
        self.valid = valid;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_rejects_unsorted_and_out_of_range() {
        assert!(CsrMatrix::new(3, vec![0, 2], vec![1, 0], vec![1.0, 2.0]).is_err());
        assert!(CsrMatrix::new(2, vec![0, 1], vec![2], vec![1.0]).is_err());
        assert!(CsrMatrix::new(3, vec![0, 2], vec![0, 2], vec![1.0, 2.0]).is_ok());
    }

    #[test]
    fn dataset_rejects_nan_and_negative_weights() {
        let x = Features::Dense(DenseMatrix::new(2, 1, vec![1.0, f64::NAN]).unwrap());
        assert!(matches!(
            Dataset::new(x, vec![1.0, -1.0], None),
            Err(DataError::NonFinite {
                what: "feature",
                row: 1
            })
        ));
        let x = Features::Dense(DenseMatrix::new(2, 1, vec![1.0, 2.0]).unwrap());
        assert!(matches!(
            Dataset::new(x, vec![1.0, -1.0], Some(vec![1.0, -2.0])),
            Err(DataError::BadWeight { row: 1, .. })
        ));
    }

    #[test]
    fn select_rows_and_densify_agree() {
        let m = CsrMatrix::new(3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
        let s = Features::Sparse(m);
        let d = s.clone().densify_if(0.0, usize::MAX);
        for i in 0..2 {
            for k in 0..3 {
                assert_eq!(s.row(i).get(k), d.row(i).get(k));
            }
        }
        let sub = s.select_rows(&[1]);
        assert_eq!(sub.row(0).get(1), 3.0);
    }
}
