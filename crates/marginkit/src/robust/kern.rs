//! Kernel access for the robust SVMs, in f64: single entries, cached columns over the training
//! rows followed by the validation rows (the shared [`ColumnCache`], storing f64), linear
//! combinations of columns, and the same kernel served to [`crate::solver::smo`] as the
//! `2n`-variable [`Doubled`] matrix ([`BetaQ`]).
//!
//! The kernel is `K(u, v) + b^2` when a regularized constant feature `b` is used (a bias that is
//! penalized like every other weight; for the linear kernel this is exactly appending the
//! feature `b` to every row).
//!
//! The homotopy needs exact (f64) kernel values: events are decided on differences of margins,
//! and the f32 column cache of [`crate::kernel::qmatrix`] would put a 1e-7 relative noise on them.
//! Linear kernels (dense or sparse) take the primal shortcut: a combination
//! `sum_k c_k K[:, j_k]` is `X (sum_k c_k x_{j_k})`, one pass over the data.
//!
//! Every entry is computed independently of the blocking and of the thread count, and sums run in
//! a fixed order, so results do not depend on the number of threads.

use rayon::prelude::*;

use crate::data::{ops, Features, Row};
use crate::kernel::cache::{CacheStats, ColumnCache};
use crate::kernel::qmatrix::{exp_nonpositive, Doubled, SampleColumns};
use crate::kernel::KernelSpec;

/// Rows per parallel task when a column or a combination is computed.
const PAR_ROWS: usize = 2048;

/// The kernel entries themselves: rows, kernel and squared norms (no cache).
#[derive(Debug)]
struct Entries<'a> {
    train: &'a Features,
    valid: Option<&'a Features>,
    spec: KernelSpec,
    b2: f64,
    n: usize,
    nv: usize,
    norms: Vec<f64>,
    /// Width of the primal weight buffer (linear kernel).
    width: usize,
}

impl Entries<'_> {
    #[inline]
    fn row(&self, i: usize) -> Row<'_> {
        if i < self.n {
            self.train.row(i)
        } else {
            // Only called with i < n + nv, and nv > 0 implies valid is Some.
            match self.valid {
                Some(v) => v.row(i - self.n),
                None => self.train.row(i % self.n.max(1)),
            }
        }
    }

    #[inline]
    fn entry(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (self.row(i), self.train.row(j));
        let v = match self.spec {
            KernelSpec::Precomputed => a.get(b.get(0) as usize),
            KernelSpec::Rbf { gamma } => {
                let d2 = (self.norms[i] + self.norms[j] - 2.0 * ops::dot(a, b)).max(0.0);
                exp_nonpositive(-gamma * d2)
            }
            s => s.from_dot(ops::dot(a, b), 0.0, 0.0),
        };
        v + self.b2
    }
}

/// f64 kernel over `train` rows (indices `0..n`) and `valid` rows (indices `n..n + nv`).
#[derive(Debug)]
pub(crate) struct Kern<'a> {
    ev: Entries<'a>,
    /// Columns over all `n + nv` rows, one per training sample, kept whole.
    cache: ColumnCache<f64>,
    /// Columns the cache holds (at least two).
    slots: usize,
    col_buf: Vec<usize>,
    coef_buf: Vec<f64>,
    /// Primal weight buffer of the linear kernel (`width` entries), reused by every combination.
    w_buf: Vec<f64>,
}

/// `out[i] = value(i)` for every row, in parallel blocks of [`PAR_ROWS`] on long outputs (each
/// entry is computed on its own, so the result does not depend on the thread count).
fn fill_rows(out: &mut [f64], value: impl Fn(usize) -> f64 + Sync) {
    if out.len() >= 2 * PAR_ROWS {
        out.par_chunks_mut(PAR_ROWS)
            .enumerate()
            .for_each(|(c, ch)| {
                for (k, o) in ch.iter_mut().enumerate() {
                    *o = value(c * PAR_ROWS + k);
                }
            });
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            *o = value(i);
        }
    }
}

