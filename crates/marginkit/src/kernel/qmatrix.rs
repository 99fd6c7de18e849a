//! The Q matrices the SMO solver reads, column by column, through an LRU cache.
//!
//! * [`SvcQ`]: `Q_ij = y_i y_j K(x_i, x_j)` (C-SVC, nu-SVC).
//! * [`OneClassQ`]: `Q_ij = K(x_i, x_j)` (one-class SVM, SVDD-style duals).
//! * [`SvrQ`]: `2l` virtual variables over `l` samples (epsilon-SVR, nu-SVR):
//!   variable `k < l` is `alpha_k` (sign +1), variable `k + l` is `alpha*_k` (sign -1), and
//!   `Q_ab = s_a s_b K(x_{a mod l}, x_{b mod l})`; the doubling is [`Doubled`], a view over any
//!   per-sample column source ([`SampleColumns`]), which the robust SVMs share.
//!
//! All of them follow the solver's permutation (`swap_index`), compute the missing entries of a
//! column in blocks of [`BLOCK`] entries, in parallel on the current rayon pool when the
//! column is long, and every entry is computed independently of the blocking, so the results
//! are bit-identical for any number of threads. The kernel is dispatched once per column fill
//! to a function generic over the row storage and the kernel's outer function.
//!
//! The RBF kernel uses `|u - v|^2 = |u|^2 + |v|^2 - 2 u'v` with precomputed squared norms and a
//! branch-free exponential ([`exp_nonpositive`], relative error below 1e-15) that the
//! compiler vectorizes; the cache stores f32, so this is far below the storage precision.

use rayon::prelude::*;

use super::cache::{CacheFloat, CacheStats, ColumnCache};
use super::quant::{QuantPanels, QPANEL};
use super::{powi, KernelSpec};
use crate::data::{ops, CsrMatrix, DenseMatrix, Features};
use crate::error::DataError;

/// Entries computed per block (the stack buffer of one fill step).
pub const BLOCK: usize = 512;
/// Columns whose work (entries times [`Dots::entry_cost`] plus [`Outer::COST`], about one
/// multiply-add each) is below this are filled serially: about 6 us of work, several times
/// the cost of handing a task to a worker kept awake by the solver (`solver::hot`).
const PAR_WORK: usize = 96 * 1024;
/// Work per parallel task (small tasks: the thread that finishes first takes the last ones,
/// so neither waits long for the other).
const PAR_TASK_WORK: usize = 16 * 1024;

/// A symmetric matrix served column by column to the SMO solver.
pub trait QMatrix {
    /// Number of variables.
    fn n(&self) -> usize;
    /// The diagonal `Q_ii` in the current order.
    fn diag(&self) -> &[f64];
    /// The first `len` entries of column `i` (current order).
    fn column(&mut self, i: usize, len: usize) -> &[f32];
    /// The first `len` entries of columns `i` and `j`, both borrowed.
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]);
    /// Swaps variables `i` and `j` (the solver's permutation).
    fn swap_index(&mut self, i: usize, j: usize);
    /// Cache hits and misses so far.
    fn cache_stats(&self) -> CacheStats;
    /// The first `len` entries of the columns `idx` (current order), column `idx[k]` into
    /// `out[k]` (each `len` long): a working set's columns at once. The default reads them one
    /// by one through [`QMatrix::column`]; the kernel matrices over dense rows compute the
    /// columns missing from the cache together ([`KernelRows::fill_many`]), with the same bits.
    fn columns_into(&mut self, idx: &[usize], len: usize, out: &mut [&mut [f32]]) {
        for (&i, o) in idx.iter().zip(out.iter_mut()) {
            o.copy_from_slice(self.column(i, len));
        }
    }
    /// Rows `lo..lo + out.len()` of column `i` (current order) into `out`: a part of a column
    /// needed once. The default reads them through [`QMatrix::column`]; [`SvcQ`] and
    /// [`OneClassQ`] compute just those rows, with the same bits, and leave the cache alone.
    fn column_part(&mut self, i: usize, lo: usize, out: &mut [f32]) {
        out.copy_from_slice(&self.column(i, lo + out.len())[lo..]);
    }
    /// [`QMatrix::column_part`] of the columns `idx`, column `idx[k]` into `out[k]` (each as
    /// long as the first): parts of columns needed once, such as the gradient rebuild's. The
    /// default reads them one by one; [`SvcQ`] and [`OneClassQ`] compute them together as
    /// [`QMatrix::columns_into`] does, with the same bits, and leave the cache alone.
    fn columns_part(&mut self, idx: &[usize], lo: usize, out: &mut [&mut [f32]]) {
        for (&i, o) in idx.iter().zip(out.iter_mut()) {
            self.column_part(i, lo, o);
        }
    }
}

/// Row storage in the current order.
#[derive(Debug)]
enum Rows<'a> {
    /// A private copy in panel layout (see [`DenseDots`]), permuted along with the solver: of
    /// dense rows, or of sparse rows at least a third dense (see [`KernelRows::new`]).
    Dense { panels: Aligned, d: usize },
    /// The same as exact integers on a common scale ([`QuantPanels`]), when the features allow
    /// it: the same inner products to the bit, with 16-bit multiply-adds.
    Quant(QuantPanels),
    /// Borrowed CSR rows through a permutation (sparse rows that neither panel layout takes).
    /// `dense` is all zeros between column fills, or empty when a dense copy of one row would
    /// not pay for itself (see [`KernelRows::fill`]).
    Sparse {
        x: &'a CsrMatrix,
        perm: Vec<u32>,
        dense: Vec<f64>,
    },
    /// Borrowed rows of kernel values: `K(a, b) = row_a[serial_b]`, through a permutation;
    /// `serial` is kept in the current order (permuted with `perm`), since `perm` names rows
    /// of `x`, which a row selection makes differ from the problem's own indices.
    Pre {
        x: &'a Features,
        serial: Vec<u32>,
        perm: Vec<u32>,
    },
}

/// Kernel evaluation over a (permutable) set of rows.
#[derive(Debug)]
struct KernelRows<'a> {
    rows: Rows<'a>,
    norms: Vec<f64>,
    spec: KernelSpec,
}

/// Source of inner products between rows `i` and `j` in the current order.
pub(super) trait Dots: Sync {
    fn dot(&self, i: usize, j: usize) -> f64;
    /// Rough cost of one entry, in multiply-adds (for the parallel threshold).
    fn entry_cost(&self) -> usize;
    /// `out[k] = dot(i, lo + k)`.
    #[inline]
    fn block(&self, i: usize, lo: usize, out: &mut [f64]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.dot(i, lo + k);
        }
    }
}

/// Rows per panel of the dense layout.
pub(super) const PANEL: usize = 8;

/// Dense rows stored in panels of [`PANEL`] rows, feature-major inside a panel: feature `k`
/// of row `r` is at `(r / PANEL) * PANEL * d + k * PANEL + r % PANEL`. A block of inner
/// products then runs over contiguous lanes (`PANEL` independent accumulators, vectorized);
/// every inner product is the sequential sum over `k`, the same for any blocking or thread
/// count, and symmetric in its two rows.
pub(super) struct DenseDots<'b> {
    pub(super) panels: &'b [f64],
    pub(super) d: usize,
}

impl DenseDots<'_> {
    #[inline]
    fn at(&self, r: usize, k: usize) -> f64 {
        self.panels[(r / PANEL) * PANEL * self.d + k * PANEL + r % PANEL]
    }
}

/// A zeroed `f64` buffer whose first element sits on a 64-byte boundary, so that a panel's
/// lanes ([`PANEL`] values, 64 bytes) each fill one cache line: a 64-byte vector load from a
/// buffer the allocator placed at 16 mod 64 would span two lines. Safe code cannot ask the
/// allocator for the alignment, so the buffer is one cache line longer and starts at the first
/// aligned element.
#[derive(Debug)]
pub(crate) struct Aligned {
    buf: Vec<f64>,
    off: usize,
    len: usize,
}

impl Aligned {
    pub(crate) fn zeros(len: usize) -> Self {
        const LINE: usize = 64;
        let buf = vec![0.0; len + LINE / 8 - 1];
        let off = (LINE - buf.as_ptr() as usize % LINE) % LINE / 8;
        Self { buf, off, len }
    }
}

impl std::ops::Deref for Aligned {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [f64] {
        &mut self.buf[self.off..self.off + self.len]
    }
}

/// A stack value on a 64-byte boundary: the tiles' lane arrays ([`PANEL`] f64, 64 bytes), which
/// 64-byte vector loads and stores would otherwise split across two cache lines whenever the
/// stack happens to sit at 16 or 32 mod 64 (about 1.25x the time of a prediction block then).
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub(crate) struct Line<T>(pub(crate) T);

impl<T> std::ops::Deref for Line<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Line<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Packs row-major values into the panel layout (rows padded with zeros).
pub(super) fn pack_panels(
    vals: &[f64],
    n: usize,
    d: usize,
    src: impl Fn(usize) -> usize,
) -> Aligned {
    pack_panels_from(&DenseSource { vals, d, src }, n, d)
}

/// [`pack_panels`] of rows `0..n` of `rows` (`d` features each; the features a row does not
/// visit are zeros).
fn pack_panels_from(rows: &impl SourceRows, n: usize, d: usize) -> Aligned {
    let np = n.div_ceil(PANEL);
    let mut out = Aligned::zeros(np * PANEL * d);
    for r in 0..n {
        let at = (r / PANEL) * PANEL * d + r % PANEL;
        rows.visit(r, |k, v| out[at + k * PANEL] = v);
    }
    out
}

/// Rows whose (feature, value) entries the packers ([`pack_panels_from`], the integer panels)
/// read; features not visited are zeros.
pub(super) trait SourceRows {
    fn visit(&self, r: usize, f: impl FnMut(usize, f64));
}

/// Row-major dense rows, row `r` at `src(r)`.
pub(super) struct DenseSource<'v, S> {
    pub(super) vals: &'v [f64],
    pub(super) d: usize,
    pub(super) src: S,
}

impl<S: Fn(usize) -> usize> SourceRows for DenseSource<'_, S> {
    fn visit(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        let at = (self.src)(r) * self.d;
        for (k, &v) in self.vals[at..at + self.d].iter().enumerate() {
            f(k, v);
        }
    }
}

/// Sparse rows, row `r` at `src(r)`.
pub(super) struct SparseSource<'x, S> {
    pub(super) x: &'x CsrMatrix,
    pub(super) src: S,
}

impl<S: Fn(usize) -> usize> SourceRows for SparseSource<'_, S> {
    fn visit(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        let (idx, vals) = self.x.row((self.src)(r));
        for (&k, &v) in idx.iter().zip(vals) {
            f(k as usize, v);
        }
    }
}

impl Dots for DenseDots<'_> {
    fn entry_cost(&self) -> usize {
        self.d
    }
    #[inline]
    fn dot(&self, i: usize, j: usize) -> f64 {
        let mut s = 0.0;
        for k in 0..self.d {
            s += self.at(i, k) * self.at(j, k);
        }
        s
    }
    #[inline]
    fn block(&self, i: usize, lo: usize, out: &mut [f64]) {
        let d = self.d;
        let hi = lo + out.len();
        let pi = &self.panels[(i / PANEL) * PANEL * d..(i / PANEL + 1) * PANEL * d];
        let ri = i % PANEL;
        let mut p = lo / PANEL;
        let p_end = hi.div_ceil(PANEL);
        // Two panels per pass: twice the independent accumulators (the add latency, not the
        // arithmetic, bounds one panel), the same sequential sum over k for every entry.
        while p + 2 <= p_end {
            let two = &self.panels[p * PANEL * d..(p + 2) * PANEL * d];
            let (pa, pb) = two.split_at(PANEL * d);
            let mut acc = Line([0.0f64; PANEL]);
            let mut acc2 = Line([0.0f64; PANEL]);
            for ((xs, la), lb) in pi
                .chunks_exact(PANEL)
                .zip(pa.chunks_exact(PANEL))
                .zip(pb.chunks_exact(PANEL))
            {
                let xik = xs[ri];
                for r in 0..PANEL {
                    acc[r] += xik * la[r];
                    acc2[r] += xik * lb[r];
                }
            }
            store_panel(out, lo, hi, p, &acc);
            store_panel(out, lo, hi, p + 1, &acc2);
            p += 2;
        }
        if p < p_end {
            let panel = &self.panels[p * PANEL * d..(p + 1) * PANEL * d];
            let mut acc = Line([0.0f64; PANEL]);
            for (xs, lane) in pi.chunks_exact(PANEL).zip(panel.chunks_exact(PANEL)) {
                let xik = xs[ri];
                for r in 0..PANEL {
                    acc[r] += xik * lane[r];
                }
            }
            store_panel(out, lo, hi, p, &acc);
        }
    }
}

