//! Multi-core dual coordinate descent for the linear SVC dual without the equality constraint
//! and for the SVR dual ([`solve_svc_parallel`], [`solve_svr_parallel`]).
//!
//! # Algorithm
//!
//! Each pass shuffles the active variables (the serial solver's generator, shrinking and
//! stopping rule) and walks them in consecutive blocks of [`PAR_BLOCK`] variables. For a block:
//!
//! 1. **Gradients, in parallel.** `G_i = y_i w'xb_i + p_i + D_ii a_i` for every variable of
//!    the block at the current `w` (read-only, shared by the threads). This is the step that
//!    touches every active row, and the one whose cost is memory latency: the rows are visited
//!    in random order.
//! 2. **Updates, in block order, on one thread.** The projected gradient from step 1 decides
//!    what happens to each variable: shrunk (the serial solver's rule with the previous pass's
//!    thresholds), left alone (`|PG| <= PG_SKIP`), or updated. An update recomputes `G_i`
//!    at the current `w` (earlier updates of the block have moved it) and takes the exact
//!    single-variable step, then `w += step y_i xb_i`. The row was just read by step 1, so
//!    both operations hit the cache.
//!
//! This is the framework of Chiang, Lee & Lin (2016): a block's gradients are computed in
//! parallel and only the variables whose projected gradient is non-zero are updated by
//! sequential coordinate steps with fresh gradients. Late in a solve most active variables sit
//! at a bound with a zero projected gradient, so most of the work is in step 1. A variable
//! whose gradient became non-zero only through the updates earlier in its block waits for
//! the next pass; every step taken is an exact coordinate minimisation, so the objective never
//! increases and the serial solver's convergence argument carries over.
//!
//! The stopping rule is the serial one, measured on the projected gradients of step 1; when a
//! pass over the full set meets it, `w` is rebuilt from the dual variables and every
//! projected gradient is measured again at that point before convergence is declared. The
//! serial solver's face steps (SVC) run between passes under the same work budget.
//!
//! # Determinism
//!
//! The block size does not depend on the number of threads; each gradient of step 1 is
//! computed on its own, step 2 runs in a fixed order, and the rebuild of `w` sums fixed chunks
//! of samples in chunk order. The iterates, and therefore the result, are bit for bit the same
//! at any number of threads from 2 up. On a one-thread pool, and for fewer than
//! [`PAR_MIN_ROWS`] samples at any thread count, these functions call the serial solvers
//! ([`super::solve_svc`], [`super::solve_svr`]) instead: their iterates differ (every gradient
//! is fresh there), and both reach the same optimum to the tolerance. So a result depends on
//! the thread count only through "one thread or more", and only from [`PAR_MIN_ROWS`] samples
//! up.
//!
//! # Cost
//!
//! A pass costs `O(nnz(X_active))` in step 1, shared by the threads, plus two row operations
//! per updated variable in step 2, serial but cache-resident. Memory: `O(n + d)` and
//! [`PAR_BLOCK`] gradients. Synchronisation: one fork-join per block.
//!
//! # Citation
//!
//! W.-L. Chiang, M.-C. Lee, C.-J. Lin, "Parallel dual coordinate descent method for
//! large-scale linear classification in multi-core environments", KDD 2016 (the framework:
//! parallel gradients of a block, sequential updates of its variables with non-zero projected
//! gradient). The single-variable steps are those of Hsieh et al. 2008 (SVC) and Ho & Lin 2012
//! (SVR), as in [`super`].

use rayon::prelude::*;

use super::{
    face_step, svr_minimizer, svr_violation, Budget, Coord, FaceScratch, Final, Rows, SvrCtx,
    FACE_CG_MAX, FACE_REPEAT, FACE_WORK_RATIO, PG_SKIP,
};
use crate::error::SolveError;
use crate::solver::{IterStats, Observer, Shrinking, SolverSettings, Status};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Variables per block. Large enough that a block's gradients (step 1) outweigh a fork-join
/// many times over, small enough that the block's rows are still in cache for step 2 and that
/// `w` moves little between a gradient and its use.
pub const PAR_BLOCK: usize = 2048;

