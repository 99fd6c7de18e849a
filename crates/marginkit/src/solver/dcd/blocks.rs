//! Block-parallel dual coordinate descent for the linear SVC dual without the equality
//! constraint ([`solve_svc_blocks`]).
//!
//! # Algorithm (per pass)
//!
//! The movable variables are split once, by a seeded permutation, into `B` blocks of nearly equal
//! size; `B` is a parameter of the solve and never depends on the number of threads.
//!
//! 1. **Local passes, in parallel.** Every block copies `w` and runs one pass of the serial
//!    algorithm (random order from its own seeded generator, the same single-variable step,
//!    LIBLINEAR's shrinking with the previous pass's global thresholds) on its own variables
//!    against its copy. Block `b` ends at `a + D_b` with `w_b = w + Z D_b` and knows the exact
//!    change of the objective along its own moves, `f(a + D_b) - f(a) = sum of (G s + Q_ii s^2 / 2)`
//!    over its steps.
//! 2. **Merge, in block order.** The direction `D = sum_b D_b` is feasible for every step length
//!    in `[0, 1]` (the box is a product and the blocks are disjoint). `f` is quadratic, so
//!    ```text
//!    f(a + t D) = f(a) + t g'D + t^2/2 D'QD,   g'D_b = [f(a + D_b) - f(a)] - 1/2 D_b'Q D_b,
//!    D'QD = |sum_b (w_b - w)|^2 + sum_i D_ii D_i^2
//!    ```
//!    and the step is the exact minimiser `t = clip(-g'D / D'QD, 0, 1)` (the line search of
//!    Lee & Roth 2015). By convexity `f(a + D/B) <= mean_b f(a + D_b) < f(a)`, so every pass
//!    decreases the objective at least as much as averaging the blocks (CoCoA's safe choice).
//!    Then `a += t D` and `w += t sum_b (w_b - w)`.
//! 3. The stopping rule is the serial one: the span of the projected gradients over the pass
//!    (max and min over the blocks) at most `tol`, then confirmed by one measuring pass over all
//!    variables at the merged point (and over the full set when variables were shrunk).
//!
//! # Determinism
//!
//! Every reduction runs in a fixed order: blocks are merged in block order, `w` is rebuilt from
//! `alpha` as a sum of per-chunk partial vectors (fixed chunks of samples) added in chunk order,
//! and the per-sample quantities are computed independently. The result is therefore bit for
//! bit the same for any number of threads (the threads only decide which block runs where); it
//! depends on `B` and the seed like the serial solver's depends on the seed.
//!
//! # Status (measured)
//!
//! Correct and thread-count independent, but **not faster than the serial solver** on
//! low-dimensional dense data: there every block's pass corrects nearly the whole shared
//! residual of `w`, the blocks' moves overlap, the line search shortens them to `t ~ 1/B`, and
//! variables a block moved to a bound land inside the box again (shrinking then removes fewer).
//! On 20,000 x 20 blobs (C = 1, tol 0.1) it took 4,252 passes (B = 2) and 6,916 (B = 8) where the
//! serial solver takes 659. It is therefore not used by `train` or the path.
//!
//! # Cost
//!
//! A pass costs `O(nnz(X))` spread over the blocks plus `O(B d)` for the merge of `w`; memory
//! `O(n + B d)`. With `B = 1` the merge is the identity and the serial solver is called instead.
//!
//! # Citation
//!
//! C.-J. Hsieh et al., "A dual coordinate descent method for large-scale linear SVM", ICML 2008
//! (the local step); C.-P. Lee, D. Roth, "Distributed box-constrained quadratic optimization for
//! dual linear SVM", ICML 2015 (block-diagonal local passes merged by an exact line search);
//! C. Ma et al., "Adding vs. averaging in distributed primal-dual optimization" (CoCoA+), ICML 2015.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::{check_svc, finish_svc_from, solve_svc, Budget, Coord, DcdResult, SvcDual, PG_SKIP};
use crate::data::design::{DenseRows, KeyedRows, SparseRows};
use crate::data::Features;
use crate::error::SolveError;
use crate::solver::{Equality, IterStats, Observer, Shrinking, SolverSettings, Status, VarFix};

/// Blocks of [`solve_svc_blocks`] when the caller has no reason to choose: one per core of
/// this project's 2-core reference machine (fewer blocks keep the merged step longer).
pub const DEFAULT_BLOCKS: usize = 2;

