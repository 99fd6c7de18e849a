//! The Badoiu-Clarkson swap routine `coreset(P, C)` (paper Section IV-A; Badoiu & Clarkson 2008).
//!
//! ```text
//! 1: a   = argmax_{p in P} |p - c(C)|            (ties: smallest id)
//! 2: C_a = C + {a}                               (k + 1 entries; C is a multiset)
//! 3: b   = argmax_{q in C_a} key(C_a - {q})      (key = (r^2, sorted ids): a total order)
//! 4: if r^2(C_a - {b}) > r^2(C) (1 + tol): C = C_a - {b}, goto 1;  else return C
//! ```
//!
//! Step 3 shortcut (digest section 3.4): when `C_a` has a duplicate or a point of zero weight in
//! `MEB(C_a)`, removing it leaves `MEB(C_a)` (the largest possible ball); among those the removal
//! leaving the lexicographically largest id list is taken. Only when every point of `C_a` is a
//! support point are the `k + 1` sub-balls solved. A farthest point already in `C`, or inside
//! the ball, cannot increase the radius, so the routine returns at once.
//!
//! Every set is canonicalised (sorted by id, duplicates merged) before its Gram matrix is formed,
//! so the same set gives the same `r^2` bits on every node. Cost per swap: one farthest scan
//! (`|P| k` kernel values, parallel above 4096 points with a thread-count independent reduction),
//! one `(k+1)`-point MEB, and rarely `k+1` `k`-point MEBs.

use std::cmp::Ordering;
use std::collections::HashMap;

use rayon::prelude::*;

use super::meb::{kkt_inverse, solve_simplex, SimplexMeb, Start};
use super::space::{FeatureKernel, PointRef, PointSet};

/// The points a node works on: its own shard plus the foreign points it received (deduplicated
/// by id). Pool index `i < own.len()` is an own point.
#[derive(Debug)]
pub struct Pool<'a> {
    own: &'a PointSet,
    own_index: Option<&'a HashMap<u64, usize>>,
    extra: PointSet,
    extra_index: HashMap<u64, usize>,
}

impl<'a> Pool<'a> {
    /// A pool over `own` (its ids must be distinct). `own_index` maps ids to rows of `own`; without
    /// it, ids of foreign points are looked up by a scan of `own`.
    pub fn new(own: &'a PointSet, own_index: Option<&'a HashMap<u64, usize>>) -> Self {
        Self {
            own,
            own_index,
            extra: PointSet::new(own.dim()),
            extra_index: HashMap::new(),
        }
    }
    /// Number of points.
    pub fn len(&self) -> usize {
        self.own.len() + self.extra.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Point `i`.
    pub fn get(&self, i: usize) -> PointRef<'_> {
        if i < self.own.len() {
            self.own.get(i)
        } else {
            self.extra.get(i - self.own.len())
        }
    }
    /// Pool index of `id`, if present.
    pub fn find(&self, id: u64) -> Option<usize> {
        let own = match self.own_index {
            Some(ix) => ix.get(&id).copied(),
            None => self.own.ids().iter().position(|&v| v == id),
        };
        own.or_else(|| self.extra_index.get(&id).map(|&e| e + self.own.len()))
    }
    /// Adds point `i` of `src` unless its id is present; returns its pool index.
    pub fn add(&mut self, src: &PointSet, i: usize) -> usize {
        let id = src.id(i);
        if let Some(p) = self.find(id) {
            return p;
        }
        self.extra.push_from(src, i);
        let e = self.extra.len() - 1;
        self.extra_index.insert(id, e);
        e + self.own.len()
    }
}

/// The MEB of a multiset of pool points.
#[derive(Debug, Clone, PartialEq)]
pub struct SetMeb {
    /// Distinct pool indices, sorted by id.
    pub distinct: Vec<usize>,
    /// Solution over `distinct`.
    pub sol: SimplexMeb,
}

/// MEB of the multiset `set` (pool indices sorted by id).
pub fn meb_of(pool: &Pool<'_>, kern: &FeatureKernel, set: &[usize]) -> SetMeb {
    let mut distinct: Vec<usize> = Vec::with_capacity(set.len());
    for &p in set {
        if distinct
            .last()
            .is_none_or(|&q| pool.get(q).id != pool.get(p).id)
        {
            distinct.push(p);
        }
    }
    let m = distinct.len();
    let mut g = vec![0.0; m * m];
    for a in 0..m {
        for b in a..m {
            let v = kern.eval(pool.get(distinct[a]), pool.get(distinct[b]));
            g[a * m + b] = v;
            g[b * m + a] = v;
        }
    }
    let diag: Vec<f64> = (0..m).map(|a| g[a * m + a]).collect();
    let sol = solve_simplex(&diag, |i, j| g[i * m + j], Start::All);
    SetMeb { distinct, sol }
}

