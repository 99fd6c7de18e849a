//! Row-partitioned SMO: the one-equality box QP of [`super`] (`Equality::Sum`: C-SVC, one-class,
//! epsilon-SVR) with its variables split across processes (shards), each holding the rows of
//! its own variables. PiSVM's scheme (Brugger, Rosenstiel, Bogdan 2006), made exact.
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  y'a = delta,  0 <= a_i <= u_i
//! ```
//!
//! | paper / single process ([`super`])  | here                                              |
//! |-------------------------------------|---------------------------------------------------|
//! | variable position `t`               | global key `keys[t]` (the single process's position) |
//! | `Q_i`, column of `i`                | [`ShardQ`]: the local slice, from `i`'s row       |
//! | `scan_active` / `second_pass`       | the same kernels on the local active set          |
//! | `Scan::combine`, `ArgMin::combine`  | one all-gather of a record per shard, combined in shard order |
//! | `m(a)`, `M(a)` of the shrinking test | an all-gather of the local extrema                |
//!
//! **One iteration** (every step on every shard, from the same reduced values):
//! 1. the local first WSS3 pass (fused into the previous gradient update, as in one process);
//!    one all-gather of a record per shard: the local winner's value, key, `g`, `y`, `alpha`,
//!    `u`, `Q_ii`, squared norm and row length, and the local `M`. Every shard combines them in
//!    shard order with the single process's tie rule (the largest key), so it picks `i`;
//! 2. the owner of `i` broadcasts `i`'s row (`d` values, or the sparse entries), unless every
//!    shard already holds it (the rows received so far are kept in the same LRU order on every
//!    shard, so all know it without a message); every shard computes its slice of `Q_i` (cached
//!    per sample) with the single process's arithmetic;
//! 3. the local second pass; a second all-gather picks `j` (the record also carries `Q_ij`
//!    from `j`'s owner);
//! 4. the owner of `j` broadcasts `j`'s row (unless all hold it); every shard computes its slice
//!    of `Q_j`;
//! 5. every shard computes the pair step from the reduced values ([`super::pair_step_of`]),
//!    the owners update `alpha` and the bound status, and every shard updates its `G` (fused
//!    with the next first pass) and `G_bar` over its rows.
//!
//! Two all-gathers of [`RECORD`] doubles and at most two broadcasts of one row per iteration:
//! the bytes per iteration are `O(P + d)` (sparse: `O(P + nnz)`), independent of the number of
//! rows.
//! Each shard's work is `O(n / P)` per iteration plus the columns it misses in its cache.
//!
//! **Exactness.** Before any shrinking each shard's positions are its variables in key order, so
//! the combined selection is the single process's selection, the pair step the same arithmetic
//! on the same values, and every gradient entry gets the same additions in the same order: with
//! shrinking off, alpha, the objective and rho have the single process's bits (given keys that
//! number the variables as one process would, and rows in the storage it would choose). With
//! shrinking on, the local swaps order the shrunk sets differently from one process's single
//! swap sequence, so exact ties may be broken differently and the gradient reconstruction adds
//! in another order: the same optimum to the solver's tolerance.
//!
//! **Shrinking** uses the globally reduced `m(a)`, `M(a)` (one all-gather per shrinking step).
//! **Gradient reconstruction** needs `Q_ij` of every free variable `j` (all shards) with every
//! local shrunk `i`: one all-gather of the free variables' rows (`O(#free d)` bytes to every
//! shard), then each shard computes those columns over its rows.
//! **The end**: one all-gather of every variable's `alpha`, `G`, `p`, `u` and sign (`O(n)` doubles,
//! once): the objective, rho and the duality gap are then computed on every shard as by one
//! process, in key order, so they do not depend on P.
//!
//! The observer and the time limit are consulted on every shard every
//! [`super::REPORT_EVERY`] iterations and the decisions are all-gathered: every shard stops at
//! the same iteration with the same status.
//!
//! **Stop and resume.** A solve stopped by a limit or the observer returns, when asked, the
//! single process's [`SmoSnapshot`] of the whole problem on every shard (one all-gather of
//! `O(n)` doubles: every variable's arrays by key, the shards' shrunk orders merged, the loop
//! counters, which mean the same here as in one process); [`solve`] continues from such a
//! snapshot, made at any number of shards or by one process. Without shrinking the continued
//! solve is the uninterrupted one bit for bit at any number of shards; with shrinking, at the
//! same row split (every shard's local order is restored), else the same optimum to the
//! solver's tolerance.
//!
//! Citation: S. Brugger, W. Rosenstiel, M. Bogdan, "Parallel support vector machines using
//! PiSVM" (2006); R.-E. Fan, P.-H. Chen, C.-J. Lin, JMLR 6 (2005), WSS 3.