/// One block's state: its variables (with their values at the start of the pass alongside),
/// its own generator and its copy of `w`.
struct Block<K> {
    coords: Vec<Coord<K>>,
    a0: Vec<f64>,
    active: usize,
    /// Active count at the start of the current pass (positions past it did not move).
    active_start: usize,
    rng: Xoshiro256PlusPlus,
    w: Vec<f64>,
    /// `f(a + D_b) - f(a)` accumulated over the pass's steps.
    dec: f64,
    pg_max: f64,
    pg_min: f64,
    /// `|w_b - w|^2` and `sum_i D_ii D_i^2` of the pass (set by the merge).
    dw2: f64,
    dd2: f64,
}

/// Solves a linear SVC dual (no equality constraint) by block-parallel dual coordinate descent on
/// the current rayon pool (see the module docs). `blocks` (at least 1) fixes the partition and
/// with it the result, whatever the number of threads. `alpha` is the start on entry and the
/// solution on exit, as in [`solve_svc`]; [`SolverSettings::max_iter`] counts passes.
///
/// With `blocks == 1` or [`Equality::Sum`] this is [`solve_svc`] (serial).
///
/// # Errors
/// As [`solve_svc`]; [`SolveError::Dimensions`] for `blocks == 0`.
pub fn solve_svc_blocks<O: Observer>(
    prob: &SvcDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    blocks: usize,
    alpha: &mut [f64],
    obs: &mut O,
) -> Result<DcdResult, SolveError> {
    if blocks == 0 {
        return Err(SolveError::Dimensions("blocks must be >= 1"));
    }
    if blocks == 1 || matches!(prob.qp.equality, Equality::Sum { .. }) {
        return solve_svc(prob, settings, seed, alpha, obs);
    }
    let b = super::check_bias(prob.design.bias)?;
    match prob.design.x {
        Features::Dense(m) => run(
            &DenseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            blocks,
            alpha,
            obs,
        ),
        Features::Sparse(m) => run(
            &SparseRows::new(m, Some(b)),
            prob,
            settings,
            seed,
            blocks,
            alpha,
            obs,
        ),
    }
}

/// `w = sum_i a_i y_i xb_i`, summed over fixed chunks of samples in parallel and added in chunk
/// order (independent of the thread count).
fn rebuild_w_chunked<R: KeyedRows + Sync>(
    rows: &R,
    y: &[i8],
    alpha: &[f64],
    dim: usize,
    chunks: usize,
) -> Vec<f64> {
    let n = alpha.len();
    let size = n.div_ceil(chunks).max(1);
    let parts: Vec<Vec<f64>> = (0..n.div_ceil(size))
        .into_par_iter()
        .map(|c| {
            let mut w = vec![0.0; dim];
            for i in c * size..((c + 1) * size).min(n) {
                if alpha[i] != 0.0 {
                    rows.axpy(i, alpha[i] * f64::from(y[i]), &mut w);
                }
            }
            w
        })
        .collect();
    let mut w = vec![0.0; dim];
    for part in &parts {
        for (a, b) in w.iter_mut().zip(part) {
            *a += b;
        }
    }
    w
}