/// Squared distance from the centre of `meb` to pool point `p`.
pub fn dist2(pool: &Pool<'_>, kern: &FeatureKernel, meb: &SetMeb, p: usize) -> f64 {
    let pp = pool.get(p);
    let mut s = 0.0;
    for (j, &u) in meb.distinct.iter().enumerate() {
        let xj = meb.sol.x[j];
        if xj != 0.0 {
            s += xj * kern.eval(pool.get(u), pp);
        }
    }
    kern.eval(pp, pp) - 2.0 * s + meb.sol.c2
}

/// The farthest pool point from the centre of `meb`: `(index, distance^2)`, ties to the smallest id.
pub fn farthest(pool: &Pool<'_>, kern: &FeatureKernel, meb: &SetMeb) -> (usize, f64) {
    let better = |a: (usize, f64), b: (usize, f64)| -> (usize, f64) {
        match a.1.total_cmp(&b.1) {
            Ordering::Greater => a,
            Ordering::Less => b,
            Ordering::Equal => {
                if pool.get(a.0).id <= pool.get(b.0).id {
                    a
                } else {
                    b
                }
            }
        }
    };
    let n = pool.len();
    if n > 4096 {
        (0..n)
            .into_par_iter()
            .map(|p| (p, dist2(pool, kern, meb, p)))
            .reduce(
                || (usize::MAX, f64::NEG_INFINITY),
                |a, b| {
                    if a.0 == usize::MAX {
                        b
                    } else if b.0 == usize::MAX {
                        a
                    } else {
                        better(a, b)
                    }
                },
            )
    } else {
        let mut best = (0, dist2(pool, kern, meb, 0));
        for p in 1..n {
            best = better(best, (p, dist2(pool, kern, meb, p)));
        }
        best
    }
}

/// Output of [`coreset`].
#[derive(Debug, Clone, PartialEq)]
pub struct CoresetResult {
    /// The core-set: `k` pool indices (a multiset), sorted by id.
    pub members: Vec<usize>,
    /// Its MEB.
    pub meb: SetMeb,
    /// Accepted swaps.
    pub swaps: usize,
}

fn ids_of(pool: &Pool<'_>, set: &[usize]) -> Vec<u64> {
    set.iter().map(|&p| pool.get(p).id).collect()
}

/// The total order of core-sets: `(r^2, sorted id list)`.
pub fn key_cmp(r2a: f64, ida: &[u64], r2b: f64, idb: &[u64]) -> Ordering {
    r2a.total_cmp(&r2b).then_with(|| ida.cmp(idb))
}

/// Sorts pool indices by id (the canonical order of a multiset).
pub fn canonical(pool: &Pool<'_>, mut set: Vec<usize>) -> Vec<usize> {
    set.sort_by_key(|&p| pool.get(p).id);
    set
}

