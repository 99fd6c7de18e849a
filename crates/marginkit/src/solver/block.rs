//! Block working-set SMO for the kernel dual: the box QP of [`super::BoxQp`] solved by moving
//! a working set of up to [`MAX_WORKING_SET`] variables per outer iteration, with `Q` served by
//! a [`QMatrix`].
//!
//! ```text
//! min_a  f(a) = 1/2 a'Qa + p'a   s.t.  y'a = delta (Equality::Sum only),  0 <= a_i <= u_i
//! ```
//! and, with [`solve_nu`], the nu problem of nu-SVC and nu-SVR (the pair engine's nu mode,
//! [`super::smo::Smo::nu`]): one equality per sign of `y`,
//! `sum_{y_i=+1} a_i = delta_+` and `sum_{y_i=-1} a_i = delta_-`, the two sums those of the
//! feasible start.
//!
//! | paper (Wen et al. 2018)                 | code                                 |
//! |-----------------------------------------|--------------------------------------|
//! | `alpha`, `C_i`                          | `State::alpha`, `State::upper`       |
//! | `f_i` (optimality indicator)            | `-y_i g_i`, `g` the gradient `Qa + p` |
//! | working set `B`, its size `q`           | `ws`, `q`                            |
//! | kernel rows `K_B`                       | `buf` (one column of `Q` per slot)   |
//! | `I_up`, `I_low`                         | `State::in_up`, `State::in_low`      |
//! | local SMO on `Q_BB`                     | [`local_sum`], [`local_nu`], [`local_none`] |
//! | per-class `m_c(a)`, `M_c(a)` (nu)       | `nu_extrema` (shared with the pair engine) |
//! | `f <- f + K_B' (delta alpha_B)`         | [`update_gradient`]                  |
//!
//! **Outer iteration.** The working set takes the `q/2` (first iteration: `q`) most violating
//! variables, alternately the largest `-y_t g_t` of `I_up` and the smallest of `I_low` (no
//! equality: the largest `|PG_t|`), then keeps members of the previous working set (free ones
//! first) until it holds `q`: the kept members' columns are still in `buf`, so only about `q/2`
//! columns of `Q` are fetched per iteration (through the matrix's LRU cache). The subproblem on
//! `B` (every other variable fixed) is solved by pair SMO on the `q x q` block `Q_BB` in f64
//! (with the equality: the maximal violating pair with WSS3's second-order partner; without it:
//! greedy coordinate descent by the largest `|PG|`) until its own violation is below
//! `max(tol, diff0 / 10)` (`diff0` its violation on entry), as ThunderSVM does: solving the
//! block to full accuracy would spend pair steps on directions the next working set changes
//! anyway. The gradient of the active variables then takes all moves in one blocked pass,
//! `g_j += sum_s Q_js d_s`, f64 accumulation over the f32 columns, the moves in working-set
//! order for every `j`.
//!
//! **The nu mode** ([`solve_nu`]). Every move must keep both class sums, so only pairs of one class
//! move, and the optimality conditions are those of each class apart: a class's `m_c` and `M_c` are
//! taken over its own variables. The working set's violators are therefore drawn per class: each
//! class's best of `I_up` and of `I_low`, paired in order (the `k`-th pair's gap is the class's
//! `k`-th largest). Both classes' maximal violating pairs, the pair engine's two candidates, lead
//! the order (the larger gap first), then the remaining pairs of both classes by decreasing gap, so
//! that the `q/2` new members go to the class that violates more while neither class's worst pair
//! is left out (at least 4 are drawn when `q >= 4`; a working set of 2 takes the pair with the
//! larger gap). The local solve is WSS3 inside each class on `Q_BB`, the class pair with the better
//! second-order score moving, as the pair engine chooses between its two candidates; its stopping
//! test is the larger of the two local violations.
//!
//! **Stopping rule**: the same as [`super::smo`]: with the equality, `m(a) - M(a) <= tol`;
//! in the nu mode, `max(m_+ - M_+, m_- - M_-) <= tol`; without an equality,
//! `max_t |PG_t| <= tol`, over every variable that is not fixed. `rho` is LIBSVM's (the mean of
//! `y_i g_i` over free variables, else the midpoint of the bounds); in the nu mode `rho` and `r`
//! are the pair engine's (`rho_r`: the per-class thresholds `r_+`, `r_-`, `rho = (r_+ - r_-)/2`,
//! `r = (r_+ + r_-)/2`).
//!
//! **Shrinking** ([`SolverSettings::shrinking`]): LIBSVM's, with the pair engine's own test (in the
//! nu mode its per-class bands, `shrink_nu`) and state, every [`SHRINK_EVERY`] outer iterations.
//! Bounded variables whose gradient keeps them at their bound by more than the current violation
//! leave the active set; selection, the columns of `Q` and the gradient pass then cover the active
//! variables only, which is what makes a column cost `O(active)` instead of `O(l)` once most
//! variables have settled at a bound (the bulk of a large data set). `g_bar`, the gradient part of
//! the variables at their upper bound, is kept as the pair engine keeps it: its active rows from
//! the working set's own columns, only its shrunk rows computed apart, for every member that
//! changed its upper-bound status in an outer iteration at once ([`QMatrix::columns_part`], into
//! the spare rows of their column slots).
//! The shrunk variables' gradients are so rebuilt exactly: once when the violation first falls
//! below `10 tol` (as LIBSVM does) and whenever the active set meets the stopping rule, after which
//! the rule is tested on every variable. A shrinking step reorders the positions: the working set's
//! kept columns are reordered with them (a gather, no kernel work), and members that were shrunk
//! leave the set; after a gradient rebuild the working set starts afresh.
//!
//! **Fixed variables** (`VarFix`, `u_i = 0`) are handled by the pair engine's state: permuted
//! to the end and folded into `p`; the columns read here have only the free variables' rows.
//!
//! **Cost per outer iteration**: `q/2` new columns of `Q` over the active variables
//! (`O(q active nnz)` kernel work at worst), the local SMO (`O(q)` per pair step, the nu mode's
//! per-class scans included, at most [`INNER_STEPS_PER_VAR`] `q` steps), one `O(q active)`
//! gradient pass, and the shrunk rows of the column of each variable that enters or leaves its
//! upper bound. The iteration count reported is the number of pair (or coordinate) steps,
//! comparable with the pair engine's.
//!
//! **Determinism**: selection and shrinking are serial with ties broken by position; the
//! parallel sections (the gradient pass, the `g_bar` updates and the gradient rebuild) split
//! the positions, each of which adds its terms in the same order, and the column fills are
//! bit-identical for any thread count. The result does not depend on the
//! number of threads.
//!
//! **Interruption and resume**: the observer is consulted, the clock and the iteration limit
//! checked, at the top of every outer iteration; the returned point is then feasible, with an
//! exact gradient. The limit does not cut an outer iteration's local solve short (the count may
//! pass it by less than [`INNER_STEPS_PER_VAR`] `q`), so the iterations before a stop are those
//! of an uninterrupted solve. [`run`] returns, when asked ([`Smo::keep_snapshot`]), a
//! [`SmoSnapshot`] of the stop: the pair engine's state arrays plus `BlockLoop`, the
//! working-set size, the outer-iteration count (the shrinking period) and the working set's
//! members with their slots (the shrinking flag and the active-set size are the state's). A
//! resume ([`Smo::resume`]) fetches the members' columns again (the same bits) and replays the
//! outer iterations of the uninterrupted solve: the same alpha, objective and iteration count.
//!
//! **Split across processes**: [`shard`] runs the same iterations with the variables' rows
//! split across shards (the selection a reduction, the working set's rows exchanged once), for
//! the one-equality problem only, as the pair engine's shards.
//!
//! Citation: Z. Wen, J. Shi, Q. Li, B. He, J. Chen, "ThunderSVM: a fast SVM library on GPUs
//! and CPUs", JMLR 19 (2018), section 3 (working set of `q` violators, batched kernel rows,
//! local SMO, `q/2` kept between iterations); R.-E. Fan, P.-H. Chen, C.-J. Lin, JMLR 6 (2005),
//! WSS 3 for the local pair choice; C.-C. Chang, C.-J. Lin, "Training nu-support vector
//! classifiers: theory and algorithms", Neural Computation 13 (2001), for the per-class
//! conditions and pairs of the nu mode.

