//! Exact integer inner products for dense rows whose features are small multiples of one power
//! of two: pixels divided by 256, 0/1 indicators, small integer counts.
//!
//! When every feature value is `k 2^-s` with an integer `|k| <= limit`, where
//! `limit^2 x (features rounded up to even) <= i32::MAX`, every inner product is `K 2^-2s` with
//! an integer `|K| <= i32::MAX`, and so is every partial sum of the sequential sum over the
//! features that [`super::qmatrix::DenseDots`] computes in f64: each of them has at most 31
//! significant bits, so no f64 addition or product rounds. The integer sum, converted to f64
//! and scaled by `2^-2s` (both exact), is therefore the f64 path's result to the bit, and so is
//! every kernel value built from it. Models do not depend on which path ran.
//!
//! The integers are stored as `i16` in panels of [`QPANEL`] rows, feature pairs outermost and
//! rows inside: the pair `(2m, 2m + 1)` of row `r` is at
//! `(r / QPANEL) QPANEL F + m 2 QPANEL + 2 (r % QPANEL)` (`F` the features rounded up to even,
//! the odd feature padded with a zero). One 32-byte lane then holds a pair for eight rows, and
//! one multiply-add of 16-bit pairs into 32-bit sums (`vpmaddwd`, or `vpdpwssd` where AVX-512
//! VNNI fuses it with the add) does 16 multiply-adds, where a 256-bit f64 multiply and add do 4
//! in two instructions, and the rows take a quarter of the memory. The layout is used when the
//! target has AVX2 ([`available`]); without it the f64 panels are kept.

use super::qmatrix::{DenseSource, Dots, Line, SourceRows, SparseSource, Tiles, TILE_ROWS};
use crate::data::CsrMatrix;

/// Rows per panel of the integer layout.
pub(super) const QPANEL: usize = 16;

/// Whether this build has the integer multiply-adds (AVX2): the only case where the integer
/// layout is faster than the f64 one.
pub(crate) const fn available() -> bool {
    cfg!(all(target_arch = "x86_64", target_feature = "avx2"))
}

/// Dense rows as integers `k` with a common scale: feature value `k 2^-shift`.
#[derive(Debug)]
pub(super) struct QuantPanels {
    vals: Vec<i16>,
    /// Features per row.
    d: usize,
    /// Feature pairs per row (`d` rounded up, halved).
    pairs: usize,
    /// `2^-shift`: a feature value is `k * unit`.
    unit: f64,
    /// `2^-2 shift`: an inner product is `K * unit2`.
    unit2: f64,
    /// The largest `|k|` a row (stored or sent) may have.
    limit: i32,
}

/// The power of two `2^-s` with the smallest `s >= 0` such that `v 2^s` is an integer, as `s`
/// (`None` for non-finite, subnormal or very fine values).
fn fraction_bits(v: f64) -> Option<u32> {
    if v == 0.0 {
        return Some(0);
    }
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 || exp == 0x7ff {
        return None;
    }
    let mant = (bits & ((1 << 52) - 1)) | (1 << 52);
    // v = mant 2^(exp - 1075), mant's lowest set bit at trailing_zeros.
    let low = exp - 1075 + mant.trailing_zeros() as i32;
    u32::try_from((-low).max(0))
        .ok()
        .filter(|&s| s <= MAX_SHIFT)
}

/// Finer scales than this are refused (their integers would be far above any limit anyway).
const MAX_SHIFT: u32 = 40;

impl QuantPanels {
    /// The largest `|k|` for rows of `d` features: `limit^2 x 2 ceil(d / 2) <= i32::MAX`, and
    /// at most `i16::MAX`.
    fn limit_for(d: usize) -> i32 {
        let terms = (2 * d.div_ceil(2)).max(2) as f64;
        let l = (f64::from(i32::MAX) / terms).sqrt().floor();
        l.min(f64::from(i16::MAX)) as i32
    }

    /// Rows `src(0..n)` of the row-major `d`-feature `vals` as integers, or `None` when a value
    /// is not a multiple of the rows' common `2^-s` within the limit (or the target lacks the
    /// integer multiply-adds, see [`available`]).
    pub(super) fn new(
        vals: &[f64],
        n: usize,
        d: usize,
        src: impl Fn(usize) -> usize,
    ) -> Option<Self> {
        if !available() || n == 0 || d == 0 {
            return None;
        }
        Self::pack(vals, n, d, src, None)
    }

