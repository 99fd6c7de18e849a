//! SMO for the kernel dual: the box QP of [`super::BoxQp`] with `Q` served by a
//! [`QMatrix`] column by column.
//!
//! ```text
//! min_a  f(a) = 1/2 a'Qa + p'a   s.t.  y'a = delta (Equality::Sum only),  0 <= a_i <= u_i
//! ```
//!
//! | paper (Fan, Chen, Lin 2005)        | code                          |
//! |------------------------------------|-------------------------------|
//! | `alpha`, `C_i`                     | `alpha`, `upper`              |
//! | `grad f = Q alpha + p`             | `g` (active variables)        |
//! | `G_bar_i = sum_{j at C} C_j Q_ij`  | `g_bar`                       |
//! | `I_up`, `I_low`                    | `State::in_up`, `State::in_low` |
//! | `-y_t grad_t f`                    | `f` in comments               |
//! | `m(a)`, `M(a)`                     | `gmax`, `gmin`                |
//! | `a_ts`, `b_ts` (WSS3)              | `quad`, `b`                   |
//! | `tau`                              | [`TAU`]                       |
//!
//! **With the equality** (`Equality::Sum`): the pair `(i, j)` is chosen by the second-order
//! rule WSS3: `i = argmax_{t in I_up} -y_t g_t`, `j = argmin_{t in I_low, -y_t g_t < m}
//! -b_it^2 / a_it` with `a_it <= 0` replaced by `TAU`. Stops when `m(a) - M(a) <= tol`.
//! `rho` is the mean of `y_i g_i` over free variables, or the midpoint of the bounds on it.
//!
//! **Without the equality** (`Equality::None`, no bias): the first variable `i` is the KKT
//! violator with the largest decrease of `f` under a clipped Newton step; its partner `j` is
//! the variable whose clipped Newton step on the problem conditioned on `i` (gradient after
//! `i`'s step, Schur-complement curvature `Q_jj - Q_ij^2/Q_ii` when `i`'s step is interior)
//! decreases `f` most; `(i, j)` then take the exact minimizer of the 2-D box QP (never less
//! decrease than `i`'s single step, so the single rule's convergence argument holds). The
//! single rule zig-zags on strongly correlated pairs (small RBF gamma, large C); the pair step
//! removes that at the cost of a second column. Stops when the largest projected gradient
//! `|PG_t|` is `<= tol`; `rho = 0`.
//!
//! **The nu mode** ([`Smo::nu`]): two equality constraints, one per class (nu-SVC, nu-SVR);
//! WSS3 inside each class, described with its rules at the end of this file.
//!
//! **Shrinking** (Joachims 1998, LIBSVM's rule, Chang & Lin 2011 sec. 5.1): every
//! `min(n, 1000)` iterations, variables at a bound whose gradient lies strictly outside the
//! current violation band are moved past `active`; once the violation is below `10 tol`,
//! everything is un-shrunk once (gradient reconstruction from `g_bar` and the free variables)
//! and on convergence of the active set the full set is re-checked.
//!
//! **Fixed variables** (`VarFix`, and any `u_i = 0`) are permuted to the end before iterating
//! (with the fewest swaps: those already in the tail stay); their columns are folded into `p`
//! and only the first `l` variables are ever touched. [`solve`] puts `q` back in the caller's
//! order on exit; the crate-internal `engine::solve_permuted` (the regularization path, with
//! either engine) leaves it permuted for the next solve, since every swap is replayed on the
//! cached columns.
//!
//! **Selection without the equality** is a vectorized map of the clipped-Newton decreases
//! (written by the previous iteration's gradient update in the same sweep) and lane-wise
//! maxima; it picks what one sequential scan would.
//!
//! **Cost per iteration**: two columns of `Q` over the active set (a cache hit or
//! `O(active · nnz)` kernel work), plus `O(active)` for the selection and the gradient update.
//!
//! Citation: R.-E. Fan, P.-H. Chen, C.-J. Lin, "Working set selection using second order
//! information for training SVM", JMLR 6 (2005), WSS 3 / Algorithm 2; C.-C. Chang, C.-J. Lin,
//! "LIBSVM: a library for support vector machines", ACM TIST 2011, sections 4.1 and 5.

use std::time::Instant;

use super::block::{BlockLoop, BlockSettings};
use super::{
    BoxQp, Equality, IterStats, Observer, Shrinking, SolveInfo, SolverSettings, Status, VarFix,
};
use crate::error::SolveError;
use crate::kernel::qmatrix::QMatrix;
use crate::persist::{CheckpointError, Dec, Enc};

/// Guard for 2x2 subproblems whose curvature is not positive.
pub const TAU: f64 = 1e-12;

/// Independent accumulators in the selection scans.
const LANES: usize = 4;
/// `flags` bit: the variable is in `I_up`.
pub(crate) const IN_UP: u8 = 1;
/// `flags` bit: the variable is in `I_low`.
pub(crate) const IN_LOW: u8 = 2;

/// Iterations between observer calls and time checks.
const REPORT_EVERY: u64 = 1000;

/// Bound status of a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    Lower,
    Upper,
    Free,
}

/// Every per-variable array of the solver, in the current (permuted) order. Positions
/// `[0, active)` are active, `[active, l)` shrunk, `[l, n)` fixed.
#[derive(Debug)]
pub(crate) struct State {
    pub n: usize,
    pub l: usize,
    pub active: usize,
    pub alpha: Vec<f64>,
    pub g: Vec<f64>,
    pub g_bar: Vec<f64>,
    /// `p` plus the fixed variables' contribution `sum_{k fixed} Q_ik a_k`.
    pub p: Vec<f64>,
    /// Signs `+1` / `-1` (one byte each: the scans convert them exactly to `f64`).
    pub y: Vec<i8>,
    pub upper: Vec<f64>,
    pub qd: Vec<f64>,
    pub status: Vec<Bound>,
    /// [`IN_UP`] / [`IN_LOW`] bits, kept in step with `status` and `y`; the scans turn them
    /// into the additive masks 0 / `+inf` (see [`mask`]).
    pub flags: Vec<u8>,
    /// Work space for the selection scans (not per-variable state; never swapped).
    pub scratch: Vec<f64>,
    /// The first WSS3 pass over the current gradient, done by the gradient update of the
    /// previous iteration (`scratch` holds its `y g + up_inf`); cleared by anything that
    /// changes the order, the active set or the gradient otherwise.
    pub(crate) pre: Option<Scan>,
    /// Second work space (the single-variable rule's `|PG|`; never swapped). Empty until a
    /// solve without the equality needs it ([`State::ensure_scratch2`]).
    pub scratch2: Vec<f64>,
    /// The single-variable rule's map over the current gradient is in `scratch` (decreases)
    /// and `scratch2` (`|PG|`), written by the gradient update of the previous iteration;
    /// cleared with [`State::pre`].
    pub(crate) pre_single: bool,
    /// Original index of the variable at each position (`u32`: [`State::new`] refuses
    /// `n > u32::MAX`, far beyond what a kernel cache can serve).
    pub perm: Vec<u32>,
    /// `1/2 a_X'Q_XX a_X + p_X'a_X` over the fixed variables.
    pub obj_fixed: f64,
    /// Equality right-hand side (for invariant checks); `None` without the equality.
    pub delta: Option<f64>,
    pub unshrunk: bool,
}

impl State {
    /// Swaps positions `i` and `j` in every array and in `q`: the only place that permutes.
    pub fn swap<Q: QMatrix + ?Sized>(&mut self, q: &mut Q, i: usize, j: usize) {
        if i == j {
            return;
        }
        self.pre = None;
        self.pre_single = false;
        q.swap_index(i, j);
        self.alpha.swap(i, j);
        self.g.swap(i, j);
        self.g_bar.swap(i, j);
        self.p.swap(i, j);
        self.y.swap(i, j);
        self.upper.swap(i, j);
        self.qd.swap(i, j);
        self.status.swap(i, j);
        self.flags.swap(i, j);
        self.perm.swap(i, j);
    }

    /// `y_i` as `f64` (exact).
    #[inline]
    pub fn yf(&self, i: usize) -> f64 {
        f64::from(self.y[i])
    }

    /// Original index of the variable at position `k`.
    #[inline]
    pub fn orig(&self, k: usize) -> usize {
        self.perm[k] as usize
    }

    /// Sizes the single-variable rule's second work space (solves without the equality).
    pub fn ensure_scratch2(&mut self) {
        if self.scratch2.len() != self.n {
            self.scratch2 = vec![0.0; self.n];
        }
    }

    #[inline]
    fn bound_of(a: f64, u: f64) -> Bound {
        if a >= u {
            Bound::Upper
        } else if a <= 0.0 {
            Bound::Lower
        } else {
            Bound::Free
        }
    }

    #[inline]
    pub fn update_status(&mut self, i: usize) {
        let b = Self::bound_of(self.alpha[i], self.upper[i]);
        self.status[i] = b;
        self.flags[i] = Self::flags_of(b, self.y[i]);
    }

    #[inline]
    fn flags_of(b: Bound, y: i8) -> u8 {
        let (inc, dec) = (b != Bound::Upper, b != Bound::Lower);
        let (up, low) = if y > 0 { (inc, dec) } else { (dec, inc) };
        (if up { IN_UP } else { 0 }) | (if low { IN_LOW } else { 0 })
    }

    /// `t` may move so that `y_t a_t` increases.
    #[inline]
    pub fn in_up(&self, t: usize) -> bool {
        self.flags[t] & IN_UP != 0
    }

    /// `t` may move so that `y_t a_t` decreases.
    #[inline]
    pub fn in_low(&self, t: usize) -> bool {
        self.flags[t] & IN_LOW != 0
    }

    /// Builds the state: validates, forces fixed variables, permutes them to the end, and
    /// initializes the gradient from the nonzero entries of the warm start.
    pub fn new<Q: QMatrix + ?Sized>(
        q: &mut Q,
        qp: &BoxQp<'_>,
        alpha: &[f64],
    ) -> Result<Self, SolveError> {
        Self::new_with(q, qp, alpha, None)
    }

