//! Weighted kernel row sums `out_j = sum_t w_t K(x_{r_t}, x_j)` over all rows `j`: the one
//! kernel primitive of kernel AID (cluster kernel rows `V_k = sum_{i in C_k} K(x_i, .)`, decision
//! values, the start gradient of the Nystrom-steered exact finish, the initial clustering's scores).
//!
//! Dense rows are copied once into the panel layout of the Q matrices
//! ([`crate::kernel::qmatrix::PanelRows`]): the sum runs over micro-tiles of four source rows
//! times one panel of eight rows whose inner products stay in registers over the features, and
//! the kernel's outer function (the branch-free RBF exponential
//! [`crate::kernel::qmatrix::exp_nonpositive`]) runs over contiguous lanes; sparse or very wide
//! data fall back to one kernel evaluation per pair. The rows `j` are cut into fixed blocks
//! computed in parallel and each `out_j` adds the terms in the order of `rows`, so the result does
//! not depend on the thread count. Every inner product is the sequential sum over the features,
//! symmetric in its two rows. (The tiles give the same bits as a feature-major copy with one
//! pass over a block of inner products per source row and feature, and measured 1.4x faster on
//! 30,000 x 10 RBF sums, see bench/results/aid.md.)
//!
//! [`KernelSums::weighted_polled`] cuts `rows` into consecutive chunks of about
//! [`POLL_WORK`] feature operations over all `j` and asks a poll (an observer, a cancel flag)
//! between chunks, so a long sum (a large cluster's row, the first iteration's `n^2` values)
//! can be interrupted within a few tens of milliseconds. Each `out_j` still adds its terms in
//! the order of `rows`, so the chunked sum is bit-identical to the unchunked one.

use rayon::prelude::*;

use crate::data::{ops, Features};
use crate::kernel::qmatrix::PanelRows;
use crate::kernel::KernelSpec;

/// Rows `j` per parallel block (a multiple of the panel height).
const BLOCK: usize = 2048;
/// Largest panel copy (in f64 values) made for the vectorized path.
const MAX_COPY: usize = 1 << 28;
/// Work between two polls of [`KernelSums::weighted_polled`], in feature operations
/// (`rows x n x (features + 8)`, the 8 standing for the kernel function): about 10-50 ms.
pub(crate) const POLL_WORK: usize = 1 << 26;
/// Fewest rows per polled chunk (each chunk streams the whole feature-major copy once).
const MIN_POLL_ROWS: usize = 64;

pub(crate) struct KernelSums<'a> {
    x: &'a Features,
    spec: KernelSpec,
    n: usize,
    m: usize,
    /// Panel copy of dense rows (`None`: the per-pair fallback).
    panels: Option<PanelRows>,
    norms: Vec<f64>,
}

impl<'a> KernelSums<'a> {
    pub(crate) fn new(x: &'a Features, spec: KernelSpec) -> Self {
        let (n, m) = (x.n_rows(), x.n_cols());
        let norms: Vec<f64> = (0..n).map(|i| ops::sq_norm(x.row(i))).collect();
        let panels = match x {
            Features::Dense(d) if n.saturating_mul(m) <= MAX_COPY => {
                Some(PanelRows::new(d.values(), n, m, norms.clone(), spec))
            }
            _ => None,
        };
        Self {
            x,
            spec,
            n,
            m,
            panels,
            norms,
        }
    }

    /// `K(x_i, x_j)` one pair at a time (the fallback and the tests' reference).
    pub(crate) fn pair(&self, i: usize, j: usize) -> f64 {
        let d = ops::dot(self.x.row(i), self.x.row(j));
        self.spec.from_dot(d, self.norms[i], self.norms[j])
    }

    /// `out_j = sum_t w_t K(x_{rows_t}, x_j)` for every row `j` (`w = None`: all weights 1).
    #[cfg(test)]
    pub(crate) fn weighted(&self, rows: &[u32], w: Option<&[f64]>, out: &mut [f64]) {
        self.weighted_polled(rows, w, out, &mut || false);
    }

