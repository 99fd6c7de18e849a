//! The design of a linear model: rows `xb_i = [x_i, b]`, the features with a constant feature
//! `b` folded in as column `d` (LIBLINEAR's `-B`; a weight vector then has `d + 1` slots), or
//! the features alone (`d` slots).
//!
//! [`LinearDesign`] names a design (features and the optional constant); [`DesignRows`] is the
//! row arithmetic every linear solver runs on it (the dual coordinate descent, the primal Newton
//! method, the LAD linear program, the screening rules), implemented once per storage:
//! [`DenseRows`] and [`SparseRows`] for the hot loops (dispatched once per solve), and
//! [`FeatureRows`] dispatching per row. [`KeyedRows`] adds the per-variable row handles of the
//! dual coordinate descent.
//!
//! Every storage computes the same bits: a dot product is [`ops::dense_dot`] (dense) or
//! [`ops::sparse_dense_dot`] (sparse) over the features, then `+ b w_d`; an update is the
//! element-wise `w_k += s x_k`, then `w_d += s b`.

use std::ops::Range;

use super::{ops, CsrMatrix, DenseMatrix, Features, Row};

/// The linear design matrix: features plus an optional appended bias feature.
#[derive(Debug, Clone, Copy)]
pub struct LinearDesign<'a> {
    /// The features (rows are samples).
    pub x: &'a Features,
    /// Value `B > 0` of an extra constant feature appended to every row (LIBLINEAR `-B`), if any.
    pub bias: Option<f64>,
}

impl<'a> LinearDesign<'a> {
    /// Length of the weight vector: `n_features + 1` with a bias feature, else `n_features`.
    pub fn dim(&self) -> usize {
        self.x.n_cols() + usize::from(self.bias.is_some())
    }

    /// The rows, dispatching on the storage per row.
    pub(crate) fn rows(&self) -> FeatureRows<'a> {
        FeatureRows::new(self.x, self.bias)
    }
}

/// Row arithmetic on `xb_i = [x_i, b]` (or `x_i` without the constant feature).
pub(crate) trait DesignRows: Sync {
    /// Number of rows.
    fn n(&self) -> usize;
    /// Length of a weight vector: features, plus one with the constant feature.
    fn dim(&self) -> usize;
    /// Stored entries of the rows `r` plus one per row (the work of a pass over them).
    fn nnz(&self, r: Range<usize>) -> usize;
    /// `xb_i' w`.
    fn dot(&self, i: usize, w: &[f64]) -> f64;
    /// `w += s xb_i`.
    fn axpy(&self, i: usize, s: f64, w: &mut [f64]);
    /// `w += s xb_i .* xb_i`.
    fn axpy_sq(&self, i: usize, s: f64, w: &mut [f64]);
    /// `|xb_i|^2`.
    fn sq_norm(&self, i: usize) -> f64;
    /// `xb_i' xb_j`.
    fn dot_rows(&self, i: usize, j: usize) -> f64;
    /// Calls `f(column, value)` for the non-zeros of `xb_i` (every stored entry of a sparse
    /// row, the non-zero ones of a dense row), the constant feature last.
    fn for_each(&self, i: usize, f: &mut dyn FnMut(usize, f64));
}

/// `f64` values in a 64-byte cache line (twice as many `u32` indices).
const LINE_F64: usize = 8;

/// [`DesignRows`] with a cheap per-row handle (stored per variable by the dual coordinate
/// descent, skipping the row-pointer lookup in its inner loop).
pub(crate) trait KeyedRows: DesignRows {
    /// The handle of one row.
    type Key: Copy;
    /// The handle of row `i`.
    fn key(&self, i: usize) -> Self::Key;
    /// [`DesignRows::dot`] through a handle.
    fn dot_key(&self, k: Self::Key, w: &[f64]) -> f64;
    /// [`DesignRows::axpy`] through a handle.
    fn axpy_key(&self, k: Self::Key, s: f64, w: &mut [f64]);
    /// Sets the entries of `u` that the row touches (and the constant feature's) to zero.
    fn clear_key(&self, k: Self::Key, u: &mut [f64]);
    /// Reads one entry of every cache line of a row (values and, for sparse rows, indices) so
    /// that the row is in the cache when a later step needs it: a portable stand-in for a
    /// prefetch (the result is only fed to `black_box`).
    fn touch(&self, k: Self::Key) -> f64;
}

