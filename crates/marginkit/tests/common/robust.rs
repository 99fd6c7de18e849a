//! Helpers of the robust-path oracles: a seeded generator, the Gram matrix and its pivoted
//! Cholesky factor, in which the clarabel problems are posed.

/// Deterministic pseudo-random numbers (splitmix64), so the tests need no RNG crate.
pub struct Rng(pub u64);

impl Rng {
    /// Uniform in `[0, 1)`.
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-300), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// The `n x n` Gram matrix of the kernel `k(i, j)`, row by row.
pub fn gram(n: usize, k: impl Fn(usize, usize) -> f64) -> Vec<Vec<f64>> {
    (0..n).map(|i| (0..n).map(|j| k(i, j)).collect()).collect()
}

/// `K = G G'` by pivoted Cholesky (rank-revealing), so that the oracles work in the
/// well-conditioned primal variables `w = G' beta` (`f = G w`, `1/2 beta'K beta = 1/2 |w|^2`).
pub fn factor(kmat: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = kmat.len();
    let maxd = (0..n).map(|i| kmat[i][i]).fold(0.0, f64::max);
    let mut d: Vec<f64> = (0..n).map(|i| kmat[i][i]).collect();
    let mut g: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut used = vec![false; n];
    loop {
        let (mut p, mut best) = (usize::MAX, 1e-13 * maxd);
        for i in 0..n {
            if !used[i] && d[i] > best {
                best = d[i];
                p = i;
            }
        }
        if p == usize::MAX {
            break;
        }
        used[p] = true;
        let piv = d[p].sqrt();
        let col: Vec<f64> = (0..n)
            .map(|i| {
                let s: f64 = g[i].iter().zip(&g[p]).map(|(a, b)| a * b).sum();
                (kmat[i][p] - s) / piv
            })
            .collect();
        for i in 0..n {
            g[i].push(col[i]);
            d[i] -= col[i] * col[i];
        }
    }
    g
}