/// Writes the part of panel `p`'s results that falls in `[lo, hi)` to `out` (offset `lo`).
#[inline(always)]
fn store_panel(out: &mut [f64], lo: usize, hi: usize, p: usize, acc: &[f64; PANEL]) {
    let (a, b) = ((p * PANEL).max(lo), ((p + 1) * PANEL).min(hi));
    if b - a == PANEL {
        // Full panel: a fixed-size copy (no memcpy call).
        if let Ok(dst) = <&mut [f64; PANEL]>::try_from(&mut out[a - lo..b - lo]) {
            *dst = *acc;
        }
    } else {
        for r in a..b {
            out[r - lo] = acc[r - p * PANEL];
        }
    }
}

/// Source rows per micro-tile of [`PanelRows::add_weighted`]: `TILE_ROWS x PANEL` inner
/// products held in registers over the features (8 independent vector accumulators).
pub(super) const TILE_ROWS: usize = 4;
/// Source rows streamed past every panel of a range before the next ones (their features stay
/// in the L1 cache: 256 rows of 10 features are 20 KiB).
pub(super) const SOURCE_CHUNK_VALUES: usize = 2560;

impl DenseDots<'_> {
    /// `acc[r][c] = <src_r, x_{p PANEL + c}>` for the `TILE_ROWS` rows of `src` (row-major,
    /// `d` values each) and the rows of panel `p`: the sequential sum over the features, the
    /// same bits as [`Dots::dot`] and [`Dots::block`].
    #[inline(always)]
    pub(super) fn tile(&self, src: &[f64], p: usize, acc: &mut [[f64; PANEL]; TILE_ROWS]) {
        let d = self.d;
        let panel = &self.panels[p * PANEL * d..(p + 1) * PANEL * d];
        let (s0, rest) = src.split_at(d);
        let (s1, rest) = rest.split_at(d);
        let (s2, s3) = rest.split_at(d);
        for ((((lane, &x0), &x1), &x2), &x3) in panel
            .chunks_exact(PANEL)
            .zip(s0)
            .zip(s1)
            .zip(s2)
            .zip(&s3[..d])
        {
            for c in 0..PANEL {
                acc[0][c] += x0 * lane[c];
                acc[1][c] += x1 * lane[c];
                acc[2][c] += x2 * lane[c];
                acc[3][c] += x3 * lane[c];
            }
        }
    }

    /// [`Self::tile`] for one source row.
    #[inline(always)]
    pub(super) fn tile1(&self, src: &[f64], p: usize, acc: &mut [f64; PANEL]) {
        let d = self.d;
        let panel = &self.panels[p * PANEL * d..(p + 1) * PANEL * d];
        for (lane, &x) in panel.chunks_exact(PANEL).zip(&src[..d]) {
            for c in 0..PANEL {
                acc[c] += x * lane[c];
            }
        }
    }
}

/// Dense row storage that computes inner products in micro-tiles of [`TILE_ROWS`] source rows
/// times one panel of `W` stored rows ([`dense_many`]): the f64 panels ([`DenseDots`]) and the
/// exact integer ones ([`QuantPanels`]), each with the bits of its [`Dots`].
pub(super) trait Tiles<const W: usize>: Sync {
    /// One element of a source row in the tiles' form (a feature, or a pair of them).
    type Src: Copy + Send + Sync;
    /// Features per row.
    fn features(&self) -> usize;
    /// Elements per source row.
    fn src_len(&self) -> usize;
    /// Appends row `i` in the source form to `out`.
    fn push_src(&self, i: usize, out: &mut Vec<Self::Src>);
    /// Bytes of one stored row (sizes the blocks of rows that stay in the L2 cache).
    fn row_bytes(&self) -> usize;
    /// `acc[t][c]`: the inner product of source row `t` (`TILE_ROWS` rows of [`Self::src_len`]
    /// elements in `src`) with row `c` of panel `p`.
    fn tile(&self, src: &[Self::Src], p: usize, acc: &mut [[f64; W]; TILE_ROWS]);
    /// [`Self::tile`] for one source row.
    fn tile1(&self, src: &[Self::Src], p: usize, acc: &mut [f64; W]);
}

impl Tiles<PANEL> for DenseDots<'_> {
    type Src = f64;
    fn features(&self) -> usize {
        self.d
    }
    fn src_len(&self) -> usize {
        self.d
    }
    fn push_src(&self, i: usize, out: &mut Vec<f64>) {
        out.extend((0..self.d).map(|k| self.at(i, k)));
    }
    fn row_bytes(&self) -> usize {
        8 * self.d
    }
    #[inline(always)]
    fn tile(&self, src: &[f64], p: usize, acc: &mut [[f64; PANEL]; TILE_ROWS]) {
        *acc = [[0.0; PANEL]; TILE_ROWS];
        DenseDots::tile(self, src, p, acc);
    }
    #[inline]
    fn tile1(&self, src: &[f64], p: usize, acc: &mut [f64; PANEL]) {
        *acc = [0.0; PANEL];
        DenseDots::tile1(self, src, p, acc);
    }
}

/// Dense rows in the panel layout of the Q matrices ([`DenseDots`]) for weighted kernel sums
/// `out_j += sum_t w_t K(s_t, x_j)` over all rows `j` (kernel AID's start gradients and
/// decision values: `n x #sources` kernel values in one pass).
///
/// The sum runs over micro-tiles of [`TILE_ROWS`] source rows times one panel of [`PANEL`]
/// rows: the tile's inner products stay in registers over the features (a GEMM-like inner
/// loop: each loaded lane is used by four source rows), and the kernel's outer function (the
/// same [`Outer`] as the column fills, e.g. the branch-free RBF exponential) runs over the
/// panel's contiguous lanes. Every inner product is the sequential sum over the features, the
/// same bits as a column fill, and each `out_j` adds its terms in the order of the sources, so
/// the result does not depend on the tiling, the chunking or the thread count.
#[derive(Debug)]
pub(crate) struct PanelRows {
    panels: Aligned,
    n: usize,
    d: usize,
    norms: Vec<f64>,
    spec: KernelSpec,
}

/// Source rows of [`PanelRows::add_weighted`], gathered once: features row-major, squared
/// norms and weights.
#[derive(Debug, Default)]
pub(crate) struct PanelSources {
    x: Vec<f64>,
    norms: Vec<f64>,
    w: Vec<f64>,
}

impl PanelRows {
    /// Packs the rows of `x` (row-major `n x d` values) with their squared norms `norms` (the
    /// caller's: the RBF kernel uses `|u|^2 + |v|^2 - 2 u'v`).
    pub(crate) fn new(
        values: &[f64],
        n: usize,
        d: usize,
        norms: Vec<f64>,
        spec: KernelSpec,
    ) -> Self {
        debug_assert_eq!(values.len(), n * d);
        debug_assert_eq!(norms.len(), n);
        Self {
            panels: pack_panels(values, n, d, |r| r),
            n,
            d,
            norms,
            spec,
        }
    }

    /// The rows `rows` with weights `w` (all 1 when `None`) as sources of a sum.
    pub(crate) fn sources(&self, rows: &[u32], w: Option<&[f64]>) -> PanelSources {
        let dd = DenseDots {
            panels: &self.panels,
            d: self.d,
        };
        let mut x = Vec::with_capacity(rows.len() * self.d);
        for &r in rows {
            x.extend((0..self.d).map(|k| dd.at(r as usize, k)));
        }
        PanelSources {
            x,
            norms: rows.iter().map(|&r| self.norms[r as usize]).collect(),
            w: w.map_or_else(|| vec![1.0; rows.len()], <[f64]>::to_vec),
        }
    }

    /// `out[k] += sum_t w_t K(s_t, x_{lo + k})` (`t` ascending for every `k`); `lo` is a
    /// multiple of [`PANEL`] and `lo + out.len() <= n`.
    pub(crate) fn add_weighted(&self, src: &PanelSources, lo: usize, out: &mut [f64]) {
        debug_assert_eq!(lo % PANEL, 0);
        debug_assert!(lo + out.len() <= self.n);
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => self.add_with(&Identity, src, lo, out),
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => self.add_with(
                &PolyOuter {
                    gamma,
                    coef0,
                    degree,
                },
                src,
                lo,
                out,
            ),
            KernelSpec::Rbf { gamma } => self.add_with(&RbfOuter { gamma }, src, lo, out),
            KernelSpec::Sigmoid { gamma, coef0 } => {
                self.add_with(&SigmoidOuter { gamma, coef0 }, src, lo, out)
            }
        }
    }

    fn add_with<O: Outer>(&self, outer: &O, src: &PanelSources, lo: usize, out: &mut [f64]) {
        let d = self.d;
        let dd = DenseDots {
            panels: &self.panels,
            d,
        };
        let hi = lo + out.len();
        let nt = src.norms.len();
        let chunk = (SOURCE_CHUNK_VALUES / d.max(1)).max(TILE_ROWS);
        let mut c0 = 0;
        while c0 < nt {
            let c1 = (c0 + chunk).min(nt);
            for p in lo / PANEL..hi.div_ceil(PANEL) {
                let (a, b) = (p * PANEL, ((p + 1) * PANEL).min(hi));
                // Lanes past the last row: zero rows and norms (finite values, discarded).
                let mut nj = Line([0.0f64; PANEL]);
                nj[..b - a].copy_from_slice(&self.norms[a..b]);
                let mut o = Line([0.0f64; PANEL]);
                o[..b - a].copy_from_slice(&out[a - lo..b - lo]);
                let mut t = c0;
                while t + TILE_ROWS <= c1 {
                    let mut acc = Line([[0.0f64; PANEL]; TILE_ROWS]);
                    dd.tile(&src.x[t * d..(t + TILE_ROWS) * d], p, &mut acc);
                    for (r, v) in acc.iter_mut().enumerate() {
                        outer.apply(v, src.norms[t + r], &nj[..]);
                        let wt = src.w[t + r];
                        for (oc, &vc) in o.iter_mut().zip(v.iter()) {
                            *oc += wt * vc;
                        }
                    }
                    t += TILE_ROWS;
                }
                while t < c1 {
                    let mut v = Line([0.0f64; PANEL]);
                    dd.tile1(&src.x[t * d..(t + 1) * d], p, &mut v);
                    outer.apply(&mut v[..], src.norms[t], &nj[..]);
                    let wt = src.w[t];
                    for (oc, &vc) in o.iter_mut().zip(v.iter()) {
                        *oc += wt * vc;
                    }
                    t += 1;
                }
                out[a - lo..b - lo].copy_from_slice(&o[..b - a]);
            }
            c0 = c1;
        }
    }
}

struct SparseDots<'b> {
    x: &'b CsrMatrix,
    perm: &'b [u32],
}

impl Dots for SparseDots<'_> {
    fn entry_cost(&self) -> usize {
        // A merge of two rows of average length, with branches: about 4 per nonzero.
        4 * self.x.nnz() / self.x.n_rows().max(1) + 4
    }
    #[inline]
    fn dot(&self, i: usize, j: usize) -> f64 {
        let (ia, va) = self.x.row(self.perm[i] as usize);
        let (ib, vb) = self.x.row(self.perm[j] as usize);
        ops::sparse_dot(ia, va, ib, vb)
    }
}

/// Inner products of one row `i` whose values were scattered into `dense` (a zero vector of
/// the feature dimension but for row `i`'s entries) with other rows: a gather over row `j`'s
/// entries instead of a merge of two index lists (no data-dependent branches).
///
/// Bit-identical to [`ops::sparse_dot`]: both add the products of the common indices in
/// increasing index order to one accumulator starting at `+0.0`; the gather also adds the
/// products `0 * v` of `j`'s other entries, which are `+-0.0` (finite data) and leave the
/// accumulator unchanged (it is never `-0.0`: a sum is `-0.0` only if both terms are).
struct SparseGather<'b> {
    x: &'b CsrMatrix,
    perm: &'b [u32],
    dense: &'b [f64],
    /// The row scattered into `dense`.
    row: usize,
}