    /// [`Self::weighted`] that calls `stop` between chunks of about [`POLL_WORK`] operations
    /// (see the module docs) and returns `false`, with `out` incomplete, as soon as it says
    /// `true`; `true` when the sum is complete.
    pub(crate) fn weighted_polled(
        &self,
        rows: &[u32],
        w: Option<&[f64]>,
        out: &mut [f64],
        stop: &mut dyn FnMut() -> bool,
    ) -> bool {
        debug_assert_eq!(out.len(), self.n);
        out.iter_mut().for_each(|v| *v = 0.0);
        let per_row = self.n.max(1).saturating_mul(self.row_cost() + 8);
        let chunk = (POLL_WORK / per_row).max(MIN_POLL_ROWS);
        for (c, part) in rows.chunks(chunk).enumerate() {
            if stop() {
                return false;
            }
            let wp = w.map(|w| &w[c * chunk..c * chunk + part.len()]);
            match &self.panels {
                Some(pr) => {
                    let src = pr.sources(part, wp);
                    out.par_chunks_mut(BLOCK)
                        .enumerate()
                        .for_each(|(b, o)| pr.add_weighted(&src, b * BLOCK, o));
                }
                None => out
                    .par_chunks_mut(BLOCK)
                    .enumerate()
                    .for_each(|(b, o)| self.block_pairs(part, wp, b * BLOCK, o)),
            }
        }
        true
    }

    /// Operations of one inner product: the features (dense) or the mean stored entries.
    fn row_cost(&self) -> usize {
        match self.x {
            Features::Sparse(s) => s.nnz() / self.n.max(1) + 1,
            _ => self.m,
        }
    }