    /// [`State::new`] with the warm start's gradient terms given by the caller (used only when
    /// no variable is fixed; otherwise they are computed from the columns as usual).
    #[allow(clippy::needless_range_loop)]
    // One piece: every per-variable array of the one state is built together, in the order
    // the fixed variables impose.
    pub(crate) fn new_with<Q: QMatrix + ?Sized>(
        q: &mut Q,
        qp: &BoxQp<'_>,
        alpha: &[f64],
        warm: Option<WarmGradient<'_>>,
    ) -> Result<Self, SolveError> {
        let n = q.n();
        if let Some(w) = &warm {
            if w.qa.len() != n || w.qa_upper.len() != n {
                return Err(SolveError::Dimensions(
                    "the warm gradient terms must have q.n() entries",
                ));
            }
        }
        if qp.p.len() != n || qp.y.len() != n || qp.upper.len() != n || alpha.len() != n {
            return Err(SolveError::Dimensions(
                "p, y, upper and alpha must all have q.n() entries",
            ));
        }
        let Ok(n32) = u32::try_from(n) else {
            return Err(SolveError::Dimensions("more than u32::MAX variables"));
        };
        if let Some(f) = qp.fixed {
            if f.len() != n {
                return Err(SolveError::Dimensions("fixed must have q.n() entries"));
            }
        }
        if qp.p.iter().any(|v| !v.is_finite()) {
            return Err(SolveError::NonFinite {
                what: "linear term p",
            });
        }
        if qp.upper.iter().any(|&u| u.is_nan() || u < 0.0) {
            return Err(SolveError::Infeasible("upper bounds must be >= 0"));
        }
        let mut a = alpha.to_vec();
        let mut is_fixed = vec![false; n];
        for i in 0..n {
            let u = qp.upper[i];
            let fix = qp.fixed.map_or(VarFix::Free, |f| f[i]);
            match fix {
                VarFix::AtZero => {
                    a[i] = 0.0;
                    is_fixed[i] = true;
                }
                VarFix::AtUpper => {
                    if !u.is_finite() {
                        return Err(SolveError::Infeasible(
                            "a variable fixed at an infinite upper bound",
                        ));
                    }
                    a[i] = u;
                    is_fixed[i] = true;
                }
                VarFix::Free => {
                    let ai = a[i];
                    if !ai.is_finite() {
                        return Err(SolveError::NonFinite {
                            what: "initial alpha",
                        });
                    }
                    let slack = 1e-12 * (1.0 + if u.is_finite() { u } else { ai.abs() });
                    if ai < -slack || ai > u + slack {
                        return Err(SolveError::Infeasible(
                            "the initial alpha is outside [0, upper]",
                        ));
                    }
                    a[i] = ai.clamp(0.0, u);
                    if u == 0.0 {
                        is_fixed[i] = true;
                    }
                }
            }
        }
        let delta = match qp.equality {
            Equality::Sum { delta } => {
                let (mut s, mut scale) = (0.0, 1.0f64);
                for i in 0..n {
                    s += f64::from(qp.y[i].signum()) * a[i];
                    scale += a[i].abs();
                }
                if qp.y.iter().any(|&v| v != 1 && v != -1) {
                    return Err(SolveError::Infeasible("y must hold -1 or +1"));
                }
                if !delta.is_finite() || (s - delta).abs() > 1e-9 * scale.max(delta.abs()) {
                    return Err(SolveError::Infeasible(
                        "the initial alpha violates y'a = delta",
                    ));
                }
                Some(delta)
            }
            Equality::None => None,
        };
        let mut st = State {
            n,
            l: n,
            active: n,
            alpha: a,
            g: vec![0.0; n],
            g_bar: vec![0.0; n],
            p: qp.p.to_vec(),
            y: qp.y.iter().map(|&v| if v < 0 { -1 } else { 1 }).collect(),
            upper: qp.upper.to_vec(),
            qd: q.diag().to_vec(),
            status: vec![Bound::Lower; n],
            flags: vec![0; n],
            scratch: vec![0.0; n],
            pre: None,
            scratch2: Vec::new(),
            pre_single: false,
            perm: (0..n32).collect(),
            obj_fixed: 0.0,
            delta,
            unshrunk: false,
        };
        // Fixed variables to the end with the fewest swaps: those already in the tail stay, and
        // each swap exchanges a fixed variable of the head with a free one of the tail (every
        // swap is replayed on the cached columns of a reused `q`).
        let mut l = n;
        let mut i = 0;
        loop {
            while l > i && is_fixed[st.orig(l - 1)] {
                l -= 1;
            }
            while i < l && !is_fixed[st.orig(i)] {
                i += 1;
            }
            if i >= l {
                break;
            }
            l -= 1;
            st.swap(q, i, l);
            i += 1;
        }
        st.l = l;
        st.active = l;
        for i in 0..n {
            st.update_status(i);
        }
        // Fold the fixed variables' columns into p.
        let mut gfix = vec![0.0; n];
        for k in l..n {
            let ak = st.alpha[k];
            if ak != 0.0 {
                let col = q.column(k, n);
                for (gi, &qv) in gfix.iter_mut().zip(col) {
                    *gi += ak * f64::from(qv);
                }
            }
        }
        for k in l..n {
            st.obj_fixed += st.alpha[k] * (0.5 * gfix[k] + st.p[k]);
        }
        for i in 0..l {
            st.p[i] += gfix[i];
        }
        // Gradient of the free part from the warm start.
        st.g[..l].copy_from_slice(&st.p[..l]);
        if let (Some(w), true) = (&warm, l == n) {
            // No fixed variable, so no swap happened: the caller's order is the solver's.
            for i in 0..n {
                st.g[i] += w.qa[i];
                st.g_bar[i] = w.qa_upper[i];
            }
            return Ok(st);
        }
        for j in 0..l {
            let aj = st.alpha[j];
            if aj != 0.0 {
                let col = q.column(j, l);
                for (gi, &qv) in st.g[..l].iter_mut().zip(col) {
                    *gi += aj * f64::from(qv);
                }
                if st.status[j] == Bound::Upper {
                    let uj = st.upper[j];
                    for (gb, &qv) in st.g_bar[..l].iter_mut().zip(col) {
                        *gb += uj * f64::from(qv);
                    }
                }
            }
        }
        Ok(st)
    }

    /// Recomputes the gradient of the shrunk variables from `g_bar` and the free variables.
    #[allow(clippy::needless_range_loop)]
    pub fn reconstruct_gradient<Q: QMatrix + ?Sized>(&mut self, q: &mut Q) {
        let (act, l) = (self.active, self.l);
        if act == l {
            return;
        }
        self.pre = None;
        self.pre_single = false;
        for j in act..l {
            self.g[j] = self.g_bar[j] + self.p[j];
        }
        let free: Vec<usize> = (0..act)
            .filter(|&j| self.status[j] == Bound::Free)
            .collect();
        let threads = rayon::current_num_threads();
        // Tiles of REBUILD_COLS columns times REBUILD_ROWS rows, computed together.
        let mut buf = Vec::new();
        // Pick the loop order that reads fewer kernel entries.
        if free.len() * l > 2 * act * (l - act) {
            // Row by row: `g_i += sum_j alpha_j Q_ij` over the free `j` (in order), from rows
            // `0..act` of each shrunk variable's column.
            let shrunk: Vec<usize> = (act..l).collect();
            let alpha = &self.alpha;
            let mut sums = Vec::with_capacity(REBUILD_COLS);
            for (b, idx) in shrunk.chunks(REBUILD_COLS).enumerate() {
                sums.clear();
                sums.resize(idx.len(), 0.0);
                for r0 in (0..act).step_by(REBUILD_ROWS) {
                    let rows = REBUILD_ROWS.min(act - r0);
                    let fr = &free[free.partition_point(|&j| j < r0)..];
                    let fr = &fr[..fr.partition_point(|&j| j < r0 + rows)];
                    let cols = column_parts(q, idx, r0, rows, &mut buf);
                    // Each column's sum runs over `free` in order: the same bits for any split.
                    let add = |s: &mut f64, col: &[f32]| {
                        for &j in fr {
                            *s += alpha[j] * f64::from(col[j - r0]);
                        }
                    };
                    if threads > 1 && fr.len() * idx.len() >= PAR_SCAN {
                        use rayon::prelude::*;
                        sums.par_iter_mut()
                            .zip(cols.par_chunks(rows))
                            .for_each(|(s, col)| add(s, col));
                    } else {
                        for (s, col) in sums.iter_mut().zip(cols.chunks(rows)) {
                            add(s, col);
                        }
                    }
                }
                let at = act + b * REBUILD_COLS;
                for (gi, s) in self.g[at..at + idx.len()].iter_mut().zip(&sums) {
                    *gi += s;
                }
            }
        } else {
            // Column by column: `g[act..l] += alpha_i Q_i` over the free `i`, in order.
            for idx in free.chunks(REBUILD_COLS) {
                for r0 in (act..l).step_by(REBUILD_ROWS) {
                    let rows = REBUILD_ROWS.min(l - r0);
                    let cols = column_parts(q, idx, r0, rows, &mut buf);
                    let alpha = &self.alpha;
                    // Every row takes the columns in the order of `free`: the same bits for any
                    // split of the rows.
                    let axpy = |lo: usize, g: &mut [f64]| {
                        for (&i, col) in idx.iter().zip(cols.chunks(rows)) {
                            let ai = alpha[i];
                            for (gj, &qv) in g.iter_mut().zip(&col[lo..]) {
                                *gj += ai * f64::from(qv);
                            }
                        }
                    };
                    let g = &mut self.g[r0..r0 + rows];
                    if threads > 1 && rows * idx.len() >= PAR_SCAN {
                        use rayon::prelude::*;
                        let len = rows.div_ceil(threads).next_multiple_of(LANES);
                        g.par_chunks_mut(len)
                            .enumerate()
                            .for_each(|(c, g)| axpy(c * len, g));
                    } else {
                        axpy(0, g);
                    }
                }
            }
        }
        self.active = l;
    }

    /// Adds `sign * u_i * Q_i` to `g_bar` when variable `i` enters (+1) or leaves (-1) its
    /// upper bound.
    pub fn update_g_bar<Q: QMatrix + ?Sized>(&mut self, q: &mut Q, i: usize, sign: f64) {
        let c = sign * self.upper[i];
        self.add_to_g_bar(c, 0, q.column(i, self.l));
    }

    /// `g_bar[lo..lo + part.len()] += c * part` (`part`: those rows of a column of `Q`).
    pub fn add_to_g_bar(&mut self, c: f64, lo: usize, part: &[f32]) {
        let l = part.len();
        let axpy = |gb: &mut [f64], col: &[f32]| {
            for (gb, &qv) in gb.iter_mut().zip(col) {
                *gb += c * f64::from(qv);
            }
        };
        if rayon::current_num_threads() > 1 && l >= PAR_SCAN {
            // Element-wise: the same bits for any split.
            use rayon::prelude::*;
            let len = l.div_ceil(rayon::current_num_threads());
            self.g_bar[lo..lo + l]
                .par_chunks_mut(len)
                .zip(part.par_chunks(len))
                .for_each(|(gb, c)| axpy(gb, c));
        } else {
            axpy(&mut self.g_bar[lo..lo + l], part);
        }
    }

    /// Objective `1/2 a'Qa + p'a` from the gradient (valid when nothing is shrunk).
    pub fn objective(&self) -> f64 {
        let mut s = 0.0;
        for i in 0..self.l {
            s += self.alpha[i] * (self.g[i] + self.p[i]);
        }
        0.5 * s + self.obj_fixed
    }

    /// Debug check: bounds, status and the equality.
    pub fn check_invariants(&self) -> bool {
        for i in 0..self.n {
            let (a, u) = (self.alpha[i], self.upper[i]);
            if !(a >= 0.0 && a <= u) || self.status[i] != Self::bound_of(a, u) {
                return false;
            }
            if self.flags[i] != Self::flags_of(self.status[i], self.y[i]) {
                return false;
            }
        }
        if let Some(d) = self.delta {
            if off_equality((0..self.n).map(|i| (self.yf(i), self.alpha[i])), d) {
                return false;
            }
        }
        true
    }

    /// Puts every array and `q` back in the original order with the fewest swaps
    /// (`n` minus the number of cycles of the permutation): each swap moves one variable to
    /// its home position. `q`'s cache defers the row swaps and applies them in one pass per
    /// cached column, so the cached columns stay valid for a following solve on the same `q`.
    pub fn restore_order<Q: QMatrix + ?Sized>(&mut self, q: &mut Q) {
        for k in 0..self.n {
            while self.orig(k) != k {
                let t = self.orig(k);
                self.swap(q, k, t);
            }
        }
    }

    /// Writes the solution back in the original order.
    pub fn scatter(&self, out: &mut [f64]) {
        for (i, &o) in self.perm.iter().enumerate() {
            out[o as usize] = self.alpha[i];
        }
    }

    /// LIBSVM's rho over the active variables: mean of `y_i g_i` over free variables, else the
    /// midpoint of the interval the bounded variables allow.
    pub fn rho(&self) -> f64 {
        let act = self.active;
        rho_of(&self.y[..act], &self.g[..act], &self.status[..act])
    }
}

/// Whether the signed coefficients `(y_i, alpha_i)` miss `y'a = delta` by more than rounding
/// (relative to `1 + sum |alpha_i|`): a state that does so is not a feasible SMO state.
pub(crate) fn off_equality(signed: impl Iterator<Item = (f64, f64)>, delta: f64) -> bool {
    let (mut s, mut scale) = (0.0, 1.0f64);
    for (y, a) in signed {
        s += y * a;
        scale += a.abs();
    }
    (s - delta).abs() > 1e-8 * scale.max(delta.abs())
}

/// LIBSVM's rho over the variables given (signs, gradient, bound status): the mean of `y_i g_i`
/// over the free ones in their order, else the midpoint of the interval the bounded ones allow.
pub(crate) fn rho_of(y: &[i8], g: &[f64], status: &[Bound]) -> f64 {
    let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut sum, mut nf) = (0.0, 0usize);
    for ((&yi, &gi), &si) in y.iter().zip(g).zip(status) {
        let yg = f64::from(yi) * gi;
        match si {
            Bound::Free => {
                sum += yg;
                nf += 1;
            }
            Bound::Upper => {
                if yi < 0 {
                    ub = ub.min(yg)
                } else {
                    lb = lb.max(yg)
                }
            }
            Bound::Lower => {
                if yi > 0 {
                    ub = ub.min(yg)
                } else {
                    lb = lb.max(yg)
                }
            }
        }
    }
    if nf > 0 {
        sum / nf as f64
    } else if ub.is_finite() && lb.is_finite() {
        0.5 * (ub + lb)
    } else if ub.is_finite() {
        ub
    } else if lb.is_finite() {
        lb
    } else {
        0.0
    }
}