impl Dots for SparseGather<'_> {
    fn entry_cost(&self) -> usize {
        // One load and one multiply-add per entry of the other row.
        self.x.nnz() / self.x.n_rows().max(1) + 2
    }
    #[inline]
    fn dot(&self, i: usize, j: usize) -> f64 {
        SparseDots {
            x: self.x,
            perm: self.perm,
        }
        .dot(i, j)
    }
    #[inline]
    fn block(&self, i: usize, lo: usize, out: &mut [f64]) {
        if i != self.row {
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.dot(i, lo + k);
            }
            return;
        }
        for (o, &r) in out.iter_mut().zip(&self.perm[lo..]) {
            let (ib, vb) = self.x.row(r as usize);
            let mut s = 0.0;
            for (&k, &v) in ib.iter().zip(vb) {
                s += self.dense[k as usize] * v;
            }
            *o = s;
        }
    }
}

struct PreDots<'b> {
    x: &'b Features,
    serial: &'b [u32],
    perm: &'b [u32],
}

impl Dots for PreDots<'_> {
    fn entry_cost(&self) -> usize {
        2
    }
    #[inline]
    fn dot(&self, i: usize, j: usize) -> f64 {
        self.x
            .row(self.perm[i] as usize)
            .get(self.serial[j] as usize)
    }
    #[inline]
    fn block(&self, i: usize, lo: usize, out: &mut [f64]) {
        let row = self.x.row(self.perm[i] as usize);
        for (o, &sj) in out.iter_mut().zip(&self.serial[lo..]) {
            *o = row.get(sj as usize);
        }
    }
}

/// The kernel's outer function applied to a block of inner products, in place.
pub(super) trait Outer: Sync {
    /// Rough cost per entry, in multiply-adds.
    const COST: usize;
    fn apply(&self, dots: &mut [f64], ni: f64, nj: &[f64]);
}

pub(super) struct Identity;
impl Outer for Identity {
    const COST: usize = 1;
    #[inline]
    fn apply(&self, _: &mut [f64], _: f64, _: &[f64]) {}
}

pub(super) struct PolyOuter {
    pub(super) gamma: f64,
    pub(super) coef0: f64,
    pub(super) degree: u32,
}
impl Outer for PolyOuter {
    const COST: usize = 8;
    #[inline]
    fn apply(&self, dots: &mut [f64], _: f64, _: &[f64]) {
        for v in dots.iter_mut() {
            *v = powi(self.gamma * *v + self.coef0, self.degree);
        }
    }
}

pub(super) struct SigmoidOuter {
    pub(super) gamma: f64,
    pub(super) coef0: f64,
}
impl Outer for SigmoidOuter {
    const COST: usize = 40;
    #[inline]
    fn apply(&self, dots: &mut [f64], _: f64, _: &[f64]) {
        for v in dots.iter_mut() {
            *v = (self.gamma * *v + self.coef0).tanh();
        }
    }
}

pub(super) struct RbfOuter {
    pub(super) gamma: f64,
}
impl Outer for RbfOuter {
    const COST: usize = 24;
    #[inline]
    fn apply(&self, dots: &mut [f64], ni: f64, nj: &[f64]) {
        let g = self.gamma;
        for (v, &n) in dots.iter_mut().zip(nj) {
            // Clamp: rounding can make the squared distance slightly negative.
            let d2 = (ni + n - 2.0 * *v).max(0.0);
            *v = exp_nonpositive(-g * d2);
        }
    }
}

/// Whether [`exp_nonpositive`] takes fused multiply-adds: where the target has them (x86-64
/// built with FMA3, as `target-cpu=native` on any x86-64 CPU since about 2013; aarch64). A
/// build without them (e.g. `RUSTFLAGS=""` on x86-64) computes the same polynomial with separate
/// multiplies and adds, which a software `mul_add` would make several times slower there.
const FUSED_EXP: bool = cfg!(any(target_arch = "aarch64", target_feature = "fma"));

/// `exp(x)` for `x <= 0` without branches (vectorizable): `x = k ln2 + r`, `|r| <= ln2/2`,
/// a degree-13 Taylor polynomial for `exp(r)` (Estrin's scheme) and `2^k` built from its bits.
/// Relative error below 1e-15; arguments below -700 give about 1e-304 (0 in f32).
///
/// The multiply-adds are fused where the target has FMA ([`FUSED_EXP`]): a third fewer
/// operations. The two kinds of build can therefore differ in the last bit of a kernel value;
/// one build gives the same bits on every run, path and thread count.
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    exp_poly::<FUSED_EXP>(x)
}