use rayon::prelude::*;

use super::smo::{
    nu_extrema, rho_r, shrink_none, shrink_nu, shrink_sum, snapshot_mismatch, Bound, Driver,
    Limits, Mode, Smo, SmoSnapshot, SmoSolution, State, TAU,
};
use super::{BoxQp, Equality, Observer, Shrinking, SolveInfo, SolverSettings, Status};
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::persist::{CheckpointError, Dec, Enc};

/// Block working-set SMO with the variables split across processes.
#[path = "block_shard.rs"]
pub mod shard;

/// Largest working set.
pub const MAX_WORKING_SET: usize = 1024;

/// Local steps allowed per working-set variable and outer iteration.
pub const INNER_STEPS_PER_VAR: usize = 50;

/// Outer iterations between shrinking steps (an outer iteration takes up to hundreds of pair
/// steps, so this is about as often as LIBSVM's every 1,000 steps).
pub const SHRINK_EVERY: u64 = 8;

/// Positions of the gradient pass per parallel task (whole tasks stay in L1/L2: 2,048 f64 of
/// gradient and, per move, 8 KiB of column).
const GRAD_CHUNK: usize = 2048;

/// Settings of the block engine beyond [`SolverSettings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSettings {
    /// Working-set size `q` (`2 <= q <= n`; more than the free variables means all of them);
    /// `None`: [`working_set_size`] of the buffer budget.
    pub working_set: Option<usize>,
    /// Bytes the engine may hold for the working set's columns (`q` columns of f32).
    pub buffer_bytes: u64,
}

impl Default for BlockSettings {
    fn default() -> Self {
        Self {
            working_set: None,
            buffer_bytes: 100 << 20,
        }
    }
}

/// The working-set size for `l` free variables and a column buffer of `buffer_bytes`: as many
/// f32 columns of length `l` as fit, at most [`MAX_WORKING_SET`], even, at least 2 (a single
/// free variable gives 1: it is its own working set).
pub fn working_set_size(l: usize, buffer_bytes: u64) -> usize {
    let fit = buffer_bytes / (4 * l.max(1) as u64);
    let q = (fit.min(MAX_WORKING_SET as u64) as usize).min(l) & !1;
    if l < 2 {
        l
    } else {
        q.max(2)
    }
}

/// The working-set size of a problem of `n` variables of which `l` are free: `block`'s, else
/// [`working_set_size`] of the buffer.
fn working_set_of(block: &BlockSettings, n: usize, l: usize) -> Result<usize, SolveError> {
    match block.working_set {
        Some(w) if w < 2 || w > n.max(2) => Err(SolveError::Dimensions(
            "the working-set size must be at least 2 and at most the number of variables",
        )),
        Some(w) => Ok(w.min(l)),
        None => Ok(working_set_size(l, block.buffer_bytes)),
    }
}

/// Solves the box QP `qp` with `Q` from `q` by block working-set SMO, starting from the
/// feasible `alpha` (the solution on exit, in the original order). `q` is left in the caller's
/// order.
///
/// # Errors
/// As [`super::smo::solve`]; [`SolveError::Dimensions`] for a working-set size below 2 or above
/// the number of variables.
pub fn solve<Q: QMatrix>(
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    block: &BlockSettings,
    obs: &mut dyn Observer,
) -> Result<SolveInfo, SolveError> {
    run(q, qp, alpha, &Smo::new(settings), block, obs).map(|out| out.info)
}

/// [`solve`] for the nu problem (the pair engine's nu mode, [`super::smo::Smo::nu`]): two
/// equality constraints, one per sign of `y`, whose right-hand sides are the class sums of the
/// feasible start `alpha`. Returns the solver's account and LIBSVM's `r = (r_1 + r_2) / 2`.
///
/// # Errors
/// As [`solve`]; [`SolveError::Infeasible`] when `qp.equality` is `Equality::None` (the nu
/// problem needs `Equality::Sum` with `delta = y'a` of the start).
pub fn solve_nu<Q: QMatrix>(
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    block: &BlockSettings,
    obs: &mut dyn Observer,
) -> Result<(SolveInfo, f64), SolveError> {
    run(q, qp, alpha, &Smo::new(settings).nu(true), block, obs).map(|out| (out.info, out.r))
}

/// [`solve`] with what [`Smo`] asks beyond a plain run: continue from its snapshot (one this
/// engine wrote: the working-set size is the snapshot's, not `block`'s) and, with
/// [`Smo::keep_snapshot`], return a snapshot when a limit or the observer stops the solve.
/// Continuing replays the outer iterations of an uninterrupted solve: the same alpha, objective
/// and iteration count, bit for bit.
///
/// The nu problem when [`Smo::nu`] asks for it ([`solve_nu`]).
///
/// # Errors
/// As [`solve`] and [`solve_nu`]; [`SolveError::Checkpoint`] for a snapshot of the pair engine
/// or of another problem.
pub fn run<Q: QMatrix>(
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    smo: &Smo<'_>,
    block: &BlockSettings,
    obs: &mut dyn Observer,
) -> Result<SmoSolution, SolveError> {
    let mode = match (smo.is_nu(), qp.equality) {
        (true, Equality::None) => {
            return Err(SolveError::Infeasible(
                "the nu solver needs the equality constraints (Equality::Sum)",
            ))
        }
        (true, Equality::Sum { .. }) => Mode::Nu,
        (false, e) => Mode::plain(e),
    };
    let (mut st, resume) = match smo.resumes_from() {
        None => (State::new(q, qp, alpha)?, None),
        Some(snap) => {
            let Some(b) = &snap.block else {
                return Err(snapshot_mismatch("a pair engine's snapshot"));
            };
            (
                Smo::state_from(q, qp, alpha, snap, mode)?,
                Some((b, snap.driver)),
            )
        }
    };
    let qsz = match resume {
        Some((b, _)) => Ok(b.q),
        None => working_set_of(block, st.n, st.l),
    };
    let out = qsz.and_then(|qsz| {
        let how = Run {
            mode,
            qsz,
            resume,
            keep_snapshot: smo.keeps_snapshot(),
        };
        iterate(&mut st, q, smo.settings(), &how, obs)
    });
    st.restore_order(q);
    let (info, r, snapshot) = out?;
    st.scatter(alpha);
    Ok(SmoSolution { info, r, snapshot })
}

