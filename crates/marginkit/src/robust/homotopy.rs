//! The outlier-path engine: exact piecewise-linear continuous steps (C-steps) in `theta` or `s`,
//! and jump steps (D-steps) traced as a path in an auxiliary `mu: 1 -> 0`. See the module doc of
//! [`super`] for the problem, the symbols and the corrections to the paper.
//!
//! Everything runs in the coefficient space `beta` with `f = K beta` kept for the training rows
//! and the validation rows. Per sample: a state, a sign `sigma` (the label for SVC, the residual
//! side for SVR), the slack `t = sigma (y - f)`, and `a = sigma beta`.
//!
//! | state | slack `t` | coefficient |
//! |---|---|---|
//! | `R` (SVC) | `t < 0` (margin > 1) | `beta = 0` |
//! | `E` | `t = 0` | `beta` free in its box (solved) |
//! | `L` | `0 < t < T` | `a = C` |
//! | `O` | `t > T` | `a = C theta` |
//! | `BI` | `t = T`, inlier held on the boundary | `a >= C` (solved) |
//! | `BO` | `t = T`, outlier held on the boundary | `a <= C theta` (solved) |
//! | `ClIO`, `ClOI` | flipped in a D-step | `a = target + mu d` (driven) |
//!
//! `T = 1 - s` for SVC and `T = s` for SVR. The active set `A = E u BI u BO` keeps its `f` fixed:
//! `K_AA dbeta_A = -K_{A,D} dbeta_D` for the driven samples `D` (`O` in a theta C-step, the clamped
//! ones in a D-step); `df = K[:, A] dbeta_A + K[:, D] dbeta_D`. Each step goes to the nearest event.

use super::chol::Chol;
use super::kern::Kern;
use super::{Node, NodeKind, RobustValidParams, RunEnd, Task};
use crate::solver::{IterStats, Observer};

/// Per-sample state (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum St {
    R,
    E,
    L,
    O,
    Bi,
    Bo,
    ClIO,
    ClOI,
}

/// What happens at the end of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    /// A free coefficient reached the low / high end of its box.
    ToLo,
    ToHi,
    /// The slack reached 0 (R, L, or a clamped former outlier released into E).
    ToE,
    /// An L sample reached `t = T`.
    LBound,
    /// An O sample reached `t = T`.
    OBound,
    /// A held inlier's `a` came down to `C`.
    BiToL,
    /// A held outlier's `a` came up to `C theta`.
    BoToO,
    /// The parameter (theta or mu) reached its end.
    End,
}

/// Outcome of a C-step.
enum CEnd {
    Done,
    Boundary { bi: Vec<usize>, bo: Vec<usize> },
    Limit,
    Stop,
}

/// Whether the next event may be processed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Go,
    Limit,
    Stop,
}

/// Where a snapshot continues: the top of a theta C-step, a theta jump about to start (the
/// pre-jump node recorded), or the top of the OP-s loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Phase {
    #[default]
    ThetaC,
    ThetaD {
        bi: Vec<usize>,
        bo: Vec<usize>,
    },
    STop,
}

/// The engine's state at a safe point (no sample clamped): everything the next events read
/// that depends on the history (the incrementally updated factor, `f`, the outlier sum `s_o`
/// or, for the linear kernel, its weights `w_o` and `sum_o`, the blocked flags, the counters)
/// besides the recorded nodes, which are only truncated to `n_nodes`. What is a function of
/// these is rebuilt by [`Engine::restore`]: the list of blocked samples (the set flags), the
/// outlier count and the list of `O` samples (from the states; its order is never read in a
/// way that changes a value).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct EngineSnap {
    pub phase: Phase,
    pub theta: f64,
    pub tt: f64,
    pub beta: Vec<f64>,
    pub f: Vec<f64>,
    /// State codes (`St as u8`, never a clamped state).
    pub st: Vec<u8>,
    pub sigma: Vec<f64>,
    pub act: Vec<usize>,
    /// [`Chol::packed_into`] of the active-set factor.
    pub chol: Vec<f64>,
    pub track_o: bool,
    /// Kernel engine: `s_o` over all rows (empty for the linear kernel).
    pub s_o: Vec<f64>,
    /// Linear engine: the outlier sum's weights `w_o` (`width` long; empty otherwise) and
    /// `sum_o` (the bias part).
    pub w_o: Vec<f64>,
    pub sum_o: f64,
    pub block: Vec<bool>,
    /// Parked samples (see [`Engine`]'s `parked`).
    pub parked: Vec<bool>,
    pub events: usize,
    pub d_steps: usize,
    pub wrong_direction: usize,
    pub degenerate_jumps: usize,
    pub max_active: usize,
    pub n_nodes: usize,
}

fn st_code(s: St) -> u8 {
    match s {
        St::R => 0,
        St::E => 1,
        St::L => 2,
        St::O => 3,
        St::Bi => 4,
        St::Bo => 5,
        St::ClIO => 6,
        St::ClOI => 7,
    }
}

impl EngineSnap {
    /// Checks the snapshot against an engine over `n` samples and `rows` rows (`linear`: the
    /// primal width of a linear-kernel engine), so that restoring it cannot index out of range
    /// or break the active-set invariants; the error says what does not fit.
    pub fn check(&self, n: usize, rows: usize, linear: Option<usize>) -> Result<(), &'static str> {
        let bad = "array lengths";
        let (s_o_len, w_o_len) = match linear {
            Some(width) => (0, width),
            None => (rows, 0),
        };
        if self.beta.len() != n
            || self.f.len() != rows
            || self.st.len() != n
            || self.sigma.len() != n
            || self.s_o.len() != s_o_len
            || self.w_o.len() != w_o_len
            || (linear.is_none() && self.sum_o != 0.0)
            || self.block.len() != n
            || self.parked.len() != n
        {
            return Err(bad);
        }
        if self.st.iter().any(|&c| c > 5) {
            return Err("a bad sample state");
        }
        let mut seen = vec![false; n];
        for &a in &self.act {
            if a >= n || seen[a] || !matches!(self.st[a], 1 | 4 | 5) {
                return Err("an inconsistent active set");
            }
            seen[a] = true;
        }
        if (0..n).any(|i| matches!(self.st[i], 1 | 4 | 5) && !seen[i]) {
            return Err("an inconsistent active set");
        }
        let k = self.act.len();
        if k.checked_mul(k + 1).map(|m| m / 2) != Some(self.chol.len()) {
            return Err(bad);
        }
        if let Phase::ThetaD { bi, bo } = &self.phase {
            if bi.iter().chain(bo).any(|&i| i >= n) {
                return Err(bad);
            }
        }
        Ok(())
    }
}