    /// [`Self::new`] on the scale `2^-shift` (row-major rows `0..n`): rows to be multiplied
    /// with rows of that scale ([`source_pairs`]).
    pub(super) fn on_scale(vals: &[f64], n: usize, d: usize, shift: u32) -> Option<Self> {
        if !available() || n == 0 || d == 0 {
            return None;
        }
        Self::pack(vals, n, d, |r| r, Some(shift))
    }

    /// Rows `src(0..n)` of the sparse `x` as integers, as [`Self::new`] does for dense rows,
    /// or `None` also when the panels would take more memory than `x` itself (2 bytes a
    /// feature against 12 a stored nonzero: data at least a sixth dense, such as images).
    /// Missing entries are zeros, so the inner products are the sparse path's to the bit too.
    pub(super) fn from_sparse(
        x: &CsrMatrix,
        n: usize,
        src: impl Fn(usize) -> usize,
    ) -> Option<Self> {
        let d = x.n_cols();
        let panel_bytes = 2 * x.n_rows() as u128 * (2 * d.div_ceil(2)) as u128;
        if !available() || n == 0 || d == 0 || panel_bytes > 12 * x.nnz() as u128 {
            return None;
        }
        Self::pack_rows(&SparseSource { x, src }, n, d, None)
    }

    /// [`Self::new`] on any target (the tests' entry); the scale is the rows' own, or `shift`.
    fn pack(
        vals: &[f64],
        n: usize,
        d: usize,
        src: impl Fn(usize) -> usize,
        shift: Option<u32>,
    ) -> Option<Self> {
        Self::pack_rows(&DenseSource { vals, d, src }, n, d, shift)
    }

    /// The panels of rows `0..n` of `rows` (`d` features each).
    fn pack_rows(rows: &impl SourceRows, n: usize, d: usize, shift: Option<u32>) -> Option<Self> {
        let mut own = 0;
        let mut top = 0.0f64;
        let mut exact = true;
        for r in 0..n {
            rows.visit(r, |_, v| match fraction_bits(v) {
                Some(bits) => {
                    own = own.max(bits);
                    top = top.max(v.abs());
                }
                None => exact = false,
            });
            if !exact {
                return None;
            }
        }
        let shift = match shift {
            Some(s) if s >= own => s,
            Some(_) => return None,
            None => own,
        };
        let unit = 0.5f64.powi(shift as i32);
        let limit = Self::limit_for(d);
        if top / unit > f64::from(limit) {
            return None;
        }
        let pairs = d.div_ceil(2);
        let width = 2 * pairs;
        let mut packed = vec![0i16; n.div_ceil(QPANEL) * QPANEL * width];
        for r in 0..n {
            let base = (r / QPANEL) * QPANEL * width + 2 * (r % QPANEL);
            rows.visit(r, |k, v| {
                // Exact: v / unit is an integer of magnitude at most `limit`.
                packed[base + (k / 2) * 2 * QPANEL + k % 2] = (v / unit) as i16;
            });
        }
        Some(Self {
            vals: packed,
            d,
            pairs,
            unit,
            unit2: unit * unit,
            limit,
        })
    }

    pub(super) fn d(&self) -> usize {
        self.d
    }

    pub(super) fn heap_bytes(&self) -> usize {
        2 * self.vals.len()
    }

    #[inline]
    fn at(&self, r: usize, k: usize) -> i16 {
        self.vals[(r / QPANEL) * QPANEL * 2 * self.pairs
            + (k / 2) * 2 * QPANEL
            + 2 * (r % QPANEL)
            + k % 2]
    }

    /// Feature `k` of row `r` as the f64 it stands for (exact).
    pub(super) fn value(&self, r: usize, k: usize) -> f64 {
        f64::from(self.at(r, k)) * self.unit
    }

    /// Row `r`'s feature pairs, each two `i16` in one `i32` (the even feature in the low half),
    /// appended to `out`.
    fn push_pairs(&self, r: usize, out: &mut Vec<i32>) {
        out.extend((0..self.pairs).map(|m| pair(self.at(r, 2 * m), self.at(r, 2 * m + 1))));
    }

    /// A row given as f64 features (another process's, [`super::qmatrix::WireRow`]) as pairs
    /// on this scale, or `None` when it is not on it.
    pub(super) fn pairs_of(&self, row: &[f64]) -> Option<Vec<i32>> {
        pairs_with(row, self.pairs, self.unit, self.limit)
    }

    /// Swaps rows `i` and `j`.
    pub(super) fn swap(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let w = 2 * self.pairs;
        let bi = (i / QPANEL) * QPANEL * w + 2 * (i % QPANEL);
        let bj = (j / QPANEL) * QPANEL * w + 2 * (j % QPANEL);
        for m in 0..self.pairs {
            for h in 0..2 {
                self.vals
                    .swap(bi + m * 2 * QPANEL + h, bj + m * 2 * QPANEL + h);
            }
        }
    }