/// `a b + c`, with one rounding when `FUSED`.
#[inline(always)]
fn madd<const FUSED: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FUSED {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// [`exp_nonpositive`] with fused (`FUSED`) or separate multiply-adds.
#[inline(always)]
#[allow(clippy::excessive_precision)]
fn exp_poly<const FUSED: bool>(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
    // 1.5 * 2^52: adding it rounds to an integer held in the low mantissa bits.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let m = madd::<FUSED>;
    let x = x.clamp(-700.0, 0.0);
    let t = m(x, LOG2E, SHIFT);
    let kbits = t.to_bits();
    let k = t - SHIFT;
    let r = m(-k, LN2_LO, m(-k, LN2_HI, x));
    // Estrin's scheme for sum_{k<=13} r^k / k!: a short dependency chain.
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let p01 = 1.0 + r;
    let p23 = m(r, 1.0 / 6.0, 0.5);
    let p45 = m(r, 1.0 / 120.0, 1.0 / 24.0);
    let p67 = m(r, 1.0 / 5_040.0, 1.0 / 720.0);
    let p89 = m(r, 1.0 / 362_880.0, 1.0 / 40_320.0);
    let p1011 = m(r, 1.0 / 39_916_800.0, 1.0 / 3_628_800.0);
    let p1213 = m(r, 1.0 / 6_227_020_800.0, 1.0 / 479_001_600.0);
    let q0 = m(r2, p23, p01);
    let q1 = m(r2, p67, p45);
    let q2 = m(r2, p1011, p89);
    let s0 = m(r4, q1, q0);
    let s1 = m(r4, p1213, q2);
    let p = m(r8, s1, s0);
    // The low 12 bits of kbits hold k (two's complement, |k| <= 1010); shifting them into the
    // exponent field gives 2^k.
    let scale = f64::from_bits(kbits.wrapping_add(1023) << 52);
    p * scale
}

/// Fills `out[start..]` (entries `start..start + out.len()` of column `i`): kernel values,
/// negated where `signs[i] != signs[j]`.
///
/// Parallel when the column's work (`out.len()` times the cost of one entry) exceeds
/// [`PAR_WORK`]: the column is cut into one task per [`PAR_TASK_WORK`] units (at most
/// `8 x threads` tasks, whole panels each). Short or cheap columns stay serial, where a
/// rayon dispatch would cost more than it saves.
fn fill_blocks<D: Dots, O: Outer>(
    dots: &D,
    outer: &O,
    norms: &[f64],
    signs: Option<&[i8]>,
    i: usize,
    out: &mut [f32],
    start: usize,
) {
    let ni = norms[i];
    // Entries `lo..lo + chunk.len()`, in sub-blocks of at most BLOCK (a stack buffer).
    let run = |lo0: usize, chunk: &mut [f32]| {
        let mut buf = Line([0.0f64; BLOCK]);
        for (b, part) in chunk.chunks_mut(BLOCK).enumerate() {
            let lo = lo0 + b * BLOCK;
            let buf = &mut buf[..part.len()];
            dots.block(i, lo, buf);
            outer.apply(buf, ni, &norms[lo..lo + part.len()]);
            match signs {
                Some(s) => {
                    let si = s[i];
                    for ((o, &v), &sj) in part.iter_mut().zip(buf.iter()).zip(&s[lo..]) {
                        let f = v as f32;
                        *o = if sj == si { f } else { -f };
                    }
                }
                None => {
                    for (o, &v) in part.iter_mut().zip(buf.iter()) {
                        *o = v as f32;
                    }
                }
            }
        }
    };
    let threads = rayon::current_num_threads();
    let work = out.len().saturating_mul(dots.entry_cost() + O::COST);
    if threads > 1 && work >= PAR_WORK {
        let tasks = (work / PAR_TASK_WORK).clamp(2, 8 * threads);
        let len = out.len().div_ceil(tasks).next_multiple_of(PANEL);
        out.par_chunks_mut(len)
            .enumerate()
            .for_each(|(t, c)| run(start + t * len, c));
    } else {
        run(start, out);
    }
}

/// Columns per task of [`dense_many`]: about `d / 4`, a multiple of [`TILE_ROWS`] between 16
/// and 64. A task reads its rows' features once for all of its columns, so wide rows want many
/// columns per pass (Fashion-MNIST, d = 784, where the rows do not fit in the caches); narrow
/// rows stay in the caches anyway, and fewer columns keep fewer output streams (blobs, d = 20:
/// 64 columns a task were slower than 16).
fn many_group(d: usize) -> usize {
    (d / 4).next_multiple_of(TILE_ROWS).clamp(16, 64)
}
/// Bytes of stored rows per block of [`dense_many`]: a block stays in the L2 cache while
/// every column of a task passes over it.
const MANY_BYTES: usize = 256 * 1024;
/// Rows per block of [`dense_many`] for panels of `w` rows of `row_bytes` each: [`MANY_BYTES`]
/// worth, whole panels, between 1 and 512 rows' worth of panels.
fn many_rows(w: usize, row_bytes: usize) -> usize {
    (MANY_BYTES / (w * row_bytes.max(1))).clamp(1, 512 / w) * w
}

/// Rows `a..b` of panel `p` (kernel values `v` of column `i`) into `o`, which starts at row
/// `base`: as f32, negated where `signs` differ from row `i`'s. Inlined into the column loop
/// (a call per panel would cost about as much as the conversion at small `d`).
#[inline(always)]
fn write_panel<const W: usize>(
    o: &mut [f32],
    base: usize,
    i: usize,
    (a, b): (usize, usize),
    p: usize,
    v: &[f64; W],
    signs: Option<&[i8]>,
) {
    // A full panel through fixed-size arrays, so that the conversion and the signs vectorize;
    // the same value for every entry as the general loop below.
    if let Ok(dst) = <&mut [f32; W]>::try_from(&mut o[a - base..b - base]) {
        match signs {
            Some(s) => {
                let (si, sg) = (s[i], &s[a..a + W]);
                for r in 0..W {
                    let f = v[r] as f32;
                    dst[r] = if sg[r] == si { f } else { -f };
                }
            }
            None => {
                for r in 0..W {
                    dst[r] = v[r] as f32;
                }
            }
        }
        return;
    }
    for r in a..b {
        let f = v[r - p * W] as f32;
        o[r - base] = match signs {
            Some(s) if s[r] != s[i] => -f,
            _ => f,
        };
    }
}

/// [`KernelRows::fill_many`] for dense rows in panels of `W` rows (`dd`) with the outer
/// function `outer`: rows `start..start + len` of the columns `idx`.
fn dense_many<const W: usize, D: Tiles<W>, O: Outer>(
    dd: &D,
    outer: &O,
    norms: &[f64],
    signs: Option<&[i8]>,
    idx: &[usize],
    out: &mut [&mut [f32]],
    start: usize,
) {
    let (d, m) = (dd.features(), dd.src_len());
    let n = norms.len();
    let len = out.first().map_or(0, |o| o.len());
    let end = start + len;
    let mut src = Vec::with_capacity(idx.len() * m);
    for &i in idx {
        dd.push_src(i, &mut src);
    }
    let (group, many_rows) = (many_group(d), many_rows(W, dd.row_bytes()));
    // Columns `t0..t0 + outs.len()` of `idx`, rows `base..base + outs[0].len()`.
    let task = |t0: usize, base: usize, outs: &mut [&mut [f32]]| {
        let end = base + outs.first().map_or(0, |o| o.len());
        let mut lo = base;
        while lo < end {
            // Blocks end on panel boundaries, so that no panel is computed twice.
            let hi = (lo / W * W + many_rows).min(end);
            for p in lo / W..hi.div_ceil(W) {
                let (a, b) = ((p * W).max(lo), ((p + 1) * W).min(hi));
                // Lanes past the last row: zero norms (finite values, discarded).
                let mut nj = Line([0.0f64; W]);
                let e = ((p + 1) * W).min(n);
                nj[..e - p * W].copy_from_slice(&norms[p * W..e]);
                let mut t = 0;
                while t + TILE_ROWS <= outs.len() {
                    let mut acc = Line([[0.0f64; W]; TILE_ROWS]);
                    dd.tile(&src[(t0 + t) * m..(t0 + t + TILE_ROWS) * m], p, &mut acc);
                    for (r, v) in acc.iter_mut().enumerate() {
                        let i = idx[t0 + t + r];
                        outer.apply(v, norms[i], &nj[..]);
                        write_panel(outs[t + r], base, i, (a, b), p, v, signs);
                    }
                    t += TILE_ROWS;
                }
                while t < outs.len() {
                    let mut v = Line([0.0f64; W]);
                    dd.tile1(&src[(t0 + t) * m..(t0 + t + 1) * m], p, &mut v);
                    let i = idx[t0 + t];
                    outer.apply(&mut v[..], norms[i], &nj[..]);
                    write_panel(outs[t], base, i, (a, b), p, &v, signs);
                    t += 1;
                }
            }
            lo = hi;
        }
    };
    let threads = rayon::current_num_threads();
    let work = len.saturating_mul(idx.len()).saturating_mul(d + O::COST);
    if threads > 1 && work >= PAR_WORK {
        // Tasks of `group` columns times a range of rows (cut on panel boundaries), enough of
        // them to share the work however few columns are asked for.
        let groups = idx.len().div_ceil(group);
        let want = (work / PAR_TASK_WORK).clamp(2, 8 * threads);
        let parts = want.div_ceil(groups).min(len.div_ceil(W)).max(1);
        let step = len.div_ceil(parts).next_multiple_of(W);
        let first = start / W * W;
        let cut = |c: usize| (first + c * step).clamp(start, end);
        let mut tasks: Vec<(usize, usize, Vec<&mut [f32]>)> = Vec::new();
        for (g, outs) in out.chunks_mut(group).enumerate() {
            let mut cols: Vec<Vec<&mut [f32]>> = (0..=parts)
                .map(|_| Vec::with_capacity(outs.len()))
                .collect();
            for o in outs.iter_mut() {
                let mut rest: &mut [f32] = o;
                for (c, col) in cols.iter_mut().enumerate() {
                    let (lo, hi) = (cut(c), cut(c + 1));
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(hi - lo);
                    col.push(head);
                    rest = tail;
                }
            }
            for (c, col) in cols.into_iter().enumerate() {
                if cut(c) < cut(c + 1) {
                    tasks.push((g * group, cut(c), col));
                }
            }
        }
        // One task per rayon job: left to rayon's adaptive splitting, a thread could be handed
        // a quarter of the tasks in one piece and the other wait for it at the end of the call.
        tasks
            .into_par_iter()
            .with_max_len(1)
            .for_each(|(t0, base, mut outs)| task(t0, base, &mut outs));
    } else {
        for (g, outs) in out.chunks_mut(group).enumerate() {
            task(g * group, start, outs);
        }
    }
}

impl<'a> KernelRows<'a> {
    /// The rows `sel` of `x` in that order (all rows when `None`), read in place: the dense
    /// layout packs them straight from `x`, the sparse and precomputed ones index `x` through
    /// their permutation, so a subproblem (a class pair) needs no copy of its rows first.
    fn new(x: &'a Features, sel: Option<&[usize]>, spec: KernelSpec) -> Result<Self, DataError> {
        let n = sel.map_or(x.n_rows(), <[usize]>::len);
        if let Some(bad) = sel.and_then(|s| s.iter().find(|&&r| r >= x.n_rows())) {
            return Err(DataError::Shape {
                what: "selected rows",
                expected: x.n_rows(),
                found: *bad,
            });
        }
        let src = |r: usize| sel.map_or(r, |s| s[r]);
        let rows = match (spec, x) {
            (KernelSpec::Precomputed, _) => {
                let mut serial = Vec::with_capacity(n);
                for r in 0..n {
                    let s = x.row(src(r)).get(0);
                    // The serial names a column of the kernel rows; it refers to the original
                    // training set, so a subset (a CV fold, a class pair) keeps serials up to the
                    // row width rather than up to its own size.
                    if !(s.fract() == 0.0 && s >= 1.0 && s < x.n_cols() as f64) {
                        return Err(DataError::Precomputed {
                            row: r,
                            reason: "the serial number (index 0) must be an integer naming a column of the kernel row",
                        });
                    }
                    serial.push(s as u32);
                }
                Rows::Pre {
                    x,
                    serial,
                    perm: (0..n).map(|r| src(r) as u32).collect(),
                }
            }
            (_, Features::Dense(m)) => match QuantPanels::new(m.values(), n, m.n_cols(), src) {
                Some(q) => Rows::Quant(q),
                None => Rows::Dense {
                    panels: pack_panels(m.values(), n, m.n_cols(), src),
                    d: m.n_cols(),
                },
            },
            (_, Features::Sparse(m)) => match QuantPanels::from_sparse(m, n, src) {
                Some(q) => Rows::Quant(q),
                // The f64 panels where they take at most twice the memory of the sparse rows
                // (8 bytes a feature against 12 a stored value: at least a third stored); the
                // sparse products are the same bits, but one column at a time.
                None if 8 * (m.n_rows() as u128) * (m.n_cols() as u128) <= 24 * m.nnz() as u128 => {
                    Rows::Dense {
                        panels: pack_panels_from(&SparseSource { x: m, src }, n, m.n_cols()),
                        d: m.n_cols(),
                    }
                }
                None => Rows::Sparse {
                    x: m,
                    perm: (0..n).map(|r| src(r) as u32).collect(),
                    // One dense row costs 8 bytes per feature: used when that is at most 8 bytes
                    // per stored nonzero (the CSR data itself holds 12), so it never dominates.
                    dense: if m.n_cols() <= m.nnz() {
                        vec![0.0; m.n_cols()]
                    } else {
                        Vec::new()
                    },
                },
            },
        };
        let mut kr = Self {
            rows,
            norms: Vec::new(),
            spec,
        };
        // Norms through the same summation as the inner products, so that the squared
        // distance of a row to itself is exactly 0.
        kr.norms = (0..n)
            .map(|r| match &kr.rows {
                Rows::Dense { panels, d } => DenseDots { panels, d: *d }.dot(r, r),
                Rows::Quant(q) => q.dot(r, r),
                Rows::Sparse { x, perm, .. } => SparseDots { x, perm }.dot(r, r),
                Rows::Pre { .. } => 0.0,
            })
            .collect();
        Ok(kr)
    }

    fn n(&self) -> usize {
        self.norms.len()
    }

    /// Bytes held by this copy of the rows: charged to the cache budget, so that `-m` bounds
    /// everything the Q matrix holds beyond the caller's data.
    fn heap_bytes(&self) -> u64 {
        let rows = match &self.rows {
            Rows::Dense { panels, .. } => 8 * panels.len(),
            Rows::Quant(q) => q.heap_bytes(),
            Rows::Sparse { perm, dense, .. } => 4 * perm.len() + 8 * dense.len(),
            Rows::Pre { serial, perm, .. } => 4 * (serial.len() + perm.len()),
        };
        (rows + 16 * self.norms.len()) as u64
    }

    /// Entries `start..start + out.len()` of column `i`. Sparse rows with a dense buffer:
    /// row `i` is scattered into it once, each entry is then a gather over the other row's
    /// entries ([`SparseGather`], the same bits as the merge), and the buffer is zeroed again
    /// at row `i`'s indices only.
    fn fill(&mut self, i: usize, out: &mut [f32], start: usize, signs: Option<&[i8]>) {
        let buf = match &mut self.rows {
            Rows::Sparse { dense, .. } if !dense.is_empty() => Some(std::mem::take(dense)),
            _ => None,
        };
        if let Some(mut buf) = buf {
            if let Rows::Sparse { x, perm, .. } = &self.rows {
                let (ia, va) = x.row(perm[i] as usize);
                for (&k, &v) in ia.iter().zip(va) {
                    buf[k as usize] = v;
                }
                let g = SparseGather {
                    x,
                    perm,
                    dense: &buf,
                    row: i,
                };
                self.with_outer(&g, i, out, start, signs);
                for &k in ia {
                    buf[k as usize] = 0.0;
                }
            }
            if let Rows::Sparse { dense, .. } = &mut self.rows {
                *dense = buf;
            }
            return;
        }
        match &self.rows {
            Rows::Dense { panels, d } => {
                self.with_outer(&DenseDots { panels, d: *d }, i, out, start, signs)
            }
            Rows::Quant(q) => self.with_outer(q, i, out, start, signs),
            Rows::Sparse { x, perm, .. } => {
                self.with_outer(&SparseDots { x, perm }, i, out, start, signs)
            }
            Rows::Pre { x, serial, perm } => fill_blocks(
                &PreDots { x, serial, perm },
                &Identity,
                &self.norms,
                signs,
                i,
                out,
                start,
            ),
        }
    }

    /// Columns `idx` (entries `start..start + len`, `len` the length of every `out[k]`) into
    /// `out`. Dense rows (f64 or integer panels): micro-tiles of [`TILE_ROWS`] columns times
    /// one panel ([`Tiles::tile`], the same bits as [`Dots::block`]) over blocks of rows, so
    /// that a loaded panel serves all the columns of a task; in parallel over groups of columns
    /// (independent outputs). Other row storage: one column at a time ([`KernelRows::fill`]).
    fn fill_many(
        &mut self,
        idx: &[usize],
        out: &mut [&mut [f32]],
        start: usize,
        signs: Option<&[i8]>,
    ) {
        match &self.rows {
            Rows::Dense { panels, d } => {
                return self.many_with(&DenseDots { panels, d: *d }, idx, out, start, signs);
            }
            Rows::Quant(q) => return self.many_with(q, idx, out, start, signs),
            Rows::Sparse { .. } | Rows::Pre { .. } => {}
        }
        for (&i, o) in idx.iter().zip(out.iter_mut()) {
            self.fill(i, o, start, signs);
        }
    }

    /// [`KernelRows::fill_many`] over the tiles `dd`, with this kernel's outer function.
    fn many_with<const W: usize, D: Tiles<W>>(
        &self,
        dd: &D,
        idx: &[usize],
        out: &mut [&mut [f32]],
        start: usize,
        signs: Option<&[i8]>,
    ) {
        let nm = &self.norms;
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => {
                dense_many(dd, &Identity, nm, signs, idx, out, start)
            }
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => dense_many(
                dd,
                &PolyOuter {
                    gamma,
                    coef0,
                    degree,
                },
                nm,
                signs,
                idx,
                out,
                start,
            ),
            KernelSpec::Rbf { gamma } => {
                dense_many(dd, &RbfOuter { gamma }, nm, signs, idx, out, start)
            }
            KernelSpec::Sigmoid { gamma, coef0 } => dense_many(
                dd,
                &SigmoidOuter { gamma, coef0 },
                nm,
                signs,
                idx,
                out,
                start,
            ),
        }
    }

    fn with_outer<D: Dots>(
        &self,
        d: &D,
        i: usize,
        out: &mut [f32],
        start: usize,
        s: Option<&[i8]>,
    ) {
        let nm = &self.norms;
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => {
                fill_blocks(d, &Identity, nm, s, i, out, start)
            }
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => fill_blocks(
                d,
                &PolyOuter {
                    gamma,
                    coef0,
                    degree,
                },
                nm,
                s,
                i,
                out,
                start,
            ),
            KernelSpec::Rbf { gamma } => fill_blocks(d, &RbfOuter { gamma }, nm, s, i, out, start),
            KernelSpec::Sigmoid { gamma, coef0 } => {
                fill_blocks(d, &SigmoidOuter { gamma, coef0 }, nm, s, i, out, start)
            }
        }
    }

    /// Entries `start..start + out.len()` of the kernel column (no signs) of a row held by
    /// another process ([`WireRow`]) over these rows, with the arithmetic of
    /// [`KernelRows::fill`]: dense panels take the sequential sum over the features
    /// ([`DenseDots::tile1`], the bits of [`Dots::block`]), sparse rows the merge of
    /// [`ops::sparse_dot`] with the sent row first (the bits of [`SparseDots`] and
    /// [`SparseGather`]). A row stored the other way is converted first.
    fn fill_wire(&self, row: WireRow<'_>, out: &mut [f32], start: usize) {
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => {
                self.wire_with(&Identity, row, out, start)
            }
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => self.wire_with(
                &PolyOuter {
                    gamma,
                    coef0,
                    degree,
                },
                row,
                out,
                start,
            ),
            KernelSpec::Rbf { gamma } => self.wire_with(&RbfOuter { gamma }, row, out, start),
            KernelSpec::Sigmoid { gamma, coef0 } => {
                self.wire_with(&SigmoidOuter { gamma, coef0 }, row, out, start)
            }
        }
    }

    fn wire_with<O: Outer>(&self, outer: &O, row: WireRow<'_>, out: &mut [f32], start: usize) {
        // The sent row in the local storage's form.
        let (mut dense, mut idx, mut val) = (Vec::new(), Vec::new(), Vec::new());
        let d_dense = match &self.rows {
            Rows::Dense { d, .. } => Some(*d),
            Rows::Quant(q) => Some(q.d()),
            Rows::Sparse { .. } | Rows::Pre { .. } => None,
        };
        match d_dense {
            Some(d) => {
                dense = vec![0.0; d];
                if row.dense {
                    let m = row.data.len().min(d);
                    dense[..m].copy_from_slice(&row.data[..m]);
                } else {
                    let nnz = row.data.len() / 2;
                    for (&c, &v) in row.data[..nnz].iter().zip(&row.data[nnz..2 * nnz]) {
                        if let Some(slot) = dense.get_mut(c as usize) {
                            *slot = v;
                        }
                    }
                }
            }
            None => {
                if row.dense {
                    for (c, &v) in row.data.iter().enumerate() {
                        if v != 0.0 {
                            idx.push(c as u32);
                            val.push(v);
                        }
                    }
                } else {
                    let nnz = row.data.len() / 2;
                    idx = row.data[..nnz].iter().map(|&c| c as u32).collect();
                    val = row.data[nnz..2 * nnz].to_vec();
                }
            }
        }
        // On the integer rows, the sent row's integers on their scale (a row of the same data
        // set is on it); otherwise the f64 sum over the rows' values, the same bits.
        let pairs = match &self.rows {
            Rows::Quant(q) => q.pairs_of(&dense),
            _ => None,
        };
        let norms = &self.norms;
        let run = |lo0: usize, chunk: &mut [f32]| {
            let mut buf = Line([0.0f64; BLOCK]);
            for (b, part) in chunk.chunks_mut(BLOCK).enumerate() {
                let lo = lo0 + b * BLOCK;
                let hi = lo + part.len();
                let buf = &mut buf[..part.len()];
                match &self.rows {
                    Rows::Dense { panels, d } => {
                        let dd = DenseDots { panels, d: *d };
                        for p in lo / PANEL..hi.div_ceil(PANEL) {
                            let mut acc = Line([0.0f64; PANEL]);
                            dd.tile1(&dense, p, &mut acc);
                            store_panel(buf, lo, hi, p, &acc);
                        }
                    }
                    Rows::Quant(q) => match &pairs {
                        Some(pairs) => {
                            for p in lo / QPANEL..hi.div_ceil(QPANEL) {
                                let mut v = Line([0.0f64; QPANEL]);
                                q.tile1_pairs(pairs, p, &mut v);
                                let (a, b) = ((p * QPANEL).max(lo), ((p + 1) * QPANEL).min(hi));
                                buf[a - lo..b - lo]
                                    .copy_from_slice(&v[a - p * QPANEL..b - p * QPANEL]);
                            }
                        }
                        None => {
                            for (o, r) in buf.iter_mut().zip(lo..hi) {
                                *o = (0..q.d()).fold(0.0, |s, k| s + dense[k] * q.value(r, k));
                            }
                        }
                    },
                    Rows::Sparse { x, perm, .. } => {
                        for (o, &r) in buf.iter_mut().zip(&perm[lo..hi]) {
                            let (ib, vb) = x.row(r as usize);
                            *o = ops::sparse_dot(&idx, &val, ib, vb);
                        }
                    }
                    // Refused by `ShardQ::new`.
                    Rows::Pre { .. } => buf.fill(0.0),
                }
                outer.apply(buf, row.norm, &norms[lo..hi]);
                for (o, &v) in part.iter_mut().zip(buf.iter()) {
                    *o = v as f32;
                }
            }
        };
        let cost = match &self.rows {
            Rows::Dense { d, .. } => *d,
            Rows::Quant(q) => q.entry_cost(),
            Rows::Sparse { x, .. } => 4 * x.nnz() / x.n_rows().max(1) + 4,
            Rows::Pre { .. } => 2,
        };
        let threads = rayon::current_num_threads();
        let work = out.len().saturating_mul(cost + O::COST);
        if threads > 1 && work >= PAR_WORK {
            let tasks = (work / PAR_TASK_WORK).clamp(2, 8 * threads);
            let len = out.len().div_ceil(tasks).next_multiple_of(PANEL);
            out.par_chunks_mut(len)
                .enumerate()
                .for_each(|(t, c)| run(start + t * len, c));
        } else {
            run(start, out);
        }
    }

    /// `K(i, i)` in f64, through the same code path as the columns.
    fn self_value(&self, i: usize) -> f64 {
        let mut v = [match &self.rows {
            Rows::Dense { panels, d } => DenseDots { panels, d: *d }.dot(i, i),
            Rows::Quant(q) => q.dot(i, i),
            Rows::Sparse { x, perm, .. } => SparseDots { x, perm }.dot(i, i),
            Rows::Pre { x, serial, perm } => PreDots { x, serial, perm }.dot(i, i),
        }];
        let ni = self.norms[i];
        let nj = [ni];
        match self.spec {
            KernelSpec::Linear | KernelSpec::Precomputed => {}
            KernelSpec::Poly {
                gamma,
                coef0,
                degree,
            } => PolyOuter {
                gamma,
                coef0,
                degree,
            }
            .apply(&mut v, ni, &nj),
            KernelSpec::Rbf { gamma } => RbfOuter { gamma }.apply(&mut v, ni, &nj),
            KernelSpec::Sigmoid { gamma, coef0 } => {
                SigmoidOuter { gamma, coef0 }.apply(&mut v, ni, &nj)
            }
        }
        v[0]
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.norms.swap(i, j);
        match &mut self.rows {
            Rows::Dense { panels, d } => {
                if i != j {
                    let d = *d;
                    let (bi, bj) = (
                        (i / PANEL) * PANEL * d + i % PANEL,
                        (j / PANEL) * PANEL * d + j % PANEL,
                    );
                    for k in 0..d {
                        panels.swap(bi + k * PANEL, bj + k * PANEL);
                    }
                }
            }
            Rows::Quant(q) => q.swap(i, j),
            Rows::Sparse { perm, .. } => perm.swap(i, j),
            Rows::Pre { perm, serial, .. } => {
                perm.swap(i, j);
                serial.swap(i, j);
            }
        }
    }
}