/// The engine's state.
pub(crate) struct Engine<'k, 'a> {
    pub kern: &'k mut Kern<'a>,
    pub task: Task,
    pub n: usize,
    pub y: Vec<f64>,
    /// Validation targets (internal coding: +-1 for SVC).
    pub yv: Vec<f64>,
    pub c: f64,
    pub theta: f64,
    /// The threshold `T` on the slack.
    pub tt: f64,
    pub beta: Vec<f64>,
    pub f: Vec<f64>,
    pub st: Vec<St>,
    pub sigma: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    cl_target: Vec<f64>,
    cl_d: Vec<f64>,
    act: Vec<usize>,
    pos: Vec<usize>,
    chol: Chol,
    track_o: bool,
    s_o: Vec<f64>,
    /// Work buffers.
    dbeta: Vec<f64>,
    df: Vec<f64>,
    buf: Vec<f64>,
    /// Active-set work vectors (right-hand side, Gram product, indices, coefficients, drivers).
    rhs: Vec<f64>,
    gram: Vec<f64>,
    idx_buf: Vec<usize>,
    coef_buf: Vec<f64>,
    drv: Vec<usize>,
    block: Vec<bool>,
    /// Samples whose `block` flag is set (cleared after the next step of positive length).
    blocked: Vec<usize>,
    /// Parked samples: a sample whose slack reached its target (0 or `T`) while its kernel
    /// column is numerically dependent on the active set's (squared pivot at most `rank_tol`).
    /// Its slack is a fixed combination of the active slacks, so it cannot move while the active
    /// set keeps its members; it stays in its bound state at the target (valid KKT there) instead
    /// of joining the active set, and the ratio test ignores it (its `df_i` is rounding). Every
    /// removal from the active set releases all parked samples.
    parked: Vec<bool>,
    parked_list: Vec<usize>,
    /// The samples clamped by the current D-step round.
    clamped: Vec<usize>,
    /// Linear kernel: the engine works through primal weights (`lin`), with the direction
    /// `df = X dw + dshift` computed inside the ratio test and the outlier sum kept as
    /// `s_o = X w_o + b^2 sum_o` (instead of `n`-long columns).
    lin: bool,
    dw: Vec<f64>,
    dshift: f64,
    w_o: Vec<f64>,
    sum_o: f64,
    /// Linear kernel: `X' beta` of [`Engine::resync_linear`].
    w_fresh: Vec<f64>,
    /// Linear kernel: the numerical rank of the training rows ([`Kern::data_rank`]) and the
    /// squared-pivot threshold of an independent active-set member; `df_zero` is set by
    /// [`Engine::direction`] when the active set spans the data (then `df = 0` exactly).
    data_rank: Option<usize>,
    rank_tol: f64,
    df_zero: bool,
    /// Outliers (states `O`, `Bo`, `ClIO`), kept by `set_state`.
    n_out: usize,
    /// The samples in state `O` (any order) and each one's position in it (`NONE`: not `O`):
    /// the theta step rewrites only their coefficients.
    o_list: Vec<usize>,
    o_pos: Vec<usize>,
    /// Work column of `add_active`.
    col_buf: Vec<f64>,
    pub events: usize,
    pub max_events: usize,
    pub d_steps: usize,
    pub wrong_direction: usize,
    /// Largest active set seen.
    pub max_active: usize,
    /// Jumps that left `f` unchanged (singular `K_AA` absorbed the flip).
    pub degenerate_jumps: usize,
    /// Set when a step of the current jump moved `f` (cleared when a jump starts).
    jump_moved: bool,
    pub keep: bool,
    pub tol: f64,
    refine_tol: f64,
    pub nodes: Vec<Node>,
    pub best: Option<(usize, f64, Vec<f64>)>,
    /// The state before the current jump (a stop inside it returns here).
    pre: EngineSnap,
    /// The state a stopped path continues from.
    pub stopped: Option<EngineSnap>,
}

const NONE: usize = usize::MAX;

impl<'k, 'a> Engine<'k, 'a> {
    /// A new engine for the path `params` describes, from an exact standard-SVM solution
    /// `(beta, f)` (`f` over all rows).
    pub fn new(
        kern: &'k mut Kern<'a>,
        params: &RobustValidParams,
        y: Vec<f64>,
        yv: Vec<f64>,
        (beta, f): super::BetaF,
        ridge: f64,
    ) -> Self {
        let (task, c) = (params.task, params.c);
        let (keep, tol) = (params.keep_solutions, params.check_tol);
        let n = y.len();
        let max_events = params.max_events.unwrap_or((50 * n).max(10_000));
        let (lo, hi) = super::standard_box(task, &y, c);
        let sigma = match task {
            Task::Svc => y.clone(),
            Task::Svr => vec![0.0; n],
        };
        let rows = f.len();
        let refine_tol = 1e-11 * y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let lin = kern.is_linear();
        let width = if lin { kern.width() } else { 0 };
        let data_rank = if lin { kern.data_rank() } else { None };
        // An independent member's squared pivot is its squared distance from the span of the
        // earlier ones (plus tau); a dependent one's is tau plus rounding (or raised to tau).
        let rank_tol = 1e3 * ridge;
        Self {
            data_rank,
            rank_tol,
            df_zero: false,
            blocked: Vec::new(),
            parked: vec![false; n],
            parked_list: Vec::new(),
            clamped: Vec::new(),
            lin,
            dw: vec![0.0; width],
            dshift: 0.0,
            w_o: vec![0.0; width],
            w_fresh: vec![0.0; width],
            sum_o: 0.0,
            n_out: 0,
            o_list: Vec::new(),
            o_pos: vec![NONE; n],
            col_buf: Vec::new(),
            refine_tol,
            kern,
            task,
            n,
            y,
            yv,
            c,
            theta: 1.0,
            tt: 0.0,
            beta,
            f,
            st: vec![St::R; n],
            sigma,
            lo,
            hi,
            cl_target: vec![0.0; n],
            cl_d: vec![0.0; n],
            act: Vec::new(),
            pos: vec![NONE; n],
            chol: Chol::new(ridge),
            track_o: false,
            s_o: if lin { Vec::new() } else { vec![0.0; rows] },
            dbeta: vec![0.0; n],
            df: vec![0.0; rows],
            buf: vec![0.0; rows],
            rhs: Vec::new(),
            gram: Vec::new(),
            idx_buf: Vec::new(),
            coef_buf: Vec::new(),
            drv: Vec::new(),
            block: vec![false; n],
            events: 0,
            max_events,
            d_steps: 0,
            wrong_direction: 0,
            degenerate_jumps: 0,
            jump_moved: false,
            max_active: 0,
            keep,
            tol,
            nodes: Vec::new(),
            best: None,
            pre: EngineSnap::default(),
            stopped: None,
        }
    }