/// The pair update: moves `a_i, a_j` along the equality-preserving direction by the clipped
/// Newton step. `qij` is `Q_ij`. Returns the new values.
#[inline]
pub(crate) fn pair_step(st: &State, i: usize, j: usize, qij: f64) -> (f64, f64) {
    pair_step_of(
        PairVars {
            a: [st.alpha[i], st.alpha[j]],
            u: [st.upper[i], st.upper[j]],
            g: [st.g[i], st.g[j]],
            y: [st.y[i], st.y[j]],
            qd: [st.qd[i], st.qd[j]],
        },
        qij,
    )
}

/// The values of the two variables of a pair step: alpha, upper bound, gradient, sign and
/// `Q_tt` of `i` (index 0) and `j` (index 1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PairVars {
    pub a: [f64; 2],
    pub u: [f64; 2],
    pub g: [f64; 2],
    pub y: [i8; 2],
    pub qd: [f64; 2],
}

/// [`pair_step`] on the values of the pair (the same arithmetic wherever they are held).
#[inline]
pub(crate) fn pair_step_of(v: PairVars, qij: f64) -> (f64, f64) {
    let [ai, aj] = v.a;
    let [ui, uj] = v.u;
    let [gi, gj] = v.g;
    if v.y[0] != v.y[1] {
        // y_i a_i + y_j a_j constant with y_j = -y_i: both move by the same t.
        let mut quad = v.qd[0] + v.qd[1] + 2.0 * qij;
        if quad <= 0.0 {
            quad = TAU;
        }
        let t = (-gi - gj) / quad;
        let lo = (-ai).max(-aj);
        let hi = (ui - ai).min(uj - aj);
        if t <= lo {
            if -ai >= -aj {
                (0.0, (aj - ai).clamp(0.0, uj))
            } else {
                ((ai - aj).clamp(0.0, ui), 0.0)
            }
        } else if t >= hi {
            if ui - ai <= uj - aj {
                (ui, (aj + (ui - ai)).clamp(0.0, uj))
            } else {
                ((ai + (uj - aj)).clamp(0.0, ui), uj)
            }
        } else {
            ((ai + t).clamp(0.0, ui), (aj + t).clamp(0.0, uj))
        }
    } else {
        // Same sign: a_i decreases by t while a_j increases by t.
        let mut quad = v.qd[0] + v.qd[1] - 2.0 * qij;
        if quad <= 0.0 {
            quad = TAU;
        }
        let t = (gi - gj) / quad;
        let lo = (ai - ui).max(-aj);
        let hi = ai.min(uj - aj);
        let sum = ai + aj;
        if t <= lo {
            if ai - ui >= -aj {
                (ui, (sum - ui).clamp(0.0, uj))
            } else {
                (sum.clamp(0.0, ui), 0.0)
            }
        } else if t >= hi {
            if ai <= uj - aj {
                (0.0, sum.clamp(0.0, uj))
            } else {
                ((sum - uj).clamp(0.0, ui), uj)
            }
        } else {
            ((ai - t).clamp(0.0, ui), (aj + t).clamp(0.0, uj))
        }
    }
}

/// Active sets at least this long are scanned in parallel when the pool has several threads
/// (shorter scans cost less than handing half to a worker kept awake by
/// [`super::hot::with_hot_pool`], about a microsecond).
const PAR_SCAN: usize = 4096;

/// Length of the parts of a parallel scan over `act` positions: about four per thread (the
/// thread that finishes first takes the last ones, so neither waits long for the other), at
/// least 1024 positions each, whole lanes. The parts combine exactly, so this does not change
/// any result.
fn par_len(act: usize, threads: usize) -> usize {
    act.div_ceil(4 * threads).max(1024).next_multiple_of(LANES)
}

/// Columns per tile of the gradient rebuild (two parallel groups of the blocked fill).
const REBUILD_COLS: usize = 32;
/// Rows per tile of the gradient rebuild: a tile is 1 MiB of f32, so the rebuild adds next to
/// nothing to the memory beyond the cache.
const REBUILD_ROWS: usize = 8192;

/// Rows `lo..lo + len` of the columns `idx` through [`QMatrix::columns_part`] (computed
/// together, outside the cache), one after another in `buf`.
fn column_parts<'b, Q: QMatrix + ?Sized>(
    q: &mut Q,
    idx: &[usize],
    lo: usize,
    len: usize,
    buf: &'b mut Vec<f32>,
) -> &'b [f32] {
    buf.resize(idx.len() * len, 0.0);
    if len > 0 {
        let mut outs: Vec<&mut [f32]> = buf.chunks_mut(len).collect();
        q.columns_part(idx, lo, &mut outs);
    }
    buf
}

/// A minimum and the last index attaining it. Minima are exact and ties go to the larger
/// index, so combining the parts of any split gives the answer of one sequential scan: the
/// selection does not depend on the thread count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ArgMin {
    pub v: f64,
    pub at: usize,
}

impl ArgMin {
    const NONE: ArgMin = ArgMin {
        v: f64::INFINITY,
        at: 0,
    };
    #[inline]
    fn combine(a: ArgMin, b: ArgMin) -> ArgMin {
        if b.v < a.v || (b.v == a.v && b.at > a.at) {
            b
        } else {
            a
        }
    }
}

/// The first WSS3 pass: `i` = argmin of `y g + up_inf` (i.e. argmax over `I_up` of `-y g`)
/// and `M` = min of `-y g + low_inf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scan {
    pub up: ArgMin,
    pub low: f64,
}

impl Scan {
    const NONE: Scan = Scan {
        up: ArgMin::NONE,
        low: f64::INFINITY,
    };
    #[inline]
    fn combine(a: Scan, b: Scan) -> Scan {
        Scan {
            up: ArgMin::combine(a.up, b.up),
            low: if b.low < a.low { b.low } else { a.low },
        }
    }
}

/// Lane-wise minimum of a small array (the order does not matter: minima are exact).
#[inline]
fn min_of(acc: &[f64; LANES]) -> f64 {
    let mut m = f64::INFINITY;
    for &x in acc {
        m = if x < m { x } else { m };
    }
    m
}

/// The additive mask of a flag bit: 0 when `flags` has `bit`, else `+inf` (branch-free).
#[inline(always)]
fn mask(flags: u8, bit: u8) -> f64 {
    if flags & bit != 0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// One position of the first pass: writes `y g + up_inf` and folds both minima (`up_inf`,
/// `low_inf`: the masks of [`IN_UP`], [`IN_LOW`]).
#[inline(always)]
fn scan_one(gt: f64, y: i8, f: u8, o: &mut f64, mu: &mut f64, ml: &mut f64) {
    let yt = f64::from(y);
    let (u, l) = (mask(f, IN_UP), mask(f, IN_LOW));
    let s_up = yt * gt + u;
    *o = s_up;
    *mu = if s_up < *mu { s_up } else { *mu };
    let s_low = -yt * gt + l;
    *ml = if s_low < *ml { s_low } else { *ml };
}

/// The gradient change of a pair step on a range: `dai Q_i + daj Q_j`.
#[derive(Clone, Copy)]
struct PairDelta<'c> {
    qi: &'c [f32],
    qj: &'c [f32],
    dai: f64,
    daj: f64,
}

/// First pass over positions `base..base + g.len()`, optionally applying a pair step to the
/// gradient in the same sweep (one read of `g` instead of two). Branch-free lanes of
/// [`LANES`] accumulators, which the compiler vectorizes.
fn scan_chunk(
    base: usize,
    g: &mut [f64],
    sc: &mut [f64],
    y: &[i8],
    fl: &[u8],
    upd: Option<PairDelta<'_>>,
) -> Scan {
    let mut mu = [f64::INFINITY; LANES];
    let mut ml = [f64::INFINITY; LANES];
    let full = g.len() - g.len() % LANES;
    {
        let it = g[..full]
            .chunks_exact_mut(LANES)
            .zip(sc[..full].chunks_exact_mut(LANES))
            .zip(y[..full].chunks_exact(LANES))
            .zip(fl[..full].chunks_exact(LANES));
        match upd {
            Some(d) => {
                let qs = d.qi[..full]
                    .chunks_exact(LANES)
                    .zip(d.qj[..full].chunks_exact(LANES));
                for ((((gc, oc), yc), fc), (ac, bc)) in it.zip(qs) {
                    for r in 0..LANES {
                        let gt = gc[r] + (f64::from(ac[r]) * d.dai + f64::from(bc[r]) * d.daj);
                        gc[r] = gt;
                        scan_one(gt, yc[r], fc[r], &mut oc[r], &mut mu[r], &mut ml[r]);
                    }
                }
            }
            None => {
                for (((gc, oc), yc), fc) in it {
                    for r in 0..LANES {
                        scan_one(gc[r], yc[r], fc[r], &mut oc[r], &mut mu[r], &mut ml[r]);
                    }
                }
            }
        }
    }
    for t in full..g.len() {
        if let Some(d) = upd {
            g[t] += f64::from(d.qi[t]) * d.dai + f64::from(d.qj[t]) * d.daj;
        }
        scan_one(g[t], y[t], fl[t], &mut sc[t], &mut mu[0], &mut ml[0]);
    }
    let m = min_of(&mu);
    let at = if m < f64::INFINITY {
        sc.iter().rposition(|&v| v == m).map_or(0, |k| base + k)
    } else {
        0
    };
    Scan {
        up: ArgMin { v: m, at },
        low: min_of(&ml),
    }
}

/// The first pass over the active set (with the pair step when `upd` is given), split across
/// the pool when the set is long. Each part is written by exactly one task and the minima
/// combine exactly, so the result is the same for any thread count.
fn scan_active(st: &mut State, upd: Option<PairDelta<'_>>) -> Scan {
    use rayon::prelude::*;
    let act = st.active;
    let (g, sc) = (&mut st.g[..act], &mut st.scratch[..act]);
    let (y, fl) = (&st.y[..act], &st.flags[..act]);
    let threads = rayon::current_num_threads();
    if threads > 1 && act >= PAR_SCAN {
        let len = par_len(act, threads);
        g.par_chunks_mut(len)
            .zip(sc.par_chunks_mut(len))
            .enumerate()
            .map(|(c, (gc, scc))| {
                let (lo, hi) = (c * len, c * len + gc.len());
                let part = upd.map(|d| PairDelta {
                    qi: &d.qi[lo..hi],
                    qj: &d.qj[lo..hi],
                    ..d
                });
                scan_chunk(lo, gc, scc, &y[lo..hi], &fl[lo..hi], part)
            })
            .reduce(|| Scan::NONE, Scan::combine)
    } else {
        scan_chunk(0, g, sc, y, fl, upd)
    }
}

/// Inputs of the second WSS3 pass that do not vary along the scan.
#[derive(Clone, Copy)]
struct SecondPass {
    gmax: f64,
    yi: f64,
    qdi: f64,
}

/// Second pass over `base..base + sc.len()`: argmin of `-b^2 / quad` over `I_low` with
/// `b = m + y_t g_t > 0`.
///
/// A hot kernel (it runs once per SMO iteration over the whole active set, per rayon chunk):
/// its per-variable arrays arrive as separate slices of one range, each cut to the chunk by
/// the caller, so that the lane loop zips plain slices of equal length.
#[allow(clippy::too_many_arguments)] // hot kernel: the per-variable slices of one range
fn second_chunk(
    base: usize,
    sc: &mut [f64],
    y: &[i8],
    g: &[f64],
    fl: &[u8],
    qd: &[f64],
    col: &[f32],
    p: SecondPass,
) -> ArgMin {
    let mut acc = [f64::INFINITY; LANES];
    let one = |o: &mut f64, yt: i8, gt: f64, f: u8, qdt: f64, qit: f32, a: &mut f64| {
        let (yt, m) = (f64::from(yt), mask(f, IN_LOW));
        let b = p.gmax + yt * gt;
        let quad = p.qdi + qdt - 2.0 * p.yi * yt * f64::from(qit);
        let quad = if quad > 0.0 { quad } else { TAU };
        let obj = -(b * b) / quad + m;
        let v = if b > 0.0 { obj } else { f64::INFINITY };
        *o = v;
        *a = if v < *a { v } else { *a };
    };
    let full = sc.len() - sc.len() % LANES;
    let it = sc[..full]
        .chunks_exact_mut(LANES)
        .zip(y[..full].chunks_exact(LANES))
        .zip(g[..full].chunks_exact(LANES))
        .zip(fl[..full].chunks_exact(LANES))
        .zip(qd[..full].chunks_exact(LANES))
        .zip(col[..full].chunks_exact(LANES));
    for (((((oc, yc), gc), lc), qc), cc) in it {
        for r in 0..LANES {
            one(&mut oc[r], yc[r], gc[r], lc[r], qc[r], cc[r], &mut acc[r]);
        }
    }
    for t in full..sc.len() {
        one(&mut sc[t], y[t], g[t], fl[t], qd[t], col[t], &mut acc[0]);
    }
    let m = min_of(&acc);
    let at = if m < f64::INFINITY {
        sc.iter().rposition(|&v| v == m).map_or(0, |k| base + k)
    } else {
        0
    };
    ArgMin { v: m, at }
}