/// The paper's routine `coreset(P, C)` on pool `P` from `init` (pool indices, any order; its
/// size is `k`). `tol` is the relative guard of the strict-increase test.
pub fn coreset(pool: &Pool<'_>, kern: &FeatureKernel, init: Vec<usize>, tol: f64) -> CoresetResult {
    let mut cur = canonical(pool, init);
    let mut m = meb_of(pool, kern, &cur);
    let mut swaps = 0;
    while swaps < 100_000 {
        let (a, da) = farthest(pool, kern, &m);
        let aid = pool.get(a).id;
        if da <= m.sol.r2 || cur.iter().any(|&p| pool.get(p).id == aid) {
            break;
        }
        let mut ca = cur.clone();
        ca.push(a);
        let ca = canonical(pool, ca);
        let mca = meb_of(pool, kern, &ca);
        let ca_ids = ids_of(pool, &ca);
        // Positions whose removal keeps MEB(C_a): duplicates and zero-weight points.
        let mut keep_ball: Vec<usize> = Vec::new();
        for pos in 0..ca.len() {
            let id = ca_ids[pos];
            let dup =
                (pos > 0 && ca_ids[pos - 1] == id) || (pos + 1 < ca.len() && ca_ids[pos + 1] == id);
            let zero = !dup
                && mca
                    .distinct
                    .iter()
                    .position(|&q| pool.get(q).id == id)
                    .is_some_and(|j| mca.sol.x[j] == 0.0);
            if dup || zero {
                keep_ball.push(pos);
            }
        }
        let without = |pos: usize| -> Vec<usize> {
            let mut v = ca.clone();
            v.remove(pos);
            v
        };
        let (next, mnext) = if !keep_ball.is_empty() {
            let mut best = keep_ball[0];
            let mut best_ids = ids_of(pool, &without(best));
            for &pos in &keep_ball[1..] {
                let ids = ids_of(pool, &without(pos));
                if ids > best_ids {
                    best = pos;
                    best_ids = ids;
                }
            }
            let next = without(best);
            let mnext = meb_of(pool, kern, &next);
            (next, mnext)
        } else {
            // Every point of C_a (distinct, sorted by id) is a support point. The sub-ball without
            // position q: when the KKT solution of C_a minus q (a rank-one downdate of the inverse
            // KKT matrix of C_a: z' = z - N[:, q] z_q / N_qq) is non-negative it is optimal,
            // with r^2 = (g'x - mu) / 2; otherwise solve it. A deterministic function of C_a.
            let n = ca.len();
            let mut g = vec![0.0; n * n];
            for a in 0..n {
                for b in a..n {
                    let v = kern.eval(pool.get(ca[a]), pool.get(ca[b]));
                    g[a * n + b] = v;
                    g[b * n + a] = v;
                }
            }
            let inv = kkt_inverse(&g, n);
            let mut best: Option<(usize, f64, Vec<u64>)> = None;
            for pos in 0..n {
                let cand = without(pos);
                let ids = ids_of(pool, &cand);
                let fast = inv.as_ref().and_then(|nm| {
                    let w = n + 1;
                    let mut z: Vec<f64> = mca.sol.x.clone();
                    // mu of C_a: 2(Gx)_j - g_j for any support j.
                    let mu = 2.0 * (0..n).map(|c| g[c] * z[c]).sum::<f64>() - g[0];
                    z.push(mu);
                    let zq = z[pos];
                    let nqq = nm[pos * w + pos];
                    if nqq.abs() < 1e-300 {
                        return None;
                    }
                    let mut gx = 0.0;
                    let mut sum = 0.0;
                    let mut mu2 = 0.0;
                    for r in 0..w {
                        if r == pos {
                            continue;
                        }
                        let v = z[r] - nm[r * w + pos] * zq / nqq;
                        if r < n {
                            if v < 0.0 {
                                return None;
                            }
                            gx += g[r * n + r] * v;
                            sum += v;
                        } else {
                            mu2 = v;
                        }
                    }
                    ((sum - 1.0).abs() < 1e-9).then_some(((gx - mu2) / 2.0).max(0.0))
                });
                let r2 = match fast {
                    Some(r2) => r2,
                    None => meb_of(pool, kern, &cand).sol.r2,
                };
                let take = match &best {
                    None => true,
                    Some((_, br2, bid)) => key_cmp(r2, &ids, *br2, bid) == Ordering::Greater,
                };
                if take {
                    best = Some((pos, r2, ids));
                }
            }
            let Some((pos, _, _)) = best else { break };
            let next = without(pos);
            let mnext = meb_of(pool, kern, &next);
            (next, mnext)
        };
        if mnext.sol.r2 > m.sol.r2 + tol * m.sol.r2 {
            cur = next;
            m = mnext;
            swaps += 1;
        } else {
            break;
        }
    }
    CoresetResult {
        members: cur,
        meb: m,
        swaps,
    }
}

/// `k` initial members from `n` own points: all points padded cyclically when `n < k`, else a
/// seeded random subset (a partial Fisher-Yates shuffle driven by [`super::hash4`]).
pub fn initial_members(n: usize, k: usize, seed: u64, node: u64) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    if n <= k {
        return (0..k).map(|i| i % n).collect();
    }
    let mut perm: Vec<usize> = (0..n).collect();
    for i in 0..k {
        let r = super::hash4(seed, node, i as u64, 0x1d17) % (n - i) as u64;
        perm.swap(i, i + r as usize);
    }
    perm.truncate(k);
    perm
}