    /// Copies the state into `snap` (reusing its buffers).
    fn snapshot_into(&self, snap: &mut EngineSnap, phase: Phase) {
        snap.phase = phase;
        snap.theta = self.theta;
        snap.tt = self.tt;
        snap.beta.clone_from(&self.beta);
        snap.f.clone_from(&self.f);
        snap.st.clear();
        snap.st.extend(self.st.iter().map(|&s| st_code(s)));
        snap.sigma.clone_from(&self.sigma);
        snap.act.clone_from(&self.act);
        self.chol.packed_into(&mut snap.chol);
        snap.track_o = self.track_o;
        snap.s_o.clone_from(&self.s_o);
        snap.w_o.clone_from(&self.w_o);
        snap.sum_o = self.sum_o;
        snap.block.clone_from(&self.block);
        snap.parked.clone_from(&self.parked);
        snap.events = self.events;
        snap.d_steps = self.d_steps;
        snap.wrong_direction = self.wrong_direction;
        snap.degenerate_jumps = self.degenerate_jumps;
        snap.max_active = self.max_active;
        snap.n_nodes = self.nodes.len();
    }

    /// Restores a snapshot (checked by [`EngineSnap::check`]).
    pub fn restore(&mut self, snap: &EngineSnap) {
        self.theta = snap.theta;
        self.tt = snap.tt;
        self.beta.clone_from(&snap.beta);
        self.f.clone_from(&snap.f);
        for (s, &c) in self.st.iter_mut().zip(&snap.st) {
            *s = match c {
                0 => St::R,
                1 => St::E,
                2 => St::L,
                3 => St::O,
                4 => St::Bi,
                _ => St::Bo,
            };
        }
        self.sigma.clone_from(&snap.sigma);
        self.act.clone_from(&snap.act);
        self.pos.iter_mut().for_each(|p| *p = NONE);
        for (k, &a) in self.act.iter().enumerate() {
            self.pos[a] = k;
        }
        let tau = self.chol.tau();
        if let Some(ch) = Chol::from_packed(tau, self.act.len(), &snap.chol) {
            self.chol = ch;
        }
        self.track_o = snap.track_o;
        self.s_o.clone_from(&snap.s_o);
        self.w_o.clone_from(&snap.w_o);
        self.sum_o = snap.sum_o;
        self.block.clone_from(&snap.block);
        // Derived state: the blocked list is exactly the set flags; the outliers and the `O`
        // list follow from the states (no sample is clamped at a safe point).
        self.blocked.clear();
        self.blocked.extend((0..self.n).filter(|&i| self.block[i]));
        self.parked.clone_from(&snap.parked);
        self.parked_list.clear();
        self.parked_list
            .extend((0..self.n).filter(|&i| self.parked[i]));
        self.o_list.clear();
        self.o_pos.iter_mut().for_each(|p| *p = NONE);
        self.n_out = 0;
        for i in 0..self.n {
            if matches!(self.st[i], St::O | St::Bo | St::ClIO) {
                self.n_out += 1;
            }
            if self.st[i] == St::O {
                self.o_pos[i] = self.o_list.len();
                self.o_list.push(i);
            }
        }
        self.events = snap.events;
        self.d_steps = snap.d_steps;
        self.wrong_direction = snap.wrong_direction;
        self.degenerate_jumps = snap.degenerate_jumps;
        self.max_active = snap.max_active;
        self.nodes.truncate(snap.n_nodes);
    }

    /// The current state as a snapshot continuing at `phase`.
    fn snapshot(&self, phase: Phase) -> EngineSnap {
        let mut s = EngineSnap::default();
        self.snapshot_into(&mut s, phase);
        s
    }

    #[inline]
    fn t(&self, i: usize) -> f64 {
        self.sigma[i] * (self.y[i] - self.f[i])
    }

    /// Adds `i` to the active set when its kernel column is independent of the members' (the
    /// squared pivot exceeds `rank_tol`); returns `false` (factor unchanged) otherwise.
    fn add_active(&mut self, i: usize) -> bool {
        if self.pos[i] != NONE {
            return true;
        }
        let mut col = std::mem::take(&mut self.col_buf);
        col.clear();
        col.extend(self.act.iter().map(|&a| self.kern.entry(a, i)));
        let d2 = self.chol.push(&col, self.kern.entry(i, i));
        self.col_buf = col;
        if d2 <= self.rank_tol {
            self.chol.remove(self.act.len());
            return false;
        }
        self.pos[i] = self.act.len();
        self.act.push(i);
        self.max_active = self.max_active.max(self.act.len());
        true
    }

    /// Parks sample `i` (see `parked`).
    fn park(&mut self, i: usize) {
        if !self.parked[i] {
            self.parked[i] = true;
            self.parked_list.push(i);
        }
    }

    /// Releases every parked sample (the active set lost a member, so their slacks may move);
    /// they are unblocked too, so that a zero-length event of theirs is not skipped.
    fn unpark_all(&mut self) {
        if self.parked_list.is_empty() {
            return;
        }
        for &i in &self.parked_list {
            self.parked[i] = false;
            self.block[i] = false;
        }
        self.parked_list.clear();
        let block = &self.block;
        self.blocked.retain(|&j| block[j]);
    }

    fn remove_active(&mut self, i: usize) {
        let p = self.pos[i];
        if p == NONE {
            return;
        }
        self.chol.remove(p);
        self.act.remove(p);
        self.pos[i] = NONE;
        for (k, &a) in self.act.iter().enumerate().skip(p) {
            self.pos[a] = k;
        }
        self.unpark_all();
    }

    /// Adds `sign * sigma_i K[:, i]` to `s_o` (the sum over the strict outliers).
    fn o_update(&mut self, i: usize, sign: f64) {
        if !self.track_o {
            return;
        }
        let s = sign * self.sigma[i];
        if self.lin {
            self.kern.axpy_row(s, i, &mut self.w_o);
            self.sum_o += s;
            return;
        }
        let col = self.kern.column(i);
        for (o, &v) in self.s_o.iter_mut().zip(col) {
            *o += s * v;
        }
    }