/// WSS3 over the active set. Returns the pair and `Q_ij`, or `None` when `m - M <= tol`;
/// always sets the violation `m - M` (`-inf` when a side is empty).
///
/// Two passes over contiguous arrays (masks 0 or `+inf` from the flag bytes); the first
/// is usually fused into the previous gradient update ([`State::pre`]). Ties go to the
/// largest index, as a single scan with `>=` / `<=` would do. Long active sets are split
/// across the rayon pool with an exact, order-independent combination.
fn select_pair<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    tol: f64,
    viol: &mut f64,
) -> Option<(usize, usize, f64)> {
    let act = st.active;
    let first = match st.pre.take() {
        Some(s) => s,
        None => scan_active(st, None),
    };
    if first.up.v == f64::INFINITY {
        *viol = f64::NEG_INFINITY;
        return None;
    }
    let i = first.up.at;
    let gmax = -st.yf(i) * st.g[i];
    let gmin = first.low;
    *viol = gmax - gmin;
    if gmax - gmin < tol {
        return None;
    }
    let col = &q.column(i, act)[..act];
    let p = SecondPass {
        gmax,
        yi: st.yf(i),
        qdi: st.qd[i],
    };
    let best = second_pass(st, col, p);
    if best.v == f64::INFINITY {
        return None;
    }
    let j = best.at;
    Some((i, j, f64::from(col[j])))
}

/// The second WSS3 pass over the active set with column `col` of `i` (`col.len()` is the
/// active size), split across the pool when the set is long (exact combination).
fn second_pass(st: &mut State, col: &[f32], p: SecondPass) -> ArgMin {
    use rayon::prelude::*;
    let act = st.active;
    let sc = &mut st.scratch[..act];
    let (y, g, low, qd) = (&st.y[..act], &st.g[..act], &st.flags[..act], &st.qd[..act]);
    let threads = rayon::current_num_threads();
    if threads > 1 && act >= PAR_SCAN {
        let len = par_len(act, threads);
        sc.par_chunks_mut(len)
            .enumerate()
            .map(|(c, scc)| {
                let (lo, hi) = (c * len, c * len + scc.len());
                second_chunk(
                    lo,
                    scc,
                    &y[lo..hi],
                    &g[lo..hi],
                    &low[lo..hi],
                    &qd[lo..hi],
                    &col[lo..hi],
                    p,
                )
            })
            .reduce(|| ArgMin::NONE, ArgMin::combine)
    } else {
        second_chunk(0, sc, y, g, low, qd, col, p)
    }
}

/// The clipped Newton step of one variable, its decrease of `f`, and `|PG|` (shared by the
/// scan and by the step of the selected variable, so both compute the same bits). Written
/// with plain comparisons (no NaN-aware `min`/`max`) so that the scan vectorizes.
#[inline(always)]
fn single_step(g: f64, a: f64, u: f64, qd: f64) -> (f64, f64, f64) {
    let qtt = if qd > 0.0 { qd } else { TAU };
    // clamp(-g / qtt, -a, u - a) (-a <= u - a on a feasible point).
    let n = -g / qtt;
    let n = if n < -a { -a } else { n };
    let d = if n > u - a { u - a } else { n };
    let gain = -(g * d + 0.5 * qtt * d * d);
    (d, gain, single_pg(g, a, u))
}

/// `|PG|` of one variable (no equality).
#[inline(always)]
fn single_pg(g: f64, a: f64, u: f64) -> f64 {
    // Bitwise `&` (no short circuit) keeps the selects branch-free.
    let lo = if (a <= 0.0) & (g > 0.0) { 0.0 } else { g };
    let pg = if (a >= u) & (lo < 0.0) { 0.0 } else { lo };
    pg.abs()
}

/// First position of `v` in `x`, tested a block of 8 at a time (branch-free within a block).
fn first_equal(x: &[f64], v: f64) -> Option<usize> {
    const B: usize = 8;
    let full = x.len() - x.len() % B;
    let k = x[..full]
        .chunks_exact(B)
        .position(|c| c.iter().fold(false, |acc, &e| acc | (e == v)))
        .map_or(full, |k| k * B);
    x[k..].iter().position(|&e| e == v).map(|t| k + t)
}

/// Single-variable rule (no equality): the KKT violator with the largest clipped-Newton
/// decrease (the first one among ties). Sets the violation `max |PG|`. One branch-free pass
/// of [`LANES`] accumulators writes the decreases to `scratch`, a second finds the first
/// position of the largest: the result is that of one sequential scan.
fn select_single(st: &mut State, tol: f64, viol: &mut f64) -> Option<(usize, f64)> {
    let act = st.active;
    st.pre = None;
    if !st.pre_single {
        let (g, al, up, qd) = (
            &st.g[..act],
            &st.alpha[..act],
            &st.upper[..act],
            &st.qd[..act],
        );
        let (sc, sp) = (&mut st.scratch[..act], &mut st.scratch2[..act]);
        // A map (vectorized by the loop vectorizer); the maxima follow, exact in any order.
        for (((((o, p), &gt), &a), &u), &q) in sc
            .iter_mut()
            .zip(sp.iter_mut())
            .zip(g)
            .zip(al)
            .zip(up)
            .zip(qd)
        {
            let (_, gain, apg) = single_step(gt, a, u, q);
            *o = gain;
            *p = apg;
        }
    }
    st.pre_single = false;
    let (sc, sp) = (&st.scratch[..act], &st.scratch2[..act]);
    let mut vmax = [0.0f64; LANES];
    let mut best = [0.0f64; LANES];
    let full = act - act % LANES;
    for (oc, pc) in sc[..full]
        .chunks_exact(LANES)
        .zip(sp[..full].chunks_exact(LANES))
    {
        for r in 0..LANES {
            vmax[r] = if pc[r] > vmax[r] { pc[r] } else { vmax[r] };
            best[r] = if oc[r] > best[r] { oc[r] } else { best[r] };
        }
    }
    for t in full..act {
        vmax[0] = if sp[t] > vmax[0] { sp[t] } else { vmax[0] };
        best[0] = if sc[t] > best[0] { sc[t] } else { best[0] };
    }
    let (mut v, mut b) = (0.0f64, 0.0f64);
    for r in 0..LANES {
        v = if vmax[r] > v { vmax[r] } else { v };
        b = if best[r] > b { best[r] } else { b };
    }
    *viol = v;
    if v <= tol || b <= 0.0 {
        return None;
    }
    let t = first_equal(sc, b)?;
    let (d, _, _) = single_step(st.g[t], st.alpha[t], st.upper[t], st.qd[t]);
    Some((t, d))
}

/// LIBSVM's shrinking test (equality case): bounded variables whose `-y g` is outside the
/// band `[M, m]` on the side they cannot move to.
pub(crate) fn shrink_sum<Q: QMatrix + ?Sized>(st: &mut State, q: &mut Q, tol: f64) {
    let (mut gmax, mut gmin) = (f64::NEG_INFINITY, f64::INFINITY);
    for t in 0..st.active {
        let f = -st.yf(t) * st.g[t];
        if st.in_up(t) {
            gmax = gmax.max(f);
        }
        if st.in_low(t) {
            gmin = gmin.min(f);
        }
    }
    if !st.unshrunk && gmax - gmin <= 10.0 * tol {
        st.unshrunk = true;
        st.reconstruct_gradient(q);
    }
    let out = |st: &State, t: usize| -> bool {
        let f = -st.yf(t) * st.g[t];
        match (st.in_up(t), st.in_low(t)) {
            (false, true) => f > gmax,
            (true, false) => f < gmin,
            _ => false,
        }
    };
    shrink_by(st, q, out);
}

/// Shrinking without the equality: bounded variables whose gradient points out of the box
/// by more than the current largest violation.
pub(crate) fn shrink_none<Q: QMatrix + ?Sized>(st: &mut State, q: &mut Q, tol: f64) {
    let mut v = 0.0f64;
    for t in 0..st.active {
        let gt = st.g[t];
        let pg = match st.status[t] {
            Bound::Lower => gt.min(0.0),
            Bound::Upper => gt.max(0.0),
            Bound::Free => gt,
        };
        v = v.max(pg.abs());
    }
    if !st.unshrunk && v <= 10.0 * tol {
        st.unshrunk = true;
        st.reconstruct_gradient(q);
    }
    let out = |st: &State, t: usize| -> bool {
        match st.status[t] {
            Bound::Lower => st.g[t] > v,
            Bound::Upper => st.g[t] < -v,
            Bound::Free => false,
        }
    };
    shrink_by(st, q, out);
}

pub(crate) fn shrink_by<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    out: impl Fn(&State, usize) -> bool,
) {
    // The active set changes (possibly without a swap).
    st.pre = None;
    st.pre_single = false;
    let mut i = 0;
    while i < st.active {
        if out(st, i) {
            st.active -= 1;
            while st.active > i {
                if !out(st, st.active) {
                    st.swap(q, i, st.active);
                    break;
                }
                st.active -= 1;
            }
        }
        i += 1;
    }
}

/// Applies the pair update `(i, j) -> (ai, aj)` to alpha, the gradient, status and `g_bar`.
/// With `scan`, the gradient sweep also does the first pass of the next WSS3 selection
/// ([`State::pre`]).
pub(crate) fn apply_pair<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    i: usize,
    j: usize,
    new_ai: f64,
    new_aj: f64,
    scan: bool,
) {
    let act = st.active;
    let dai = new_ai - st.alpha[i];
    let daj = new_aj - st.alpha[j];
    st.alpha[i] = new_ai;
    st.alpha[j] = new_aj;
    let (was_i, was_j) = (st.status[i] == Bound::Upper, st.status[j] == Bound::Upper);
    // Status first: the fused scan reads the new masks.
    st.update_status(i);
    st.update_status(j);
    {
        let (qi, qj) = q.pair(i, j, act);
        let d = PairDelta { qi, qj, dai, daj };
        if scan {
            st.pre = Some(scan_active(st, Some(d)));
        } else {
            for ((gk, &a), &b) in st.g[..act].iter_mut().zip(qi).zip(qj) {
                *gk += f64::from(a) * dai + f64::from(b) * daj;
            }
        }
    }
    let (now_i, now_j) = (st.status[i] == Bound::Upper, st.status[j] == Bound::Upper);
    if was_i != now_i {
        st.update_g_bar(q, i, if now_i { 1.0 } else { -1.0 });
    }
    if was_j != now_j {
        st.update_g_bar(q, j, if now_j { 1.0 } else { -1.0 });
    }
}

fn apply_single<Q: QMatrix + ?Sized>(st: &mut State, q: &mut Q, t: usize, d: f64) {
    let act = st.active;
    let a = st.alpha[t];
    let na = if d == st.upper[t] - a {
        st.upper[t]
    } else if d == -a {
        0.0
    } else {
        (a + d).clamp(0.0, st.upper[t])
    };
    let d = na - a;
    st.alpha[t] = na;
    {
        let col = q.column(t, act);
        // The gradient update also writes the next selection's map (one sweep, vectorized).
        let (g, al, up, qd) = (
            &mut st.g[..act],
            &st.alpha[..act],
            &st.upper[..act],
            &st.qd[..act],
        );
        let (sc, sp) = (&mut st.scratch[..act], &mut st.scratch2[..act]);
        for ((((((gk, &qv), o), p), &a), &u), &qk) in g
            .iter_mut()
            .zip(col)
            .zip(sc.iter_mut())
            .zip(sp.iter_mut())
            .zip(al)
            .zip(up)
            .zip(qd)
        {
            let gt = *gk + f64::from(qv) * d;
            *gk = gt;
            let (_, gain, apg) = single_step(gt, a, u, qk);
            *o = gain;
            *p = apg;
        }
    }
    let was = st.status[t] == Bound::Upper;
    st.update_status(t);
    let now = st.status[t] == Bound::Upper;
    if was != now {
        st.update_g_bar(q, t, if now { 1.0 } else { -1.0 });
    }
    st.pre_single = true;
}