/// The block loop's state in a snapshot, beyond the pair engine's: what the outer loop needs to
/// continue exactly where a limit or the observer stopped it. The members' columns are not
/// kept: they are fetched again on resume (the same bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockLoop {
    /// The working-set size `q`.
    pub q: usize,
    /// Outer iterations done (shrinking runs every [`SHRINK_EVERY`] of them).
    pub outer: u64,
    /// The working set in member order: each member's position (in the snapshot's order) and
    /// the slot of its column.
    pub members: Vec<(usize, usize)>,
}

impl BlockLoop {
    /// Writes the working-set size, the outer iterations and the members.
    pub(crate) fn encode(&self, e: &mut Enc) {
        e.usize(self.q);
        e.u64(self.outer);
        e.usize(self.members.len());
        for &(t, s) in &self.members {
            e.usize(t);
            e.usize(s);
        }
    }

    /// Reads [`BlockLoop::encode`]'s form for a snapshot of `l` free variables of which
    /// `active` are active: members are distinct active positions in distinct slots below `q`.
    pub(crate) fn decode(
        d: &mut Dec<'_>,
        l: usize,
        active: usize,
    ) -> Result<Self, CheckpointError> {
        let q = d.usize()?;
        // `working_set_of`'s range: 2 to l, or l itself below 2.
        if q > l || (q < 2 && q != l) {
            return Err(d.invalid("block working-set size", "out of range"));
        }
        let outer = d.u64()?;
        let m = d.len(16)?;
        if m > q {
            return Err(d.invalid("block working set", "more members than its size"));
        }
        let mut members = Vec::with_capacity(m);
        let (mut pos_seen, mut slot_seen) = (vec![false; active], vec![false; q]);
        for _ in 0..m {
            let (t, s) = (d.usize()?, d.usize()?);
            if t >= active || s >= q || pos_seen[t] || slot_seen[s] {
                return Err(d.invalid(
                    "block working set",
                    "not distinct active members in distinct slots",
                ));
            }
            pos_seen[t] = true;
            slot_seen[s] = true;
            members.push((t, s));
        }
        Ok(Self { q, outer, members })
    }
}

/// The working set and its columns: `buf[slot * l..][..len]` is column `ws[k]` of `Q` (its
/// first `len` rows: one process's active variables when it was filled) for `slot = slots[k]`.
/// Members are named by their id in `0..ids` (one process: the position; a shard, [`shard`]:
/// the global key, with its own rows as the `l` rows).
struct Block {
    l: usize,
    /// Columns `buf` holds (the working-set size).
    cap: usize,
    /// Rows of every column held (the active count they were computed for).
    len: usize,
    ws: Vec<usize>,
    slots: Vec<usize>,
    /// Slot of each id, [`NO_SLOT`] when its column is not in `buf`.
    slot_of: Vec<u32>,
    buf: Vec<f32>,
}

const NO_SLOT: u32 = u32::MAX;

impl Block {
    fn new(ids: usize, l: usize, q: usize) -> Self {
        Self {
            l,
            cap: q,
            len: l,
            ws: Vec::with_capacity(q),
            slots: Vec::with_capacity(q),
            slot_of: vec![NO_SLOT; ids],
            buf: vec![0.0; q * l],
        }
    }

    /// Drops the working set and its columns.
    fn reset(&mut self) {
        for &t in &self.ws {
            self.slot_of[t] = NO_SLOT;
        }
        self.ws.clear();
        self.slots.clear();
    }

    /// Follows a shrinking step that only moved positions within the first `len` and left the
    /// first `active` of them active. `before` is the original index at each position before
    /// the step, `now` after it; `pos_before` / `pos_now` their inverses (by original index).
    /// Members still active keep their columns, reordered to the new positions; the others
    /// leave the working set.
    fn remap(
        &mut self,
        before: &[u32],
        pos_before: &[u32],
        now: &[u32],
        pos_now: &[u32],
        active: usize,
    ) {
        let l = self.l;
        let ws = std::mem::take(&mut self.ws);
        let slots = std::mem::take(&mut self.slots);
        for &t in &ws {
            self.slot_of[t] = NO_SLOT;
        }
        let mut tmp = Vec::with_capacity(active);
        for (&t, &s) in ws.iter().zip(&slots) {
            let p = pos_now[before[t] as usize] as usize;
            if p >= active {
                continue;
            }
            let col = &mut self.buf[s * l..s * l + self.len];
            tmp.clear();
            tmp.extend(
                now[..active]
                    .iter()
                    .map(|&v| col[pos_before[v as usize] as usize]),
            );
            col[..active].copy_from_slice(&tmp);
            self.slot_of[p] = s as u32;
            self.ws.push(p);
            self.slots.push(s);
        }
        self.len = active;
    }

    /// Makes `next` the working set: members kept from the current one keep their slots, the
    /// others take the freed slots. Returns the new members and their slots, in member order
    /// (their columns are then to be written).
    fn assign_slots(&mut self, next: Vec<usize>) -> (Vec<usize>, Vec<usize>) {
        // Mark the kept members by their slot.
        let mut used = vec![false; self.cap];
        for &t in &next {
            let s = self.slot_of[t];
            if s != NO_SLOT {
                used[s as usize] = true;
            }
        }
        for &t in &self.ws {
            let s = self.slot_of[t] as usize;
            if !used[s] {
                self.slot_of[t] = NO_SLOT;
            }
        }
        let mut free = (0..self.cap).filter(|&s| !used[s]);
        self.slots.clear();
        let (mut new_idx, mut new_slots) = (Vec::new(), Vec::new());
        for &t in &next {
            let s = match self.slot_of[t] {
                NO_SLOT => {
                    let s = free.next().unwrap_or(0);
                    self.slot_of[t] = s as u32;
                    new_idx.push(t);
                    new_slots.push(s);
                    s
                }
                s => s as usize,
            };
            self.slots.push(s);
        }
        self.ws = next;
        (new_idx, new_slots)
    }

    /// [`Block::assign_slots`], the new members' first `len` rows from `q` (`len` must be the
    /// length of the kept columns: [`Block::reset`] or [`Block::remap`] when it changes).
    fn assign<Q: QMatrix + ?Sized>(&mut self, next: Vec<usize>, q: &mut Q, len: usize) {
        debug_assert!(self.ws.is_empty() || len == self.len);
        self.len = len;
        let (new_idx, new_slots) = self.assign_slots(next);
        self.fetch(&new_idx, &new_slots, q);
    }