/// Largest primal width (constant feature included) for which [`Kern::data_rank`] is computed.
pub(crate) const RANK_WIDTH: usize = 128;

/// Numerical rank of the symmetric positive semidefinite `m x m` matrix `g` (row-major,
/// overwritten): diagonally pivoted Cholesky, stopping when the largest remaining diagonal is at
/// most `rel` times the largest initial one.
pub(crate) fn pivoted_rank(g: &mut [f64], m: usize, rel: f64) -> usize {
    let top = (0..m).map(|i| g[i * m + i]).fold(0.0, f64::max);
    if top <= 0.0 {
        return 0;
    }
    let mut perm: Vec<usize> = (0..m).collect();
    for k in 0..m {
        // Largest remaining diagonal of the Schur complement.
        let (mut piv, mut best) = (k, g[perm[k] * m + perm[k]]);
        for (j, &pj) in perm.iter().enumerate().skip(k + 1) {
            if g[pj * m + pj] > best {
                best = g[pj * m + pj];
                piv = j;
            }
        }
        if best <= rel * top {
            return k;
        }
        perm.swap(k, piv);
        let p = perm[k];
        let l = best.sqrt();
        // Column p of the factor, then the rank-one downdate of the remaining block.
        for &i in &perm[k + 1..] {
            g[i * m + p] /= l;
        }
        for (a, &i) in perm.iter().enumerate().skip(k + 1) {
            let li = g[i * m + p];
            for &j in &perm[k + 1..=a] {
                let v = li * g[j * m + p];
                g[i * m + j] -= v;
                g[j * m + i] = g[i * m + j];
            }
        }
    }
    m
}

/// Rows per parallel block of [`Kern::combine`].
const COMBINE_ROWS: usize = 1024;

impl<'a> Kern<'a> {
    /// `cache_bytes` bounds the column store (at least two columns are kept).
    pub fn new(
        train: &'a Features,
        valid: Option<&'a Features>,
        spec: KernelSpec,
        b: Option<f64>,
        cache_bytes: usize,
    ) -> Self {
        let n = train.n_rows();
        let nv = valid.map_or(0, |v| v.n_rows());
        let mut norms = Vec::with_capacity(n + nv);
        norms.extend((0..n).map(|i| ops::sq_norm(train.row(i))));
        if let Some(v) = valid {
            norms.extend((0..nv).map(|i| ops::sq_norm(v.row(i))));
        }
        let width = train.n_cols().max(valid.map_or(0, |v| v.n_cols()));
        let len = (n + nv).max(1);
        let slots = (cache_bytes / (8 * len)).clamp(2, n.max(2));
        Self {
            ev: Entries {
                train,
                valid,
                spec,
                b2: b.map_or(0.0, |b| b * b),
                n,
                nv,
                norms,
                width,
            },
            cache: ColumnCache::with_len(n, n + nv, (slots * len * 8) as u64),
            slots,
            col_buf: Vec::new(),
            coef_buf: Vec::new(),
            w_buf: vec![0.0; width],
        }
    }

    /// Number of training rows.
    pub fn n(&self) -> usize {
        self.ev.n
    }
    /// Total rows (training then validation).
    pub fn rows(&self) -> usize {
        self.ev.n + self.ev.nv
    }