/// Second variable of the no-equality step. `i` is the single rule's choice with its clipped
/// Newton step `di`. A partner `j` is scored by the decrease of its own clipped Newton step on
/// the problem conditioned on `i`: gradient `g_j + Q_ij di` (equal to `g_j - Q_ij g_i / Q_ii`
/// when `di` is not clipped) and curvature `Q_jj - Q_ij^2 / Q_ii` (the Schur complement, `i`
/// re-optimized along) when `di` is interior, else `Q_jj` (`i` stays at its bound). Strongly
/// correlated pairs, which the single rule zig-zags on, get a small curvature and a large
/// score. Then [`box2_step`] solves the 2-D box QP in `(i, j)` exactly. Returns `None` (take
/// the single step) when no partner decreases `f` further.
fn select_partner<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    i: usize,
    di: f64,
) -> Option<(usize, f64, f64)> {
    let act = st.active;
    if act < 2 {
        return None;
    }
    let col = &q.column(i, act)[..act];
    let (ai, ui) = (st.alpha[i], st.upper[i]);
    let qii = if st.qd[i] > 0.0 { st.qd[i] } else { TAU };
    let interior = ai + di > 0.0 && ai + di < ui;
    // 0 or 1: selects the Schur complement without a branch in the loop.
    let schur = if interior { 1.0 / qii } else { 0.0 };
    let (g, al, up, qd) = (
        &st.g[..act],
        &st.alpha[..act],
        &st.upper[..act],
        &st.qd[..act],
    );
    let sc = &mut st.scratch[..act];
    for (((((o, &qv), &gt), &a), &u), &qjj) in sc.iter_mut().zip(col).zip(g).zip(al).zip(up).zip(qd)
    {
        let qij = f64::from(qv);
        let (_, gain, _) = single_step(gt + qij * di, a, u, qjj - qij * qij * schur);
        *o = gain;
    }
    // The single rule left the map of the *current* gradient in `scratch`; it is overwritten.
    st.pre_single = false;
    sc[i] = 0.0;
    let mut best = [0.0f64; LANES];
    let full = act - act % LANES;
    for oc in sc[..full].chunks_exact(LANES) {
        for r in 0..LANES {
            best[r] = if oc[r] > best[r] { oc[r] } else { best[r] };
        }
    }
    for &o in &sc[full..act] {
        best[0] = if o > best[0] { o } else { best[0] };
    }
    let b = best.iter().fold(0.0f64, |m, &v| if v > m { v } else { m });
    if b <= 0.0 {
        return None;
    }
    let j = first_equal(sc, b)?;
    let qij = f64::from(col[j]);
    let (aj, uj) = (st.alpha[j], st.upper[j]);
    let (di2, dj) = box2_step(
        [st.g[i], st.g[j]],
        [st.qd[i], qij, st.qd[j]],
        [-ai, -aj],
        [ui - ai, uj - aj],
        di,
    );
    if dj == 0.0 {
        return None;
    }
    let snap = |a: f64, u: f64, d: f64| {
        if d == u - a {
            u
        } else if d == -a {
            0.0
        } else {
            (a + d).clamp(0.0, u)
        }
    };
    Some((j, snap(ai, ui, di2), snap(aj, uj, dj)))
}

/// Exact minimizer of `phi(d) = g'd + 1/2 d'Hd` over the box `lo <= d <= hi` (`lo <= 0 <= hi`)
/// for a 2x2 positive semidefinite `H = [[h[0], h[1]], [h[1], h[2]]]`. A convex QP's minimizer
/// is the unconstrained one when that is inside the box, else it lies on an edge, where the
/// problem is 1-D: the best of these candidates (and of `(d0, 0)`, so that the step never
/// decreases `f` less than the single step `d0` of the first variable) is returned. Values on
/// a bound are returned as exactly `lo` / `hi`.
pub(crate) fn box2_step(
    g: [f64; 2],
    h: [f64; 3],
    lo: [f64; 2],
    hi: [f64; 2],
    d0: f64,
) -> (f64, f64) {
    let phi = |a: f64, b: f64| {
        g[0] * a + g[1] * b + 0.5 * (h[0] * a * a + 2.0 * h[1] * a * b + h[2] * b * b)
    };
    // argmin over [l, u] of c t + 1/2 q t^2 (q >= 0; q <= 0 means linear: an end point).
    let line = |c: f64, q: f64, l: f64, u: f64| {
        if q > 0.0 {
            let t = -c / q;
            if t <= l {
                l
            } else if t >= u {
                u
            } else {
                t
            }
        } else if c >= 0.0 {
            l
        } else {
            u
        }
    };
    let mut best = (d0, 0.0, phi(d0, 0.0));
    let mut consider = |a: f64, b: f64| {
        let v = phi(a, b);
        if v < best.2 {
            best = (a, b, v);
        }
    };
    let det = h[0] * h[2] - h[1] * h[1];
    // Relative guard: a determinant at the rounding level of its terms is treated as singular
    // (the minimizer is then on an edge, or an edge attains the same value).
    if h[0] > 0.0 && h[2] > 0.0 && det > 1e-12 * h[0] * h[2] {
        let a = (h[1] * g[1] - h[2] * g[0]) / det;
        let b = (h[1] * g[0] - h[0] * g[1]) / det;
        if a > lo[0] && a < hi[0] && b > lo[1] && b < hi[1] {
            consider(a, b);
        }
    }
    for a in [lo[0], hi[0]] {
        consider(a, line(g[1] + h[1] * a, h[2], lo[1], hi[1]));
    }
    for b in [lo[1], hi[1]] {
        consider(line(g[0] + h[1] * b, h[0], lo[0], hi[0]), b);
    }
    (best.0, best.1)
}

/// Applies the two-variable step (no equality): like [`apply_single`], the gradient update
/// with both columns also writes the next selection's map.
fn apply_two<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    i: usize,
    j: usize,
    new_ai: f64,
    new_aj: f64,
) {
    let act = st.active;
    let dai = new_ai - st.alpha[i];
    let daj = new_aj - st.alpha[j];
    st.alpha[i] = new_ai;
    st.alpha[j] = new_aj;
    {
        let (ci, cj) = q.pair(i, j, act);
        let (g, al, up, qd) = (
            &mut st.g[..act],
            &st.alpha[..act],
            &st.upper[..act],
            &st.qd[..act],
        );
        let (sc, sp) = (&mut st.scratch[..act], &mut st.scratch2[..act]);
        for (((((((gk, &qa), &qb), o), p), &a), &u), &qk) in g
            .iter_mut()
            .zip(ci)
            .zip(cj)
            .zip(sc.iter_mut())
            .zip(sp.iter_mut())
            .zip(al)
            .zip(up)
            .zip(qd)
        {
            let gt = *gk + f64::from(qa) * dai + f64::from(qb) * daj;
            *gk = gt;
            let (_, gain, apg) = single_step(gt, a, u, qk);
            *o = gain;
            *p = apg;
        }
    }
    for t in [i, j] {
        let was = st.status[t] == Bound::Upper;
        st.update_status(t);
        let now = st.status[t] == Bound::Upper;
        if was != now {
            st.update_g_bar(q, t, if now { 1.0 } else { -1.0 });
        }
    }
    st.pre_single = true;
}

/// Oracles of the two-variable step (clarabel and a grid search on random 2-D box QPs).
#[cfg(test)]
#[path = "smo_two_tests.rs"]
mod two_tests;

/// Row-partitioned SMO: the same kernels with the variables split across processes.
#[path = "smo_shard.rs"]
pub mod shard;

/// Default iteration limit: LIBSVM's `max(1e7, 100 n)`.
pub fn default_max_iter(n: usize) -> u64 {
    10_000_000u64.max(100u64.saturating_mul(n as u64))
}

/// Shared driver state for the main loops.
pub(crate) struct Limits {
    pub max_iter: u64,
    pub start: Instant,
    pub time_limit: Option<std::time::Duration>,
}

impl Limits {
    pub fn new(settings: &SolverSettings, n: usize) -> Self {
        Self {
            max_iter: settings.max_iter.unwrap_or_else(|| default_max_iter(n)),
            start: Instant::now(),
            time_limit: settings.time_limit,
        }
    }
    /// Observer and clock check; `Some(status)` to stop.
    pub fn check(
        &self,
        obs: &mut dyn Observer,
        iter: u64,
        viol: f64,
        active: usize,
    ) -> Option<Status> {
        let stats = IterStats {
            iterations: iter,
            max_violation: viol,
            active,
        };
        if obs.on_iter(&stats).is_break() {
            return Some(Status::Interrupted);
        }
        if let Some(t) = self.time_limit {
            if self.start.elapsed() >= t {
                return Some(Status::TimeLimit);
            }
        }
        None
    }
}

/// Solves the box QP `qp` with `Q` from `q`, starting from the feasible `alpha` (the solution
/// on exit, in the original order).
///
/// # Errors
/// [`SolveError::Dimensions`] for arrays of the wrong length, [`SolveError::Infeasible`] for
/// an infeasible start (outside the box or off the equality), [`SolveError::NonFinite`] when the
/// iterates break down.
pub fn solve<Q: QMatrix>(
    q: &mut Q,
    qp: &BoxQp<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    obs: &mut dyn Observer,
) -> Result<SolveInfo, SolveError> {
    Smo::new(settings)
        .solve(q, qp, alpha, obs)
        .map(|out| out.info)
}

/// Which working-set rule, shrinking test and threshold the driver uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One equality `y'a = delta`: WSS3 pairs.
    Sum,
    /// No equality: single variables.
    None,
    /// Two equalities (one per sign of `y`): WSS3 pairs within a class (nu-SVM).
    Nu,
}

impl Mode {
    /// The mode of a one-equality or no-equality problem.
    pub(crate) fn plain(equality: Equality) -> Self {
        match equality {
            Equality::Sum { .. } => Mode::Sum,
            Equality::None => Mode::None,
        }
    }
}

/// What a selection rule asks the driver to do.
enum Step {
    Pair(usize, usize, f64),
    Single(usize, f64),
    /// No equality: `(i, j)` move to the new values (the exact 2-D box step).
    Two(usize, usize, f64, f64),
}

fn select<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    tol: f64,
    viol: &mut f64,
    mode: Mode,
) -> Option<Step> {
    match mode {
        Mode::Sum => select_pair(st, q, tol, viol).map(|(i, j, x)| Step::Pair(i, j, x)),
        Mode::None => {
            select_single(st, tol, viol).map(|(t, d)| match select_partner(st, q, t, d) {
                Some((j, ai, aj)) => Step::Two(t, j, ai, aj),
                None => Step::Single(t, d),
            })
        }
        Mode::Nu => select_nu(st, q, tol, viol).map(|(i, j, x)| Step::Pair(i, j, x)),
    }
}

/// The main loop of the one-equality or the no-equality problem (as `equality` says) on a
/// built state, the pair engine's part of [`super::engine`]'s entry points; leaves `st` in its
/// permuted order.
pub(crate) fn iterate_plain<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    equality: Equality,
    settings: &SolverSettings,
    obs: &mut dyn Observer,
) -> Result<SolveInfo, SolveError> {
    iterate(st, q, settings, obs, Mode::plain(equality)).map(|(info, _)| info)
}

/// A warm start's gradient terms, computed by the caller in the original order:
/// `qa = Q alpha` and `qa_upper = sum_{j: alpha_j >= u_j} u_j Q_{.j}` (LIBSVM's `G_bar`), with
/// `alpha` as given to the solver (inside its box).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WarmGradient<'a> {
    /// `Q alpha`.
    pub qa: &'a [f64],
    /// `sum_{j at its upper bound} u_j Q_{.j}`.
    pub qa_upper: &'a [f64],
}