    /// Moves sample `i` to state `new`, keeping the active set, the outlier count and the `O`
    /// list. Returns `false`, with nothing changed, when `i` would join the active set but its
    /// kernel column depends on the members' ([`Engine::add_active`]).
    fn set_state(&mut self, i: usize, new: St) -> bool {
        let old = self.st[i];
        if old == new {
            return true;
        }
        let in_a = |s: St| matches!(s, St::E | St::Bi | St::Bo);
        if !in_a(old) && in_a(new) && !self.add_active(i) {
            return false;
        }
        let is_out = |s: St| matches!(s, St::O | St::Bo | St::ClIO);
        if is_out(old) {
            self.n_out -= 1;
        }
        if is_out(new) {
            self.n_out += 1;
        }
        if in_a(old) && !in_a(new) {
            self.remove_active(i);
        }
        if old == St::O {
            self.o_update(i, -1.0);
            let p = self.o_pos[i];
            self.o_list.swap_remove(p);
            if let Some(&moved) = self.o_list.get(p) {
                self.o_pos[moved] = p;
            }
            self.o_pos[i] = NONE;
        }
        self.st[i] = new;
        if new == St::O {
            self.o_update(i, 1.0);
            self.o_pos[i] = self.o_list.len();
            self.o_list.push(i);
        }
        true
    }

    /// Sets the states from the standard solution at `theta = 1`, `T = tt`: bound samples
    /// become `L` (slack below `T`, or every one when `all_inliers`) or `O`; free ones join the
    /// active set, through [`Engine::pivot_in`] when they depend on the members (duplicated
    /// points, or more free samples than the linear kernel's rank).
    pub fn init_states(&mut self, tt: f64, theta: f64, all_inliers: bool, track_o: bool) {
        self.tt = tt;
        self.theta = theta;
        self.track_o = track_o;
        let eps = 1e-9 * self.c;
        for i in 0..self.n {
            let b = self.beta[i];
            if b > self.lo[i] + eps && b < self.hi[i] - eps {
                self.pivot_in(i, all_inliers);
            } else {
                let s = self.bound_state(i, all_inliers);
                self.set_state(i, s);
            }
        }
    }

    /// The state of a sample whose coefficient is at an end of its box (start-up).
    fn bound_state(&mut self, i: usize, all_inliers: bool) -> St {
        let b = self.beta[i];
        if b.abs() <= 1e-9 * self.c {
            return St::R;
        }
        if self.task == Task::Svr {
            self.sigma[i] = b.signum();
        }
        let t = self.sigma[i] * (self.y[i] - self.f[i]);
        if all_inliers || t <= self.tt {
            St::L
        } else {
            St::O
        }
    }

    /// Start-up: a free sample `i` joins the active set; when its column depends on the
    /// members' (`K[:, i] = K[:, A] lambda`), a degenerate pivot first moves the coefficients
    /// along the null direction `dbeta_i = delta`, `dbeta_A = -lambda delta` (which changes
    /// neither `f` nor the objective) until `beta_i` or a member's coefficient reaches an end of
    /// its box (the least sample index on a tie). That sample takes its bound state; a member
    /// leaving frees a rank, and `i` is tried again. Each round removes a member or ends.
    fn pivot_in(&mut self, i: usize, all_inliers: bool) {
        loop {
            if self.set_state(i, St::E) {
                return;
            }
            let mut lam = std::mem::take(&mut self.rhs);
            lam.clear();
            lam.extend(self.act.iter().map(|&a| self.kern.entry(a, i)));
            self.solve_active(&mut lam);
            let b = self.beta[i];
            let dir = if self.hi[i] - b <= b - self.lo[i] {
                1.0
            } else {
                -1.0
            };
            let mut best_h = if dir > 0.0 {
                self.hi[i] - b
            } else {
                b - self.lo[i]
            };
            let mut who = i;
            for (k, &a) in self.act.iter().enumerate() {
                let d = -lam[k] * dir;
                let h = if d > 0.0 {
                    (self.hi[a] - self.beta[a]) / d
                } else if d < 0.0 {
                    (self.beta[a] - self.lo[a]) / -d
                } else {
                    continue;
                };
                let h = h.max(0.0);
                if h < best_h || (h == best_h && a < who) {
                    best_h = h;
                    who = a;
                }
            }
            self.beta[i] += dir * best_h;
            for (k, &a) in self.act.iter().enumerate() {
                self.beta[a] -= lam[k] * dir * best_h;
            }
            self.rhs = lam;
            // Snap the sample that reached its end exactly.
            let end = if who == i {
                if dir > 0.0 {
                    self.hi[i]
                } else {
                    self.lo[i]
                }
            } else if (self.hi[who] - self.beta[who]).abs() <= (self.beta[who] - self.lo[who]).abs()
            {
                self.hi[who]
            } else {
                self.lo[who]
            };
            self.beta[who] = end;
            let s = self.bound_state(who, all_inliers);
            self.set_state(who, s);
            if who == i {
                return;
            }
        }
    }

    /// Full robust objective `1/2 beta'K beta + C sum_i loss_i` (continuous loss).
    pub fn objective(&self) -> f64 {
        super::objective_of(
            self.task,
            &self.y,
            &self.f[..self.n],
            &self.beta,
            self.c,
            self.theta,
            self.tt,
        )
    }

    fn valid_error(&self) -> Option<f64> {
        super::valid_error_of(self.task, &self.yv, &self.f[self.n..])
    }

    /// Records a node; `param` is theta or s.
    pub fn record(&mut self, param: f64, kind: NodeKind) {
        // The independent checker and the objective share one pass over the samples.
        let cond = super::Conditions {
            task: self.task,
            c: self.c,
            theta: self.theta,
            tt: self.tt,
            tol: self.tol,
        };
        let (violation, objective) =
            super::check_and_objective(self.kern, &cond, &self.y, &self.f[..self.n], &self.beta);
        let ok = violation.is_none();
        let valid_error = self.valid_error();
        let n_out = self.n_out;
        let idx = self.nodes.len();
        if kind != NodeKind::PreJump && ok {
            if let Some(e) = valid_error {
                if self.best.as_ref().is_none_or(|b| e < b.1) {
                    self.best = Some((idx, e, self.beta.clone()));
                }
            }
        }
        let (beta, outlier_sign) = if self.keep {
            (
                Some(self.beta.clone()),
                Some(
                    (0..self.n)
                        .map(|i| match self.st[i] {
                            St::O | St::Bo | St::ClIO => self.sigma[i] as i8,
                            _ => 0,
                        })
                        .collect(),
                ),
            )
        } else {
            (None, None)
        };
        self.nodes.push(Node {
            param,
            kind,
            objective,
            n_outliers: n_out,
            valid_error,
            locally_optimal: ok,
            beta,
            outlier_sign,
        });
    }

    /// Solves `(K_AA + tau I) x = b` in place, filtered past the linear Gram rank
    /// ([`super::chol::solve_in_range`]).
    fn solve_active(&mut self, x: &mut [f64]) {
        let mut g = std::mem::take(&mut self.gram);
        super::chol::solve_in_range(&self.chol, self.kern, &self.act, x, &mut g);
        self.gram = g;
    }