    /// Makes `members` (position and slot of each, in member order: distinct positions below
    /// `len`, distinct slots below the working-set size) the working set, its columns' first
    /// `len` rows from `q`: the working set a snapshot recorded.
    fn restore<Q: QMatrix + ?Sized>(&mut self, members: &[(usize, usize)], q: &mut Q, len: usize) {
        self.reset();
        self.len = len;
        for &(t, s) in members {
            self.ws.push(t);
            self.slots.push(s);
            self.slot_of[t] = s as u32;
        }
        let (ws, slots) = (self.ws.clone(), self.slots.clone());
        self.fetch(&ws, &slots, q);
    }

    /// Writes the first `len` rows of column `idx[k]` of `q` into slot `slots[k]` (distinct
    /// slots).
    fn fetch<Q: QMatrix + ?Sized>(&mut self, idx: &[usize], slots: &[usize], q: &mut Q) {
        if idx.is_empty() {
            return;
        }
        let (l, len) = (self.l, self.len);
        // The slots as one list of columns, in the order of `idx`.
        let mut by_slot: Vec<Option<&mut [f32]>> = self.buf.chunks_mut(l).map(Some).collect();
        let mut outs: Vec<&mut [f32]> = slots
            .iter()
            .filter_map(|&s| by_slot[s].take())
            .map(|c| &mut c[..len])
            .collect();
        q.columns_into(idx, len, &mut outs);
    }

    /// The working set as a snapshot records it: position and slot of each member.
    fn members(&self) -> Vec<(usize, usize)> {
        self.ws
            .iter()
            .copied()
            .zip(self.slots.iter().copied())
            .collect()
    }

    /// Column of member `k`, `len` long.
    #[inline]
    fn col(&self, k: usize) -> &[f32] {
        let s = self.slots[k];
        &self.buf[s * self.l..s * self.l + self.len]
    }

    /// Computes rows `len..l` (the shrunk rows) of the columns of the members `ks` (distinct)
    /// into the spare rows of their slots, all at once ([`QMatrix::columns_part`]: the kernel
    /// tiles of a working-set fetch instead of one column at a time); [`Block::tail`] reads
    /// them until the next fetch or remap. Slots are `l` rows long, so this takes no memory.
    fn fill_tails<Q: QMatrix + ?Sized>(&mut self, ks: &[usize], q: &mut Q) {
        let (l, len) = (self.l, self.len);
        if ks.is_empty() || len == l {
            return;
        }
        let idx: Vec<usize> = ks.iter().map(|&k| self.ws[k]).collect();
        let mut by_slot: Vec<Option<&mut [f32]>> = self.buf.chunks_mut(l).map(Some).collect();
        let mut outs: Vec<&mut [f32]> = ks
            .iter()
            .filter_map(|&k| by_slot[self.slots[k]].take())
            .map(|c| &mut c[len..])
            .collect();
        q.columns_part(&idx, len, &mut outs);
    }

    /// Rows `len..l` of member `k`'s column, as [`Block::fill_tails`] computed them.
    #[inline]
    fn tail(&self, k: usize) -> &[f32] {
        let s = self.slots[k];
        &self.buf[s * self.l + self.len..(s + 1) * self.l]
    }
}

/// Violation of the current point over the active variables (the stopping measure of
/// [`super::smo`] in `mode`; the nu mode's is the larger of the two classes' `m_c - M_c`).
fn violation(st: &State, mode: Mode) -> f64 {
    let l = st.active;
    match mode {
        Mode::Sum => {
            let (m, mm) = extrema(st);
            gap_of(m, mm)
        }
        Mode::Nu => {
            let (m, mm) = nu_extrema(st);
            gap_of(m[0], mm[0]).max(gap_of(m[1], mm[1]))
        }
        Mode::None => (0..l)
            .map(|t| pg_abs(st.g[t], st.alpha[t], st.upper[t]))
            .fold(0.0, f64::max),
    }
}

/// `m(a)`, the largest `-y_t g_t` over `I_up`, and `M(a)`, the smallest over `I_low` (`-inf`,
/// `+inf` when empty).
fn extrema(st: &State) -> (f64, f64) {
    let (mut m, mut mm) = (f64::NEG_INFINITY, f64::INFINITY);
    for t in 0..st.active {
        let v = -st.yf(t) * st.g[t];
        if st.in_up(t) && v > m {
            m = v;
        }
        if st.in_low(t) && v < mm {
            mm = v;
        }
    }
    (m, mm)
}

/// The violation `m(a) - M(a)` of the extrema (0 when a side is empty).
fn gap_of(m: f64, mm: f64) -> f64 {
    if m == f64::NEG_INFINITY || mm == f64::INFINITY {
        0.0
    } else {
        (m - mm).max(0.0)
    }
}

/// `|PG|` of one variable (no equality).
#[inline]
fn pg_abs(g: f64, a: f64, u: f64) -> f64 {
    let lo = if a <= 0.0 && g > 0.0 { 0.0 } else { g };
    let pg = if a >= u && lo < 0.0 { 0.0 } else { lo };
    pg.abs()
}