    /// Panel `p`'s lanes: `pairs` lanes of `2 QPANEL` values.
    #[inline]
    fn panel(&self, p: usize) -> &[i16] {
        let w = 2 * self.pairs * QPANEL;
        &self.vals[p * w..(p + 1) * w]
    }

    /// Integer sums of one source row (pairs) against panel `p`, as the f64 values they are.
    #[inline]
    pub(super) fn tile1_pairs(&self, src: &[i32], p: usize, out: &mut [f64; QPANEL]) {
        let mut acc = Line([[0i32; QPANEL]; 1]);
        madd::tile::<1>(self.panel(p), [&src[..self.pairs]], &mut acc);
        for (o, &k) in out.iter_mut().zip(&acc[0]) {
            *o = f64::from(k) * self.unit2;
        }
    }
}

/// The first `pairs` feature pairs of `row` (zeros past its end) as integers of the scale
/// `unit`, or `None` when one is not an integer multiple of `unit` within `limit`.
fn pairs_with(row: &[f64], pairs: usize, unit: f64, limit: i32) -> Option<Vec<i32>> {
    let mut ks = vec![0i16; 2 * pairs];
    for (slot, &v) in ks.iter_mut().zip(row) {
        let k = v / unit;
        if !(k.fract() == 0.0 && k.abs() <= f64::from(limit)) {
            return None;
        }
        *slot = k as i16;
    }
    Some(ks.chunks_exact(2).map(|p| pair(p[0], p[1])).collect())
}

/// Row-major rows (`d` features each) on one binary scale as the source rows of
/// [`QuantPanels`]' tiles: the scale's `shift` and every row's feature pairs, or `None` as
/// [`QuantPanels::new`] would refuse them.
pub(super) fn source_pairs(vals: &[f64], d: usize) -> Option<(u32, Vec<i32>)> {
    if !available() || d == 0 {
        return None;
    }
    let mut shift = 0;
    for &v in vals {
        shift = shift.max(fraction_bits(v)?);
    }
    let (pairs, unit, limit) = (
        d.div_ceil(2),
        0.5f64.powi(shift as i32),
        QuantPanels::limit_for(d),
    );
    let mut out = Vec::with_capacity(vals.len().div_ceil(d) * pairs);
    for row in vals.chunks(d) {
        out.extend(pairs_with(row, pairs, unit, limit)?);
    }
    Some((shift, out))
}

/// Two `i16` in one `i32`, the first in the low half (the lane order of a pair).
#[inline]
fn pair(lo: i16, hi: i16) -> i32 {
    (u32::from(lo as u16) | (u32::from(hi as u16) << 16)) as i32
}

impl Dots for QuantPanels {
    fn dot(&self, i: usize, j: usize) -> f64 {
        let mut s = 0i32;
        for k in 0..self.d {
            s += i32::from(self.at(i, k)) * i32::from(self.at(j, k));
        }
        f64::from(s) * self.unit2
    }

    fn entry_cost(&self) -> usize {
        self.d.div_ceil(4)
    }

    fn block(&self, i: usize, lo: usize, out: &mut [f64]) {
        let hi = lo + out.len();
        let mut src = Vec::with_capacity(self.pairs);
        self.push_pairs(i, &mut src);
        for p in lo / QPANEL..hi.div_ceil(QPANEL) {
            let mut v = [0.0; QPANEL];
            self.tile1_pairs(&src, p, &mut v);
            let (a, b) = ((p * QPANEL).max(lo), ((p + 1) * QPANEL).min(hi));
            out[a - lo..b - lo].copy_from_slice(&v[a - p * QPANEL..b - p * QPANEL]);
        }
    }
}

impl Tiles<QPANEL> for QuantPanels {
    type Src = i32;

    fn features(&self) -> usize {
        self.d
    }

    fn src_len(&self) -> usize {
        self.pairs
    }

    fn push_src(&self, i: usize, out: &mut Vec<i32>) {
        self.push_pairs(i, out);
    }

    fn row_bytes(&self) -> usize {
        4 * self.pairs
    }

    #[inline]
    fn tile(&self, src: &[i32], p: usize, acc: &mut [[f64; QPANEL]; TILE_ROWS]) {
        let m = self.pairs;
        let rows: [&[i32]; TILE_ROWS] = std::array::from_fn(|t| &src[t * m..(t + 1) * m]);
        let mut sums = Line([[0i32; QPANEL]; TILE_ROWS]);
        madd::tile(self.panel(p), rows, &mut sums);
        for (a, s) in acc.iter_mut().zip(sums.iter()) {
            for (o, &k) in a.iter_mut().zip(s) {
                *o = f64::from(k) * self.unit2;
            }
        }
    }