/// Dense rows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DenseRows<'a> {
    m: &'a DenseMatrix,
    b: f64,
    has_b: bool,
}

impl<'a> DenseRows<'a> {
    /// The rows of `m`, with the constant feature `bias` if given (`Some(0.0)` keeps a zero
    /// slot `d` in the weights).
    pub(crate) fn new(m: &'a DenseMatrix, bias: Option<f64>) -> Self {
        Self {
            m,
            b: bias.unwrap_or(0.0),
            has_b: bias.is_some(),
        }
    }
}

/// Sparse (CSR) rows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SparseRows<'a> {
    m: &'a CsrMatrix,
    b: f64,
    has_b: bool,
}

impl<'a> SparseRows<'a> {
    /// As [`DenseRows::new`].
    pub(crate) fn new(m: &'a CsrMatrix, bias: Option<f64>) -> Self {
        Self {
            m,
            b: bias.unwrap_or(0.0),
            has_b: bias.is_some(),
        }
    }
}

/// Rows of [`Features`] of either storage, dispatched per row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeatureRows<'a> {
    x: &'a Features,
    b: f64,
    has_b: bool,
}

impl<'a> FeatureRows<'a> {
    /// As [`DenseRows::new`].
    pub(crate) fn new(x: &'a Features, bias: Option<f64>) -> Self {
        Self {
            x,
            b: bias.unwrap_or(0.0),
            has_b: bias.is_some(),
        }
    }
}

/// `v + b w_d` with the constant feature, `v` without.
#[inline(always)]
fn add_bias(v: f64, has_b: bool, b: f64, w: &[f64], d: usize) -> f64 {
    if has_b {
        v + b * w[d]
    } else {
        v
    }
}

/// The shared body of [`DesignRows::for_each`] for one row.
#[inline]
fn visit_row(row: Row<'_>, f: &mut dyn FnMut(usize, f64)) {
    match row {
        Row::Dense(v) => {
            for (j, &a) in v.iter().enumerate() {
                if a != 0.0 {
                    f(j, a);
                }
            }
        }
        Row::Sparse { indices, values } => {
            for (&j, &a) in indices.iter().zip(values) {
                f(j as usize, a);
            }
        }
    }
}

/// `w += s x .* x` over a row's entries.
#[inline(always)]
fn axpy_sq_row(row: Row<'_>, s: f64, w: &mut [f64]) {
    match row {
        Row::Dense(v) => {
            for (a, &x) in w.iter_mut().zip(v) {
                *a += s * x * x;
            }
        }
        Row::Sparse { indices, values } => {
            for (&k, &x) in indices.iter().zip(values) {
                w[k as usize] += s * x * x;
            }
        }
    }
}

/// The [`DesignRows`] methods of a storage, from its inherent `rows_n`, `d`, `row_at` and
/// `entries`.
macro_rules! design_rows {
    ($ty:ty) => {
        impl DesignRows for $ty {
            fn n(&self) -> usize {
                self.rows_n()
            }
            fn dim(&self) -> usize {
                self.d() + usize::from(self.has_b)
            }
            fn nnz(&self, r: Range<usize>) -> usize {
                self.entries(r)
            }
            #[inline(always)]
            fn dot(&self, i: usize, w: &[f64]) -> f64 {
                let d = self.d();
                let v = ops::dot_dense(self.row_at(i), &w[..d]);
                add_bias(v, self.has_b, self.b, w, d)
            }
            #[inline(always)]
            fn axpy(&self, i: usize, s: f64, w: &mut [f64]) {
                let d = self.d();
                ops::axpy(s, self.row_at(i), &mut w[..d]);
                if self.has_b {
                    w[d] += s * self.b;
                }
            }
            #[inline(always)]
            fn axpy_sq(&self, i: usize, s: f64, w: &mut [f64]) {
                let d = self.d();
                axpy_sq_row(self.row_at(i), s, &mut w[..d]);
                if self.has_b {
                    w[d] += s * self.b * self.b;
                }
            }
            fn sq_norm(&self, i: usize) -> f64 {
                ops::sq_norm(self.row_at(i)) + self.b * self.b
            }
            fn dot_rows(&self, i: usize, j: usize) -> f64 {
                ops::dot(self.row_at(i), self.row_at(j)) + self.b * self.b
            }
            fn for_each(&self, i: usize, f: &mut dyn FnMut(usize, f64)) {
                visit_row(self.row_at(i), f);
                if self.has_b {
                    f(self.d(), self.b);
                }
            }
        }
    };
}