    #[inline]
    fn row(&self, i: usize) -> Row<'_> {
        self.ev.row(i)
    }

    /// `K(row i, training row j)`, `i` over training and validation rows.
    #[inline]
    pub fn entry(&self, i: usize, j: usize) -> f64 {
        self.ev.entry(i, j)
    }

    /// `f_i = sum_j K(i, j) beta_j` for training row `i`, summed with Neumaier's compensation,
    /// and an upper bound of its absolute rounding error (the local-optimality checker's
    /// threshold test, see [`super::exact_slack`]).
    ///
    /// Bound: each entry `K(i, j)` is evaluated with an absolute error of at most
    /// `(w + 4) eps s_ij`, `w` the number of features and `s_ij` the entry's scale (linear:
    /// `|x_i| |x_j| + b^2`, the Cauchy-Schwarz bound of the dot product's terms; RBF:
    /// `K(i, j) (1 + gamma (|x_i| + |x_j|)^2) + b^2`, the squared distance being a difference of
    /// norms; other kernels: `|K(i, j)| + b^2`), each product adds `eps |K(i, j) beta_j|`, and the
    /// compensated sum adds at most `2 eps |f_i| + 2 n eps^2 sum_j |K(i, j) beta_j|`. The bound
    /// returned is twice the sum of these terms.
    ///
    /// Linear kernel: computed as `x_i . w + b^2 sum_j beta_j` with `w = X' beta`, every sum
    /// an error-free-product compensated dot ([`Kern::exact_linear_row_value`]), so the bound
    /// does not grow with `w sum_j |beta_j| |x_i| |x_j|` (the entry-wise bound above is 1.5e-9
    /// at n = 50,000, wider than a genuine 1.4e-9 gap to `T`, see
    /// bench/results/robust.md).
    pub fn exact_row_value(&self, i: usize, beta: &[f64]) -> (f64, f64) {
        if self.linear() {
            return self.exact_linear_row_value(i, beta);
        }
        let eps = f64::EPSILON;
        let w = self.ev.width as f64;
        let ni = self.ev.norms[i].sqrt();
        let (mut s, mut comp) = (0.0f64, 0.0f64);
        let (mut entry_err, mut mag) = (0.0f64, 0.0f64);
        for (j, &b) in beta.iter().enumerate() {
            if b == 0.0 {
                continue;
            }
            let k = self.entry(i, j);
            let scale = match self.ev.spec {
                KernelSpec::Linear => ni * self.ev.norms[j].sqrt() + self.ev.b2,
                KernelSpec::Rbf { gamma } => {
                    let r = ni + self.ev.norms[j].sqrt();
                    (k - self.ev.b2) * (1.0 + gamma * r * r) + self.ev.b2
                }
                _ => k.abs() + self.ev.b2,
            };
            entry_err += scale * b.abs();
            let x = k * b;
            mag += x.abs();
            let t = s + x;
            comp += if s.abs() >= x.abs() {
                (s - t) + x
            } else {
                (x - t) + s
            };
            s = t;
        }
        let f = s + comp;
        let n = beta.len() as f64;
        let err = (w + 4.0) * eps * entry_err
            + eps * mag
            + 2.0 * eps * f.abs()
            + 2.0 * n * eps * eps * mag;
        (f, 2.0 * err)
    }

    /// Linear kernel: `f_i = x_i . w + b^2 S`, `w_k = sum_j beta_j x_jk`, `S = sum_j beta_j`,
    /// each a compensated dot product with error-free products (`mul_add`; Ogita, Rump and
    /// Oishi's Dot2, SIAM J. Sci. Comput. 26(6), 2005: `|dot2(a, b) - a . b| <= u |a . b| +
    /// gamma_m^2 |a| . |b|`, `u` the unit roundoff, `gamma_m = m u / (1 - m u)`). Bound, with
    /// `u` taken as `eps` (twice the unit roundoff): `eps |f| + gamma_{w+1}^2 (sum_k |x_ik w_k| +
    /// b^2 |S|) + sum_k |x_ik| (eps |w_k| + gamma_n^2 sum_j |beta_j x_jk|) + b^2 (eps |S| +
    /// gamma_n^2 sum_j |beta_j|)`, the first two terms the outer dot's, the last two the inputs'
    /// errors carried through it; twice that is returned. `O(nnz)`, two width-long buffers
    /// (the checker calls it only for samples its window puts near a threshold).
    fn exact_linear_row_value(&self, i: usize, beta: &[f64]) -> (f64, f64) {
        #[inline]
        fn two_sum(a: f64, b: f64) -> (f64, f64) {
            let s = a + b;
            let z = s - a;
            (s, (a - (s - z)) + (b - z))
        }
        // Adds the exact product `a b` to the compensated pair (hi, lo); `mag += |a b|`.
        #[inline]
        fn acc(hi: &mut f64, lo: &mut f64, mag: &mut f64, a: f64, b: f64) {
            let p = a * b;
            let e = a.mul_add(b, -p);
            let (s, q) = two_sum(*hi, p);
            *hi = s;
            *lo += q + e;
            *mag += p.abs();
        }
        let eps = f64::EPSILON;
        let gamma = |m: f64| {
            let v = m * eps;
            let g = v / (1.0 - v).max(0.5);
            g * g
        };
        let wd = self.ev.width;
        let (mut wh, mut wl, mut wm) = (vec![0.0; wd], vec![0.0; wd], vec![0.0; wd]);
        let (mut sh, mut sl, mut sm) = (0.0f64, 0.0f64, 0.0f64);
        for (j, &b) in beta.iter().enumerate() {
            if b == 0.0 {
                continue;
            }
            acc(&mut sh, &mut sl, &mut sm, b, 1.0);
            match self.ev.train.row(j) {
                Row::Dense(v) => {
                    for (k, &x) in v.iter().enumerate() {
                        acc(&mut wh[k], &mut wl[k], &mut wm[k], b, x);
                    }
                }
                Row::Sparse { indices, values } => {
                    for (&k, &x) in indices.iter().zip(values) {
                        let k = k as usize;
                        acc(&mut wh[k], &mut wl[k], &mut wm[k], b, x);
                    }
                }
            }
        }
        let gn = gamma(beta.len() as f64);
        let sum = sh + sl;
        let (mut fh, mut fl, mut fm) = (0.0f64, 0.0f64, 0.0f64);
        let mut carried = self.ev.b2 * (eps * sum.abs() + gn * sm);
        acc(&mut fh, &mut fl, &mut fm, self.ev.b2, sum);
        let mut visit = |k: usize, x: f64| {
            if k >= wd {
                return; // a validation row's column past the training width: w_k = 0
            }
            let wk = wh[k] + wl[k];
            carried += x.abs() * (eps * wk.abs() + gn * wm[k]);
            acc(&mut fh, &mut fl, &mut fm, x, wk);
        };
        match self.row(i) {
            Row::Dense(v) => v.iter().enumerate().for_each(|(k, &x)| visit(k, x)),
            Row::Sparse { indices, values } => indices
                .iter()
                .zip(values)
                .for_each(|(&k, &x)| visit(k as usize, x)),
        }
        let f = fh + fl;
        let err = eps * f.abs() + gamma(wd as f64 + 1.0) * fm + carried;
        (f, 2.0 * err)
    }

    fn linear(&self) -> bool {
        self.ev.spec == KernelSpec::Linear
    }

    /// True for the linear kernel (the engine then works through primal weights).
    pub fn is_linear(&self) -> bool {
        self.linear()
    }

    /// Width of a primal weight vector (linear kernel).
    pub fn width(&self) -> usize {
        self.ev.width
    }

    /// `b^2` of the regularized constant feature (0 without it).
    pub fn b2(&self) -> f64 {
        self.ev.b2
    }

    /// `w += c x_j` for training row `j` (the bias feature is the caller's `b^2 sum c`).
    #[inline]
    pub fn axpy_row(&self, c: f64, j: usize, w: &mut [f64]) {
        ops::axpy(c, self.ev.train.row(j), w);
    }

    /// `x_i . w` for row `i` (training then validation), without the bias feature.
    #[inline]
    pub fn dot_row(&self, i: usize, w: &[f64]) -> f64 {
        ops::dot_dense(self.row(i), w)
    }

    /// Calls `visit(i, x_i . w)` for every training row in order, one sequential pass over the
    /// data with the storage dispatched once (the engine's fused direction and ratio test).
    #[inline]
    pub fn for_each_train_dot(&self, w: &[f64], mut visit: impl FnMut(usize, f64)) {
        match self.ev.train {
            Features::Dense(m) => {
                let d = m.n_cols();
                if d == 0 {
                    (0..self.ev.n).for_each(|i| visit(i, 0.0));
                } else {
                    for (i, r) in m.values().chunks_exact(d).enumerate() {
                        visit(i, ops::dense_dot(r, w));
                    }
                }
            }
            Features::Sparse(m) => {
                let (ip, ix, v) = m.parts();
                for i in 0..self.ev.n {
                    let (a, b) = (ip[i], ip[i + 1]);
                    visit(i, ops::sparse_dense_dot(&ix[a..b], &v[a..b], w));
                }
            }
        }
    }

    /// For the linear kernel, the largest rank a Gram block can have (`d`, plus one with the bias
    /// feature); `None` for other kernels.
    pub fn rank_bound(&self) -> Option<usize> {
        self.linear()
            .then(|| self.ev.width + usize::from(self.ev.b2 > 0.0))
    }

    /// For the linear kernel with at most [`RANK_WIDTH`] primal dimensions (the constant feature
    /// included), the numerical rank of the training rows `[x_i, b]`: the number of pivots of a
    /// diagonally pivoted Cholesky factorization of their `m x m` Gram matrix `sum_i z_i z_i'`
    /// above `1e-10` of its largest diagonal (`O(n m^2)`, once per engine). `None` otherwise.
    pub fn data_rank(&self) -> Option<usize> {
        let m = self.rank_bound()?;
        if m > RANK_WIDTH {
            return None;
        }
        let mut g = vec![0.0; m * m];
        let mut z = vec![0.0; m];
        let b = self.ev.b2.sqrt();
        for i in 0..self.ev.n {
            z.iter_mut().for_each(|v| *v = 0.0);
            ops::axpy(1.0, self.ev.train.row(i), &mut z[..self.ev.width]);
            if self.ev.b2 > 0.0 {
                z[self.ev.width] = b;
            }
            for p in 0..m {
                let zp = z[p];
                if zp != 0.0 {
                    for (q, &zq) in z.iter().enumerate() {
                        g[p * m + q] += zp * zq;
                    }
                }
            }
        }
        Some(pivoted_rank(&mut g, m, 1e-10))
    }

    /// `out[k] = sum_l K(idx[k], idx[l]) z[l]` (the Gram block of training samples `idx` times
    /// `z`): `O(|idx| d)` through the primal weights for the linear kernel, `O(|idx|^2)` kernel
    /// entries otherwise.
    pub fn gram_apply(&mut self, idx: &[usize], z: &[f64], out: &mut [f64]) {
        if self.linear() {
            let mut w = std::mem::take(&mut self.w_buf);
            w.iter_mut().for_each(|v| *v = 0.0);
            let mut sum = 0.0;
            for (&j, &c) in idx.iter().zip(z) {
                ops::axpy(c, self.ev.train.row(j), &mut w);
                sum += c;
            }
            let shift = self.ev.b2 * sum;
            for (o, &j) in out.iter_mut().zip(idx) {
                *o = ops::dot_dense(self.ev.train.row(j), &w) + shift;
            }
            self.w_buf = w;
        } else {
            for (o, &a) in out.iter_mut().zip(idx) {
                *o = idx.iter().zip(z).map(|(&b, &c)| c * self.entry(a, b)).sum();
            }
        }
    }

    /// Column `j` (training sample) over all rows, through the cache.
    pub fn column(&mut self, j: usize) -> &[f64] {
        let len = self.ev.n + self.ev.nv;
        let (col, valid) = self.cache.request(j, len, None);
        if valid < len {
            let ev = &self.ev;
            fill_rows(&mut col[valid..], |i| ev.entry(valid + i, j));
        }
        col
    }

    /// `out = sum_k coef[k] K[:, idx[k]]` over all rows (training then validation).
    /// Columns come from the cache (all made resident first, then summed in parallel over row
    /// blocks, in the order of `idx` for every row), or the primal shortcut for the linear kernel.
    pub fn combine(&mut self, idx: &[usize], coef: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        if idx.is_empty() {
            return;
        }
        if self.linear() {
            let mut w = std::mem::take(&mut self.w_buf);
            self.combine_linear(idx, coef, out, &mut w);
            self.w_buf = w;
            return;
        }
        let mut cols = std::mem::take(&mut self.col_buf);
        let mut cs = std::mem::take(&mut self.coef_buf);
        cols.clear();
        cs.clear();
        let nnz = coef.iter().filter(|&&c| c != 0.0).count();
        if nnz <= self.slots {
            // Every column loaded in this call is more recent than any other, so none of them
            // is evicted while the others load.
            for (&j, &c) in idx.iter().zip(coef) {
                if c != 0.0 {
                    self.column(j);
                    cols.push(j);
                    cs.push(c);
                }
            }
            let len = self.ev.n + self.ev.nv;
            let cache = &self.cache;
            let body = |lo: usize, ch: &mut [f64]| {
                for (&j, &c) in cols.iter().zip(&cs) {
                    let col = &cache.get(j, len)[lo..lo + ch.len()];
                    for (o, &v) in ch.iter_mut().zip(col) {
                        *o += c * v;
                    }
                }
            };
            if len * cols.len() >= 1 << 16 && len >= 2 * COMBINE_ROWS {
                out.par_chunks_mut(COMBINE_ROWS)
                    .enumerate()
                    .for_each(|(k, ch)| body(k * COMBINE_ROWS, ch));
            } else {
                body(0, out);
            }
        } else {
            for (&j, &c) in idx.iter().zip(coef) {
                if c == 0.0 {
                    continue;
                }
                let col = self.column(j);
                for (o, &v) in out.iter_mut().zip(col) {
                    *o += c * v;
                }
            }
        }
        self.col_buf = cols;
        self.coef_buf = cs;
    }

    /// As [`Kern::combine`] but row by row without the cache (for one-off products over many
    /// columns, e.g. `f = K beta` from scratch).
    pub fn combine_direct(&self, idx: &[usize], coef: &[f64], out: &mut [f64]) {
        if self.linear() {
            // One-off product: its own weight buffer (the hot path uses `combine`).
            self.combine_linear(idx, coef, out, &mut vec![0.0; self.ev.width]);
            return;
        }
        fill_rows(out, |i| {
            let mut s = 0.0;
            for (&j, &c) in idx.iter().zip(coef) {
                s += c * self.entry(i, j);
            }
            s
        });
    }

    fn combine_linear(&self, idx: &[usize], coef: &[f64], out: &mut [f64], w: &mut [f64]) {
        w.iter_mut().for_each(|v| *v = 0.0);
        let mut sum = 0.0;
        for (&j, &c) in idx.iter().zip(coef) {
            if c != 0.0 {
                ops::axpy(c, self.ev.train.row(j), w);
                sum += c;
            }
        }
        let shift = self.ev.b2 * sum;
        let w = &*w;
        fill_rows(out, |i| ops::dot_dense(self.row(i), w) + shift);
    }

    /// The kernel over the training rows as the `2n`-variable SMO matrix of a two-sided box
    /// (see [`BetaQ`]).
    pub fn beta_q(&mut self) -> BetaQ<'_, 'a> {
        let kd: Vec<f64> = (0..self.ev.n).map(|i| self.entry(i, i)).collect();
        Doubled::new(self, &kd)
    }
}