/// `Q_ij = y_i y_j K(x_i, x_j)` with an LRU column cache.
#[derive(Debug)]
pub struct SvcQ<'a> {
    rows: KernelRows<'a>,
    /// Labels in the solver's order; `None` for the one-class matrix (all +1, no sign flips).
    y: Option<Vec<i8>>,
    cache: ColumnCache,
    diag: Vec<f64>,
    /// Columns asked of [`QMatrix::columns_into`], and those the cache served.
    many: ManyRequests,
}

/// The cache's use to [`QMatrix::columns_into`] (a working-set engine). Copying a computed
/// column into the cache costs about a tenth of computing it; a working set that rarely comes
/// back to a column within the cache's capacity (large `n`: a few hundred columns fit) would pay
/// that copy for nothing. After [`Self::WARMUP`] requests, computed columns are stored only while
/// at least one request in [`Self::MIN_HIT_SHARE`] was a hit. Values never depend on it: a hit
/// returns the bits a computation gives.
#[derive(Debug, Default, Clone, Copy)]
struct ManyRequests {
    requests: u64,
    hits: u64,
}

impl ManyRequests {
    /// Requests before the hit rate decides (four full working sets).
    const WARMUP: u64 = 4096;
    /// Store while `hits * MIN_HIT_SHARE >= requests`.
    const MIN_HIT_SHARE: u64 = 16;

    fn store(&self) -> bool {
        self.requests < Self::WARMUP || self.hits * Self::MIN_HIT_SHARE >= self.requests
    }
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), DataError> {
    if expected == found {
        Ok(())
    } else {
        Err(DataError::Shape {
            what,
            expected,
            found,
        })
    }
}

impl<'a> SvcQ<'a> {
    /// The C-SVC matrix for features `x`, labels `y` in {-1, +1} and a cache of `cache_bytes`
    /// (which also pays for the matrix's own copy of the rows).
    ///
    /// # Errors
    /// [`DataError::Shape`] if `y` has the wrong length, [`DataError::Precomputed`] for bad
    /// serial numbers with a precomputed kernel.
    pub fn new(
        x: &'a Features,
        kernel: KernelSpec,
        y: &[i8],
        cache_bytes: usize,
    ) -> Result<Self, DataError> {
        Self::with_rows(x, None, kernel, y, cache_bytes)
    }

    /// [`SvcQ::new`] over the rows `rows` of `x`, in that order (all rows when `None`), without
    /// a copy of those rows beyond the matrix's own (a class pair of a multi-class fit, or the
    /// class-grouped order of a binary one, is read in place).
    ///
    /// # Errors
    /// As [`SvcQ::new`]; [`DataError::Shape`] for a row index out of range.
    pub fn with_rows(
        x: &'a Features,
        rows: Option<&[usize]>,
        kernel: KernelSpec,
        y: &[i8],
        cache_bytes: usize,
    ) -> Result<Self, DataError> {
        check_len("labels", rows.map_or(x.n_rows(), <[usize]>::len), y.len())?;
        let y = y.iter().map(|&v| if v > 0 { 1 } else { -1 }).collect();
        Self::build(x, rows, kernel, Some(y), cache_bytes)
    }

    fn build(
        x: &'a Features,
        sel: Option<&[usize]>,
        kernel: KernelSpec,
        y: Option<Vec<i8>>,
        cache_bytes: usize,
    ) -> Result<Self, DataError> {
        let rows = KernelRows::new(x, sel, kernel)?;
        let n = rows.n();
        let diag = (0..n).map(|i| rows.self_value(i)).collect();
        let budget = (cache_bytes as u64)
            .saturating_sub(rows.heap_bytes() + ColumnCache::<f32>::overhead_bytes(n));
        Ok(Self {
            rows,
            y,
            cache: ColumnCache::new(n, budget),
            diag,
            many: ManyRequests::default(),
        })
    }
}

impl QMatrix for SvcQ<'_> {
    fn n(&self) -> usize {
        self.diag.len()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        let (col, valid) = self.cache.request(i, len, None);
        if valid < len {
            self.rows
                .fill(i, &mut col[valid..], valid, self.y.as_deref());
        }
        col
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        let (col, valid) = self.cache.request(i, len, None);
        if valid < len {
            self.rows
                .fill(i, &mut col[valid..], valid, self.y.as_deref());
        }
        let (col, valid) = self.cache.request(j, len, Some(i));
        if valid < len {
            self.rows
                .fill(j, &mut col[valid..], valid, self.y.as_deref());
        }
        (self.cache.get(i, len), self.cache.get(j, len))
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.rows.swap(i, j);
        if let Some(y) = &mut self.y {
            y.swap(i, j);
        }
        self.diag.swap(i, j);
        self.cache.swap_index(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
    fn column_part(&mut self, i: usize, lo: usize, out: &mut [f32]) {
        self.rows.fill(i, out, lo, self.y.as_deref());
    }
    fn columns_part(&mut self, idx: &[usize], lo: usize, out: &mut [&mut [f32]]) {
        self.rows.fill_many(idx, out, lo, self.y.as_deref());
    }
    fn columns_into(&mut self, idx: &[usize], len: usize, out: &mut [&mut [f32]]) {
        let mut miss_idx = Vec::new();
        let mut miss_out: Vec<&mut [f32]> = Vec::new();
        for (&i, o) in idx.iter().zip(out.iter_mut()) {
            if self.cache.has(i, len) {
                o.copy_from_slice(self.cache.request(i, len, None).0);
            } else {
                miss_idx.push(i);
                miss_out.push(&mut **o);
            }
        }
        let store = self.many.store();
        self.many.requests += idx.len() as u64;
        self.many.hits += (idx.len() - miss_idx.len()) as u64;
        if miss_idx.is_empty() {
            return;
        }
        self.rows
            .fill_many(&miss_idx, &mut miss_out, 0, self.y.as_deref());
        // Into the cache as well while working sets come back to its columns.
        for (&i, o) in miss_idx.iter().zip(&miss_out) {
            if store {
                let (col, _) = self.cache.request(i, len, None);
                col.copy_from_slice(o);
            } else {
                self.cache.count_uncached();
            }
        }
    }
}

/// `Q_ij = K(x_i, x_j)` with an LRU column cache (one-class SVM): the C-SVC matrix without
/// labels.
#[derive(Debug)]
pub struct OneClassQ<'a>(SvcQ<'a>);