    #[inline]
    fn tile1(&self, src: &[i32], p: usize, acc: &mut [f64; QPANEL]) {
        self.tile1_pairs(src, p, acc);
    }
}

/// `acc[t][c] = sum_m <pair m of src[t], pair m of row c of the panel>` over 16-bit pairs into
/// 32-bit sums (exact within [`QuantPanels`]' limit, in any order).
mod madd {
    use super::QPANEL;

    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[inline(always)]
    pub(super) fn tile<const T: usize>(
        panel: &[i16],
        src: [&[i32]; T],
        acc: &mut [[i32; QPANEL]; T],
    ) {
        use safe_arch::{add_i32_m256i, m256i, mul_i16_horizontal_add_m256i, set_splat_i32_m256i};
        let mut a = [[m256i::default(); 2]; T];
        for (m, lane) in panel.chunks_exact(2 * QPANEL).enumerate() {
            let l0 = m256i::from(std::array::from_fn::<i16, QPANEL, _>(|c| lane[c]));
            let l1 = m256i::from(std::array::from_fn::<i16, QPANEL, _>(|c| lane[QPANEL + c]));
            for (at, s) in a.iter_mut().zip(&src) {
                let b = set_splat_i32_m256i(s[m]);
                at[0] = add_i32_m256i(at[0], mul_i16_horizontal_add_m256i(l0, b));
                at[1] = add_i32_m256i(at[1], mul_i16_horizontal_add_m256i(l1, b));
            }
        }
        for (o, at) in acc.iter_mut().zip(&a) {
            let lo: [i32; 8] = at[0].into();
            let hi: [i32; 8] = at[1].into();
            o[..8].copy_from_slice(&lo);
            o[8..].copy_from_slice(&hi);
        }
    }

    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    #[inline(always)]
    pub(super) fn tile<const T: usize>(
        panel: &[i16],
        src: [&[i32]; T],
        acc: &mut [[i32; QPANEL]; T],
    ) {
        super::reference_tile(panel, src, acc);
    }
}