/// Fewest samples for which [`super::solve_svc_parallel`] and [`super::solve_svr_parallel`]
/// run the block-parallel passes; below it a pass is a handful of blocks, each too small to
/// pay for its fork-join, and they call the serial solvers (so that small problems also give
/// the same result at every thread count).
pub const PAR_MIN_ROWS: usize = 4 * PAR_BLOCK;

/// Fewest gradients a thread computes in one piece of step 1.
const MIN_SPLIT: usize = 256;

/// Samples per chunk when `w` is rebuilt in parallel (fixed, so the sum does not depend on the
/// thread count).
const REBUILD_CHUNK: usize = 16_384;

/// `w = sum_i a_i y_i xb_i` (`scale_i = a_i y_i` for SVC, `beta_i` for SVR), summed over fixed
/// chunks of samples in parallel and added in chunk order.
pub(super) fn rebuild_w_par<R, F>(rows: &R, coef: F, w: &mut [f64])
where
    R: Rows + Sync,
    F: Fn(usize) -> f64 + Sync,
{
    let n = rows.n();
    let dim = w.len();
    let parts: Vec<Vec<f64>> = (0..n.div_ceil(REBUILD_CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut part = vec![0.0; dim];
            for i in c * REBUILD_CHUNK..((c + 1) * REBUILD_CHUNK).min(n) {
                let s = coef(i);
                if s != 0.0 {
                    rows.axpy(i, s, &mut part);
                }
            }
            part
        })
        .collect();
    w.iter_mut().for_each(|v| *v = 0.0);
    for part in &parts {
        for (a, b) in w.iter_mut().zip(part) {
            *a += b;
        }
    }
}

/// `xw_i = xb_i'w` for every row, in parallel.
pub(super) fn margins_par<R: Rows + Sync>(rows: &R, w: &[f64], xw: &mut Vec<f64>) {
    xw.clear();
    (0..rows.n())
        .into_par_iter()
        .with_min_len(MIN_SPLIT)
        .map(|i| rows.dot(i, w))
        .collect_into_vec(xw);
}

/// Moves the variables at `kept..end` (shrunk in this block) to the end of the active range
/// `..active` and returns the new active count. The unvisited variables at `end..active` fill
/// the gap (in a different, still deterministic, order).
fn drop_shrunk<T>(v: &mut [T], kept: usize, end: usize, active: usize) -> usize {
    let m = end - kept;
    let u = active - end;
    for t in 0..m.min(u) {
        v.swap(kept + t, active - 1 - t);
    }
    active - m
}

/// Step 1 for an SVC block: `out[k] = G` of `cs[k]` at `w`, in parallel pieces of
/// [`MIN_SPLIT`]; each piece reads its rows [`AHEAD`] steps early so that their cache misses
/// overlap.
fn block_gradients<R>(rows: &R, cs: &[Coord<R::Key>], w: &[f64], out: &mut [f64])
where
    R: Rows + Sync,
    R::Key: Send + Sync,
{
    out.par_chunks_mut(MIN_SPLIT)
        .zip(cs.par_chunks(MIN_SPLIT))
        .for_each(|(gs, cs)| {
            let mut sink = 0.0;
            for (k, (g, c)) in gs.iter_mut().zip(cs).enumerate() {
                if let Some(a) = cs.get(k + AHEAD) {
                    sink += rows.touch(a.key);
                }
                *g = c.y * rows.dot_key(c.key, w) + c.p + c.d * c.a;
            }
            std::hint::black_box(sink);
        });
}

/// How many rows ahead step 1 starts reading.
const AHEAD: usize = 6;