impl<'a> OneClassQ<'a> {
    /// The kernel matrix of `x` with a cache of `cache_bytes` (rows copy included).
    ///
    /// # Errors
    /// [`DataError::Precomputed`] for bad serial numbers with a precomputed kernel.
    pub fn new(x: &'a Features, kernel: KernelSpec, cache_bytes: usize) -> Result<Self, DataError> {
        SvcQ::build(x, None, kernel, None, cache_bytes).map(Self)
    }
}

impl QMatrix for OneClassQ<'_> {
    fn n(&self) -> usize {
        self.0.n()
    }
    fn diag(&self) -> &[f64] {
        self.0.diag()
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        self.0.column(i, len)
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        self.0.pair(i, j, len)
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.0.swap_index(i, j)
    }
    fn cache_stats(&self) -> CacheStats {
        self.0.cache_stats()
    }
    fn columns_into(&mut self, idx: &[usize], len: usize, out: &mut [&mut [f32]]) {
        self.0.columns_into(idx, len, out)
    }
    fn column_part(&mut self, i: usize, lo: usize, out: &mut [f32]) {
        self.0.column_part(i, lo, out)
    }
    fn columns_part(&mut self, idx: &[usize], lo: usize, out: &mut [&mut [f32]]) {
        self.0.columns_part(idx, lo, out)
    }
}

/// Per-sample kernel columns, the source a [`Doubled`] view expands: column `j` holds
/// `K(x_i, x_j)` for the samples `i` in their original order (at least
/// [`SampleColumns::samples`] entries), in whatever float its cache stores.
pub(crate) trait SampleColumns {
    /// The stored float.
    type Float: CacheFloat;
    /// Number of samples `l`.
    fn samples(&self) -> usize;
    /// Column `j` of the kernel matrix over the samples, in the original order.
    fn sample_column(&mut self, j: usize) -> &[Self::Float];
    /// Cache hits and misses so far.
    fn stats(&self) -> CacheStats;
}

/// The doubled matrix of a problem over `beta = a+ - a-` (epsilon-SVR and nu-SVR's
/// `alpha - alpha*`, the robust SVMs' two-sided box): `2l` variables over `l` samples.
/// Variable `k` has sign `+1` and sample `k` for `k < l`, sign `-1` and sample `k - l`
/// otherwise (before any swap); `Q_ab = s_a s_b K(x_a, x_b)`, so that
/// `1/2 beta' K beta = 1/2 v' Q v`. Kernel columns are read per sample (full length `l`) and
/// expanded into two rotating f32 buffers, so a pair stays valid.
#[derive(Debug)]
pub(crate) struct Doubled<C> {
    cols: C,
    sign: Vec<i8>,
    index: Vec<u32>,
    diag: Vec<f64>,
    buf: [Vec<f32>; 2],
}

impl<C: SampleColumns> Doubled<C> {
    /// The doubled view of `cols`, whose kernel diagonal is `kdiag` (`l` entries).
    pub(crate) fn new(cols: C, kdiag: &[f64]) -> Self {
        let l = cols.samples();
        debug_assert_eq!(kdiag.len(), l);
        let mut diag = kdiag.to_vec();
        diag.extend_from_slice(kdiag);
        let mut sign = vec![1i8; l];
        sign.extend(std::iter::repeat_n(-1i8, l));
        Self {
            cols,
            sign,
            index: (0..l as u32).chain(0..l as u32).collect(),
            diag,
            buf: [vec![0.0; 2 * l], vec![0.0; 2 * l]],
        }
    }

    /// Bytes of the two expanded columns (charged to a cache budget).
    pub(crate) fn buffer_bytes(l: usize) -> u64 {
        16 * l as u64
    }

    fn expand(&mut self, which: usize, i: usize, len: usize) {
        let real = self.index[i] as usize;
        let si = self.sign[i];
        let col = self.cols.sample_column(real);
        let buf = &mut self.buf[which][..len];
        for ((o, &sj), &ix) in buf.iter_mut().zip(&self.sign).zip(&self.index) {
            let v = col[ix as usize].to_f32();
            *o = if sj == si { v } else { -v };
        }
    }
}

impl<C: SampleColumns> QMatrix for Doubled<C> {
    fn n(&self) -> usize {
        self.diag.len()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        self.expand(0, i, len);
        &self.buf[0][..len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        self.expand(0, i, len);
        self.expand(1, j, len);
        (&self.buf[0][..len], &self.buf[1][..len])
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.sign.swap(i, j);
        self.index.swap(i, j);
        self.diag.swap(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        self.cols.stats()
    }
}

/// The kernel columns of [`SvrQ`]: the rows and an f32 column cache over them.
#[derive(Debug)]
pub(crate) struct SvrColumns<'a> {
    rows: KernelRows<'a>,
    cache: ColumnCache,
}

impl SampleColumns for SvrColumns<'_> {
    type Float = f32;
    fn samples(&self) -> usize {
        self.rows.n()
    }
    fn sample_column(&mut self, j: usize) -> &[f32] {
        let l = self.rows.n();
        let (col, valid) = self.cache.request(j, l, None);
        if valid < l {
            self.rows.fill(j, &mut col[valid..], valid, None);
        }
        col
    }
    fn stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// The epsilon-SVR / nu-SVR matrix: the [`Doubled`] view of the kernel over `l` samples.
#[derive(Debug)]
pub struct SvrQ<'a>(Doubled<SvrColumns<'a>>);

impl<'a> SvrQ<'a> {
    /// The SVR matrix for the `l` samples of `x` with a cache of `cache_bytes` (rows copy and
    /// expansion buffers included).
    ///
    /// # Errors
    /// [`DataError::Precomputed`] for bad serial numbers with a precomputed kernel.
    pub fn new(x: &'a Features, kernel: KernelSpec, cache_bytes: usize) -> Result<Self, DataError> {
        let rows = KernelRows::new(x, None, kernel)?;
        let l = rows.n();
        let kd: Vec<f64> = (0..l).map(|i| rows.self_value(i)).collect();
        let budget = (cache_bytes as u64).saturating_sub(
            rows.heap_bytes()
                + Doubled::<SvrColumns<'a>>::buffer_bytes(l)
                + ColumnCache::<f32>::overhead_bytes(l),
        );
        let cols = SvrColumns {
            rows,
            cache: ColumnCache::new(l, budget),
        };
        Ok(Self(Doubled::new(cols, &kd)))
    }
}

impl QMatrix for SvrQ<'_> {
    fn n(&self) -> usize {
        self.0.n()
    }
    fn diag(&self) -> &[f64] {
        self.0.diag()
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        self.0.column(i, len)
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        self.0.pair(i, j, len)
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        self.0.swap_index(i, j)
    }
    fn cache_stats(&self) -> CacheStats {
        self.0.cache_stats()
    }
}

/// A row sent between processes: the features of one sample, as
/// [`ShardQ::wire_row`] writes it (dense: the `d` values; sparse: the indices, as exact `f64`,
/// then the values), with its squared norm as the owner computes it.
#[derive(Debug, Clone, Copy)]
pub struct WireRow<'a> {
    /// Dense (the values) or sparse (indices then values, `2 nnz` entries).
    pub dense: bool,
    /// The encoded row.
    pub data: &'a [f64],
    /// Squared norm through the same summation as the kernel's inner products.
    pub norm: f64,
}

/// The slice of `Q` over this process's samples of a problem whose samples are split across
/// processes (row-partitioned SMO, [`crate::solver::smo::shard`]): the columns of *every*
/// variable of the whole problem restricted to the local variables, `Q_ab = s_a s_b K(x_a, x_b)`.
///
/// Each local variable has a local sample and a sign (C-SVC: the label; one-class: +1; SVR: two
/// variables per sample, +1 and -1). The kernel columns are cached per *global* sample id (so `-m`
/// is per process, and P processes hold P times the cache of one) and expanded into two f32
/// buffers with the signs of the local variables in the solver's current order. With one variable
/// per sample (C-SVC, one-class) the rows and the cached columns follow the solver's swaps, as in
/// [`SvcQ`], and a column is computed only as far as it is asked for (the active set); with two
/// (SVR) the columns are whole and in the samples' order, as in [`Doubled`].
///
/// A column of a variable held elsewhere is computed from its row ([`WireRow`]) with the same
/// arithmetic as a column fill of the single-process matrices (dense panels: the sequential sum
/// over the features; sparse rows: the merge of the two index lists), so `K(x_i, x_k)` has the
/// same bits whichever process computes it, and the same bits as [`SvcQ`], [`OneClassQ`] and
/// [`SvrQ`].
///
/// As a [`QMatrix`] it serves the columns of the local variables (local row, local cache).
#[derive(Debug)]
pub struct ShardQ<'a> {
    /// Per variable (current order) with one variable per sample, else per local sample.
    rows: KernelRows<'a>,
    per_var: bool,
    /// Global id of local sample 0 (local samples are global ids `first..first + samples`).
    first: usize,
    samples: usize,
    cache: ColumnCache,
    /// Local sample of each local variable, in the solver's current order.
    sample: Vec<u32>,
    /// With one variable per sample: the current position of each local sample's variable
    /// (`u32::MAX`: none).
    pos: Vec<u32>,
    sign: Vec<i8>,
    diag: Vec<f64>,
    buf: [Vec<f32>; 2],
    /// Entries of each buffer that are current.
    len: [usize; 2],
}

impl<'a> ShardQ<'a> {
    /// The local slice of `Q` for the samples of `x` (global ids `first..first + x.n_rows()` of
    /// `n_global` samples), with local variable `k` on sample `sample[k]` with sign `sign[k]`,
    /// and a cache of `cache_bytes` (which also pays for the rows' copy and the buffers).
    ///
    /// # Errors
    /// [`DataError::Shape`] for inconsistent lengths or a sample out of range;
    /// [`DataError::Precomputed`] for a precomputed kernel (its serial numbers name columns of
    /// the whole data set).
    pub fn new(
        x: &'a Features,
        kernel: KernelSpec,
        first: usize,
        n_global: usize,
        sample: Vec<u32>,
        sign: Vec<i8>,
        cache_bytes: usize,
    ) -> Result<Self, DataError> {
        if kernel == KernelSpec::Precomputed {
            return Err(DataError::Precomputed {
                row: 0,
                reason: "a precomputed kernel cannot be split across processes",
            });
        }
        check_len("variable signs", sample.len(), sign.len())?;
        let l = x.n_rows();
        if let Some(&bad) = sample.iter().find(|&&s| s as usize >= l) {
            return Err(DataError::Shape {
                what: "local samples",
                expected: l,
                found: bad as usize,
            });
        }
        if first.saturating_add(l) > n_global {
            return Err(DataError::Shape {
                what: "global samples",
                expected: n_global,
                found: first.saturating_add(l),
            });
        }
        let nv = sample.len();
        let mut pos = vec![u32::MAX; l];
        let mut per_var = true;
        for (k, &s) in sample.iter().enumerate() {
            if pos[s as usize] != u32::MAX {
                per_var = false;
            }
            pos[s as usize] = k as u32;
        }
        let (rows, diag, col_len) = if per_var {
            let sel: Vec<usize> = sample.iter().map(|&s| s as usize).collect();
            let rows = KernelRows::new(x, Some(&sel), kernel)?;
            let diag = (0..nv).map(|k| rows.self_value(k)).collect();
            (rows, diag, nv)
        } else {
            pos = Vec::new();
            let rows = KernelRows::new(x, None, kernel)?;
            let kd: Vec<f64> = (0..l).map(|i| rows.self_value(i)).collect();
            let diag = sample.iter().map(|&s| kd[s as usize]).collect();
            (rows, diag, l)
        };
        let budget = (cache_bytes as u64).saturating_sub(
            rows.heap_bytes() + 12 * nv as u64 + ColumnCache::<f32>::overhead_bytes(n_global),
        );
        Ok(Self {
            rows,
            per_var,
            first,
            samples: l,
            cache: ColumnCache::with_len(n_global, col_len, budget),
            sample,
            pos,
            sign,
            diag,
            buf: [vec![0.0; nv], vec![0.0; nv]],
            len: [0, 0],
        })
    }

