//! A small dense Cholesky factor `M = L L'` of the active-set matrix `M = K_AA + tau I`, updated
//! when the active set gains a sample (a bordered row: `O(k^2)`) or loses one (deletion of a row
//! and column followed by a rank-one update of the trailing block: `O(k^2)`), never refactored.
//!
//! **Singular systems.** Without a bias, `K_AA` is singular when the active set has more samples
//! than the feature space has dimensions (linear kernel with `|A| > d`) or holds duplicated points.
//! The factor is of `K_AA + tau I` with a tiny ridge `tau` (relative to the largest diagonal).
//! The right-hand sides of the homotopy are combinations of kernel columns, so they lie in the
//! range of `K_AA`; the ridge solution then tends to the minimum-norm solution as `tau -> 0`, and
//! keeps `K_AA beta_A` exact up to `O(tau)`. A pivot that rounding makes smaller than `tau / 2` is
//! raised to `tau` (reported by [`Chol::push`]).

/// Lower-triangular factor, row-major with a fixed stride (grown by doubling).
#[derive(Debug, Clone)]
pub(crate) struct Chol {
    k: usize,
    cap: usize,
    l: Vec<f64>,
    tau: f64,
    work: Vec<f64>,
}

impl Chol {
    pub fn new(tau: f64) -> Self {
        Self {
            k: 0,
            cap: 0,
            l: Vec::new(),
            tau,
            work: Vec::new(),
        }
    }

    fn grow(&mut self) {
        let cap = (self.cap * 2).max(16);
        let mut l = vec![0.0; cap * cap];
        for i in 0..self.k {
            l[i * cap..i * cap + i + 1]
                .copy_from_slice(&self.l[i * self.cap..i * self.cap + i + 1]);
        }
        self.l = l;
        self.cap = cap;
        self.work.resize(cap, 0.0);
    }

    /// Appends a row/column: `col[r] = K(a_r, new)` for the current members, `diag = K(new, new)`.
    /// Returns the squared pivot before any raise: `tau` plus the squared distance of the new
    /// member's feature vector from the span of the current ones (up to rounding), so a value
    /// near `tau` marks a numerically dependent sample (the pivot is raised to `tau` when
    /// rounding makes it smaller than `tau / 2`).
    pub fn push(&mut self, col: &[f64], diag: f64) -> f64 {
        if self.k == self.cap {
            self.grow();
        }
        let (k, cap) = (self.k, self.cap);
        // Forward substitution L z = col, written into the new row.
        for (i, &ci) in col.iter().enumerate().take(k) {
            let row = &self.l[i * cap..i * cap + i];
            let mut s = ci;
            for (j, &lij) in row.iter().enumerate() {
                s -= lij * self.l[k * cap + j];
            }
            self.l[k * cap + i] = s / self.l[i * cap + i];
        }
        let zz: f64 = self.l[k * cap..k * cap + k].iter().map(|v| v * v).sum();
        let d2 = diag + self.tau - zz;
        let raised = d2 < 0.5 * self.tau || d2 <= 0.0;
        let piv = if raised {
            self.tau.max(f64::MIN_POSITIVE)
        } else {
            d2
        };
        self.l[k * cap + k] = piv.sqrt();
        self.k += 1;
        d2
    }

    /// Removes position `p` (the later members move up by one).
    pub fn remove(&mut self, p: usize) {
        let (k, cap) = (self.k, self.cap);
        if p >= k {
            return;
        }
        // x = column p below the diagonal; the trailing block absorbs x x' by a rank-one update.
        let m = k - p - 1;
        for i in 0..m {
            self.work[i] = self.l[(p + 1 + i) * cap + p];
        }
        for t in 0..m {
            let r = p + 1 + t;
            let lkk = self.l[r * cap + r];
            let xk = self.work[t];
            let h = lkk.hypot(xk);
            let (c, s) = (h / lkk, xk / lkk);
            self.l[r * cap + r] = h;
            for i in (t + 1)..m {
                let ri = p + 1 + i;
                let v = (self.l[ri * cap + r] + s * self.work[i]) / c;
                self.work[i] = c * self.work[i] - s * v;
                self.l[ri * cap + r] = v;
            }
        }
        // Shift rows p+1.. up and columns p+1.. left.
        for i in (p + 1)..k {
            for j in 0..=i {
                if j == p {
                    continue;
                }
                let jj = if j > p { j - 1 } else { j };
                self.l[(i - 1) * cap + jj] = self.l[i * cap + j];
            }
        }
        self.k -= 1;
    }

    /// Members whose squared pivot exceeds `thresh`: the factor is a Cholesky factorization in
    /// the members' order (pushes border it, removals keep it one), so a squared pivot is the
    /// squared distance of that member's feature vector from the span of the earlier members
    /// (plus `tau`), and this counts the numerically independent members (the rank of `K_AA`).
    pub fn rank_above(&self, thresh: f64) -> usize {
        (0..self.k)
            .filter(|&i| {
                let d = self.l[i * self.cap + i];
                d * d > thresh
            })
            .count()
    }

    /// The ridge.
    pub fn tau(&self) -> f64 {
        self.tau
    }

    /// Writes the factor's lower triangle, row by row (`k (k + 1) / 2` values), into `v`.
    pub fn packed_into(&self, v: &mut Vec<f64>) {
        v.clear();
        for i in 0..self.k {
            v.extend_from_slice(&self.l[i * self.cap..i * self.cap + i + 1]);
        }
    }