/// Sort key with a total order: larger `v` first, then smaller position.
fn by_value_desc(a: &(f64, u32), b: &(f64, u32)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The `k` best of `cand` by [`by_value_desc`], best first.
fn top(mut cand: Vec<(f64, u32)>, k: usize) -> Vec<(f64, u32)> {
    if cand.len() > k && k > 0 {
        cand.select_nth_unstable_by(k - 1, by_value_desc);
        cand.truncate(k);
    }
    cand.sort_unstable_by(by_value_desc);
    cand
}

/// The `k` best of a stream of candidates by [`by_value_desc`] (every one when `k == 0`, as
/// [`top`]), held in at most `2k` entries: the selection's memory is `O(q)`, not `O(n)`, and a
/// push costs amortized `O(1)` (every `k` pushes, one `O(k)` partition). The order is total, so
/// the result is [`top`]'s over the whole stream.
struct Best {
    k: usize,
    held: Vec<(f64, u32)>,
}

impl Best {
    fn new(k: usize) -> Self {
        Self {
            k,
            held: Vec::with_capacity(2 * k),
        }
    }

    fn push(&mut self, c: (f64, u32)) {
        if self.k > 0 && self.held.len() == 2 * self.k {
            self.held.select_nth_unstable_by(self.k - 1, by_value_desc);
            self.held.truncate(self.k);
        }
        self.held.push(c);
    }

    /// The `k` best, best first.
    fn finish(self) -> Vec<(f64, u32)> {
        top(self.held, self.k)
    }
}

/// Candidates of one side pair: the best of `I_up` by `-y_t g_t` and of `I_low` by `y_t g_t`,
/// best first, as (value, name).
type Sides = (Vec<(f64, u32)>, Vec<(f64, u32)>);

/// For each of `K` groups of the active variables (`group(t)`: the group of `t`), the `q` best
/// of `I_up` by `-y_t g_t` and of `I_low` by `y_t g_t`, best first, each variable named by
/// `name(t)` (the order of [`by_value_desc`] on the names). One group: the one-equality
/// problem; two (by class): the nu problem.
fn candidates<const K: usize>(
    st: &State,
    q: usize,
    name: impl Fn(usize) -> u32,
    group: impl Fn(usize) -> usize,
) -> [Sides; K] {
    let mut out: [(Best, Best); K] = std::array::from_fn(|_| (Best::new(q), Best::new(q)));
    for t in 0..st.active {
        let v = -st.yf(t) * st.g[t];
        let (up, low) = &mut out[group(t)];
        if st.in_up(t) {
            up.push((v, name(t)));
        }
        if st.in_low(t) {
            low.push((-v, name(t)));
        }
    }
    out.map(|(up, low)| (up.finish(), low.finish()))
}

/// The one-equality problem's candidates ([`candidates`] with one group).
fn sum_candidates(st: &State, q: usize, name: impl Fn(usize) -> u32) -> Sides {
    let [sides] = candidates(st, q, name, |_| 0);
    sides
}

/// Violators in order of preference: alternately the next of `up` and of `low`.
fn interleave(up: &[(f64, u32)], low: &[(f64, u32)]) -> Vec<u32> {
    let mut order = Vec::with_capacity(up.len() + low.len());
    let mut k = 0;
    while k < up.len() || k < low.len() {
        push_pair(up, low, k, &mut order);
        k += 1;
    }
    order
}

/// Appends the `k`-th pair: the `k`-th of `up`, then of `low` (those that exist).
fn push_pair(up: &[(f64, u32)], low: &[(f64, u32)], k: usize, order: &mut Vec<u32>) {
    if let Some(&(_, t)) = up.get(k) {
        order.push(t);
    }
    if let Some(&(_, t)) = low.get(k) {
        order.push(t);
    }
}

/// The nu problem's violators in order of preference, from the two classes' candidates: each
/// class's `k`-th pair is its `k`-th best of `I_up` and of `I_low`, whose gap
/// `-y_u g_u - (-y_w g_w)` is its `k`-th largest. Both classes' first pairs (each class's
/// maximal violating pair: the pair engine's two candidates) lead, the larger gap first, so
/// that any working set of 4 holds both; the other pairs follow by decreasing gap, the two
/// classes' sequences merged (ties to `y = +1`).
fn nu_order(classes: &[Sides; 2]) -> Vec<u32> {
    let len = |c: usize| classes[c].0.len().max(classes[c].1.len());
    let gap = |c: usize, k: usize| match (classes[c].0.get(k), classes[c].1.get(k)) {
        (Some(u), Some(w)) => u.0 + w.0,
        _ => f64::NEG_INFINITY,
    };
    let mut order = Vec::with_capacity(len(0) * 2 + len(1) * 2);
    let lead = usize::from(gap(1, 0) > gap(0, 0));
    for c in [lead, 1 - lead] {
        push_pair(&classes[c].0, &classes[c].1, 0, &mut order);
    }
    let mut k = [1usize; 2];
    while k[0] < len(0) || k[1] < len(1) {
        let c = if k[0] >= len(0) || (k[1] < len(1) && gap(1, k[1]) > gap(0, k[0])) {
            1
        } else {
            0
        };
        push_pair(&classes[c].0, &classes[c].1, k[c], &mut order);
        k[c] += 1;
    }
    order
}

/// The next working set of size `q` among the variables `0..n`: `fresh` of the violators
/// `order`, then members of `prev` (free ones first: `free(k)` tells whether `prev[k]` is)
/// until `q`, then more violators if `prev` runs short, then any other variables in order.
fn fill(
    order: Vec<u32>,
    n: usize,
    q: usize,
    fresh: usize,
    prev: &[usize],
    free: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut chosen = vec![false; n];
    let mut next = Vec::with_capacity(q);
    let mut violators = order.into_iter().map(|t| t as usize);
    let mut push = |t: usize, next: &mut Vec<usize>| {
        if !chosen[t] && next.len() < q {
            chosen[t] = true;
            next.push(t);
        }
    };
    for t in violators.by_ref() {
        if next.len() >= fresh.min(q) {
            break;
        }
        push(t, &mut next);
    }
    for (k, &t) in prev.iter().enumerate() {
        if free(k) {
            push(t, &mut next);
        }
    }
    for (k, &t) in prev.iter().enumerate() {
        if !free(k) {
            push(t, &mut next);
        }
    }
    for t in violators {
        push(t, &mut next);
    }
    // Still short (few violators, small previous set): any other variables, in order.
    for t in 0..n {
        if next.len() >= q {
            break;
        }
        push(t, &mut next);
    }
    next
}

/// The next working set of size `q`: `fresh` violators, then members of `prev` (free ones
/// first) until `q`, then more violators if `prev` runs short.
fn select(st: &State, mode: Mode, q: usize, fresh: usize, prev: &[usize]) -> Vec<usize> {
    let l = st.active;
    // Violators in order of preference, alternating up/low with the equality (per class in
    // the nu mode).
    let order: Vec<u32> = match mode {
        Mode::Sum => {
            let (up, low) = sum_candidates(st, q, |t| t as u32);
            interleave(&up, &low)
        }
        Mode::Nu => nu_order(&candidates(
            st,
            q,
            |t| t as u32,
            |t| usize::from(st.y[t] < 0),
        )),
        Mode::None => {
            let mut best = Best::new(q);
            for t in 0..l {
                let v = pg_abs(st.g[t], st.alpha[t], st.upper[t]);
                if v > 0.0 {
                    best.push((v, t as u32));
                }
            }
            best.finish().into_iter().map(|(_, t)| t).collect()
        }
    };
    let free = |k: usize| {
        let t = prev[k];
        st.alpha[t] > 0.0 && st.alpha[t] < st.upper[t]
    };
    fill(order, l, q, fresh, prev, free)
}

/// The subproblem on the working set: local copies of the variables and `Q_BB` in f64.
struct Local {
    a: Vec<f64>,
    a0: Vec<f64>,
    g: Vec<f64>,
    u: Vec<f64>,
    y: Vec<f64>,
    /// Row-major `m x m`.
    qbb: Vec<f64>,
    m: usize,
}

impl Local {
    fn new() -> Self {
        Self {
            a: Vec::new(),
            a0: Vec::new(),
            g: Vec::new(),
            u: Vec::new(),
            y: Vec::new(),
            qbb: Vec::new(),
            m: 0,
        }
    }

    /// Loads the working set of `blk` (reusing the buffers). Row `s` of `Q_BB` is column `s`
    /// (symmetric): a gather from one column, written contiguously.
    fn load(&mut self, st: &State, blk: &Block) {
        let m = blk.ws.len();
        self.m = m;
        self.qbb.resize(m * m, 0.0);
        for s in 0..m {
            let col = blk.col(s);
            let row = &mut self.qbb[s * m..(s + 1) * m];
            for (o, &wt) in row.iter_mut().zip(&blk.ws) {
                *o = f64::from(col[wt]);
            }
            row[s] = st.qd[blk.ws[s]];
        }
        let fill = |v: &mut Vec<f64>, f: &dyn Fn(usize) -> f64| {
            v.clear();
            v.extend(blk.ws.iter().map(|&t| f(t)));
        };
        fill(&mut self.a, &|t| st.alpha[t]);
        fill(&mut self.a0, &|t| st.alpha[t]);
        fill(&mut self.g, &|t| st.g[t]);
        fill(&mut self.u, &|t| st.upper[t]);
        fill(&mut self.y, &|t| st.yf(t));
    }

    #[inline]
    fn row(&self, s: usize) -> &[f64] {
        &self.qbb[s * self.m..(s + 1) * self.m]
    }

    #[inline]
    fn up(&self, s: usize) -> bool {
        if self.y[s] > 0.0 {
            self.a[s] < self.u[s]
        } else {
            self.a[s] > 0.0
        }
    }

    #[inline]
    fn low(&self, s: usize) -> bool {
        if self.y[s] > 0.0 {
            self.a[s] > 0.0
        } else {
            self.a[s] < self.u[s]
        }
    }

    /// `g += d_s Q_B,s` (symmetric: row `s` is column `s`).
    #[inline]
    fn add_col(&mut self, s: usize, d: f64) {
        let m = self.m;
        let row = &self.qbb[s * m..(s + 1) * m];
        for (gi, &qv) in self.g.iter_mut().zip(row) {
            *gi += d * qv;
        }
    }
}

/// WSS3's first half on the members `keep` admits: `i`, the largest `-y g` over `I_up`, that
/// value `m` and `M`, the smallest over `I_low`; `None` when a side is empty.
#[inline]
fn local_first(loc: &Local, keep: impl Fn(usize) -> bool) -> Option<(usize, f64, f64)> {
    let (mut i, mut gmax) = (usize::MAX, f64::NEG_INFINITY);
    let mut gmin = f64::INFINITY;
    for s in 0..loc.m {
        if !keep(s) {
            continue;
        }
        let v = -loc.y[s] * loc.g[s];
        if loc.up(s) && v > gmax {
            gmax = v;
            i = s;
        }
        if loc.low(s) && v < gmin {
            gmin = v;
        }
    }
    (i != usize::MAX && gmin != f64::INFINITY).then_some((i, gmax, gmin))
}

/// WSS3's second half: among the `I_low` violators with `i` that `keep` admits, the largest
/// second-order decrease; returns `j` and its score `-b^2 / a` (`a <= 0` replaced by `TAU`).
#[inline]
fn local_second(
    loc: &Local,
    i: usize,
    gmax: f64,
    keep: impl Fn(usize) -> bool,
) -> Option<(usize, f64)> {
    let m = loc.m;
    let qi = loc.row(i);
    let (mut j, mut best) = (usize::MAX, f64::INFINITY);
    let yi = loc.y[i];
    for t in 0..m {
        if !loc.low(t) || !keep(t) {
            continue;
        }
        let v = -loc.y[t] * loc.g[t];
        let b = gmax - v;
        if b > 0.0 {
            let a = qi[i] + loc.qbb[t * m + t] - 2.0 * yi * loc.y[t] * qi[t];
            let a = if a > 0.0 { a } else { TAU };
            let score = -(b * b) / a;
            if score < best {
                best = score;
                j = t;
            }
        }
    }
    (j != usize::MAX).then_some((j, best))
}

/// The pair step on `(i, j)` (`gmax = -y_i g_i`): `a_i` moves by `y_i t` and `a_j` by
/// `-y_j t`, `t` the clipped Newton step, which keeps `y'a` (and, for a pair of one class,
/// the class sum); the local gradient follows.
fn local_step(loc: &mut Local, i: usize, j: usize, gmax: f64) {
    let m = loc.m;
    let (yi, yj) = (loc.y[i], loc.y[j]);
    let qij = loc.qbb[i * m + j];
    let curv = loc.qbb[i * m + i] + loc.qbb[j * m + j] - 2.0 * yi * yj * qij;
    let curv = if curv > 0.0 { curv } else { TAU };
    let vj = -yj * loc.g[j];
    let mut t = (gmax - vj) / curv;
    let cap_i = if yi > 0.0 {
        loc.u[i] - loc.a[i]
    } else {
        loc.a[i]
    };
    let cap_j = if yj > 0.0 {
        loc.a[j]
    } else {
        loc.u[j] - loc.a[j]
    };
    let cap = cap_i.min(cap_j);
    let clipped = t >= cap;
    if clipped {
        t = cap;
    }
    let at_i = clipped && cap_i <= cap_j;
    let at_j = clipped && cap_j <= cap_i;
    let (old_i, old_j) = (loc.a[i], loc.a[j]);
    let mut ni = old_i + yi * t;
    let mut nj = old_j - yj * t;
    // Land exactly on the bound that clipped the step.
    if at_i {
        ni = if yi > 0.0 { loc.u[i] } else { 0.0 };
    }
    if at_j {
        nj = if yj > 0.0 { 0.0 } else { loc.u[j] };
    }
    ni = ni.clamp(0.0, loc.u[i]);
    nj = nj.clamp(0.0, loc.u[j]);
    loc.a[i] = ni;
    loc.a[j] = nj;
    loc.add_col(i, ni - old_i);
    loc.add_col(j, nj - old_j);
}

/// Local pair SMO with the equality: WSS3 on `Q_BB` until the local violation is below
/// `max(tol, diff0 / 10)` or `max_steps` steps. Returns the steps taken.
fn local_sum(loc: &mut Local, tol: f64, max_steps: usize) -> usize {
    let mut eps = None;
    let mut steps = 0;
    while steps < max_steps {
        let Some((i, gmax, gmin)) = local_first(loc, |_| true) else {
            break;
        };
        let diff = gmax - gmin;
        let e = *eps.get_or_insert(tol.max(0.1 * diff));
        if diff <= e {
            break;
        }
        let Some((j, _)) = local_second(loc, i, gmax, |_| true) else {
            break;
        };
        local_step(loc, i, j, gmax);
        steps += 1;
    }
    steps
}

/// Local pair SMO of the nu problem: WSS3 inside each class on `Q_BB` (a pair of one class
/// keeps both class sums), the pair with the smaller second-order score moving (ties to
/// `y = +1`), until the larger of the classes' local violations is below `max(tol, diff0 / 10)`
/// or `max_steps` steps. Returns the steps taken.
fn local_nu(loc: &mut Local, tol: f64, max_steps: usize) -> usize {
    const CLASSES: [f64; 2] = [1.0, -1.0];
    let mut eps = None;
    let mut steps = 0;
    while steps < max_steps {
        let firsts = CLASSES.map(|c| local_first(loc, |s| loc.y[s] == c));
        let diff = firsts
            .iter()
            .flatten()
            .map(|&(_, gmax, gmin)| gmax - gmin)
            .fold(f64::NEG_INFINITY, f64::max);
        if diff == f64::NEG_INFINITY {
            break;
        }
        let e = *eps.get_or_insert(tol.max(0.1 * diff));
        if diff <= e {
            break;
        }
        let mut best: Option<(usize, usize, f64, f64)> = None;
        for (&c, first) in CLASSES.iter().zip(firsts) {
            let Some((i, gmax, _)) = first else {
                continue;
            };
            if let Some((j, score)) = local_second(loc, i, gmax, |s| loc.y[s] == c) {
                if best.is_none_or(|b| score < b.3) {
                    best = Some((i, j, gmax, score));
                }
            }
        }
        let Some((i, j, gmax, _)) = best else {
            break;
        };
        local_step(loc, i, j, gmax);
        steps += 1;
    }
    steps
}

/// Local coordinate descent without the equality: the largest `|PG|` takes its clipped Newton
/// step, until `max |PG| <= max(tol, pg0 / 10)` or `max_steps` steps. Returns the steps taken.
fn local_none(loc: &mut Local, tol: f64, max_steps: usize) -> usize {
    let m = loc.m;
    let mut eps = None;
    let mut steps = 0;
    while steps < max_steps {
        let (mut i, mut best) = (usize::MAX, 0.0);
        for s in 0..m {
            let v = pg_abs(loc.g[s], loc.a[s], loc.u[s]);
            if v > best {
                best = v;
                i = s;
            }
        }
        if i == usize::MAX {
            break;
        }
        let e = *eps.get_or_insert(tol.max(0.1 * best));
        if best <= e {
            break;
        }
        let qii = loc.qbb[i * m + i];
        let qii = if qii > 0.0 { qii } else { TAU };
        let old = loc.a[i];
        let new = (old - loc.g[i] / qii).clamp(0.0, loc.u[i]);
        loc.a[i] = new;
        loc.add_col(i, new - old);
        steps += 1;
    }
    steps
}

/// The local solve of one outer iteration on `loc` (in `mode`), within
/// [`INNER_STEPS_PER_VAR`] steps per working-set variable; `moves` receives the nonzero moves
/// `(k, d_k)` in working-set order. Returns the iterations to count (at least one: a stalled
/// block still moves the iteration limit).
///
/// The iteration limit does not cut a local solve short: an outer iteration is the same whatever
/// the limit, so a solve stopped by the limit continues ([`run`]) exactly as an uninterrupted
/// solve goes on, and the count may pass the limit by less than one outer iteration's steps.
fn local_round(
    loc: &mut Local,
    mode: Mode,
    tol: f64,
    qsz: usize,
    moves: &mut Vec<(usize, f64)>,
) -> Result<u64, SolveError> {
    let budget = INNER_STEPS_PER_VAR * qsz;
    let steps = match mode {
        Mode::Sum => local_sum(loc, tol, budget.max(1)),
        Mode::Nu => local_nu(loc, tol, budget.max(1)),
        Mode::None => local_none(loc, tol, budget.max(1)),
    };
    moves.clear();
    for s in 0..loc.m {
        let d = loc.a[s] - loc.a0[s];
        if d != 0.0 {
            moves.push((s, d));
        }
    }
    if moves.iter().any(|&(_, d)| !d.is_finite()) {
        return Err(SolveError::NonFinite { what: "alpha" });
    }
    Ok(steps.max(1) as u64)
}

/// `g_j += sum_k d_k Q_{j, ws_k}` over the moves `(k, d_k)` in their order, for every active
/// position `j` (`g`: the active variables' gradient; f64 accumulation of the f32 columns).
fn update_gradient(g: &mut [f64], blk: &Block, moves: &[(usize, f64)]) {
    let run = |lo: usize, gc: &mut [f64]| {
        for &(k, d) in moves {
            let col = &blk.col(k)[lo..lo + gc.len()];
            for (gj, &qv) in gc.iter_mut().zip(col) {
                *gj += d * f64::from(qv);
            }
        }
    };
    let threads = rayon::current_num_threads();
    if threads > 1 && g.len() > GRAD_CHUNK && moves.len() * g.len() >= 1 << 16 {
        g.par_chunks_mut(GRAD_CHUNK)
            .enumerate()
            .for_each(|(c, gc)| run(c * GRAD_CHUNK, gc));
    } else {
        for (c, gc) in g.chunks_mut(GRAD_CHUNK).enumerate() {
            run(c * GRAD_CHUNK, gc);
        }
    }
}

/// `pos[perm[k]] = k` (`pos` sized to the largest original index).
fn inverse(perm: &[u32], pos: &mut Vec<u32>) {
    let size = perm.iter().map(|&v| v as usize + 1).max().unwrap_or(0);
    pos.clear();
    pos.resize(size, u32::MAX);
    for (k, &v) in perm.iter().enumerate() {
        pos[v as usize] = k as u32;
    }
}

/// How [`iterate`] runs besides the settings.
struct Run<'a> {
    /// With the equality ([`Mode::Sum`]), without it ([`Mode::None`]) or the nu problem.
    mode: Mode,
    /// The working-set size.
    qsz: usize,
    /// The block loop and the counters of the snapshot to continue from.
    resume: Option<(&'a BlockLoop, Driver)>,
    /// Return a snapshot when a limit or the observer stops the loop.
    keep_snapshot: bool,
}

/// The outer loop on a built state, one-equality or no-equality as `equality` says, without
/// snapshots (the entry of [`super::engine`]'s wrappers); leaves `st` permuted.
pub(crate) fn iterate_plain<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    equality: Equality,
    settings: &SolverSettings,
    block: &BlockSettings,
    obs: &mut dyn Observer,
) -> Result<SolveInfo, SolveError> {
    let how = Run {
        mode: Mode::plain(equality),
        qsz: working_set_of(block, st.n, st.l)?,
        resume: None,
        keep_snapshot: false,
    };
    iterate(st, q, settings, &how, obs).map(|(info, _, _)| info)
}

