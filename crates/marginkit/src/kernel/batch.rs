//! Weighted kernel sums of a batch of rows against a fixed set of rows, as one blocked product:
//! the decision values of a kernel model for many test rows at once.
//!
//! For source rows `s_t` (the support vectors) split into consecutive groups (the classes), and
//! `R` weight rows `w_r` (the coefficient rows), every row `x_i` of a batch gets
//!
//! ```text
//! S_i[g][r] = sum_{t in group g, t ascending} w_r[t] K(x_i, s_t)      (starting from -0.0)
//! ```
//!
//! which is the order (and starting value) of a plain `Iterator::sum` over the sources of a
//! group, so a caller combines these sums exactly as a row-by-row evaluation would.
//!
//! Layout and blocking (dense sources): the batch is cut into blocks of test rows whose
//! features, packed in a panel layout of the Q matrices (the f64 panels of `PANEL` rows
//! feature-major, or the exact integer panels of [`super::quant`] when the sources and the
//! block are on one binary scale: the same inner products to the bit), stay
//! in the L2 cache ([`BLOCK_BYTES`]); the sources pass over a block in chunks that stay in the
//! L1 cache, and each chunk meets every panel of the block in micro-tiles of `TILE_ROWS`
//! sources times one panel (the tiles of [`super::qmatrix`]: `TILE_ROWS x PANEL` inner products
//! held in registers over the features). The kernel's outer function (for RBF the branch-free
//! exponential [`super::qmatrix::exp_nonpositive`] on `|x|^2 + |s|^2 - 2 x's`, LIBSVM's own form)
//! then runs over the panel's contiguous lanes, and the weighted sums over the same lanes.
//! Blocks are independent, so they run in parallel on the current rayon pool.
//!
//! Every inner product is the sequential sum over the features `k = 0, 1, ...`, every squared
//! norm the sequential sum of the row's squares, and every `S_i[g][r]` adds its terms in source
//! order: a row's sums do not depend on the blocking, on the other rows of the batch or on the
//! thread count. Sparse sources that are not densified ([`SvLayout`]) take a gather per source
//! (a test row scattered into a dense buffer); its inner products have the same bits as the
//! dense ones, since the only terms it leaves out are products with a zero, which leave a sum
//! that starts at `+0.0` unchanged.

use std::borrow::Cow;

use rayon::prelude::*;

use super::qmatrix::{
    pack_panels, Aligned, DenseDots, Identity, Line, Outer, PolyOuter, RbfOuter, SigmoidOuter,
    Tiles, BLOCK, PANEL, SOURCE_CHUNK_VALUES, TILE_ROWS,
};
use super::quant::{self, QuantPanels};
use super::KernelSpec;
use crate::data::{CsrMatrix, Features, Row};

/// Bytes of packed test rows per block: 128 KiB stay in a 256 KiB (or larger) L2 cache beside
/// the source chunk and the block's sums while every source chunk passes over them.
const BLOCK_BYTES: usize = 128 * 1024;
/// Largest block (rows), so that the sums of a block stay small next to the packed rows.
const MAX_BLOCK_ROWS: usize = 1024;
/// Test rows per block of the gather path (each row is one independent pass over the sources).
const GATHER_BLOCK_ROWS: usize = 64;
/// Sparse sources are densified when `n_sources x d <= DENSIFY_FACTOR x nnz` (density at least
/// 1/8). A gather adds one product per stored entry to a single accumulator, so it runs at
/// the latency of an addition (about 4 cycles per entry), while the micro-tile keeps
/// `TILE_ROWS x PANEL` independent vector accumulators and does several products per cycle
/// (about 16x more per entry, zeros included): densifying pays from a density of about 1/16.
/// 1/8 keeps a margin and bounds the dense copy at 64 bytes per stored entry (about 5x the
/// 12 bytes of CSR), so it never dominates the model's own memory.
const DENSIFY_FACTOR: usize = 8;

/// The sums of one group's panel (`W` rows) held aside while consecutive sources add to them
/// ([`KernelSums::add_panel`] with one weight row), on a cache line as [`Line`].
#[repr(align(64))]
struct Run<const W: usize> {
    /// The group whose sums `sums` holds (`usize::MAX`: none yet).
    group: usize,
    sums: [f64; W],
}