    /// Direction per unit step. `theta_mode`: drivers are the O samples (theta decreasing);
    /// otherwise the clamped samples (mu decreasing). Sets `dbeta` on the active set and the
    /// drivers, and `df` (kernel columns) or `dw`, `dshift` (linear kernel: `df` itself is then
    /// computed in [`Engine::nearest`]'s pass).
    fn direction(&mut self, theta_mode: bool) {
        let na = self.act.len();
        let mut rhs = std::mem::take(&mut self.rhs);
        rhs.clear();
        rhs.resize(na, 0.0);
        let mut drv = std::mem::take(&mut self.drv);
        drv.clear();
        if theta_mode {
            // dbeta_O = -C sigma_O; K_{A,O} dbeta_O = -C s_o[A].
            if self.lin {
                let shift = self.kern.b2() * self.sum_o;
                for (k, &a) in self.act.iter().enumerate() {
                    rhs[k] = self.c * (self.kern.dot_row(a, &self.w_o) + shift);
                }
            } else {
                for (k, &a) in self.act.iter().enumerate() {
                    rhs[k] = self.c * self.s_o[a];
                }
            }
        } else {
            for &i in &self.clamped {
                if matches!(self.st[i], St::ClIO | St::ClOI) {
                    drv.push(i);
                    self.dbeta[i] = -self.sigma[i] * self.cl_d[i];
                }
            }
            for (k, &a) in self.act.iter().enumerate() {
                let mut s = 0.0;
                for &j in &drv {
                    s += self.kern.entry(a, j) * self.dbeta[j];
                }
                rhs[k] = -s;
            }
        }
        self.solve_active(&mut rhs);
        for (k, &a) in self.act.iter().enumerate() {
            self.dbeta[a] = rhs[k];
        }
        self.df_zero = false;
        if self.lin {
            let mut dw = std::mem::take(&mut self.dw);
            dw.iter_mut().for_each(|v| *v = 0.0);
            // Theta C-step: every row keeps its margin while the active set spans the data: the
            // direction `dw` lies in the row space of X and the active rows' margins are fixed
            // (`X_A dw = 0`), so `dw = 0`. Not in a jump: there the rule froze `f` and left a
            // flipped sample on the threshold (caught by the linear OP-s test). It is set exactly (rounding would otherwise move samples sitting
            // at a slack of 0 or T by 1e-16 and let them join the active set past the rank, the
            // degenerate growth seen at n = 20,000), and the pass over the data is skipped.
            if self
                .data_rank
                .is_some_and(|r| self.act.len() >= r && self.chol.rank_above(self.rank_tol) >= r)
            {
                self.df_zero = true;
                self.dshift = 0.0;
                self.dw = dw;
                self.rhs = rhs;
                self.drv = drv;
                return;
            }
            let mut sum = 0.0;
            for (&a, &r) in self.act.iter().zip(&rhs) {
                if r != 0.0 {
                    self.kern.axpy_row(r, a, &mut dw);
                    sum += r;
                }
            }
            if theta_mode {
                for (v, o) in dw.iter_mut().zip(&self.w_o) {
                    *v -= self.c * o;
                }
                sum -= self.c * self.sum_o;
            } else {
                for &j in &drv {
                    let d = self.dbeta[j];
                    if d != 0.0 {
                        self.kern.axpy_row(d, j, &mut dw);
                        sum += d;
                    }
                }
            }
            self.dshift = self.kern.b2() * sum;
            self.dw = dw;
            self.rhs = rhs;
            self.drv = drv;
            return;
        }
        let mut idx = std::mem::take(&mut self.idx_buf);
        let mut coef = std::mem::take(&mut self.coef_buf);
        idx.clear();
        coef.clear();
        idx.extend_from_slice(&self.act);
        coef.extend_from_slice(&rhs);
        if !theta_mode {
            for &j in &drv {
                idx.push(j);
                coef.push(self.dbeta[j]);
            }
        }
        let mut df = std::mem::take(&mut self.df);
        self.kern.combine(&idx, &coef, &mut df);
        if theta_mode {
            for (d, s) in df.iter_mut().zip(&self.s_o) {
                *d -= self.c * s;
            }
        }
        self.df = df;
        self.rhs = rhs;
        self.drv = drv;
        self.idx_buf = idx;
        self.coef_buf = coef;
    }

    /// `df_i` of the current direction (any row).
    fn df_at(&self, i: usize) -> f64 {
        if self.lin {
            self.kern.dot_row(i, &self.dw) + self.dshift
        } else {
            self.df[i]
        }
    }