impl DenseRows<'_> {
    fn rows_n(&self) -> usize {
        self.m.n_rows()
    }
    fn d(&self) -> usize {
        self.m.n_cols()
    }
    #[inline(always)]
    fn row_at(&self, i: usize) -> Row<'_> {
        Row::Dense(self.m.row(i))
    }
    fn entries(&self, r: Range<usize>) -> usize {
        r.len() * self.m.n_cols().max(1)
    }
}

impl SparseRows<'_> {
    fn rows_n(&self) -> usize {
        self.m.n_rows()
    }
    fn d(&self) -> usize {
        self.m.n_cols()
    }
    #[inline(always)]
    fn row_at(&self, i: usize) -> Row<'_> {
        let (indices, values) = self.m.row(i);
        Row::Sparse { indices, values }
    }
    fn entries(&self, r: Range<usize>) -> usize {
        sparse_entries(self.m, r)
    }
}

impl FeatureRows<'_> {
    fn rows_n(&self) -> usize {
        self.x.n_rows()
    }
    fn d(&self) -> usize {
        self.x.n_cols()
    }
    #[inline(always)]
    fn row_at(&self, i: usize) -> Row<'_> {
        self.x.row(i)
    }
    fn entries(&self, r: Range<usize>) -> usize {
        match self.x {
            Features::Dense(m) => r.len() * m.n_cols().max(1),
            Features::Sparse(m) => sparse_entries(m, r),
        }
    }
}

fn sparse_entries(m: &CsrMatrix, r: Range<usize>) -> usize {
    let ptr = m.parts().0;
    ptr[r.end] - ptr[r.start] + r.len()
}

