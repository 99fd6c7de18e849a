//! Row-partitioned block working-set SMO: the one-equality box QP of [`super`] (C-SVC,
//! one-class, epsilon-SVR) with its variables split across processes (shards), each holding
//! the rows of its own variables, solved by the outer iterations of [`super`] (ThunderSVM's
//! scheme) with the reductions of [`crate::solver::smo::shard`].
//!
//! ```text
//! min_a  1/2 a'Qa + p'a   s.t.  y'a = delta,  0 <= a_i <= u_i
//! ```
//!
//! | one process ([`super`])                   | here                                              |
//! |-------------------------------------------|---------------------------------------------------|
//! | variable position `t`                     | global key (the single process's position)        |
//! | `select` over all variables               | each shard's best `q` of `I_up` and of `I_low`, all-gathered and merged in the same order |
//! | working set `B`, columns `buf`            | the same `B` on every shard; each holds its rows of the columns |
//! | `Q_BB` read from the f32 columns          | computed on every shard from the members' rows, the same bits |
//! | local SMO (`local_sum`)                   | the same, replicated on identical inputs          |
//! | `f <- f + K_B' (delta alpha_B)`           | the same pass over the local rows                 |
//!
//! **One outer iteration** (every step on every shard):
//! 1. each shard sends its local `m(a)`, `M(a)` and its `q` best candidates of `I_up` (by
//!    `-y_t g_t`) and of `I_low` (by `y_t g_t`) as (value, key) pairs: one all-gather. The
//!    violation is the global `m - M`; the global best `q` of each side are the best `q` of
//!    the union (a total order: value, then the smaller key), so the working set is built by
//!    the single process's merge from the same lists;
//! 2. the owner of each member sends its `g`, `alpha`, sign, bound, `Q_tt` and, for a member
//!    new to the working set, its row (dense values or sparse entries): one all-gather, which
//!    also carries the shards' stop decisions (observer, clock). A kept member's row stays in
//!    its slot;
//! 3. every shard computes the new members' entries of `Q_BB` from the rows (the arithmetic of
//!    a column fill, rounded to f32 as one process's columns are) and runs the local SMO on
//!    identical inputs: every shard makes the same moves, without a message;
//! 4. every shard computes its rows of the new members' columns (through its cache), the owners
//!    update `alpha` and the bound status, and every shard adds the moves to its gradient in
//!    working-set order.
//!
//! Two all-gathers per outer iteration: `O(P q)` doubles for the candidates and `O(q + (q/2) d)`
//! for the members (sparse: `(q/2) nnz`). Each shard's work is `O((q/2) (n/P) d)` for the new
//! columns and `O(q n/P)` for the gradient, plus the replicated `O((q/2) q d)` of `Q_BB` and the
//! local SMO.
//!
//! **Exactness.** The shards do not shrink (whatever [`SolverSettings::shrinking`] says). Each
//! shard's positions are its variables in key order, so the merged candidates are those of
//! [`super::solve`] without shrinking, the working set the same, `Q_BB` the same bits, the local
//! solve the same arithmetic and every gradient entry gets the same additions in the same order:
//! alpha, the objective and rho have the bits of [`super::solve`] with shrinking off at any
//! number of shards (given keys that number the variables as one process would, rows in the
//! storage it would choose, and the same working-set size). With shrinking on, one process
//! shrinks and reaches the same optimum to the tolerance.
//!
//! **Stopping rule**: `m(a) - M(a) <= tol` over all the variables, as in [`super`].
//! **The end**: that of
//! [`crate::solver::smo::shard`] (the account computed as one process computes it, in key
//! order). The observer and the clock are consulted at every outer iteration after the first,
//! as in one process, and the decisions agreed. Unlike one process's, the shards keep no
//! snapshot: a stopped sharded block solve starts over on resume.
//!
//! Citation: Z. Wen, J. Shi, Q. Li, B. He, J. Chen, "ThunderSVM: a fast SVM library on GPUs
//! and CPUs", JMLR 19 (2018), section 3; S. Brugger, W. Rosenstiel, M. Bogdan, "Parallel
//! support vector machines using PiSVM" (2006) for the row partition.

use super::{
    fill, gap_of, interleave, local_round, sum_candidates, top, update_gradient, working_set_of,
    Block, BlockSettings, Local, NO_SLOT,
};
use crate::error::SolveError;
use crate::kernel::qmatrix::{QMatrix, ShardQ, WireRow};
use crate::solver::smo::shard::{
    finish, open, start_gradient, start_state, Collective, Net, ShardProblem, ShardSolution,
};
use crate::solver::smo::{Limits, Mode, Smo, State};
use crate::solver::{Observer, SolverSettings, Status};