use super::{
    off_equality, pair_step_of, rho_of, scan_active, second_pass, shrink_by, snapshot_mismatch,
    Bound, Driver, Limits, PairDelta, PairVars, SecondPass, Smo, SmoSnapshot, State, WarmGradient,
    REPORT_EVERY,
};
use crate::error::SolveError;
use crate::kernel::cache::CacheStats;
use crate::kernel::qmatrix::{QMatrix, ShardQ, WireRow};
use crate::solver::{BoxQp, Equality, Observer, Shrinking, SolveInfo, SolverSettings, Status};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The collective operations of a solve split across shards. Every shard calls the same
/// operations in the same order; an implementation carries them between processes (MPI) or
/// threads, or is [`Alone`] for one shard.
pub trait Collective {
    /// This shard's number, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of shards.
    fn size(&self) -> usize;
    /// Every shard's `mine` (the same length on every shard) into `all`
    /// (`size() * mine.len()`), in shard order.
    fn all_gather(&mut self, mine: &[f64], all: &mut [f64]);
    /// Shard `root`'s `buf` into every shard's `buf` (of the same length everywhere).
    fn broadcast(&mut self, root: usize, buf: &mut [f64]);
    /// Every shard's `mine` (any length) concatenated in shard order into `all`, on every shard.
    fn all_gather_var(&mut self, mine: &[f64], all: &mut Vec<f64>);
}

/// [`Collective`] of a solve that holds all the variables (one shard).
#[derive(Debug, Clone, Copy, Default)]
pub struct Alone;

impl Collective for Alone {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_gather(&mut self, mine: &[f64], all: &mut [f64]) {
        all.copy_from_slice(mine);
    }
    fn broadcast(&mut self, _root: usize, _buf: &mut [f64]) {}
    fn all_gather_var(&mut self, mine: &[f64], all: &mut Vec<f64>) {
        all.clear();
        all.extend_from_slice(mine);
    }
}

/// This shard's part of the problem.
#[derive(Debug, Clone, Copy)]
pub struct ShardProblem<'a> {
    /// The local variables' `p`, signs and bounds (`equality` must be `Sum`, its `delta` the
    /// right-hand side of the whole problem, the same on every shard: the starts of all shards
    /// together satisfy it, and a snapshot records it; no fixed variables, every `u_i > 0`).
    pub qp: BoxQp<'a>,
    /// The global key of each local variable: its position in the single process's order,
    /// strictly increasing; the keys of all shards are `0..n` once each.
    pub keys: &'a [usize],
}

/// What a sharded solve returns on every shard.
#[derive(Debug, Clone)]
pub struct ShardSolution {
    /// The solver's account, the same on every shard.
    pub info: SolveInfo,
    /// The solution of all shards, indexed by key.
    pub alpha: Vec<f64>,
    /// This shard's kernel cache counters.
    pub cache: CacheStats,
    /// The state of all shards where a limit or the observer stopped the solve, in the single
    /// process's form (the same on every shard), when [`Smo::keep_snapshot`] asked for it.
    pub snapshot: Option<SmoSnapshot>,
}

/// What a shard whose own input was valid reports when another shard's was not (the error is
/// [`SolveError::Dimensions`] with this text on that shard).
pub const OTHER_SHARD: &str = "the input of another shard is invalid";

/// Doubles per shard in a selection record: `[value, extra (M, or Q_ij), shrunk, key, g, y,
/// alpha, u, Q_tt, squared norm, row length, dense, sample]`.
pub const RECORD: usize = 13;

/// A variable as its owner described it in a record.
#[derive(Debug, Clone, Copy)]
struct Var {
    rank: usize,
    key: usize,
    g: f64,
    y: i8,
    alpha: f64,
    upper: f64,
    qd: f64,
    norm: f64,
    wire_len: usize,
    dense: bool,
    sample: usize,
}

impl Var {
    fn parse(rank: usize, r: &[f64]) -> Self {
        Var {
            rank,
            key: r[3] as usize,
            g: r[4],
            y: if r[5] < 0.0 { -1 } else { 1 },
            alpha: r[6],
            upper: r[7],
            qd: r[8],
            norm: r[9],
            wire_len: r[10] as usize,
            dense: r[11] != 0.0,
            sample: r[12] as usize,
        }
    }
}

/// The selected pair, with the owners' local positions (on the owners only).
struct Pick {
    vi: Var,
    vj: Var,
    qij: f64,
    pos_i: Option<usize>,
    pos_j: Option<usize>,
}

/// The communication state of one solve (also [`crate::solver::block::shard`]'s).
pub(crate) struct Net<'c> {
    pub(crate) comm: &'c mut dyn Collective,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Keys in the local original order.
    pub(crate) keys: &'c [usize],
    pub(crate) all: Vec<f64>,
    pub(crate) send: Vec<f64>,
    pub(crate) recv: Vec<f64>,
    /// The rows of `i` (0) and `j` (1).
    rows: [Vec<f64>; 2],
    /// The rows received so far (the same on every shard).
    seen: RowCache,
}

/// Doubles of received rows every shard keeps ([`RowCache`]): 16 MB.
const ROW_CACHE_DOUBLES: usize = 2 << 20;

/// The rows of the selected variables, kept by every shard in the same LRU order. Every shard
/// makes the same calls in the same order (the selection is the same everywhere), so every
/// shard holds the same rows and knows without a message whether all hold a row: its broadcast
/// is then skipped. SMO selects the same variables again and again (which is why the kernel
/// cache works), so most rows are sent once.
#[derive(Debug, Default)]
struct RowCache {
    used: usize,
    clock: u64,
    rows: std::collections::HashMap<usize, (u64, Vec<f64>)>,
    /// Sample ids by last use.
    order: std::collections::BTreeMap<u64, usize>,
}

impl RowCache {
    /// The row of global sample `id`, marked most recently used.
    fn get(&mut self, id: usize) -> Option<&[f64]> {
        let entry = self.rows.get_mut(&id)?;
        self.order.remove(&entry.0);
        self.clock += 1;
        entry.0 = self.clock;
        self.order.insert(self.clock, id);
        Some(&entry.1)
    }