    /// Nearest event: (step, sample, event). `limit` is the step to the parameter's end.
    ///
    /// The coefficient events of the active set (`E`, `Bi`, `Bo`) are tested on the active list;
    /// the slack events (`R`, `L`, `O`, `ClOI`) in one pass over the training samples, which for
    /// the linear kernel also computes and stores `df_i = x_i . dw + dshift` (the direction is
    /// never a separate sweep). The slack test is table-driven: the slack moves toward
    /// `SLACK_UP[state]` when it grows and `SLACK_DOWN[state]` when it shrinks (`+-inf`: no event),
    /// so the step is `(target - t) / dt` without a branch on the state. Ties go to the lowest
    /// sample index, as in a single ordered scan.
    fn nearest(&mut self, limit: f64) -> (f64, usize, Ev) {
        let Self {
            kern,
            lin,
            dw,
            dshift,
            df,
            df_zero,
            st,
            sigma,
            y,
            f,
            beta,
            dbeta,
            lo,
            hi,
            block,
            parked,
            act,
            c,
            theta,
            tt,
            ..
        } = self;
        let c = *c;
        let ct = c * *theta;
        let tt = *tt;
        let mut best = (limit, NONE, Ev::End);
        let better = |h: f64, i: usize, best: &(f64, usize, Ev)| {
            h < best.0 || (h == best.0 && best.1 != NONE && i < best.1)
        };
        for &i in act.iter() {
            let sg = sigma[i];
            let (num, den, ev) = match st[i] {
                St::E => {
                    let d = dbeta[i];
                    if d > 0.0 {
                        (hi[i] - beta[i], d, Ev::ToHi)
                    } else if d < 0.0 {
                        (beta[i] - lo[i], -d, Ev::ToLo)
                    } else {
                        continue;
                    }
                }
                St::Bi => {
                    let da = sg * dbeta[i];
                    if da < 0.0 {
                        (sg * beta[i] - c, -da, Ev::BiToL)
                    } else {
                        continue;
                    }
                }
                St::Bo => {
                    let da = sg * dbeta[i];
                    if da > 0.0 {
                        (ct - sg * beta[i], da, Ev::BoToO)
                    } else {
                        continue;
                    }
                }
                _ => continue,
            };
            let h = (num / den).max(0.0);
            if h <= 1e-12 && block[i] {
                continue;
            }
            if better(h, i, &best) {
                best = (h, i, ev);
            }
        }
        // Slack targets per state (index `St as usize`); `up` when the slack grows (dt > 0).
        let inf = f64::INFINITY;
        let up = [0.0, inf, tt, inf, inf, inf, inf, inf];
        let down = [-inf, -inf, 0.0, tt, -inf, -inf, -inf, 0.0];
        let mut test = |i: usize, dfi: f64| {
            if parked[i] {
                return;
            }
            let sg = sigma[i];
            let dt = -sg * dfi;
            let k = st[i] as usize;
            let target = if dt > 0.0 { up[k] } else { down[k] };
            let t = sg * (y[i] - f[i]);
            let h = (target - t) / dt;
            // dt = 0 or no target: h is NaN or +inf and never wins; a slack already past its
            // target (rounding) gives h < 0, a zero step. (A division-free pre-test on the sign
            // of dt is slower: the branch on that sign is unpredictable.)
            if !(h < best.0 || (h == best.0 && best.1 != NONE)) || dt == 0.0 {
                return;
            }
            let h = h.max(0.0);
            if h <= 1e-12 && block[i] {
                return;
            }
            if better(h, i, &best) {
                let ev = match (st[i], dt > 0.0) {
                    (St::R, _) | (St::L, false) | (St::ClOI, _) => Ev::ToE,
                    (St::L, true) => Ev::LBound,
                    _ => Ev::OBound,
                };
                best = (h, i, ev);
            }
        };
        if *lin && *df_zero {
            // No slack moves (see `direction`).
        } else if *lin {
            let shift = *dshift;
            kern.for_each_train_dot(dw, |i, v| {
                let d = v + shift;
                df[i] = d;
                test(i, d);
            });
        } else {
            for (i, &d) in df.iter().enumerate().take(sigma.len()) {
                test(i, d);
            }
        }
        best
    }

    /// Moves by `h` along the current direction (drivers included): one pass over the training
    /// samples (`f`, and the driven coefficients at the new parameter), then the validation rows.
    fn advance(&mut self, h: f64, theta_mode: bool, mu: f64) {
        let n = self.n;
        if h > 0.0 {
            for &a in &self.act {
                self.beta[a] += h * self.dbeta[a];
            }
            if h > 1e-12 {
                for &i in &self.blocked {
                    self.block[i] = false;
                }
                self.blocked.clear();
            }
        }
        let moves = h > 0.0 && !(self.lin && self.df_zero);
        if moves {
            self.jump_moved = true;
            for (f, d) in self.f[..n].iter_mut().zip(&self.df[..n]) {
                *f += h * d;
            }
        }
        if theta_mode {
            let ct = self.c * self.theta;
            for &i in &self.o_list {
                self.beta[i] = self.sigma[i] * ct;
            }
        }
        for &i in &self.clamped {
            if matches!(self.st[i], St::ClIO | St::ClOI) {
                self.beta[i] = self.sigma[i] * (self.cl_target[i] + mu * self.cl_d[i]);
            }
        }
        if moves {
            for v in n..self.f.len() {
                let d = self.df_at(v);
                self.f[v] += h * d;
            }
        }
    }

    /// Re-imposes the active set's targets exactly (`f_E = y_E`, `f_B = y_B - sigma T`).
    fn refine(&mut self) {
        if self.act.is_empty() {
            return;
        }
        let mut x = std::mem::take(&mut self.rhs);
        x.clear();
        for &a in &self.act {
            let target = match self.st[a] {
                St::E => self.y[a],
                _ => self.y[a] - self.sigma[a] * self.tt,
            };
            x.push(target - self.f[a]);
        }
        // Rounding drift only: re-solve when it exceeds 1e-11 of the target scale (a full
        // combination of the active columns, as expensive as a direction).
        if x.iter().all(|v| v.abs() <= self.refine_tol) {
            self.rhs = x;
            return;
        }
        self.solve_active(&mut x);
        for (&a, &v) in self.act.iter().zip(&x) {
            self.beta[a] += v;
        }
        let mut buf = std::mem::take(&mut self.buf);
        self.kern.combine(&self.act, &x, &mut buf);
        for (f, d) in self.f.iter_mut().zip(&buf) {
            *f += d;
        }
        self.buf = buf;
        self.rhs = x;
    }

    /// Applies an event to sample `i` (snapping its value); boundary events in a C-step are
    /// returned to the caller instead.
    fn apply(&mut self, i: usize, ev: Ev, in_c_step: bool) -> Option<(Vec<usize>, Vec<usize>)> {
        if !self.block[i] {
            self.block[i] = true;
            self.blocked.push(i);
        }
        match ev {
            Ev::ToLo | Ev::ToHi => {
                let b = if ev == Ev::ToLo {
                    self.lo[i]
                } else {
                    self.hi[i]
                };
                self.snap_beta(i, b);
                let s = if b == 0.0 {
                    St::R
                } else {
                    if self.task == Task::Svr {
                        self.sigma[i] = b.signum();
                    }
                    St::L
                };
                self.set_state(i, s);
            }
            Ev::ToE => {
                // Snap the slack to 0: with the linear kernel past rank d, a rounding residual
                // left in f lets spurious zero-length events grow the active set without bound
                // (n = 3,000 blobs: |A| 11 -> 190, event limit); resync() and refine() keep
                // f = K beta up to rounding.
                // A sample dependent on the active set is parked at the target instead (its
                // slack reached it by rounding: exactly, a dependent slack cannot move).
                self.f[i] = self.y[i];
                if !self.set_state(i, St::E) {
                    self.park(i);
                }
            }
            Ev::LBound | Ev::OBound => {
                self.f[i] = self.y[i] - self.sigma[i] * self.tt;
                if in_c_step {
                    return Some(if ev == Ev::LBound {
                        (vec![i], vec![])
                    } else {
                        (vec![], vec![i])
                    });
                }
                if !self.set_state(i, if ev == Ev::LBound { St::Bi } else { St::Bo }) {
                    self.park(i);
                }
            }
            Ev::BiToL => {
                let b = self.sigma[i] * self.c;
                self.snap_beta(i, b);
                self.set_state(i, St::L);
            }
            Ev::BoToO => {
                let b = self.sigma[i] * self.c * self.theta;
                self.snap_beta(i, b);
                self.set_state(i, St::O);
            }
            Ev::End => {}
        }
        None
    }