    /// Adds `sum_t w_t K(x_{rows_t}, x_j)` to `out` for the rows `j` from `lo` on, one kernel
    /// evaluation per pair (sparse or very wide data).
    fn block_pairs(&self, rows: &[u32], w: Option<&[f64]>, lo: usize, out: &mut [f64]) {
        for (t, &i) in rows.iter().enumerate() {
            let wt = w.map_or(1.0, |w| w[t]);
            for (k, o) in out.iter_mut().enumerate() {
                *o += wt * self.pair(i as usize, lo + k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix};

    #[test]
    fn weighted_sums_match_pairwise_kernels() {
        let (n, m) = (2100usize, 3usize);
        let v: Vec<f64> = (0..n * m)
            .map(|k| ((k * 37 % 101) as f64) / 50.0 - 1.0)
            .collect();
        let dense = Features::Dense(DenseMatrix::new(n, m, v.clone()).unwrap());
        let rows = [3u32, 2099, 17, 3];
        let w = [0.5, -1.0, 2.0, 0.25];
        for spec in [
            KernelSpec::Rbf { gamma: 0.7 },
            KernelSpec::Linear,
            KernelSpec::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
        ] {
            let ks = KernelSums::new(&dense, spec);
            assert!(ks.panels.is_some());
            let mut out = vec![0.0; n];
            ks.weighted(&rows, Some(&w), &mut out);
            for j in [0usize, 1, 2047, 2048, 2099] {
                let want: f64 = rows
                    .iter()
                    .zip(&w)
                    .map(|(&i, &wt)| wt * spec.eval(dense.row(i as usize), dense.row(j)))
                    .sum();
                assert!((out[j] - want).abs() <= 1e-12 * (1.0 + want.abs()), "{j}");
            }
            // The sparse fallback agrees.
            let mut ind = Vec::new();
            let mut val = Vec::new();
            let mut ptr = vec![0usize];
            for i in 0..n {
                for f in 0..m {
                    ind.push(f as u32);
                    val.push(v[i * m + f]);
                }
                ptr.push(ind.len());
            }
            let sparse = Features::Sparse(CsrMatrix::new(m, ptr, ind, val).unwrap());
            let ks2 = KernelSums::new(&sparse, spec);
            assert!(ks2.panels.is_none());
            let mut out2 = vec![0.0; n];
            ks2.weighted(&rows, Some(&w), &mut out2);
            for j in 0..n {
                assert!((out[j] - out2[j]).abs() <= 1e-12 * (1.0 + out[j].abs()));
            }
        }
    }

    #[test]
    fn polled_sums_are_chunked_bit_identically_and_stop() {
        let (n, m) = (2100usize, 3usize);
        let v: Vec<f64> = (0..n * m)
            .map(|k| ((k * 53 % 97) as f64) / 40.0 - 1.2)
            .collect();
        let dense = Features::Dense(DenseMatrix::new(n, m, v).unwrap());
        let ks = KernelSums::new(&dense, KernelSpec::Rbf { gamma: 0.3 });
        let chunk = (POLL_WORK / (n * (m + 8))).max(MIN_POLL_ROWS);
        // Three chunks and a bit (rows may repeat).
        let rows: Vec<u32> = (0..3 * chunk + 17).map(|t| (t * 7 % n) as u32).collect();
        let w: Vec<f64> = (0..rows.len())
            .map(|t| 1.0 + (t % 5) as f64 * 0.1)
            .collect();
        // One unchunked pass over every row, block by block: the reference order.
        let mut want = vec![0.0; n];
        let pr = ks.panels.as_ref().unwrap();
        let src = pr.sources(&rows, Some(&w));
        want.chunks_mut(BLOCK)
            .enumerate()
            .for_each(|(b, o)| pr.add_weighted(&src, b * BLOCK, o));
        let mut polls = 0;
        let mut out = vec![1.0; n];
        assert!(ks.weighted_polled(&rows, Some(&w), &mut out, &mut || {
            polls += 1;
            false
        }));
        assert_eq!(polls, 4);
        assert_eq!(
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // A stop before the third chunk returns at once.
        let mut polls = 0;
        assert!(!ks.weighted_polled(&rows, Some(&w), &mut out, &mut || {
            polls += 1;
            polls == 3
        }));
        assert_eq!(polls, 3);
    }

    /// The tiled panel sums are bit-identical to the plain definition: per pair the sequential
    /// inner product over the features, the kernel's outer function (the RBF through
    /// `exp_nonpositive`), and per output the terms added in the order of `rows`; for row
    /// counts that are not multiples of the panel (8) or the tile (4), several source chunks,
    /// and every kernel.
    #[test]
    fn tiled_sums_are_bit_identical_to_the_definition() {
        use crate::kernel::qmatrix::exp_nonpositive;
        for &(n, m, nt) in &[
            (1usize, 1usize, 1usize),
            (13, 3, 7),
            (2051, 10, 263),
            (300, 1, 2),
            (77, 40, 70),
        ] {
            let v: Vec<f64> = (0..n * m)
                .map(|k| ((k * 61 % 103) as f64) / 35.0 - 1.4)
                .collect();
            let dense = Features::Dense(DenseMatrix::new(n, m, v.clone()).unwrap());
            let rows: Vec<u32> = (0..nt).map(|t| ((t * 13 + 5) % n) as u32).collect();
            let w: Vec<f64> = (0..nt).map(|t| 0.3 - (t % 7) as f64 * 0.11).collect();
            for spec in [
                KernelSpec::Rbf { gamma: 0.45 },
                KernelSpec::Linear,
                KernelSpec::Poly {
                    gamma: 0.5,
                    coef0: 1.0,
                    degree: 3,
                },
                KernelSpec::Sigmoid {
                    gamma: 0.2,
                    coef0: -0.1,
                },
            ] {
                let ks = KernelSums::new(&dense, spec);
                assert!(ks.panels.is_some());
                let mut out = vec![7.0; n];
                ks.weighted(&rows, Some(&w), &mut out);
                for j in 0..n {
                    let mut want = 0.0;
                    for (t, &i) in rows.iter().enumerate() {
                        let i = i as usize;
                        let mut dot = 0.0;
                        for k in 0..m {
                            dot += v[i * m + k] * v[j * m + k];
                        }
                        let kv = match spec {
                            KernelSpec::Rbf { gamma } => {
                                let d2 = (ks.norms[i] + ks.norms[j] - 2.0 * dot).max(0.0);
                                exp_nonpositive(-gamma * d2)
                            }
                            s => s.from_dot(dot, 0.0, 0.0),
                        };
                        want += w[t] * kv;
                    }
                    assert_eq!(
                        out[j].to_bits(),
                        want.to_bits(),
                        "{spec:?} n {n} m {m} j {j}"
                    );
                }
                // Unit weights.
                ks.weighted(&rows, None, &mut out);
                let ones = vec![1.0; nt];
                let mut out2 = vec![0.0; n];
                ks.weighted(&rows, Some(&ones), &mut out2);
                assert_eq!(out, out2);
            }
        }
    }
}