/// Loop counters of the driver that a snapshot must carry for an exact continuation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Driver {
    pub iter: u64,
    pub counter: usize,
    pub viol: f64,
}

/// The main loop on a built state; leaves `st` in its permuted order.
fn iterate<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    settings: &SolverSettings,
    obs: &mut dyn Observer,
    mode: Mode,
) -> Result<(SolveInfo, f64), SolveError> {
    iterate_ext(st, q, settings, obs, mode, None, false).map(|(i, r, _)| (i, r))
}

/// [`iterate`] continuing from `resume` (the driver of a snapshot) and, with `want_snapshot`,
/// returning a snapshot of the state at the moment a limit or the observer stopped the loop.
fn iterate_ext<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    settings: &SolverSettings,
    obs: &mut dyn Observer,
    mode: Mode,
    resume: Option<Driver>,
    want_snapshot: bool,
) -> Result<(SolveInfo, f64, Option<SmoSnapshot>), SolveError> {
    // Many short parallel sections per iteration: keep the pool's other workers awake.
    let hot = st.l >= super::hot::HOT_MIN_VARS;
    super::hot::with_hot_pool(hot, || {
        iterate_body(st, q, settings, obs, mode, resume, want_snapshot)
    })
}

/// The body of [`iterate_ext`].
// One piece: the SMO main loop; selection, update, shrinking and the stopping test share its
// loop state.
fn iterate_body<Q: QMatrix>(
    st: &mut State,
    q: &mut Q,
    settings: &SolverSettings,
    obs: &mut dyn Observer,
    mode: Mode,
    resume: Option<Driver>,
    want_snapshot: bool,
) -> Result<(SolveInfo, f64, Option<SmoSnapshot>), SolveError> {
    if mode == Mode::None {
        st.ensure_scratch2();
    }
    let lim = Limits::new(settings, st.l);
    let tol = settings.tol;
    let shrinking = settings.shrinking == Shrinking::On;
    let period = st.l.clamp(1, 1000);
    let mut counter = resume.map_or(period, |d| d.counter.clamp(1, period));
    let mut iter = resume.map_or(0, |d| d.iter);
    let mut viol = resume.map_or(f64::INFINITY, |d| d.viol);
    let mut status = Status::MaxIterations;
    // Where the loop stopped early: the state there, before the tail below touches it.
    let mut snapshot = None;
    debug_assert!(st.check_invariants());
    // A resumed loop must not re-run the observer check it stopped at (it would stop again
    // at once for a limit that was raised); a fresh loop never checks at iteration 0.
    let mut checked_at = resume.map(|d| d.iter);
    while st.l > 0 {
        if iter >= lim.max_iter {
            if want_snapshot {
                snapshot = Some(SmoSnapshot::of(
                    st,
                    mode,
                    Driver {
                        iter,
                        counter,
                        viol,
                    },
                ));
            }
            break;
        }
        if iter > 0 && iter % REPORT_EVERY == 0 && checked_at != Some(iter) {
            checked_at = Some(iter);
            if let Some(s) = lim.check(obs, iter, viol, st.active) {
                status = s;
                if want_snapshot {
                    snapshot = Some(SmoSnapshot::of(
                        st,
                        mode,
                        Driver {
                            iter,
                            counter,
                            viol,
                        },
                    ));
                }
                break;
            }
        }
        counter -= 1;
        if counter == 0 {
            counter = period;
            if shrinking {
                match mode {
                    Mode::Sum => shrink_sum(st, q, tol),
                    Mode::None => shrink_none(st, q, tol),
                    Mode::Nu => shrink_nu(st, q, tol),
                }
            }
            debug_assert!(st.check_invariants());
        }
        let mut sel = select(st, q, tol, &mut viol, mode);
        if sel.is_none() {
            if st.active < st.l {
                // Converged on the active set: re-check on the full set.
                st.reconstruct_gradient(q);
                sel = select(st, q, tol, &mut viol, mode);
                counter = 1;
            }
            if sel.is_none() {
                status = Status::Converged;
                break;
            }
        }
        iter += 1;
        match sel {
            Some(Step::Pair(i, j, qij)) => {
                let (ai, aj) = pair_step(st, i, j, qij);
                if !(ai.is_finite() && aj.is_finite()) {
                    return Err(SolveError::NonFinite { what: "alpha" });
                }
                apply_pair(st, q, i, j, ai, aj, mode == Mode::Sum);
            }
            Some(Step::Single(t, d)) => {
                if !d.is_finite() {
                    return Err(SolveError::NonFinite { what: "alpha" });
                }
                apply_single(st, q, t, d);
            }
            Some(Step::Two(i, j, ai, aj)) => {
                if !(ai.is_finite() && aj.is_finite()) {
                    return Err(SolveError::NonFinite { what: "alpha" });
                }
                apply_two(st, q, i, j, ai, aj);
            }
            None => break,
        }
    }
    if st.l == 0 {
        status = Status::Converged;
        viol = 0.0;
    }
    st.reconstruct_gradient(q);
    debug_assert!(st.check_invariants());
    if status != Status::Converged {
        // Report the violation of the returned point.
        let _ = select(st, q, tol, &mut viol, mode);
    }
    let objective = st.objective();
    if !objective.is_finite() {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    let (rho, r) = match mode {
        Mode::Sum => (st.rho(), 0.0),
        Mode::None => (0.0, 0.0),
        Mode::Nu => rho_r(st),
    };
    let l = st.l;
    let groups = match mode {
        Mode::None => 0,
        Mode::Sum => 1,
        Mode::Nu => 2,
    };
    // The gradient is complete here (reconstructed above), so the gap costs O(l log l).
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
            max_violation: viol.max(0.0),
            gap,
        },
        r,
        snapshot,
    ))
}

/// Everything an SMO solve needs to continue exactly where a limit or an observer stopped it:
/// the solver's per-variable arrays in its permuted order (`alpha`, gradient, `G_bar`, the
/// folded linear term, bounds, signs, diagonal), the permutation, the active-set size and the
/// loop counters. Continuing from it with [`Smo::resume`] replays the same iterations as an
/// uninterrupted solve (same data, same `Q`, same settings), so the final iterate is the same.
///
/// A snapshot of the block engine ([`super::block`]) also carries its loop state (the working
/// set, the outer-iteration count, the working-set size): [`SmoSnapshot::engine`] says which
/// engine wrote it, and a resume runs that engine.
///
/// Serialize with [`SmoSnapshot::to_bytes`], read back with [`SmoSnapshot::from_bytes`].
#[derive(Debug, Clone, PartialEq)]
pub struct SmoSnapshot {
    pub(crate) mode: u8,
    pub(crate) l: usize,
    pub(crate) active: usize,
    pub(crate) alpha: Vec<f64>,
    pub(crate) g: Vec<f64>,
    pub(crate) g_bar: Vec<f64>,
    pub(crate) p: Vec<f64>,
    pub(crate) y: Vec<f64>,
    pub(crate) upper: Vec<f64>,
    pub(crate) qd: Vec<f64>,
    pub(crate) perm: Vec<usize>,
    pub(crate) obj_fixed: f64,
    pub(crate) delta: Option<f64>,
    pub(crate) unshrunk: bool,
    pub(crate) driver: Driver,
    /// The block engine's loop state (`None`: the pair engine wrote the snapshot).
    pub(crate) block: Option<BlockLoop>,
}

/// The engine that wrote a [`SmoSnapshot`], and that continues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotEngine {
    /// The pair SMO ([`Smo`]).
    Pair,
    /// The block working-set SMO ([`super::block`]).
    Block,
}

/// The magic of the pair engine's snapshot form.
pub(crate) const SNAP_MAGIC: &str = "MKSMO001";
/// The magic of the block engine's snapshot form: the pair form's fields, then the block loop's.
pub(crate) const BLOCK_SNAP_MAGIC: &str = "MKSMOB01";
/// The kind of state file, in messages.
const SNAP_FILE: &str = "SMO snapshot";

impl SmoSnapshot {
    /// The pair engine's snapshot of `st` (the block engine adds its loop state to it).
    pub(crate) fn of(st: &State, mode: Mode, driver: Driver) -> Self {
        Self {
            mode: match mode {
                Mode::Sum => 0,
                Mode::None => 1,
                Mode::Nu => 2,
            },
            l: st.l,
            active: st.active,
            alpha: st.alpha.clone(),
            g: st.g.clone(),
            g_bar: st.g_bar.clone(),
            p: st.p.clone(),
            y: st.y.iter().map(|&v| f64::from(v)).collect(),
            upper: st.upper.clone(),
            qd: st.qd.clone(),
            perm: st.perm.iter().map(|&v| v as usize).collect(),
            obj_fixed: st.obj_fixed,
            delta: st.delta,
            unshrunk: st.unshrunk,
            driver,
            block: None,
        }
    }

    /// The engine that wrote the snapshot (and continues it).
    pub fn engine(&self) -> SnapshotEngine {
        match self.block {
            Some(_) => SnapshotEngine::Block,
            None => SnapshotEngine::Pair,
        }
    }

    /// Number of variables.
    pub fn n(&self) -> usize {
        self.alpha.len()
    }

    /// Iterations done so far.
    pub fn iterations(&self) -> u64 {
        self.driver.iter
    }