    /// Sets `beta_i = b` and adds the change to `f`.
    fn snap_beta(&mut self, i: usize, b: f64) {
        let d = b - self.beta[i];
        self.beta[i] = b;
        if d != 0.0 {
            let col = self.kern.column(i);
            for (f, &v) in self.f.iter_mut().zip(col) {
                *f += d * v;
            }
        }
    }

    /// Asks the observer, then counts the event against the limit.
    fn bump(&mut self, obs: &mut dyn Observer) -> Step {
        let stats = IterStats {
            iterations: self.events as u64,
            max_violation: f64::NAN,
            active: self.act.len(),
        };
        if obs.on_iter(&stats).is_break() {
            return Step::Stop;
        }
        self.events += 1;
        if self.events > self.max_events {
            Step::Limit
        } else {
            Step::Go
        }
    }

    /// Recomputes `f = K beta` from scratch (clearing accumulated rounding and the small
    /// inconsistencies of snapped events) and re-imposes the active set's targets.
    pub fn resync(&mut self) {
        let mut fresh = std::mem::take(&mut self.buf);
        super::boxqp::fresh_f(self.kern, &self.beta, &mut fresh);
        std::mem::swap(&mut self.f, &mut fresh);
        self.buf = fresh;
        self.refine();
    }

    /// Linear kernel: [`Engine::resync`] in two sequential passes over the data (`w = X' beta`,
    /// then `f = X w + b^2 sum beta`; no parallel task, as in the event loop).
    fn resync_linear(&mut self) {
        let mut w = std::mem::take(&mut self.w_fresh);
        w.iter_mut().for_each(|v| *v = 0.0);
        let mut sum = 0.0;
        for (j, &b) in self.beta.iter().enumerate() {
            if b != 0.0 {
                self.kern.axpy_row(b, j, &mut w);
                sum += b;
            }
        }
        let shift = self.kern.b2() * sum;
        let f = &mut self.f;
        self.kern.for_each_train_dot(&w, |i, v| f[i] = v + shift);
        for v in self.n..self.f.len() {
            self.f[v] = self.kern.dot_row(v, &w) + shift;
        }
        self.w_fresh = w;
        self.refine();
    }

    /// OP-theta C-step from the current theta toward 0.
    fn c_step_theta(&mut self, obs: &mut dyn Observer) -> CEnd {
        loop {
            if self.theta <= 0.0 {
                return CEnd::Done;
            }
            match self.bump(obs) {
                Step::Go => {}
                Step::Limit => return CEnd::Limit,
                Step::Stop => return CEnd::Stop,
            }
            self.direction(true);
            let (h, i, ev) = self.nearest(self.theta);
            let h = h.min(self.theta);
            let new_theta = if ev == Ev::End { 0.0 } else { self.theta - h };
            self.theta = new_theta;
            self.advance(h, true, 0.0);
            if ev == Ev::End {
                return CEnd::Done;
            }
            if let Some((bi, bo)) = self.apply(i, ev, true) {
                return CEnd::Boundary { bi, bo };
            }
            self.refine();
            self.record(self.theta, NodeKind::SetChange);
        }
    }

    /// D-step: flips `bi` (inliers on the boundary) and `bo` (outliers on the boundary) and
    /// traces mu from 1 to 0, repeating while samples remain held on the boundary.
    /// Returns [`Step::Limit`] on the event limit, [`Step::Stop`] when the observer stopped it
    /// (the state is then mid-jump: the caller restores the pre-jump snapshot).
    fn d_step(&mut self, bi: Vec<usize>, bo: Vec<usize>, obs: &mut dyn Observer) -> Step {
        self.d_steps += 1;
        let before = self.objective();
        self.jump_moved = false;
        let step = self.d_step_inner(bi, bo, obs);
        let after = self.objective();
        // Degenerate: no step moved `f` (linear kernel, the active rows span the data through
        // the whole jump: the flip is absorbed by a null-space move of the coefficients), or the
        // objective did not change.
        if step == Step::Go
            && (!self.jump_moved || (before - after).abs() <= 1e-12 * before.abs().max(1.0))
        {
            self.degenerate_jumps += 1;
        }
        step
    }

    fn d_step_inner(
        &mut self,
        mut bi: Vec<usize>,
        mut bo: Vec<usize>,
        obs: &mut dyn Observer,
    ) -> Step {
        let c = self.c;
        let ct = self.c * self.theta;
        let mut resyncs = 0;
        loop {
            // Clamp the flipped samples.
            let mut flips = std::mem::take(&mut self.clamped);
            flips.clear();
            for &i in &bi {
                self.set_state(i, St::ClIO);
                self.cl_target[i] = ct;
                self.cl_d[i] = self.sigma[i] * self.beta[i] - ct;
                flips.push(i);
            }
            for &i in &bo {
                self.set_state(i, St::ClOI);
                self.cl_target[i] = c;
                self.cl_d[i] = self.sigma[i] * self.beta[i] - c;
                flips.push(i);
            }
            self.clamped = flips;
            // Flip one sample at a time. Simultaneous flips can push one another the wrong way,
            // and not only at mu = 1: after an event changes the active set, a driven sample's
            // slack may turn back and cross T with no event to stop it (a clamped slack has no
            // target), landing an outlier inside T or an inlier beyond it (n = 10,000 blobs:
            // 30 nodes off by up to 2.7e-3). A single driver's own slack always moves the
            // right way (`dt_i` is the Schur complement of `K_AA` times `-sigma_i dbeta_i`, which
            // is >= 0); the others wait on the boundary and the outer loop flips them next.
            // `wrong_direction` counts the jumps whose flips pushed one another at mu = 1.
            if self.clamped.len() > 1 {
                self.direction(false);
                let flips = std::mem::take(&mut self.clamped);
                let wrong = flips.iter().any(|&i| {
                    let dt = -self.sigma[i] * self.df_at(i);
                    (self.st[i] == St::ClIO && dt < 0.0) || (self.st[i] == St::ClOI && dt > 0.0)
                });
                if wrong {
                    self.wrong_direction += 1;
                }
                for &i in &flips[1..] {
                    let (back, bound) = if self.st[i] == St::ClIO {
                        (St::Bi, St::L)
                    } else {
                        (St::Bo, St::O)
                    };
                    if !self.set_state(i, back) {
                        // Dependent on the active set: its slack cannot leave T while the
                        // set keeps its members; it waits there in its bound state.
                        self.set_state(i, bound);
                        self.park(i);
                    }
                }
                self.clamped = flips;
            }
            let mut mu = 1.0;
            while mu > 0.0 {
                match self.bump(obs) {
                    Step::Go => {}
                    other => return other,
                }
                self.direction(false);
                let (h, i, ev) = self.nearest(mu);
                let h = h.min(mu);
                mu = if ev == Ev::End { 0.0 } else { mu - h };
                self.advance(h, false, mu);
                if ev == Ev::End {
                    break;
                }
                if ev == Ev::ToE && self.st[i] == St::ClOI {
                    // Released: its coefficient stays where the path left it.
                }
                self.apply(i, ev, false);
                self.refine();
            }
            // Land the clamped samples on their targets.
            let flips = std::mem::take(&mut self.clamped);
            for &i in &flips {
                match self.st[i] {
                    St::ClIO => {
                        self.beta[i] = self.sigma[i] * ct;
                        self.set_state(i, St::O);
                    }
                    St::ClOI => {
                        self.beta[i] = self.sigma[i] * c;
                        self.set_state(i, St::L);
                    }
                    _ => {}
                }
            }
            self.clamped = flips;
            self.clamped.clear();
            self.refine();
            bi = (0..self.n).filter(|&i| self.st[i] == St::Bi).collect();
            bo = (0..self.n).filter(|&i| self.st[i] == St::Bo).collect();
            if bi.is_empty() && bo.is_empty() && self.lin && resyncs < 3 {
                // Linear kernel: `f` is recomputed from `beta` at the end of every jump. While
                // the active set spans the data, `f` is held exactly and `beta` moves by solves
                // with an ill-conditioned `K_AA`, so `f` drifts from `K beta` (up to 4e-7 at
                // n = 20,000); a jump that moved a flipped sample by less than that left it on
                // the wrong side of `T` for the returned `beta`. Samples
                // then found on the wrong side of `T` (an outlier inside, an inlier beyond;
                // parked ones excepted: they wait on `T` by design) are flipped as boundary
                // samples of this jump. `O(nnz)` per jump (two passes over the data).
                resyncs += 1;
                self.resync_linear();
                let tt = self.tt;
                for i in 0..self.n {
                    if self.parked[i] {
                        continue;
                    }
                    match self.st[i] {
                        St::L if self.t(i) > tt => bi.push(i),
                        St::O if self.t(i) < tt => bo.push(i),
                        _ => {}
                    }
                }
            }
            if bi.is_empty() && bo.is_empty() {
                return Step::Go;
            }
        }
    }