    /// Number of local samples.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Global sample id of local variable `k` (current order).
    pub fn global_sample(&self, k: usize) -> usize {
        self.first + self.sample[k] as usize
    }

    /// Appends the row of local variable `k`'s sample to `out` (see [`WireRow`]); returns
    /// whether it is dense and its squared norm.
    pub fn wire_row(&self, k: usize, out: &mut Vec<f64>) -> (bool, f64) {
        let s = if self.per_var {
            k
        } else {
            self.sample[k] as usize
        };
        let norm = self.rows.norms[s];
        match &self.rows.rows {
            Rows::Dense { panels, d } => {
                let dd = DenseDots { panels, d: *d };
                out.extend((0..*d).map(|c| dd.at(s, c)));
                (true, norm)
            }
            Rows::Quant(q) => {
                out.extend((0..q.d()).map(|c| q.value(s, c)));
                (true, norm)
            }
            Rows::Sparse { x, perm, .. } => {
                let (idx, val) = x.row(perm[s] as usize);
                out.extend(idx.iter().map(|&c| f64::from(c)));
                out.extend_from_slice(val);
                (false, norm)
            }
            // Refused by `new`.
            Rows::Pre { .. } => (false, norm),
        }
    }

    /// Loads into buffer `which` (0 or 1) the first `len` entries (current order) of the column
    /// of the variable on global sample `id` with sign `si`, computing the kernel entries that
    /// are not cached from `row` (or from the local row when the sample is local).
    /// [`ShardQ::loaded`] and [`ShardQ::buffer`] then read the buffers.
    pub fn load(&mut self, which: usize, id: usize, si: i8, row: WireRow<'_>, len: usize) {
        let len = len.min(self.sample.len());
        let local = id.checked_sub(self.first).filter(|&s| s < self.samples);
        let want = if self.per_var { len } else { self.samples };
        let (col, valid) = self.cache.request(id, want, None);
        if valid < want {
            // The local row, in the rows' own order.
            let at = match local {
                Some(s) if self.per_var => Some(self.pos[s])
                    .filter(|&p| p != u32::MAX)
                    .map(|p| p as usize),
                other => other,
            };
            match at {
                Some(r) => self.rows.fill(r, &mut col[valid..], valid, None),
                None => self.rows.fill_wire(row, &mut col[valid..], valid),
            }
        }
        let col = self.cache.get(id, want);
        let buf = &mut self.buf[which][..len];
        let (sign, sample) = (&self.sign[..len], &self.sample[..len]);
        if self.per_var {
            for ((o, &sj), &v) in buf.iter_mut().zip(sign).zip(col) {
                *o = if sj == si { v } else { -v };
            }
        } else {
            for ((o, &sj), &s) in buf.iter_mut().zip(sign).zip(sample) {
                let v = col[s as usize];
                *o = if sj == si { v } else { -v };
            }
        }
        self.len[which] = len;
    }

    /// The first `len` entries of the two loaded columns (at most what was loaded).
    pub fn loaded(&self, len: usize) -> (&[f32], &[f32]) {
        (self.buffer(0, len), self.buffer(1, len))
    }

    /// The first `len` entries of loaded column `which` (at most what was loaded).
    pub fn buffer(&self, which: usize, len: usize) -> &[f32] {
        &self.buf[which][..len.min(self.len[which])]
    }

    /// Columns `cols` of the kernel matrix among the sent rows `rows` (`m` of them): the `c`-th
    /// of `cols` into `out[c * m..][..m]`, `K(x_a, x_b)` in f32 without the signs. The rows
    /// are held in the storage they were sent in (sparse when any is) and each column is
    /// computed as [`ShardQ::load`] computes a column from a sent row, so every entry has the
    /// bits of the same entry of a column of one process.
    ///
    /// # Errors
    /// [`DataError`] for rows that do not form a matrix (a sparse row's indices not strictly
    /// increasing).
    pub fn wire_columns(
        &self,
        rows: &[WireRow<'_>],
        cols: &[usize],
        out: &mut [f32],
    ) -> Result<(), DataError> {
        let m = rows.len();
        let x = wire_features(rows)?;
        let kr = KernelRows::new(&x, None, self.rows.spec)?;
        for (o, &k) in out.chunks_mut(m.max(1)).zip(cols) {
            if let Some(&row) = rows.get(k) {
                kr.fill_wire(row, &mut o[..m], 0);
            }
        }
        Ok(())
    }

    /// Loads the column of local variable `k` into buffer `which`.
    fn load_local(&mut self, which: usize, k: usize, len: usize) {
        let id = self.global_sample(k);
        let si = self.sign[k];
        let empty = WireRow {
            dense: true,
            data: &[],
            norm: 0.0,
        };
        self.load(which, id, si, empty, len);
    }
}

impl QMatrix for ShardQ<'_> {
    fn n(&self) -> usize {
        self.diag.len()
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        self.load_local(0, i, len);
        self.buffer(0, len)
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        self.load_local(0, i, len);
        self.load_local(1, j, len);
        self.loaded(len)
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        if self.per_var {
            self.rows.swap(i, j);
            self.cache.swap_rows(i, j);
            let (si, sj) = (self.sample[i] as usize, self.sample[j] as usize);
            self.pos.swap(si, sj);
        }
        self.sample.swap(i, j);
        self.sign.swap(i, j);
        self.diag.swap(i, j);
        // The buffers' entries no longer follow the order.
        self.len = [0, 0];
    }
    fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// The sent rows as a matrix: dense when every row is dense (as wide as the widest), else
/// sparse (a dense row keeps its nonzeros, as [`KernelRows::fill_wire`] converts it).
fn wire_features(rows: &[WireRow<'_>]) -> Result<Features, DataError> {
    if rows.iter().all(|r| r.dense) {
        let d = rows.iter().map(|r| r.data.len()).max().unwrap_or(0);
        let mut v = vec![0.0; rows.len() * d];
        for (o, r) in v.chunks_mut(d.max(1)).zip(rows) {
            o[..r.data.len()].copy_from_slice(r.data);
        }
        return Ok(Features::Dense(DenseMatrix::new(rows.len(), d, v)?));
    }
    let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
    for r in rows {
        if r.dense {
            for (c, &v) in r.data.iter().enumerate() {
                if v != 0.0 {
                    idx.push(c as u32);
                    val.push(v);
                }
            }
        } else {
            let nnz = r.data.len() / 2;
            idx.extend(r.data[..nnz].iter().map(|&c| c as u32));
            val.extend_from_slice(&r.data[nnz..2 * nnz]);
        }
        ptr.push(idx.len());
    }
    let width = idx.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    Ok(Features::Sparse(CsrMatrix::new(width, ptr, idx, val)?))
}

/// A dense in-memory Q (row-major, f64 values stored as f32 columns), for tests and small
/// problems such as the reduced problems of other methods.
#[derive(Debug, Clone)]
pub struct DenseQ {
    n: usize,
    /// Column-major f32 copy in the current order.
    cols: Vec<f32>,
    diag: Vec<f64>,
}

impl DenseQ {
    /// From a row-major symmetric `n x n` matrix.
    ///
    /// # Errors
    /// [`DataError::Shape`] if `q.len() != n * n`.
    pub fn new(n: usize, q: &[f64]) -> Result<Self, DataError> {
        check_len("dense Q", n * n, q.len())?;
        Ok(Self {
            n,
            cols: q.iter().map(|&v| v as f32).collect(),
            diag: (0..n).map(|i| q[i * n + i]).collect(),
        })
    }
}

impl QMatrix for DenseQ {
    fn n(&self) -> usize {
        self.n
    }
    fn diag(&self) -> &[f64] {
        &self.diag
    }
    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        &self.cols[i * self.n..i * self.n + len]
    }
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        let n = self.n;
        (
            &self.cols[i * n..i * n + len],
            &self.cols[j * n..j * n + len],
        )
    }
    fn swap_index(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let n = self.n;
        for c in 0..n {
            self.cols.swap(c * n + i, c * n + j);
        }
        for r in 0..n {
            self.cols.swap(i * n + r, j * n + r);
        }
        self.diag.swap(i, j);
    }
    fn cache_stats(&self) -> CacheStats {
        CacheStats::default()
    }
}

