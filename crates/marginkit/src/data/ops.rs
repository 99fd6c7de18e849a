//! Vector kernels over rows: dot products, squared norms, axpy (dense and sparse).
//!
//! The dense dot product uses four independent accumulators so that the compiler can vectorize it;
//! the summation order is fixed, so results do not depend on threads.

use rayon::prelude::*;

use super::Row;

/// Dense dot product with a fixed summation order (4 accumulators, then the tail).
#[inline]
pub fn dense_dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 8];
    let chunks = n / 8;
    for c in 0..chunks {
        let (x, y) = (&a[c * 8..c * 8 + 8], &b[c * 8..c * 8 + 8]);
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut tail = 0.0;
    for k in chunks * 8..n {
        tail += a[k] * b[k];
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Sparse-sparse dot product (merge of two sorted index lists).
#[inline]
pub fn sparse_dot(ia: &[u32], va: &[f64], ib: &[u32], vb: &[f64]) -> f64 {
    let (mut p, mut q, mut s) = (0, 0, 0.0);
    while p < ia.len() && q < ib.len() {
        let (x, y) = (ia[p], ib[q]);
        if x == y {
            s += va[p] * vb[q];
            p += 1;
            q += 1;
        } else if x < y {
            p += 1;
        } else {
            q += 1;
        }
    }
    s
}

/// Sparse-dense dot product.
#[inline]
pub fn sparse_dense_dot(ia: &[u32], va: &[f64], dense: &[f64]) -> f64 {
    let mut s = 0.0;
    for (&k, &v) in ia.iter().zip(va) {
        if let Some(&d) = dense.get(k as usize) {
            s += v * d;
        }
    }
    s
}

/// Dot product of two rows of any storage.
#[inline]
pub fn dot(a: Row<'_>, b: Row<'_>) -> f64 {
    match (a, b) {
        (Row::Dense(x), Row::Dense(y)) => dense_dot(x, y),
        (
            Row::Sparse {
                indices: ia,
                values: va,
            },
            Row::Sparse {
                indices: ib,
                values: vb,
            },
        ) => sparse_dot(ia, va, ib, vb),
        (Row::Sparse { indices, values }, Row::Dense(d))
        | (Row::Dense(d), Row::Sparse { indices, values }) => sparse_dense_dot(indices, values, d),
    }
}

/// Dot product of a row with a dense weight vector (missing weights count as 0).
#[inline]
pub fn dot_dense(a: Row<'_>, w: &[f64]) -> f64 {
    match a {
        Row::Dense(x) => dense_dot(x, w),
        Row::Sparse { indices, values } => sparse_dense_dot(indices, values, w),
    }
}

/// Squared Euclidean norm of a row.
#[inline]
pub fn sq_norm(a: Row<'_>) -> f64 {
    match a {
        Row::Dense(x) => dense_dot(x, x),
        Row::Sparse { values, .. } => dense_dot(values, values),
    }
}

/// `w += s * a` for a dense `w` at least as long as the row's largest index.
#[inline]
pub fn axpy(s: f64, a: Row<'_>, w: &mut [f64]) {
    match a {
        Row::Dense(x) => {
            for (wk, &xk) in w.iter_mut().zip(x) {
                *wk += s * xk;
            }
        }
        Row::Sparse { indices, values } => {
            for (&k, &v) in indices.iter().zip(values) {
                w[k as usize] += s * v;
            }
        }
    }
}

/// Sum of `f(i)` over `0..n`, computed in fixed chunks in parallel and added in chunk order, so
/// the result is the same for any thread count.
pub fn det_sum<F: Fn(usize) -> f64 + Sync>(n: usize, f: F) -> f64 {
    const CHUNK: usize = 4096;
    let parts: Vec<f64> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut s = 0.0;
            for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                s += f(i);
            }
            s
        })
        .collect();
    parts.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_dense_dots_agree() {
        let a = [0.0, 1.5, 0.0, -2.0, 3.0, 0.0, 0.0, 1.0, 2.0, 0.5];
        let b = [1.0, 2.0, 3.0, 0.0, -1.0, 0.0, 4.0, 1.0, 1.0, 1.0];
        let to_sparse = |v: &[f64]| {
            let idx: Vec<u32> = (0..v.len() as u32)
                .filter(|&k| v[k as usize] != 0.0)
                .collect();
            let val: Vec<f64> = idx.iter().map(|&k| v[k as usize]).collect();
            (idx, val)
        };
        let (ia, va) = to_sparse(&a);
        let (ib, vb) = to_sparse(&b);
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dense_dot(&a, &b) - naive).abs() < 1e-12);
        assert!((sparse_dot(&ia, &va, &ib, &vb) - naive).abs() < 1e-12);
        assert!((sparse_dense_dot(&ia, &va, &b) - naive).abs() < 1e-12);
        let mut w = vec![0.0; 10];
        axpy(
            2.0,
            Row::Sparse {
                indices: &ia,
                values: &va,
            },
            &mut w,
        );
        assert_eq!(w[4], 6.0);
    }
}