    /// Restores the pre-jump snapshot after a stop inside a jump and keeps it as the state to
    /// continue from.
    fn stop_in_jump(&mut self) -> RunEnd {
        let pre = std::mem::take(&mut self.pre);
        self.restore(&pre);
        self.stopped = Some(pre);
        RunEnd::Interrupted
    }

    /// The whole OP-theta path from theta = 1, or from a snapshot's `phase` (restored before).
    /// The observer is asked before every event; a stop leaves the state to continue from in
    /// [`Engine::stopped`].
    pub fn run_theta(&mut self, obs: &mut dyn Observer, from: Option<Phase>) -> RunEnd {
        let mut pending = match from {
            None => {
                self.record(1.0, NodeKind::Start);
                None
            }
            Some(Phase::ThetaD { bi, bo }) => Some((bi, bo)),
            Some(_) => None,
        };
        loop {
            let (bi, bo) = match pending.take() {
                Some(b) => b,
                None => match self.c_step_theta(obs) {
                    CEnd::Done => {
                        self.resync();
                        self.record(0.0, NodeKind::End);
                        return RunEnd::Completed;
                    }
                    CEnd::Limit => return RunEnd::EventLimit,
                    CEnd::Stop => {
                        self.stopped = Some(self.snapshot(Phase::ThetaC));
                        return RunEnd::Interrupted;
                    }
                    CEnd::Boundary { bi, bo } => {
                        self.record(self.theta, NodeKind::PreJump);
                        (bi, bo)
                    }
                },
            };
            let mut pre = std::mem::take(&mut self.pre);
            self.snapshot_into(
                &mut pre,
                Phase::ThetaD {
                    bi: bi.clone(),
                    bo: bo.clone(),
                },
            );
            self.pre = pre;
            match self.d_step(bi, bo, obs) {
                Step::Go => {}
                Step::Limit => return RunEnd::EventLimit,
                Step::Stop => return self.stop_in_jump(),
            }
            self.record(self.theta, NodeKind::PostJump);
        }
    }

    /// Records the standard SVM as the start of OP-s: at `s = s_C` (`s_R`) it touches the
    /// threshold, but it is the local (global) optimum for every `s` just inside, where no
    /// sample is an outlier; it is checked as such (the threshold condition is not applied).
    pub fn record_standard(&mut self) {
        let th = self.theta;
        self.theta = 1.0;
        self.record(self.param_s(), NodeKind::Start);
        self.theta = th;
    }

    fn param_s(&self) -> f64 {
        match self.task {
            Task::Svc => 1.0 - self.tt,
            Task::Svr => self.tt,
        }
    }

    /// The whole OP-s path (theta = 0) from `T = t_start` down to `t_end`, or from a snapshot
    /// (restored before; `resumed`). The observer is asked before every event; a stop leaves
    /// the state to continue from in [`Engine::stopped`].
    pub fn run_s(&mut self, t_end: f64, obs: &mut dyn Observer, resumed: bool) -> RunEnd {
        if !resumed {
            self.record_standard();
        }
        loop {
            let mut pre = std::mem::take(&mut self.pre);
            self.snapshot_into(&mut pre, Phase::STop);
            self.pre = pre;
            // The largest inlier slack sets the next boundary hit.
            let mut tmax = f64::NEG_INFINITY;
            for i in 0..self.n {
                if self.st[i] == St::L {
                    tmax = tmax.max(self.t(i));
                }
            }
            if tmax <= t_end {
                self.tt = t_end;
                self.resync();
                self.record(self.param_s(), NodeKind::End);
                return RunEnd::Completed;
            }
            match self.bump(obs) {
                Step::Go => {}
                Step::Limit => return RunEnd::EventLimit,
                Step::Stop => return self.stop_in_jump(),
            }
            self.tt = tmax.min(self.tt);
            let tie = 1e-12 * self.tt.abs().max(1.0);
            let bi: Vec<usize> = (0..self.n)
                .filter(|&i| self.st[i] == St::L && self.t(i) >= self.tt - tie)
                .collect();
            self.record(self.param_s(), NodeKind::PreJump);
            match self.d_step(bi, Vec::new(), obs) {
                Step::Go => {}
                Step::Limit => return RunEnd::EventLimit,
                Step::Stop => return self.stop_in_jump(),
            }
            self.record(self.param_s(), NodeKind::PostJump);
        }
    }
}