    /// Keeps `row` for sample `id`, evicting the least recently used rows beyond the budget.
    fn insert(&mut self, id: usize, row: &[f64]) {
        if row.len() > ROW_CACHE_DOUBLES {
            return;
        }
        while self.used + row.len() > ROW_CACHE_DOUBLES {
            let Some((_, old)) = self.order.pop_first() else {
                break;
            };
            if let Some((_, r)) = self.rows.remove(&old) {
                self.used -= r.len();
            }
        }
        self.clock += 1;
        self.order.insert(self.clock, id);
        self.used += row.len();
        if let Some((stamp, r)) = self.rows.insert(id, (self.clock, row.to_vec())) {
            self.order.remove(&stamp);
            self.used -= r.len();
        }
    }
}

impl<'c> Net<'c> {
    /// The state of a solve on this shard, whose local variables have `keys`.
    pub(crate) fn new(comm: &'c mut dyn Collective, keys: &'c [usize]) -> Self {
        let (rank, size) = (comm.rank(), comm.size());
        Net {
            comm,
            rank,
            size,
            keys,
            all: Vec::new(),
            send: Vec::new(),
            recv: Vec::new(),
            rows: [Vec::new(), Vec::new()],
            seen: RowCache::default(),
        }
    }
}

impl Net<'_> {
    /// Writes local variable `t`'s fields into `rec[3..]` and its row into `rows[which]`.
    fn put_var(&mut self, st: &State, q: &ShardQ<'_>, t: usize, which: usize, rec: &mut [f64]) {
        let row = &mut self.rows[which];
        row.clear();
        let (dense, norm) = q.wire_row(t, row);
        rec[3] = self.keys[st.orig(t)] as f64;
        rec[4] = st.g[t];
        rec[5] = st.yf(t);
        rec[6] = st.alpha[t];
        rec[7] = st.upper[t];
        rec[8] = st.qd[t];
        rec[9] = norm;
        rec[10] = row.len() as f64;
        rec[11] = if dense { 1.0 } else { 0.0 };
        rec[12] = q.global_sample(t) as f64;
    }

    /// All-gathers `rec` and returns the winner (smallest value, ties to the largest key; `None`
    /// when every value is `+inf`), the minimum of field 1 and the sum of field 2.
    fn combine(&mut self, rec: &[f64; RECORD]) -> (Option<(Var, f64)>, f64, usize) {
        self.all.resize(RECORD * self.size, 0.0);
        self.comm.all_gather(rec, &mut self.all);
        let (mut best, mut low, mut shrunk) = (None::<(Var, f64, f64)>, f64::INFINITY, 0usize);
        for r in 0..self.size {
            let f = &self.all[r * RECORD..(r + 1) * RECORD];
            low = if f[1] < low { f[1] } else { low };
            shrunk += f[2] as usize;
            if f[0] < f64::INFINITY {
                let v = Var::parse(r, f);
                let better = match &best {
                    None => true,
                    Some((b, bv, _)) => f[0] < *bv || (f[0] == *bv && v.key > b.key),
                };
                if better {
                    best = Some((v, f[0], f[1]));
                }
            }
        }
        (best.map(|(v, _, extra)| (v, extra)), low, shrunk)
    }

    /// The row of `v` into `rows[which]` on every shard: from the rows every shard holds, else
    /// broadcast by its owner.
    fn fetch_row(&mut self, which: usize, v: &Var) {
        let row = &mut self.rows[which];
        if let Some(r) = self.seen.get(v.sample) {
            row.clear();
            row.extend_from_slice(r);
            return;
        }
        if v.rank != self.rank {
            row.clear();
            row.resize(v.wire_len, 0.0);
        }
        self.comm.broadcast(v.rank, row);
        self.seen.insert(v.sample, row);
    }

    /// Loads the first `len` entries of `v`'s column into `q`'s buffer `which` (its row is in
    /// `rows[which]`).
    fn load(&self, q: &mut ShardQ<'_>, which: usize, v: &Var, len: usize) {
        let row = WireRow {
            dense: v.dense,
            data: &self.rows[which],
            norm: v.norm,
        };
        q.load(which, v.sample, v.y, row, len);
    }

    /// Sum over the shards of one count.
    fn sum(&mut self, v: usize) -> usize {
        self.all.resize(self.size, 0.0);
        self.comm.all_gather(&[v as f64], &mut self.all);
        self.all.iter().map(|&c| c as usize).sum()
    }

    /// Makes a local result collective: an error on any shard is an error on every shard.
    pub(crate) fn agree<T>(&mut self, local: Result<T, SolveError>) -> Result<T, SolveError> {
        self.all.resize(self.size, 0.0);
        let bad = if local.is_err() { 1.0 } else { 0.0 };
        self.comm.all_gather(&[bad], &mut self.all);
        match local {
            Err(e) => Err(e),
            Ok(_) if self.all.iter().any(|&b| b != 0.0) => Err(SolveError::Dimensions(OTHER_SHARD)),
            Ok(v) => Ok(v),
        }
    }
}

/// Appends a variable's header `[key, sample, y, alpha, u, norm, dense, row length]` and its
/// row to `out`.
const HEADER: usize = 8;