/// The outer loop on a built state (from a snapshot's loop state when `how` resumes); leaves
/// `st` permuted (fixed variables at the end). Returns the account, `r` (the nu mode's; 0
/// otherwise) and, when asked, the snapshot of the point where a limit or the observer stopped
/// the loop.
fn iterate<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    settings: &SolverSettings,
    how: &Run<'_>,
    obs: &mut dyn Observer,
) -> Result<(SolveInfo, f64, Option<SmoSnapshot>), SolveError> {
    let l = st.l;
    let mode = how.mode;
    let qsz = how.qsz;
    let lim = Limits::new(settings, l);
    let tol = settings.tol;
    let shrink = settings.shrinking == Shrinking::On;
    let mut status = Status::MaxIterations;
    let mut blk = Block::new(l, l, qsz);
    let (mut iter, mut outer, mut viol) = match how.resume {
        Some((b, d)) => {
            // The loop stopped at the top of an outer iteration, where every kept column held
            // the active rows.
            blk.restore(&b.members, q, st.active);
            (d.iter, b.outer, d.viol)
        }
        None => (0, 0, violation(st, mode)),
    };
    // A resumed loop does not consult the observer again at the point it stopped at (a stop
    // asked there would stop it again at once).
    let mut resumed_here = how.resume.is_some();
    let mut snapshot = None;
    let snap_of = |st: &State, blk: &Block, iter: u64, outer: u64, viol: f64| {
        let mut s = SmoSnapshot::of(
            st,
            how.mode,
            Driver {
                iter,
                counter: 0,
                viol,
            },
        );
        s.block = Some(BlockLoop {
            q: qsz,
            outer,
            members: blk.members(),
        });
        s
    };
    let mut moves: Vec<(usize, f64)> = Vec::with_capacity(qsz);
    // Members that entered (+1) or left (-1) their upper bound in the current outer iteration.
    let mut at_upper: Vec<(usize, f64)> = Vec::new();
    let mut upper_members: Vec<usize> = Vec::new();
    let mut loc = Local::new();
    // The order before a shrinking step and the inverse orders (by original index).
    let (mut perm0, mut pos0, mut pos1) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        if viol <= tol && st.active < l {
            // The active set meets the rule: rebuild the shrunk variables' gradients and test
            // every variable.
            st.reconstruct_gradient(q);
            blk.reset();
            viol = violation(st, mode);
        }
        if l == 0 || viol <= tol {
            status = Status::Converged;
            break;
        }
        let first = std::mem::take(&mut resumed_here);
        if iter >= lim.max_iter {
            if how.keep_snapshot {
                snapshot = Some(snap_of(st, &blk, iter, outer, viol));
            }
            break;
        }
        if outer > 0 && !first {
            if let Some(s) = lim.check(obs, iter, viol, st.active) {
                status = s;
                if how.keep_snapshot {
                    snapshot = Some(snap_of(st, &blk, iter, outer, viol));
                }
                break;
            }
        }
        // Saturating: a crafted snapshot may hold any count.
        outer = outer.saturating_add(1);
        if shrink && outer % SHRINK_EVERY == 0 {
            let (act0, unshrunk0) = (st.active, st.unshrunk);
            perm0.clear();
            perm0.extend_from_slice(&st.perm[..l]);
            match mode {
                Mode::Sum => shrink_sum(st, q, tol),
                Mode::Nu => shrink_nu(st, q, tol),
                Mode::None => shrink_none(st, q, tol),
            }
            if st.unshrunk != unshrunk0 {
                // The gradients were rebuilt and every variable was active for a moment: the
                // kept columns lack the rows that came back.
                blk.reset();
            } else if st.active != act0 {
                inverse(&perm0, &mut pos0);
                inverse(&st.perm[..l], &mut pos1);
                blk.remap(&perm0, &pos0, &st.perm[..l], &pos1, st.active);
            }
            if (st.active, st.unshrunk) != (act0, unshrunk0) {
                viol = violation(st, mode);
                if viol <= tol {
                    continue;
                }
            }
        }
        let act = st.active;
        let fresh = if outer == 1 { qsz } else { qsz / 2 };
        // At least a pair (the nu mode: a pair of each class).
        let least = if mode == Mode::Nu { 4 } else { 2 };
        let next = select(st, mode, qsz.min(act), fresh.max(least), &blk.ws);
        blk.assign(next, q, act);
        loc.load(st, &blk);
        iter = iter.saturating_add(local_round(&mut loc, mode, tol, qsz, &mut moves)?);
        at_upper.clear();
        for &(s, _) in &moves {
            let t = blk.ws[s];
            let was = st.status[t] == Bound::Upper;
            st.alpha[t] = loc.a[s];
            st.update_status(t);
            let now = st.status[t] == Bound::Upper;
            if shrink && was != now {
                at_upper.push((s, if now { 1.0 } else { -1.0 }));
            }
        }
        update_gradient(&mut st.g[..act], &blk, &moves);
        // The active rows from the members' columns; the shrunk rows computed apart, together.
        upper_members.clear();
        upper_members.extend(at_upper.iter().map(|&(s, _)| s));
        blk.fill_tails(&upper_members, q);
        for &(s, sign) in &at_upper {
            let c = sign * st.upper[blk.ws[s]];
            st.add_to_g_bar(c, 0, blk.col(s));
            if act < l {
                st.add_to_g_bar(c, act, blk.tail(s));
            }
        }
        viol = violation(st, mode);
        if !viol.is_finite() {
            return Err(SolveError::NonFinite { what: "gradient" });
        }
    }
    if st.active < l {
        // Stopped early with variables shrunk: the objective and the reported violation need
        // every gradient.
        st.reconstruct_gradient(q);
        viol = violation(st, mode);
    }
    debug_assert!(st.check_invariants());
    let objective = st.objective();
    if !objective.is_finite() {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    let (rho, r, groups) = match mode {
        Mode::Sum => (st.rho(), 0.0, 1),
        Mode::Nu => {
            let (rho, r) = rho_r(st);
            (rho, r, 2)
        }
        Mode::None => (0.0, 0.0, 0),
    };
    let gap = super::kkt::gap_from_state(
        &st.g[..l],
        &st.alpha[..l],
        &st.upper[..l],
        &st.y[..l],
        groups,
    );
    Ok((
        SolveInfo {
            status,
            iterations: iter,
            objective,
            rho,
            max_violation: viol,
            gap,
        },
        r,
        snapshot,
    ))
}