/// The scalar form of `madd::tile` (the tests' reference, and the tile of targets without
/// AVX2).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2"), allow(dead_code))]
fn reference_tile<const T: usize>(panel: &[i16], src: [&[i32]; T], acc: &mut [[i32; QPANEL]; T]) {
    for (m, lane) in panel.chunks_exact(2 * QPANEL).enumerate() {
        for (at, s) in acc.iter_mut().zip(&src) {
            let (x0, x1) = (i32::from(s[m] as i16), i32::from((s[m] >> 16) as i16));
            for (c, o) in at.iter_mut().enumerate() {
                *o += x0 * i32::from(lane[2 * c]) + x1 * i32::from(lane[2 * c + 1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fraction_bits_of_binary_fractions() {
        assert_eq!(fraction_bits(0.0), Some(0));
        assert_eq!(fraction_bits(3.0), Some(0));
        assert_eq!(fraction_bits(-1024.0), Some(0));
        assert_eq!(fraction_bits(0.5), Some(1));
        assert_eq!(fraction_bits(255.0 / 256.0), Some(8));
        assert_eq!(fraction_bits(-3.0 / 1024.0), Some(10));
        assert_eq!(fraction_bits(0.1), None);
        // Pixels scaled by 255 are not on a binary scale.
        assert_eq!(fraction_bits(17.0 / 255.0), None);
        assert_eq!(fraction_bits(f64::NAN), None);
        assert_eq!(fraction_bits(f64::INFINITY), None);
        assert_eq!(fraction_bits(f64::MIN_POSITIVE / 2.0), None);
    }

    #[test]
    fn limits_keep_every_sum_within_i32() {
        for d in [1, 2, 3, 20, 784, 5000, 40_000] {
            let l = i64::from(QuantPanels::limit_for(d));
            assert!(
                l * l * (2 * d.div_ceil(2)) as i64 <= i64::from(i32::MAX),
                "d {d}"
            );
            assert!(l <= i64::from(i16::MAX));
        }
        assert_eq!(QuantPanels::limit_for(784), 1655);
    }

    #[test]
    fn values_off_the_scale_are_refused() {
        assert!(QuantPanels::pack(&[0.5, 0.1], 1, 2, |r| r, None).is_none());
        // 2000 > the limit for 784 features.
        let mut v = vec![0.0; 784];
        v[3] = 2000.0;
        assert!(QuantPanels::pack(&v, 1, 784, |r| r, None).is_none());
        v[3] = 1655.0;
        assert!(QuantPanels::pack(&v, 1, 784, |r| r, None).is_some());
    }

    /// Random rows on a scale, with values at the limit among them.
    fn rows(n: usize, d: usize, shift: i32, seed: u64) -> Result<(Vec<f64>, QuantPanels), String> {
        let limit = QuantPanels::limit_for(d);
        let mut s = seed;
        let vals: Vec<f64> = (0..n * d)
            .map(|t| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let k = match t % 7 {
                    0 => limit,
                    1 => -limit,
                    2 => 0,
                    _ => (s >> 33) as i32 % (limit + 1),
                };
                f64::from(k) * 0.5f64.powi(shift)
            })
            .collect();
        let q = QuantPanels::pack(&vals, n, d, |r| r, None)
            .ok_or_else(|| format!("{n} x {d} rows on 2^-{shift} refused"))?;
        Ok((vals, q))
    }

    /// The f64 sequential sum over the features (the f64 panels' arithmetic).
    fn f64_dot(vals: &[f64], d: usize, i: usize, j: usize) -> f64 {
        let mut s = 0.0;
        for k in 0..d {
            s += vals[i * d + k] * vals[j * d + k];
        }
        s
    }

    #[test]
    fn inner_products_are_the_f64_sums_to_the_bit() -> Result<(), String> {
        for (n, d, shift) in [
            (37, 784, 8),
            (21, 5, 0),
            (40, 1, 3),
            (19, 64, 12),
            (33, 3, 1),
        ] {
            let (vals, q) = rows(n, d, shift, (n * d) as u64)?;
            // Every pair, through dot and block.
            let mut out = vec![0.0; n];
            for i in 0..n {
                q.block(i, 0, &mut out);
                for (j, o) in out.iter().enumerate() {
                    let want = f64_dot(&vals, d, i, j);
                    assert_eq!(q.dot(i, j).to_bits(), want.to_bits(), "dot {i} {j} d {d}");
                    assert_eq!(o.to_bits(), want.to_bits(), "block {i} {j} d {d}");
                }
                // A block starting inside a panel.
                let lo = 5.min(n);
                q.block(i, lo, &mut out[..n - lo]);
                for j in lo..n {
                    assert_eq!(out[j - lo].to_bits(), f64_dot(&vals, d, i, j).to_bits());
                }
            }
            // Tiles of four source rows.
            let mut src = Vec::new();
            for i in 0..TILE_ROWS {
                q.push_src(i, &mut src);
            }
            for p in 0..n.div_ceil(QPANEL) {
                let mut acc = [[0.0; QPANEL]; TILE_ROWS];
                q.tile(&src, p, &mut acc);
                for (t, a) in acc.iter().enumerate() {
                    for (c, &v) in a.iter().enumerate().take(n.saturating_sub(p * QPANEL)) {
                        let want = f64_dot(&vals, d, t, p * QPANEL + c);
                        assert_eq!(v.to_bits(), want.to_bits(), "tile {t} {c} d {d}");
                    }
                }
            }
        }
        Ok(())
    }

    #[test]
    fn simd_tile_matches_the_scalar_reference() -> Result<(), String> {
        let (_, q) = rows(40, 131, 4, 7)?;
        let mut src = Vec::new();
        for i in [3, 17, 39, 0] {
            q.push_src(i, &mut src);
        }
        let m = q.pairs;
        for p in 0..3 {
            let rows: [&[i32]; 4] = std::array::from_fn(|t| &src[t * m..(t + 1) * m]);
            let (mut a, mut b) = ([[0i32; QPANEL]; 4], [[0i32; QPANEL]; 4]);
            madd::tile(q.panel(p), rows, &mut a);
            reference_tile(q.panel(p), rows, &mut b);
            assert_eq!(a, b);
        }
        Ok(())
    }

    #[test]
    fn swaps_and_sent_rows() -> Result<(), String> {
        let (vals, mut q) = rows(20, 9, 2, 3)?;
        q.swap(2, 17);
        let d = 9;
        for k in 0..d {
            assert_eq!(q.value(2, k), vals[17 * d + k]);
            assert_eq!(q.value(17, k), vals[2 * d + k]);
        }
        let sent = q
            .pairs_of(&vals[5 * d..6 * d])
            .ok_or("a row of the data refused as off its scale")?;
        let mut v = [0.0; QPANEL];
        q.tile1_pairs(&sent, 0, &mut v);
        assert_eq!(v[3].to_bits(), f64_dot(&vals, d, 5, 3).to_bits());
        assert!(q.pairs_of(&[0.3; 9]).is_none());
        Ok(())
    }
}