fn pack_var(st: &State, q: &ShardQ<'_>, keys: &[usize], t: usize, out: &mut Vec<f64>) {
    let at = out.len();
    out.extend_from_slice(&[0.0; HEADER]);
    let (dense, norm) = q.wire_row(t, out);
    let len = out.len() - at - HEADER;
    out[at..at + HEADER].copy_from_slice(&[
        keys[st.orig(t)] as f64,
        q.global_sample(t) as f64,
        st.yf(t),
        st.alpha[t],
        st.upper[t],
        norm,
        if dense { 1.0 } else { 0.0 },
        len as f64,
    ]);
}

/// The variables [`pack_var`] wrote, in order: (header, row).
fn unpack_vars(buf: &[f64]) -> Vec<(&[f64], &[f64])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + HEADER <= buf.len() {
        let h = &buf[at..at + HEADER];
        let len = h[7] as usize;
        let end = (at + HEADER + len).min(buf.len());
        out.push((h, &buf[at + HEADER..end]));
        at = end;
    }
    out
}

fn var_of_header(h: &[f64]) -> Var {
    Var {
        rank: 0,
        key: h[0] as usize,
        g: 0.0,
        y: if h[2] < 0.0 { -1 } else { 1 },
        alpha: h[3],
        upper: h[4],
        qd: 0.0,
        norm: h[5],
        wire_len: h[7] as usize,
        dense: h[6] != 0.0,
        sample: h[1] as usize,
    }
}

/// Solves this shard's part of the problem; `alpha` (the local variables, in the order of
/// `prob`) is the feasible start of this shard (the starts of all shards together satisfy the
/// equality) and receives the local solution. Every shard must call it with its part, the same
/// `smo` and its [`ShardQ`] (whose variables are those of `prob`, in that order).
///
/// `smo` carries the settings and, as for one process, the snapshot to continue from
/// ([`Smo::resume`]: a snapshot of a sharded solve at any number of shards, or of one process;
/// `alpha` then only receives the result) and whether a stopped solve returns one
/// ([`Smo::keep_snapshot`]). A snapshot is in the single process's form (variables by key), so
/// one process continues it too. Its order of the variables lists the active variables of every
/// shard, then the shrunk ones, each part merged from the shards' local orders by key: a shard
/// that continues it takes its own variables in the order listed, so at the same row split every
/// shard's local order, and with it every iteration, is restored exactly; without shrinking the
/// order is the keys', the one process's order.
///
/// # Errors
/// On every shard when any shard's input is invalid: [`SolveError::Dimensions`] for arrays of
/// the wrong length or keys that do not number all the variables once,
/// [`SolveError::Infeasible`] for a start outside the box, a bound `u_i <= 0`, no equality or
/// the nu mode; [`SolveError::Checkpoint`] for a snapshot that does not belong to the problem;
/// [`SolveError::NonFinite`] when the iterates break down (on every shard alike: they compute
/// the same steps).
pub fn solve(
    q: &mut ShardQ<'_>,
    prob: &ShardProblem<'_>,
    alpha: &mut [f64],
    smo: &Smo<'_>,
    obs: &mut dyn Observer,
    comm: &mut dyn Collective,
) -> Result<ShardSolution, SolveError> {
    let mut net = Net::new(comm, prob.keys);
    let n_global = open(&mut net, q, prob, alpha, smo)?;
    let local = match smo.resume {
        None => start_state(q, prob, alpha),
        Some(snap) => resume_state(q, prob, snap, n_global),
    };
    let mut st = net.agree(local)?;
    if smo.resume.is_none() {
        start_gradient(&mut net, &mut st, q);
    }
    let run = Run {
        n_global,
        settings: smo.settings,
        resume: smo.resume.map(|s| s.driver),
        keep_snapshot: smo.keep_snapshot,
        delta: match prob.qp.equality {
            Equality::Sum { delta } => delta,
            Equality::None => 0.0,
        },
    };
    let hot = st.l >= super::super::hot::HOT_MIN_VARS;
    let out = super::super::hot::with_hot_pool(hot, || iterate(&mut net, &mut st, q, &run, obs));
    st.restore_order(q);
    let (status, iterations, viol, snapshot) = out?;
    st.scatter(alpha);
    let mut sol = finish(
        &mut net,
        &st,
        n_global,
        status,
        iterations,
        viol,
        q.cache_stats(),
    )?;
    sol.snapshot = snapshot;
    Ok(sol)
}

/// The checks of every shard's problem ([`check_problem`], made collective) and of the keys of
/// all shards together; returns the number of variables of all shards.
pub(crate) fn open(
    net: &mut Net<'_>,
    q: &ShardQ<'_>,
    prob: &ShardProblem<'_>,
    alpha: &[f64],
    smo: &Smo<'_>,
) -> Result<usize, SolveError> {
    let local = check_problem(q, prob, alpha, smo);
    net.agree(local)?;
    // The keys of all shards must number the variables 0..n once each.
    net.send.clear();
    net.send.extend(prob.keys.iter().map(|&k| k as f64));
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let n_global = net.recv.len();
    let mut seen = vec![false; n_global];
    for &k in &net.recv {
        let k = k as usize;
        if k >= n_global || seen[k] {
            return Err(SolveError::Dimensions(
                "the shards' keys must number the variables 0..n once each",
            ));
        }
        seen[k] = true;
    }
    Ok(n_global)
}