impl<const W: usize> Run<W> {
    const EMPTY: Self = Self {
        group: usize::MAX,
        sums: [0.0; W],
    };

    /// Writes the held sums back to their place in `acc` (a panel's sums, one row per group).
    #[inline(always)]
    fn flush(&self, acc: &mut [f64]) {
        if self.group != usize::MAX {
            acc[self.group * W..(self.group + 1) * W].copy_from_slice(&self.sums);
        }
    }
}

/// How the sources are held for the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SvLayout {
    /// Dense sources as they are; sparse ones densified when dense enough ([`DENSIFY_FACTOR`]).
    Auto,
    /// Sparse sources kept sparse (the gather path); dense ones as they are. For tests: the
    /// two paths must give the same bits.
    #[cfg(test)]
    KeepSparse,
}

/// The sources in the form the product reads.
#[derive(Debug)]
enum Sources<'a> {
    /// Row-major values, `d` per row.
    Dense(Cow<'a, [f64]>),
    /// CSR rows (indices below `d`).
    Sparse(&'a CsrMatrix),
}

/// Sources, their groups and weights, prepared once for any number of batches.
#[derive(Debug)]
pub(crate) struct KernelSums<'a> {
    spec: KernelSpec,
    rows: Sources<'a>,
    n_src: usize,
    /// Features of the sources: the inner products run over `0..d` (a test row's values
    /// beyond `d` meet zeros; they count in its squared norm only).
    d: usize,
    /// Squared norms of the sources (RBF; zeros otherwise, unused).
    norms: Vec<f64>,
    /// Group of each source.
    group: Vec<u32>,
    n_groups: usize,
    /// Number of weight rows `R`.
    n_w: usize,
    /// Weights transposed: `w[t * R + r] = w_r[t]`.
    w: Vec<f64>,
    /// Dense sources on one binary scale: its shift and their feature pairs, the sources of
    /// the exact integer tiles ([`QuantPanels`]) for test blocks on that scale.
    quant: Option<(u32, Vec<i32>)>,
}

/// The squared norms of rows `i0..i1` of `x` (over all their features), passing their features
/// `0..d` to `put(row - i0, feature, value)`.
fn block_rows(
    x: &Features,
    i0: usize,
    i1: usize,
    d: usize,
    mut put: impl FnMut(usize, usize, f64),
) -> Vec<f64> {
    (i0..i1)
        .map(|i| {
            let row = x.row(i);
            match row {
                Row::Dense(v) => {
                    for (k, &val) in v.iter().take(d).enumerate() {
                        put(i - i0, k, val);
                    }
                }
                Row::Sparse { indices, values } => {
                    for (&k, &val) in indices.iter().zip(values) {
                        if k as usize >= d {
                            break;
                        }
                        put(i - i0, k as usize, val);
                    }
                }
            }
            sq_norm_seq(row)
        })
        .collect()
}

/// Sequential sum of the squares of a row's stored values (dense and sparse storage of the same
/// values give the same bits: the squares of zeros leave the sum unchanged).
fn sq_norm_seq(row: Row<'_>) -> f64 {
    let vals = match row {
        Row::Dense(v) => v,
        Row::Sparse { values, .. } => values,
    };
    let mut s = 0.0;
    for &v in vals {
        s += v * v;
    }
    s
}