/// Doubles of a member's record before its row: `[key, g, y, alpha, u, Q_tt, norm, dense,
/// sample, row length]`.
const MEMBER: usize = 10;

/// A working-set member as its owner described it.
#[derive(Debug, Clone, Copy, Default)]
struct Member {
    g: f64,
    y: i8,
    alpha: f64,
    upper: f64,
    qd: f64,
    norm: f64,
    dense: bool,
    sample: usize,
}

/// Solves this shard's part of the problem by block working-set SMO; `alpha` (the local
/// variables, in the order of `prob`) is the feasible start of this shard (the starts of all
/// shards together satisfy the equality) and receives the local solution. Every shard must
/// call it with its part, the same `settings` and `block`, and its [`ShardQ`] (whose variables
/// are those of `prob`, in that order). The working-set size is that of the whole problem
/// (`block.working_set`, else [`super::working_set_size`] of all the variables), the same at any
/// number of shards. The solution has no snapshot.
///
/// # Errors
/// As [`crate::solver::smo::shard::solve`]; [`SolveError::Dimensions`] for a working-set size
/// below 2 or above the number of variables.
pub fn solve(
    q: &mut ShardQ<'_>,
    prob: &ShardProblem<'_>,
    alpha: &mut [f64],
    settings: &SolverSettings,
    block: &BlockSettings,
    obs: &mut dyn Observer,
    comm: &mut dyn Collective,
) -> Result<ShardSolution, SolveError> {
    let mut net = Net::new(comm, prob.keys);
    let n_global = open(&mut net, q, prob, alpha, &Smo::new(settings))?;
    let local = start_state(q, prob, alpha);
    let mut st = net.agree(local)?;
    start_gradient(&mut net, &mut st, q);
    let out = iterate(&mut net, &mut st, q, n_global, settings, block, obs);
    st.restore_order(q);
    let (status, iterations, viol) = out?;
    st.scatter(alpha);
    finish(
        &mut net,
        &st,
        n_global,
        status,
        iterations,
        viol,
        q.cache_stats(),
    )
}

/// What every shard holds of the working set besides [`Block`]: by slot, the members as their
/// owners sent them, their rows, and `Q_BB` (f32, as the columns of one process).
struct Members {
    q: usize,
    vars: Vec<Member>,
    rows: Vec<Vec<f64>>,
    /// `q x q` by slot: `qbb[a * q + b]` is `Q` between the members in slots `a` and `b`.
    qbb: Vec<f32>,
    /// Work space: the new members' kernel columns over the working set.
    cols: Vec<f32>,
}

impl Members {
    fn new(q: usize) -> Self {
        Self {
            q,
            vars: vec![Member::default(); q],
            rows: vec![Vec::new(); q],
            qbb: vec![0.0; q * q],
            cols: Vec::new(),
        }
    }

    fn wire(&self, slot: usize) -> WireRow<'_> {
        let v = &self.vars[slot];
        WireRow {
            dense: v.dense,
            data: &self.rows[slot],
            norm: v.norm,
        }
    }

    /// The entries of `Q_BB` in the new members' rows and columns (`slots`: every member's
    /// slot, in working-set order; `is_new`: by slot).
    fn update_qbb(
        &mut self,
        q: &ShardQ<'_>,
        slots: &[usize],
        is_new: &[bool],
    ) -> Result<(), SolveError> {
        let m = slots.len();
        let pos: Vec<usize> = (0..m).filter(|&k| is_new[slots[k]]).collect();
        let mut cols = std::mem::take(&mut self.cols);
        cols.resize(pos.len() * m, 0.0);
        let rows: Vec<WireRow<'_>> = slots.iter().map(|&s| self.wire(s)).collect();
        let filled = q.wire_columns(&rows, &pos, &mut cols);
        drop(rows);
        self.cols = cols;
        filled.map_err(|_| SolveError::Dimensions("a sent row is not a row of the data"))?;
        let qs = self.q;
        for (c, &k) in pos.iter().enumerate() {
            let a = slots[k];
            let ya = self.vars[a].y;
            for (t, &b) in slots.iter().enumerate() {
                let v = self.cols[c * m + t];
                let v = if self.vars[b].y == ya { v } else { -v };
                self.qbb[a * qs + b] = v;
                self.qbb[b * qs + a] = v;
            }
        }
        Ok(())
    }

    /// Loads the working set into `loc` as one process's `Local::load` does.
    fn load(&self, loc: &mut Local, slots: &[usize]) {
        let m = slots.len();
        loc.m = m;
        loc.qbb.resize(m * m, 0.0);
        for (s, &a) in slots.iter().enumerate() {
            let row = &mut loc.qbb[s * m..(s + 1) * m];
            for (o, &b) in row.iter_mut().zip(slots) {
                *o = f64::from(self.qbb[a * self.q + b]);
            }
            row[s] = self.vars[a].qd;
        }
        let fill = |v: &mut Vec<f64>, f: &dyn Fn(&Member) -> f64| {
            v.clear();
            v.extend(slots.iter().map(|&a| f(&self.vars[a])));
        };
        fill(&mut loc.a, &|v| v.alpha);
        fill(&mut loc.a0, &|v| v.alpha);
        fill(&mut loc.g, &|v| v.g);
        fill(&mut loc.u, &|v| v.upper);
        fill(&mut loc.y, &|v| f64::from(v.y));
    }
}