/// The checks of this shard's problem that do not depend on the start: the keys, the lengths,
/// the equality, the bounds, the mode.
fn check_problem(
    q: &ShardQ<'_>,
    prob: &ShardProblem<'_>,
    alpha: &[f64],
    smo: &Smo<'_>,
) -> Result<(), SolveError> {
    let qp = &prob.qp;
    let n = q.n();
    if prob.keys.len() != n || prob.keys.windows(2).any(|w| w[1] <= w[0]) {
        return Err(SolveError::Dimensions(
            "keys must have q.n() strictly increasing entries",
        ));
    }
    if smo.nu || !matches!(qp.equality, Equality::Sum { .. }) {
        return Err(SolveError::Infeasible(
            "a solve split across shards needs the one equality constraint (not the nu mode)",
        ));
    }
    if qp.fixed.is_some() || !qp.upper.iter().all(|&u| u > 0.0) {
        return Err(SolveError::Infeasible(
            "a solve split across shards takes no fixed variables (every u_i > 0)",
        ));
    }
    if alpha.len() != n || qp.y.len() != n || qp.p.len() != n || qp.upper.len() != n {
        return Err(SolveError::Dimensions(
            "p, y, upper and alpha must all have q.n() entries",
        ));
    }
    Ok(())
}

/// The local state: validated, no fixed variable, gradient `p` (the start's terms follow).
pub(crate) fn start_state(
    q: &mut ShardQ<'_>,
    prob: &ShardProblem<'_>,
    alpha: &[f64],
) -> Result<State, SolveError> {
    let qp = &prob.qp;
    let n = q.n();
    // The local part of the equality (the shards' starts together satisfy the global one).
    let mut delta = 0.0;
    for (&y, &a) in qp.y.iter().zip(alpha) {
        delta += f64::from(y.signum()) * a;
    }
    let local = BoxQp {
        equality: Equality::Sum { delta },
        ..*qp
    };
    let zeros = vec![0.0; n];
    let warm = WarmGradient {
        qa: &zeros,
        qa_upper: &zeros,
    };
    let mut st = State::new_with(q, &local, alpha, Some(warm))?;
    // Mass moves between shards: the local sum is not invariant.
    st.delta = None;
    let l = st.l;
    let (g, p) = (&mut st.g[..l], &st.p[..l]);
    g.copy_from_slice(p);
    st.g_bar.fill(0.0);
    Ok(st)
}

/// The local state of a snapshot of the whole problem: this shard's variables, in the order
/// the snapshot lists them (the active ones first), checked against the local problem as one
/// process checks a snapshot; `q` is permuted to that order.
fn resume_state(
    q: &mut ShardQ<'_>,
    prob: &ShardProblem<'_>,
    snap: &SmoSnapshot,
    n_global: usize,
) -> Result<State, SolveError> {
    let qp = &prob.qp;
    let n = snap.n();
    if snap.mode != 0 || n != n_global || snap.l != n {
        return Err(snapshot_mismatch("size or formulation"));
    }
    if snap.block.is_some() {
        // Its working set and outer iterations belong to the block engine's loop.
        return Err(snapshot_mismatch("a block engine's snapshot"));
    }
    if let Some(d) = snap.delta {
        if off_equality(snap.y.iter().copied().zip(snap.alpha.iter().copied()), d) {
            return Err(snapshot_mismatch(
                "coefficients outside their bounds or off the equality constraint",
            ));
        }
    }
    let mine = q.n();
    let mut local = SmoSnapshot {
        mode: 0,
        l: mine,
        active: 0,
        alpha: Vec::with_capacity(mine),
        g: Vec::with_capacity(mine),
        g_bar: Vec::with_capacity(mine),
        p: Vec::with_capacity(mine),
        y: Vec::with_capacity(mine),
        upper: Vec::with_capacity(mine),
        qd: Vec::with_capacity(mine),
        perm: Vec::with_capacity(mine),
        obj_fixed: 0.0,
        delta: None,
        unshrunk: snap.unshrunk,
        driver: snap.driver,
        block: None,
    };
    for (k, &key) in snap.perm.iter().enumerate() {
        let Ok(o) = prob.keys.binary_search(&key) else {
            continue;
        };
        let y = if qp.y[o] < 0 { -1.0 } else { 1.0 };
        if snap.y[k] != y || snap.upper[k] != qp.upper[o] {
            return Err(snapshot_mismatch("signs or bounds"));
        }
        if k < snap.active {
            local.active += 1;
        }
        local.alpha.push(snap.alpha[k]);
        local.g.push(snap.g[k]);
        local.g_bar.push(snap.g_bar[k]);
        local.p.push(snap.p[k]);
        local.y.push(y);
        local.upper.push(snap.upper[k]);
        local.qd.push(snap.qd[k]);
        local.perm.push(o);
    }
    if local.perm.len() != mine {
        return Err(snapshot_mismatch("a different number of variables"));
    }
    let st = State::from_snapshot(q, &local)?;
    if !st.check_invariants() {
        return Err(snapshot_mismatch(
            "coefficients outside their bounds or off the equality constraint",
        ));
    }
    Ok(st)
}