/// The kernel as a `2n`-variable SMO matrix ([`Doubled`]): variable `k < n` is `beta+_k`
/// (sign +1), variable `k + n` is `beta-_k` (sign -1), so that `beta = beta+ - beta-` and
/// `1/2 beta' K beta = 1/2 v' Q v`. This is how a box `lo <= beta <= hi` with `lo <= 0 <= hi`
/// becomes a [`crate::solver::BoxQp`] with zero lower bounds (upper bounds `hi` and `-lo`).
/// The f64 columns are rounded to f32 as the SMO reads them.
pub(crate) type BetaQ<'k, 'a> = Doubled<&'k mut Kern<'a>>;

impl SampleColumns for &mut Kern<'_> {
    type Float = f64;
    fn samples(&self) -> usize {
        self.ev.n
    }
    fn sample_column(&mut self, j: usize) -> &[f64] {
        self.column(j)
    }
    fn stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::{pivoted_rank, Kern};
    use crate::data::{DenseMatrix, Features};
    use crate::kernel::qmatrix::QMatrix;
    use crate::kernel::KernelSpec;

    fn blobs(n: usize, d: usize, seed: u64) -> Features {
        let mut state = seed;
        let v: Vec<f64> = (0..n * d)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
            })
            .collect();
        Features::Dense(DenseMatrix::new(n, d, v).unwrap())
    }

    /// Columns and combinations through a cache of two or three columns (evictions all the
    /// way) equal the entries computed one by one, bit for bit, over training and validation
    /// rows; the cached combination equals the uncached one.
    #[test]
    fn cached_columns_and_combinations_equal_the_entries() {
        let (n, nv) = (11usize, 4usize);
        let (x, v) = (blobs(n, 3, 1), blobs(nv, 3, 2));
        let spec = KernelSpec::Rbf { gamma: 0.6 };
        for slots in [2usize, 3] {
            let mut k = Kern::new(&x, Some(&v), spec, Some(0.5), 8 * (n + nv) * slots);
            for &j in &[0usize, 5, 3, 0, 10, 5, 7, 3, 3, 9] {
                let col = k.column(j).to_vec();
                let want: Vec<u64> = (0..n + nv).map(|i| k.entry(i, j).to_bits()).collect();
                assert_eq!(col.iter().map(|c| c.to_bits()).collect::<Vec<_>>(), want);
            }
            let idx = [1usize, 4, 6];
            let coef = [0.5, -1.25, 2.0];
            let (mut a, mut b) = (vec![0.0; n + nv], vec![0.0; n + nv]);
            k.combine(&idx[..slots], &coef[..slots], &mut a);
            k.combine_direct(&idx[..slots], &coef[..slots], &mut b);
            for (i, (&p, &q)) in a.iter().zip(&b).enumerate() {
                let exact: f64 = idx[..slots]
                    .iter()
                    .zip(&coef)
                    .map(|(&j, &c)| c * k.entry(i, j))
                    .sum();
                assert_eq!(p.to_bits(), q.to_bits());
                assert!((p - exact).abs() <= 1e-12 * (1.0 + exact.abs()));
            }
        }
    }

    /// The doubled matrix over the f64 kernel: `Q_ab = s_a s_b K(a mod n, b mod n)` rounded
    /// to f32, after swaps, against the entries computed one by one.
    #[test]
    fn beta_q_is_the_signed_doubled_kernel() {
        let n = 6usize;
        let x = blobs(n, 2, 3);
        let spec = KernelSpec::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 2,
        };
        let mut k = Kern::new(&x, None, spec, None, 0);
        let entries: Vec<f64> = (0..n * n).map(|t| k.entry(t / n, t % n)).collect();
        let mut q = k.beta_q();
        let mut perm: Vec<usize> = (0..2 * n).collect();
        for &(a, b) in &[(0usize, 7usize), (3, 11), (2, 3)] {
            q.swap_index(a, b);
            perm.swap(a, b);
        }
        let sign = |v: usize| if v < n { 1.0 } else { -1.0 };
        for a in 0..2 * n {
            let col = q.column(a, 2 * n).to_vec();
            for (b, &got) in col.iter().enumerate() {
                let (va, vb) = (perm[a], perm[b]);
                let want = sign(va) * sign(vb) * entries[(va % n) * n + vb % n];
                assert_eq!(got, want as f32, "Q[{b}, {a}]");
            }
            assert_eq!(q.diag()[a], entries[(perm[a] % n) * (n + 1)]);
        }
    }

    #[test]
    fn linear_exact_row_value_bound_is_sound_and_tight() {
        // Dyadic data (x = int / 2^20, beta = int / 2^30, ints below 2^30): the exact
        // `f_i = sum_j beta_j (x_i . x_j + b^2)` is an integer over 2^70 in i128, while the
        // f64 products and sums round. Rows far from the origin (blobs at +-5), as in the
        // n = 50,000 blobs, where the entry-wise bound is 1.5e-9.
        let (n, d) = (3000usize, 10usize);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut xi = vec![0i64; n * d];
        let mut bi = vec![0i64; n];
        for j in 0..n {
            let centre: i64 = if j % 2 == 0 { 5 << 20 } else { -(5 << 20) };
            for k in 0..d {
                xi[j * d + k] = centre + (next() % (1 << 21)) as i64 - (1 << 20);
            }
            bi[j] = if j % 7 == 3 {
                0
            } else {
                (next() % (1 << 30)) as i64 - (1 << 29)
            };
        }
        let xs: Vec<f64> = xi
            .iter()
            .map(|&v| v as f64 / f64::from(1u32 << 20))
            .collect();
        let beta: Vec<f64> = bi
            .iter()
            .map(|&v| v as f64 / f64::from(1u32 << 30))
            .collect();
        let x = Features::Dense(DenseMatrix::new(n, d, xs.clone()).unwrap());
        let kern = Kern::new(&x, None, KernelSpec::Linear, Some(1.0), 1 << 20);
        let mut max_ratio = 0.0f64;
        for i in (0..n).step_by(97) {
            let mut exact: i128 = 0;
            for j in 0..n {
                let mut dot: i128 = 1 << 40; // b^2 = 1 at the scale 2^40 of x_i . x_j
                for k in 0..d {
                    dot += i128::from(xi[i * d + k]) * i128::from(xi[j * d + k]);
                }
                exact += dot * i128::from(bi[j]);
            }
            let (f, err) = kern.exact_row_value(i, &beta);
            let scaled = f * 2f64.powi(70); // exact: |f| 2^70 is far above 2^53
            let diff = (exact - scaled as i128).unsigned_abs() as f64 / 2f64.powi(70);
            assert!(
                diff <= err,
                "row {i}: error {diff:e} above the bound {err:e}"
            );
            // The entry-wise bound: (w + 4) eps sum_j |beta_j| (|x_i| |x_j| + b^2).
            let norm = |r: usize| {
                xs[r * d..(r + 1) * d]
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt()
            };
            let old: f64 = (0..n)
                .map(|j| beta[j].abs() * (norm(i) * norm(j) + 1.0))
                .sum::<f64>()
                * (d as f64 + 4.0)
                * f64::EPSILON;
            max_ratio = max_ratio.max(err / old);
        }
        assert!(
            max_ratio < 0.2,
            "bound not tighter than the entry-wise one: {max_ratio}"
        );
    }

    /// Gram matrix of the rows of `z` (`r x m`).
    fn gram(z: &[Vec<f64>], m: usize) -> Vec<f64> {
        let mut g = vec![0.0; m * m];
        for row in z {
            for p in 0..m {
                for q in 0..m {
                    g[p * m + q] += row[p] * row[q];
                }
            }
        }
        g
    }

    #[test]
    fn pivoted_rank_counts_independent_directions() {
        // Rows in a 2-D subspace of R^4 (third column = first + second, fourth = 0).
        let z: Vec<Vec<f64>> = (0..7)
            .map(|i| {
                let (a, b) = (f64::from(i).sin(), f64::from(i * i).cos());
                vec![a, b, a + b, 0.0]
            })
            .collect();
        assert_eq!(pivoted_rank(&mut gram(&z, 4), 4, 1e-10), 2);
        // Full rank, with very different column scales.
        let z: Vec<Vec<f64>> = (0..9)
            .map(|i| {
                let t = f64::from(i);
                vec![1e3 * t.sin(), t.cos(), 0.1 * (2.0 * t).sin(), 1.0]
            })
            .collect();
        assert_eq!(pivoted_rank(&mut gram(&z, 4), 4, 1e-10), 4);
        assert_eq!(pivoted_rank(&mut [0.0; 9], 3, 1e-10), 0);
    }
}