design_rows!(DenseRows<'_>);
design_rows!(SparseRows<'_>);
design_rows!(FeatureRows<'_>);

impl KeyedRows for DenseRows<'_> {
    type Key = usize;
    #[inline(always)]
    fn key(&self, i: usize) -> usize {
        i
    }
    #[inline(always)]
    fn dot_key(&self, k: usize, w: &[f64]) -> f64 {
        self.dot(k, w)
    }
    #[inline(always)]
    fn axpy_key(&self, k: usize, s: f64, w: &mut [f64]) {
        self.axpy(k, s, w)
    }
    #[inline(always)]
    fn clear_key(&self, _k: usize, u: &mut [f64]) {
        u.iter_mut().for_each(|v| *v = 0.0);
    }
    #[inline(always)]
    fn touch(&self, k: usize) -> f64 {
        let r = self.m.row(k);
        r.iter().step_by(LINE_F64).sum::<f64>() + r.last().copied().unwrap_or(0.0)
    }
}

impl KeyedRows for SparseRows<'_> {
    /// The row's range in the CSR index/value arrays.
    type Key = (usize, usize);
    #[inline(always)]
    fn key(&self, i: usize) -> (usize, usize) {
        let indptr = self.m.parts().0;
        (indptr[i], indptr[i + 1])
    }
    #[inline(always)]
    fn dot_key(&self, (a, b): (usize, usize), w: &[f64]) -> f64 {
        let (_, indices, values) = self.m.parts();
        let d = self.m.n_cols();
        let row = Row::Sparse {
            indices: &indices[a..b],
            values: &values[a..b],
        };
        add_bias(ops::dot_dense(row, &w[..d]), self.has_b, self.b, w, d)
    }
    #[inline(always)]
    fn axpy_key(&self, (a, b): (usize, usize), s: f64, w: &mut [f64]) {
        let (_, indices, values) = self.m.parts();
        let d = self.m.n_cols();
        let row = Row::Sparse {
            indices: &indices[a..b],
            values: &values[a..b],
        };
        ops::axpy(s, row, &mut w[..d]);
        if self.has_b {
            w[d] += s * self.b;
        }
    }
    #[inline(always)]
    fn clear_key(&self, (a, b): (usize, usize), u: &mut [f64]) {
        let (_, indices, _) = self.m.parts();
        for &k in &indices[a..b] {
            u[k as usize] = 0.0;
        }
        if self.has_b {
            u[self.m.n_cols()] = 0.0;
        }
    }
    #[inline(always)]
    fn touch(&self, (a, b): (usize, usize)) -> f64 {
        let (_, indices, values) = self.m.parts();
        if a < b {
            let (ix, vals) = (&indices[a..b], &values[a..b]);
            vals.iter().step_by(LINE_F64).sum::<f64>()
                + values[b - 1]
                + ix.iter()
                    .step_by(2 * LINE_F64)
                    .map(|&i| f64::from(i))
                    .sum::<f64>()
                + f64::from(indices[b - 1])
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small matrix with zeros, as dense and CSR storage of the same values.
    fn both() -> (DenseMatrix, CsrMatrix, Vec<Vec<f64>>) {
        let rows: Vec<Vec<f64>> = vec![
            vec![1.5, 0.0, -2.0, 0.25],
            vec![0.0, 0.0, 0.0, 0.0],
            vec![-0.5, 3.0, 0.0, 1.0],
        ];
        let d = 4;
        let dense = DenseMatrix::new(3, d, rows.concat()).unwrap();
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for r in &rows {
            for (k, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    idx.push(k as u32);
                    val.push(v);
                }
            }
            ptr.push(idx.len());
        }
        (dense, CsrMatrix::new(d, ptr, idx, val).unwrap(), rows)
    }

    /// Every storage against the explicit rows `[x_i, b]` (exact: the values are dyadic).
    #[test]
    fn storages_agree_with_explicit_rows() {
        let (dense, sparse, rows) = both();
        let (fd, fs) = (
            Features::Dense(dense.clone()),
            Features::Sparse(sparse.clone()),
        );
        for bias in [None, Some(2.0)] {
            let xb: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| r.iter().copied().chain(bias).collect())
                .collect();
            let dim = xb[0].len();
            let w: Vec<f64> = (0..dim).map(|k| 0.5 * k as f64 - 0.75).collect();
            let all: [&dyn DesignRows; 4] = [
                &DenseRows::new(&dense, bias),
                &SparseRows::new(&sparse, bias),
                &FeatureRows::new(&fd, bias),
                &FeatureRows::new(&fs, bias),
            ];
            for r in all {
                assert_eq!((r.n(), r.dim()), (3, dim));
                for (i, row) in xb.iter().enumerate() {
                    let dot: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum();
                    assert_eq!(r.dot(i, &w), dot);
                    assert_eq!(r.sq_norm(i), row.iter().map(|a| a * a).sum::<f64>());
                    for (j, other) in xb.iter().enumerate() {
                        let want: f64 = row.iter().zip(other).map(|(a, b)| a * b).sum();
                        assert_eq!(r.dot_rows(i, j), want);
                    }
                    let mut acc = vec![1.0; dim];
                    r.axpy(i, -2.0, &mut acc);
                    let want: Vec<f64> = row.iter().map(|a| 1.0 - 2.0 * a).collect();
                    assert_eq!(acc, want);
                    let mut acc = vec![0.0; dim];
                    r.axpy_sq(i, 3.0, &mut acc);
                    assert_eq!(acc, row.iter().map(|a| 3.0 * a * a).collect::<Vec<_>>());
                    let mut seen = vec![0.0; dim];
                    r.for_each(i, &mut |k, v| seen[k] += v);
                    assert_eq!(&seen, row);
                }
            }
            let keyed_dense = DenseRows::new(&dense, bias);
            let keyed_sparse = SparseRows::new(&sparse, bias);
            for i in 0..3 {
                assert_eq!(
                    keyed_dense.dot_key(keyed_dense.key(i), &w),
                    keyed_sparse.dot_key(keyed_sparse.key(i), &w)
                );
                let (mut a, mut b) = (vec![0.0; dim], vec![0.0; dim]);
                keyed_dense.axpy_key(keyed_dense.key(i), 0.5, &mut a);
                keyed_sparse.axpy_key(keyed_sparse.key(i), 0.5, &mut b);
                assert_eq!(a, b);
                keyed_sparse.clear_key(keyed_sparse.key(i), &mut b);
                assert!(b.iter().all(|&v| v == 0.0));
            }
        }
        assert_eq!(DenseRows::new(&dense, None).nnz(0..3), 12);
        assert_eq!(SparseRows::new(&sparse, None).nnz(1..3), 3 + 2);
    }
}