/// Adds the start's terms `sum_j a_j Q_j` (and `u_j Q_j` to `G_bar` for `j` at its bound) in key
/// order, as one process adds them in its order: the nonzero starts of all shards are
/// all-gathered with their rows.
pub(crate) fn start_gradient(net: &mut Net<'_>, st: &mut State, q: &mut ShardQ<'_>) {
    net.send.clear();
    for t in 0..st.l {
        if st.alpha[t] != 0.0 {
            pack_var(st, q, net.keys, t, &mut net.send);
        }
    }
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let recv = std::mem::take(&mut net.recv);
    let mut starts = unpack_vars(&recv);
    starts.sort_by_key(|(h, _)| h[0] as usize);
    let l = st.l;
    for (h, row) in starts {
        let v = var_of_header(h);
        let wire = WireRow {
            dense: v.dense,
            data: row,
            norm: v.norm,
        };
        q.load(0, v.sample, v.y, wire, l);
        let col = q.buffer(0, l);
        for (gi, &qv) in st.g[..l].iter_mut().zip(col) {
            *gi += v.alpha * f64::from(qv);
        }
        if State::bound_of(v.alpha, v.upper) == Bound::Upper {
            for (gb, &qv) in st.g_bar[..l].iter_mut().zip(col) {
                *gb += v.upper * f64::from(qv);
            }
        }
    }
    net.recv = recv;
}

/// What the main loop is run with besides the state.
struct Run<'a> {
    /// Variables of all shards.
    n_global: usize,
    settings: &'a SolverSettings,
    /// The loop counters to continue from.
    resume: Option<Driver>,
    /// Return a snapshot when a limit or the observer stops the loop.
    keep_snapshot: bool,
    /// The right-hand side of the equality of the whole problem (recorded in a snapshot).
    delta: f64,
}