    /// The current iterate in the original variable order.
    pub fn alpha(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.n()];
        for (k, &o) in self.perm.iter().enumerate() {
            out[o] = self.alpha[k];
        }
        out
    }

    /// A compact little-endian binary form (floats bit-exact): magic `MKSMO001` (pair engine)
    /// or `MKSMOB01` (block engine), the mode, shrinking and equality bytes, `n`, `l`, the
    /// active-set size, the constant part of the objective, `delta`, the violation and the two
    /// loop counters, the seven per-variable arrays (`n` entries each, no length) and the
    /// permutation; a block snapshot then has the block loop's state
    /// ([`super::block`]: the working-set size, the outer iterations, the members with their
    /// slots). It carries no checksum: it is embedded in a sealed fit checkpoint.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc::new(self.magic());
        self.encode_body(&mut e);
        e.finish()
    }

    /// The magic of the snapshot's form (its engine's).
    fn magic(&self) -> &'static str {
        match self.engine() {
            SnapshotEngine::Pair => SNAP_MAGIC,
            SnapshotEngine::Block => BLOCK_SNAP_MAGIC,
        }
    }

    /// Writes the snapshot, magic first, into a larger form (a fit checkpoint).
    pub(crate) fn encode(&self, e: &mut Enc) {
        e.raw(self.magic().as_bytes());
        self.encode_body(e);
    }

    /// Reads [`SmoSnapshot::encode`]'s form at `d` (errors name `d`'s file).
    pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Self, CheckpointError> {
        let magic = d.bytes(SNAP_MAGIC.len())?;
        let block = if magic == BLOCK_SNAP_MAGIC.as_bytes() {
            true
        } else if magic == SNAP_MAGIC.as_bytes() {
            false
        } else {
            return Err(d.invalid("SMO snapshot", "bad magic"));
        };
        Self::decode_body(d, block)
    }

    /// Writes everything after the magic.
    fn encode_body(&self, e: &mut Enc) {
        let n = self.n();
        e.u8(self.mode);
        e.bool(self.unshrunk);
        e.bool(self.delta.is_some());
        for v in [n, self.l, self.active] {
            e.usize(v);
        }
        for v in [self.obj_fixed, self.delta.unwrap_or(0.0), self.driver.viol] {
            e.f64(v);
        }
        e.u64(self.driver.iter);
        e.usize(self.driver.counter);
        for arr in [
            &self.alpha,
            &self.g,
            &self.g_bar,
            &self.p,
            &self.y,
            &self.upper,
            &self.qd,
        ] {
            arr.iter().for_each(|&v| e.f64(v));
        }
        self.perm.iter().for_each(|&v| e.usize(v));
        if let Some(b) = &self.block {
            b.encode(e);
        }
    }

    /// Reads [`SmoSnapshot::to_bytes`]' form; returns the snapshot and the bytes consumed.
    ///
    /// # Errors
    /// A [`CheckpointError`] for a wrong magic, truncated data or inconsistent fields (never a
    /// panic).
    pub fn from_bytes(bytes: &[u8]) -> Result<(Self, usize), CheckpointError> {
        let block = bytes.starts_with(BLOCK_SNAP_MAGIC.as_bytes());
        if !block && !bytes.starts_with(SNAP_MAGIC.as_bytes()) {
            return Err(crate::persist::bad_magic(bytes, SNAP_MAGIC, SNAP_FILE));
        }
        let mut d = Dec::at(bytes, SNAP_MAGIC.len(), SNAP_FILE);
        let snap = Self::decode_body(&mut d, block)?;
        Ok((snap, d.pos()))
    }

    /// Reads everything after the magic, the block loop's state too when `block` (errors name
    /// `d`'s file).
    fn decode_body(d: &mut Dec<'_>, block: bool) -> Result<Self, CheckpointError> {
        let (mode, unshrunk, has_delta) = (d.u8()?, d.u8()?, d.u8()?);
        if mode > 2 {
            return Err(d.bad_tag("SMO snapshot mode", mode));
        }
        if unshrunk > 1 || has_delta > 1 {
            return Err(d.invalid("SMO snapshot header", "bad flag bytes"));
        }
        let n = d.u64()?;
        let l = d.u64()?;
        let active = d.u64()?;
        if l > n || active > l {
            return Err(d.invalid("SMO snapshot sizes", "inconsistent"));
        }
        // 8 arrays of n 8-byte values must fit in what is left.
        if n.checked_mul(64)
            .is_none_or(|need| need > d.remaining() as u64)
        {
            return Err(CheckpointError::Truncated {
                file: d.file(),
                at: d.pos(),
                need: n.saturating_mul(64),
            });
        }
        let n = n as usize;
        let obj_fixed = d.f64()?;
        let delta = d.f64()?;
        // One byte form per snapshot: without the equality the delta field is zero.
        if has_delta == 0 && delta.to_bits() != 0 {
            return Err(d.invalid("SMO snapshot delta", "set without the equality"));
        }
        let viol = d.f64()?;
        let iter = d.u64()?;
        let counter = d.u64()? as usize;
        let mut arrays: Vec<Vec<f64>> = Vec::with_capacity(7);
        for _ in 0..7 {
            arrays.push((0..n).map(|_| d.f64()).collect::<Result<_, _>>()?);
        }
        let mut perm = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        for _ in 0..n {
            let v = d.u64()?;
            if v >= n as u64 || seen[v as usize] {
                return Err(d.invalid("SMO snapshot permutation", "not a permutation"));
            }
            seen[v as usize] = true;
            perm.push(v as usize);
        }
        let mut it = arrays.into_iter();
        let mut next = || it.next().unwrap_or_default();
        let mut snap = Self {
            mode,
            l: l as usize,
            active: active as usize,
            alpha: next(),
            g: next(),
            g_bar: next(),
            p: next(),
            y: next(),
            upper: next(),
            qd: next(),
            perm,
            obj_fixed,
            delta: (has_delta == 1).then_some(delta),
            unshrunk: unshrunk == 1,
            driver: Driver {
                iter,
                counter,
                viol,
            },
            block: None,
        };
        if block {
            snap.block = Some(BlockLoop::decode(d, snap.l, snap.active)?);
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if !(finite(&snap.alpha) && finite(&snap.g) && finite(&snap.g_bar) && finite(&snap.p))
            || snap.y.iter().any(|&v| v != 1.0 && v != -1.0)
            || snap.upper.iter().any(|&u| u.is_nan() || u < 0.0)
            || snap
                .alpha
                .iter()
                .zip(&snap.upper)
                .any(|(&a, &u)| !(a >= 0.0 && a <= u))
            || !obj_fixed.is_finite()
        {
            return Err(d.invalid("SMO snapshot values", "out of range"));
        }
        Ok(snap)
    }
}

impl State {
    /// Rebuilds the state of a snapshot on a fresh `q` in the original order (permuting `q`
    /// to the snapshot's order).
    fn from_snapshot<Q: QMatrix + ?Sized>(q: &mut Q, s: &SmoSnapshot) -> Result<Self, SolveError> {
        let n = q.n();
        if s.n() != n {
            return Err(snapshot_mismatch("a different number of variables"));
        }
        let perm = s
            .perm
            .iter()
            .map(|&v| u32::try_from(v))
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| snapshot_mismatch("more than u32::MAX variables"))?;
        // Bring q into the snapshot's order: position k must hold original variable perm[k].
        let mut cur: Vec<usize> = (0..n).collect();
        let mut pos: Vec<usize> = (0..n).collect();
        for k in 0..n {
            let j = pos[s.perm[k]];
            if j != k {
                q.swap_index(k, j);
                let (a, b) = (cur[k], cur[j]);
                cur.swap(k, j);
                pos[a] = j;
                pos[b] = k;
            }
        }
        let mut st = State {
            n,
            l: s.l,
            active: s.active,
            alpha: s.alpha.clone(),
            g: s.g.clone(),
            g_bar: s.g_bar.clone(),
            p: s.p.clone(),
            y: s.y.iter().map(|&v| if v < 0.0 { -1 } else { 1 }).collect(),
            upper: s.upper.clone(),
            qd: s.qd.clone(),
            status: vec![Bound::Lower; n],
            flags: vec![0; n],
            scratch: vec![0.0; n],
            pre: None,
            scratch2: Vec::new(),
            pre_single: false,
            perm,
            obj_fixed: s.obj_fixed,
            delta: s.delta,
            unshrunk: s.unshrunk,
        };
        for i in 0..n {
            st.update_status(i);
        }
        Ok(st)
    }
}

/// [`SolveError::Checkpoint`] for a snapshot that does not belong to the problem.
pub(crate) fn snapshot_mismatch(reason: &'static str) -> SolveError {
    SolveError::Checkpoint(CheckpointError::Mismatch {
        file: SNAP_FILE,
        reason,
    })
}

/// What a pair-SMO solve returns.
#[derive(Debug, Clone)]
pub struct SmoSolution {
    /// The solver's account (status, iterations, objective, `rho`, violation).
    pub info: SolveInfo,
    /// LIBSVM's `r = (r_1 + r_2) / 2` of the nu problem ([`Smo::nu`]); 0 otherwise.
    pub r: f64,
    /// The state to continue from, when [`Smo::keep_snapshot`] was asked and a limit or the
    /// observer stopped the solve.
    pub snapshot: Option<SmoSnapshot>,
}

/// The pair SMO's entry point: the settings, then what the solve needs beyond a plain
/// start-to-finish run, then [`Smo::solve`].
///
/// ```ignore
/// let out = Smo::new(&settings).nu(true).resume(Some(&snapshot)).keep_snapshot(true)
///     .solve(&mut q, &qp, &mut alpha, &mut obs)?;
/// ```
///
/// [`solve`] is the plain run (`Smo::new(settings).solve(..)`, the info only).
#[derive(Debug, Clone, Copy)]
pub struct Smo<'a> {
    settings: &'a SolverSettings,
    nu: bool,
    resume: Option<&'a SmoSnapshot>,
    keep_snapshot: bool,
}

impl<'a> Smo<'a> {
    /// A plain solve with `settings`: the one-equality or no-equality problem as `qp.equality`
    /// says, from the caller's `alpha`, no snapshot.
    pub fn new(settings: &'a SolverSettings) -> Self {
        Self {
            settings,
            nu: false,
            resume: None,
            keep_snapshot: false,
        }
    }

    /// With `true`, the two-equality (nu) problem (the nu mode below): per-class working sets,
    /// and [`SmoSolution::r`] is LIBSVM's `r`. It needs `qp.equality` = `Equality::Sum`.
    pub fn nu(mut self, nu: bool) -> Self {
        self.nu = nu;
        self
    }

    /// With `Some(snapshot)`, the solve continues from the snapshot instead of `alpha` (which
    /// only receives the result) and replays the iterations an uninterrupted solve would have
    /// made, on the engine that wrote the snapshot ([`SmoSnapshot::engine`]: a block
    /// snapshot continues on [`super::block`] with its own working-set size). The snapshot
    /// must come from the same `qp` and `Q` (its signs and bounds are checked).
    pub fn resume(mut self, snapshot: Option<&'a SmoSnapshot>) -> Self {
        self.resume = snapshot;
        self
    }

    /// With `true`, a solve stopped by a limit or the observer also returns a snapshot to
    /// continue from.
    pub fn keep_snapshot(mut self, keep: bool) -> Self {
        self.keep_snapshot = keep;
        self
    }

    /// The solver settings.
    pub fn settings(&self) -> &'a SolverSettings {
        self.settings
    }

    /// Whether this is the nu problem.
    pub fn is_nu(&self) -> bool {
        self.nu
    }

    /// The snapshot the solve continues from, if any.
    pub fn resumes_from(&self) -> Option<&'a SmoSnapshot> {
        self.resume
    }

    /// Whether a solve stopped by a limit or the observer returns a snapshot.
    pub fn keeps_snapshot(&self) -> bool {
        self.keep_snapshot
    }

    /// Solves the box QP `qp` with `Q` from `q`, starting from the feasible `alpha` (or the
    /// snapshot); `alpha` holds the solution on exit, in the original order, and `q` is back
    /// in the caller's order.
    ///
    /// # Errors
    /// As [`solve`]; [`SolveError::Infeasible`] for the nu problem without the equality;
    /// [`SolveError::Checkpoint`] for a snapshot that does not belong to `qp`.
    pub fn solve<Q: QMatrix>(
        &self,
        q: &mut Q,
        qp: &BoxQp<'_>,
        alpha: &mut [f64],
        obs: &mut dyn Observer,
    ) -> Result<SmoSolution, SolveError> {
        if self
            .resume
            .is_some_and(|s| s.engine() == SnapshotEngine::Block)
        {
            // The snapshot's own working-set size replaces the settings' buffer.
            return super::block::run(q, qp, alpha, self, &BlockSettings::default(), obs);
        }
        let settings = self.settings;
        let want_snapshot = self.keep_snapshot;
        let mode = match (self.nu, qp.equality) {
            (true, Equality::None) => {
                return Err(SolveError::Infeasible(
                    "the nu solver needs the equality constraints (Equality::Sum)",
                ))
            }
            (true, _) => Mode::Nu,
            (false, Equality::Sum { .. }) => Mode::Sum,
            (false, Equality::None) => Mode::None,
        };
        let (mut st, driver) = match self.resume {
            None => (State::new(q, qp, alpha)?, None),
            Some(snap) => (
                Self::state_from(q, qp, alpha, snap, mode)?,
                Some(snap.driver),
            ),
        };
        let out = iterate_ext(&mut st, q, settings, obs, mode, driver, want_snapshot);
        // `q` must leave in the caller's order whatever happened: callers reuse it (warm
        // starts).
        st.restore_order(q);
        let (info, r, snapshot) = out?;
        st.scatter(alpha);
        Ok(SmoSolution { info, r, snapshot })
    }

    /// The state of `snap`, checked against the problem.
    pub(crate) fn state_from<Q: QMatrix>(
        q: &mut Q,
        qp: &BoxQp<'_>,
        alpha: &[f64],
        snap: &SmoSnapshot,
        mode: Mode,
    ) -> Result<State, SolveError> {
        let code = match mode {
            Mode::Sum => 0,
            Mode::None => 1,
            Mode::Nu => 2,
        };
        let n = q.n();
        if snap.mode != code
            || snap.n() != n
            || alpha.len() != n
            || qp.y.len() != n
            || qp.upper.len() != n
        {
            return Err(snapshot_mismatch("size or formulation"));
        }
        for (k, &o) in snap.perm.iter().enumerate() {
            let y = if qp.y[o] < 0 { -1.0 } else { 1.0 };
            if snap.y[k] != y || snap.upper[k] != qp.upper[o] {
                return Err(snapshot_mismatch("signs or bounds"));
            }
        }
        let st = State::from_snapshot(q, snap)?;
        // A crafted snapshot (a state file edited and resealed) may hold coefficients outside
        // their bounds or off the equality constraint: an error, not a solve from an
        // infeasible point (and not the debug assertion the loop starts with).
        if !st.check_invariants() {
            return Err(snapshot_mismatch(
                "coefficients outside their bounds or off the equality constraint",
            ));
        }
        Ok(st)
    }
}