impl<'a> KernelSums<'a> {
    /// Prepares the sources `sv` (every row) with the groups of consecutive rows of sizes
    /// `group_sizes` and the weight rows `weights` (each as long as `sv` has rows).
    ///
    /// The kernel must not be [`KernelSpec::Precomputed`] (its "product" is a lookup that the
    /// caller does row by row); it is evaluated as linear if given. Missing weights count as 0
    /// and sources beyond the groups join the last group, so a malformed model cannot make
    /// this panic.
    pub(crate) fn new(
        spec: KernelSpec,
        sv: &'a Features,
        weights: &[Vec<f64>],
        group_sizes: &[usize],
        layout: SvLayout,
    ) -> Self {
        let n_src = sv.n_rows();
        let d = sv.n_cols();
        let rows = match sv {
            Features::Dense(m) => Sources::Dense(Cow::Borrowed(m.values())),
            Features::Sparse(m)
                if layout == SvLayout::Auto
                    && n_src.saturating_mul(d) <= DENSIFY_FACTOR.saturating_mul(m.nnz()) =>
            {
                let mut v = vec![0.0; n_src * d];
                for t in 0..n_src {
                    let (idx, val) = m.row(t);
                    for (&k, &x) in idx.iter().zip(val) {
                        v[t * d + k as usize] = x;
                    }
                }
                Sources::Dense(Cow::Owned(v))
            }
            Features::Sparse(m) => Sources::Sparse(m),
        };
        let norms = if spec.needs_norms() {
            (0..n_src).map(|t| sq_norm_seq(sv.row(t))).collect()
        } else {
            vec![0.0; n_src]
        };
        let n_groups = group_sizes.len().max(1);
        let mut group = Vec::with_capacity(n_src);
        for (g, &size) in group_sizes.iter().enumerate() {
            let take = size.min(n_src - group.len());
            group.extend(std::iter::repeat_n(g as u32, take));
        }
        group.resize(n_src, (n_groups - 1) as u32);
        let quant = match &rows {
            Sources::Dense(v) => quant::source_pairs(v, d),
            Sources::Sparse(_) => None,
        };
        let n_w = weights.len();
        let mut w = vec![0.0; n_src * n_w];
        for (r, wr) in weights.iter().enumerate() {
            for (t, &v) in wr.iter().take(n_src).enumerate() {
                w[t * n_w + r] = v;
            }
        }
        Self {
            spec,
            rows,
            n_src,
            d,
            norms,
            group,
            n_groups,
            n_w,
            w,
            quant,
        }
    }

    /// Whether the sources are held for the exact integer tiles.
    #[cfg(test)]
    pub(crate) fn integer_sources(&self) -> bool {
        self.quant.is_some()
    }

    /// Number of sums per row: groups times weight rows, laid out `[g * R + r]`.
    pub(crate) fn sums_per_row(&self) -> usize {
        self.n_groups * self.n_w
    }

    /// `f(S_i)` for every row `i` of `x`, in row order, where `S_i` holds the
    /// [`Self::sums_per_row`] sums of row `i` (`S_i[g * R + r]`). Parallel over blocks of rows;
    /// the result does not depend on the thread count.
    pub(crate) fn map_rows<T, F>(&self, x: &Features, f: F) -> Vec<T>
    where
        T: Send,
        F: Fn(&[f64]) -> T + Sync,
    {
        let n = x.n_rows();
        let gr = self.sums_per_row();
        if n == 0 {
            return Vec::new();
        }
        if gr == 0 {
            return (0..n).map(|_| f(&[])).collect();
        }
        let threads = rayon::current_num_threads().max(1);
        // At least four blocks per thread when the batch allows: blocks cost the same, so
        // the last ones even out the threads' shares.
        let per_thread = n.div_ceil(4 * threads);
        let b = match self.rows {
            Sources::Dense(_) => {
                let l2 = (BLOCK_BYTES / (8 * self.d.max(1))) / PANEL * PANEL;
                l2.clamp(PANEL, MAX_BLOCK_ROWS)
                    .min(per_thread.next_multiple_of(PANEL))
            }
            Sources::Sparse(_) => GATHER_BLOCK_ROWS.min(per_thread),
        }
        .max(1);
        // One block per rayon job (rayon's own splitting would hand out runs of blocks, and
        // a thread could wait at the end for another's run).
        let blocks: Vec<Vec<T>> = (0..n.div_ceil(b))
            .into_par_iter()
            .with_max_len(1)
            .map(|blk| {
                let (i0, i1) = (blk * b, ((blk + 1) * b).min(n));
                self.block(x, i0, i1).chunks_exact(gr).map(&f).collect()
            })
            .collect();
        blocks.into_iter().flatten().collect()
    }