/// The outer loop ([`super::iterate`] with the equality); returns the status, the iterations
/// (local steps) and the last violation.
fn iterate(
    net: &mut Net<'_>,
    st: &mut State,
    q: &mut ShardQ<'_>,
    n: usize,
    settings: &SolverSettings,
    block: &BlockSettings,
    obs: &mut dyn Observer,
) -> Result<(Status, u64, f64), SolveError> {
    let l = st.l;
    if u32::try_from(n).is_err() {
        return Err(SolveError::Dimensions("more than u32::MAX variables"));
    }
    let qsz = working_set_of(block, n, n)?;
    let lim = Limits::new(settings, n);
    let tol = settings.tol;
    let mut status = Status::MaxIterations;
    let mut iter: u64 = 0;
    let mut outer: u64 = 0;
    let mut viol;
    let mut blk = Block::new(n, l, qsz);
    let mut mem = Members::new(qsz);
    let mut is_new = vec![false; qsz];
    let mut moves: Vec<(usize, f64)> = Vec::with_capacity(qsz);
    let mut loc = Local::new();
    loop {
        let (v, order) = candidates(net, st, qsz);
        viol = v;
        if outer > 0 && !viol.is_finite() {
            return Err(SolveError::NonFinite { what: "gradient" });
        }
        if n == 0 || viol <= tol {
            status = Status::Converged;
            break;
        }
        if iter >= lim.max_iter {
            break;
        }
        let stop = if outer > 0 {
            lim.check(obs, iter, viol, n)
        } else {
            None
        };
        outer += 1;
        let fresh = if outer == 1 { qsz } else { qsz / 2 };
        let next = fill(order, n, qsz, fresh.max(2), &blk.ws, |k| {
            loc.a[k] > 0.0 && loc.a[k] < loc.u[k]
        });
        let records = match exchange(net, st, q, &blk, &next, stop)? {
            Ok(r) => r,
            Err(s) => {
                status = s;
                break;
            }
        };
        let (_, new_slots) = blk.assign_slots(next);
        is_new.fill(false);
        for &s in &new_slots {
            is_new[s] = true;
        }
        for (key, v, at, len) in records {
            let s = blk.slot_of.get(key).map_or(qsz, |&s| s as usize);
            if s >= qsz {
                return Err(SolveError::Dimensions(
                    "the shards' records of the working set do not match it",
                ));
            }
            if is_new[s] {
                mem.vars[s] = v;
                mem.rows[s].clear();
                mem.rows[s].extend_from_slice(&net.recv[at..at + len]);
            } else {
                mem.vars[s].g = v.g;
                mem.vars[s].alpha = v.alpha;
            }
        }
        if !new_slots.is_empty() {
            mem.update_qbb(q, &blk.slots, &is_new)?;
            if l > 0 {
                for &s in &new_slots {
                    let v = mem.vars[s];
                    q.load(0, v.sample, v.y, mem.wire(s), l);
                    blk.buf[s * l..(s + 1) * l].copy_from_slice(q.buffer(0, l));
                }
            }
        }
        mem.load(&mut loc, &blk.slots);
        iter += local_round(&mut loc, Mode::Sum, tol, qsz, &mut moves)?;
        for &(s, _) in &moves {
            if let Ok(t) = net.keys.binary_search(&blk.ws[s]) {
                st.alpha[t] = loc.a[s];
                st.update_status(t);
            }
        }
        update_gradient(&mut st.g[..l], &blk, &moves);
    }
    Ok((status, iter, viol))
}