/// Stop and resume, bit for bit.
#[cfg(test)]
#[path = "block_resume_tests.rs"]
mod resume_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_keeps_the_k_best_of_a_stream() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for len in [0usize, 1, 2, 5, 17, 64, 300] {
            for k in [0usize, 1, 2, 3, 7, 50] {
                // Few distinct values, so that ties are broken by the name.
                let stream: Vec<(f64, u32)> = (0..len)
                    .map(|i| (f64::from(rng.gen_range(0..6u8)) - 2.5, (len - i) as u32))
                    .collect();
                let mut best = Best::new(k);
                for &c in &stream {
                    best.push(c);
                }
                let mut want = stream.clone();
                want.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
                if k > 0 {
                    want.truncate(k);
                }
                assert_eq!(best.finish(), want, "len {len}, k {k}");
            }
        }
    }

    #[test]
    fn working_set_size_fits_the_buffer() {
        assert_eq!(working_set_size(100_000, 200 << 20), 524);
        assert_eq!(working_set_size(1_000, 200 << 20), 1000);
        assert_eq!(working_set_size(5_000, 200 << 20), MAX_WORKING_SET);
        assert_eq!(working_set_size(3, 1 << 20), 2);
        assert_eq!(working_set_size(1, 1 << 20), 1);
        assert_eq!(working_set_size(10_000_000, 1), 2);
    }
}