fn run<R, O>(
    rows: &R,
    prob: &SvcDual<'_>,
    settings: &SolverSettings,
    seed: u64,
    n_blocks: usize,
    alpha: &mut [f64],
    obs: &mut O,
) -> Result<DcdResult, SolveError>
where
    R: KeyedRows + Sync,
    R::Key: Send + Sync,
    O: Observer,
{
    check_svc(rows, prob, alpha)?;
    let n = rows.n();
    let qp = &prob.qp;
    let (p, y, upper, shift) = (qp.p, qp.y, qp.upper, prob.diag_shift);
    let dim = prob.design.x.n_cols() + 1;
    let mut w = rebuild_w_chunked(rows, y, alpha, dim, n_blocks);
    let qd: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| rows.sq_norm(i) + shift[i])
        .collect();
    let mut free: Vec<usize> = (0..n)
        .filter(|&i| qp.fixed.is_none_or(|f| f[i] == VarFix::Free) && upper[i] > 0.0)
        .collect();
    // The partition: a seeded shuffle cut into equal parts (data files are often sorted by label).
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5DEE_CE66_D1CE_B10C);
    for k in 0..free.len() {
        let j = rng.gen_range(k..free.len());
        free.swap(k, j);
    }
    let n_free = free.len();
    let size = n_free.div_ceil(n_blocks).max(1);
    let mut blocks: Vec<Block<R::Key>> = free
        .chunks(size)
        .enumerate()
        .map(|(k, part)| {
            let coords: Vec<Coord<R::Key>> = part
                .iter()
                .map(|&i| Coord {
                    i,
                    key: rows.key(i),
                    y: f64::from(y[i]),
                    a: alpha[i],
                    qd: qd[i],
                    p: p[i],
                    u: upper[i],
                    d: shift[i],
                })
                .collect();
            Block {
                a0: coords.iter().map(|c| c.a).collect(),
                active: coords.len(),
                active_start: coords.len(),
                coords,
                rng: Xoshiro256PlusPlus::seed_from_u64(
                    seed.wrapping_add((k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                ),
                w: vec![0.0; dim],
                dec: 0.0,
                pg_max: f64::NEG_INFINITY,
                pg_min: f64::INFINITY,
                dw2: 0.0,
                dd2: 0.0,
            }
        })
        .collect();
    let (status, passes) = if n_free == 0 {
        (Status::Converged, 0)
    } else {
        block_loop(rows, &mut blocks, n_free, settings, &mut w, obs)?
    };
    for blk in &blocks {
        for c in &blk.coords {
            alpha[c.i] = c.a;
        }
    }
    let w = rebuild_w_chunked(rows, y, alpha, dim, n_blocks);
    let xw: Vec<f64> = (0..n).into_par_iter().map(|i| rows.dot(i, &w)).collect();
    finish_svc_from(prob, alpha, w, xw, status, passes)
}

/// One local pass of block `blk` from the global `w` (see the module docs, step 1).
fn block_pass<R: KeyedRows>(
    rows: &R,
    blk: &mut Block<R::Key>,
    w: &[f64],
    pg_max_old: f64,
    pg_min_old: f64,
) -> Result<(), SolveError> {
    blk.w.copy_from_slice(w);
    let active = blk.active;
    blk.active_start = active;
    for k in 0..active {
        let j = blk.rng.gen_range(k..active);
        blk.coords.swap(k, j);
    }
    for (a0, c) in blk.a0.iter_mut().zip(&blk.coords[..active]) {
        *a0 = c.a;
    }
    let (mut pg_max, mut pg_min, mut dec) = (f64::NEG_INFINITY, f64::INFINITY, 0.0);
    let mut active = active;
    let mut s = 0;
    while s < active {
        let c = &mut blk.coords[s];
        let g = c.y * rows.dot_key(c.key, &blk.w) + c.p + c.d * c.a;
        if !g.is_finite() {
            return Err(SolveError::NonFinite { what: "gradient" });
        }
        let pg = if c.a == 0.0 {
            if g > pg_max_old {
                active -= 1;
                blk.coords.swap(s, active);
                blk.a0.swap(s, active);
                continue;
            }
            g.min(0.0)
        } else if c.a == c.u {
            if g < pg_min_old {
                active -= 1;
                blk.coords.swap(s, active);
                blk.a0.swap(s, active);
                continue;
            }
            g.max(0.0)
        } else {
            g
        };
        pg_max = pg_max.max(pg);
        pg_min = pg_min.min(pg);
        if pg.abs() > PG_SKIP {
            let new = c.minimizer(g)?;
            let step = new - c.a;
            if step != 0.0 {
                dec += step * (g + 0.5 * c.qd * step);
                c.a = new;
                rows.axpy_key(c.key, step * c.y, &mut blk.w);
            }
        }
        s += 1;
    }
    blk.active = active;
    blk.pg_max = pg_max;
    blk.pg_min = pg_min;
    blk.dec = dec;
    Ok(())
}

/// Runs `f` on every block in parallel and returns the first error in block order.
fn for_blocks<K: Send, F>(blocks: &mut [Block<K>], f: F) -> Result<(), SolveError>
where
    F: Fn(&mut Block<K>) -> Result<(), SolveError> + Sync + Send,
{
    let res: Vec<Result<(), SolveError>> = blocks.par_iter_mut().map(f).collect();
    res.into_iter().collect()
}

fn block_loop<R, O>(
    rows: &R,
    blocks: &mut [Block<R::Key>],
    n_free: usize,
    settings: &SolverSettings,
    w: &mut [f64],
    obs: &mut O,
) -> Result<(Status, u64), SolveError>
where
    R: KeyedRows + Sync,
    R::Key: Send + Sync,
    O: Observer,
{
    let shrink = settings.shrinking == Shrinking::On;
    let budget = Budget::new(settings);
    let (mut pg_max_old, mut pg_min_old) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut passes = 0u64;
    let mut dw = vec![0.0; w.len()];
    loop {
        {
            let w_ref: &[f64] = w;
            for_blocks(blocks, |blk| {
                block_pass(rows, blk, w_ref, pg_max_old, pg_min_old)
            })?;
        }
        // Merge (module docs, step 2): per-block |w_b - w|^2 and sum D_ii D_i^2 in parallel,
        // then the sums over blocks in block order.
        {
            let w_ref: &[f64] = w;
            for_blocks(blocks, |blk| {
                for (wb, &wg) in blk.w.iter_mut().zip(w_ref) {
                    *wb -= wg;
                }
                blk.dw2 = super::ops::dense_dot(&blk.w, &blk.w);
                blk.dd2 = blk.coords[..blk.active_start]
                    .iter()
                    .zip(&blk.a0)
                    .map(|(c, &a0)| c.d * (c.a - a0) * (c.a - a0))
                    .sum();
                Ok(())
            })?;
        }
        dw.iter_mut().for_each(|v| *v = 0.0);
        let (mut gd, mut dd2) = (0.0, 0.0);
        for blk in blocks.iter() {
            for (a, b) in dw.iter_mut().zip(&blk.w) {
                *a += b;
            }
            gd += blk.dec - 0.5 * (blk.dw2 + blk.dd2);
            dd2 += blk.dd2;
        }
        let quad = super::ops::dense_dot(&dw, &dw) + dd2;
        let t = if quad > 0.0 && gd < 0.0 {
            (-gd / quad).min(1.0)
        } else if quad > 0.0 {
            0.0
        } else {
            1.0
        };
        if t == 1.0 {
            for (a, b) in w.iter_mut().zip(&dw) {
                *a += b;
            }
        } else {
            for (a, b) in w.iter_mut().zip(&dw) {
                *a += t * b;
            }
            for_blocks(blocks, |blk| {
                let m = blk.active_start;
                for (c, &a0) in blk.coords[..m].iter_mut().zip(&blk.a0) {
                    c.a = (a0 + t * (c.a - a0)).clamp(0.0, c.u);
                }
                Ok(())
            })?;
        }
        passes += 1;
        let pg_max = blocks
            .iter()
            .fold(f64::NEG_INFINITY, |m, b| m.max(b.pg_max));
        let pg_min = blocks.iter().fold(f64::INFINITY, |m, b| m.min(b.pg_min));
        let active: usize = blocks.iter().map(|b| b.active).sum();
        let gap = pg_max - pg_min;
        if active == 0 || gap <= settings.tol {
            if active == n_free {
                // Confirm at the merged point (the pass measured at the blocks' local points).
                let w_ref: &[f64] = w;
                for_blocks(blocks, |blk| {
                    let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
                    for c in &blk.coords {
                        let g = c.y * rows.dot_key(c.key, w_ref) + c.p + c.d * c.a;
                        let pg = if c.a == 0.0 {
                            g.min(0.0)
                        } else if c.a == c.u {
                            g.max(0.0)
                        } else {
                            g
                        };
                        hi = hi.max(pg);
                        lo = lo.min(pg);
                    }
                    blk.pg_max = hi;
                    blk.pg_min = lo;
                    Ok(())
                })?;
                let hi = blocks
                    .iter()
                    .fold(f64::NEG_INFINITY, |m, b| m.max(b.pg_max));
                let lo = blocks.iter().fold(f64::INFINITY, |m, b| m.min(b.pg_min));
                if hi - lo <= settings.tol {
                    return Ok((Status::Converged, passes));
                }
            }
            for blk in blocks.iter_mut() {
                blk.active = blk.coords.len();
            }
            pg_max_old = f64::INFINITY;
            pg_min_old = f64::NEG_INFINITY;
        } else if shrink {
            pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
            pg_min_old = if pg_min >= 0.0 {
                f64::NEG_INFINITY
            } else {
                pg_min
            };
        }
        let stats = IterStats {
            iterations: passes,
            max_violation: if gap.is_finite() { gap } else { 0.0 },
            active,
        };
        if let Some(st) = budget.after_pass(obs, stats) {
            return Ok((st, passes));
        }
    }
}