/// Step 1: the violation of all shards and the violators in the single process's order of
/// preference (one all-gather of `[m, M, #up, #low, up pairs, low pairs]` per shard).
fn candidates(net: &mut Net<'_>, st: &State, q: usize) -> (f64, Vec<u32>) {
    let keys = net.keys;
    let (up, low) = sum_candidates(st, q, |t| keys[t] as u32);
    let (m, mm) = super::extrema(st);
    net.send.clear();
    net.send
        .extend_from_slice(&[m, mm, up.len() as f64, low.len() as f64]);
    for &(v, k) in up.iter().chain(&low) {
        net.send.extend_from_slice(&[v, f64::from(k)]);
    }
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let (mut gm, mut gmm) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut all_up, mut all_low) = (Vec::new(), Vec::new());
    let r = &net.recv;
    let mut at = 0;
    while at + 4 <= r.len() {
        let (m, mm) = (r[at], r[at + 1]);
        if m > gm {
            gm = m;
        }
        if mm < gmm {
            gmm = mm;
        }
        let (nu, nl) = (r[at + 2] as usize, r[at + 3] as usize);
        at += 4;
        for k in 0..nu + nl {
            let Some(p) = r.get(at + 2 * k..at + 2 * k + 2) else {
                break;
            };
            let pair = (p[0], p[1] as u32);
            if k < nu {
                all_up.push(pair);
            } else {
                all_low.push(pair);
            }
        }
        at += 2 * (nu + nl);
    }
    let (up, low) = (top(all_up, q), top(all_low, q));
    (gap_of(gm, gmm), interleave(&up, &low))
}

/// The members' records as [`exchange`] parses them: key, fields, and the start and length of
/// the row in `net.recv`.
type Records = Vec<(usize, Member, usize, usize)>;

/// Step 2: the owners' records of the members of `next` (with the rows of the members new to
/// the working set) and the shards' stop decisions, in one all-gather of `[stop, #records,
/// records]` per shard. Returns the agreed stop, if any, else each member's record: its
/// fields and where its row lies in `net.recv`.
fn exchange(
    net: &mut Net<'_>,
    st: &State,
    q: &ShardQ<'_>,
    blk: &Block,
    next: &[usize],
    stop: Option<Status>,
) -> Result<Result<Records, Status>, SolveError> {
    net.send.clear();
    net.send
        .extend_from_slice(&[stop.map_or(-1.0, |s| f64::from(s.code())), 0.0]);
    let mut count = 0u32;
    for &key in next {
        let Ok(t) = net.keys.binary_search(&key) else {
            continue;
        };
        let at = net.send.len();
        net.send.extend_from_slice(&[0.0; MEMBER]);
        let (dense, norm) = if blk.slot_of[key] == NO_SLOT {
            q.wire_row(t, &mut net.send)
        } else {
            (true, 0.0)
        };
        let len = net.send.len() - at - MEMBER;
        net.send[at..at + MEMBER].copy_from_slice(&[
            key as f64,
            st.g[t],
            st.yf(t),
            st.alpha[t],
            st.upper[t],
            st.qd[t],
            norm,
            if dense { 1.0 } else { 0.0 },
            q.global_sample(t) as f64,
            len as f64,
        ]);
        count += 1;
    }
    net.send[1] = f64::from(count);
    net.comm.all_gather_var(&net.send, &mut net.recv);
    let r = &net.recv;
    let mut agreed: Option<Status> = None;
    let mut records = Vec::with_capacity(next.len());
    let mut at = 0;
    for _ in 0..net.size {
        let Some(h) = r.get(at..at + 2) else { break };
        if h[0] >= 0.0 {
            if let Some(s) = Status::from_code(h[0] as u8) {
                agreed = Some(agreed.map_or(s, |a| a.worst(s)));
            }
        }
        let count = h[1] as usize;
        at += 2;
        for _ in 0..count {
            let Some(h) = r.get(at..at + MEMBER) else {
                break;
            };
            let len = h[9] as usize;
            let v = Member {
                g: h[1],
                y: if h[2] < 0.0 { -1 } else { 1 },
                alpha: h[3],
                upper: h[4],
                qd: h[5],
                norm: h[6],
                dense: h[7] != 0.0,
                sample: h[8] as usize,
            };
            records.push((h[0] as usize, v, at + MEMBER, len));
            at += MEMBER + len;
        }
    }
    if let Some(s) = agreed {
        return Ok(Err(s));
    }
    if records.len() != next.len() || at != r.len() {
        return Err(SolveError::Dimensions(
            "the shards' records of the working set do not match it",
        ));
    }
    Ok(Ok(records))
}