/// `K(x_i, x_j)` for two samples of `x` in the original order, exactly as the Q matrices
/// compute it (in f64): for tests and independent checks.
pub fn kernel_value(x: &Features, kernel: KernelSpec, i: usize, j: usize) -> f64 {
    let (a, b) = (x.row(i), x.row(j));
    match kernel {
        KernelSpec::Precomputed => a.get(b.get(0) as usize),
        KernelSpec::Rbf { gamma } => {
            let d2 = (ops::sq_norm(a) + ops::sq_norm(b) - 2.0 * ops::dot(a, b)).max(0.0);
            exp_nonpositive(-gamma * d2)
        }
        _ => kernel.from_dot(ops::dot(a, b), 0.0, 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrMatrix, DenseMatrix};

    fn data() -> Features {
        let v: Vec<f64> = (0..7 * 3)
            .map(|k| ((k * 37 % 11) as f64) / 7.0 - 0.6)
            .collect();
        Features::Dense(DenseMatrix::new(7, 3, v).unwrap())
    }

    #[test]
    fn fast_exp_is_accurate() {
        // Both forms, whichever this build takes.
        for (form, f) in [
            ("fused", exp_poly::<true> as fn(f64) -> f64),
            ("separate", exp_poly::<false>),
        ] {
            let mut x = 0.0;
            while x > -745.0 {
                let (a, b) = (f(x), x.exp());
                if x > -700.0 {
                    assert!((a - b).abs() <= 1e-15 * b, "{form} {x}: {a} vs {b}");
                } else {
                    assert!((0.0..1e-303).contains(&a), "{form} {x}: {a}");
                }
                x -= 0.0137;
            }
            assert_eq!(f(0.0), 1.0, "{form}");
        }
    }

    #[test]
    fn working_sets_stop_filling_a_cache_they_never_hit() {
        let (n, d) = (300, 4);
        let v: Vec<f64> = (0..n * d).map(|k| ((k * 29 % 17) as f64) / 9.0).collect();
        let x = Features::Dense(DenseMatrix::new(n, d, v).unwrap());
        let y: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { 1 } else { -1 }).collect();
        let spec = KernelSpec::Rbf { gamma: 0.3 };
        // The rows' copy plus room for a few columns: working sets of 100 distinct columns
        // never come back to a stored one.
        let bytes = 8 * n * d + ColumnCache::<f32>::overhead_bytes(n) as usize + 8 * 4 * n;
        let mut q = SvcQ::new(&x, spec, &y, bytes).unwrap();
        let mut reference = SvcQ::new(&x, spec, &y, 64 << 20).unwrap();
        let mut bufs = vec![vec![0.0f32; n]; 100];
        let mut calls = 0;
        while q.many.requests < ManyRequests::WARMUP + 200 {
            let idx: Vec<usize> = (0..100).map(|k| (calls * 100 + k) % n).collect();
            let mut outs: Vec<&mut [f32]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            let before = q.many.requests;
            q.columns_into(&idx, n, &mut outs);
            for (k, &i) in idx.iter().enumerate() {
                assert_eq!(bufs[k], reference.column(i, n), "column {i}");
            }
            // Stored by a call made during the warm-up; not once the hits stayed below the share.
            assert_eq!(
                q.cache.has(idx[99], n),
                before < ManyRequests::WARMUP,
                "{:?}",
                q.many
            );
            calls += 1;
        }
        let stats = q.cache_stats();
        assert_eq!(stats.hits + stats.misses, q.many.requests);
    }

    #[test]
    fn svc_columns_match_pointwise_kernel_after_swaps() {
        let x = data();
        let y = [1i8, -1, 1, 1, -1, -1, 1];
        for spec in [
            KernelSpec::Linear,
            KernelSpec::Rbf { gamma: 0.7 },
            KernelSpec::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
            KernelSpec::Sigmoid {
                gamma: 0.3,
                coef0: 0.1,
            },
        ] {
            let mut q = SvcQ::new(&x, spec, &y, 0).unwrap();
            let mut perm: Vec<usize> = (0..7).collect();
            for &(a, b) in &[(0, 6), (2, 3), (1, 5), (0, 3)] {
                // Request a partial column first, so swaps hit cached data.
                let _ = q.column(a, 4);
                q.swap_index(a, b);
                perm.swap(a, b);
            }
            for i in 0..7 {
                let col = q.column(i, 7).to_vec();
                for j in 0..7 {
                    let (oi, oj) = (perm[i], perm[j]);
                    let want = f64::from(y[oi] * y[oj]) * kernel_value(&x, spec, oi, oj);
                    assert!((f64::from(col[j]) - want).abs() < 1e-6, "{spec:?}");
                    assert!(
                        (spec.eval(x.row(oi), x.row(oj)) * f64::from(y[oi] * y[oj]) - want).abs()
                            < 1e-12
                    );
                }
                let (oi, d) = (perm[i], q.diag()[i]);
                assert!((d - kernel_value(&x, spec, oi, oi)).abs() < 1e-12);
            }
        }
    }

    /// A sparse matrix with `d <= nnz` (so the gather path is on): negative values, `-0.0`
    /// entries, an empty row, rows sharing no index, and sums that cancel.
    fn sparse_data() -> Features {
        let (n, d) = (23usize, 9usize);
        let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
        for r in 0..n {
            if r != 5 {
                for k in 0..d {
                    if (r * 7 + k * 3) % 5 < 2 + r % 3 {
                        indices.push(k as u32);
                        let v = match (r + k) % 7 {
                            0 => -0.0,
                            1 => 0.5,
                            2 => -0.5,
                            _ => ((r * 13 + k * 29) % 17) as f64 / 3.0 - 2.7,
                        };
                        values.push(v);
                    }
                }
            }
            indptr.push(indices.len());
        }
        Features::Sparse(CsrMatrix::new(d, indptr, indices, values).unwrap())
    }

    #[test]
    fn sparse_rows_columns_equal_the_merge_bit_for_bit() -> Result<(), DataError> {
        // The rows are over a third dense and not on one binary scale, so `new` packs them into
        // f64 panels; the gather (a dense buffer) and the merge are forced below.
        let x = sparse_data();
        let Features::Sparse(m) = &x else {
            unreachable!()
        };
        let n = m.n_rows();
        let sparse = |dense: Vec<f64>| Rows::Sparse {
            x: m,
            perm: (0..n as u32).collect(),
            dense,
        };
        let y: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
        for spec in [
            KernelSpec::Linear,
            KernelSpec::Rbf { gamma: 0.7 },
            KernelSpec::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
            KernelSpec::Sigmoid {
                gamma: 0.3,
                coef0: 0.1,
            },
        ] {
            let mut panels = SvcQ::new(&x, spec, &y, 0)?;
            assert!(matches!(&panels.rows.rows, Rows::Dense { d: 9, .. }));
            let perm: Vec<u32> = (0..n as u32).collect();
            let merge_norms: Vec<f64> = (0..n)
                .map(|r| SparseDots { x: m, perm: &perm }.dot(r, r))
                .collect();
            assert_eq!(panels.rows.norms, merge_norms);
            let mut gather = SvcQ::new(&x, spec, &y, 0)?;
            gather.rows.rows = sparse(vec![0.0; 9]);
            let mut merge = SvcQ::new(&x, spec, &y, 0)?;
            merge.rows.rows = sparse(Vec::new());
            for &(a, b) in &[(0, 22), (5, 3), (1, 17), (0, 3)] {
                panels.swap_index(a, b);
                gather.swap_index(a, b);
                merge.swap_index(a, b);
            }
            let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            for i in 0..n {
                let want = merge.column(i, n).to_vec();
                for (path, q) in [("panels", &mut panels), ("gather", &mut gather)] {
                    // Partial columns too: the fill starts at the cached length.
                    let part = q.column(i, i % 11 + 1).to_vec();
                    let got = q.column(i, n).to_vec();
                    assert_eq!(bits(&got), bits(&want), "{spec:?} {path} column {i}");
                    assert_eq!(bits(&part), bits(&want[..part.len()]));
                }
            }
            if let Rows::Sparse { dense, .. } = &gather.rows.rows {
                assert!(dense.iter().all(|v| v.to_bits() == 0), "buffer left dirty");
            }
        }
        Ok(())
    }

    /// Rows of 37 features that are multiples of 1/8 (integers up to 40, of both signs, and
    /// zeros): the integer layout holds them.
    fn quantized_data() -> Result<Features, DataError> {
        let (n, d) = (45usize, 37usize);
        let v: Vec<f64> = (0..n * d)
            .map(|t| match t % 11 {
                0 => 0.0,
                1 => -5.0,
                _ => ((t * 29 % 81) as f64 - 40.0) / 8.0,
            })
            .collect();
        Ok(Features::Dense(DenseMatrix::new(n, d, v)?))
    }

    #[test]
    fn integer_rows_give_the_f64_rows_columns_bit_for_bit() -> Result<(), DataError> {
        let x = quantized_data()?;
        let Features::Dense(m) = &x else {
            unreachable!()
        };
        let (n, d) = (m.n_rows(), m.n_cols());
        let y: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
        let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for spec in [
            KernelSpec::Linear,
            KernelSpec::Rbf { gamma: 0.05 },
            KernelSpec::Poly {
                gamma: 0.01,
                coef0: 1.0,
                degree: 3,
            },
            KernelSpec::Sigmoid {
                gamma: 0.003,
                coef0: 0.1,
            },
        ] {
            let mut q = SvcQ::new(&x, spec, &y, 0)?;
            assert_eq!(
                matches!(q.rows.rows, Rows::Quant(_)),
                super::super::quant::available()
            );
            let mut f = SvcQ::new(&x, spec, &y, 0)?;
            f.rows.rows = Rows::Dense {
                panels: pack_panels(m.values(), n, d, |r| r),
                d,
            };
            for &(a, b) in &[(0, 44), (5, 3), (1, 17), (0, 3), (20, 31)] {
                q.swap_index(a, b);
                f.swap_index(a, b);
            }
            assert_eq!(q.diag(), f.diag());
            assert_eq!(q.rows.norms, f.rows.norms);
            for i in 0..n {
                let part = q.column(i, i % 19 + 1).to_vec();
                let got = q.column(i, n).to_vec();
                let want = f.column(i, n).to_vec();
                assert_eq!(bits(&got), bits(&want), "{spec:?} column {i}");
                assert_eq!(bits(&part), bits(&want[..part.len()]));
            }
            // Several columns at once (tiles of four and single rows), from rows inside a panel.
            for (lo, idx) in [
                (0, vec![3, 9, 1, 44, 20]),
                (7, vec![2, 2, 40]),
                (19, vec![11]),
            ] {
                let mut a = vec![vec![0.0f32; n - lo]; idx.len()];
                let mut b = a.clone();
                let mut oa: Vec<&mut [f32]> = a.iter_mut().map(|c| &mut c[..]).collect();
                let mut ob: Vec<&mut [f32]> = b.iter_mut().map(|c| &mut c[..]).collect();
                q.columns_part(&idx, lo, &mut oa);
                f.columns_part(&idx, lo, &mut ob);
                for (ca, cb) in a.iter().zip(&b) {
                    assert_eq!(bits(ca), bits(cb), "{spec:?} columns from {lo}");
                }
            }
            // A row of the same scale sent by another process, and one off it.
            for scale in [1.0, 1.0 / 3.0] {
                let sent: Vec<f64> = m.row(6).iter().map(|&v| v * scale).collect();
                let row = WireRow {
                    dense: true,
                    data: &sent,
                    norm: sent.iter().fold(0.0, |s, &v| s + v * v),
                };
                let (mut a, mut b) = (vec![0.0f32; n - 3], vec![0.0f32; n - 3]);
                q.rows.fill_wire(row, &mut a, 3);
                f.rows.fill_wire(row, &mut b, 3);
                assert_eq!(bits(&a), bits(&b), "{spec:?} sent row, scale {scale}");
            }
        }
        Ok(())
    }

    #[test]
    fn dense_enough_sparse_rows_take_the_integer_layout_bit_for_bit() -> Result<(), DataError> {
        let x = quantized_data()?;
        let Features::Dense(m) = &x else {
            unreachable!()
        };
        let (n, d) = (m.n_rows(), m.n_cols());
        // The same rows stored sparse, zeros left out.
        let (mut ptr, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
        for r in 0..n {
            for (k, &v) in m.row(r).iter().enumerate() {
                if v != 0.0 {
                    idx.push(k as u32);
                    val.push(v);
                }
            }
            ptr.push(idx.len());
        }
        let csr = CsrMatrix::new(d, ptr, idx, val)?;
        let s = Features::Sparse(csr.clone());
        let y: Vec<i8> = (0..n).map(|i| if i % 4 == 0 { -1 } else { 1 }).collect();
        let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for spec in [KernelSpec::Linear, KernelSpec::Rbf { gamma: 0.05 }] {
            let mut q = SvcQ::new(&s, spec, &y, 0)?;
            assert_eq!(
                matches!(q.rows.rows, Rows::Quant(_)),
                super::super::quant::available()
            );
            let mut merge = SvcQ::new(&s, spec, &y, 0)?;
            merge.rows.rows = Rows::Sparse {
                x: &csr,
                perm: (0..n as u32).collect(),
                dense: Vec::new(),
            };
            for &(a, b) in &[(0, 44), (5, 3), (1, 17)] {
                q.swap_index(a, b);
                merge.swap_index(a, b);
            }
            assert_eq!(q.diag(), merge.diag());
            for i in 0..n {
                let got = q.column(i, n).to_vec();
                let want = merge.column(i, n).to_vec();
                assert_eq!(bits(&got), bits(&want), "{spec:?} column {i}");
            }
        }
        // Fewer than a sixth of the features stored: the panels would outgrow the rows, so the
        // sparse rows stay.
        let (rows, width) = (40usize, 200usize);
        let thin = CsrMatrix::new(
            width,
            (0..=rows).collect(),
            (0..rows as u32).map(|r| r * 5).collect(),
            vec![0.5; rows],
        )?;
        let thin = Features::Sparse(thin);
        let yt = vec![1i8; rows];
        let q = SvcQ::new(&thin, KernelSpec::Rbf { gamma: 0.5 }, &yt, 0)?;
        assert!(matches!(q.rows.rows, Rows::Sparse { .. }));
        Ok(())
    }

    #[test]
    fn precomputed_validates_serials() {
        let bad =
            Features::Dense(DenseMatrix::new(2, 3, vec![1.0, 1.0, 0.5, 2.5, 0.5, 1.0]).unwrap());
        assert!(matches!(
            OneClassQ::new(&bad, KernelSpec::Precomputed, 0),
            Err(DataError::Precomputed { row: 1, .. })
        ));
        // Rows stored in reverse serial order: K(a, b) = row_a[serial_b].
        let good =
            Features::Dense(DenseMatrix::new(2, 3, vec![2.0, 0.5, 3.0, 1.0, 1.0, 0.5]).unwrap());
        let mut q = OneClassQ::new(&good, KernelSpec::Precomputed, 0).unwrap();
        assert_eq!(q.diag(), &[3.0, 1.0]);
        assert_eq!(q.column(0, 2), &[3.0, 0.5]);
    }

    #[test]
    fn svr_signs_and_indices() {
        let x = data();
        let spec = KernelSpec::Rbf { gamma: 0.4 };
        let mut q = SvrQ::new(&x, spec, 0).unwrap();
        q.swap_index(1, 9);
        let (a, b) = q.pair(1, 2, 14);
        let (a, b) = (a.to_vec(), b.to_vec());
        // Position 1 now holds variable 9 = (sample 2, sign -1); position 9 holds (1, +1).
        let var = |p: usize| -> (usize, f64) {
            let v = if p == 1 {
                9
            } else if p == 9 {
                1
            } else {
                p
            };
            (v % 7, if v < 7 { 1.0 } else { -1.0 })
        };
        for p in 0..14 {
            let (s1, g1) = var(1);
            let (s2, g2) = var(2);
            let (sp, gp) = var(p);
            let k1 = g1 * gp * kernel_value(&x, spec, s1, sp);
            let k2 = g2 * gp * kernel_value(&x, spec, s2, sp);
            assert!((f64::from(a[p]) - k1).abs() < 1e-6);
            assert!((f64::from(b[p]) - k2).abs() < 1e-6);
        }
    }
}