// ---------------------------------------------------------------------------------------------
// The nu mode (`Smo::nu`): SMO for the nu-SVM duals, the box QP with *two* equality
// constraints, one per sign of `y`.
//
// ```text
// min_a  1/2 a'Qa + p'a   s.t.  sum_{y_i=+1} a_i = delta_+,  sum_{y_i=-1} a_i = delta_-,
//                               0 <= a_i <= u_i
// ```
// (nu-SVC: `p = 0`, `u_i = 1/l`-style bounds and `delta_+ = delta_- = nu l / 2`; nu-SVR:
// `2l` variables from [`crate::kernel::qmatrix::SvrQ`]). The class sums are given implicitly
// by the feasible start: every update moves two variables of the same class, so both sums
// are preserved. `qp.equality` must be `Sum { delta }` with `delta = y'a` of the start.
//
// | paper (Chang & Lin 2001, LIBSVM sec. 4.2) | code                                    |
// |-------------------------------------------|-----------------------------------------|
// | `m_+(a), M_+(a)`, `m_-(a), M_-(a)`        | per-class extrema of `-y_t g_t` in `select_nu` |
// | `r_1, r_2`                                | per-class thresholds in `rho_r`       |
// | `rho = (r_1 - r_2)/2`, `r = (r_1 + r_2)/2`| `rho_r`                               |
//
// **Working set**: WSS3 inside each class; the pair with the smaller second-order objective
// wins. **Stopping**: `max(m_+ - M_+, m_- - M_-) <= tol`. **Shrinking**: the rule above with
// per-class bands. **Cost per iteration**: as with one equality, plus one more column (the
// best `i` of each class).
//
// Citation: C.-C. Chang, C.-J. Lin, "Training nu-support vector classifiers: theory and
// algorithms", Neural Computation 13 (2001); LIBSVM (ACM TIST 2011) section 4.2.

/// Per-class WSS3. Returns the pair and `Q_ij`, or `None` at convergence; sets the violation.
fn select_nu<Q: QMatrix + ?Sized>(
    st: &mut State,
    q: &mut Q,
    tol: f64,
    viol: &mut f64,
) -> Option<(usize, usize, f64)> {
    let act = st.active;
    // Best i in each class: argmax over I_up of -y g.
    let (mut gp, mut ip, mut gn, mut im) =
        (f64::NEG_INFINITY, usize::MAX, f64::NEG_INFINITY, usize::MAX);
    for t in 0..act {
        if !st.in_up(t) {
            continue;
        }
        let f = -st.yf(t) * st.g[t];
        if st.y[t] > 0 {
            if f >= gp {
                gp = f;
                ip = t;
            }
        } else if f >= gn {
            gn = f;
            im = t;
        }
    }
    if ip == usize::MAX && im == usize::MAX {
        *viol = f64::NEG_INFINITY;
        return None;
    }
    let a = if ip != usize::MAX { ip } else { im };
    let b = if im != usize::MAX { im } else { ip };
    let (cp, cm) = q.pair(a, b, act);
    let (mut mp, mut mm) = (f64::INFINITY, f64::INFINITY);
    let (mut best, mut jbest, mut qbest) = (f64::INFINITY, usize::MAX, 0.0f32);
    for j in 0..act {
        if !st.in_low(j) {
            continue;
        }
        let yj = st.yf(j);
        let f = -yj * st.g[j];
        let (gi, i, col) = if yj > 0.0 {
            mp = mp.min(f);
            (gp, ip, cp)
        } else {
            mm = mm.min(f);
            (gn, im, cm)
        };
        if i == usize::MAX {
            continue;
        }
        let bd = gi - f;
        if bd > 0.0 {
            // Same class: y_i y_j = 1, so Q_ij = K_ij.
            let mut quad = st.qd[i] + st.qd[j] - 2.0 * f64::from(col[j]);
            if quad <= 0.0 {
                quad = TAU;
            }
            let obj = -(bd * bd) / quad;
            if obj <= best {
                best = obj;
                jbest = j;
                qbest = col[j];
            }
        }
    }
    *viol = (gp - mp).max(gn - mm);
    if *viol < tol || jbest == usize::MAX {
        return None;
    }
    let i = if st.y[jbest] > 0 { ip } else { im };
    Some((i, jbest, f64::from(qbest)))
}

/// Per-class `m_c(a)`, the largest `-y_t g_t` over `I_up`, and `M_c(a)`, the smallest over
/// `I_low`, over the active variables (index 0: `y = +1`, 1: `y = -1`; `-inf`, `+inf` when
/// empty).
pub(crate) fn nu_extrema(st: &State) -> ([f64; 2], [f64; 2]) {
    let mut m_up = [f64::NEG_INFINITY; 2];
    let mut m_low = [f64::INFINITY; 2];
    for t in 0..st.active {
        let c = usize::from(st.y[t] < 0);
        let f = -st.yf(t) * st.g[t];
        if st.in_up(t) {
            m_up[c] = m_up[c].max(f);
        }
        if st.in_low(t) {
            m_low[c] = m_low[c].min(f);
        }
    }
    (m_up, m_low)
}

/// Shrinking with per-class bands `[M_c, m_c]`.
pub(crate) fn shrink_nu<Q: QMatrix + ?Sized>(st: &mut State, q: &mut Q, tol: f64) {
    let (m_up, m_low) = nu_extrema(st);
    if !st.unshrunk && (m_up[0] - m_low[0]).max(m_up[1] - m_low[1]) <= 10.0 * tol {
        st.unshrunk = true;
        st.reconstruct_gradient(q);
    }
    let out = |st: &State, t: usize| -> bool {
        let c = usize::from(st.y[t] < 0);
        let f = -st.yf(t) * st.g[t];
        match (st.in_up(t), st.in_low(t)) {
            (false, true) => f > m_up[c],
            (true, false) => f < m_low[c],
            _ => false,
        }
    };
    shrink_by(st, q, out);
}

/// Per-class thresholds `r_c` (mean of `g` over free variables of the class, else the
/// midpoint of its bounds); returns `(rho, r) = ((r_1 - r_2)/2, (r_1 + r_2)/2)`.
pub(crate) fn rho_r(st: &State) -> (f64, f64) {
    let mut ub = [f64::INFINITY; 2];
    let mut lb = [f64::NEG_INFINITY; 2];
    let mut sum = [0.0; 2];
    let mut nf = [0usize; 2];
    for i in 0..st.active {
        let c = usize::from(st.y[i] < 0);
        let g = st.g[i];
        match st.status[i] {
            Bound::Upper => lb[c] = lb[c].max(g),
            Bound::Lower => ub[c] = ub[c].min(g),
            Bound::Free => {
                sum[c] += g;
                nf[c] += 1;
            }
        }
    }
    let r = |c: usize| {
        if nf[c] > 0 {
            sum[c] / nf[c] as f64
        } else if ub[c].is_finite() && lb[c].is_finite() {
            0.5 * (ub[c] + lb[c])
        } else if ub[c].is_finite() {
            ub[c]
        } else if lb[c].is_finite() {
            lb[c]
        } else {
            0.0
        }
    };
    let (r1, r2) = (r(0), r(1));
    (0.5 * (r1 - r2), 0.5 * (r1 + r2))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::qmatrix::DenseQ;

    /// A kernel matrix of 1-d points (RBF), signed by the labels.
    pub(crate) fn problem(n: usize) -> (Vec<f64>, Vec<i8>) {
        let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 97) as f64 / 10.0).collect();
        let y: Vec<i8> = (0..n)
            .map(|i| if (i * 31) % 5 < 2 { 1 } else { -1 })
            .collect();
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let d = x[i] - x[j];
                q[i * n + j] = f64::from(y[i] * y[j]) * (-0.3 * d * d).exp();
            }
        }
        (q, y)
    }

    /// The gradient rebuild gives the shrunk variables' `Q a + p`, computed here from the
    /// matrix, in both of its loop orders: many free variables (row by row) and few (column by
    /// column).
    #[test]
    fn gradient_rebuild_matches_the_matrix() {
        let n = 60;
        let (qv, y) = problem(n);
        let p: Vec<f64> = (0..n).map(|i| -1.0 + 0.01 * i as f64).collect();
        let upper = vec![1.0; n];
        for free_every in [1, 20] {
            // The last 6 are shrunk: at a bound, as shrinking leaves them.
            let act = 54;
            let alpha: Vec<f64> = (0..n)
                .map(|i| match (i >= act, i % free_every, i % 3) {
                    (true, _, r) => f64::from(u8::from(r == 0)),
                    (false, 0, _) => 0.25 + 0.01 * (i % 7) as f64,
                    (false, _, 0) => 1.0,
                    _ => 0.0,
                })
                .collect();
            let qp = BoxQp {
                p: &p,
                y: &y,
                upper: &upper,
                equality: Equality::None,
                fixed: None,
            };
            let mut q = DenseQ::new(n, &qv).unwrap();
            let mut st = State::new(&mut q, &qp, &alpha).unwrap();
            st.active = act;
            st.g[act..].fill(f64::NAN);
            st.reconstruct_gradient(&mut q);
            assert_eq!(st.active, n);
            for t in 0..n {
                let o = st.perm[t] as usize;
                // Q as the matrix serves it (f32 entries).
                let exact: f64 = p[o]
                    + (0..n)
                        .map(|j| f64::from(qv[o * n + j] as f32) * alpha[j])
                        .sum::<f64>();
                assert!(
                    (st.g[t] - exact).abs() <= 1e-10,
                    "free every {free_every}, variable {o}: {} vs {exact}",
                    st.g[t]
                );
            }
        }
    }

    /// The same on an RBF matrix of 9,000 points, so that the rebuild's tiles split both the
    /// rows and the columns (one shrunk tail of 10 variables and one of 8,600), at one and two
    /// threads (the same bits).
    #[test]
    fn gradient_rebuild_over_many_tiles() {
        use crate::data::{DenseMatrix, Features};
        use crate::kernel::qmatrix::SvcQ;
        use crate::kernel::KernelSpec;
        let n = 9_000;
        let pt = |i: usize| {
            [
                ((i * 7919) % 1013) as f64 / 300.0,
                ((i * 104_729) % 997) as f64 / 250.0,
            ]
        };
        let v: Vec<f64> = (0..n).flat_map(pt).collect();
        let x = Features::Dense(DenseMatrix::new(n, 2, v).unwrap());
        let y: Vec<i8> = (0..n)
            .map(|i| if (i * 31) % 5 < 2 { 1 } else { -1 })
            .collect();
        let gamma = 0.7;
        let p = vec![-1.0; n];
        let upper = vec![1.0; n];
        for (act, free_every) in [(8_990, 3), (400, 4)] {
            let alpha: Vec<f64> = (0..n)
                .map(|i| match (i >= act, i % free_every, i % 5) {
                    (true, _, r) => f64::from(u8::from(r == 0)),
                    (false, 0, _) => 0.2 + 0.01 * (i % 7) as f64,
                    (false, _, 0) => 1.0,
                    _ => 0.0,
                })
                .collect();
            let qp = BoxQp {
                p: &p,
                y: &y,
                upper: &upper,
                equality: Equality::None,
                fixed: None,
            };
            let mut rebuilt = Vec::new();
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let g = pool.install(|| {
                    let kernel = KernelSpec::Rbf { gamma };
                    let mut q = SvcQ::new(&x, kernel, &y, 1 << 20).unwrap();
                    let mut st = State::new(&mut q, &qp, &alpha).unwrap();
                    st.active = act;
                    st.g[act..].fill(f64::NAN);
                    st.reconstruct_gradient(&mut q);
                    let mut g = vec![0.0; n];
                    for t in 0..n {
                        g[st.perm[t] as usize] = st.g[t];
                    }
                    g
                });
                rebuilt.push(g);
            }
            assert!(rebuilt[0]
                .iter()
                .zip(&rebuilt[1])
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            let g = &rebuilt[0];
            // The kernel computed here in f64; Q's f32 entries are within 6e-8 of it.
            let scale: f64 = alpha.iter().sum();
            for o in (0..n).step_by(37).chain(act..n.min(act + 50)) {
                let (xo, yo) = (pt(o), f64::from(y[o]));
                let exact = p[o]
                    + (0..n)
                        .filter(|&j| alpha[j] > 0.0)
                        .map(|j| {
                            let xj = pt(j);
                            let d2 = (xo[0] - xj[0]).powi(2) + (xo[1] - xj[1]).powi(2);
                            yo * f64::from(y[j]) * (-gamma * d2).exp() * alpha[j]
                        })
                        .sum::<f64>();
                assert!(
                    (g[o] - exact).abs() <= 1e-6 * scale,
                    "active {act}, variable {o}: {} vs {exact}",
                    g[o]
                );
            }
        }
    }
}