    /// Rebuilds [`Chol::packed_into`]'s factor of `k` members (`None` if the length is wrong).
    pub fn from_packed(tau: f64, k: usize, packed: &[f64]) -> Option<Self> {
        if k.checked_mul(k + 1).map(|m| m / 2) != Some(packed.len()) {
            return None;
        }
        let cap = k.max(16);
        let mut l = vec![0.0; cap * cap];
        let mut at = 0;
        for i in 0..k {
            l[i * cap..i * cap + i + 1].copy_from_slice(&packed[at..at + i + 1]);
            at += i + 1;
        }
        Some(Self {
            k,
            cap,
            l,
            tau,
            work: vec![0.0; cap],
        })
    }

    /// Solves `M x = b` in place.
    pub fn solve(&self, b: &mut [f64]) {
        let (k, cap) = (self.k, self.cap);
        for i in 0..k {
            let mut s = b[i];
            let row = &self.l[i * cap..i * cap + i];
            for (j, &lij) in row.iter().enumerate() {
                s -= lij * b[j];
            }
            b[i] = s / self.l[i * cap + i];
        }
        for i in (0..k).rev() {
            let mut s = b[i];
            for (j, &bj) in b.iter().enumerate().take(k).skip(i + 1) {
                s -= self.l[j * cap + i] * bj;
            }
            b[i] = s / self.l[i * cap + i];
        }
    }
}

/// Solves `(K_AA + tau I) x = b` in place for the active samples `idx` (factor `ch`). For the
/// linear kernel with more samples than the Gram block's rank, `K_AA` is singular and the ridge
/// would amplify the part of `b` outside its range (rounding, or an inexact start) by `1 / tau`
/// into a large null-space move of the coefficients: `f` does not see it, but the coefficients
/// leave their boxes and predictions lose every digit to cancellation. The solution is then
/// filtered twice, `x <- M^-1 K_AA x` (eigen-gain `lambda^2 / (lambda + tau)^3`): in-range
/// components are kept to `O(tau / lambda)`, null-space components removed (the minimum-norm
/// least-squares solution in the limit). Cost `O(|A| d + |A|^2)` per filter; `g` is work space.
pub(crate) fn solve_in_range(
    ch: &Chol,
    kern: &mut super::kern::Kern<'_>,
    idx: &[usize],
    x: &mut [f64],
    g: &mut Vec<f64>,
) {
    ch.solve(x);
    if kern.rank_bound().is_some_and(|r| idx.len() > r) {
        g.clear();
        g.resize(x.len(), 0.0);
        for _ in 0..2 {
            kern.gram_apply(idx, x, g);
            x.copy_from_slice(g);
            ch.solve(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Vec<f64> {
        // A Gram matrix of n points in 3-D plus n-dependent jitter: SPD for n <= 3, PSD beyond.
        let pts: Vec<[f64; 4]> = (0..n)
            .map(|i| {
                let t = i as f64;
                [(t * 0.7).sin(), (t * 1.3).cos(), t * 0.1, 1.0]
            })
            .collect();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let d2: f64 = (0..4).map(|c| (pts[i][c] - pts[j][c]).powi(2)).sum();
                k[i * n + j] = (-0.5 * d2).exp();
            }
        }
        k
    }

    fn check(ch: &Chol, idx: &[usize], k: &[f64], n: usize) {
        // Solve against a known x and compare.
        let m = idx.len();
        let x: Vec<f64> = (0..m).map(|i| 1.0 + i as f64 * 0.25).collect();
        let mut b: Vec<f64> = (0..m)
            .map(|r| (0..m).map(|c| k[idx[r] * n + idx[c]] * x[c]).sum::<f64>() + ch.tau * x[r])
            .collect();
        ch.solve(&mut b);
        for (a, e) in b.iter().zip(&x) {
            assert!((a - e).abs() < 1e-8, "{a} vs {e}");
        }
    }

    #[test]
    fn push_remove_matches_fresh_solves() {
        let n = 9;
        let k = spd(n);
        let mut ch = Chol::new(1e-12);
        let mut idx: Vec<usize> = Vec::new();
        for &j in &[0, 3, 5, 1, 8, 2] {
            let col: Vec<f64> = idx.iter().map(|&a| k[a * n + j]).collect();
            assert!(ch.push(&col, k[j * n + j]) > 1e3 * ch.tau);
            idx.push(j);
            check(&ch, &idx, &k, n);
        }
        for &p in &[2, 0, 3] {
            ch.remove(p);
            idx.remove(p);
            check(&ch, &idx, &k, n);
        }
        for &j in &[4, 6] {
            let col: Vec<f64> = idx.iter().map(|&a| k[a * n + j]).collect();
            ch.push(&col, k[j * n + j]);
            idx.push(j);
            check(&ch, &idx, &k, n);
        }
    }

    #[test]
    fn dependent_sample_is_regularized() {
        // Two identical points: the second pivot is O(tau), solves stay finite and consistent.
        let mut ch = Chol::new(1e-9);
        assert!(ch.push(&[], 2.0) > 1.0);
        assert!(ch.push(&[2.0], 2.0) < 1e3 * ch.tau);
        let mut b = vec![1.0, 1.0];
        ch.solve(&mut b);
        assert!(b.iter().all(|v| v.is_finite()));
        assert!((2.0 * (b[0] + b[1]) - 1.0).abs() < 1e-6);
    }
}