/// The main loop (the single process's `iterate_body` in [`super::Mode::Sum`]); returns the
/// status, the iterations, the last violation and, when asked, the snapshot of the point where
/// a limit or the observer stopped it.
fn iterate(
    net: &mut Net<'_>,
    st: &mut State,
    q: &mut ShardQ<'_>,
    run: &Run<'_>,
    obs: &mut dyn Observer,
) -> Result<(Status, u64, f64, Option<SmoSnapshot>), SolveError> {
    let n_global = run.n_global;
    if n_global == 0 {
        return Ok((Status::Converged, 0, 0.0, None));
    }
    let settings = run.settings;
    let lim = Limits::new(settings, n_global);
    let tol = settings.tol;
    let shrinking = settings.shrinking == Shrinking::On;
    let period = n_global.clamp(1, 1000);
    let mut counter = run.resume.map_or(period, |d| d.counter.clamp(1, period));
    let mut iter = run.resume.map_or(0, |d| d.iter);
    let mut viol = run.resume.map_or(f64::INFINITY, |d| d.viol);
    let mut status = Status::MaxIterations;
    let mut snapshot = None;
    // As one process: a resumed loop does not re-run the check it stopped at.
    let mut checked_at = run.resume.map(|d| d.iter);
    loop {
        if iter >= lim.max_iter {
            if run.keep_snapshot {
                snapshot = Some(gather_snapshot(
                    net,
                    st,
                    run,
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
            let active = net.sum(st.active);
            let local = lim.check(obs, iter, viol, active);
            if let Some(s) = agree_stop(net, local) {
                status = s;
                if run.keep_snapshot {
                    snapshot = Some(gather_snapshot(
                        net,
                        st,
                        run,
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
                shrink(net, st, q, tol);
            }
        }
        let mut shrunk = 0;
        let mut sel = select(net, st, q, tol, &mut viol, &mut shrunk);
        if sel.is_none() {
            if shrunk > 0 {
                // Converged on the active set: re-check on the full set.
                reconstruct(net, st, q, shrunk);
                sel = select(net, st, q, tol, &mut viol, &mut shrunk);
                counter = 1;
            }
            if sel.is_none() {
                status = Status::Converged;
                break;
            }
        }
        iter += 1;
        let Some(pick) = sel else { break };
        let (ai, aj) = pair_step_of(
            PairVars {
                a: [pick.vi.alpha, pick.vj.alpha],
                u: [pick.vi.upper, pick.vj.upper],
                g: [pick.vi.g, pick.vj.g],
                y: [pick.vi.y, pick.vj.y],
                qd: [pick.vi.qd, pick.vj.qd],
            },
            pick.qij,
        );
        if !(ai.is_finite() && aj.is_finite()) {
            return Err(SolveError::NonFinite { what: "alpha" });
        }
        apply(net, st, q, &pick, ai, aj);
    }
    let shrunk = net.sum(st.l - st.active);
    reconstruct(net, st, q, shrunk);
    if status != Status::Converged {
        // Report the violation of the returned point.
        let mut s = 0;
        let _ = select(net, st, q, tol, &mut viol, &mut s);
    }
    Ok((status, iter, viol, snapshot))
}

/// Per variable in a snapshot's gather: `[rank, key, active, alpha, G, G_bar, p, y, u, Q_tt]`.
const SNAP_FIELDS: usize = 10;

/// The state of all shards in the single process's snapshot form, on every shard: every
/// variable by key with its arrays; the order lists the active variables, then the shrunk ones,
/// each part a merge of the shards' local orders that takes the smallest key among the shards'
/// next variables (so each shard's own order is kept, and sorted local orders give the keys'
/// order). One all-gather of `O(n)` doubles.
fn gather_snapshot(net: &mut Net<'_>, st: &State, run: &Run<'_>, driver: Driver) -> SmoSnapshot {
    net.send.clear();
    for t in 0..st.l {
        net.send.extend_from_slice(&[
            net.rank as f64,
            net.keys[st.orig(t)] as f64,
            if t < st.active { 1.0 } else { 0.0 },
            st.alpha[t],
            st.g[t],
            st.g_bar[t],
            st.p[t],
            st.yf(t),
            st.upper[t],
            st.qd[t],
        ]);
    }
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let n = run.n_global;
    // Each shard's records, active and shrunk apart, in its local order.
    let mut lists: Vec<[Vec<&[f64]>; 2]> =
        (0..net.size).map(|_| [Vec::new(), Vec::new()]).collect();
    for f in net.recv.chunks_exact(SNAP_FIELDS) {
        let r = (f[0] as usize).min(net.size - 1);
        let part = usize::from(f[2] == 0.0);
        lists[r][part].push(f);
    }
    let mut snap = SmoSnapshot {
        mode: 0,
        l: n,
        active: 0,
        alpha: Vec::with_capacity(n),
        g: Vec::with_capacity(n),
        g_bar: Vec::with_capacity(n),
        p: Vec::with_capacity(n),
        y: Vec::with_capacity(n),
        upper: Vec::with_capacity(n),
        qd: Vec::with_capacity(n),
        perm: Vec::with_capacity(n),
        obj_fixed: 0.0,
        delta: Some(run.delta),
        unshrunk: st.unshrunk,
        driver,
        block: None,
    };
    for part in 0..2 {
        // (smallest key first, shard, position in the shard's list)
        let mut heads: BinaryHeap<Reverse<(usize, usize, usize)>> = BinaryHeap::new();
        for (r, l) in lists.iter().enumerate() {
            if let Some(f) = l[part].first() {
                heads.push(Reverse((f[1] as usize, r, 0)));
            }
        }
        while let Some(Reverse((key, r, at))) = heads.pop() {
            let f = lists[r][part][at];
            snap.perm.push(key);
            snap.alpha.push(f[3]);
            snap.g.push(f[4]);
            snap.g_bar.push(f[5]);
            snap.p.push(f[6]);
            snap.y.push(f[7]);
            snap.upper.push(f[8]);
            snap.qd.push(f[9]);
            if let Some(next) = lists[r][part].get(at + 1) {
                heads.push(Reverse((next[1] as usize, r, at + 1)));
            }
        }
        if part == 0 {
            snap.active = snap.perm.len();
        }
    }
    snap
}

/// The worst of the shards' stop decisions (`None`: every shard continues).
fn agree_stop(net: &mut Net<'_>, local: Option<Status>) -> Option<Status> {
    let code = local.map_or(-1.0, |s| f64::from(s.code()));
    net.all.resize(net.size, 0.0);
    net.comm.all_gather(&[code], &mut net.all);
    net.all
        .iter()
        .filter(|&&c| c >= 0.0)
        .filter_map(|&c| Status::from_code(c as u8))
        .reduce(Status::worst)
}

/// WSS3 across the shards; sets the violation and `shrunk` (the shrunk variables of all
/// shards, from the first pass's records).
fn select(
    net: &mut Net<'_>,
    st: &mut State,
    q: &mut ShardQ<'_>,
    tol: f64,
    viol: &mut f64,
    shrunk: &mut usize,
) -> Option<Pick> {
    let act = st.active;
    let first = match st.pre.take() {
        Some(s) => s,
        None => scan_active(st, None),
    };
    let mut rec = [0.0; RECORD];
    rec[0] = first.up.v;
    rec[1] = first.low;
    rec[2] = (st.l - act) as f64;
    if first.up.v < f64::INFINITY {
        net.put_var(st, q, first.up.at, 0, &mut rec);
    }
    let (best, gmin, s) = net.combine(&rec);
    *shrunk = s;
    let Some((vi, _)) = best else {
        *viol = f64::NEG_INFINITY;
        return None;
    };
    let gmax = -f64::from(vi.y) * vi.g;
    *viol = gmax - gmin;
    if gmax - gmin < tol {
        return None;
    }
    net.fetch_row(0, &vi);
    net.load(q, 0, &vi, act);
    let p = SecondPass {
        gmax,
        yi: f64::from(vi.y),
        qdi: vi.qd,
    };
    let col = q.loaded(act).0;
    let second = second_pass(st, col, p);
    let mut rec = [0.0; RECORD];
    rec[0] = second.v;
    rec[1] = f64::INFINITY;
    if second.v < f64::INFINITY {
        net.put_var(st, q, second.at, 1, &mut rec);
        rec[1] = f64::from(col[second.at]);
    }
    let (best, _, _) = net.combine(&rec);
    let (vj, qij) = best?;
    net.fetch_row(1, &vj);
    net.load(q, 1, &vj, act);
    let mine = |v: &Var, at: usize| (v.rank == net.rank).then_some(at);
    Some(Pick {
        pos_i: mine(&vi, first.up.at),
        pos_j: mine(&vj, second.at),
        vi,
        vj,
        qij,
    })
}

/// The pair update on this shard: the owners' alpha and status, the local gradient (fused with
/// the next first pass) and `G_bar`.
fn apply(net: &Net<'_>, st: &mut State, q: &mut ShardQ<'_>, pick: &Pick, new_ai: f64, new_aj: f64) {
    let (act, l) = (st.active, st.l);
    let dai = new_ai - pick.vi.alpha;
    let daj = new_aj - pick.vj.alpha;
    if let Some(t) = pick.pos_i {
        st.alpha[t] = new_ai;
        st.update_status(t);
    }
    if let Some(t) = pick.pos_j {
        st.alpha[t] = new_aj;
        st.update_status(t);
    }
    {
        let (qi, qj) = q.loaded(act);
        let d = PairDelta { qi, qj, dai, daj };
        st.pre = Some(scan_active(st, Some(d)));
    }
    let at_upper = |a: f64, u: f64| State::bound_of(a, u) == Bound::Upper;
    for (which, v, new) in [(0, &pick.vi, new_ai), (1, &pick.vj, new_aj)] {
        let (was, now) = (at_upper(v.alpha, v.upper), at_upper(new, v.upper));
        if was != now {
            let c = if now { 1.0 } else { -1.0 } * v.upper;
            // The whole local column (the shrunk variables' part too).
            net.load(q, which, v, l);
            let col = q.buffer(which, l);
            for (gb, &qv) in st.g_bar[..l].iter_mut().zip(col) {
                *gb += c * f64::from(qv);
            }
        }
    }
}

/// LIBSVM's shrinking test with the band `[M, m]` of all shards.
fn shrink(net: &mut Net<'_>, st: &mut State, q: &mut ShardQ<'_>, tol: f64) {
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
    net.all.resize(3 * net.size, 0.0);
    let mine = [gmax, gmin, (st.l - st.active) as f64];
    net.comm.all_gather(&mine, &mut net.all);
    let mut shrunk = 0usize;
    for r in 0..net.size {
        let f = &net.all[3 * r..3 * r + 3];
        gmax = gmax.max(f[0]);
        gmin = gmin.min(f[1]);
        shrunk += f[2] as usize;
    }
    if !st.unshrunk && gmax - gmin <= 10.0 * tol {
        st.unshrunk = true;
        reconstruct(net, st, q, shrunk);
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

/// The gradient of the local shrunk variables from `G_bar` and the free variables of all
/// shards (whose rows are all-gathered); `shrunk` is the number of shrunk variables of all
/// shards (nothing to do, and no communication, when 0).
fn reconstruct(net: &mut Net<'_>, st: &mut State, q: &mut ShardQ<'_>, shrunk: usize) {
    if shrunk == 0 {
        return;
    }
    st.pre = None;
    st.pre_single = false;
    let (act, l) = (st.active, st.l);
    for ((gj, &gb), &pj) in st.g[act..l]
        .iter_mut()
        .zip(&st.g_bar[act..l])
        .zip(&st.p[act..l])
    {
        *gj = gb + pj;
    }
    net.send.clear();
    for t in 0..act {
        if st.status[t] == Bound::Free {
            pack_var(st, q, net.keys, t, &mut net.send);
        }
    }
    net.comm.all_gather_var(&net.send, &mut net.recv);
    if act < l {
        for (h, row) in unpack_vars(&net.recv) {
            let v = var_of_header(h);
            let wire = WireRow {
                dense: v.dense,
                data: row,
                norm: v.norm,
            };
            q.load(0, v.sample, v.y, wire, l);
            let col = &q.buffer(0, l)[act..l];
            for (gj, &qv) in st.g[act..l].iter_mut().zip(col) {
                *gj += v.alpha * f64::from(qv);
            }
        }
    }
    st.active = l;
}

/// Gathers every variable's `alpha`, `G`, `p`, `u` and sign by key and computes the account
/// as one process does, in key order.
pub(crate) fn finish(
    net: &mut Net<'_>,
    st: &State,
    n_global: usize,
    status: Status,
    iterations: u64,
    viol: f64,
    cache: CacheStats,
) -> Result<ShardSolution, SolveError> {
    const F: usize = 6;
    net.send.clear();
    // `st` is back in the local original order.
    for t in 0..st.l {
        net.send.extend_from_slice(&[
            net.keys[t] as f64,
            st.alpha[t],
            st.g[t],
            st.p[t],
            st.upper[t],
            st.yf(t),
        ]);
    }
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let mut alpha = vec![0.0; n_global];
    let mut g = vec![0.0; n_global];
    let mut p = vec![0.0; n_global];
    let mut upper = vec![0.0; n_global];
    let mut y = vec![1i8; n_global];
    for f in net.recv.chunks_exact(F) {
        let k = f[0] as usize;
        if k < n_global {
            alpha[k] = f[1];
            g[k] = f[2];
            p[k] = f[3];
            upper[k] = f[4];
            y[k] = if f[5] < 0.0 { -1 } else { 1 };
        }
    }
    let mut s = 0.0;
    for ((&a, &gk), &pk) in alpha.iter().zip(&g).zip(&p) {
        s += a * (gk + pk);
    }
    let objective = 0.5 * s + 0.0;
    if !objective.is_finite() {
        return Err(SolveError::NonFinite { what: "objective" });
    }
    let status_of: Vec<Bound> = alpha
        .iter()
        .zip(&upper)
        .map(|(&a, &u)| State::bound_of(a, u))
        .collect();
    let rho = rho_of(&y, &g, &status_of);
    let gap = super::super::kkt::gap_from_state(&g, &alpha, &upper, &y, 1);
    Ok(ShardSolution {
        info: SolveInfo {
            status,
            iterations,
            objective,
            rho,
            max_violation: viol.max(0.0),
            gap,
        },
        alpha,
        cache,
        snapshot: None,
    })
}