/// The SVC box loop of [`super::svc_box_loop`] with block-parallel gradients (module docs).
pub(super) fn svc_box_loop_par<R, O>(
    rows: &R,
    coords: &mut [Coord<R::Key>],
    settings: &SolverSettings,
    seed: u64,
    w: &mut [f64],
    fin: Final<'_>,
    obs: &mut O,
) -> Result<(Status, u64), SolveError>
where
    R: Rows + Sync,
    R::Key: Send + Sync,
    O: Observer,
{
    let shrink = settings.shrinking == Shrinking::On;
    let budget = Budget::new(settings);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n_free = coords.len();
    let mut active = n_free;
    let (mut pg_max_old, mut pg_min_old) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut passes = 0u64;
    if n_free == 0 {
        return Ok((Status::Converged, 0));
    }
    let mut face = FaceScratch::default();
    let mut work = 0usize;
    let mut grad = vec![0.0; PAR_BLOCK.min(n_free)];
    loop {
        for k in 0..active {
            let j = rng.gen_range(k..active);
            coords.swap(k, j);
        }
        let (mut pg_max, mut pg_min) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut s = 0;
        while s < active {
            let end = (s + PAR_BLOCK).min(active);
            {
                let w_ref: &[f64] = w;
                block_gradients(rows, &coords[s..end], w_ref, &mut grad[..end - s]);
            }
            let mut kept = s;
            // Whether `w` changed since step 1 (until then the block's gradients are exact).
            let mut moved = false;
            for k in s..end {
                let g = grad[k - s];
                if !g.is_finite() {
                    return Err(SolveError::NonFinite { what: "gradient" });
                }
                let c = &mut coords[k];
                let pg = if c.a == 0.0 {
                    if g > pg_max_old {
                        continue;
                    }
                    g.min(0.0)
                } else if c.a == c.u {
                    if g < pg_min_old {
                        continue;
                    }
                    g.max(0.0)
                } else {
                    g
                };
                pg_max = pg_max.max(pg);
                pg_min = pg_min.min(pg);
                if pg.abs() > PG_SKIP {
                    let g = if moved {
                        let g = c.y * rows.dot_key(c.key, w) + c.p + c.d * c.a;
                        if !g.is_finite() {
                            return Err(SolveError::NonFinite { what: "gradient" });
                        }
                        g
                    } else {
                        g
                    };
                    let new = c.minimizer(g)?;
                    let step = new - c.a;
                    if step != 0.0 {
                        c.a = new;
                        rows.axpy_key(c.key, step * c.y, w);
                        moved = true;
                    }
                }
                coords.swap(kept, k);
                kept += 1;
            }
            active = drop_shrunk(coords, kept, end, active);
            s = kept;
        }
        passes += 1;
        work += 2 * active;
        let gap = pg_max - pg_min;
        if active == 0 || gap <= settings.tol {
            if active == n_free {
                // Re-measure at the final point, as the serial loop does (see there).
                for c in &coords[..n_free] {
                    fin.alpha[c.i] = c.a;
                }
                let (alpha, y) = (&*fin.alpha, fin.y);
                rebuild_w_par(rows, |i| alpha[i] * f64::from(y[i]), w);
                margins_par(rows, w, fin.xw);
                let (mut hi, mut lo) = (f64::NEG_INFINITY, f64::INFINITY);
                for c in &coords[..n_free] {
                    let g = c.y * fin.xw[c.i] + c.p + c.d * c.a;
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
                if hi - lo <= settings.tol {
                    return Ok((Status::Converged, passes));
                }
                fin.xw.clear();
            }
            active = n_free;
            pg_max_old = f64::INFINITY;
            pg_min_old = f64::NEG_INFINITY;
        } else {
            if shrink {
                pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
                pg_min_old = if pg_min >= 0.0 {
                    f64::NEG_INFINITY
                } else {
                    pg_min
                };
            }
            let n_face = coords[..active]
                .iter()
                .filter(|c| c.a > 0.0 && c.a < c.u)
                .count();
            let cost = (2 * FACE_CG_MAX.min(n_face) + 6) * n_face;
            if passes >= 2 && n_face >= 2 && work >= FACE_WORK_RATIO * cost {
                let mut budget_left = work / FACE_WORK_RATIO;
                for _ in 0..FACE_REPEAT {
                    let used = face_step(rows, coords, active, w, &mut face, settings.tol)?;
                    if used == 0 || used >= budget_left {
                        break;
                    }
                    budget_left -= used;
                }
                work = 0;
            }
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

/// The SVR pass loop of [`super::svr_loop`] with block-parallel gradients (module docs).
pub(super) fn svr_loop_par<R: Rows + Sync, O: Observer>(
    rows: &R,
    cx: &SvrCtx<'_>,
    index: &mut [usize],
    beta: &mut [f64],
    w: &mut [f64],
    obs: &mut O,
) -> Result<(Status, u64), SolveError> {
    let (t, upper, shift, qd, eps) = (cx.t, cx.upper, cx.shift, cx.qd, cx.eps);
    let settings = cx.settings;
    let n_free = index.len();
    let mut active = n_free;
    let shrink = settings.shrinking == Shrinking::On;
    let budget = Budget::new(settings);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cx.seed);
    let mut m_old = f64::INFINITY;
    let mut norm1_init = f64::NAN;
    let mut passes = 0u64;
    let mut grad = vec![0.0; PAR_BLOCK.min(n_free.max(1))];
    let status = loop {
        if active == 0 {
            break Status::Converged;
        }
        for k in 0..active {
            let j = rng.gen_range(k..active);
            index.swap(k, j);
        }
        let (mut vmax, mut norm1) = (0.0f64, 0.0f64);
        let mut s = 0;
        while s < active {
            let end = (s + PAR_BLOCK).min(active);
            {
                let (w_ref, b_ref): (&[f64], &[f64]) = (w, beta);
                grad[..end - s]
                    .par_iter_mut()
                    .zip(index[s..end].par_iter())
                    .with_min_len(MIN_SPLIT)
                    .for_each(|(g, &i)| *g = rows.dot(i, w_ref) - t[i] + shift[i] * b_ref[i]);
            }
            let mut kept = s;
            let mut moved = false;
            for k in s..end {
                let i = index[k];
                let g = grad[k - s];
                if !g.is_finite() {
                    return Err(SolveError::NonFinite { what: "gradient" });
                }
                let (bi, ui) = (beta[i], upper[i]);
                let (v, can_shrink) = svr_violation(bi, ui, g + eps, g - eps, m_old);
                if shrink && can_shrink {
                    continue;
                }
                vmax = vmax.max(v);
                norm1 += v;
                index.swap(kept, k);
                kept += 1;
                if v <= PG_SKIP {
                    continue;
                }
                let g = if moved {
                    let g = rows.dot(i, w) - t[i] + shift[i] * bi;
                    if !g.is_finite() {
                        return Err(SolveError::NonFinite { what: "gradient" });
                    }
                    g
                } else {
                    g
                };
                let new = svr_minimizer(bi, ui, qd[i], g + eps, g - eps)?;
                let step = new - bi;
                if step != 0.0 {
                    beta[i] = new;
                    rows.axpy(i, step, w);
                    moved = true;
                }
            }
            active = drop_shrunk(index, kept, end, active);
            s = kept;
        }
        passes += 1;
        if passes == 1 {
            norm1_init = norm1;
        }
        if norm1 <= settings.tol * norm1_init {
            if active == n_free {
                break Status::Converged;
            }
            active = n_free;
            m_old = f64::INFINITY;
        } else if shrink {
            m_old = vmax;
        }
        let stats = IterStats {
            iterations: passes,
            max_violation: vmax,
            active,
        };
        if let Some(st) = budget.after_pass(obs, stats) {
            break st;
        }
    };
    Ok((status, passes))
}

#[cfg(test)]
mod tests {
    use super::drop_shrunk;

    /// Every split of a block into kept and shrunk variables, with any number of unvisited
    /// ones after it: the result is a permutation that keeps the visited-and-kept prefix, puts
    /// the shrunk ones last and the unvisited ones in between.
    #[test]
    fn drop_shrunk_moves_the_shrunk_variables_to_the_end() {
        for s in 0..3 {
            for kept in s..s + 5 {
                for end in kept..kept + 5 {
                    for active in end..end + 7 {
                        let n = active + 2;
                        let mut v: Vec<usize> = (0..n).collect();
                        let new_active = drop_shrunk(&mut v, kept, end, active);
                        assert_eq!(new_active, active - (end - kept));
                        let mut sorted = v.clone();
                        sorted.sort_unstable();
                        assert_eq!(sorted, (0..n).collect::<Vec<_>>());
                        assert_eq!(&v[..kept], &(0..kept).collect::<Vec<_>>()[..]);
                        let mut unvisited = v[kept..new_active].to_vec();
                        unvisited.sort_unstable();
                        assert_eq!(unvisited, (end..active).collect::<Vec<_>>());
                        let mut shrunk = v[new_active..active].to_vec();
                        shrunk.sort_unstable();
                        assert_eq!(shrunk, (kept..end).collect::<Vec<_>>());
                        assert_eq!(&v[active..], &[active, active + 1]);
                    }
                }
            }
        }
    }
}