    /// The sums of rows `i0..i1` of `x`, `sums_per_row` per row.
    fn block(&self, x: &Features, i0: usize, i1: usize) -> Vec<f64> {
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => self.block_with(&Identity, x, i0, i1),
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => self.block_with(
                &PolyOuter {
                    gamma,
                    coef0,
                    degree,
                },
                x,
                i0,
                i1,
            ),
            KernelSpec::Rbf { gamma } => self.block_with(&RbfOuter { gamma }, x, i0, i1),
            KernelSpec::Sigmoid { gamma, coef0 } => {
                self.block_with(&SigmoidOuter { gamma, coef0 }, x, i0, i1)
            }
        }
    }

    fn block_with<O: Outer>(&self, outer: &O, x: &Features, i0: usize, i1: usize) -> Vec<f64> {
        match &self.rows {
            Sources::Dense(sv) => self.dense_block(outer, sv, x, i0, i1),
            Sources::Sparse(sv) => self.gather_block(outer, sv, x, i0, i1),
        }
    }

    /// Adds source `t`'s weighted kernel values `v` (one per lane) to the sums of a panel
    /// (`acc`: `[(g * R + r) * PANEL + lane]`).
    ///
    /// With one weight row (`R = 1`: two-class and one-class models) the sums of the group
    /// being added to stay in `run` (registers) while consecutive sources share that group,
    /// and go back to `acc` when the group changes and at [`Run::flush`]. Every lane still
    /// adds its terms in source order, so the bits are those of adding to `acc` directly; what
    /// it saves is a load and a store of the same lanes per source, which would put every
    /// source's addition on one dependency chain through memory.
    #[inline(always)]
    fn add_panel<const W: usize>(&self, acc: &mut [f64], run: &mut Run<W>, t: usize, v: &[f64; W]) {
        let n_w = self.n_w;
        let g = self.group[t] as usize;
        if n_w == 1 {
            if g != run.group {
                run.flush(acc);
                run.group = g;
                run.sums.copy_from_slice(&acc[g * W..(g + 1) * W]);
            }
            let w = self.w[t];
            for (a, &k) in run.sums.iter_mut().zip(v) {
                *a += w * k;
            }
            return;
        }
        let wt = &self.w[t * n_w..(t + 1) * n_w];
        let sums = &mut acc[g * n_w * W..(g + 1) * n_w * W];
        for (lanes, &w) in sums.chunks_exact_mut(W).zip(wt) {
            for (a, &k) in lanes.iter_mut().zip(v) {
                *a += w * k;
            }
        }
    }

    /// Dense sources (row-major `sv`): the micro-tiled product over the packed block, on exact
    /// integers when the sources and the block are on one binary scale ([`QuantPanels`]: the
    /// same inner products to the bit), on f64 panels otherwise.
    fn dense_block<O: Outer>(
        &self,
        outer: &O,
        sv: &[f64],
        x: &Features,
        i0: usize,
        i1: usize,
    ) -> Vec<f64> {
        let (d, m) = (self.d, i1 - i0);
        if let Some((shift, pairs)) = &self.quant {
            let mut vals = vec![0.0; m * d];
            let xn = block_rows(x, i0, i1, d, |r, k, v| vals[r * d + k] = v);
            if let Some(q) = QuantPanels::on_scale(&vals, m, d, *shift) {
                return self.tiled(outer, &q, pairs, &xn);
            }
            let panels = pack_panels(&vals, m, d, |r| r);
            return self.tiled(outer, &DenseDots { panels: &panels, d }, sv, &xn);
        }
        let mut panels = Aligned::zeros(m.div_ceil(PANEL) * PANEL * d);
        let xn = block_rows(x, i0, i1, d, |r, k, v| {
            panels[(r / PANEL) * PANEL * d + k * PANEL + r % PANEL] = v;
        });
        self.tiled(outer, &DenseDots { panels: &panels, d }, sv, &xn)
    }

    /// The sums of the block held by `dd` (its rows' squared norms `xn`) against the sources
    /// `src` (row-major, [`Tiles::src_len`] each), in micro-tiles of [`TILE_ROWS`] sources
    /// times one panel of `W` rows.
    fn tiled<const W: usize, D: Tiles<W>, O: Outer>(
        &self,
        outer: &O,
        dd: &D,
        src: &[D::Src],
        xn: &[f64],
    ) -> Vec<f64> {
        let (m, ms) = (xn.len(), dd.src_len());
        let np = m.div_ceil(W);
        let gr = self.sums_per_row();
        // Rows past the last one: zero norms (finite values, discarded).
        let mut norms = vec![0.0; np * W];
        norms[..m].copy_from_slice(xn);
        let mut acc = Aligned::zeros(np * gr * W);
        acc.fill(-0.0);
        let chunk = (SOURCE_CHUNK_VALUES / self.d.max(1)).max(TILE_ROWS);
        let mut c0 = 0;
        while c0 < self.n_src {
            let c1 = (c0 + chunk).min(self.n_src);
            for (p, accp) in acc.chunks_exact_mut(gr * W).enumerate() {
                let mut nj = Line([0.0f64; W]);
                nj.copy_from_slice(&norms[p * W..(p + 1) * W]);
                let mut run = Run::EMPTY;
                let mut t = c0;
                while t + TILE_ROWS <= c1 {
                    let mut v = Line([[0.0f64; W]; TILE_ROWS]);
                    dd.tile(&src[t * ms..(t + TILE_ROWS) * ms], p, &mut v);
                    for (q, vq) in v.iter_mut().enumerate() {
                        outer.apply(vq, self.norms[t + q], &nj[..]);
                        self.add_panel(accp, &mut run, t + q, vq);
                    }
                    t += TILE_ROWS;
                }
                while t < c1 {
                    let mut v = Line([0.0f64; W]);
                    dd.tile1(&src[t * ms..(t + 1) * ms], p, &mut v);
                    outer.apply(&mut v[..], self.norms[t], &nj[..]);
                    self.add_panel(accp, &mut run, t, &v);
                    t += 1;
                }
                run.flush(accp);
            }
            c0 = c1;
        }
        let mut out = vec![0.0; m * gr];
        for (r, o) in out.chunks_exact_mut(gr).enumerate() {
            let (p, lane) = (r / W, r % W);
            for (j, oj) in o.iter_mut().enumerate() {
                *oj = acc[(p * gr + j) * W + lane];
            }
        }
        out
    }

    /// Sparse sources: per test row, the row scattered into a dense buffer and one gather per
    /// source (the same bits as the dense product).
    fn gather_block<O: Outer>(
        &self,
        outer: &O,
        sv: &CsrMatrix,
        x: &Features,
        i0: usize,
        i1: usize,
    ) -> Vec<f64> {
        let (d, n_w) = (self.d, self.n_w);
        let gr = self.sums_per_row();
        let mut out = vec![-0.0; (i1 - i0) * gr];
        let mut xd = vec![0.0; d];
        let mut buf = Line([0.0f64; BLOCK]);
        for (i, o) in (i0..i1).zip(out.chunks_exact_mut(gr)) {
            let row = x.row(i);
            let ni = sq_norm_seq(row);
            match row {
                Row::Dense(v) => {
                    let k = v.len().min(d);
                    xd[..k].copy_from_slice(&v[..k]);
                }
                Row::Sparse { indices, values } => {
                    for (&k, &val) in indices.iter().zip(values) {
                        if k as usize >= d {
                            break;
                        }
                        xd[k as usize] = val;
                    }
                }
            }
            let mut lo = 0;
            while lo < self.n_src {
                let hi = (lo + BLOCK).min(self.n_src);
                let kv = &mut buf[..hi - lo];
                for (t, b) in (lo..hi).zip(kv.iter_mut()) {
                    let (ib, vb) = sv.row(t);
                    let mut s = 0.0;
                    for (&k, &v) in ib.iter().zip(vb) {
                        s += xd[k as usize] * v;
                    }
                    *b = s;
                }
                outer.apply(kv, ni, &self.norms[lo..hi]);
                for (t, &k) in (lo..hi).zip(kv.iter()) {
                    let g = self.group[t] as usize;
                    let wt = &self.w[t * n_w..(t + 1) * n_w];
                    for (a, &w) in o[g * n_w..(g + 1) * n_w].iter_mut().zip(wt) {
                        *a += w * k;
                    }
                }
                lo = hi;
            }
            match row {
                Row::Dense(v) => xd[..v.len().min(d)].fill(0.0),
                Row::Sparse { indices, .. } => {
                    for &k in indices.iter().take_while(|&&k| (k as usize) < d) {
                        xd[k as usize] = 0.0;
                    }
                }
            }
        }
        out
    }
}
